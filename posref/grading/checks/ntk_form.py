"""Checker of notebook 07's NTK-aware rule as the lecture writes it (slides 50-51): per pair, not through the base.

The student's ``fn(head_dim, factor)`` returns the ``(head_dim/2,)`` multipliers of the pairs' frequencies,
``theta_i' / theta_i = s**(-2i/(d-2))`` (the slide's ``f(L, i)`` with its scale written as the factor ``s``). The
reference derives them from the base form instead (bloc97, 2023; YaRN paper arXiv 2309.00071, section 3.1): NTK-aware
sets ``b' = b * s**(d/(d-2))`` (``posref.scaling.ntk_base``), so pair ``i``'s frequency ``b'**(-2i/d)`` is
``b**(-2i/d) * (b'/b)**(-2i/d)``, whatever ``b``. Pair 0 then keeps its frequency and the last pair
(``i = d/2 - 1``) is divided by exactly ``s``: the two endpoints the slide's form makes visible.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from posref.grading.cases import Draw
from posref.grading.report import Case, first_difference
from posref.grading.rules import enforce_rules
from posref.i18n import N_, _
from posref.scaling import ntk_base

_ANY_BASE = 10000.0  # the ratio b'/b does not depend on b


def _pairs(head_dim: int) -> torch.Tensor:
    return torch.arange(head_dim // 2, dtype=torch.float64)


def _reference(head_dim: int, factor: float) -> torch.Tensor:
    new_over_old = ntk_base(_ANY_BASE, factor, head_dim) / _ANY_BASE  # b' / b = s**(d/(d-2))
    return torch.tensor(new_over_old, dtype=torch.float64) ** (-2 * _pairs(head_dim) / head_dim)


NTK_FORM_MISTAKES: dict[str, Callable] = {
    N_(
        "the exponent is -2i/(d-2), not -2i/d: with d the slowest pair is divided by s**((d-2)/d), not by s"
    ): (lambda d, s: torch.tensor(float(s), dtype=torch.float64) ** (-2 * _pairs(d) / d)),
    N_("NTK-aware slows the pairs down: s to the power -2i/(d-2), a multiplier of at most 1"): (
        lambda d, s: torch.tensor(float(s), dtype=torch.float64) ** (2 * _pairs(d) / (d - 2))
    ),
    N_("pair i's exponent uses i = 0, 1, ..., d/2 - 1: pair 0 keeps its frequency (multiplier 1)"): (
        lambda d, s: torch.tensor(float(s), dtype=torch.float64) ** (-2 * (_pairs(d) + 1) / (d - 2))
    ),
}


@enforce_rules
def check_ntk_pair_factor(fn: Callable, *, hidden: bool = False, device=None) -> None:
    """``fn(head_dim, factor)`` -> the ``(head_dim/2,)`` multipliers ``s**(-2i/(d-2))`` of NTK-aware scaling (float32
    or float64, on the CPU), compared with the base form's ratio ``(b'/b)**(-2i/d)``. Visible: head dims 16, 128,
    64 and factors 4, 8, 2; hidden: even head dims from 4 to 256, factors from 1.5 to 64."""
    draw = Draw(hidden=hidden, device=device)
    cases = []
    for i in range(draw.n(3, 24)):
        head_dim = (16, 128, 64)[i] if not hidden else draw.even(4, 256)
        factor = (4.0, 8.0, 2.0)[i] if not hidden else draw.choice((2.0, 4.0, 8.0, draw.uniform(1.5, 64.0)))
        cases.append(Case((head_dim, factor), atol=1e-12, rtol=1e-5))
    first_difference(
        "ntk_pair_factor",
        fn,
        _reference,
        cases,
        mistakes={_(hint): wrong for hint, wrong in NTK_FORM_MISTAKES.items()},  # said in the language of now
        match_dtype=False,
        at_least_float32=True,
        seed=draw.quoted_seed,
    )
