"""Speed checks of 03's ``alibi_bias``, ``t5_bucket`` and ``t5_learned_bias``, built as
``posref.grading.speed.check.SpeedCheck`` describes::

    from posref.grading.speed.relative import check_alibi_bias_speed
    check_alibi_bias_speed(alibi_bias)            # -> the ratio; CheckFailed if over budget
    check_t5_bucket_speed(t5_bucket)
    check_t5_learned_bias_speed(t5_learned_bias)  # the student's own t5_bucket inside is timed with it

with ``device=`` as the other checkers take it (the budget is that device type's). In the score of record the
reference runs in a child of its own (``reference_path``: the functions below, the student's signatures).

The T5 rounds pass ``max_distance=120``, not T5's 128: with 128 the logarithmic buckets' boundaries fall exactly on
the distances 16, 32 and 64, where a float32 and a float64 logarithm may truncate to neighbouring buckets (the
correctness check accepts both). With 120 no distance lands within 10^-3 of a boundary, so every sane arithmetic
gives the same buckets and the timed outputs are verified exactly.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from posref.grading.cases import Draw
from posref.grading.rules import enforce_rules
from posref.grading.speed import budgets
from posref.grading.speed.check import SpeedCheck, speed_check
from posref.grading.speed.timing import Chain, Round
from posref.i18n import N_

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
    """The bias is one float32 product per element, at most 3 times the largest drawn slope (``links.bias_to_slopes``)
    times the largest distance; each call's slopes come from a float32 mean of the previous bias, and the link
    shrinks a difference in the slopes (to well under half of itself per call), so the roundings of a round stay
    within a few of one call's: 64 units of float32 of the largest bias, whatever the number of calls."""
    slopes, q, k = timed.chain.start, *timed.chain.args
    distance = max(float(q.max() - k.min()), float(k.max() - q.min()))
    return 64 * _EPS32 * 3 * float(slopes.max()) * distance


ALIBI_BIAS = SpeedCheck(
    name="alibi_bias",
    correctness="check_alibi_bias",
    reference=alibi_bias,
    step=_alibi_bias64,
    chain=alibi_bias_chain,
    atol=_bias_atol,
    chained=N_("slopes moved by the previous bias"),
    budget=budgets.alibi_bias_budget,
    inputs=N_("the bias (H, Tq, Tk)"),
    advice=N_(
        "Build the (Tq, Tk) distances |m - n| in one expression by broadcasting q_positions[:, None] against "
        "k_positions[None, :], then multiply by the slopes as slopes[:, None, None]: no Python loop over query-key "
        "pairs, queries or heads."
    ),
)


@speed_check("posref.grading.speed.relative:alibi_bias")
@enforce_rules
def check_alibi_bias_speed(
    fn: Callable[..., torch.Tensor], *, device=None, reference=None, checked=False
) -> float:
    """``fn(slopes, q_positions, k_positions)`` within the device's budget of a broadcast ``alibi_bias``
    (``budgets.alibi_bias_budget``). Returns the ratio."""
    return ALIBI_BIAS.check(fn, device=device, reference=reference, checked=checked)


# --------------------------------------------------------------------------------------------------- T5

T5_MAX_DISTANCE = 120
"""The timed rounds' ``max_distance`` (see the module's docstring)."""


def t5_bucket(
    relative_position: torch.Tensor,
    bidirectional: bool = True,
    num_buckets: int = 32,
    max_distance: int = 128,
) -> torch.Tensor:
    """03's ``t5_bucket`` vectorised (posref's rule, float32 logarithm, without its input checks)."""
    rel = relative_position.long()
    if bidirectional:
        num_buckets //= 2
        offset = (rel > 0).long() * num_buckets  # keys after the query take the upper half
        n = rel.abs()
    else:
        offset = 0
        n = (-rel).clamp(min=0)
    max_exact = num_buckets // 2
    log_ratio = torch.log(n.float().clamp(min=1) / max_exact) / math.log(max_distance / max_exact)
    large = (max_exact + (log_ratio * (num_buckets - max_exact)).long()).clamp(max=num_buckets - 1)
    return offset + torch.where(n < max_exact, n, large)


def t5_learned_bias(
    weight: torch.Tensor,
    q_positions: torch.Tensor,
    k_positions: torch.Tensor,
    bidirectional: bool = True,
    max_distance: int = 128,
) -> torch.Tensor:
    """03's ``t5_learned_bias`` vectorised: ``weight[bucket(k - q)]`` for every pair at once -> ``(H, Tq, Tk)``."""
    buckets = t5_bucket(
        k_positions[None, :] - q_positions[:, None], bidirectional, weight.shape[0], max_distance
    )
    return weight[buckets].permute(2, 0, 1)  # (Tq, Tk, H) -> (H, Tq, Tk)


def _t5_learned_bias64(weight, q_positions, k_positions, bidirectional=True, max_distance=128):
    return t5_learned_bias(weight.double(), q_positions, k_positions, bidirectional, max_distance)


_T5_KWARGS = ({"bidirectional": True, "max_distance": T5_MAX_DISTANCE},
              {"bidirectional": False, "max_distance": T5_MAX_DISTANCE})  # fmt: skip


def t5_bucket_chain(draw: Draw, shape: tuple[int, ...]) -> Chain:
    """Relative positions ``k - q`` (int64, ``shape = (Tq, Tk)``) with the queries' start within 30 of the keys'
    (for 128 of each: offsets of both signs and of every region of the rule, exact, logarithmic and clipped, in
    every call); calls alternate bidirectional and not, 32 buckets, max_distance 120. Each call's offsets are the
    round's plus the previous call's buckets plus a shift in [-32, 64) that changes with every call
    (``links.buckets_to_offsets``; the shift keeps both signs: 30 - 127 + 31 + 63 < 0 < -30 + 127 - 32)."""
    tq, tk = shape
    k0 = draw.int(0, 200)
    q = torch.arange(tq, device=draw.device) + k0 + draw.int(-30, 30)
    k = torch.arange(tk, device=draw.device) + k0
    return Chain(k[None, :] - q[:, None], (), _T5_KWARGS, link="buckets_to_offsets")


def t5_learned_bias_chain(draw: Draw, shape: tuple[int, ...]) -> Chain:
    """A table ``(32, H)`` float32, query and key positions (int64) from random offsets for ``shape = (H, Tq,
    Tk)``; calls alternate bidirectional and not, max_distance 120. Each call's table is the round's plus the
    previous call's mean bias per head, squashed (``links.bias_to_weight``)."""
    h, tq, tk = shape
    q = torch.arange(tq, device=draw.device) + draw.int(0, 200)
    k = torch.arange(tk, device=draw.device) + draw.int(0, 200)
    weight = draw.randn(32, h, dtype=torch.float32)
    return Chain(
        weight, (q, k), _T5_KWARGS, link="bias_to_weight", out_shape=(h, tq, tk), out_dtype=torch.float32
    )


def _learned_bias_atol(timed: Round) -> float:
    """The bias is the table's entries, gathered: exact. Each call moves the table by a float32 mean of them, and the
    link squashes it (``tanh``), so roundings do not pile up along a round (a float32 lookup stayed within 2.3e-7 of
    the float64 replay over 1000 calls): 256 roundings of the largest entry."""
    return 256 * _EPS32 * max(float(timed.chain.start.abs().max()), 1.0)


T5_BUCKET = SpeedCheck(
    name="t5_bucket",
    correctness="check_t5_bucket",
    reference=t5_bucket,
    step=t5_bucket,
    chain=t5_bucket_chain,
    atol=lambda timed: 0.0,
    chained=N_("offsets plus the previous buckets and the call number"),
    budget=budgets.t5_bucket_budget,
    inputs=N_("relative positions (Tq, Tk)"),
    advice=N_(
        "Compute the bucket of every offset at once with tensor operations: the exact part and the "
        "logarithmic part for the whole tensor (torch.log, .long(), .clamp), then torch.where(n < max_exact, n, "
        "large) to choose: no Python loop over offsets or rows, and no math.log on single numbers."
    ),
)

T5_LEARNED_BIAS = SpeedCheck(
    name="t5_learned_bias",
    correctness="check_t5_learned_bias",
    reference=t5_learned_bias,
    step=_t5_learned_bias64,
    chain=t5_learned_bias_chain,
    atol=_learned_bias_atol,
    chained=N_("table moved by the previous bias"),
    budget=budgets.t5_learned_bias_budget,
    inputs=N_("the bias (H, Tq, Tk)"),
    advice=N_(
        "Build the (Tq, Tk) offsets k_positions[None, :] - q_positions[:, None] in one expression, call your "
        "t5_bucket once on all of them, look every bucket up at once (weight[buckets] -> (Tq, Tk, H)) and permute to "
        "(H, Tq, Tk): no Python loop over query-key pairs, queries or heads. (A slow t5_bucket slows this too.)"
    ),
)


@speed_check("posref.grading.speed.relative:t5_bucket")
@enforce_rules
def check_t5_bucket_speed(
    fn: Callable[..., torch.Tensor], *, device=None, reference=None, checked=False
) -> float:
    """``fn(relative_position, bidirectional=..., num_buckets=32, max_distance=120)`` within the device's budget of
    a vectorised ``t5_bucket`` (``budgets.t5_bucket_budget``). Returns the ratio."""
    return T5_BUCKET.check(fn, device=device, reference=reference, checked=checked)


@speed_check("posref.grading.speed.relative:t5_learned_bias")
@enforce_rules
def check_t5_learned_bias_speed(
    fn: Callable[..., torch.Tensor], *, device=None, reference=None, checked=False
) -> float:
    """``fn(weight, q_positions, k_positions, bidirectional=..., max_distance=120)`` within the device's budget of
    a vectorised ``t5_learned_bias`` (``budgets.t5_learned_bias_budget``); the student's function calls their own
    ``t5_bucket``, which is timed with it. Returns the ratio."""
    return T5_LEARNED_BIAS.check(fn, device=device, reference=reference, checked=checked)


__all__ = ["check_alibi_bias_speed", "check_t5_bucket_speed", "check_t5_learned_bias_speed"]
