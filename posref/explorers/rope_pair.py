"""Notebook 04's explorer: one RoPE pair of a query and a key rotating with their positions.

The query at position ``m`` turns by ``m * w``, the key at ``n`` by ``n * w``, so their dot product is
``|q||k| cos((n - m) w + phi)``: a function of ``n - m`` only (Su et al. 2021, RoFormer, arXiv 2104.09864).
The figure is built once by the explorer and updated in place when a slider moves.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from matplotlib.figure import Figure
from matplotlib.patches import Arc, Circle

from posref._checks import check_base, check_positive_int
from posref.explorers.base import (
    Explorer,
    check_dim,
    check_index,
    check_position,
    int_slider,
    kept_view,
    new_figure,
)
from posref.i18n import _
from posref.rope import apply_rope, rope_cos_sin
from posref.scaling import rope_frequencies

__all__ = ["PAIR_KEY", "PAIR_QUERY", "rope_pair_explorer", "rope_pair_figure"]

# The 2-D query and key of one RoPE pair in ``rope_pair_figure``: not aligned, so the score has a phase offset.
PAIR_QUERY = (1.0, 0.2)
PAIR_KEY = (0.5, 0.75)


def _rotate_pair(vector: tuple[float, float], positions: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Rotate one 2-D pair to each position with the core's ``apply_rope`` -> ``(len(positions), 2)`` float64."""
    cos, sin = rope_cos_sin(positions, w)  # (T, 1)
    x = torch.tensor(vector, dtype=torch.float64).expand(len(positions), 2)
    return apply_rope(x, cos.double(), sin.double())


class _RopePairView:
    """``rope_pair_figure`` as a figure kept between slider moves: ``view(m, n, pair)`` updates the arrows, the
    arc, the score map (one per pair, cached), the diagonal, the star, legends and titles in place."""

    def __init__(self, dim: int = 8, base: float = 10000.0, *, max_position: int = 50) -> None:
        self.dim = check_dim("dim", dim)
        self.max_position = check_positive_int("max_position", max_position)
        self.inv_freq, _factor = rope_frequencies(dim, base=check_base("base", base))
        self._scores: dict[int, np.ndarray] = {}

        fig = self.figure = new_figure((11, 5.2))
        ax, hx = self.ax, self.hx = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.15]})
        ax.add_patch(Circle((0, 0), 1.0, fill=False, lw=0.8, color="0.6"))
        for vec, colour in ((PAIR_QUERY, "tab:blue"), (PAIR_KEY, "tab:orange")):
            ax.annotate(
                "", xy=vec, xytext=(0, 0), arrowprops={"arrowstyle": "->", "color": colour, "alpha": 0.3}
            )
        self.arrows, self.tips = [], []
        for colour, gid in (("tab:blue", "query"), ("tab:orange", "key")):
            self.arrows.append(ax.plot([0, 0], [0, 0], color=colour, lw=2.5, gid=gid)[0])
            self.tips.append(ax.plot([0], [0], "o", color=colour, ms=5)[0])
        self.arc: Arc | None = None
        ax.set_xlim(-1.35, 1.35)
        ax.set_ylim(-1.35, 1.35)
        ax.set_aspect("equal")
        ax.axhline(0, color="0.85", lw=0.6)
        ax.axvline(0, color="0.85", lw=0.6)
        self.phi = math.atan2(PAIR_KEY[1], PAIR_KEY[0]) - math.atan2(PAIR_QUERY[1], PAIR_QUERY[0])
        self.title = ax.set_title("", fontsize=9)
        ax.text(
            0.98, 0.98, _("faded: q and k before rotation\narc: angle from q to k = (n-m)·w + φ\nφ = {phi:.3f} rad (before rotation)").format(phi=self.phi),
            transform=ax.transAxes, ha="right", va="top", fontsize=7.5, color="0.25",
        )  # fmt: skip
        size = max_position + 1
        self.image = hx.imshow(
            np.zeros((size, size)),
            origin="lower",
            cmap="RdBu_r",
            vmin=-1,
            vmax=1,
            gid="scores",
            aspect="auto",
        )
        fig.colorbar(self.image, ax=hx, fraction=0.046, label=_("score of this pair"))
        (self.diagonal,) = hx.plot([], [], "k--", lw=0.8)
        (self.star,) = hx.plot([], [], "k*", ms=11, label="(m, n)")
        hx.set_xlim(-0.5, max_position + 0.5)
        hx.set_ylim(-0.5, max_position + 0.5)
        hx.set_xlabel(_("key position n"))
        hx.set_ylabel(_("query position m"))
        hx.set_title(_("the score depends on n - m only: constant along diagonals"), fontsize=9)
        fig.subplots_adjust(
            left=0.06, right=0.93, bottom=0.17, top=0.84, wspace=0.25
        )  # legends below the axes

    def _pair_scores(self, pair: int) -> np.ndarray:
        """``(P, P)`` scores of pair ``pair`` for every query position (rows) and key position (columns)."""
        if pair not in self._scores:
            w = self.inv_freq[pair : pair + 1]
            grid = torch.arange(self.max_position + 1)
            self._scores[pair] = (
                _rotate_pair(PAIR_QUERY, grid, w) @ _rotate_pair(PAIR_KEY, grid, w).T
            ).numpy()
        return self._scores[pair]

    def __call__(self, m: int, n: int, pair: int = 0) -> Figure:
        dim, max_position = self.dim, self.max_position
        pair = check_index("pair", pair, dim // 2, _("a RoPE pair index, dim/2 pairs"))
        m = int(check_position("m", m))
        n = int(check_position("n", n))
        w = self.inv_freq[pair : pair + 1]  # (1,): one rotated pair
        q_m = _rotate_pair(PAIR_QUERY, torch.tensor([m]), w)[0].numpy()
        k_n = _rotate_pair(PAIR_KEY, torch.tensor([n]), w)[0].numpy()
        score = float(q_m @ k_n)
        wf = float(w)
        relative = (n - m) * wf

        ax, hx = self.ax, self.hx
        labels = (_("q rotated by m·w (m={m})").format(m=m), _("k rotated by n·w (n={n})").format(n=n))
        for arrow, tip, vec, label in zip(self.arrows, self.tips, (q_m, k_n), labels, strict=True):
            arrow.set_data([0, vec[0]], [0, vec[1]])
            arrow.set_label(label)
            tip.set_data([vec[0]], [vec[1]])
        # the arc turns counter-clockwise from q to k, through (n-m)·w + φ (mod 2π): the angle the caption names,
        # even where the shorter way round is the other way
        a_q = math.degrees(math.atan2(q_m[1], q_m[0]))
        a_k = math.degrees(math.atan2(k_n[1], k_n[0]))
        if self.arc is not None:
            self.arc.remove()
        self.arc = ax.add_patch(
            Arc((0, 0), 0.7, 0.7, theta1=a_q, theta2=a_q + (a_k - a_q) % 360, color="0.2", lw=1.2)
        )
        ax.legend(handles=self.arrows, loc="upper center", bbox_to_anchor=(0.5, -0.09), ncol=2, fontsize=8)
        self.title.set_text(
            _(
                "pair {pair} of dim {dim}: w = base^(-2·{pair}/{dim}) = {w:.4g} rad/position\n"
                "relative angle (n-m)·w = {relative:.3f} rad  (mod 2π: {turned:.3f})\n"
                "score q_m·k_n = |q||k| cos((n-m)·w + φ) = {score:+.3f}"
            ).format(
                pair=pair, dim=dim, w=wf, relative=relative, turned=relative % (2 * math.pi), score=score
            )
        )
        self.image.set_data(self._pair_scores(pair))
        line = np.arange(max_position + 1)
        inside = (line + (n - m) >= 0) & (line + (n - m) <= max_position)
        self.diagonal.set_data(line[inside] + (n - m), line[inside])
        self.diagonal.set_label(_("n - m = {d}: same score").format(d=n - m))
        self.star.set_data([n], [m])
        hx.legend(
            handles=[self.diagonal, self.star],
            loc="upper center",
            bbox_to_anchor=(0.5, -0.12),
            ncol=2,
            fontsize=8,
        )
        return self.figure


def rope_pair_figure(
    m: int, n: int, pair: int = 0, dim: int = 8, base: float = 10000.0, *, max_position: int = 50
) -> Figure:
    """RoPE on pair ``pair`` of a query at position ``m`` and a key at position ``n`` (RoFormer, arXiv 2104.09864).

    Left: the pair's plane. The query ``PAIR_QUERY`` turned by ``m * w`` and the key ``PAIR_KEY`` turned by
    ``n * w``, ``w = base**(-2 pair/dim)``; the arc is their relative angle. Right: the pair's score
    ``<R_m' q, R_n' k> = |q||k| cos((n' - m') w + phi)`` for every ``m', n'`` in ``[0, max_position]``: constant
    along each diagonal ``n' - m' = const``, i.e. a function of ``n - m`` only. The image (gid ``"scores"``) has
    rows ``m'`` and columns ``n'``; the rotated query and key are the arrows with gids ``"query"``, ``"key"``.
    """
    view = _RopePairView(dim, base, max_position=max_position)
    return view(m, n, pair)


def rope_pair_explorer(dim: int = 8, base: float = 10000.0, *, max_position: int = 50) -> Explorer:
    """One RoPE pair with sliders ``pair``, ``m`` (query position) and ``n`` (key position); see ``rope_pair_figure``."""
    dim = check_dim("dim", dim)
    check_base("base", base)
    check_positive_int("max_position", max_position)
    controls = {
        "pair": int_slider(_("pair i"), 0, 0, dim // 2 - 1),
        "m": int_slider(_("query position m"), 2, 0, max_position),
        "n": int_slider(_("key position n"), 5, 0, max_position),
    }
    view = kept_view(
        lambda: _RopePairView(dim, base, max_position=max_position)
    )  # one figure, updated in place
    return Explorer(view, controls, name="rope-pair")
