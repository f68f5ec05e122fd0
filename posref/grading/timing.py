"""Speed as a ratio: a student's function against the reference, on the same device, in the same run.

Timing on shared machines is noisy, so a ratio is measured as the design notes ask: one thread, warm-up
calls, at least 11 rounds that alternate which function goes first, and the median of the per-round ratios
(a slow round slows both functions of that round, so it cancels in its ratio). CUDA is synchronised around
each timed block. Inputs cycle through a small pool so that a function cannot just remember its last answer.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch

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
    fn: Callable[..., Any], pool: Sequence[tuple[tuple, dict]], reps: int, device: torch.device
) -> float:
    synchronize(device)
    start = _clock()
    for i in range(reps):
        args, kwargs = pool[i % len(pool)]
        fn(*args, **kwargs)
    synchronize(device)
    return _clock() - start


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
    (a function 100x over budget need not be timed 11 times to know it is over).
    """
    with single_thread():
        for _ in range(warmup):
            _run(reference, pool, len(pool), device)
            _run(student, pool, len(pool), device)
        reps = len(pool)
        while _run(reference, pool, reps, device) < min_round_s and reps < 1 << 16:
            reps *= 2
        ratios: list[float] = []
        for r in range(rounds):
            if r % 2:
                t_student = _run(student, pool, reps, device)
                t_reference = _run(reference, pool, reps, device)
            else:
                t_reference = _run(reference, pool, reps, device)
                t_student = _run(student, pool, reps, device)
            ratios.append(t_student / max(t_reference, 1e-9))
            if give_up_above is not None and len(ratios) >= 3 and min(ratios) > give_up_above:
                break
    return statistics.median(ratios), ratios
