"""Checkers for notebook 04 (rope): cos/sin of the angles, the rotation in both layouts, scores by position.
apply_rope's speed check is ``posref.grading.speed.rope``."""

from __future__ import annotations

from collections.abc import Callable

import torch

from posref.grading.cases import Draw
from posref.grading.report import Case, first_difference
from posref.grading.rope_cases import draw_cos_sin, rope_case, rope_mistakes
from posref.grading.rules import enforce_rules
from posref.i18n import _
from posref.rope import apply_rope, rope_cos_sin
from posref.scaling import default_inv_freq


@enforce_rules
def check_apply_rope(fn: Callable[..., torch.Tensor], *, hidden: bool = False, device=None) -> None:
    """``fn(x, cos, sin, layout="half")`` rotates ``x (..., T, D)`` like ``posref.apply_rope``.

    Both layouts, partial rotary (``2 * cos.shape[-1] < D``: the rest passes through), float32, float16 and
    bfloat16 inputs (the output keeps ``x.dtype``), positions far from 0 (a KV-cache offset). Hidden cases: partial
    rotary in each layout, then every layout, dtype, full and partial rotary, cos/sin shared and per sequence,
    positions from 0, 3000 and 100000, each at least once in 30.
    """
    draw = Draw(hidden=hidden, device=device)
    if not hidden:
        cases = [
            rope_case(draw, (), 3, 4, 2, "half", torch.float32),
            rope_case(draw, (), 3, 4, 2, "interleaved", torch.float32),
            rope_case(draw, (2,), 5, 8, 2, "half", torch.float32),
            rope_case(draw, (1, 2), 4, 6, 2, "interleaved", torch.bfloat16, max_start=100),
        ]
    else:
        # partial rotary in both layouts every time (random draws alone miss it now and then), then 30 random
        cases = [
            rope_case(draw, (2, 3), 7, 16, 5, "half", torch.float32, max_start=3000),
            rope_case(draw, (2, 3), 7, 16, 5, "interleaved", torch.float16, max_start=100000),
        ]
        axes = dict(
            layout=("half", "interleaved"),
            dtype=(torch.float32, torch.float16, torch.bfloat16),
            rotary=("full", "partial"),
            cos_sin=("shared", "per sequence"),
            start=(0, 3000, 100000),
        )
        for c in draw.cover(30, **axes):
            per_sequence = c["cos_sin"] == "per sequence"
            lead = (
                (draw.int(1, 3), draw.choice((1, 3, 5, 7, 8)))
                if per_sequence
                else tuple(draw.int(1, 5) for _ in range(draw.int(0, 2)))
            )
            d = draw.even(4, 96)
            r = d // 2 if c["rotary"] == "full" else draw.int(1, d // 2 - 1)
            t = draw.int(1, 40)
            case = rope_case(
                draw, lead, t, d, r, c["layout"], c["dtype"], per_sequence=per_sequence, max_start=c["start"]
            )
            cases.append(case)
    first_difference("apply_rope", fn, apply_rope, cases, mistakes=rope_mistakes(), seed=draw.quoted_seed)


@enforce_rules
def check_rope_cos_sin(
    fn: Callable[..., tuple[torch.Tensor, torch.Tensor]], *, hidden: bool = False, device=None
) -> None:
    """``fn(positions, inv_freq)`` -> ``(cos, sin)``, each ``positions.shape + (r,)``, like ``posref.rope_cos_sin``.

    Angles must be formed in float32 (or better) even when ``inv_freq`` is float16: float16 angles are wrong by
    whole radians at long positions. The tolerance allows float32 rounding of the largest angle. Hidden cases:
    float16 and bfloat16 frequencies at positions from 100000, then positions (T,) and (B, T), frequencies in
    float32, float16 and bfloat16, starts up to 0, 5000 and 200000, each at least once in 18.
    """
    draw = Draw(hidden=hidden, device=device)
    cases = []
    # (shape of positions, dim, dtype of inv_freq, lowest start, highest start)
    specs = [
        ((6,), 8, torch.float32, 0, 0),
        ((2, 5), 4, torch.float32, 0, 50),
        ((4,), 6, torch.float16, 0, 2000),
    ]
    if (
        hidden
    ):  # half-precision frequencies far out (where half-precision angles are off by radians), then classes
        specs = [
            ((draw.int(1, 64),), draw.even(2, 128), t, 100000, 200000)
            for t in (torch.float16, torch.bfloat16)
        ]
        axes = dict(
            shape=(1, 2), dtype=(torch.float32, torch.float16, torch.bfloat16), start=(0, 5000, 200000)
        )
        for c in draw.cover(18, **axes):
            shape = (draw.int(1, 64),) if c["shape"] == 1 else (draw.int(1, 4), draw.int(1, 32))
            specs.append((shape, draw.even(2, 128), c["dtype"], 0, c["start"]))
    for shape, dim, dtype, low, high in specs:
        positions = low + (
            torch.stack([draw.positions(shape[-1], max_start=high - low) for _ in range(shape[0])])
            if len(shape) == 2
            else draw.positions(shape[0], max_start=high - low)
        )
        inv_freq = default_inv_freq(
            dim, draw.choice((10000.0, 1e6)) if hidden else 10000.0, device=draw.device
        ).to(dtype)
        max_angle = float(positions.max()) * float(inv_freq.float().max())
        cases.append(Case((positions, inv_freq), atol=1e-6 + 3e-7 * max_angle, rtol=0.0))
    mistakes = {
        _("return (cos, sin) in that order"): lambda p, f: rope_cos_sin(p, f)[::-1],
        _(
            "the angles were computed in float16/bfloat16 (integer positions times a half-precision inv_freq give a "
            "half-precision product): form positions.float() * inv_freq.float()"
        ): lambda p, f: tuple(t.float() for t in _low_precision_cos_sin(p, f)),
        _(
            "return cos and sin in float32 (as posref.rope_cos_sin does), not in inv_freq's dtype"
        ): lambda p, f: tuple(t.to(f.dtype) for t in rope_cos_sin(p, f)),
    }
    first_difference(
        "rope_cos_sin",
        fn,
        rope_cos_sin,
        cases,
        mistakes=mistakes,
        match_dtype=False,
        seed=draw.quoted_seed,
    )


def _low_precision_cos_sin(positions, inv_freq):
    angles = positions[..., None] * inv_freq
    return angles.cos(), angles.sin()


@enforce_rules
def check_rope_scores(fn: Callable[..., torch.Tensor], *, hidden: bool = False, device=None) -> None:
    """``fn(q, k, cos, sin, layout="half")`` -> ``(R q) (R k)^T`` ``(..., T, T)``: rotate both, then dot products.

    The scores of a rotated pair depend only on the distance between positions (the relative property). Hidden
    cases: both layouts, no leading dim and one, positions from 0 and up to 1000, each at least once in 16.
    """
    draw = Draw(hidden=hidden, device=device)
    cases = []
    visible = [dict(layout="half", leads=0, start=0), dict(layout="interleaved", leads=1, start=0)]
    classes = (
        draw.cover(16, layout=("half", "interleaved"), leads=(0, 1), start=(0, 1000)) if hidden else visible
    )
    for c in classes:
        lead = tuple(
            draw.int(1, 3) if hidden else 2 for _ in range(c["leads"])
        )  # leading dims are visible too
        d = draw.even(2, 32) if hidden else 4
        layout = c["layout"]
        q = draw.randn(*lead, draw.int(1, 20) if hidden else 3, d)
        k = draw.randn(*q.shape)
        cos, sin = draw_cos_sin(draw, q.shape, d // 2, per_sequence=False, max_start=c["start"])
        cases.append(Case((q, k, cos, sin), {"layout": layout}, atol=1e-4 * d, rtol=1e-5))

    def scores(q, k, cos, sin, layout="half", *, rotate_q=True, rotate_k=True):
        rq = apply_rope(q, cos, sin, layout=layout) if rotate_q else q
        rk = apply_rope(k, cos, sin, layout=layout) if rotate_k else k
        return rq @ rk.transpose(-1, -2)

    mistakes = {
        _("only the keys were rotated: rotate the queries too (both by their own positions)"): (
            lambda *a, **kw: scores(*a, **kw, rotate_q=False)
        ),
        _("only the queries were rotated: rotate the keys too (both by their own positions)"): (
            lambda *a, **kw: scores(*a, **kw, rotate_k=False)
        ),
        _("return the raw dot products q_m . k_n, without dividing by sqrt(head_dim)"): (
            lambda q, *a, **kw: scores(q, *a, **kw) / q.shape[-1] ** 0.5
        ),
    }
    first_difference("rope_scores", fn, scores, cases, mistakes=mistakes, seed=draw.quoted_seed)
