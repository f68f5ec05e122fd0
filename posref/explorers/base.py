"""What every explorer is built from: the ``Explorer`` widget, ``figure_png``, slider makers and argument checks.

An explorer is two things:

* a pure *figure function* (plain arguments -> ``matplotlib.figure.Figure``). It touches no pyplot state, so it
  draws the same under any backend (headless Agg included);
* an ``Explorer`` widget (an ``ipywidgets.VBox`` of sliders above an ``Output``) that calls a draw function
  again whenever a slider is released (``continuous_update=False``: one redraw per move). A draw function may
  return a new figure or the same one updated in place (artists' ``set_data``): the heaviest explorers keep one
  figure between moves, which saves building it again.

The PNG of the last figure is placed in the ``Output`` directly (not through ``plt.show()``), so redraws work
from a kernel callback, from a plain Python process (tests) and under any matplotlib backend alike. The same
PNG is the explorer's static figure (``static_figure``): the ``image/png`` entry of its display bundle, which
is what a viewer without a widget manager shows. All figure text is English.
"""

from __future__ import annotations

import base64
import io
import math
import numbers
from collections.abc import Callable, Mapping
from typing import Any

import ipywidgets as widgets
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from posref._checks import check_positive_int

__all__ = [
    "DPI",
    "SLIDER_WIDTH",
    "Explorer",
    "check_dim",
    "check_index",
    "check_position",
    "figure_png",
    "int_slider",
    "log_slider",
    "static_figure",
]

# dots per inch of every explorer figure (the figure sizes are in inches)
DPI = 100
SLIDER_WIDTH = "360px"


def check_position(name: str, value: object) -> float:
    """``value`` as a float if it is a finite real number >= 0 (a token position), else a ``ValueError``."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not math.isfinite(value)
        or value < 0
    ):
        raise ValueError(f"{name} must be a finite number >= 0 (a token position), got {value!r}")
    return float(value)


def check_index(name: str, value: object, size: int, what: str) -> int:
    """``value`` as an int if it is an integer in ``[0, size)``; ``what`` says what it indexes."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 0 <= value < size:
        raise ValueError(f"{name} must be an int in [0, {size}) ({what}), got {value!r}")
    return int(value)


def check_dim(name: str, value: object) -> int:
    """``value`` as an int if it is a positive even integer (a dimension encoded in pairs)."""
    check_positive_int(name, value)
    if value % 2:  # type: ignore[operator]
        raise ValueError(f"{name} must be even (positions are encoded in pairs of dims), got {value}")
    return int(value)  # type: ignore[arg-type]


def figure_png(fig: Figure) -> bytes:
    """Render ``fig`` to PNG bytes with the Agg canvas (headless; needs no pyplot backend).

    A figure rendered before keeps its canvas, whose renderer caches text layouts, so rendering a figure updated
    in place reuses them.
    """
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    canvas.print_png(buffer)
    return buffer.getvalue()


def static_figure(png: bytes) -> dict[str, str]:
    """The static copy of an explorer's figure as display data: ``{"image/png": base64, "text/plain": ...}``.

    The one place that says what a viewer without a widget manager gets: the ``Output`` shows it, and the
    explorer's display bundle carries its ``image/png``.
    """
    return {"image/png": base64.b64encode(png).decode("ascii"), "text/plain": "<posref explorer figure>"}


class Explorer(widgets.VBox):
    """Sliders above an ``Output`` that shows ``draw(**fixed, **slider values)``; redrawn when a slider is released.

    ``draw`` returns a ``Figure``: a new one, or the same one updated in place (a figure kept between moves).
    ``name`` gives the CSS classes ``posref-explorer`` and ``posref-<name>-explorer`` (a browser test finds one
    explorer among several in a notebook by them).

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
        self.output.outputs = ({"output_type": "display_data", "data": static_figure(png), "metadata": {}},)
        return fig

    def _on_change(self, change: dict[str, Any]) -> None:
        if not self._holding:
            self.redraw()

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        # the static figure for viewers without a widget manager (e.g. HTML without widget state)
        data = super()._repr_mimebundle_(**kwargs)
        if isinstance(data, dict) and self.png:
            data["image/png"] = static_figure(self.png)["image/png"]
        return data


def int_slider(description: str, value: int, lo: int, hi: int) -> widgets.IntSlider:
    """An integer slider in ``[lo, hi]`` that reports only when released (one redraw per move)."""
    return widgets.IntSlider(
        value=value,
        min=lo,
        max=hi,
        step=1,
        description=description,
        continuous_update=False,
        style={"description_width": "initial"},
        layout=widgets.Layout(width=SLIDER_WIDTH),
    )


def log_slider(
    description: str, value: float, *, base: float, lo: float, hi: float, step: float
) -> widgets.FloatLogSlider:
    """A slider of ``base**x`` for ``x`` in ``[lo, hi]`` in steps of ``step``, reported when released."""
    return widgets.FloatLogSlider(
        value=value,
        base=base,
        min=lo,
        max=hi,
        step=step,
        description=description,
        continuous_update=False,
        readout_format=".3g",
        layout=widgets.Layout(width=SLIDER_WIDTH),
    )
