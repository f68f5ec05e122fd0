"""The speed check of notebook 01's ``attention``: timed against ``posref.scaled_dot_product_attention`` as
``check_apply_rope_speed`` times ``apply_rope`` (``posref.grading.speed.timing``: chains of calls on fresh inputs, the
timed outputs verified afterwards), within ``budgets.attention_budget``; one ``posref.grading.speed.check.SpeedCheck``
declaration."""

from __future__ import annotations

from collections.abc import Callable

import torch

from posref.attention import scaled_dot_product_attention
from posref.grading.cases import Draw
from posref.grading.report import Case
from posref.grading.rules import enforce_rules
from posref.grading.speed import budgets
from posref.grading.speed.check import SpeedCheck
from posref.grading.speed.timing import Chain, Round
from posref.i18n import N_


def attention_speed_chain(draw: Draw, shape: tuple[int, ...]) -> Chain:
    """A timed round's inputs, drawn fresh: ``q``, ``k``, ``v`` float32 of ``shape`` ``(..., H, T, D)``, causal and
    not alternating from a random first one. Each call's queries lie between the previous call's output and the
    round's ``q``, by the call's fresh factor (``links.toward_start``: the output alone would settle on a fixed
    point)."""
    q, k, v = (draw.randn(*shape, dtype=torch.float32) for _ in range(3))
    first = bool(draw.choice((False, True)))
    return Chain(q, (k, v), ({"causal": first}, {"causal": not first}), link="toward_start")


def _attention_in_float64(q, k, v, causal=False):
    return scaled_dot_product_attention(q.double(), k.double(), v.double(), causal=causal)


def _attention_atol(timed: Round) -> float:
    """128 float32 roundings of the largest value: an output is a weighted mean of the rows of v, and the
    link takes a third or more of the next queries from the round's own (``links.toward_start``), so roundings do not
    pile up along a round (a float32 attention stayed within 2.1e-7 of the float64 replay over 1000 calls, with values
    up to 4: this is 300 times that, far below a wrong result's size)."""
    return 128 * 2.0**-23 * float(timed.chain.args[1].abs().max())


def _attention_speed_cases(draw: Draw, shape: tuple[int, ...]) -> list[Case]:
    """Causal and not, each on a fresh round's inputs: what ``fn`` must get right before it is timed."""
    cases = []
    for causal in (False, True):
        chain = attention_speed_chain(draw, shape)
        cases.append(Case((chain.start, *chain.args), {"causal": causal}))
    return cases


ATTENTION_SPEED = SpeedCheck(
    name="attention",
    correctness="check_attention",
    reference=scaled_dot_product_attention,
    step=_attention_in_float64,
    chain=attention_speed_chain,
    atol=_attention_atol,
    chained=N_("causal alternating, queries between the previous output and the round's"),
    budget=budgets.attention_budget,
    inputs="q, k, v",
    advice=N_(
        "Compute every query's scores at once (q @ k^T over the last two dims, every head and batch in one "
        "product), then one softmax and one product with v: no Python loop over queries, keys or heads."
    ),
    cases=_attention_speed_cases,
    match_dtype=True,
)
"""The speed check of 01's ``attention`` (``posref.grading.speed.check``); ``ATTENTION_SPEED.measure`` is what
``python -m posref.bench --suite budgets`` runs."""


@enforce_rules
def check_scaled_dot_product_attention_speed(
    fn: Callable[..., torch.Tensor],
    *,
    device=None,
    reference: Callable[..., torch.Tensor] | None = None,
    checked: bool = False,
) -> float:
    """``fn(q, k, v, causal=False)`` must be within the device's budget of
    ``posref.scaled_dot_product_attention``'s time (``budgets.attention_budget``: its ratio and the shape of q, k
    and v; CUDA provisional), timed as ``check_apply_rope_speed`` times ``apply_rope``. Returns the ratio."""
    return ATTENTION_SPEED.check(fn, device=device, reference=reference, checked=checked)
