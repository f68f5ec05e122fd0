"""Biased attention without a materialised ``(H, Tq, Tk)`` bias: FlexAttention ``score_mod``s for ALiBi and T5.

``torch.nn.attention.flex_attention`` calls a ``score_mod(score, b, h, q_idx, kv_idx)`` for every score inside
its fused kernel, so a relative bias costs a few arithmetic operations per score instead of an ``H x Tq x Tk``
tensor in memory. The result equals ``posref.scaled_dot_product_attention`` with the materialised bias
(``alibi_bias`` / ``T5RelativeBias``), which the tests check. On CUDA the kernel is compiled (Triton); elsewhere
FlexAttention runs its eager reference, which is correct but not fast.

Shapes: ``q`` ``(B, H, Tq, D)``; ``k``, ``v`` ``(B, H, Tk, D)``; queries sit at key positions ``Tk - Tq + i``.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable

import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

from posref._checks import check_nonnegative_int, check_positive_int, check_same_device, check_tensor
from posref.i18n import _
from posref.relative import T5RelativeBias, t5_relative_position_bucket

ScoreMod = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


def alibi_score_mod(slopes: torch.Tensor, *, q_offset: int = 0) -> ScoreMod:
    """ALiBi (arXiv 2108.12409): ``score - slope[h] * |(q_idx + q_offset) - kv_idx|``."""
    check_tensor("slopes", slopes)
    check_nonnegative_int("q_offset", q_offset, means=_("the key position of query 0"))

    def score_mod(score, b, h, q_idx, kv_idx):
        return score - slopes[h] * (q_idx + q_offset - kv_idx).abs()

    score_mod.q_offset = q_offset  # type: ignore[attr-defined]  # checked by flex_biased_attention
    return score_mod


def t5_score_mod(bias: T5RelativeBias, q_len: int, k_len: int) -> ScoreMod:
    """T5's bucketed bias (arXiv 1910.10683) as a lookup by relative position.

    The ``Tq + Tk - 1`` possible values of ``key - query`` are bucketed once into a ``(H, Tq + Tk - 1)`` table;
    the score_mod indexes it, so no ``(H, Tq, Tk)`` tensor is formed.
    """
    check_positive_int("q_len", q_len)
    check_positive_int("k_len", k_len)
    if q_len > k_len:
        raise ValueError(
            _(
                "t5_score_mod needs q_len <= k_len (queries sit at the last q_len key positions), got {q_len} > {k_len}"
            ).format(q_len=q_len, k_len=k_len)
        )
    device = bias.embedding.weight.device
    q_offset = k_len - q_len
    rel = torch.arange(-(k_len - 1), k_len, device=device)  # every key - query over the aligned positions
    buckets = t5_relative_position_bucket(
        rel, bidirectional=bias.bidirectional, num_buckets=bias.num_buckets, max_distance=bias.max_distance
    )
    table = bias.embedding(buckets).T.contiguous()  # (H, 2 Tk - 1)

    def score_mod(score, b, h, q_idx, kv_idx):
        return score + table[h, kv_idx - (q_idx + q_offset) + (k_len - 1)]

    # the table is only valid for these lengths: flex_biased_attention checks them against q and k
    score_mod.q_len, score_mod.k_len = q_len, k_len  # type: ignore[attr-defined]
    return score_mod


@functools.cache
def _causal_block_mask(q_len: int, k_len: int, device: str):
    offset = k_len - q_len

    def causal(b, h, q_idx, kv_idx):
        return kv_idx <= q_idx + offset

    return create_block_mask(causal, None, None, q_len, k_len, device=device)


@functools.cache
def _compiled_flex():
    return torch.compile(flex_attention, dynamic=False)


def flex_biased_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    score_mod: ScoreMod,
    *,
    causal: bool = True,
    scale: float | None = None,
) -> torch.Tensor:
    """``softmax(scale q k^T + bias) v`` with the bias given as a ``score_mod`` -> ``(B, H, Tq, Dv)``.

    A ``score_mod`` from ``t5_score_mod`` must have been built for these ``(Tq, Tk)``; under ``causal``, one from
    ``alibi_score_mod`` must put query 0 where the mask does (``q_offset = Tk - Tq``). Either mismatch is an error.
    """
    for name, t in (("q", q), ("k", k), ("v", v)):
        check_tensor(name, t)
        if t.ndim != 4:
            raise ValueError(
                _("{name} must be (B, H, T, D) for FlexAttention, got shape {t_shape}").format(
                    name=name, t_shape=tuple(t.shape)
                )
            )
    check_same_device(q=q, k=k, v=v)
    q_len, k_len = q.shape[-2], k.shape[-2]
    if q_len > k_len and causal:
        raise ValueError(
            _("causal attention needs q_len <= k_len, got {q_len} and {k_len}").format(
                q_len=q_len, k_len=k_len
            )
        )
    made_for = (getattr(score_mod, "q_len", q_len), getattr(score_mod, "k_len", k_len))
    if made_for != (q_len, k_len):
        raise ValueError(
            _(
                "score_mod was built for (q_len, k_len) = {made_for} but q and k have {lengths}: build it for these lengths (t5_score_mod(bias, q_len, k_len))"
            ).format(made_for=made_for, lengths=(q_len, k_len))
        )
    q_offset = getattr(score_mod, "q_offset", k_len - q_len)
    if causal and q_offset != k_len - q_len:
        raise ValueError(
            _(
                "score_mod puts query 0 at key position {q_offset}, but the causal mask puts it at k_len - q_len = {offset}: pass alibi_score_mod(slopes, q_offset={offset})"
            ).format(q_offset=q_offset, offset=k_len - q_len)
        )
    block_mask = _causal_block_mask(q_len, k_len, str(q.device)) if causal else None
    if q.is_cuda:
        return _compiled_flex()(q, k, v, score_mod=score_mod, block_mask=block_mask, scale=scale)
    with warnings.catch_warnings():  # the eager path warns that it is unfused; on CPU that is expected
        warnings.simplefilter("ignore", UserWarning)
        return flex_attention(q, k, v, score_mod=score_mod, block_mask=block_mask, scale=scale)
