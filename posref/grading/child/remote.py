"""Running a student's functions in another process, so that checks run where student code cannot reach.

The trusted process (the grader) starts a child (normally inside a sandbox, see ``autograder/sandbox/sandbox.py``),
sends it the code of the answer cells, and then calls the functions those cells define through ``RemoteFunction``:
arguments go to the child, results come back, and every comparison, every reference value and every clock reading
stays in the grader. Whatever the student's code patches (posref, torch.testing, the clock, the import system) it
patches in the child only, where nothing is judged. A call behaves as if it were local: what the function changes
in place in its tensor arguments comes back and is written into the grader's arguments.

Messages are length-prefixed ``torch.save`` payloads on two pipes (``framing``). The grader reads them with
``torch.load(weights_only=True)``, which builds tensors, numbers, strings and containers only (never arbitrary
objects), and refuses frames over ``framing.MAX_FRAME`` bytes. The child is untrusted (student code can patch the
child's end, ``serve``, inside it and write to its pipe), so the grader checks every frame itself: stored (uncompressed) zip
entries only, results made of dense tensors, 64-bit numbers, strings and at most ``MAX_ITEMS`` nested items, and
text from the child cut to ``MAX_TEXT`` printable characters before it reaches a message.

Speed checks time many calls per request (``Child.run_chain``): the chain's inputs travel through a shared-memory
buffer (a sealed memfd the child gets when it starts), written by the grader only once its clock has started;
the child runs the chain until the grader sets a stop byte in the buffer (it is never told how many calls), writes
each call's checksum and the last output into the buffer and answers with the number of calls it made; the grader
stops its clock, then reads the output and the checksums back. The transport is one small frame each way and one
copy of the inputs, the last output and the checksums per round, whatever the number of calls.

This module is the grader's end (``Child``, ``RemoteFunction``, used by ``autograder.grading.record``);
``serve.py`` is the child's, and both write and read ``framing.py``'s frames. Why here and not in autograder/:
the child runs ``from posref.grading.child.serve import serve`` inside the sandbox, which holds only posref/
(read-only, data included), so its end must be part of posref; the grader's end sits beside it, in this package,
so that the two cannot drift apart.
"""

from __future__ import annotations

import io
import math
import os
import select
import subprocess
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

import torch

from posref.grading.child import framing, rounds
from posref.grading.child.plain_data import (
    stored_zip,
    student_text,
    to_wire,
    unreadable,
    write_changes,
)
from posref.grading.child.processes import frozen, process_tree, tree_cpu_seconds
from posref.grading.failure import BudgetSpent, ChildFailed, StudentError
from posref.grading.speed.pinning import pin, timing_cpu
from posref.grading.speed.timing import TimedElsewhere
from posref.grading.watch import Ran
from posref.i18n import N_, _

MAX_NAMES, MAX_NAME = 10_000, 200  # names a child reports defined, and characters of each
SHARED_BYTES = 32 * 2**20  # the shared buffer of timed rounds (pages are allocated only where written)
EXIT_GRACE = 2.0  # seconds a child whose pipe broke has to end by itself before it is killed


def _raised(reply: dict) -> StudentError:
    """The ``StudentError`` of a child's error reply: its text and the names of its exception's classes."""
    types = reply.get("types")
    types = tuple(student_text(t) for t in types[:20]) if type(types) is list else ()
    return StudentError(student_text(reply["error"]), types=types)


class Child:
    """A child process running answer cells, driven from the grader.

    Args:
        command: the program prefix that starts Python in the sandbox (``python`` must be its last word);
            the child is started as ``command + ["-c", <serve>]``.
        cells: ``[(cell_index, source), ...]`` to run in order in one namespace.
        cell_timeout: wall seconds allowed for each cell; call_timeout: for each call; start_timeout: for Python
            and its imports (torch) to start, before the first cell (generous: a loaded machine starts slowly, and
            a start that fails leaves the whole notebook ungraded).
        deadline: a ``time.monotonic()`` time after which the child gets no more time at all (the grader's
            budget for a whole notebook); waiting past it raises ``BudgetSpent``.
        files: ``[(kind, path, data), ...]`` written into the child's working directory before the first cell
            (``autograder.sandbox.sandbox.submission_files``).
        on_close: called once when the child is closed (or could not be started), after it was killed.
        launch: ``launch(read_fd, write_fd, shared_fd)`` -> a process (``pid``, ``poll()``, ``wait()``) serving
            those pipes and that buffer, instead of starting ``command`` (a fork of ``posref.grading.child.forkserver``: no Python start, no import).
        cpu_clock: the CPU seconds the child and everything it started have used, living or reaped (its cgroup's,
            ``autograder.sandbox.cgroup``); None: its process tree's (``cpu_seconds``).

    The child announces each cell before running it; only the next cell of ``cells`` is accepted (student code
    can write to the pipe too, and must not restart a cell's clock or put the blame on another cell).
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
        start_timeout: float = 180.0,
        python_path: Sequence[str] = (),
        log_path: str | None = None,
        preexec_fn=None,
        pass_fds: Sequence[int] = (),
        deadline: float | None = None,
        files: Sequence[tuple[str, str, Any]] = (),
        on_close: Callable[[], object] | None = None,
        launch: Callable[[int, int, int], Any] | None = None,
        cpu_clock: Callable[[], float] | None = None,
    ) -> None:
        self.call_timeout, self.deadline, self._on_close = call_timeout, deadline, on_close
        self._cpu_clock = cpu_clock
        self._shared = rounds.sealed_buffer(SHARED_BYTES)
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        boot = (
            f"import sys; sys.path[:0] = {list(python_path)!r}; "
            f"from posref.grading.child.serve import serve; serve({to_child_r}, {from_child_w}, {self._shared})"
        )
        log = open(log_path or os.devnull, "wb")  # noqa: SIM115  (kept for the child's lifetime)
        try:
            self.process = (
                launch(to_child_r, from_child_w, self._shared)
                if launch is not None
                else subprocess.Popen(
                    [*command, "-c", boot],
                    pass_fds=(to_child_r, from_child_w, self._shared, *pass_fds),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    cwd=cwd,
                    start_new_session=True,
                    preexec_fn=preexec_fn,
                )
            )
        except BaseException:
            for fd in (self._to_child, self._from_child, self._shared):
                os.close(fd)
            if on_close is not None:
                on_close()
            raise
        finally:
            os.close(to_child_r)
            os.close(from_child_w)
            log.close()
        self.failed_cell: int | None = None
        self.cell_errors: dict[int, str] = {}
        self.names: list[str] = []
        self.refused_errors = 0  # cell errors the child reported for cells it was not sent (not kept)
        self._cells = {index for index, _ in cells}
        try:
            self._send({"cells": list(cells), "files": list(files)})
        except ChildFailed as failure:  # it ended before reading its program (a sandbox that cannot start)
            self.close()
            error = ChildFailed(_("{reason} while starting").format(reason=failure.reason))
            error.cell = None
            raise error from None
        to_come = [index for index, _ in cells]
        current, started = None, time.monotonic()
        # seconds from the start to the first cell's announcement (None) and for each cell, on the grader's clock
        # (for profiling only: nothing is decided by it)
        self.cell_seconds: dict[int | None, float] = {}
        while True:
            try:
                if current is None:
                    message = self._receive(start_timeout, started=started, hung=N_("a slow start"))
                else:
                    message = self._receive(cell_timeout, started=started)
                event, index = message.get("event"), message.get("index")
                event = event if type(event) is str else None
                if event == "cell" and type(index) is int and to_come and index == to_come[0]:
                    self.cell_seconds[current] = time.monotonic() - started
                    current, started = to_come.pop(0), time.monotonic()
                elif event == "ready" and not to_come:  # every cell announced
                    self.cell_seconds[current] = time.monotonic() - started
                    self.names, self.cell_errors = self._ready(message)
                    return
                else:
                    self.kill()
                    raise ChildFailed(_("the grading process sent a message out of order"))
            except ChildFailed as failure:
                self.failed_cell = current
                self.close()
                if current is None:
                    error = type(failure)(_("{reason} while starting").format(reason=failure.reason))
                else:
                    error = type(failure)(
                        _("{reason} while running cell {cell}").format(reason=failure.reason, cell=current)
                    )
                error.cell = None if isinstance(failure, BudgetSpent) else current
                raise error from None

    def _ready(self, message: dict) -> tuple[list[str], dict[int, str]]:
        """The names the child defined and the error of each cell that raised, bounded: at most ``MAX_NAMES``
        names of at most ``MAX_NAME`` characters (a longer or further one is not a function the grader asks for),
        one error of at most ``MAX_TEXT`` characters per cell the child was sent; an error for any other cell is
        not kept (counted in ``refused_errors``): the record holds no more than the program has cells."""
        names, errors = message.get("names"), message.get("errors")
        if not (
            type(names) is list
            and all(type(n) is str for n in names)
            and type(errors) is dict
            and all(type(k) is int and type(v) is str for k, v in errors.items())
        ):
            self.kill()
            raise ChildFailed(_("the grading process sent a malformed message"))
        kept = {k: student_text(v) for k, v in errors.items() if k in self._cells}
        self.refused_errors = len(errors) - len(kept)
        return [n for n in names[:MAX_NAMES] if len(n) <= MAX_NAME], kept

    def _send(self, obj: Any) -> None:
        self._send_frame(framing.encode(obj))

    def _send_frame(self, frame: bytes) -> None:
        try:
            framing.write_all(self._to_child, frame)
        except (BrokenPipeError, OSError):
            raise ChildFailed(self._gone()) from None

    def _gone(self) -> str:
        """Why the child no longer reads its pipe, once it has ended: a process killed by a signal closes its pipes
        a moment before its exit status can be read, so it gets ``EXIT_GRACE`` seconds to end by itself (and the
        reason is its own, e.g. its CPU limit), then it is killed. Either way it is not alive afterwards: the grader
        tells a failed child by that (``autograder.grading.record``)."""
        deadline = time.monotonic() + EXIT_GRACE
        while self.process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        reason = self._ended()
        self.kill()
        return reason

    def _ended(self) -> str:
        code = self.process.poll()
        if code is None:
            return _("the grading process stopped reading")
        why = {24: _(" (CPU time limit)"), 9: _(" (killed: time or memory limit)")}
        killed = _("the grading process was killed by signal {signal}")
        if code < 0:
            return killed.format(signal=-code) + why.get(-code, "")
        if code - 128 in why:  # bubblewrap's way of saying the process inside was killed by that signal
            return killed.format(signal=code - 128) + why[code - 128]
        return _("the grading process exited with code {code}").format(code=code)

    def _receive(
        self, timeout: float, *, started: float | None = None, hung: str = N_("an infinite loop?")
    ) -> Any:
        """The next message, within ``timeout`` seconds of ``started`` (default: now) and before ``deadline``."""
        deadline = (time.monotonic() if started is None else started) + timeout
        budget = self.deadline is not None and self.deadline < deadline
        if budget:
            deadline = self.deadline
        try:
            (n,) = framing.HEADER.unpack(framing.read_exact(self._from_child, framing.HEADER.size, deadline))
            if n > framing.MAX_FRAME:
                self.kill()
                raise ChildFailed(
                    _("the grading process sent {n} bytes (more than {most})").format(
                        n=n, most=framing.MAX_FRAME
                    )
                )
            data = framing.read_exact(self._from_child, n, deadline)
        except TimeoutError:
            self.kill()
            if budget:
                raise BudgetSpent(_("the time for grading this notebook ran out")) from None
            raise ChildFailed(
                _("no answer within {timeout:g} s ({hung})").format(timeout=timeout, hung=_(hung)), hung=True
            ) from None
        except EOFError:
            self.process.wait()
            raise ChildFailed(self._ended()) from None
        problem = stored_zip(data)
        if problem is not None:
            self.kill()
            raise ChildFailed(
                _("the grading process sent an unreadable message ({problem})").format(problem=problem)
            )
        try:
            message = torch.load(io.BytesIO(data), weights_only=True)
        except Exception as err:  # an unreadable frame: the child wrote something that is not ours
            self.kill()
            raise ChildFailed(
                _("the grading process sent an unreadable message ({problem})").format(
                    problem=type(err).__name__
                )
            ) from None
        if not isinstance(message, dict):
            self.kill()
            raise ChildFailed(_("the grading process sent a malformed message"))
        return message

    def call(
        self, name: str, args: tuple, kwargs: dict, *, watch: str | None = None, ran: Ran | None = None
    ) -> Any:
        """``name(*args, **kwargs)`` in the child. ``watch``: the checker whose rule the child watches during the
        call (``posref.grading.watch``); the names it reports as having run, and the functions of the student's that
        ran them, are added to ``ran``, before the call's result or error is read: a report only costs the student
        points, so it is taken as given."""
        request = {"call": name, "args": to_wire(args), "kwargs": to_wire(kwargs)}
        if watch is not None:
            request["watch"] = watch
        self._send(request)
        reply = self._receive(self.call_timeout)
        reported, through = reply.get("ran", []), reply.get("through")
        if type(reported) is not list or not all(type(n) is str for n in reported):
            reported = [_("something it did not name (a malformed report)")]
        through = through if type(through) is dict else {}
        if ran is not None:
            for what in reported[:10]:
                function = through.get(what)
                if type(function) is str and student_text(what) not in ran:
                    ran.through[student_text(what)] = student_text(function)
                ran.note(student_text(what))
        if "error" in reply:
            raise _raised(reply)
        result = reply.get("ok")
        if type(result) is dict and "__unreadable__" in result:
            what = student_text(result["__unreadable__"])
        else:
            what = unreadable(result)
        if what is not None:
            raise StudentError(
                _("returned {what}, which the grader does not read").format(what=what), raised=False
            )
        write_changes(args, kwargs, reply.get("changed", {}))
        return result

    def run_chain(
        self, name: str, chain: Any, max_calls: int, seconds: float, *, clock: Any = time.perf_counter
    ) -> tuple[float, int, torch.Tensor, torch.Tensor]:
        """A timed round of ``name`` in the child: calls along ``chain`` (a ``timing.Chain``) until ``seconds`` have
        passed on ``clock``, at most ``max_calls``. Returns (the CPU seconds charged, calls made, the last output,
        every call's checksum).

        The clock starts before the chain's tensors are written into the shared buffer (the child cannot see them
        earlier); the child is never told how many calls to make, nor which call ends the round: once ``seconds``
        have passed the grader stops every process of the child (``frozen``), reads the CPU time they used and the
        calls whose checksums are written (``rounds.calls_made``), and only then sets the stop byte; the child
        stops after the call it is making, copies the last output into the buffer and says how many calls it made.
        The round is charged at the rate measured while it was stopped: what the child does once it can know that
        the round is over (finish its call, reap a helper) costs nothing and earns nothing. The output and the
        checksums are read back afterwards, for the checker to verify (a child that reports calls it did not make is
        caught there). While the round runs every thread of the child is pinned to one CPU, and the round is charged
        the CPU time that the child and everything it started used, living or reaped (``cpu_seconds``), not the
        wall time (``pinning``): threads and processes cannot buy speed, and a loaded machine's other processes,
        which take the CPU from the child, do not count against it."""
        request, placed, out, sums = rounds.lay_out(name, chain, max_calls, SHARED_BYTES)
        stop = request["stop"]
        frame = framing.encode(request)
        pin(self.processes(), timing_cpu())
        rounds.unwritten(self._shared, request["sums"], max_calls)
        before = self.cpu_seconds()
        start = clock()
        for offset, tensor in placed:
            os.pwrite(self._shared, tensor.reshape(-1).view(torch.uint8).numpy(), offset)
        os.pwrite(self._shared, b"\0", stop)
        self._send_frame(frame)

        def measured() -> tuple[float, float, int]:  # (wall, CPU, calls made) with the child stopped
            with self.frozen():
                calls = rounds.calls_made(self._shared, request["sums"], max_calls)
                return clock() - start, self.cpu_seconds() - before, calls

        waited = None if math.isinf(seconds) else seconds
        ended, answered = None, select.select([self._from_child], [], [], waited)[0]
        if not answered:  # time is up: the round ends, in the middle of a call, once one call has finished
            patience = time.monotonic() + self.call_timeout
            while not (answered := select.select([self._from_child], [], [], 0.001)[0]):
                if rounds.calls_made(self._shared, request["sums"], 1) or time.monotonic() > patience:
                    ended = measured()
                    break
            os.pwrite(self._shared, b"\1", stop)
        reply = self._receive(self.call_timeout)
        if ended is None:  # it answered first: the round ends here
            ended = measured()
        wall, used, calls = ended
        if "error" in reply:
            raise _raised(reply)
        done = reply.get("done")
        if type(done) is not int or not max(1, calls) <= done <= max_calls:
            raise StudentError(
                _("reported {done} calls made of {most}").format(
                    done=student_text(repr(done)), most=max_calls
                ),
                raised=False,
                kind="timed-result",
            )
        spent = (
            (used if used > 0 else wall) * done / (calls or done)
        )  # the rate when it ended, for every call
        output, sums = (
            rounds.read_back(self._shared, request[key], like) for key, like in (("out", out), ("sums", sums))
        )
        return spent, done, output.to(chain.output_like().device), sums[:done].clone()

    def cpu_seconds(self) -> float:
        """The CPU seconds that the child and every process it started have used, living or reaped: its cgroup's
        (``cpu_clock``), else its process tree's (``processes.tree_cpu_seconds``: exact within a PID namespace of
        its own, whose first process reaps its orphans, and for a fork server's child, whose sandbox does)."""
        if self._cpu_clock is not None:
            return self._cpu_clock()
        return tree_cpu_seconds(self.processes(), getattr(self.process, "reapers", ()))

    def processes(self) -> set[int]:
        """The pids of the child and of every process it started (see ``processes.process_tree``)."""
        return process_tree(self.process.pid, getattr(self.process, "adopted", None))

    def frozen(self) -> AbstractContextManager[None]:
        """Every process of the child stopped for the block, then resumed: while the reference is timed, nothing of
        the student's can take the CPU from it (see ``processes.frozen``)."""
        return frozen(self.processes)

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
        for fd in (self._to_child, self._from_child, self._shared):
            try:
                os.close(fd)
            except OSError:
                pass
        self.kill()
        on_close, self._on_close = self._on_close, None
        if on_close is not None:
            on_close()


class RemoteFunction(TimedElsewhere):
    """A student's function by name, called in a ``Child``: behaves like the function for the checkers.
    ``answered`` counts the calls that returned a value (the grader tells from it whether an error in a check
    can have come from the child's data); ``ran`` collects what the child saw run that ``watch``'s rule forbids
    (the timed rounds of a speed check are not watched: a watch would slow what is timed)."""

    def __init__(self, child: Child, name: str, *, watch: str | None = None) -> None:
        self.child, self.__name__, self.watch = child, name, watch
        self.answered = 0
        self.ran = Ran()  # what the child reported as having run under ``watch``'s rule

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        result = self.child.call(self.__name__, args, kwargs, watch=self.watch, ran=self.ran)
        if self.ran:  # the check stops here: the grader's message says what ran (autograder.grading.record)
            raise StudentError(
                _("ran {name}, which its notebook's rules forbid").format(name=self.ran[0]),
                raised=False,
                kind="rule",
            )
        self.answered += 1
        return result

    def timed_round(
        self, chain: Any, max_calls: int, seconds: float, clock: Callable[[], float]
    ) -> tuple[float, int, torch.Tensor, torch.Tensor]:
        return self.child.run_chain(self.__name__, chain, max_calls, seconds, clock=clock)

    def held_still(self) -> AbstractContextManager:
        return self.child.frozen()
