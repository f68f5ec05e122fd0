"""Speed check of 03's ``alibi_bias``, built as ``posref.grading.speed.SpeedCheck`` describes::

    from posref.grading.relative_speed import check_alibi_bias_speed
    check_alibi_bias_speed(alibi_bias)            # -> the ratio; CheckFailed if over budget

with ``device=`` as the other checkers take it (the budget is that device type's). In the score of record the
reference runs in a child of its own (``reference_path``: ``alibi_bias`` below, the student's signature).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from posref.grading import budgets
from posref.grading.cases import Draw
from posref.grading.rules import enforce_rules
from posref.grading.speed import SpeedCheck, speed_check
from posref.grading.timing import Chain, Round

_EPS32 = 2.0**-23


def alibi_bias(slopes: torch.Tensor, q_positions: torch.Tensor, k_positions: torch.Tensor) -> torch.Tensor:
    """03's ``alibi_bias`` vectorised: ``-slope_h * |m - n|`` -> ``(H, Tq, Tk)`` in the slopes' dtype."""
    distance = (q_positions[:, None] - k_positions[None, :]).abs().to(slopes.dtype)
    return -slopes[:, None, None] * distance


def _alibi_bias64(slopes, q_positions, k_positions):
    return alibi_bias(slopes.double(), q_positions, k_positions)


def alibi_bias_chain(draw: Draw, shape: tuple[int, ...]) -> Chain:
    """Slopes ``(H,)`` float32 in (2^-8, 1), query and key positions (int64) from random offsets for ``shape =
    (H, Tq, Tk)``; each call's slopes are the round's moved by the previous call's bias (``links.bias_to_slopes``)."""
    h, tq, tk = shape
    slopes = 2.0 ** (-8.0 * torch.rand(h, generator=draw.tensor_generator)).to(draw.device)
    q = torch.arange(tq, device=draw.device) + draw.int(0, 200)
    k = torch.arange(tk, device=draw.device) + draw.int(0, 200)
    return Chain(slopes, (q, k), link="bias_to_slopes", out_shape=(h, tq, tk), out_dtype=torch.float32)


def _bias_atol(timed: Round) -> float:
    """Each slope is moved by a bounded factor per call; the bias is one float32 product per element of distances
    up to a few hundred: a few units of float32 per call of the largest distance."""
    return 16 * _EPS32 * timed.calls * 1024


ALIBI_BIAS = SpeedCheck(
    name="alibi_bias",
    reference=alibi_bias,
    step=_alibi_bias64,
    chain=alibi_bias_chain,
    atol=_bias_atol,
    chained="slopes moved by the previous bias",
    budget=budgets.alibi_bias_budget,
    inputs="the bias (H, Tq, Tk)",
    advice="Build the (Tq, Tk) distances |m - n| in one expression by broadcasting q_positions[:, None] against "
    "k_positions[None, :], then multiply by the slopes as slopes[:, None, None]: no Python loop over query-key "
    "pairs, queries or heads.",
)


@speed_check("posref.grading.relative_speed:alibi_bias")
@enforce_rules
def check_alibi_bias_speed(fn: Callable[..., torch.Tensor], *, device=None, reference=None) -> float:
    """``fn(slopes, q_positions, k_positions)`` within the device's budget of a broadcast ``alibi_bias``
    (``budgets.alibi_bias_budget``). Returns the ratio."""
    return ALIBI_BIAS.check(fn, device=device, reference=reference)


__all__ = ["check_alibi_bias_speed"]
