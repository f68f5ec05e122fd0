"""Reference scaled dot-product attention and tools to test permutation equivariance.

Attention without positions is permutation-equivariant: permuting the input rows permutes the output rows
the same way (Vaswani et al. 2017, arXiv 1706.03762). A causal mask breaks that symmetry, which is why a
decoder without any position signal (NoPE, arXiv 2305.19466) can still recover order.

Shapes: ``B`` batch (any number of leading dims), ``H`` heads, ``Tq``/``Tk`` query/key length, ``D`` head dim.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from posref._checks import broadcasts_to, check_float, check_same_device, check_tensor
from posref.i18n import _


def causal_mask(q_len: int, k_len: int, *, device: torch.device | str | None = None) -> torch.Tensor:
    """Boolean ``(Tq, Tk)`` mask, True where query i may attend to key j.

    Queries are aligned with the *last* ``Tq`` keys (as when decoding with a KV cache): query ``i`` sits at
    key position ``Tk - Tq + i`` and sees keys ``j <= Tk - Tq + i``.
    """
    if q_len > k_len:
        raise ValueError(
            _("a causal mask needs q_len <= k_len, got q_len={q_len}, k_len={k_len}").format(
                q_len=q_len, k_len=k_len
            )
        )
    q_pos = torch.arange(k_len - q_len, k_len, device=device)
    k_pos = torch.arange(k_len, device=device)
    return k_pos[None, :] <= q_pos[:, None]


def attention_scores(
    q: torch.Tensor,
    k: torch.Tensor,
    *,
    causal: bool = False,
    bias: torch.Tensor | None = None,
    scale: float | None = None,
) -> torch.Tensor:
    """Pre-softmax scores ``scale * q k^T + bias``, masked to ``-inf`` above the causal diagonal.

    Args:
        q: ``(..., H, Tq, D)``; k: ``(..., H, Tk, D)``.
        bias: additive bias broadcastable to ``(..., H, Tq, Tk)``, typically ``(H, Tq, Tk)`` (ALiBi, T5).
        scale: defaults to ``1 / sqrt(D)``.
    Returns: ``(..., H, Tq, Tk)``.
    """
    check_tensor("q", q)
    check_tensor("k", k)
    check_float("q", q)
    check_float("k", k)
    if q.dtype != k.dtype:
        raise TypeError(
            _("q and k must have the same dtype, got {q_dtype} and {k_dtype}").format(
                q_dtype=q.dtype, k_dtype=k.dtype
            )
        )
    check_same_device(q=q, k=k)
    if q.ndim < 2 or k.ndim < 2 or q.shape[-1] != k.shape[-1]:
        raise ValueError(
            _(
                "q and k must be (..., seq, head_dim) with the same head_dim, got {q_shape} and {k_shape}"
            ).format(q_shape=tuple(q.shape), k_shape=tuple(k.shape))
        )
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = torch.matmul(q, k.transpose(-1, -2)) * scale
    if bias is not None:
        check_tensor("bias", bias)
        check_same_device(q=q, bias=bias)
        if bias.shape[-2:] != scores.shape[-2:]:
            raise ValueError(
                _("bias must end in (q_len, k_len) = {scores_end}, got shape {bias_shape}").format(
                    scores_end=tuple(scores.shape[-2:]), bias_shape=tuple(bias.shape)
                )
            )
        if bias.ndim >= 3 and bias.shape[-3] not in (1, scores.shape[-3]):
            raise ValueError(
                _("bias has {bias_heads} heads but q has {q_heads}").format(
                    bias_heads=bias.shape[-3], q_heads=scores.shape[-3]
                )
            )
        # a (4, H, Tq, Tk) bias would turn one sequence into four
        if not broadcasts_to(bias.shape, scores.shape):
            raise ValueError(
                _("bias of shape {bias_shape} does not broadcast to the scores' shape {scores_shape}").format(
                    bias_shape=tuple(bias.shape), scores_shape=tuple(scores.shape)
                )
            )
        scores = scores + bias.to(scores.dtype)
    if causal:
        mask = causal_mask(scores.shape[-2], scores.shape[-1], device=scores.device)
        scores = scores.masked_fill(~mask, float("-inf"))
    return scores


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool = False,
    bias: torch.Tensor | None = None,
    scale: float | None = None,
) -> torch.Tensor:
    """``softmax(scale * q k^T + bias) v``, the readable reference (Vaswani et al. 2017).

    Args:
        q: ``(..., H, Tq, D)``; k: ``(..., H, Tk, D)``; v: ``(..., H, Tk, Dv)``.
        causal: mask keys after each query (queries aligned to the last keys, see ``causal_mask``).
        bias: additive ``(H, Tq, Tk)`` (or broadcastable) bias added before the softmax.
    Returns: ``(..., H, Tq, Dv)``, in v's dtype (the softmax runs in float32 for float16/bfloat16 inputs).
    """
    check_tensor("v", v)
    check_same_device(q=q, v=v)
    if v.shape[-2] != k.shape[-2]:
        raise ValueError(
            _("k and v must have the same length, got {k_len} and {v_len}").format(
                k_len=k.shape[-2], v_len=v.shape[-2]
            )
        )
    scores = attention_scores(q, k, causal=causal, bias=bias, scale=scale)
    low_precision = scores.dtype in (torch.float16, torch.bfloat16)
    weights = torch.softmax(scores.float() if low_precision else scores, dim=-1).to(v.dtype)
    return torch.matmul(weights, v)


def permute_sequence(x: torch.Tensor, perm: torch.Tensor, *, dim: int = -2) -> torch.Tensor:
    """Reorder ``x`` along its sequence dimension: ``out[..., i, :] = x[..., perm[i], :]`` for ``dim=-2``."""
    check_tensor("x", x)
    n = x.shape[dim]
    perm = torch.as_tensor(perm, device=x.device)
    if (
        perm.ndim != 1
        or perm.numel() != n
        or not torch.equal(perm.sort().values, torch.arange(n, device=x.device))
    ):
        raise ValueError(
            _("perm must be a permutation of range({n}) (the length of dim {dim}), got {perm}").format(
                n=n, dim=dim, perm=perm.tolist()
            )
        )
    return x.index_select(dim, perm)


def equivariance_error(
    fn: Callable[[torch.Tensor], torch.Tensor],
    x: torch.Tensor,
    perm: torch.Tensor,
    *,
    dim: int = -2,
) -> float:
    """Largest ``|fn(P x) - P fn(x)|``: zero (up to rounding) when ``fn`` is permutation-equivariant."""
    permuted_then_fn = fn(permute_sequence(x, perm, dim=dim))
    fn_then_permuted = permute_sequence(fn(x), perm, dim=dim)
    return (permuted_then_fn - fn_then_permuted).abs().max().item()


def is_permutation_equivariant(
    fn: Callable[[torch.Tensor], torch.Tensor],
    x: torch.Tensor,
    perm: torch.Tensor | None = None,
    *,
    dim: int = -2,
    atol: float = 1e-5,
    generator: torch.Generator | None = None,
) -> bool:
    """True if ``fn(P x) == P fn(x)`` within ``atol`` for ``perm`` (a random non-identity one if omitted)."""
    n = x.shape[dim]
    if perm is None:
        if n < 2:
            raise ValueError(_("need at least two positions to permute"))
        perm = torch.randperm(n, generator=generator)
        while torch.equal(perm, torch.arange(n)):
            perm = torch.randperm(n, generator=generator)
    return equivariance_error(fn, x, perm, dim=dim) <= atol
