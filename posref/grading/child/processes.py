"""The processes of a sandboxed child, found and stopped: what keeps a student's processes off the CPU while the
reference is timed (``posref.grading.speed.timing``); the CPU time they used, what tells the grader to start a
long-lived child of its own afresh before its CPU limit ends it (``autograder.grading.record``); and the CPU time a timed
round charges where the child has no cgroup of its own (``tree_cpu_seconds``).

A child's processes are its descendants and whatever is left in its session (a process whose parent died is
adopted by the sandbox's first process, or, without the sandbox, by some other process: then its session still
tells); a fork of ``posref.grading.child.forkserver`` also names what its processes left to the sandbox.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager


def process_tree(root: int, adopted: Callable[[dict[int, list[int]]], list[int]] | None = None) -> set[int]:
    """The pids of ``root``, its descendants and every process of its session (``root`` leads it), plus what
    ``adopted(children)`` names (``children``: pid -> its child pids) and their descendants."""
    table = _process_table()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = set(), [root, *(pid for pid, (_, sid) in table.items() if sid == root)]
    if adopted is not None:
        todo += adopted(children)
    while todo:
        pid = todo.pop()
        if pid not in found and pid in table:
            found.add(pid)
            todo += children.get(pid, [])
    return found


@contextmanager
def frozen(processes: Callable[[], set[int]]) -> Iterator[None]:
    """Every process that ``processes()`` names stopped (SIGSTOP, which no process can catch) for the block, then
    resumed. Stopping repeats until a look finds no process it has not stopped (a stopped process cannot fork)."""
    stopped: set[int] = set()
    try:
        while new := processes() - stopped:
            for pid in new:
                _signal(pid, signal.SIGSTOP)
            stopped |= new
            _wait_stopped(new)
        yield
    finally:
        for pid in stopped:
            _signal(pid, signal.SIGCONT)


def cpu_seconds(pids: Iterable[int]) -> float:
    """The most CPU seconds (user and system, all threads) any one of ``pids`` has used: what ``RLIMIT_CPU``, a limit
    per process, is measured against. 0 for processes that are gone."""
    tick, most = os.sysconf("SC_CLK_TCK"), 0.0
    for pid in pids:
        fields = _stat(pid)
        if fields is not None:  # utime and stime: the 12th and 13th fields after "(comm)"
            most = max(most, (int(fields[11]) + int(fields[12])) / tick)
    return most


def tree_cpu_seconds(pids: Iterable[int], reapers: Iterable[int] = ()) -> float:
    """The CPU seconds (user and system, all threads) that the processes ``pids`` used, with all that the children
    they reaped used (``cutime``, ``cstime``: the kernel adds a child's time, its own reaped children's included, to
    its parent's when the parent reaps it), and what ``reapers`` (processes outside ``pids`` that adopt their
    orphans: a fork server's sandbox) reaped. Read with every process of ``pids`` stopped, this sum counts every
    process the tree ever started, living or reaped, once its orphans can only be reaped inside the tree or by
    ``reapers`` (a PID namespace of the sandbox's own): ``reapers`` are read last, so that an orphan reaped
    meanwhile is counted twice, never lost. A process's own time is read from its CPU clock (nanoseconds; the
    ticks of ``/proc``, 10 ms, would be a fifth of a 50 ms round), what it reaped in ticks."""
    tick, total = os.sysconf("SC_CLK_TCK"), 0.0
    for pid, own in [*((p, True) for p in pids), *((p, False) for p in reapers)]:
        fields = _stat(pid)
        if fields is None:
            continue
        total += (
            int(fields[13]) + int(fields[14])
        ) / tick  # cutime and cstime: the 14th and 15th after "(comm)"
        if own:
            try:
                total += time.clock_gettime(((~pid) << 3) | 2)  # MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)
            except OSError:  # no clock for it here: its utime and stime, in ticks
                total += (int(fields[11]) + int(fields[12])) / tick
    return total


def _stat(pid: int) -> list[bytes] | None:
    """The fields of ``/proc/<pid>/stat`` after ``(comm)`` (state first), None for a process that is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None


def _process_table() -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, session id) of every process this process can see, from ``/proc``."""
    table = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat(
                int(entry)
            )  # "pid (comm) state ppid pgrp session ...": comm may hold spaces and ")"
            if fields is not None:  # None: it ended meanwhile
                table[int(entry)] = (int(fields[1]), int(fields[3]))
    return table


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _wait_stopped(pids: set[int], timeout: float = 2.0) -> None:
    """Until every one of ``pids`` is stopped or gone (a signal takes effect when the process next runs)."""
    deadline = time.monotonic() + timeout
    waiting = set(pids)
    while waiting and time.monotonic() < deadline:
        for pid in list(waiting):
            try:
                with open(f"/proc/{pid}/stat", "rb") as f:
                    state = f.read().rsplit(b")", 1)[1].split()[0]
            except OSError:
                state = b"X"
            if state in (b"T", b"t", b"X", b"Z"):
                waiting.discard(pid)
        if waiting:
            time.sleep(0.0005)
