"""A fork server: one process in a sandbox imports torch once, and every child is a fresh fork of it.

Starting a child used to cost a whole Python start and torch's import (1.5 s of CPU, 3-10 s of wall time on a
loaded 2-core machine) per notebook and per restart. The fork server is a process started like a child (the
same sandbox, limits and seccomp filter), which imports what every child imports and then waits. For each child
the grader sends it two pipe ends and the shared buffer of timed rounds (``SCM_RIGHTS`` over a
``SOCK_SEQPACKET`` socket) and the server forks; when the fork ends (or is killed), the server ends every other
process in its PID namespace that the child's user owns (what the child left running) and empties ``/scratch``
and the private ``/tmp`` and ``/dev/shm`` before it reports the exit status, and it does so again before each fork;
the fork closes the server's socket and serves the grader exactly as a started child does (``serve.serve``). So a
child still starts with nothing of another student's: no process (killed), no file (removed), no memory (a fork of
a server that never ran student code), no IPC object or key (the calls that make them are refused:
``autograder/sandbox/seccomp.py``; the server's IPC namespace and keyrings are every fork's). The server is not
dumpable (``PR_SET_DUMPABLE`` 0), so a child cannot ptrace it or read its memory to reach the next child; a child
that kills or stops it costs a restart of the server, nothing more.

The grader side (``ForkServer``) finds each fork's pid as the grader sees it (the server knows only its PID
namespace's number) from ``/proc/<pid>/status``, so that it can be killed and put into its own memory cgroup
before its program (and so any student code) is sent. The server reaps its forks and reports their exit status.
"""

from __future__ import annotations

import ctypes
import json
import os
import select
import signal
import socket
import subprocess
from collections.abc import Callable, Sequence

_PR_SET_DUMPABLE = 4
EMPTIED = ("/scratch", "/tmp", "/dev/shm")
WAIT = 30.0  # seconds for the server to report a killed child's end (it checks every 0.05 s)


def _dumpable(on: bool) -> None:
    ctypes.CDLL(None).prctl(_PR_SET_DUMPABLE, int(on), 0, 0, 0)


def _send(sock: socket.socket, message: dict) -> None:
    sock.send(json.dumps(message).encode())


def _returncode(status: int) -> int:
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def _clear(folders: Sequence[str]) -> None:
    """End every process this user may signal here but this one (and the namespace's init), then empty
    ``folders``."""
    from posref.grading.child.scratch import empty

    try:
        os.kill(-1, signal.SIGKILL)
    except ProcessLookupError:
        pass
    while True:
        try:
            if os.waitpid(-1, 0)[0] == 0:
                break
        except ChildProcessError:
            break
    for folder in folders:
        if os.access(folder, os.W_OK):
            empty(folder)


def serve_forks(sock_fd: int, work: str, preload: Sequence[str] = ()) -> None:
    """The server's loop (in the sandbox): fork a child for each request until the grader closes the socket.
    ``work``: the children's working directory; ``preload``: more modules to import once, before the first fork
    (what the graded notebooks import: a module that fails to import here is left to the child). Only ever run
    in a PID namespace of its own (bubblewrap's ``--unshare-pid``): it ends every process of its user it can
    see."""
    import importlib

    import posref.grading  # noqa: F401  (torch and posref's core: what every child imports, once)
    from posref.grading.child.serve import serve

    for module in preload:
        try:
            importlib.import_module(module)
        except Exception:  # noqa: BLE001, S112  (the child imports it itself, and sees the error there)
            continue

    _dumpable(False)
    folders = [work, *(f for f in EMPTIED if f != work)]
    sock = socket.socket(fileno=sock_fd)
    _send(sock, {"ready": os.getpid()})
    child, forks = None, 0  # forks: the number of the last fork, which tags its messages
    while True:
        readable = select.select([sock], [], [], None if child is None else 0.05)[0]
        if child is not None:
            try:
                pid, status = os.waitpid(child, os.WNOHANG)
            except ChildProcessError:
                pid, status = child, 9
            if (
                pid
            ):  # what it left running ends now, not at the next fork (it would share the CPU with a clock)
                _clear(folders)
                _send(sock, {"exited": forks, "status": _returncode(status)})
                child = None
        if not readable:
            continue
        _, fds, _, _ = socket.recv_fds(sock, 16, 3)
        if len(fds) != 3:  # the grader is gone (or sent nothing usable)
            return
        if child is not None:  # the grader waits for a child's end before the next: be sure anyway
            os.kill(child, signal.SIGKILL)
            child = None
        _clear(folders)
        pid = os.fork()
        if pid == 0:  # the child: nothing of the server's reaches student code
            try:
                sock.close()
                os.setsid()
                _dumpable(True)
                os.chdir(work)
                null = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(null, fd)
                serve(*fds)
            finally:
                os._exit(0)
        for fd in fds:
            os.close(fd)
        child, forks = pid, forks + 1
        _send(sock, {"forked": pid, "number": forks})


# ---------------------------------------------------------------- the grader side


def _status(pid: int) -> tuple[int, list[int]] | None:
    """(parent pid, [pid in each PID namespace, outermost first]) of ``pid``, None if it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
    except OSError:
        return None
    return int(fields["PPid"]), [int(p) for p in fields.get("NSpid", str(pid)).split()]


def host_pid(ancestor: int, inner_pid: int) -> int | None:
    """The pid, as the grader sees it, of the descendant of ``ancestor`` (at most 4 levels down) that its own PID
    namespace calls ``inner_pid``."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        found = _status(int(name))
        if found is None or found[1][-1] != inner_pid:
            continue
        parent = found[0]
        for _ in range(4):
            if parent == ancestor:
                return int(name)
            up = _status(parent)
            if up is None:
                break
            parent = up[0]
    return None


class ServerGone(Exception):
    """The fork server ended or stopped answering."""


class ForkedProcess:
    """A fork of the server, as ``remote.Child`` uses a ``subprocess.Popen``: ``pid`` (as the grader sees it),
    ``poll()`` and ``wait()`` (the exit status, which the server reports)."""

    def __init__(self, server: ForkServer, pid: int, number: int) -> None:
        self.server, self.pid, self.number, self.returncode = server, pid, number, None

    def adopted(self, children: dict[int, list[int]]) -> list[int]:
        """Of ``children`` (pid -> its children's pids), the processes the server's sandbox adopted (what this
        fork's processes left when their parent ended) and the server's own children but the fork (what they
        started as the server's, with ``CLONE_PARENT``): the server runs one fork at a time, so they are its."""
        left = [pid for pid in children.get(self.server.adopter, []) if pid != self.server.pid]
        return left + [pid for pid in children.get(self.server.pid, []) if pid != self.pid]

    @property
    def reapers(self) -> tuple[int, int]:
        """The processes outside this fork's tree that reap what it leaves (``processes.tree_cpu_seconds``): the
        sandbox's first process and the server."""
        return self.server.adopter, self.server.pid

    def poll(self) -> int | None:
        if self.returncode is None:
            self.server._collect(self, 0.0)
        return self.returncode

    def wait(self) -> int:
        while self.returncode is None:
            self.server._collect(self, WAIT)
        return self.returncode


class ForkServer:
    """Starts the server with ``command`` (a sandboxed Python, as for a child) and forks children from it.

    Args:
        command: the program prefix that starts Python in the sandbox (``python`` its last word).
        work: the children's working directory, as the server sees it.
        preload: module names the server imports once besides ``posref.grading`` (``serve_forks``).
        join: called with each fork's pid before it is handed out (e.g. to put it into a memory cgroup).
    """

    def __init__(
        self,
        command: Sequence[str],
        work: str,
        *,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        python_path: Sequence[str] = (),
        preexec_fn: Callable[[], object] | None = None,
        start_timeout: float = 180.0,
        preload: Sequence[str] = (),
    ) -> None:
        if not all(isinstance(m, str) and m.replace(".", "").replace("_", "").isalnum() for m in preload):
            raise ValueError(f"preload must be module names, got {list(preload)!r}")
        self._sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        boot = (
            f"import sys; sys.path[:0] = {list(python_path)!r}; from posref.grading.child.forkserver import serve_forks; "
            f"serve_forks({theirs.fileno()}, {work!r}, {list(preload)!r})"
        )
        try:
            self.process = subprocess.Popen(
                [*command, "-c", boot],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=env,
                cwd=cwd,
                start_new_session=True,
                preexec_fn=preexec_fn,
            )
        finally:
            theirs.close()
        self.current: ForkedProcess | None = None
        self._ended: dict[int, int] = {}  # fork number -> exit status, read but not yet asked for
        try:
            ready = self._receive(start_timeout).get("ready")
            self.pid = host_pid(self.process.pid, ready) if type(ready) is int else None
            found = None if self.pid is None else _status(self.pid)
            if found is None:
                raise ServerGone("the fork server could not be found")
            self.adopter = found[0]  # the sandbox's first process, which adopts orphans
        except BaseException:
            self.close()
            raise

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def _receive(self, timeout: float | None) -> dict:
        if not select.select([self._sock], [], [], timeout)[0]:
            if timeout == 0:
                return {}
            raise ServerGone(f"the fork server did not answer within {timeout:g} s")
        data = self._sock.recv(4096)
        if not data:
            raise ServerGone("the fork server ended")
        message = json.loads(data)
        if not isinstance(message, dict):
            raise ServerGone("the fork server sent a malformed message")
        return message

    def _collect(self, process: ForkedProcess, timeout: float) -> None:
        """Wait up to ``timeout`` s for the exit status of ``process`` (statuses of other forks are kept for them:
        a message is read once, whichever ``ForkedProcess`` is asking)."""
        while process.number not in self._ended:
            try:
                message = self._receive(timeout)
            except (ServerGone, OSError, ValueError):
                # the server is gone, or hangs (a child may stop it): its sandbox ends, and every child with it
                self.close()
                self._ended[process.number] = -signal.SIGKILL
                break
            if not message:
                return
            if type(message.get("exited")) is int:
                self._ended[message["exited"]] = int(message["status"])
        process.returncode = self._ended.pop(process.number)

    def fork(
        self, to_child_r: int, from_child_w: int, shared: int, join: Callable[[int], object] | None = None
    ) -> ForkedProcess:
        """A new child reading ``to_child_r``, writing ``from_child_w`` and sharing the buffer ``shared`` (see
        ``serve.serve``; all three still the caller's to close)."""
        if self.current is not None and self.current.returncode is None:
            try:
                os.killpg(self.current.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.current.wait()
        try:
            socket.send_fds(self._sock, [b"fork"], [to_child_r, from_child_w, shared])
            reply = self._receive(60.0)
            while type(reply.get("exited")) is int:  # an earlier fork's end, kept for whoever asks
                self._ended[reply["exited"]] = int(reply["status"])
                reply = self._receive(60.0)
            forked, number = reply.get("forked"), reply.get("number")
            pid = host_pid(self.pid, forked) if type(forked) is int and type(number) is int else None
            if pid is None:
                raise ServerGone("the fork server's child could not be found")
        except (
            ServerGone,
            OSError,
            ValueError,
        ) as err:  # ended (a child may kill it) or stopped: not used again
            self.close()
            raise ServerGone(str(err)) from None
        self.current = ForkedProcess(self, pid, number)
        if join is not None:
            join(pid)
        return self.current

    def close(self) -> None:
        self.current = None
        self._sock.close()
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()
