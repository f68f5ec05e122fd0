"""One CPU for a timed round: threads cannot buy speed.

While a child runs a timed round (``Child.run_chain``), every thread of every process of the child is pinned to one
CPU (``pin``), so a function that starts threads (``torch.set_num_threads(16)``, a thread pool, forked workers)
runs them all on that CPU: they share its time instead of adding to it. A student's code could widen its own CPU
mask again from inside, so a round is charged the CPU time the child and everything it started used, living or
reaped (its cgroup's, or its process tree's: ``Child.cpu_seconds``), not its wall time: work spread over several
CPUs or processes costs what it would cost on one. (CPU time is also what keeps a ratio steady on a loaded machine:
the time a child waits while other processes hold its CPU is not its own.) The student's child and the reference's
child are pinned alike, to the same CPU (``timing_cpu``), and measured alike.
"""

from __future__ import annotations

import os
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
