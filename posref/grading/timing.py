"""Speed as a ratio: a student's function against the reference, on the same device, in the same run.

Timing on shared machines is noisy, so a ratio is measured as the design notes ask: one thread, warm-up
calls, at least 11 rounds that alternate which function goes first, and the median of the per-round ratios
(a slow round slows both functions of that round, so it cancels in its ratio). CUDA is synchronised around
each timed block. Inputs cycle through a small pool so that a function cannot just remember its last answer.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch

from posref.grading.report import private_copy

_clock = time.perf_counter  # bound once, at import


@contextmanager
def single_thread() -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def synchronize(device: torch.device) -> None:
    """Wait for the device's queued work (CUDA runs asynchronously), so a clock reading covers it."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _run(
    fn: Callable[..., Any],
    pool: Sequence[tuple[tuple, dict]],
    reps: int,
    device: torch.device,
    stop_after: float = math.inf,
) -> float:
    """Seconds for ``reps`` calls, synchronised at both ends; fewer calls once ``stop_after`` seconds have passed
    (then the time is a lower bound of what ``reps`` calls take: on CUDA the clock read between calls runs
    ahead of the device, never behind it)."""
    synchronize(device)
    start = _clock()
    for i in range(reps):
        args, kwargs = pool[i % len(pool)]
        fn(*args, **kwargs)
        if _clock() - start > stop_after:
            break
    synchronize(device)
    return _clock() - start


def _calls_per_round(
    fn: Callable[..., Any], pool: Sequence[tuple[tuple, dict]], device: torch.device, min_round_s: float
) -> tuple[int, float]:
    """The number of calls (a multiple of ``len(pool)``) that takes ``fn`` at least ``min_round_s``, and their
    time (at most 65536 calls)."""
    reps = len(pool)
    while (seconds := _run(fn, pool, reps, device)) < min_round_s and reps < 1 << 16:
        reps *= 2
    return reps, seconds


def seconds_per_call(
    fn: Callable[..., Any],
    pool: Sequence[tuple[tuple, dict]],
    *,
    device: torch.device,
    rounds: int = 5,
    min_round_s: float = 0.004,
) -> float:
    """Median over ``rounds`` of the mean time of one call of ``fn`` over ``pool``, timed like ``speed_ratio``.

    An absolute time, for benchmark reports only (checks compare ratios): what a budget's ratio is a ratio of.
    """
    with single_thread():
        _run(fn, pool, len(pool), device)  # warm-up
        reps, _ = _calls_per_round(fn, pool, device, min_round_s)
        return statistics.median(_run(fn, pool, reps, device) / reps for _ in range(rounds))


def speed_ratio(
    student: Callable[..., Any],
    reference: Callable[..., Any],
    pool: Sequence[tuple[tuple, dict]],
    *,
    device: torch.device,
    rounds: int = 11,
    warmup: int = 2,
    min_round_s: float = 0.004,
    give_up_above: float | None = None,
) -> tuple[float, list[float]]:
    """Median of per-round ``student time / reference time`` and the per-round ratios.

    Each round runs each function ``reps`` times over ``pool`` (``reps`` is set so that the reference takes at
    least ``min_round_s``). ``give_up_above``: stop early, after 3 rounds, when every ratio so far exceeds it
    (a function 100x over budget need not be timed 11 times to know it is over); and cut a round of the student
    short once it has taken twice ``give_up_above`` times the reference's latest round, so a function 1000x
    slower costs a few dozen reference rounds, not 1000. A cut round's ratio is taken against the reference
    round that set its cap: a lower bound of the true ratio, above twice ``give_up_above``, so a decision
    "over a budget below ``give_up_above``" is the same as with whole rounds.
    """
    # each side gets its own inputs: what one function does to them (in place) cannot change the other's work
    student_pool = [(private_copy(args), private_copy(kwargs)) for args, kwargs in pool]
    with single_thread():
        for _ in range(warmup):
            _run(reference, pool, len(pool), device)
            _run(student, student_pool, len(pool), device)
        reps, t_reference = _calls_per_round(reference, pool, device, min_round_s)
        cap = math.inf if give_up_above is None else 2.0 * give_up_above  # a margin over give_up_above
        ratios: list[float] = []
        for r in range(rounds):
            if r % 2:  # the student first: capped by the reference's previous round
                t_capping = t_reference
                t_student = _run(student, student_pool, reps, device, stop_after=cap * t_capping)
                t_reference = _run(reference, pool, reps, device)
            else:
                t_reference = t_capping = _run(reference, pool, reps, device)
                t_student = _run(student, student_pool, reps, device, stop_after=cap * t_capping)
            # a round that ran past the cap is compared with the reference time that set the cap, so its ratio
            # is above the cap even when the reference's next round happens to be slower
            cut = t_student > cap * t_capping
            ratios.append(t_student / max(t_capping if cut else t_reference, 1e-9))
            if give_up_above is not None and len(ratios) >= 3 and min(ratios) > give_up_above:
                break
    return statistics.median(ratios), ratios
