"""Checkers for notebook 04 (rope): cos/sin of the angles, the rotation in both layouts, scores, speed."""

from __future__ import annotations

from collections.abc import Callable

import torch

from posref.grading import budgets
from posref.grading.cases import Draw
from posref.grading.report import Case, first_difference
from posref.grading.rules import enforce_rules
from posref.grading.speed import SpeedCheck
from posref.grading.timing import Chain, Round
from posref.rope import apply_rope, rope_cos_sin
from posref.scaling import default_inv_freq

_EPS = {torch.float32: 2.0**-23, torch.float16: 2.0**-10, torch.bfloat16: 2.0**-7}


def _draw_cos_sin(draw: Draw, x_shape: tuple[int, ...], r: int, *, per_sequence: bool, max_start: int):
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


def _other_layout(layout: str) -> str:
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


def _rope_mistakes() -> dict[str, Callable[..., torch.Tensor]]:
    return {
        "wrong pairing layout: 'half' pairs dim i with dim i + r (r = cos.shape[-1]); 'interleaved' pairs dims "
        "2i and 2i + 1": lambda x, c, s, layout="half": apply_rope(x, c, s, layout=_other_layout(layout)),
        "sin and cos are swapped": lambda x, c, s, layout="half": apply_rope(x, s, c, layout=layout),
        "the rotation goes the wrong way: x_a' = x_a cos - x_b sin and x_b' = x_b cos + x_a sin": (
            lambda x, c, s, layout="half": apply_rope(x, c, -s, layout=layout)
        ),
        "partial rotary: the 'half' layout pairs dim i with dim i + r where r = cos.shape[-1] (the number of "
        "rotated pairs), not i + head_dim/2; dims from 2r on pass through unchanged": _half_over_full_width,
        "the interleaved layout gives both dims of pair i the angle i: repeat_interleave cos/sin (c0, c0, c1, c1, "
        "...), do not tile them (c0, c1, ..., c0, c1, ...)": _interleaved_with_tiled_angles,
        "partial rotary: the dims after the first 2r (r = cos.shape[-1]) must be passed through unchanged": (
            lambda x, c, s, layout="half": torch.cat(
                (
                    apply_rope(x, c, s, layout=layout)[..., : 2 * c.shape[-1]],
                    torch.zeros_like(x[..., 2 * c.shape[-1] :]),
                ),
                -1,
            )
        ),
    }


def _rope_case(draw: Draw, lead, t, d, r, layout, dtype, *, per_sequence=False, max_start=0) -> Case:
    x = draw.randn(*lead, t, d, dtype=dtype)
    cos, sin = _draw_cos_sin(draw, x.shape, r, per_sequence=per_sequence, max_start=max_start)
    # a few units in the last place of the largest input, for any order of operations in any precision
    atol = 4 * _EPS[dtype] * float(x.abs().max()) + 1e-6
    return Case((x, cos, sin), {"layout": layout}, atol=atol, rtol=2 * _EPS[dtype])


@enforce_rules
def check_apply_rope(fn: Callable[..., torch.Tensor], *, hidden: bool = False, device=None) -> None:
    """``fn(x, cos, sin, layout="half")`` rotates ``x (..., T, D)`` like ``posref.apply_rope``.

    Both layouts, partial rotary (``2 * cos.shape[-1] < D``: the rest passes through), float32, float16 and
    bfloat16 inputs (the output keeps ``x.dtype``), positions far from 0 (a KV-cache offset).
    """
    draw = Draw(hidden=hidden, device=device)
    if not hidden:
        cases = [
            _rope_case(draw, (), 3, 4, 2, "half", torch.float32),
            _rope_case(draw, (), 3, 4, 2, "interleaved", torch.float32),
            _rope_case(draw, (2,), 5, 8, 2, "half", torch.float32),
            _rope_case(draw, (1, 2), 4, 6, 2, "interleaved", torch.bfloat16, max_start=100),
        ]
    else:
        # partial rotary in both layouts every time (random draws alone miss it now and then), then 30 random
        cases = [
            _rope_case(draw, (2, 3), 7, 16, 5, "half", torch.float32, max_start=3000),
            _rope_case(draw, (2, 3), 7, 16, 5, "interleaved", torch.float16, max_start=100000),
        ]
        for _ in range(30):
            per_sequence = draw.int(0, 3) == 0
            lead = (
                (draw.int(1, 3), draw.choice((1, 3, 5, 7, 8)))
                if per_sequence
                else tuple(draw.int(1, 5) for _ in range(draw.int(0, 2)))
            )
            d = draw.even(2, 96)
            r = draw.choice((d // 2, d // 2, draw.int(1, d // 2)))
            dtype = draw.choice((torch.float32, torch.float32, torch.float16, torch.bfloat16))
            cases.append(
                _rope_case(
                    draw,
                    lead,
                    draw.int(1, 40),
                    d,
                    r,
                    draw.choice(("half", "interleaved")),
                    dtype,
                    per_sequence=per_sequence,
                    max_start=draw.choice((0, 3000, 100000)),
                )
            )
    first_difference("apply_rope", fn, apply_rope, cases, mistakes=_rope_mistakes(), seed=draw.quoted_seed)


@enforce_rules
def check_rope_cos_sin(
    fn: Callable[..., tuple[torch.Tensor, torch.Tensor]], *, hidden: bool = False, device=None
) -> None:
    """``fn(positions, inv_freq)`` -> ``(cos, sin)``, each ``positions.shape + (r,)``, like ``posref.rope_cos_sin``.

    Angles must be formed in float32 (or better) even when ``inv_freq`` is float16: float16 angles are wrong by
    whole radians at long positions. The tolerance allows float32 rounding of the largest angle.
    """
    draw = Draw(hidden=hidden, device=device)
    cases = []
    specs = [((6,), 8, torch.float32, 0), ((2, 5), 4, torch.float32, 50), ((4,), 6, torch.float16, 2000)]
    if hidden:
        specs = []
        for _ in range(20):
            shape = (draw.int(1, 64),) if draw.int(0, 1) else (draw.int(1, 4), draw.int(1, 32))
            specs.append(
                (
                    shape,
                    draw.even(2, 128),
                    draw.choice((torch.float32, torch.float16, torch.bfloat16)),
                    draw.choice((0, 5000, 200000)),
                )
            )
    for shape, dim, dtype, max_start in specs:
        positions = (
            torch.stack([draw.positions(shape[-1], max_start=max_start) for _ in range(shape[0])])
            if len(shape) == 2
            else draw.positions(shape[0], max_start=max_start)
        )
        inv_freq = default_inv_freq(
            dim, draw.choice((10000.0, 1e6)) if hidden else 10000.0, device=draw.device
        ).to(dtype)
        max_angle = float(positions.max()) * float(inv_freq.float().max())
        cases.append(Case((positions, inv_freq), atol=1e-6 + 3e-7 * max_angle, rtol=0.0))
    mistakes = {
        "return (cos, sin) in that order": lambda p, f: rope_cos_sin(p, f)[::-1],
        "the angles were computed in float16/bfloat16 (integer positions times a half-precision inv_freq give a "
        "half-precision product): form positions.float() * inv_freq.float()": lambda p, f: tuple(
            t.float() for t in _low_precision_cos_sin(p, f)
        ),
        "return cos and sin in float32 (as posref.rope_cos_sin does), not in inv_freq's dtype": lambda p, f: (
            tuple(t.to(f.dtype) for t in rope_cos_sin(p, f))
        ),
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

    The scores of a rotated pair depend only on the distance between positions (the relative property).
    """
    draw = Draw(hidden=hidden, device=device)
    cases = []
    for i in range(draw.n(2, 16)):
        lead = (draw.int(1, 3),) if hidden else ((), (2,))[i]  # leading dims are visible too
        d = draw.even(2, 32) if hidden else 4
        layout = draw.choice(("half", "interleaved")) if hidden else ("half", "interleaved")[i]
        q, k = draw.randn(*lead, draw.int(1, 20) if hidden else 3, d), None
        k = draw.randn(*q.shape)
        cos, sin = _draw_cos_sin(draw, q.shape, d // 2, per_sequence=False, max_start=1000 if hidden else 0)
        cases.append(Case((q, k, cos, sin), {"layout": layout}, atol=1e-4 * d, rtol=1e-5))

    def scores(q, k, cos, sin, layout="half", *, rotate_q=True, rotate_k=True):
        rq = apply_rope(q, cos, sin, layout=layout) if rotate_q else q
        rk = apply_rope(k, cos, sin, layout=layout) if rotate_k else k
        return rq @ rk.transpose(-1, -2)

    mistakes = {
        "only the keys were rotated: rotate the queries too (both by their own positions)": (
            lambda *a, **kw: scores(*a, **kw, rotate_q=False)
        ),
        "only the queries were rotated: rotate the keys too (both by their own positions)": (
            lambda *a, **kw: scores(*a, **kw, rotate_k=False)
        ),
        "return the raw dot products q_m . k_n, without dividing by sqrt(head_dim)": (
            lambda q, *a, **kw: scores(q, *a, **kw) / q.shape[-1] ** 0.5
        ),
    }
    first_difference("rope_scores", fn, scores, cases, mistakes=mistakes, seed=draw.quoted_seed)


def apply_rope_speed_chain(draw: Draw, shape: tuple[int, ...]) -> Chain:
    """A timed round's inputs, drawn fresh: ``x`` float32 of ``shape`` ``(..., T, D)``, every dim rotated (cos/sin
    ``(T, D/2)`` for positions starting anywhere up to 4096), the layouts alternating from a random first one.

    Each call rotates the previous call's output. Alternating layouts leave no shortcut: two rotations in the same
    pairing would add up to one rotation by the sum of the angles (a chain of them is one call with ``n`` times
    the angle), while a 'half' and an 'interleaved' rotation compose to a general orthogonal map per position, which
    costs more to form than the calls it would replace."""
    lead, t, d = tuple(shape[:-2]), shape[-2], shape[-1]
    case = _rope_case(draw, lead, t, d, d // 2, "half", torch.float32, max_start=4096)
    x, cos, sin = case.args
    first = draw.choice(("half", "interleaved"))
    return Chain(x, (cos, sin), ({"layout": first}, {"layout": _other_layout(first)}))


def _rope_atol(timed: Round) -> float:
    """How far a timed round's last output may be from the reference's (``posref.apply_rope`` in float32, run along
    the same chain): a float32 rounding of a few units per call, of at most the largest position vector's norm
    (a rotation keeps the size of an error, so a wrong result anywhere in a round shows in its last output), for
    the student's chain and the reference's each (4 units per call each, 8 in all: both within 4 of the exact
    rotation; the reference in float32, because the float64 chain cost 30x the timing itself)."""
    scale = float(torch.linalg.vector_norm(timed.chain.start.double(), dim=-1).max())
    return 8 * _EPS[torch.float32] * timed.calls * scale


def _apply_rope_speed_cases(draw: Draw, shape: tuple[int, ...]) -> list[Case]:
    """Both layouts, each on a fresh round's inputs: what ``fn`` must get right before it is timed."""
    cases = []
    for layout in ("half", "interleaved"):
        chain = apply_rope_speed_chain(draw, shape)
        cases.append(Case((chain.start, *chain.args), {"layout": layout}))
    return cases


APPLY_ROPE_SPEED = SpeedCheck(
    name="apply_rope",
    reference=apply_rope,
    step=apply_rope,  # float32: the float64 chain cost 30x the timing itself (see _rope_atol)
    chain=apply_rope_speed_chain,
    atol=_rope_atol,
    chained="layouts alternating",
    budget=budgets.apply_rope_budget,
    inputs="x",
    advice="Rotate all positions at once with elementwise products (x * cos + rotate(x) * sin): no Python loop "
    "over positions and no (D, D) rotation matrix per position.",
    cases=_apply_rope_speed_cases,
    mistakes=_rope_mistakes(),
    match_dtype=True,
)
"""The speed check of ``apply_rope`` (``posref.grading.speed``); ``APPLY_ROPE_SPEED.measure`` is what
``python -m posref.bench --suite budgets`` runs."""


@enforce_rules
def check_apply_rope_speed(
    fn: Callable[..., torch.Tensor], *, device=None, reference: Callable[..., torch.Tensor] | None = None
) -> float:
    """``fn(x, cos, sin, layout="half")`` must be within the device's budget of ``posref.apply_rope``'s time.

    The budget and the shape of ``x`` (float32) come from ``budgets.apply_rope_budget`` for the device the check
    runs on (CPU: 27x on ``(1, 8, 256, 64)``; CUDA: provisional until measured). Timed with ``speed_ratio`` (one
    thread, interleaved rounds of chained calls on fresh inputs, median, CUDA synchronised around each timed
    block). The outputs are checked first, on other inputs, and the timed outputs after the clock has stopped: a
    fast wrong answer is not fast. ``reference`` replaces ``posref.apply_rope`` as the baseline (the grader passes
    one that runs under the same conditions as ``fn``). Returns the ratio.
    """
    return APPLY_ROPE_SPEED.check(fn, device=device, reference=reference)
