"""The class pages' plots: matplotlib figures written as inline SVG (no file beside the page, no script).

Text in the plots is the instructor's (grade ids from the source notebook, numbers): nothing a student wrote is
drawn. Glyphs are drawn as paths (``svg.fonttype = "path"``), so the page needs no font, and ``svg.hashsalt`` makes
the SVG's ids the same on every run (a page made twice from the same class is the same file). No label is read as
mathtext (``text.parse_math``): a ``$`` in a grade id is a dollar sign, never a formula that fails to parse.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Callable, Sequence

from markupsafe import Markup

WIDTH, HEIGHT = 5.2, 2.6  # inches


STYLE = {"svg.fonttype": "path", "svg.hashsalt": "posref-class", "font.size": 8, "text.parse_math": False}


def _styled(draw: Callable[..., Markup]) -> Callable[..., Markup]:
    """``draw`` with ``STYLE`` in force from the figure's first label to its SVG."""

    @functools.wraps(draw)
    def styled(*args, **kwargs) -> Markup:
        import matplotlib

        with matplotlib.rc_context(STYLE):
            return draw(*args, **kwargs)

    return styled


def _svg(figure) -> Markup:
    out = io.StringIO()
    figure.savefig(out, format="svg", bbox_inches="tight")
    svg = out.getvalue()
    return Markup(svg[svg.index("<svg") :])  # without the XML declaration and doctype


def _figure():
    from matplotlib.figure import Figure  # no pyplot: no GUI backend, no global state

    figure = Figure(figsize=(WIDTH, HEIGHT))
    return figure, figure.add_subplot()


@_styled
def histogram(
    bins: Sequence[tuple[float, float, int]], title: str, xlabel: str, ylabel: str = "students"
) -> Markup:
    """Bars of ``(low, high, count)`` bins: counts of ``ylabel``."""
    figure, ax = _figure()
    ax.bar([low for low, _, _ in bins], [n for _, _, n in bins], width=[high - low for low, high, _ in bins],
           align="edge", color="#4c78a8", edgecolor="white")  # fmt: skip
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.yaxis.get_major_locator().set_params(integer=True)
    return _svg(figure)


@_styled
def bars(
    labels: Sequence[str], values: Sequence[float], title: str, ylabel: str, top: float | None = None
) -> Markup:
    """One bar per label (grade ids, score values)."""
    figure, ax = _figure()
    positions = range(len(labels))
    ax.bar(positions, values, color="#4c78a8")
    ax.set_xticks(
        list(positions),
        list(labels),
        rotation=35 if len(labels) > 5 else 0,
        ha="right" if len(labels) > 5 else "center",
    )
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    if top is not None:
        ax.set_ylim(0, top)
    return _svg(figure)
