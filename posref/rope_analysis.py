"""Tools to look inside RoPE: scores against distance, per-pair norms, and p-RoPE.

Barbero et al. 2024, "Round and Round We Go! What makes Rotary Positional Encodings useful?" (arXiv 2410.06205):
RoPE does not make attention decay with distance in general (the RoFormer bound, arXiv 2104.09864 section 3.4.3,
is an upper bound that decays for an all-ones pairing only); trained models use the fastest pairs for positional
patterns and the slowest ones as near-rotation-free semantic channels; p-RoPE keeps the fraction ``p`` of the
highest frequencies and removes the rest.

Shapes: ``...`` leading dims, ``D`` head dim, ``r = D/2`` pairs (or fewer with partial rotary), ``L`` distances.
Pairs follow ``posref.rope``'s layouts: ``"half"`` pairs ``(i, i + r)``, ``"interleaved"`` pairs ``(2i, 2i + 1)``.
"""

from __future__ import annotations

import math

import torch

from posref._checks import check_choice, check_float, check_integer_positions, check_same_device, check_tensor
from posref.i18n import _
from posref.rope import LAYOUTS


def split_pairs(x: torch.Tensor, r: int, *, layout: str = "half") -> tuple[torch.Tensor, torch.Tensor]:
    """The two coordinates ``(a, b)`` of the first ``r`` pairs of ``x`` ``(..., D)`` -> two ``(..., r)`` views."""
    check_choice("layout", layout, LAYOUTS)
    if 2 * r > x.shape[-1]:
        raise ValueError(
            _("{r} pairs need a last dim of at least {dims}, got {x_dim}").format(
                r=r, dims=2 * r, x_dim=x.shape[-1]
            )
        )
    if layout == "half":
        return x[..., :r], x[..., r : 2 * r]
    return x[..., 0 : 2 * r : 2], x[..., 1 : 2 * r : 2]


def pair_norms(x: torch.Tensor, *, layout: str = "half") -> torch.Tensor:
    """Length of each rotated pair, ``sqrt(a_i**2 + b_i**2)``: ``(..., D)`` -> ``(..., D/2)``.

    RoPE turns each pair but never changes its length, so these norms are the same before and after rotation;
    averaged over tokens they show how much of a head's query or key lives at each frequency (arXiv 2410.06205).
    """
    check_tensor("x", x)
    check_float("x", x)
    if x.ndim < 1 or x.shape[-1] % 2:
        raise ValueError(
            _("x must end in an even head dim, got shape {x_shape}").format(x_shape=tuple(x.shape))
        )
    a, b = split_pairs(x, x.shape[-1] // 2, layout=layout)
    return torch.hypot(a, b)


def rope_scores_by_distance(
    q: torch.Tensor, k: torch.Tensor, inv_freq: torch.Tensor, distances: torch.Tensor, *, layout: str = "half"
) -> torch.Tensor:
    """``<R_{n+d} q, R_n k>`` for each distance ``d`` (query ``d`` positions after the key) -> ``(..., L)``.

    Args:
        q, k: ``(..., D)`` a query and a key (broadcastable leading dims), float.
        inv_freq: ``(r,)`` the pair speeds; the first ``2r`` dims are rotated, the rest add an unrotated term.
        distances: ``(L,)`` integer offsets ``d`` (any sign).
    The score does not depend on ``n``. Pair ``i`` contributes ``A_i cos(d w_i) - B_i sin(d w_i)`` with
    ``A_i = q_a k_a + q_b k_b`` and ``B_i = q_b k_a - q_a k_b`` (the real part of ``z_q conj(z_k) e^{i d w_i}``).
    Computed in float64 and returned in the dtype of ``q``.
    """
    for name, t in (("q", q), ("k", k), ("inv_freq", inv_freq), ("distances", distances)):
        check_tensor(name, t)
    check_float("q", q)
    check_float("k", k)
    check_integer_positions("distances", distances)
    check_same_device(q=q, k=k, inv_freq=inv_freq, distances=distances)
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            _("q and k must have the same head dim, got {q_dim} and {k_dim}").format(
                q_dim=q.shape[-1], k_dim=k.shape[-1]
            )
        )
    if inv_freq.ndim != 1 or distances.ndim != 1:
        raise ValueError(
            _("inv_freq and distances must be 1-D, got shapes {inv_freq_shape} and {distances_shape}").format(
                inv_freq_shape=tuple(inv_freq.shape), distances_shape=tuple(distances.shape)
            )
        )
    r = inv_freq.shape[0]
    qd, kd = q.double(), k.double()
    qa, qb = split_pairs(qd, r, layout=layout)
    ka, kb = split_pairs(kd, r, layout=layout)
    a = (qa * ka + qb * kb)[..., None, :]  # (..., 1, r)
    b = (qb * ka - qa * kb)[..., None, :]
    angles = distances.double()[:, None] * inv_freq.double()  # (L, r)
    rotated = (a * angles.cos() - b * angles.sin()).sum(-1)  # (..., L)
    passed = (qd[..., 2 * r :] * kd[..., 2 * r :]).sum(-1, keepdim=True)  # unrotated dims: same at every d
    return (rotated + passed).to(q.dtype)


def p_rope_inv_freq(inv_freq: torch.Tensor, p: float) -> torch.Tensor:
    """p-RoPE (arXiv 2410.06205): keep the ``floor(p * r)`` highest frequencies, set the others to 0.

    A zero frequency means that pair is never rotated (a position-free channel). ``p = 1`` is RoPE, ``p = 0``
    is NoPE. Frequencies are ranked by value, so the input need not be sorted; the order is kept.
    Returns a new ``(r,)`` tensor like ``inv_freq``.
    """
    check_tensor("inv_freq", inv_freq)
    if inv_freq.ndim != 1:
        raise ValueError(
            _("inv_freq must be 1-D, got shape {inv_freq_shape}").format(inv_freq_shape=tuple(inv_freq.shape))
        )
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
        raise ValueError(
            _("p must be a number in [0, 1] (the fraction of frequencies kept), got {p!r}").format(p=p)
        )
    r = inv_freq.shape[0]
    # p * r in floating point can land just under a whole number (0.58 * 50 = 28.999999999999996): that is 29
    n_keep = math.floor(p * r + 1e-9)
    out = inv_freq.clone()
    lowest = torch.argsort(inv_freq, descending=True, stable=True)[n_keep:]
    out[lowest] = 0
    return out
