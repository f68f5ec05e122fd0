"""Notebook 07b's explorer: what a context-extension method does to each frequency pair of a head.

Each pair is kept, blended or interpolated (``posref.inspector``'s classification). The methods offered are read
from the registry (``scaling_menu``): today PI (arXiv 2306.15595), NTK-aware, NTK-by-parts and YaRN (arXiv
2309.00071) and Llama 3 (arXiv 2407.21783; the band rule is in Meta's code). The figure is built once by the
explorer and updated in place when the method or the factor changes.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure

from posref._checks import check_base, check_choice, check_positive_int
from posref.config import RopeConfig
from posref.explorers.base import SLIDER_WIDTH, Explorer, check_dim, kept_view, new_figure
from posref.i18n import _
from posref.inspector import PAIR_KIND_NAMES, Inspection, inspect_rope
from posref.scaling import ORIGINAL_LEN_KEY, SCALING_METHODS

__all__ = [
    "scaling_dict",
    "scaling_explorer",
    "scaling_figure",
    "scaling_inspection",
    "scaling_menu",
]


BETAS = ("beta_fast", "beta_slow")
# what the factor slider offers (with the explorer's own factor): round factors from 1 to 64, each shown on the
# slider as the figure's title writes it (``:g``), so that the two never disagree (a log slider's readout rounds:
# 2**4.25 read 19.0 where the title said s = 19.0273)
FACTORS = (1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0, 40.0, 48.0, 64.0)
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
            _(
                "factor must be a finite number >= 1 (how much the context is stretched), got {factor!r}"
            ).format(factor=factor)
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
            _(
                "betas must be (beta_fast, beta_slow), two numbers > 0 with beta_fast > beta_slow (turns within the original length; YaRN's defaults are (32, 1)), got {betas!r}"
            ).format(betas=betas)
        )
    return float(betas[0]), float(betas[1])


def scaling_menu() -> dict[str, str]:
    """The methods the explorer offers -> ``{rope_type: label}``, in the registry's order.

    Every registered method whose one dial is its factor: ``factor`` required and no dependence on the current
    length (Dynamic NTK is NTK-aware with a factor grown from the length; LongRoPE has searched per-pair factors
    instead). Its other keys come from the method's ``example`` (Llama 3.1's bands for ``llama3``), the training
    length and the betas from the explorer's arguments.
    """
    return {
        name: f"{name} ({method.title})"
        for name, method in SCALING_METHODS.items()
        if "factor" in method.required and not method.length_dependent
    }


def scaling_dict(
    method: str, factor: float, original_len: int, *, betas: tuple[float, float] = (32.0, 1.0)
) -> dict[str, Any]:
    """The ``rope_scaling`` dict the scaling explorer uses for ``method`` at ``factor`` -> a posref scaling dict.

    ``method`` is one of ``scaling_menu()``. The dict is the method's ``example`` with ``factor``, with
    ``original_len`` as ``L`` if the method reads it, and with ``betas = (beta_fast, beta_slow)`` if it accepts
    them (``ntk_by_parts``, ``yarn``).
    """
    check_choice("method", method, tuple(scaling_menu()))
    factor = _check_factor(factor)
    check_positive_int("original_len", original_len)
    beta_fast, beta_slow = _check_betas(betas)
    registered = SCALING_METHODS[method]
    params = {**registered.example, "factor": factor}
    if registered.needs_original_len:
        params[ORIGINAL_LEN_KEY] = original_len
    if set(BETAS) <= registered.accepted:
        params.update(beta_fast=beta_fast, beta_slow=beta_slow)
    return {"rope_type": method, **params}


def _name(method: str) -> str:
    """The menu's label and the keys taken from the method's example, e.g. ``llama3 (Llama 3),
    low_freq_factor=1.0, high_freq_factor=4.0``."""
    example = SCALING_METHODS[method].example
    taken = [f"{key}={value}" for key, value in example.items() if key not in ("factor", ORIGINAL_LEN_KEY)]
    return ", ".join([scaling_menu()[method], *taken])


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
    check_dim("head_dim", head_dim)
    scaling = scaling_dict(method, factor, original_len, betas=betas)
    rope = RopeConfig(head_dim=head_dim, base=check_base("base", base), scaling=scaling)
    return inspect_rope(rope, name=_name(method))


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
        self.head_dim = check_dim("head_dim", head_dim)
        self.base = check_base("base", base)
        self.original_len = check_positive_int("original_len", original_len)
        self.betas = _check_betas(betas)
        plain = scaling_inspection("linear", 1.0, head_dim, base, original_len, betas=betas)
        before = plain.wavelengths()[0].numpy()
        self.pairs = pairs = np.arange(len(before))

        fig = self.figure = new_figure((12, 4.9))
        ax_w, ax_r = self.ax_w, self.ax_r = fig.subplots(1, 2)
        untouched = pairs[before > original_len]
        for ax in (ax_w, ax_r):
            if len(untouched):
                ax.axvspan(untouched[0] - 0.5, pairs[-1] + 0.5, color="0.93", zorder=0)
        (self.before,) = ax_w.semilogy(
            pairs, before, color="0.45", lw=1.2, gid="before", label=_("plain RoPE")
        )
        (self.after,) = ax_w.semilogy(pairs, before, color="k", lw=0.8, gid="after",
                                      label=_("scaled (points coloured by kind)"))  # fmt: skip
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
            label=_("original length L = {length:,}").format(length=original_len),
        )
        self.target = ax_w.axhline(original_len, color="k", ls=":", lw=1, gid="target")
        ax_w.set_xlabel(_("pair i (0 = fastest); shaded: never a full turn within L"))
        ax_w.set_ylabel(_("wavelength 2π / w_i (tokens)"))
        ax_w.set_title(_("wavelength per pair: grey before, coloured after"), fontsize=9)
        ax_r.axhline(1.0, color="tab:green", lw=0.8, ls="--")
        self.factor_line = ax_r.axhline(1.0, color="tab:blue", lw=0.8, ls="--")
        ax_r.set_yscale("log")
        ax_r.minorticks_off()
        ax_r.set_xlabel(_("pair i (0 = fastest)"))
        ax_r.set_ylabel(_("w_i / w'_i (1 = kept, s = interpolated)"))
        self.ratio_title = ax_r.set_title("", fontsize=9)
        for ax in (ax_w, ax_r):
            ax.set_xlim(-0.5, pairs[-1] + 0.5)
        self.suptitle = fig.suptitle("", fontsize=10)
        fig.subplots_adjust(left=0.06, right=0.99, bottom=0.17, top=0.85, wspace=0.2)

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
            name = _(PAIR_KIND_NAMES[kind])
            on_r.set_label(
                _("{kind}: {n}").format(kind=name, n=int(chosen.sum())) if chosen.any() else f"_{kind}"
            )
        self.target.set_ydata([factor * self.original_len] * 2)
        self.target.set_label(
            _("stretched length s·L = {length:,.0f}").format(length=factor * self.original_len)
        )
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
        # below the axes: inside, it covered the points at s of methods that slow every pair (linear)
        ax_r.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=3)
        self.ratio_title.set_text(
            _("how much each pair is slowed down (dashed: 1 and s = {factor:g})").format(factor=factor)
        )
        counts = inspection.counts()
        summary = _(", ").join(
            _("{n} {kind}").format(n=counts[k], kind=_(PAIR_KIND_NAMES[k]))
            for k in _KIND_COLOURS
            if counts[k]
        )
        self.suptitle.set_text(
            _("{name}, s = {factor:g}: head_dim {head_dim}, base {base:g}, L = {length:,}").format(
                name=inspection.name,
                factor=factor,
                head_dim=self.head_dim,
                base=self.base,
                length=self.original_len,
            )
            + "\n"
            + _("{summary} (of {n} pairs); attention factor {attention_factor:.4g}").format(
                summary=summary, n=len(pairs), attention_factor=inspection.attention_factor
            )
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


def factor_slider(factor: float) -> widgets.SelectionSlider:
    """A slider over ``FACTORS`` and ``factor`` (which it starts at), reported when released; each value's label is
    the value as the figure's title writes it."""
    values = sorted({*FACTORS, factor})
    return widgets.SelectionSlider(
        options=[(f"{value:g}", value) for value in values],
        value=factor,
        description=_("factor s"),
        continuous_update=False,
        layout=widgets.Layout(width=SLIDER_WIDTH),
    )


def scaling_explorer(
    head_dim: int = 128,
    base: float = 500000.0,
    original_len: int = 8192,
    *,
    betas: tuple[float, float] = (32.0, 1.0),
    method: str = "llama3",
    factor: float = 8.0,
) -> Explorer:
    """Per-pair effect of a scaling method, with a ``method`` menu and a ``factor`` slider (``FACTORS``, 1 to 64);
    see ``scaling_figure``. Defaults: Llama 3.1 8B's head with its own method and factor."""
    check_dim("head_dim", head_dim)
    base = check_base("base", base)
    check_positive_int("original_len", original_len)
    _check_betas(betas)
    menu = scaling_menu()
    check_choice("method", method, tuple(menu))
    factor = _check_factor(factor)
    controls = {
        "method": widgets.Dropdown(
            options=[(label, name) for name, label in menu.items()],
            value=method,
            description=_("method"),
            layout=widgets.Layout(width=SLIDER_WIDTH),
        ),
        "factor": factor_slider(factor),
    }
    view = kept_view(lambda: _ScalingView(head_dim, base, original_len, betas=betas))  # one figure, in place
    return Explorer(view, controls, name="scaling")
