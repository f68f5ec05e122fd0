"""Speed checks of the lab notebooks (06 length, 08 nope): ``per_position_loss``, the RoPE and ALiBi handlers seen
through one attention layer, and ``causal_mean``; built as ``posref.grading.speed.check.SpeedCheck`` describes.

How a notebook cell calls them (the function is the one the notebook's correctness check gets)::

    from posref.grading.speed.lab import check_per_position_loss_speed
    check_per_position_loss_speed(per_position_loss)            # -> the ratio; CheckFailed if over budget

    check_rope_handler_attention_speed(rope_handler_attention)   # fn(x, w_qkv, n_heads, start, n_new, base)
    check_alibi_handler_attention_speed(alibi_handler_attention) # fn(x, w_qkv, n_heads, start, n_new)
    check_causal_mean_speed(causal_mean)                         # 08

each with ``device=`` as the other checkers take it (the budget is that device type's). In the score of record
the reference runs in a child of its own (``reference_path``: the functions below with the student's signature).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from posref.grading.cases import Draw
from posref.grading.rules import enforce_rules
from posref.grading.speed import budgets
from posref.grading.speed.check import SpeedCheck, speed_check
from posref.grading.speed.timing import Chain, Round
from posref.i18n import N_
from posref.lab.positions import ALiBiPositions, RoPEPositions, handler_attention
from posref.lab.tasks import IGNORE_INDEX

_EPS32 = 2.0**-23


def _magnitude(timed: Round) -> float:
    return float(timed.chain.start.abs().max())


# --------------------------------------------------------------------------------------------------- references


def per_position_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """06's ``per_position_loss`` vectorised: mean cross-entropy (nats) per position over the scored targets."""
    ce = F.cross_entropy(logits.transpose(1, 2), targets, reduction="none", ignore_index=IGNORE_INDEX)
    return ce.sum(0) / (targets != IGNORE_INDEX).sum(0)


def _per_position_loss64(logits, targets):
    return per_position_loss(logits.double(), targets)


def rope_handler_attention(x, w_qkv, n_heads, start, n_new, base):
    """06's ``rope_handler_attention`` with posref's ``RoPEPositions``."""
    handler = RoPEPositions(x.shape[-1] // n_heads, base=base).to(x.device)
    return handler_attention(handler, x, w_qkv, n_heads, start=start, n_new=n_new)


def alibi_handler_attention(x, w_qkv, n_heads, start, n_new):
    """06's ``alibi_handler_attention`` with posref's ``ALiBiPositions``."""
    return handler_attention(
        ALiBiPositions(n_heads).to(x.device), x, w_qkv, n_heads, start=start, n_new=n_new
    )


def _in_float64(reference):
    def run(x, w_qkv, *args, **kwargs):
        return reference(x.double(), w_qkv.double(), *args, **kwargs)

    return run


def causal_mean(v: torch.Tensor) -> torch.Tensor:
    """08's ``causal_mean`` vectorised: row ``t`` is the mean of rows ``0..t``."""
    counts = torch.arange(1, v.shape[-2] + 1, device=v.device, dtype=v.dtype)
    return v.cumsum(dim=-2) / counts[:, None]


def _causal_mean64(v):
    return causal_mean(v.double())


# --------------------------------------------------------------------------------------------------- rounds


def per_position_loss_chain(draw: Draw, shape: tuple[int, ...]) -> Chain:
    """Logits ``(B, T, V)`` float32 and targets ``(B, T)`` with about a fifth ignored (never all of a position);
    each call's logits are the round's, each position's scaled by the previous call's losses there
    (``links.losses_to_logits``)."""
    b, t, v = shape
    logits = draw.randn(b, t, v, dtype=torch.float32)
    targets = torch.randint(0, v, (b, t), generator=draw.tensor_generator).to(draw.device)
    ignored = torch.rand(b, t, generator=draw.tensor_generator).to(draw.device) < 0.2
    ignored[0] = False
    targets = targets.masked_fill(ignored, IGNORE_INDEX)
    return Chain(logits, (targets,), link="losses_to_logits", out_shape=(t,), out_dtype=torch.float32)


def _attention_chain(draw: Draw, shape: tuple[int, ...], *, base: bool) -> Chain:
    """Tokens ``(B, T, C)`` float32 with ``shape = (B, H, T, D)``, weights ``(3C, C)``, positions from a random
    offset, every token a query; each call's tokens are the round's plus the previous call's heads, squashed
    (``links.heads_to_tokens``)."""
    b, h, t, d = shape
    c = h * d
    x, w_qkv = (
        draw.randn(b, t, c, dtype=torch.float32),
        draw.randn(3 * c, c, scale=c**-0.5, dtype=torch.float32),
    )
    kwargs = {"base": float(draw.choice((50.0, 10000.0)))} if base else {}
    return Chain(x, (w_qkv, h, draw.int(0, 200), t), (kwargs,), link="heads_to_tokens", out_shape=(b, h, t, d),
                 out_dtype=torch.float32)  # fmt: skip


def causal_mean_chain(draw: Draw, shape: tuple[int, ...]) -> Chain:
    """``v`` float32 of ``shape``, clipped to [-5, 5]; each call averages the round's ``v`` scaled by the call's
    fresh factor minus the square of the previous output over 64 (``links.square_fold``: repeated averages alone
    would make every row row 0, and averages of sums would make a round one linear map)."""
    return Chain(draw.randn(*shape, dtype=torch.float32).clamp_(-5.0, 5.0), link="square_fold")


def _loss_atol(timed: Round) -> float:
    """A thousand float32 roundings of the largest logit: each loss is a smooth function of them, and the link
    shrinks a difference in the losses (``tests/grading/test_links.py``), so roundings do not pile up along a round
    (a float32 loss stayed within 1e-6 of the float64 replay over 1000 calls: this is 500 times that)."""
    return 1024 * _EPS32 * max(_magnitude(timed), 1.0)


def _attention_atol(timed: Round) -> float:
    """4096 float32 roundings of the largest token: the heads are weighted means of the values, and the link squashes
    them (``tanh``), so roundings do not pile up along a round (a float32 layer stayed within 7e-6 of the float64
    replay over 300 calls: this is 300 times that)."""
    return 4096 * _EPS32 * max(_magnitude(timed), 1.0)


def _mean_atol(timed: Round) -> float:
    """Every input stays within 12.4 (``links.square_fold``); a float32 causal mean of ``T`` rows is rounded by at
    most ``T`` units of that (a running sum), and the link shrinks a difference to 0.39 of itself per call, so the
    roundings of a whole round add up to less than twice one call's: twice that again for the student's chain and
    the reference's, and twice for safety."""
    return 8 * timed.chain.start.shape[-2] * _EPS32 * 12.4


# --------------------------------------------------------------------------------------------------- checks


PER_POSITION_LOSS = SpeedCheck(
    name="per_position_loss",
    correctness="check_per_position_loss",
    reference=per_position_loss,
    step=_per_position_loss64,
    chain=per_position_loss_chain,
    atol=_loss_atol,
    chained=N_("logits rescaled per position by the previous losses"),
    budget=budgets.per_position_loss_budget,
    inputs="logits",
    advice=N_(
        "Take log_softmax over the vocabulary for every (batch, position) at once, pick the targets with "
        "gather, and sum over the batch per position with the ignored targets masked: no Python loop over positions or "
        "sequences."
    ),
)

ROPE_HANDLER = SpeedCheck(
    name="rope_handler_attention",
    correctness="check_rope_handler",
    reference=rope_handler_attention,
    step=_in_float64(rope_handler_attention),
    chain=lambda draw, shape: _attention_chain(draw, shape, base=True),
    atol=_attention_atol,
    chained=N_("tokens plus the previous heads"),
    budget=budgets.handler_budget,
    inputs="q, k (B, H, T, D)",
    advice=N_(
        "Rotate every position of q and k at once (your vectorised apply_rope, cos/sin for all positions in "
        "one go): no Python loop over positions or heads."
    ),
)

ALIBI_HANDLER = SpeedCheck(
    name="alibi_handler_attention",
    correctness="check_alibi_handler",
    reference=alibi_handler_attention,
    step=_in_float64(alibi_handler_attention),
    chain=lambda draw, shape: _attention_chain(draw, shape, base=False),
    atol=_attention_atol,
    chained=N_("tokens plus the previous heads"),
    budget=budgets.handler_budget,
    inputs="q, k (B, H, T, D)",
    advice=N_(
        "Build the whole (H, Tq, Tk) bias in one expression (the |q - k| distances by broadcasting, times the "
        "slopes): no Python loop over query-key pairs, queries or heads."
    ),
)

CAUSAL_MEAN = SpeedCheck(
    name="causal_mean",
    correctness="check_causal_mean",
    reference=causal_mean,
    step=_causal_mean64,
    chain=causal_mean_chain,
    atol=_mean_atol,
    chained=N_("each the mean of the round's v, scaled, minus the previous output squared over 64"),
    budget=budgets.causal_mean_budget,
    inputs="v",
    advice=N_(
        "A running sum along the positions (cumsum) divided by the counts 1..T: no Python loop over positions "
        "and no (T, T) averaging matrix."
    ),
)


@speed_check("posref.grading.speed.lab:per_position_loss")
@enforce_rules
def check_per_position_loss_speed(
    fn: Callable[..., torch.Tensor], *, device=None, reference=None, checked=False
) -> float:
    """``fn(logits, targets)`` within the device's budget of a vectorised ``per_position_loss``
    (``budgets.per_position_loss_budget``). Returns the ratio."""
    return PER_POSITION_LOSS.check(fn, device=device, reference=reference, checked=checked)


@speed_check("posref.grading.speed.lab:rope_handler_attention")
@enforce_rules
def check_rope_handler_attention_speed(
    fn: Callable[..., torch.Tensor], *, device=None, reference=None, checked=False
) -> float:
    """``fn(x, w_qkv, n_heads, start, n_new, base)`` (one attention layer through the student's RoPE handler)
    within the device's budget of the same layer through posref's ``RoPEPositions``. Returns the ratio."""
    return ROPE_HANDLER.check(fn, device=device, reference=reference, checked=checked)


@speed_check("posref.grading.speed.lab:alibi_handler_attention")
@enforce_rules
def check_alibi_handler_attention_speed(
    fn: Callable[..., torch.Tensor], *, device=None, reference=None, checked=False
) -> float:
    """``fn(x, w_qkv, n_heads, start, n_new)`` (one attention layer through the student's ALiBi handler) within
    the device's budget of the same layer through posref's ``ALiBiPositions``. Returns the ratio."""
    return ALIBI_HANDLER.check(fn, device=device, reference=reference, checked=checked)


@speed_check("posref.grading.speed.lab:causal_mean")
@enforce_rules
def check_causal_mean_speed(
    fn: Callable[[torch.Tensor], torch.Tensor], *, device=None, reference=None, checked=False
) -> float:
    """``fn(v)`` within the device's budget of a vectorised ``causal_mean`` (cumsum over positions, divided by
    the counts). Returns the ratio."""
    return CAUSAL_MEAN.check(fn, device=device, reference=reference, checked=checked)


__all__ = [
    "check_alibi_handler_attention_speed",
    "check_causal_mean_speed",
    "check_per_position_loss_speed",
    "check_rope_handler_attention_speed",
]
