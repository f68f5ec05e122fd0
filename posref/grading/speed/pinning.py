"""One CPU for a timed round: threads cannot buy speed.

While a child runs a timed round (``Child.run_chain``), every thread of every process of the child is pinned to one
CPU (``pin``), so a function that starts threads (``torch.set_num_threads(16)``, a thread pool, forked workers)
runs them all on that CPU: they share its time instead of adding to it. A student's code could widen its own CPU
mask again from inside, so a round is charged the CPU time its processes used (``cpu_seconds``), not its wall time:
work spread over several CPUs costs what it would cost on one. (CPU time is also what keeps a ratio steady on a
loaded machine: the time a child waits while other processes hold its CPU is not its own.) The student's child and
the reference's child are pinned alike, to the same CPU (``timing_cpu``), and measured alike.

Known limit: a process that starts and ends within one round takes its CPU time with it (only the processes alive
at the round's start or end are read); pinning still holds it to the one CPU unless it widens its own mask.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable


def timing_cpu() -> int:
    """The CPU this grading process times on: one of those it may use, chosen by its pid (so that the workers of
    one machine spread over its CPUs)."""
    cpus = sorted(os.sched_getaffinity(0))
    return cpus[os.getpid() % len(cpus)]


def _threads(pid: int) -> list[int]:
    try:
        return [int(tid) for tid in os.listdir(f"/proc/{pid}/task")]
    except OSError:  # it ended meanwhile
        return []


def pin(pids: Iterable[int], cpu: int) -> None:
    """Every thread of the processes ``pids`` allowed to run on ``cpu`` only (threads they start later inherit it).
    A process or thread that ended meanwhile, or that this process may not change, is left as it is."""
    for pid in pids:
        for tid in _threads(pid):
            try:
                os.sched_setaffinity(tid, {cpu})
            except OSError:
                pass


def _cpu_clock(pid: int) -> int:
    """The id of the clock that counts the CPU time of process ``pid`` (all its threads, ended ones included), as
    Linux encodes it (``MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)``)."""
    return ((~pid) << 3) | 2


def cpu_seconds(pids: Iterable[int]) -> dict[int, float]:
    """pid -> the CPU seconds that process has used so far, for those of ``pids`` still there."""
    used = {}
    for pid in pids:
        try:
            used[pid] = time.clock_gettime(_cpu_clock(pid))
        except OSError:  # it ended meanwhile
            pass
    return used


def cpu_used(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU seconds used between two ``cpu_seconds`` readings: by the processes read both times, and all of what a
    process that appeared in between used."""
    return sum(seconds - before.get(pid, 0.0) for pid, seconds in after.items())
