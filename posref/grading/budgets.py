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
        "2-core shared CPU (torch 2.13, 1 thread), x (1, 8, 256, 64) float32, 11 rounds, against posref.apply_rope: "
        "sane vectorised solutions: rotate_half in x's dtype 2.4 and 6.3 (two runs), complex numbers 1.6 and 2.0; "
        "what the lecture warns against: a (D, D) rotation matrix per position 231 and 375, a Python loop over "
        "positions 53 and 230. Per-round ratios of sane solutions ranged 0.3-19 on the busy machine, hence the "
        "median and a budget of 12, twice the worst sane median and a quarter of the best bad one."
    ),
)
