"""Notebook 02's explorer: the sinusoidal position encoding as clocks, one hand per frequency pair.

Pair ``i`` of ``PE(p)`` is the point ``(sin, cos)`` of the angle ``p * base**(-2i/dim)``: a hand that turns once
every ``2 pi * base**(2i/dim)`` positions (Vaswani et al. 2017, arXiv 1706.03762). Fast hands tell near
positions apart, slow hands far ones.
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.patches import Circle

from posref._checks import check_base, check_positive_int
from posref.absolute import sinusoidal_frequencies
from posref.explorers.base import Explorer, check_dim, check_position, int_slider, new_figure
from posref.i18n import _

__all__ = ["fingerprint_angles", "fingerprint_explorer", "fingerprint_figure"]


def _format_length(x: float) -> str:
    """A wavelength in positions, short: 6.28, 84.3, 5.4k, 54k."""
    if x < 10:
        return f"{x:.2f}"
    if x < 1000:
        return f"{x:.1f}"
    if x < 10000:
        return f"{x / 1000:.1f}k"
    return f"{x / 1000:.0f}k"


def fingerprint_angles(position: float, dim: int = 64, base: float = 10000.0) -> np.ndarray:
    """Hand angles of the clocks at ``position`` -> ``(dim/2,)`` float64 in ``[0, 2*pi)``.

    Hand ``i`` is the ``(sin, cos)`` pair ``i`` of the sinusoidal PE (arXiv 1706.03762): its angle is
    ``position * base**(-2i/dim) mod 2*pi`` with the float32 frequencies that ``sinusoidal_pe`` uses.
    """
    position = check_position("position", position)
    freqs = sinusoidal_frequencies(check_dim("dim", dim), base=check_base("base", base)).double().numpy()
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
    fig = new_figure((1.25 * ncols + 0.4, 1.5 * nrows + 0.9))
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
        _(
            "Position fingerprint: PE({position:g}), dim={dim}, base={base:g}\n"
            "hand i turns once every λ_i = 2π·base^(2i/dim) positions (fastest {fastest}, slowest {slowest})"
        ).format(
            position=position,
            dim=dim,
            base=base,
            fastest=_format_length(wavelengths[0]),
            slowest=_format_length(wavelengths[-1]),
        ),
        fontsize=9,
    )
    height = 1.5 * nrows + 0.9
    fig.subplots_adjust(left=0.01, right=0.99, bottom=0.02, top=1 - 0.62 / height)  # fixed margins: fast
    return fig


def fingerprint_explorer(
    dim: int = 64, base: float = 10000.0, max_position: int = 200, *, position: int = 37
) -> Explorer:
    """The position fingerprint with a ``position`` slider in ``[0, max_position]`` (see ``fingerprint_figure``).

    It starts at ``position`` (default 37, clipped to ``max_position``): there the fast hands point every way and
    the slow ones still up, which is what its static figure shows (at 0 every hand points up).
    """
    check_dim("dim", dim)
    check_base("base", base)
    check_positive_int("max_position", max_position)
    start = min(int(check_position("position", position)), max_position)
    position = int_slider(_("position p"), start, 0, max_position)
    return Explorer(
        fingerprint_figure, {"position": position}, name="fingerprint", fixed={"dim": dim, "base": base}
    )
