"""Explorers for the course: sliders and figures where a student would rather look than read.

Each explorer is two things:

* a pure *figure function* (plain arguments -> ``matplotlib.figure.Figure``). It touches no pyplot state, so
  it draws the same under any backend (headless Agg included) and an executed notebook that shows its figure
  keeps a static image when exported to HTML;
* an *explorer* widget (``Explorer``, an ``ipywidgets.VBox`` of sliders above an ``Output``) that calls the
  figure function again whenever a slider is released (``continuous_update=False``: one redraw per move). The
  heaviest figures (RoPE pair, bias heatmaps, scaling) are built once by the explorer and updated in place
  (artists' ``set_data``), which cuts the cost of a move by a third to a half; their figure functions build
  and update the same way, so the static figure and the redrawn one are the same picture.

The five explorers (figure function / explorer: what it shows):

* ``fingerprint_figure`` / ``fingerprint_explorer``: sinusoidal PE as clocks, one hand per frequency pair
  (Vaswani et al. 2017, arXiv 1706.03762);
* ``rope_pair_figure`` / ``rope_pair_explorer``: one RoPE pair of a query and a key rotating with their
  positions, and a score that depends on ``n - m`` only (Su et al. 2021, RoFormer, arXiv 2104.09864);
* ``bias_heatmap_figure`` / ``bias_heatmap_explorer``: ALiBi (arXiv 2108.12409) and T5 (arXiv 1910.10683)
  biases by head, the T5 table illustrative;
* ``decay_figure`` / ``decay_explorer``: does RoPE decay with distance? Aligned vs random q, k and RoFormer's
  bound (Barbero et al. 2024, "Round and Round We Go!", arXiv 2410.06205);
* ``scaling_figure`` / ``scaling_explorer``: what a context-extension method (PI, NTK-aware, NTK-by-parts, YaRN,
  Llama 3) does to each frequency pair: kept, blended or interpolated (``posref.inspector``'s classification).

The length lab's explorer of per-position losses, which runs trained models, is in ``posref.lab_widgets``.

An explorer's state is plain Python: ``explorer.controls`` maps names to sliders (each is also an attribute,
e.g. ``explorer.position``), ``explorer.figure`` is the last figure drawn and ``explorer.png`` its PNG bytes,
which is also exactly what the ``Output`` shows. The PNG is placed in the ``Output`` directly (not through
``plt.show()``), so redraws work from a kernel callback, from a plain Python process (tests) and under any
matplotlib backend alike. All figure text is English.
"""

from __future__ import annotations

import base64
import io
import math
import numbers
from collections.abc import Callable, Mapping
from typing import Any

import ipywidgets as widgets
import numpy as np
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.patches import Arc, Circle

from posref._checks import check_base, check_choice, check_positive_int
from posref.absolute import sinusoidal_frequencies
from posref.config import RopeConfig
from posref.inspector import Inspection, inspect_rope
from posref.relative import T5RelativeBias, alibi_bias, alibi_slopes
from posref.rope import apply_rope, rope_cos_sin
from posref.scaling import rope_frequencies

__all__ = [
    "Explorer",
    "bias_heatmap_explorer",
    "bias_heatmap_figure",
    "decay_curves",
    "decay_explorer",
    "decay_figure",
    "figure_png",
    "fingerprint_angles",
    "fingerprint_explorer",
    "fingerprint_figure",
    "roformer_bound",
    "rope_pair_explorer",
    "rope_pair_figure",
    "scaling_dict",
    "scaling_explorer",
    "scaling_figure",
    "scaling_inspection",
    "t5_illustrative_table",
]

# The 2-D query and key of one RoPE pair in ``rope_pair_figure``: not aligned, so the score has a phase offset.
PAIR_QUERY = (1.0, 0.2)
PAIR_KEY = (0.5, 0.75)
_DPI = 100


# ---------------------------------------------------------------------------------------------------------------
# checks and helpers


def _check_position(name: str, value: object) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not math.isfinite(value)
        or value < 0
    ):
        raise ValueError(f"{name} must be a finite number >= 0 (a token position), got {value!r}")
    return float(value)


def _check_index(name: str, value: object, size: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 0 <= value < size:
        raise ValueError(f"{name} must be an int in [0, {size}) ({what}), got {value!r}")
    return int(value)


def _check_dim(name: str, value: object) -> int:
    check_positive_int(name, value)
    if value % 2:  # type: ignore[operator]
        raise ValueError(f"{name} must be even (positions are encoded in pairs of dims), got {value}")
    return int(value)  # type: ignore[arg-type]


def _format_length(x: float) -> str:
    """A wavelength in positions, short: 6.28, 84.3, 5.4k, 54k."""
    if x < 10:
        return f"{x:.2f}"
    if x < 1000:
        return f"{x:.1f}"
    if x < 10000:
        return f"{x / 1000:.1f}k"
    return f"{x / 1000:.0f}k"


def figure_png(fig: Figure) -> bytes:
    """Render ``fig`` to PNG bytes with the Agg canvas (headless; needs no pyplot backend).

    A figure rendered before keeps its canvas, whose renderer caches text layouts: an explorer that updates one
    figure in place renders it again about a third faster than a fresh figure.
    """
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    canvas.print_png(buffer)
    return buffer.getvalue()


def _png_output(png: bytes) -> dict[str, Any]:
    """One display_data output for an ``Output`` widget: the PNG plus a text fallback."""
    return {
        "output_type": "display_data",
        "data": {
            "image/png": base64.b64encode(png).decode("ascii"),
            "text/plain": "<posref explorer figure>",
        },
        "metadata": {},
    }


# ---------------------------------------------------------------------------------------------------------------
# the explorer widget


class Explorer(widgets.VBox):
    """Sliders above an ``Output`` that shows ``draw(**fixed, **slider values)``; redrawn when a slider is released.

    ``draw`` returns a ``Figure``: a new one, or the same one updated in place (a figure kept between moves).

    Attributes: ``controls`` (name -> slider; each also an attribute of the explorer), ``output`` (the
    ``ipywidgets.Output``), ``figure`` (the last ``Figure``), ``png`` (its PNG bytes), ``redraws`` (how many
    figures were drawn). ``values()`` returns the current slider values; ``set(**values)`` moves several
    sliders with one redraw; ``redraw()`` draws again.
    """

    def __init__(
        self,
        draw: Callable[..., Figure],
        controls: Mapping[str, widgets.ValueWidget],
        *,
        name: str,
        fixed: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self._draw = draw
        self._fixed = dict(fixed or {})
        self.controls = dict(controls)
        self.output = widgets.Output()
        self.figure: Figure | None = None
        self.png = b""
        self.redraws = 0
        self._holding = False
        for key, control in self.controls.items():
            if hasattr(self, key):
                raise ValueError(f"control name {key!r} clashes with an attribute of the explorer widget")
            setattr(self, key, control)
            control.observe(self._on_change, names="value")
        self.children = [widgets.HBox(list(self.controls.values())), self.output]
        # CSS classes let a browser test find one explorer among several in a notebook
        self.add_class("posref-explorer")
        self.add_class(f"posref-{name}-explorer")
        self.redraw()

    def set(self, **values: Any) -> Figure:
        """Move several sliders at once and redraw once, e.g. ``explorer.set(m=3, n=8)``."""
        unknown = sorted(set(values) - set(self.controls))
        if unknown:
            raise ValueError(f"unknown control(s) {unknown}; this explorer has {sorted(self.controls)}")
        self._holding = True
        try:
            for key, value in values.items():
                self.controls[key].value = value
        finally:
            self._holding = False
        return self.redraw()

    def values(self) -> dict[str, Any]:
        return {key: control.value for key, control in self.controls.items()}

    def redraw(self) -> Figure:
        fig = self._draw(**self._fixed, **self.values())
        png = figure_png(fig)
        self.figure, self.png = fig, png
        self.redraws += 1
        # replacing the outputs in one assignment is what clear_output(wait=True) + display achieves: no flicker
        self.output.outputs = (_png_output(png),)
        return fig

    def _on_change(self, change: dict[str, Any]) -> None:
        if not self._holding:
            self.redraw()

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        # a static copy of the first figure for viewers without a widget manager (e.g. HTML without widget state)
        data = super()._repr_mimebundle_(**kwargs)
        if isinstance(data, dict) and self.png:
            data["image/png"] = base64.b64encode(self.png).decode("ascii")
        return data


def _int_slider(description: str, value: int, lo: int, hi: int) -> widgets.IntSlider:
    return widgets.IntSlider(
        value=value,
        min=lo,
        max=hi,
        step=1,
        description=description,
        continuous_update=False,
        style={"description_width": "initial"},
        layout=widgets.Layout(width="360px"),
    )


# ---------------------------------------------------------------------------------------------------------------
# 1. the position fingerprint: sinusoidal PE as clocks


def fingerprint_angles(position: float, dim: int = 64, base: float = 10000.0) -> np.ndarray:
    """Hand angles of the clocks at ``position`` -> ``(dim/2,)`` float64 in ``[0, 2*pi)``.

    Hand ``i`` is the ``(sin, cos)`` pair ``i`` of the sinusoidal PE (arXiv 1706.03762): its angle is
    ``position * base**(-2i/dim) mod 2*pi`` with the float32 frequencies that ``sinusoidal_pe`` uses.
    """
    position = _check_position("position", position)
    freqs = sinusoidal_frequencies(_check_dim("dim", dim), base=check_base("base", base)).double().numpy()
    return np.mod(position * freqs, 2 * np.pi)


def fingerprint_figure(position: float, dim: int = 64, base: float = 10000.0) -> Figure:
    """One clock per frequency pair, the hand of pair ``i`` at angle ``position * base**(-2i/dim)``.

    A hand points up at angle 0 and turns clockwise, so its tip is ``(sin, cos)`` of the angle: exactly the two
    PE values ``(pe[p, 2i], pe[p, 2i+1])``. Under each clock: its pair index and wavelength ``2*pi / w_i`` (how
    many positions one full turn takes). Pair 0 turns fastest (2*pi ~ 6.3 positions); the last pair slowest.
    The hands are one ``LineCollection`` with gid ``"hands"`` (segment ``i`` from the centre to the tip of i).
    """
    angles = fingerprint_angles(position, dim, base)
    freqs = sinusoidal_frequencies(dim, base=base).double().numpy()
    wavelengths = 2 * np.pi / freqs
    n_pairs = dim // 2
    ncols = min(8, n_pairs)
    nrows = math.ceil(n_pairs / ncols)
    dx, dy = 2.5, 3.0  # clock spacing in data units (radius 1)
    fig = Figure(figsize=(1.25 * ncols + 0.4, 1.5 * nrows + 0.9), dpi=_DPI)
    ax = fig.add_subplot()
    centres = np.array([((i % ncols) * dx, -(i // ncols) * dy) for i in range(n_pairs)])
    tips = centres + np.stack((np.sin(angles), np.cos(angles)), axis=1)
    colours = [
        (0.15 + 0.7 * i / max(n_pairs - 1, 1), 0.25, 0.85 - 0.6 * i / max(n_pairs - 1, 1))
        for i in range(n_pairs)
    ]
    for i, (cx, cy) in enumerate(centres):
        ax.add_patch(Circle((cx, cy), 1.0, fill=False, lw=0.8, color="0.55"))
        ax.plot([cx], [cy], marker="o", ms=2, color="0.3")
        ax.text(
            cx, cy - 1.22, f"i={i}  λ={_format_length(wavelengths[i])}", ha="center", va="top", fontsize=6.5
        )
    hands = LineCollection(np.stack((centres, tips), axis=1), colors=colours, linewidths=2.0, gid="hands")
    ax.add_collection(hands)
    ax.set_xlim(-1.3, (ncols - 1) * dx + 1.3)
    ax.set_ylim(-(nrows - 1) * dy - 1.9, 1.25)
    ax.set_aspect("equal")
    ax.axis("off")
    fig.suptitle(
        f"Position fingerprint: PE({position:g}), dim={dim}, base={base:g}\n"
        f"hand i turns once every λ_i = 2π·base^(2i/dim) positions "
        f"(fastest {_format_length(wavelengths[0])}, slowest {_format_length(wavelengths[-1])})",
        fontsize=9,
    )
    height = 1.5 * nrows + 0.9
    fig.subplots_adjust(left=0.01, right=0.99, bottom=0.02, top=1 - 0.62 / height)  # fixed margins: fast
    return fig


def fingerprint_explorer(dim: int = 64, base: float = 10000.0, max_position: int = 200) -> Explorer:
    """The position fingerprint with a ``position`` slider in ``[0, max_position]`` (see ``fingerprint_figure``)."""
    _check_dim("dim", dim)
    check_base("base", base)
    check_positive_int("max_position", max_position)
    position = _int_slider("position p", 0, 0, max_position)
    return Explorer(
        fingerprint_figure, {"position": position}, name="fingerprint", fixed={"dim": dim, "base": base}
    )


# ---------------------------------------------------------------------------------------------------------------
# 2. one RoPE pair rotating


def _rotate_pair(vector: tuple[float, float], positions: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Rotate one 2-D pair to each position with the core's ``apply_rope`` -> ``(len(positions), 2)`` float64."""
    cos, sin = rope_cos_sin(positions, w)  # (T, 1)
    x = torch.tensor(vector, dtype=torch.float64).expand(len(positions), 2)
    return apply_rope(x, cos.double(), sin.double())


class _RopePairView:
    """``rope_pair_figure`` as a figure kept between slider moves: ``view(m, n, pair)`` updates the arrows, the
    arc, the score map (one per pair, cached), the diagonal, the star, legends and titles in place."""

    def __init__(self, dim: int = 8, base: float = 10000.0, *, max_position: int = 50) -> None:
        self.dim = _check_dim("dim", dim)
        self.max_position = check_positive_int("max_position", max_position)
        self.inv_freq, _ = rope_frequencies(dim, base=check_base("base", base))
        self._scores: dict[int, np.ndarray] = {}

        fig = self.figure = Figure(figsize=(11, 4.8), dpi=_DPI)
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
            0.98, 0.98, f"faded: q and k before rotation\narc: angle from q to k = (n-m)·w + φ\nφ = {self.phi:.3f} rad (before rotation)",
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
        fig.colorbar(self.image, ax=hx, fraction=0.046, label="score of this pair")
        (self.diagonal,) = hx.plot([], [], "k--", lw=0.8)
        (self.star,) = hx.plot([], [], "k*", ms=11, label="(m, n)")
        hx.set_xlim(-0.5, max_position + 0.5)
        hx.set_ylim(-0.5, max_position + 0.5)
        hx.set_xlabel("key position n")
        hx.set_ylabel("query position m")
        hx.set_title("the score depends on n - m only: constant along diagonals", fontsize=9)
        fig.subplots_adjust(left=0.06, right=0.93, bottom=0.11, top=0.83, wspace=0.25)

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
        pair = _check_index("pair", pair, dim // 2, "a RoPE pair index, dim/2 pairs")
        m = int(_check_position("m", m))
        n = int(_check_position("n", n))
        w = self.inv_freq[pair : pair + 1]  # (1,): one rotated pair
        q_m = _rotate_pair(PAIR_QUERY, torch.tensor([m]), w)[0].numpy()
        k_n = _rotate_pair(PAIR_KEY, torch.tensor([n]), w)[0].numpy()
        score = float(q_m @ k_n)
        wf = float(w)
        relative = (n - m) * wf

        ax, hx = self.ax, self.hx
        labels = (f"q rotated by m·w (m={m})", f"k rotated by n·w (n={n})")
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
        ax.legend(handles=self.arrows, loc="lower left", fontsize=8)
        self.title.set_text(
            f"pair {pair} of dim {dim}: w = base^(-2·{pair}/{dim}) = {wf:.4g} rad/position\n"
            f"relative angle (n-m)·w = {relative:.3f} rad  (mod 2π: {relative % (2 * math.pi):.3f})\n"
            f"score q_m·k_n = |q||k| cos((n-m)·w + φ) = {score:+.3f}"
        )
        self.image.set_data(self._pair_scores(pair))
        line = np.arange(max_position + 1)
        inside = (line + (n - m) >= 0) & (line + (n - m) <= max_position)
        self.diagonal.set_data(line[inside] + (n - m), line[inside])
        self.diagonal.set_label(f"n - m = {n - m}: same score")
        self.star.set_data([n], [m])
        hx.legend(handles=[self.diagonal, self.star], loc="upper left", fontsize=8)
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
    dim = _check_dim("dim", dim)
    check_base("base", base)
    check_positive_int("max_position", max_position)
    controls = {
        "pair": _int_slider("pair i", 0, 0, dim // 2 - 1),
        "m": _int_slider("query position m", 2, 0, max_position),
        "n": _int_slider("key position n", 5, 0, max_position),
    }
    view = _RopePairView(dim, base, max_position=max_position)  # one figure, updated in place
    return Explorer(view, controls, name="rope-pair")


# ---------------------------------------------------------------------------------------------------------------
# 3. ALiBi and T5 bias heatmaps by head


def t5_illustrative_table(n_heads: int, num_buckets: int = 32) -> torch.Tensor:
    """An *illustrative* T5 bias table ``(num_buckets, n_heads)``: deterministic, not learned.

    Real T5 tables are learned; this one only looks the part. Bucket ``b`` of each direction (keys before the
    query: ``b < num_buckets/2``; after: the rest) has distance rank ``j = b mod (num_buckets/2)``; head ``h``
    adds ``-s_h * (j / (num_buckets/2 - 1))**p_h``, a little weaker (x0.7) for keys after the query. Strength
    ``s_h`` falls from 4 to 0.5 and curvature ``p_h`` grows from 0.5 to 2 across heads, so some heads look near
    and some far. Non-increasing in ``j`` on each side; 0 in the query's own bucket.
    """
    check_positive_int("n_heads", n_heads)
    check_positive_int("num_buckets", num_buckets)
    if num_buckets < 4 or num_buckets % 2:
        raise ValueError(f"num_buckets must be even and >= 4 (two directions), got {num_buckets}")
    half = num_buckets // 2
    rank = torch.arange(num_buckets, dtype=torch.float64) % half / (half - 1)  # (B,) in [0, 1]
    after = (torch.arange(num_buckets) >= half).double()
    t = (
        torch.linspace(0.0, 1.0, n_heads, dtype=torch.float64)
        if n_heads > 1
        else torch.zeros(1, dtype=torch.float64)
    )
    strength = 4.0 * 0.125**t  # (H,): 4 -> 0.5
    curvature = 0.5 * 4.0**t  # (H,): 0.5 -> 2
    table = -strength * rank[:, None] ** curvature * (1.0 - 0.3 * after[:, None])  # (B, H)
    return table.float()


def _t5_bias(n_heads: int, length: int) -> torch.Tensor:
    """The bidirectional T5 bias ``(n_heads, length, length)`` with the illustrative table."""
    module = T5RelativeBias(n_heads, bidirectional=True)
    with torch.no_grad():
        module.embedding.weight.copy_(t5_illustrative_table(n_heads, module.num_buckets))
        return module(length, length)


class _BiasHeatmaps:
    """``bias_heatmap_figure`` as a figure kept between heads: ``view(head)`` updates it in place (two images, two
    lines, the titles). All heads share one colour scale per bias, so the head slider only changes data."""

    def __init__(self, n_heads: int = 8, length: int = 32) -> None:
        self.n_heads = check_positive_int("n_heads", n_heads)
        self.length = check_positive_int("length", length)
        self.slopes = alibi_slopes(n_heads)
        self.alibi = alibi_bias(self.slopes, length, length).numpy()  # (H, T, T)
        self.t5 = _t5_bias(n_heads, length).numpy()
        fig = self.figure = Figure(figsize=(13, 4.3), dpi=_DPI)
        ax_a, ax_t, ax_r = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1, 1, 1.1]})
        self.images, self.titles = [], []
        for ax, data, gid, label in (
            (ax_a, self.alibi, "alibi", "ALiBi bias"),
            (ax_t, self.t5, "t5", "T5 bias"),
        ):
            # one colour scale for all heads: a steep head goes dark within a few tokens, a gentle one barely
            # changes over the whole window (a scale per head would draw every ALiBi head the same)
            image = ax.imshow(
                data[0], cmap="viridis", gid=gid, origin="upper", vmin=float(data.min()), vmax=0.0
            )
            fig.colorbar(image, ax=ax, fraction=0.046, label=f"{label} (one scale for all heads)")
            ax.set_xlabel("key position j")
            ax.set_ylabel("query position i")
            self.images.append(image)
            self.titles.append(ax.set_title("", fontsize=9))
        self.row = i = length // 2
        keys = np.arange(length)
        (self.alibi_row,) = ax_r.plot(
            keys, self.alibi[0, i], "o-", ms=3, label="ALiBi: a straight line in distance"
        )
        (self.t5_row,) = ax_r.step(
            keys, self.t5[0, i], where="mid", label="T5: one value per bucket (illustrative)"
        )
        low = min(float(self.alibi.min()), float(self.t5.min()))
        ax_r.set_ylim(1.05 * low, -0.05 * low if low < 0 else 1.0)  # the same for all heads, like the colours
        ax_r.axvline(i, color="0.7", lw=0.8, ls=":")
        ax_r.set_xlabel("key position j")
        ax_r.set_ylabel(f"bias for query i = {i}")
        ax_r.legend(fontsize=8, loc="lower center")
        self.row_title = ax_r.set_title("", fontsize=9)
        fig.subplots_adjust(left=0.04, right=0.99, bottom=0.12, top=0.87, wspace=0.42)

    def __call__(self, head: int) -> Figure:
        head = _check_index("head", head, self.n_heads, f"one of the {self.n_heads} heads")
        for image, data in zip(self.images, (self.alibi, self.t5), strict=True):
            image.set_data(data[head])
        self.alibi_row.set_ydata(self.alibi[head, self.row])
        self.t5_row.set_ydata(self.t5[head, self.row])
        self.titles[0].set_text(
            f"ALiBi, head {head}: slope m = {float(self.slopes[head]):.4g}\nbias = -m·|i - j|"
        )
        self.titles[1].set_text(f"T5 buckets, head {head}: ILLUSTRATIVE table\n(deterministic, not learned)")
        self.row_title.set_text(f"head {head} of {self.n_heads}: one row of each")
        return self.figure


def bias_heatmap_figure(head: int, n_heads: int = 8, length: int = 32) -> Figure:
    """ALiBi and T5 biases of head ``head`` over ``length`` queries x keys, side by side, and one row of each.

    Left (gid ``"alibi"``): ``-m_h |i - j|`` with ALiBi's slope ``m_h`` (arXiv 2108.12409), in the symmetric
    form the core computes (a causal model masks the keys after the query). Middle (gid ``"t5"``): T5's
    bidirectional bucketed bias (arXiv 1910.10683, 32 buckets, max_distance 128) with an *illustrative* table
    (``t5_illustrative_table``), labelled as such. Right: both biases for the middle query against key position.
    Images have rows = query position ``i``, columns = key position ``j``. Colours (and the right panel's y axis)
    use one scale for all ``n_heads`` heads, so heads can be compared by eye.
    """
    n_heads = check_positive_int("n_heads", n_heads)
    _check_index("head", head, n_heads, f"one of the {n_heads} heads")
    return _BiasHeatmaps(n_heads, length)(head)


def bias_heatmap_explorer(n_heads: int = 8, length: int = 32) -> Explorer:
    """ALiBi and T5 bias heatmaps with a ``head`` slider; see ``bias_heatmap_figure``. The figure is built once and
    updated in place when the slider moves."""
    view = _BiasHeatmaps(n_heads, length)
    head = _int_slider("head", 0, 0, n_heads - 1)
    return Explorer(view, {"head": head}, name="bias-heatmap")


# ---------------------------------------------------------------------------------------------------------------
# 4. does RoPE decay with distance?


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
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed must be an int >= 0, got {seed!r}")
    inv_freq, _ = rope_frequencies(_check_dim("head_dim", head_dim), base=check_base("base", base))
    gen = torch.Generator().manual_seed(int(seed))
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
    fig = Figure(figsize=(10, 4.3), dpi=_DPI)
    ax = fig.add_subplot()
    x = curves["distance"]
    ax.plot(x, curves["random"], color="tab:orange", lw=0.9, alpha=0.85, gid="random",
            label="random q, k (independent Gaussians): no decay in general")  # fmt: skip
    ax.plot(x, curves["aligned"], color="tab:blue", lw=1.4, gid="aligned",
            label="aligned q = k: decays, with ripples")  # fmt: skip
    ax.plot(x, curves["bound"], color="k", lw=1.2, ls="--", gid="bound",
            label="RoFormer relative upper bound (normalised)")  # fmt: skip
    ax.axhline(0, color="0.7", lw=0.6)
    ax.set_xlabel("distance n - m (query at 0, key at n)")
    ax.set_ylabel("score / (|q| |k|)")
    ax.set_xlim(0, max_distance)
    ax.legend(fontsize=8, loc="upper right")
    ax.set_title(
        f"Does RoPE decay with distance? head_dim={head_dim}, base={base:g}, seed={seed}\n"
        "the bound decays; a score decays only when q and k are aligned (Barbero et al. 2024, arXiv 2410.06205)",
        fontsize=9,
    )
    fig.subplots_adjust(left=0.07, right=0.98, bottom=0.12, top=0.86)
    return fig


def decay_explorer(head_dim: int = 128, base: float = 10000.0, max_distance: int = 1024) -> Explorer:
    """Score vs distance with sliders ``base`` (log scale), ``seed`` and ``max_distance``; see ``decay_figure``."""
    _check_dim("head_dim", head_dim)
    base = check_base("base", base)
    check_positive_int("max_distance", max_distance)
    log_base = math.log10(base)
    controls = {
        "base": widgets.FloatLogSlider(
            value=base,
            base=10,
            min=min(2.0, log_base),
            max=max(6.5, log_base),
            step=0.1,
            description="base",
            continuous_update=False,
            readout_format=".3g",
            layout=widgets.Layout(width="360px"),
        ),
        "seed": _int_slider("seed of q, k", 0, 0, 50),
        "max_distance": _int_slider("max distance", max_distance, 16, max(4 * max_distance, 4096)),
    }
    return Explorer(decay_figure, controls, name="decay", fixed={"head_dim": head_dim})


# ---------------------------------------------------------------------------------------------------------------
# 5. what a scaling method does to each frequency pair

# the registry's methods that need nothing but a factor and the original length (dynamic NTK also needs the
# current length and equals ``ntk`` at ``alpha = factor``; LongRoPE needs searched per-pair factors)
SCALING_EXPLORER_METHODS = {
    "linear": "linear (Position Interpolation)",
    "ntk": "ntk (NTK-aware)",
    "ntk_by_parts": "ntk_by_parts",
    "yarn": "yarn (transformers' index ramp)",
    "llama3": "llama3 (bands 1, 4 as Llama 3.1)",
}
LLAMA31_BANDS = {"low_freq_factor": 1.0, "high_freq_factor": 4.0}
_KIND_COLOURS = {
    "kept": "tab:green",
    "blended": "tab:orange",
    "interpolated": "tab:blue",
    "beyond": "tab:purple",
    "faster": "tab:red",
}


def _check_factor(factor: object) -> float:
    if isinstance(factor, bool) or not isinstance(factor, numbers.Real) or not 1.0 <= factor < math.inf:
        raise ValueError(
            f"factor must be a finite number >= 1 (how much the context is stretched), got {factor!r}"
        )
    return float(factor)


def _check_betas(betas: object) -> tuple[float, float]:
    if (
        not isinstance(betas, tuple | list)
        or len(betas) != 2
        or not all(isinstance(b, numbers.Real) and not isinstance(b, bool) and b > 0 for b in betas)
        or not betas[0] > betas[1]
    ):
        raise ValueError(
            f"betas must be (beta_fast, beta_slow), two numbers > 0 with beta_fast > beta_slow (turns within "
            f"the original length; YaRN's defaults are (32, 1)), got {betas!r}"
        )
    return float(betas[0]), float(betas[1])


def scaling_dict(
    method: str, factor: float, original_len: int, *, betas: tuple[float, float] = (32.0, 1.0)
) -> dict[str, Any]:
    """The ``rope_scaling`` dict the scaling explorer uses for ``method`` at ``factor`` -> a posref scaling dict.

    ``method`` is one of ``SCALING_EXPLORER_METHODS``; ``original_len`` is ``L``; ``betas`` are ``(beta_fast,
    beta_slow)`` for ``ntk_by_parts`` and ``yarn``; ``llama3`` uses Llama 3.1's bands ``LLAMA31_BANDS``.
    """
    check_choice("method", method, tuple(SCALING_EXPLORER_METHODS))
    factor = _check_factor(factor)
    check_positive_int("original_len", original_len)
    beta_fast, beta_slow = _check_betas(betas)
    if method in ("linear", "ntk"):
        return {"rope_type": method, "factor": factor}
    scaling = {"rope_type": method, "factor": factor, "original_max_position_embeddings": original_len}
    if method == "llama3":
        return {**scaling, **LLAMA31_BANDS}
    return {**scaling, "beta_fast": beta_fast, "beta_slow": beta_slow}


def scaling_inspection(
    method: str,
    factor: float,
    head_dim: int = 128,
    base: float = 500000.0,
    original_len: int = 8192,
    *,
    betas: tuple[float, float] = (32.0, 1.0),
) -> Inspection:
    """``posref.inspector``'s per-pair picture of ``method`` at ``factor`` for one head (no model config needed).

    The returned ``Inspection`` has the plain and scaled ``inv_freq`` ``(head_dim/2,)``, their ratio
    ``rho_i = w_i / w'_i`` (1: kept, ``factor``: interpolated, between: blended) and each pair's kind.
    Defaults: Llama 3.1 8B's head (``head_dim`` 128, base 500000, trained at ``L`` = 8192).
    """
    _check_dim("head_dim", head_dim)
    scaling = scaling_dict(method, factor, original_len, betas=betas)
    rope = RopeConfig(head_dim=head_dim, base=check_base("base", base), scaling=scaling)
    return inspect_rope(rope, name=SCALING_EXPLORER_METHODS[method])


class _ScalingView:
    """``scaling_figure`` as a figure kept between slider moves: ``view(method, factor)`` updates it in place
    (line and scatter data, the factor's lines and ticks, legends, titles); what depends only on the head (the
    plain wavelengths, the shading, ``L``) is drawn once."""

    def __init__(
        self,
        head_dim: int = 128,
        base: float = 500000.0,
        original_len: int = 8192,
        *,
        betas: tuple[float, float] = (32.0, 1.0),
    ) -> None:
        self.head_dim = _check_dim("head_dim", head_dim)
        self.base = check_base("base", base)
        self.original_len = check_positive_int("original_len", original_len)
        self.betas = _check_betas(betas)
        plain = scaling_inspection("linear", 1.0, head_dim, base, original_len, betas=betas)
        before = plain.wavelengths()[0].numpy()
        self.pairs = pairs = np.arange(len(before))

        fig = self.figure = Figure(figsize=(12, 4.6), dpi=_DPI)
        ax_w, ax_r = self.ax_w, self.ax_r = fig.subplots(1, 2)
        untouched = pairs[before > original_len]
        for ax in (ax_w, ax_r):
            if len(untouched):
                ax.axvspan(untouched[0] - 0.5, pairs[-1] + 0.5, color="0.93", zorder=0)
        (self.before,) = ax_w.semilogy(pairs, before, color="0.45", lw=1.2, gid="before", label="plain RoPE")
        (self.after,) = ax_w.semilogy(pairs, before, color="k", lw=0.8, gid="after",
                                      label="scaled (points coloured by kind)")  # fmt: skip
        self.points: dict[str, tuple[Any, Any]] = {}
        for kind, colour in _KIND_COLOURS.items():
            self.points[kind] = (
                ax_w.scatter([], [], s=14, color=colour, zorder=3),
                ax_r.scatter([], [], s=14, color=colour, zorder=3, gid=kind),
            )
        ax_w.axhline(
            original_len,
            color="k",
            ls="--",
            lw=1,
            gid="original",
            label=f"original length L = {original_len:,}",
        )
        self.target = ax_w.axhline(original_len, color="k", ls=":", lw=1, gid="target")
        ax_w.set_xlabel("pair i (0 = fastest); shaded: never a full turn within L")
        ax_w.set_ylabel("wavelength 2π / w_i (tokens)")
        ax_w.set_title("wavelength per pair: grey before, coloured after", fontsize=9)
        ax_r.axhline(1.0, color="tab:green", lw=0.8, ls="--")
        self.factor_line = ax_r.axhline(1.0, color="tab:blue", lw=0.8, ls="--")
        ax_r.set_yscale("log")
        ax_r.minorticks_off()
        ax_r.set_xlabel("pair i (0 = fastest)")
        ax_r.set_ylabel("w_i / w'_i (1 = kept, s = interpolated)")
        self.ratio_title = ax_r.set_title("", fontsize=9)
        for ax in (ax_w, ax_r):
            ax.set_xlim(-0.5, pairs[-1] + 0.5)
        self.suptitle = fig.suptitle("", fontsize=10)
        fig.subplots_adjust(left=0.06, right=0.99, bottom=0.11, top=0.84, wspace=0.2)

    def __call__(self, method: str, factor: float) -> Figure:
        inspection = scaling_inspection(
            method, factor, self.head_dim, self.base, self.original_len, betas=self.betas
        )
        factor = float(factor)
        before, after = (w.numpy() for w in inspection.wavelengths())
        ratio = inspection.ratio.numpy()
        kinds = np.array(inspection.kinds())
        pairs, ax_w, ax_r = self.pairs, self.ax_w, self.ax_r
        self.before.set_ydata(before)
        self.after.set_ydata(after)
        for kind, (on_w, on_r) in self.points.items():
            chosen = kinds == kind
            on_w.set_offsets(np.stack((pairs[chosen], after[chosen]), axis=1))
            on_r.set_offsets(np.stack((pairs[chosen], ratio[chosen]), axis=1))
            on_r.set_label(f"{kind}: {int(chosen.sum())}" if chosen.any() else f"_{kind}")  # "_": no legend
        self.target.set_ydata([factor * self.original_len] * 2)
        self.target.set_label(f"stretched length s·L = {factor * self.original_len:,.0f}")
        ax_w.relim()
        ax_w.autoscale_view(scalex=False)
        ax_w.legend(fontsize=8, loc="upper left")
        self.factor_line.set_ydata([factor] * 2)
        lo, hi = min(ratio.min(), 1.0) / 1.15, max(ratio.max(), factor) * 1.15
        ticks = sorted(
            {2.0**k for k in range(math.floor(math.log2(lo)), math.ceil(math.log2(hi)) + 1)} | {factor}
        )
        ax_r.set_yticks([t for t in ticks if lo <= t <= hi], [f"{t:g}" for t in ticks if lo <= t <= hi])
        ax_r.set_ylim(lo, hi)
        ax_r.legend(fontsize=8, loc="upper left")
        self.ratio_title.set_text(f"how much each pair is slowed down (dashed: 1 and s = {factor:g})")
        counts = inspection.counts()
        summary = ", ".join(f"{counts[k]} {k}" for k in _KIND_COLOURS if counts[k])
        self.suptitle.set_text(
            f"{inspection.name}, s = {factor:g}: head_dim {self.head_dim}, base {self.base:g}, "
            f"L = {self.original_len:,}\n"
            f"{summary} (of {len(pairs)} pairs); attention factor {inspection.attention_factor:.4g}"
        )
        return self.figure


def scaling_figure(
    method: str,
    factor: float,
    head_dim: int = 128,
    base: float = 500000.0,
    original_len: int = 8192,
    *,
    betas: tuple[float, float] = (32.0, 1.0),
) -> Figure:
    """What ``method`` at ``factor`` does to every frequency pair of a head (see ``scaling_inspection``).

    Left: each pair's wavelength ``2 pi / w_i`` in tokens before (grey line, gid ``"before"``) and after scaling
    (points coloured by kind, gid ``"after"``), log scale, with the original length ``L`` (gid ``"original"``)
    and the stretched one ``factor * L`` (gid ``"target"``): pairs whose plain wavelength exceeds ``L`` (shaded)
    never completed a turn in training. Right: the ratio ``rho_i = w_i / w'_i``, one scatter per kind (gids
    ``"kept"``, ``"blended"``, ``"interpolated"``, ``"beyond"``, ``"faster"``; a kind no pair has is an empty
    scatter, left out of the legend), with lines at 1 and at ``factor``. The title counts the pairs of each kind.
    Papers: PI arXiv 2306.15595; NTK-aware, NTK-by-parts and YaRN arXiv 2309.00071; Llama 3 arXiv 2407.21783
    (the band rule is in Meta's code).
    """
    # a bad method or factor is an error before anything is drawn
    scaling_dict(method, factor, original_len, betas=betas)
    return _ScalingView(head_dim, base, original_len, betas=betas)(method, factor)


def scaling_explorer(
    head_dim: int = 128,
    base: float = 500000.0,
    original_len: int = 8192,
    *,
    betas: tuple[float, float] = (32.0, 1.0),
    method: str = "llama3",
    factor: float = 8.0,
) -> Explorer:
    """Per-pair effect of a scaling method, with a ``method`` menu and a ``factor`` slider (log scale, 1 to 64);
    see ``scaling_figure``. Defaults: Llama 3.1 8B's head with its own method and factor."""
    _check_dim("head_dim", head_dim)
    base = check_base("base", base)
    check_positive_int("original_len", original_len)
    _check_betas(betas)
    check_choice("method", method, tuple(SCALING_EXPLORER_METHODS))
    factor = _check_factor(factor)
    controls = {
        "method": widgets.Dropdown(
            options=[(label, name) for name, label in SCALING_EXPLORER_METHODS.items()],
            value=method,
            description="method",
            layout=widgets.Layout(width="360px"),
        ),
        "factor": widgets.FloatLogSlider(
            value=factor,
            base=2,
            min=0,
            max=max(6, math.log2(factor)),
            step=0.25,
            description="factor s",
            continuous_update=False,
            readout_format=".3g",
            layout=widgets.Layout(width="360px"),
        ),
    }
    view = _ScalingView(head_dim, base, original_len, betas=betas)  # one figure, updated in place
    return Explorer(view, controls, name="scaling")
