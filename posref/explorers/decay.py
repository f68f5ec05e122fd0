"""Notebook 05's explorer: does RoPE make attention decay with distance?

For aligned vectors (q = k) the score falls off with ripples; for independent random q and k it does not decay
in general (Barbero et al. 2024, "Round and Round We Go!", arXiv 2410.06205). RoFormer's argument (arXiv
2104.09864, section 3.4.3) bounds the score by a quantity that decays; the figure draws all three.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from matplotlib.figure import Figure

from posref._checks import check_base, check_positive_int, check_seed
from posref.explorers.base import Explorer, check_dim, int_slider, log_slider, new_figure
from posref.i18n import _
from posref.rope import apply_rope, rope_cos_sin
from posref.scaling import rope_frequencies

__all__ = ["decay_curves", "decay_explorer", "decay_figure", "roformer_bound"]


def roformer_bound(distances: np.ndarray, inv_freq: np.ndarray) -> np.ndarray:
    """RoFormer's relative upper bound (arXiv 2104.09864, section 3.4.3) -> ``distances.shape`` float64.

    ``(1 / (d/2)) * sum_{j=1}^{d/2} |S_j|`` with ``S_j = sum_{k<j} exp(i * distance * w_k)``; by Abel summation
    ``|score| <= max_j |h_{j+1} - h_j| * sum_j |S_j|`` for ``h_j`` the pair products of q and k.
    """
    phases = np.exp(1j * np.asarray(distances, dtype=np.float64)[:, None] * inv_freq[None, :])  # (N, d/2)
    return np.abs(np.cumsum(phases, axis=1)).mean(axis=1)


def decay_curves(
    head_dim: int = 128, base: float = 10000.0, max_distance: int = 1024, seed: int = 0
) -> dict[str, Any]:
    """Scores of RoPE'd vectors against their distance ``0 .. max_distance`` (query at 0, key at the distance).

    Returns a dict of float64 arrays: ``distance``; ``aligned`` = ``<R_0 q, R_d q> / |q|^2`` (q = k; it decays,
    with oscillations); ``random`` = ``<R_0 q, R_d k> / (|q||k|)`` for independent Gaussian q, k (no decay in
    general: its expectation is 0 at every distance, arXiv 2410.06205); ``bound`` = ``roformer_bound`` divided
    by its value at distance 0 (RoFormer's decay argument). Also the vectors ``q``, ``k`` (``(head_dim,)``
    float32, drawn with ``seed``) and ``inv_freq``. Rotations use ``apply_rope`` (half layout) in float32.
    """
    check_positive_int("head_dim", head_dim)
    check_positive_int("max_distance", max_distance)
    seed = check_seed("seed", seed, means=_("it draws q and k"))
    inv_freq, _factor = rope_frequencies(check_dim("head_dim", head_dim), base=check_base("base", base))
    gen = torch.Generator().manual_seed(seed)
    q, k = torch.randn(2, head_dim, generator=gen)
    distance = torch.arange(max_distance + 1)
    cos, sin = rope_cos_sin(distance, inv_freq)  # (N, d/2)
    zero_cos, zero_sin = rope_cos_sin(torch.zeros(1, dtype=torch.long), inv_freq)
    q0 = apply_rope(q[None], zero_cos, zero_sin)[0]  # position 0: no rotation
    keys = apply_rope(
        torch.stack((q, k))[:, None, :].expand(2, len(distance), head_dim), cos, sin
    )  # (2, N, D)
    raw = (keys.double() @ q0.double()).numpy()  # (2, N)
    bound = roformer_bound(distance.numpy(), inv_freq.double().numpy())
    return {
        "distance": distance.numpy().astype(np.float64),
        "aligned": raw[0] / float(q.double() @ q.double()),
        "random": raw[1] / float(q.double().norm() * k.double().norm()),
        "bound": bound / bound[0],
        "q": q,
        "k": k,
        "inv_freq": inv_freq,
    }


def decay_figure(
    head_dim: int = 128, base: float = 10000.0, max_distance: int = 1024, seed: int = 0
) -> Figure:
    """Attention score against distance: aligned q = k, random q and k, and RoFormer's bound (see ``decay_curves``).

    Lines (by gid): ``"aligned"``, ``"random"``, ``"bound"``; x is the distance, y the normalised score.
    """
    curves = decay_curves(head_dim, base, max_distance, seed)
    fig = new_figure((10, 4.6))
    ax = fig.add_subplot()
    x = curves["distance"]
    ax.plot(x, curves["random"], color="tab:orange", lw=0.9, alpha=0.85, gid="random",
            label=_("random q, k (independent Gaussians): no decay in general"))  # fmt: skip
    ax.plot(x, curves["aligned"], color="tab:blue", lw=1.4, gid="aligned",
            label=_("aligned q = k: decays, with ripples"))  # fmt: skip
    ax.plot(x, curves["bound"], color="k", lw=1.2, ls="--", gid="bound",
            label=_("RoFormer relative upper bound (normalised)"))  # fmt: skip
    ax.axhline(0, color="0.7", lw=0.6)
    ax.set_xlabel(_("distance n - m (query at 0, key at n)"))
    ax.set_ylabel(_("score / (|q| |k|)"))
    ax.set_xlim(0, max_distance)
    ax.legend(
        fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=3
    )  # below: never over a curve
    ax.set_title(
        _(
            "Does RoPE decay with distance? head_dim={head_dim}, base={base:g}, seed={seed}\n"
            "the bound decays; a score decays only when q and k are aligned (Barbero et al. 2024, arXiv 2410.06205)"
        ).format(head_dim=head_dim, base=base, seed=seed),
        fontsize=9,
    )
    fig.subplots_adjust(left=0.07, right=0.98, bottom=0.2, top=0.87)
    return fig


def decay_explorer(head_dim: int = 128, base: float = 10000.0, max_distance: int = 1024) -> Explorer:
    """Score vs distance with sliders ``base`` (log scale), ``seed`` and ``max_distance``; see ``decay_figure``."""
    check_dim("head_dim", head_dim)
    base = check_base("base", base)
    check_positive_int("max_distance", max_distance)
    log_base = math.log10(base)
    controls = {
        "base": log_slider("base", base, base=10, lo=min(2.0, log_base), hi=max(6.5, log_base), step=0.1),
        "seed": int_slider(_("seed of q, k"), 0, 0, 50),
        "max_distance": int_slider(_("max distance"), max_distance, 16, max(4 * max_distance, 4096)),
    }
    return Explorer(decay_figure, controls, name="decay", fixed={"head_dim": head_dim})
