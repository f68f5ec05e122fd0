"""Speed budgets: the largest accepted ``student time / reference time`` (median of per-round ratios).

Every budget is a generous ratio, never an absolute time, measured on the same device in the same run
(``posref.grading.timing.speed_ratio``). Each entry records the measurement that set it. A budget belongs to a
device type (a GPU launches kernels in microseconds and streams memory a hundred times faster than a CPU, so the
same code can sit at a very different ratio there) and to the input shape it was measured on.

The rule that turns measured ratios into a budget is ``propose_budget``; ``python -m posref.bench --suite
budgets`` applies it to the student-style implementations of the tests and prints the line to paste here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Budget:
    """``max_ratio`` for inputs of ``shape``; ``provisional`` when it was not measured on its own device type."""

    max_ratio: float
    measured: str
    shape: tuple[int, ...] = (1, 8, 256, 64)
    provisional: bool = False


APPLY_ROPE_CPU = Budget(
    max_ratio=27.0,
    shape=(1, 8, 256, 64),
    measured=(
        "2-core shared CPU (load average 4-5: other sessions' tests), torch 2.13, 1 thread, x (1, 8, 256, 64) "
        "float32, against posref.apply_rope after its input checks stopped calling torch.broadcast_shapes (268 us "
        "per call; it was about 40% slower before, which flattered every student's ratio), timed as the check "
        "times it (11 rounds of chained calls on fresh inputs, about 50 ms of the reference per round), three "
        "medians each (python -m posref.bench --suite budgets): complex 3.0, 2.6, 2.7; rotate_half 3.5, 2.6, 3.0; "
        "einsum 8.9, 8.9, 11.3; float64 inside 7.3, 13.4, 8.8; matrix per position 228, 175, 205; loop over "
        "positions 132, 218, 136. ``propose_budget``: ceil(2 * 13.43) = 27, and the best slow median (132) is "
        "4.9x that. (Before: 20x, from sane medians up to 9.8 and slow ones from 93 against the slower reference.)"
    ),
)

# Not measured on a GPU yet: the CPU's ratio and shape, marked provisional (checker messages say so). At this
# shape a GPU mostly waits on kernel launches, so sane solutions stay well inside 12x, a Python loop over positions
# (hundreds of launches) fails, and a matrix per position may pass. Replace this one statement with the line that
# ``python -m posref.bench --device cuda --suite budgets`` prints.
APPLY_ROPE_CUDA = Budget(
    max_ratio=APPLY_ROPE_CPU.max_ratio,
    shape=APPLY_ROPE_CPU.shape,
    provisional=True,
    measured="not measured on CUDA: the CPU budget (ratio and shape) stands in until GPU figures exist",
)


def _for_device(cpu: Budget, cuda: Budget, device: torch.device | str) -> Budget:
    """``cpu`` or ``cuda`` by ``device``'s type; other types (``mps``, ...) have no measurement: they get the CPU
    budget marked provisional."""
    kind = torch.device(device).type
    if kind == "cpu":
        return cpu
    if kind == "cuda":
        return cuda
    return Budget(
        max_ratio=cpu.max_ratio,
        shape=cpu.shape,
        provisional=True,
        measured=f"not measured on {kind}: the CPU budget stands in",
    )


def apply_rope_budget(device: torch.device | str) -> Budget:
    """The ``apply_rope`` speed budget for ``device``'s type: measured on CPU; on CUDA see ``APPLY_ROPE_CUDA``."""
    return _for_device(APPLY_ROPE_CPU, APPLY_ROPE_CUDA, device)


ATTENTION_CPU = Budget(
    max_ratio=5.0,
    shape=(1, 2, 128, 16),
    measured=(
        "2-core shared CPU (load average 15-19), torch 2.13, 1 thread, q, k, v (1, 2, 128, 16) float32, causal "
        "alternating, against posref.scaled_dot_product_attention of main 5d58dfa, timed as check_apply_rope_speed "
        "(11 rounds of chained calls on fresh inputs), two medians each: matmul 0.79, 0.89; einsum 0.94, 0.64; "
        "float64 inside 2.08, 1.64; loop over queries (float64) 37.0, 28.2; loop over heads and queries 50.9, "
        "64.6. propose_budget: ceil(2 * 2.08) = 5, and 3 * 5 = 15 is below the best slow median (28.2). At (1, 4, "
        "128, 32), one median each: matmul 0.89, einsum 0.90, float64 inside 2.29, loop over queries 19.4, heads "
        "and queries 56.0 (separable, 1/3.9). At (1, 8, 256, 64) the loop over queries read 10.2 and 10.9 against "
        "float64 inside's 2.24 and 2.27: not separable (at larger shapes the products' own work hides the loop's "
        "per-query overhead), hence the small shape."
    ),
)

# Not measured on a GPU yet (as APPLY_ROPE_CUDA): replace with the line ``python -m posref.bench --device cuda
# --suite budgets`` prints.
ATTENTION_CUDA = Budget(
    max_ratio=ATTENTION_CPU.max_ratio,
    shape=ATTENTION_CPU.shape,
    provisional=True,
    measured="not measured on CUDA: the CPU budget (ratio and shape) stands in until GPU figures exist",
)


def attention_budget(device: torch.device | str) -> Budget:
    """01's ``attention`` speed budget (q, k, v all of ``shape``) for ``device``'s type."""
    return _for_device(ATTENTION_CPU, ATTENTION_CUDA, device)


SANE_FACTOR = 2.0
"""A budget is this many times the worst median ratio of a sane vectorised solution..."""
MARGIN = 3.0
"""...and must be at least this many times below the best median ratio of a classic slow solution."""


@dataclass(frozen=True)
class Proposal:
    """What ``propose_budget`` makes of one set of measurements; ``max_ratio`` is None when it cannot separate."""

    max_ratio: float | None
    worst_sane: float
    best_slow: float
    verdict: str


def propose_budget(sane: list[float], slow: list[float]) -> Proposal:
    """The rule behind every budget: ``ceil(SANE_FACTOR * worst sane median)``, if ``MARGIN`` times that is still
    at or below the best slow median; otherwise no budget (the two kinds of solution are too close to tell apart
    by time at the measured shape).

    Args:
        sane: median ratios (student / reference) of sane vectorised solutions, every repeat of every solution.
        slow: median ratios of the classic slow solutions (lower bounds are fine: they only understate the gap).
    """
    if not sane or not slow:
        raise ValueError(
            f"propose_budget needs ratios of both kinds, got {len(sane)} sane and {len(slow)} slow"
        )
    if not all(math.isfinite(r) and r > 0 for r in [*sane, *slow]):
        raise ValueError(f"ratios must be finite and positive, got sane {sane} and slow {slow}")
    worst_sane, best_slow = max(sane), min(slow)
    budget = float(math.ceil(SANE_FACTOR * worst_sane))
    if MARGIN * budget <= best_slow:
        verdict = (
            f"separable: {budget:g}x is {SANE_FACTOR:g}x the worst sane median ({worst_sane:.2f}, rounded up) and "
            f"1/{best_slow / budget:.1f} of the best slow median ({best_slow:.2f})"
        )
        return Proposal(budget, worst_sane, best_slow, verdict)
    verdict = (
        f"not separable: the rule's {budget:g}x ({SANE_FACTOR:g}x the worst sane median {worst_sane:.2f}, rounded "
        f"up) is not {MARGIN:g}x below the best slow median ({best_slow:.2f}); no budget at this shape"
    )
    return Proposal(None, worst_sane, best_slow, verdict)
