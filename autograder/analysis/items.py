"""Item analysis of one test cell over a class: how many earned its points, and how well it separates the students
who did well on the assignment from those who did not.

Two standard discrimination indices (classical test theory; e.g. Crocker & Algina, *Introduction to Classical and
Modern Test Theory*, 1986, ch. 14), both on the score of record:

* ``item_total_r``, the corrected item-total correlation: Pearson's correlation between the cell's score and the
  rest of the student's score (the total without this cell, so that the cell does not correlate with itself). A
  cell scored 0 or its points makes it the point-biserial correlation. From -1 to 1; about 0.3 and above is usually
  read as discriminating well, below 0.2 as poorly, below 0 as a cell that the stronger students fail more often.
* ``upper_lower_d``, the upper-lower index (Kelley's 27%): the share of the top 27% of the class by total score that
  earned the cell's points, minus that share in the bottom 27% (ties at the cut broken by the order given). From -1
  to 1.

Neither is defined where a class gives it no spread (every student with the same cell score, or the same rest score,
or fewer than 4 students): ``None`` then, said "n/a".
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

UPPER_LOWER_SHARE = 0.27
MIN_STUDENTS = 4


@dataclass(frozen=True)
class Item:
    """One test cell over the students graded: ``scores[i]`` the cell's score of student ``i``."""

    points: float
    passed: int  # students with the cell's full points
    graded: int
    distribution: dict[float, int]  # score -> students
    item_total_r: float | None
    upper_lower_d: float | None

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.graded if self.graded else None


def analyse(points: float, scores: Sequence[float], totals: Sequence[float]) -> Item:
    """The item analysis of a cell worth ``points``: ``scores[i]`` is student ``i``'s score on it, ``totals[i]`` the
    student's total (this cell included)."""
    if len(scores) != len(totals):
        raise ValueError(f"{len(scores)} cell scores for {len(totals)} totals: one of each per student")
    rest = [t - s for s, t in zip(scores, totals, strict=True)]
    return Item(
        points=points,
        passed=sum(s >= points for s in scores),
        graded=len(scores),
        distribution=dict(sorted(Counter(float(s) for s in scores).items())),
        item_total_r=correlation(scores, rest),
        upper_lower_d=upper_lower(points, scores, totals),
    )


def correlation(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Pearson's r of ``x`` and ``y``; None with fewer than ``MIN_STUDENTS`` pairs or no spread in either."""
    n = len(x)
    if n < MIN_STUDENTS:
        return None
    mx, my = sum(x) / n, sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    sxx, syy = sum((a - mx) ** 2 for a in x), sum((b - my) ** 2 for b in y)
    if sxx <= 1e-12 or syy <= 1e-12:
        return None
    return sxy / math.sqrt(sxx * syy)


def upper_lower(points: float, scores: Sequence[float], totals: Sequence[float]) -> float | None:
    """Kelley's upper-lower index: the share of the top ``UPPER_LOWER_SHARE`` of the class by total that earned the
    cell's points, minus that share in the bottom; None with fewer than ``MIN_STUDENTS`` students or where every
    total is the same (no top or bottom)."""
    n = len(scores)
    if n < MIN_STUDENTS or max(totals) == min(totals):
        return None
    group = max(1, round(UPPER_LOWER_SHARE * n))
    order = sorted(range(n), key=lambda i: totals[i])  # stable: ties keep the order given
    low, high = order[:group], order[-group:]

    def share(students: list[int]) -> float:
        return sum(scores[i] >= points for i in students) / len(students)

    return share(high) - share(low)


def histogram(values: Sequence[float], top: float, bins: int = 10) -> list[tuple[float, float, int]]:
    """``values`` from 0 to ``top`` counted in ``bins`` equal bins: ``[(low, high, count), ...]``; the last bin holds
    ``top`` itself (a full score)."""
    if top <= 0:
        return [(0.0, 0.0, len(values))]
    width = top / bins
    counts = [0] * bins
    for value in values:
        counts[min(bins - 1, max(0, int(value / width)))] += 1
    return [(i * width, (i + 1) * width, counts[i]) for i in range(bins)]
