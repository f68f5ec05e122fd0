"""apply_rope's speed check (notebook 04): a ``SpeedCheck`` declaration, as every speed check is."""

from __future__ import annotations

from collections.abc import Callable

import torch

from posref.grading.cases import Draw
from posref.grading.report import Case
from posref.grading.rope_cases import EPS, other_layout, rope_case, rope_mistakes
from posref.grading.rules import enforce_rules
from posref.grading.speed import budgets
from posref.grading.speed.check import SpeedCheck
from posref.grading.speed.timing import Chain, Round
from posref.i18n import N_
from posref.rope import apply_rope


def apply_rope_speed_chain(draw: Draw, shape: tuple[int, ...]) -> Chain:
    """A timed round's inputs, drawn fresh: ``x`` float32 of ``shape`` ``(..., T, D)``, every dim rotated (cos/sin
    ``(T, D/2)`` for positions starting anywhere up to 4096), the layouts alternating from a random first one.

    Each call rotates a mix of the previous call's output and the round's ``x``, by the round's angles turned at
    each position by the size of the previous output there (``links.rope_turn``): what a call rotates by is known
    only once the previous call is done, so no run of calls is one rotation known ahead (with the angles kept, a
    round was one linear map, and a dense answer raised it to the n-th power by squaring)."""
    lead, t, d = tuple(shape[:-2]), shape[-2], shape[-1]
    case = rope_case(draw, lead, t, d, d // 2, "half", torch.float32, max_start=4096)
    x, cos, sin = case.args
    first = draw.choice(("half", "interleaved"))
    return Chain((x, cos, sin), (), ({"layout": first}, {"layout": other_layout(first)}), link="rope_turn",
                 out_shape=tuple(x.shape), out_dtype=torch.float32)  # fmt: skip


def _rope_atol(timed: Round) -> float:
    """How far a timed round's last output may be from the reference's (``posref.apply_rope`` in float32, run along
    the same chain): a float32 rounding of a few units per call, of at most the largest position vector's norm,
    for the student's chain and the reference's each (2 units per call each: a rotation keeps a difference's size,
    so roundings add up call after call; the reference in float32, because the float64 chain cost 30x the timing
    itself). A float32 rotation stayed within 1.3e-7 per call of the float64 replay: this is 40 times that."""
    scale = float(torch.linalg.vector_norm(timed.chain.start[0].double(), dim=-1).max())
    return 4 * EPS[torch.float32] * timed.calls * scale


def _apply_rope_speed_cases(draw: Draw, shape: tuple[int, ...]) -> list[Case]:
    """Both layouts, each on a fresh round's inputs: what ``fn`` must get right before it is timed."""
    cases = []
    for layout in ("half", "interleaved"):
        chain = apply_rope_speed_chain(draw, shape)
        cases.append(Case(chain.start, {"layout": layout}))
    return cases


APPLY_ROPE_SPEED = SpeedCheck(
    name="apply_rope",
    correctness="check_apply_rope",
    reference=apply_rope,
    step=apply_rope,  # float32: the float64 chain cost 30x the timing itself (see _rope_atol)
    chain=apply_rope_speed_chain,
    atol=_rope_atol,
    chained=N_("layouts alternating, angles turned by the previous output"),
    budget=budgets.apply_rope_budget,
    inputs="x",
    advice=N_(
        "Rotate all positions at once with elementwise products (x * cos + rotate(x) * sin): no Python loop "
        "over positions and no (D, D) rotation matrix per position."
    ),
    cases=_apply_rope_speed_cases,
    mistakes=rope_mistakes(),
    match_dtype=True,
)
"""The speed check of ``apply_rope`` (``posref.grading.speed.check``); ``APPLY_ROPE_SPEED.measure`` is what
``python -m posref.bench --suite budgets`` runs."""


@enforce_rules
def check_apply_rope_speed(
    fn: Callable[..., torch.Tensor],
    *,
    device=None,
    reference: Callable[..., torch.Tensor] | None = None,
    checked: bool = False,
) -> float:
    """``fn(x, cos, sin, layout="half")`` must be within the device's budget of ``posref.apply_rope``'s time.

    The budget and the shape of ``x`` (float32) come from ``budgets.apply_rope_budget`` for the device the check
    runs on (CUDA's provisional until measured). Timed with ``speed_ratio`` (one thread, interleaved rounds of
    chained calls on fresh inputs, median, CUDA synchronised around each timed block). The outputs are checked first, on other inputs, and the timed outputs after the clock has stopped: a
    fast wrong answer is not fast. ``reference`` replaces ``posref.apply_rope`` as the baseline (the grader passes
    one that runs under the same conditions as ``fn``). Returns the ratio.
    """
    return APPLY_ROPE_SPEED.check(fn, device=device, reference=reference, checked=checked)
