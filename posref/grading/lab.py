"""Checkers for the lab notebooks 06 and 08 (07's frequency rules are checked by ``posref.grading.scaling``).

* 06 length: ``per_position_loss(logits, targets)`` against ``posref.lab.evaluate.per_position_loss``;
* 08 nope: ``causal_mean(v)``, what a causal head computes when its scores are all equal (the mechanism that
  lets NoPE count positions, arXiv 2305.19466 Theorem 1), against ``posref.scaled_dot_product_attention``.

The references are posref's; each recognised mistake is a computed variant.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from posref.attention import scaled_dot_product_attention
from posref.grading.cases import Draw
from posref.grading.report import Case, first_difference
from posref.grading.rules import enforce_rules
from posref.lab.evaluate import per_position_loss
from posref.lab.tasks import IGNORE_INDEX

# ---------------------------------------------------------------------------------------------------------------
# 06: loss at each position


class _Replay(nn.Module):
    """A 'model' that returns fixed logits, so that ``posref.lab.evaluate`` can score them as it scores a model."""

    def __init__(self, logits: torch.Tensor) -> None:
        super().__init__()
        self.logits = logits
        self.anchor = nn.Parameter(torch.zeros((), device=logits.device))  # the device evaluate reads

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.logits


def _per_position_reference(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    curve = per_position_loss(_Replay(logits), [(targets, targets)])
    return curve.to(logits.device)


def _ce(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """(B, T) cross-entropy in nats; ignored targets give 0."""
    return F.cross_entropy(
        logits.float().transpose(1, 2), targets, reduction="none", ignore_index=IGNORE_INDEX
    )


def _draw_lm_case(draw: Draw, b: int, t: int, v: int, ignore_share: float) -> Case:
    logits = draw.randn(b, t, v, scale=draw.choice((1.0, 3.0)))
    targets = torch.randint(0, v, (b, t), generator=draw.tensor_generator).to(draw.device)
    ignored = torch.rand(b, t, generator=draw.tensor_generator).to(draw.device) < ignore_share
    ignored[0] = False  # every position keeps at least one scored target (an all-ignored position is nan)
    targets = targets.masked_fill(ignored, IGNORE_INDEX)
    return Case((logits, targets), label=f"{int(ignored.sum())} targets ignored", atol=1e-5, rtol=1e-5)


@enforce_rules
def check_per_position_loss(fn: Callable[..., torch.Tensor], *, hidden: bool = False, device=None) -> None:
    """``fn(logits (B, T, V), targets (B, T))`` -> ``(T,)``: mean cross-entropy (nats) at each position over the
    batch, targets equal to ``IGNORE_INDEX`` (-100) neither scored nor counted; like ``posref.lab.evaluate``."""
    draw = Draw(hidden=hidden, device=device)
    if hidden:
        cases = [
            _draw_lm_case(
                draw, draw.int(2, 8), draw.int(1, 70), draw.int(2, 100), draw.choice((0.0, 0.2, 0.5))
            )
            for _ in range(20)
        ]
    else:
        cases = [_draw_lm_case(draw, 3, 5, 4, 0.0), _draw_lm_case(draw, 4, 6, 7, 0.3)]

    def ignored_as_zero(logits, targets):
        return _ce(logits, targets).sum(0) / targets.shape[0]

    def ignored_scored(logits, targets):
        return _ce(logits, targets.clamp(min=0)).mean(0)

    def no_log_softmax(logits, targets):
        picked = logits.float().gather(-1, targets.clamp(min=0)[..., None])[..., 0]
        scored = (targets != IGNORE_INDEX).float()
        return (-picked * scored).sum(0) / scored.sum(0)

    def bits(logits, targets):
        return _per_position_reference(logits, targets) / math.log(2)

    mistakes = {
        "ignored targets (-100) were counted in the mean as a loss of 0: divide each position's sum by the "
        "number of targets scored there, not by the batch size": ignored_as_zero,
        "targets equal to -100 must not be scored at all (clamping them to 0 scores them as token 0)": ignored_scored,
        "cross-entropy is -log softmax(logits)[target], not -logits[target]: take log_softmax first": no_log_softmax,
        "report the loss in nats (natural log), not bits": bits,
    }
    first_difference(
        "per_position_loss",
        fn,
        _per_position_reference,
        cases,
        mistakes=mistakes,
        match_dtype=False,
        seed=draw.quoted_seed,
    )


# ---------------------------------------------------------------------------------------------------------------
# 08: what a causal head computes when it cannot tell keys apart


def _causal_uniform(v: torch.Tensor) -> torch.Tensor:
    zeros = torch.zeros(*v.shape[:-1], 1, dtype=v.dtype, device=v.device)  # equal scores for every key
    return scaled_dot_product_attention(zeros, zeros, v, causal=True)


@enforce_rules
def check_causal_mean(
    fn: Callable[[torch.Tensor], torch.Tensor], *, hidden: bool = False, device=None
) -> None:
    """``fn(v (..., T, D))`` -> ``(..., T, D)``: causal attention with all scores equal, i.e. row ``t`` is the
    mean of ``v[..., :t+1, :]``; like ``posref.scaled_dot_product_attention`` with zero queries and keys."""
    draw = Draw(hidden=hidden, device=device)
    cases = []
    for i in range(draw.n(2, 16)):
        lead = tuple(draw.int(1, 3) for _ in range(draw.int(0, 2))) if hidden else ((), (2,))[i]
        # no T = 2: there dividing row t by t gives the running sum, and the hint could name the wrong mistake
        t, d = (draw.choice((1, *range(3, 81))), draw.int(1, 16)) if hidden else ((4, 3), (5, 2))[i]
        # the visible cases include float64, so that 'in v's dtype' is checked where the student sees it
        dtype = (
            draw.choice((torch.float32, torch.float32, torch.float64))
            if hidden
            else (torch.float32, torch.float64)[i]
        )
        cases.append(Case((draw.randn(*lead, t, d, dtype=dtype),), atol=1e-5, rtol=1e-5))

    def counts(v, offset):
        n = torch.arange(1, v.shape[-2] + 1, device=v.device, dtype=v.dtype) + offset
        return n[:, None]

    mistakes = {
        "the mask is missing: position t may only average tokens 0..t, not the whole sequence": lambda v: (
            v.mean(-2, keepdim=True).expand_as(v)
        ),
        "a running SUM, not a mean: divide row t by the t + 1 tokens it sees": lambda v: v.cumsum(-2),
        "row t averages t + 1 tokens (0..t): divide by t + 1, not t": lambda v: (
            v.cumsum(-2) / counts(v, -1).clamp(min=1)
        ),
    }
    first_difference("causal_mean", fn, _causal_uniform, cases, mistakes=mistakes, seed=draw.quoted_seed)


__all__ = ["check_causal_mean", "check_per_position_loss"]
