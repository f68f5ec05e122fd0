"""Checkers for notebook 05 (rope_analysis): score against distance, per-pair norms, p-RoPE (arXiv 2410.06205)."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from posref.grading.cases import Draw
from posref.grading.report import Case, first_difference
from posref.grading.rules import enforce_rules
from posref.i18n import _
from posref.rope_analysis import p_rope_inv_freq, pair_norms, rope_scores_by_distance
from posref.scaling import default_inv_freq


def _score_reference(q, k, inv_freq, distances):
    return rope_scores_by_distance(q, k, inv_freq, distances, layout="half")


@enforce_rules
def check_score_by_distance(fn: Callable[..., torch.Tensor], *, hidden: bool = False, device=None) -> None:
    """``fn(q, k, inv_freq, distances)`` -> ``(..., L)`` equals ``posref.rope_scores_by_distance`` (half layout).

    Distances reach 10^5 in hidden cases, so the angles must be formed in float64 as the exercise asks. Hidden
    cases: distances up to 20, 1000 and 10^5 (each reaching its span), float32 and float64, no leading dim, one and
    two, each at least once in 24.
    """
    draw = Draw(hidden=hidden, device=device)
    cases = []
    axes = dict(span=(20, 1000, 100_000), dtype=(torch.float32, torch.float64), leads=(0, 1, 2))
    visible = [dict(span=None, dtype=torch.float32, leads=i) for i in range(2)]
    for i, c in enumerate(draw.cover(24, **axes) if hidden else visible):
        d = draw.even(2, 64) if hidden else (4, 8)[i]
        lead = tuple(draw.int(1, 4) if hidden else 2 for _ in range(c["leads"]))
        dtype = c["dtype"]
        q, k = draw.randn(*lead, d, dtype=dtype), draw.randn(*lead, d, dtype=dtype)
        base = draw.choice((10000.0, 500000.0, 10.0)) if hidden else 10000.0
        inv_freq = default_inv_freq(d, base, device=draw.device)
        if hidden:  # one distance at the span's end and others within it, of both signs
            span = c["span"]
            spread = [draw.int(-span, span) for _ in range(draw.int(0, 39))]
            distances = torch.tensor([draw.choice((-span, span)), *spread], device=draw.device)
        else:
            distances = torch.arange(0, 6, device=draw.device)
        # scores are sums of d terms of size |q||k|/d: scale the tolerance with the sum of |q_j k_j|
        atol = 1e-5 * float((q.abs() * k.abs()).sum(-1).max()) + 1e-6
        cases.append(
            Case((q, k, inv_freq, distances), atol=atol, rtol=1e-5, label=_("head dim {d}").format(d=d))
        )

    def interleaved(q, k, inv_freq, distances):
        return rope_scores_by_distance(q, k, inv_freq, distances, layout="interleaved")

    def mirrored(q, k, inv_freq, distances):
        return rope_scores_by_distance(q, k, inv_freq, -distances)

    def cos_only(q, k, inv_freq, distances):
        r = inv_freq.shape[0]
        a = q[..., :r] * k[..., :r] + q[..., r:] * k[..., r:]
        return (
            (a.double()[..., None, :] * (distances.double()[:, None] * inv_freq.double()).cos())
            .sum(-1)
            .to(q.dtype)
        )

    def float32_angles(q, k, inv_freq, distances):
        r = inv_freq.shape[0]
        qa, qb, ka, kb = q[..., :r], q[..., r:], k[..., :r], k[..., r:]
        angles = distances.float()[:, None] * inv_freq.float()
        a, b = (qa * ka + qb * kb)[..., None, :], (qb * ka - qa * kb)[..., None, :]
        return (a * angles.cos() - b * angles.sin()).sum(-1).to(q.dtype)

    mistakes = {
        _(
            "wrong pairing layout: this exercise uses the half layout, pair i = dims (i, i + D/2)"
        ): interleaved,
        _(
            "the sign of the sine term is flipped: s(d) = sum A_i cos(d w_i) - B_i sin(d w_i) with the query d positions "
            "AFTER the key (B_i = q_b k_a - q_a k_b)"
        ): mirrored,
        _("the sine term is missing: the cross products B_i = q_b k_a - q_a k_b matter too"): cos_only,
        _(
            "the angles d * w_i were formed in float32: at distances of 10^4 and more they are off by whole radians; "
            "convert distances and inv_freq to float64 first"
        ): float32_angles,
    }
    first_difference(
        "score_by_distance",
        fn,
        _score_reference,
        cases,
        mistakes=mistakes,
        seed=draw.quoted_seed,
    )


def _pair_norms_reference(x, layout="half"):
    return pair_norms(x, layout=layout)


@enforce_rules
def check_pair_norms(fn: Callable[..., torch.Tensor], *, hidden: bool = False, device=None) -> None:
    """``fn(x, layout="half")`` -> ``(..., D/2)`` equals ``posref.pair_norms`` in both layouts. Hidden cases: both
    layouts, float32 and float64, no leading dim, one and three, each at least once in 20."""
    draw = Draw(hidden=hidden, device=device)
    cases = []
    axes = dict(layout=("half", "interleaved"), dtype=(torch.float32, torch.float64), leads=(0, 1, 3))
    visible = [dict(layout="half", dtype=torch.float32), dict(layout="interleaved", dtype=torch.float64)]
    for i, c in enumerate(draw.cover(20, **axes) if hidden else visible):
        layout, dtype = c["layout"], c["dtype"]
        d = draw.even(2, 64) if hidden else 6
        lead = tuple(draw.int(1, 4) for _ in range(c["leads"])) if hidden else ((2,), (2, 3))[i]
        cases.append(Case((draw.randn(*lead, d, dtype=dtype),), {"layout": layout}, label=layout))

    def other_layout(x, layout="half"):
        return pair_norms(x, layout="interleaved" if layout == "half" else "half")

    def squared(x, layout="half"):
        return pair_norms(x, layout=layout) ** 2

    mistakes = {
        _(
            "wrong pairing layout: 'half' pairs dims (i, i + D/2), 'interleaved' pairs dims (2i, 2i + 1)"
        ): other_layout,
        _("these are squared lengths a^2 + b^2: take the square root"): squared,
    }
    first_difference("pair_norms", fn, _pair_norms_reference, cases, mistakes=mistakes, seed=draw.quoted_seed)


@enforce_rules
def check_p_rope(fn: Callable[..., torch.Tensor], *, hidden: bool = False, device=None) -> None:
    """``fn(inv_freq, p)`` -> ``(r,)`` equals ``posref.p_rope_inv_freq``: the ``floor(p r)`` highest kept, rest 0.

    Hidden cases: frequencies sorted and shuffled (rank by value, not index), p = 0, 1, a quarter and any other
    fraction (``p r`` most often not an integer: floor, not round), each at least once in 24. Where ``p r`` in floating point falls just under a whole number (0.58 * 50 =
    28.999999999999996), keeping that whole number (the reference) or one fewer (``math.floor(p * r)``) both pass.
    """
    draw = Draw(hidden=hidden, device=device)
    cases = []
    # visible: one shuffled case, too; 0.3 * 8 = 2.4: floor, not round or ceil
    visible = [dict(order=o, p=p) for o, p in zip("sssrs", (0.25, 0.5, 1.0, 0.3, 0.58), strict=True)]
    fractions = (0.0, 1.0, "quarter", "any")  # any: p r not a whole number, most often
    # hidden: first a shuffled case that tells ranking by index from keeping the lowest (the highest frequency
    # last, the lowest just before it, and at most r - 2 kept: by index zeroes the lowest, which keeping the lowest
    # keeps), then the classes
    classes = (
        [dict(order="last", p="some"), *draw.cover(23, order=("s", "r"), p=fractions)] if hidden else visible
    )
    for i, c in enumerate(classes):
        d = draw.even(6 if c["order"] == "last" else 4, 128) if hidden else (16, 16, 16, 16, 100)[i]
        inv_freq = default_inv_freq(
            d, draw.choice((10000.0, 500000.0)) if hidden else 10000.0, device=draw.device
        )
        r = inv_freq.shape[0]
        if c["order"] != "s":  # shuffled: rank by value
            inv_freq = inv_freq[draw.permutation(r)]
        if c["order"] == "last":
            low, high = inv_freq.min(), inv_freq.max()
            inv_freq = torch.cat((inv_freq[(inv_freq != low) & (inv_freq != high)], low[None], high[None]))
        fraction = {"quarter": draw.choice((0.25, 0.5, 0.75)), "any": round(draw.uniform(0.01, 0.99), 3)}
        p = round((draw.int(1, r - 2) + 0.5) / r, 6) if c["p"] == "some" else fraction.get(c["p"], c["p"])
        cases.append(
            Case((inv_freq, p), label=_("{n} frequencies, p = {p}").format(n=inv_freq.shape[0], p=p))
        )

    def keep_lowest(inv_freq, p):
        out = inv_freq.clone()
        out[torch.argsort(inv_freq, descending=False)[math.floor(p * inv_freq.shape[0]) :]] = 0
        return out

    def zero_highest(inv_freq, p):
        out = inv_freq.clone()
        out[torch.argsort(inv_freq, descending=True)[: math.floor(p * inv_freq.shape[0])]] = 0
        return out

    def by_index(inv_freq, p):
        out = inv_freq.clone()
        out[math.floor(p * inv_freq.shape[0]) :] = 0
        return out

    def rounded(inv_freq, p):
        r = inv_freq.shape[0]
        return p_rope_inv_freq(inv_freq, min(1.0, round(p * r) / r))

    def ceiled(inv_freq, p):
        r = inv_freq.shape[0]
        return p_rope_inv_freq(inv_freq, min(1.0, math.ceil(p * r) / r))

    mistakes = {
        _(
            "the lowest frequencies were kept: p-RoPE keeps the HIGHEST (fastest) fraction p and zeroes the slowest"
        ): (keep_lowest),
        _(
            "the highest fraction p was zeroed: p is the fraction KEPT (the fastest, highest frequencies); the "
            "slowest 1 - p are the ones set to 0"
        ): zero_highest,
        _("entries were chosen by index: rank them by value (inv_freq may not be sorted)"): by_index,
        _("keep floor(p * r) frequencies, not round(p * r)"): rounded,
        _("keep floor(p * r) frequencies (round down), not ceil(p * r)"): ceiled,
    }

    # floor of p * r as computed in floating point: one fewer where it falls short
    def float_floor(inv_freq, p):
        kept = math.floor(p * inv_freq.shape[0])
        return [p_rope_inv_freq(inv_freq, kept / inv_freq.shape[0])]

    first_difference(
        "p_rope",
        fn,
        p_rope_inv_freq,
        cases,
        mistakes=mistakes,
        accept=float_floor,
        seed=draw.quoted_seed,
    )
