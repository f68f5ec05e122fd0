"""Running a student's functions in another process, so that checks run where student code cannot reach.

The trusted process (the grader) starts a child (normally inside a sandbox, see ``autograder/sandbox.py``), sends
it the code of the answer cells, and then calls the functions those cells define through ``RemoteFunction``:
arguments go to the child, results come back, and every comparison, every reference value and every clock
reading stays in the grader. Whatever the student's code patches (posref, torch.testing, the clock, the
import system) it patches in the child only, where nothing is judged.

Messages are length-prefixed ``torch.save`` payloads on two pipes. The grader reads them with
``torch.load(weights_only=True)``, which builds tensors, numbers, strings and containers only (never arbitrary
objects), and refuses frames over ``MAX_FRAME`` bytes.
"""

from __future__ import annotations

import io
import os
import select
import struct
import subprocess
import time
import traceback
from collections.abc import Sequence
from typing import Any

import torch

MAX_FRAME = 256 * 2**20
_HEADER = struct.Struct("<Q")


class ChildFailed(Exception):
    """The child process ended, hung or answered something unreadable; ``reason`` says which, in words."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason

    @property
    def reported_as(self) -> str:
        return f"nothing back: {self.reason}"


class StudentError(Exception):
    """The student's function raised; the message is the child's ``TypeName: message`` text."""

    @property
    def reported_as(self) -> str:
        return str(self)


# ---------------------------------------------------------------- framing


def _encode(obj: Any) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    data = buf.getvalue()
    return _HEADER.pack(len(data)) + data


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes:
    chunks, got = [], 0
    while got < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _wire(value: Any) -> Any:
    """Arguments to plain data: tensors move to the CPU's format as they are; probes travel as their weights."""
    if hasattr(value, "to_wire"):
        return value.to_wire()
    if isinstance(value, tuple):
        return tuple(_wire(v) for v in value)
    if isinstance(value, list):
        return [_wire(v) for v in value]
    if isinstance(value, dict):
        return {k: _wire(v) for k, v in value.items()}
    return value


# ---------------------------------------------------------------- the child side


def _unwire(value: Any) -> Any:
    if isinstance(value, dict) and "__probe__" in value:
        from posref.grading.order import Probe

        return Probe(value["__probe__"], value["weight"])
    if isinstance(value, tuple):
        return tuple(_unwire(v) for v in value)
    if isinstance(value, list):
        return [_unwire(v) for v in value]
    if isinstance(value, dict):
        return {k: _unwire(v) for k, v in value.items()}
    return value


def _plain(value: Any) -> Any:
    """A result the grader can read: tensors (detached), numbers, strings, None, and tuples/lists of them."""
    if isinstance(value, torch.Tensor):
        return value.detach()
    if isinstance(value, (tuple, list)):
        return type(value)(_plain(v) for v in value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    try:
        import numpy

        if isinstance(value, numpy.ndarray | numpy.generic):
            return {"__unreadable__": f"a numpy {type(value).__name__}; return a torch tensor (or a float)"}
    except ImportError:
        pass
    return {"__unreadable__": f"a {type(value).__name__}"}


def serve(read_fd: int, write_fd: int) -> None:
    """The child's loop: run the answer cells it is sent, then answer calls until its input closes."""
    torch.set_num_threads(1)

    def send(obj: Any) -> None:
        _write_all(write_fd, _encode(obj))

    def receive() -> Any:
        (n,) = _HEADER.unpack(_read_exact(read_fd, _HEADER.size, None))
        return torch.load(io.BytesIO(_read_exact(read_fd, n, None)), weights_only=True)

    namespace: dict[str, Any] = {"__name__": "__main__"}
    program = receive()
    errors = {}
    for index, source in program["cells"]:
        send({"event": "cell", "index": index})
        try:
            exec(compile(source, f"<cell {index}>", "exec"), namespace)
        except BaseException as err:  # noqa: BLE001  (a cell's SystemExit or KeyboardInterrupt is its own failure)
            errors[index] = f"{type(err).__name__}: {err}"
    names = sorted(k for k, v in namespace.items() if callable(v) and not k.startswith("__"))
    send({"event": "ready", "names": names, "errors": errors})
    while True:
        try:
            request = receive()
        except EOFError:
            return
        fn = namespace.get(request["call"])
        try:
            if fn is None:
                raise NameError(
                    f"name {request['call']!r} is not defined (did the cell that defines it run?)"
                )
            result = {"ok": _plain(fn(*_unwire(request["args"]), **_unwire(request["kwargs"])))}
        except BaseException as err:  # noqa: BLE001
            last = traceback.extract_tb(err.__traceback__)[-1:]
            where = f" (line {last[0].lineno} of {last[0].filename})" if last else ""
            result = {"error": f"{type(err).__name__}: {err}{where}"}
        send(result)


# ---------------------------------------------------------------- the grader side


class Child:
    """A child process running answer cells, driven from the grader.

    Args:
        command: the program prefix that starts Python in the sandbox (``python`` must be its last word);
            the child is started as ``command + ["-c", <serve>]``.
        cells: ``[(cell_index, source), ...]`` to run in order in one namespace.
        cell_timeout: wall seconds allowed for each cell; call_timeout: for each call.
    """

    def __init__(
        self,
        command: Sequence[str],
        cells: Sequence[tuple[int, str]],
        *,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        cell_timeout: float = 120.0,
        call_timeout: float = 60.0,
        python_path: Sequence[str] = (),
        log_path: str | None = None,
        preexec_fn=None,
        pass_fds: Sequence[int] = (),
    ) -> None:
        self.call_timeout = call_timeout
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        boot = (
            f"import sys; sys.path[:0] = {list(python_path)!r}; "
            f"from posref.grading.remote import serve; serve({to_child_r}, {from_child_w})"
        )
        log = open(log_path or os.devnull, "wb")  # noqa: SIM115  (kept for the child's lifetime)
        try:
            self.process = subprocess.Popen(
                [*command, "-c", boot],
                pass_fds=(to_child_r, from_child_w, *pass_fds),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=cwd,
                start_new_session=True,
                preexec_fn=preexec_fn,
            )
        finally:
            os.close(to_child_r), os.close(from_child_w), log.close()
        self.failed_cell: int | None = None
        self.cell_errors: dict[int, str] = {}
        self.names: list[str] = []
        self._send({"cells": list(cells)})
        current = None
        while True:
            try:
                message = self._receive(cell_timeout)
            except ChildFailed as failure:
                self.failed_cell = current
                self.close()
                where = f"while running cell {current}" if current is not None else "while starting"
                error = ChildFailed(f"{failure.reason} {where}")
                error.cell = current
                raise error from None
            if message.get("event") == "cell":
                current = message["index"]
            elif message.get("event") == "ready":
                self.names, self.cell_errors = list(message["names"]), dict(message["errors"])
                return

    def _send(self, obj: Any) -> None:
        try:
            _write_all(self._to_child, _encode(obj))
        except (BrokenPipeError, OSError):
            raise ChildFailed(self._ended()) from None

    def _ended(self) -> str:
        code = self.process.poll()
        if code is None:
            return "the grading process stopped reading"
        if code < 0:
            return f"the grading process was killed by signal {-code}" + (
                " (CPU time limit)"
                if -code == 24
                else " (killed: time or memory limit)"
                if -code == 9
                else ""
            )
        return f"the grading process exited with code {code}"

    def _receive(self, timeout: float) -> Any:
        deadline = time.monotonic() + timeout
        try:
            (n,) = _HEADER.unpack(_read_exact(self._from_child, _HEADER.size, deadline))
            if n > MAX_FRAME:
                raise ChildFailed(f"the grading process sent {n} bytes (more than {MAX_FRAME})")
            data = _read_exact(self._from_child, n, deadline)
        except TimeoutError:
            self.kill()
            raise ChildFailed(f"no answer within {timeout:g} s (an infinite loop?)") from None
        except EOFError:
            self.process.wait()
            raise ChildFailed(self._ended()) from None
        try:
            message = torch.load(io.BytesIO(data), weights_only=True)
        except Exception as err:  # an unreadable frame: the child wrote something that is not ours
            self.kill()
            raise ChildFailed(
                f"the grading process sent an unreadable message ({type(err).__name__})"
            ) from None
        if not isinstance(message, dict):
            self.kill()
            raise ChildFailed("the grading process sent a malformed message")
        return message

    def call(self, name: str, args: tuple, kwargs: dict) -> Any:
        self._send({"call": name, "args": _wire(args), "kwargs": _wire(kwargs)})
        reply = self._receive(self.call_timeout)
        if "error" in reply:
            raise StudentError(str(reply["error"]))
        result = reply.get("ok")
        if isinstance(result, dict) and "__unreadable__" in result:
            raise StudentError(
                f"the function returned {result['__unreadable__']}, which the grader does not read"
            )
        return result

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        if self.alive:
            try:
                os.killpg(self.process.pid, 9)
            except ProcessLookupError:
                pass
        self.process.wait()

    def close(self) -> None:
        for fd in (self._to_child, self._from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        self.kill()


class RemoteFunction:
    """A student's function by name, called in a ``Child``: behaves like the function for the checkers."""

    def __init__(self, child: Child, name: str) -> None:
        self.child, self.__name__ = child, name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.child.call(self.__name__, args, kwargs)
