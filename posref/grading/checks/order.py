"""Checkers for notebook 01 (order): self-attention and its permutation equivariance."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from posref.attention import equivariance_error, scaled_dot_product_attention
from posref.grading.cases import Draw, Probe
from posref.grading.report import Case, first_difference, raised_a
from posref.grading.rules import enforce_rules
from posref.i18n import N_, _


@enforce_rules
def check_attention(fn: Callable[..., torch.Tensor], *, hidden: bool = False, device=None) -> None:
    """``fn(q, k, v, causal=False)`` -> ``(..., H, Tq, Dv)`` equals ``posref.scaled_dot_product_attention``.

    Causal cases have ``Tq == Tk`` (self-attention); non-causal ones may have ``Tq != Tk``. Hidden cases: causal
    and not, no leading dims, one and two, one head and several, non-causal with fewer and with more queries than
    keys, each at least once in 30.
    """
    draw = Draw(hidden=hidden, device=device)
    if hidden:
        classes = draw.cover(
            30, causal=(False, True), leads=(0, 1, 2), heads=(1, 5), queries=("fewer", "more")
        )
    else:
        classes = [
            dict(causal=i % 2 == 1, leads=min(i, 1), heads=(2, 3, 4)[i], queries="fewer") for i in range(3)
        ]
    cases = []
    for c in classes:
        lead = tuple(draw.int(1, 3) for _ in range(c["leads"]))
        h = 1 if c["heads"] == 1 else draw.int(2, c["heads"])
        limit = 40 if hidden else 9
        tq, d, dv = draw.int(1, limit - 1), draw.int(2, 16), draw.int(1, 12)
        if c["causal"]:
            tk = tq
        elif c["queries"] == "fewer":
            tk = draw.int(tq + 1, limit)
        else:
            tq, tk = tq + 1, draw.int(1, tq)
        dtype = torch.float32  # the reference's softmax runs in float32
        q, k, v = (
            draw.randn(*lead, h, tq, d, dtype=dtype),
            draw.randn(*lead, h, tk, d, dtype=dtype),
            draw.randn(*lead, h, tk, dv, dtype=dtype),
        )
        cases.append(Case((q, k, v), {"causal": c["causal"]}))
    mistakes = {
        _(
            "scores are not divided by sqrt(head_dim): use softmax(q k^T / sqrt(d)) v"
        ): lambda q, k, v, causal: scaled_dot_product_attention(q, k, v, causal=causal, scale=1.0),
        _(
            "softmax over the wrong axis: normalise over the keys (dim=-1), so each query's weights sum to 1"
        ): lambda q, k, v, causal: torch.softmax(_masked_scores(q, k, causal), dim=-2) @ v,
        _(
            "the mask hides the past instead of the future: query i may see keys j <= i (torch.tril)"
        ): lambda q, k, v, causal: torch.softmax(_masked_scores(q, k, causal, upper=True), dim=-1) @ v,
    }
    first_difference("attention", fn, _reference_attention, cases, mistakes=mistakes, seed=draw.quoted_seed)


def _reference_attention(q, k, v, causal=False):
    return scaled_dot_product_attention(q, k, v, causal=causal)


def _masked_scores(q, k, causal, *, upper=False):
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        tq, tk = scores.shape[-2:]
        allowed = torch.ones(tq, tk, dtype=torch.bool, device=q.device)
        allowed = allowed.triu() if upper else allowed.tril()
        scores = scores.masked_fill(~allowed, float("-inf"))
    return scores


_BATCH_HINT = N_(
    "x may carry a batch dimension, (B, T, d): permute the positions, the next-to-last dim, with x[..., perm, :] "
    "(and f(x)[..., perm, :]), not x[perm], which indexes the first dim"
)


@enforce_rules
def check_equivariance_error(fn: Callable[..., float], *, hidden: bool = False, device=None) -> None:
    """``fn(f, x, perm)`` -> ``max |f(P x) - P f(x)|`` as a float, equal to ``posref.equivariance_error``.

    ``x`` is ``(T, d)`` or ``(B, T, d)``; ``perm`` a permutation of the ``T`` positions (``P x = x[..., perm, :]``).
    Hidden cases: every kind of probe (equivariant or not) both unbatched and batched, then 16 drawn at random.
    """
    draw = Draw(hidden=hidden, device=device)
    if hidden:
        classes = [(kind, batched) for kind in Probe.KINDS for batched in (False, True)]
        classes += [(draw.choice(Probe.KINDS), draw.choice((False, True))) for _ in range(16)]
    else:  # one batched case, not equivariant, so that indexing the wrong dim cannot pass
        classes = [(kind, kind == "causal") for kind in Probe.KINDS]
    cases = []
    for kind, batched in classes:
        t, d = draw.int(2, 12 if hidden else 6), draw.even(2, 8)
        lead = ((draw.int(1, 3) if hidden else 2),) if batched else ()
        dtype = torch.float64
        probe = Probe(kind, draw.randn(d, d, dtype=dtype, scale=d**-0.5))
        cases.append(
            Case((probe, draw.randn(*lead, t, d, dtype=dtype), draw.permutation(t)), atol=1e-6, rtol=1e-6)
        )
    mistakes = {
        _(
            "compare f(P x) with P f(x): you compared f(P x) with f(x) (the output was not permuted)"
        ): lambda f, x, perm: (f(x[..., perm, :]) - f(x)).abs().max().item(),
        _("return the largest absolute difference (max), not the mean"): lambda f, x, perm: (
            (f(x[..., perm, :]) - f(x)[..., perm, :]).abs().mean().item()
        ),
        _(
            "permute both sides with the same perm: P x means x[..., perm, :], not its inverse"
        ): lambda f, x, perm: (f(x[..., perm, :]) - f(x)[..., perm.argsort(), :]).abs().max().item(),
        _(_BATCH_HINT): lambda f, x, perm: (f(x[perm]) - f(x)[perm]).abs().max().item(),
    }

    def batch_indexed(case: Case, err: BaseException) -> str | None:
        """An IndexError on a batched case: most often x[perm], which indexes the batch dim."""
        return _(_BATCH_HINT) if case.args[1].ndim == 3 and raised_a(err, IndexError) else None

    first_difference(
        "equivariance_error",
        fn,
        _reference_error,
        cases,
        mistakes=mistakes,
        seed=draw.quoted_seed,
        error_hint=batch_indexed,
    )


def _reference_error(f, x, perm):
    return float(equivariance_error(f, x, perm))
