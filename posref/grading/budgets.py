"""Speed budgets: the largest accepted ``student time / reference time`` (median of per-round ratios).

Every budget is a generous ratio, never an absolute time, measured on the same device in the same run
(``posref.grading.timing.speed_ratio``). Each entry records the measurement that set it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Budget:
    max_ratio: float
    measured: str


APPLY_ROPE = Budget(
    max_ratio=12.0,
    measured=(
        "2-core shared CPU, torch 2.13, 1 thread, x (1, 8, 256, 64) float32, 11 rounds, against posref.apply_rope. "
        "First run (old reference, machine load ~10): sane vectorised solutions: rotate_half in x's dtype 2.4 and "
        "6.3, complex numbers 1.6 and 2.0; what the lecture warns against: a (D, D) rotation matrix per position "
        "231 and 375, a Python loop over positions 53 and 230 (per-round ratios of sane solutions 0.3-19). "
        "Second run (in-place reference of main 0fa7172, load ~5), three medians each: rotate_half 1.5, 1.3, 1.4; "
        "complex 2.7, 2.6, 3.2; matrix per position 217, 160, 329; loop over positions 75, 176, 132. "
        "A budget of 12 is twice the worst sane median and a sixth of the best bad one."
    ),
)
