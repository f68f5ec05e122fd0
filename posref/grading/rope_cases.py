"""RoPE's cases and its known mistakes, shared by notebook 04's checkers (``checks.rope``) and apply_rope's speed
check (``speed.rope``): how a case's ``x``, ``cos`` and ``sin`` are drawn, and the wrong variants whose hints
``first_difference`` names."""

from __future__ import annotations

from collections.abc import Callable

import torch

from posref.grading.cases import Draw
from posref.grading.report import Case
from posref.i18n import _
from posref.rope import apply_rope, rope_cos_sin
from posref.scaling import default_inv_freq

EPS = {torch.float32: 2.0**-23, torch.float16: 2.0**-10, torch.bfloat16: 2.0**-7}


def draw_cos_sin(draw: Draw, x_shape: tuple[int, ...], r: int, *, per_sequence: bool, max_start: int):
    """cos/sin for a random run of positions: ``(T, r)``, or ``(B, 1, T, r)`` with one row of positions per
    sequence when ``per_sequence`` (then ``x`` is ``(B, H, T, D)``)."""
    t = x_shape[-2]
    inv_freq = default_inv_freq(
        2 * r, draw.choice((10000.0, 500000.0)) if draw.hidden else 10000.0, device=draw.device
    )
    if per_sequence:
        positions = torch.stack([draw.positions(t, max_start=max_start) for _ in range(x_shape[0])])
        cos, sin = rope_cos_sin(positions, inv_freq)
        return cos[:, None], sin[:, None]
    return rope_cos_sin(draw.positions(t, max_start=max_start), inv_freq)


def other_layout(layout: str) -> str:
    return "interleaved" if layout == "half" else "half"


def _half_over_full_width(x, cos, sin, layout="half"):
    """The 'half' rotation pairing (i, i + D/2) instead of (i, i + r): wrong under partial rotary."""
    r, half = cos.shape[-1], x.shape[-1] // 2
    xc = x.float()
    out = xc.clone()
    x1, x2 = xc[..., :r], xc[..., half : half + r]
    out[..., :r] = x1 * cos - x2 * sin
    out[..., half : half + r] = x2 * cos + x1 * sin
    return out.to(x.dtype)


def _interleaved_with_tiled_angles(x, cos, sin, layout="interleaved"):
    """The interleaved rotation with cos/sin tiled as [c0..c_{r-1}, c0..c_{r-1}] instead of [c0, c0, c1, c1, ...]."""
    r = cos.shape[-1]
    xc = x.float()
    out = xc.clone()
    pairs = xc[..., : 2 * r].unflatten(-1, (r, 2))
    c, s = torch.cat((cos, cos), -1).unflatten(-1, (r, 2)), torch.cat((sin, sin), -1).unflatten(-1, (r, 2))
    a, b = pairs[..., 0], pairs[..., 1]
    out[..., : 2 * r] = torch.stack(
        (a * c[..., 0] - b * s[..., 0], b * c[..., 1] + a * s[..., 1]), -1
    ).flatten(-2)
    return out.to(x.dtype)


def rope_mistakes() -> dict[str, Callable[..., torch.Tensor]]:
    return {
        _(
            "wrong pairing layout: 'half' pairs dim i with dim i + r (r = cos.shape[-1]); 'interleaved' pairs dims "
            "2i and 2i + 1"
        ): lambda x, c, s, layout="half": apply_rope(x, c, s, layout=other_layout(layout)),
        _("sin and cos are swapped"): lambda x, c, s, layout="half": apply_rope(x, s, c, layout=layout),
        _("the rotation goes the wrong way: x_a' = x_a cos - x_b sin and x_b' = x_b cos + x_a sin"): (
            lambda x, c, s, layout="half": apply_rope(x, c, -s, layout=layout)
        ),
        _(
            "partial rotary: the 'half' layout pairs dim i with dim i + r where r = cos.shape[-1] (the number of "
            "rotated pairs), not i + head_dim/2; dims from 2r on pass through unchanged"
        ): _half_over_full_width,
        _(
            "the interleaved layout gives both dims of pair i the angle i: repeat_interleave cos/sin (c0, c0, c1, c1, "
            "...), do not tile them (c0, c1, ..., c0, c1, ...)"
        ): _interleaved_with_tiled_angles,
        _(
            "partial rotary: the dims after the first 2r (r = cos.shape[-1]) must be passed through unchanged"
        ): (
            lambda x, c, s, layout="half": torch.cat(
                (
                    apply_rope(x, c, s, layout=layout)[..., : 2 * c.shape[-1]],
                    torch.zeros_like(x[..., 2 * c.shape[-1] :]),
                ),
                -1,
            )
        ),
    }


def rope_case(draw: Draw, lead, t, d, r, layout, dtype, *, per_sequence=False, max_start=0) -> Case:
    x = draw.randn(*lead, t, d, dtype=dtype)
    cos, sin = draw_cos_sin(draw, x.shape, r, per_sequence=per_sequence, max_start=max_start)
    # a few units in the last place of the largest input, for any order of operations in any precision
    atol = 4 * EPS[dtype] * float(x.abs().max()) + 1e-6
    return Case((x, cos, sin), {"layout": layout}, atol=atol, rtol=2 * EPS[dtype])
