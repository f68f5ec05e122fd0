"""What every explorer is built from: the ``Explorer`` widget, ``figure_png``, slider makers and argument checks.

An explorer is two things:

* a pure *figure function* (plain arguments -> ``matplotlib.figure.Figure``). It touches no pyplot state, so it
  draws the same under any backend (headless Agg included);
* an ``Explorer`` widget (an ``ipywidgets.VBox`` of sliders above an ``Output``) that calls a draw function
  again whenever a slider is released (``continuous_update=False``: one redraw per move). A draw function may
  return a new figure or the same one updated in place (artists' ``set_data``): the heaviest explorers keep one
  figure between moves, which saves building it again.

The PNG of the last figure is placed in the ``Output`` directly (not through ``plt.show()``), so redraws work
from a kernel callback, from a plain Python process (tests) and under any matplotlib backend alike.

Displayed in a notebook, an explorer leaves two outputs: the widget view, then its *static figure*
(``static_figure``): an HTML ``<figure>`` of the PNG drawn when it was displayed. A viewer without the widget's
live model still shows that picture: an HTML export (nbconvert keeps only the view's ``<script>`` tags, which
draw nothing offline) and a saved notebook re-opened without the widget's model (a new kernel, or a reload of the
page that lost the race for it: JupyterLab answers "Error displaying widget: model not found" and falls back to
no other entry of the view's bundle). CSS shipped inside the static figure (``STATIC_CSS``) shows exactly one of
the two: where the widget rendered (the output holds a ``.posref-explorer``) it hides the static figure after it;
where it did not, it hides the view's output (the error, or nothing yet while the widget loads) and the picture
stays. All figure text is English.

While grading (``POSREF_GRADING=1``: the autograder runs every cell of a notebook, and no figure is graded) an
explorer draws nothing by itself: its arguments are checked and its sliders built as always, but it makes no
figure when it is created or when a slider moves (``figure`` stays ``None``, ``png`` empty, ``redraws`` 0), and
displayed it shows one line of text. ``redraw()`` and ``set()`` still draw: their caller asks for the figure.
"""

from __future__ import annotations

import base64
import html
import io
import math
import numbers
from collections.abc import Callable, Mapping
from typing import Any

import ipywidgets as widgets
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from posref._checks import check_positive_int
from posref._env import flag
from posref.explorers.fonts import use_language_font
from posref.i18n import N_, _

__all__ = [
    "DPI",
    "SLIDER_WIDTH",
    "STATIC_CLASS",
    "STATIC_CSS",
    "Explorer",
    "check_dim",
    "check_index",
    "check_position",
    "figure_png",
    "int_slider",
    "kept_view",
    "log_slider",
    "static_figure",
]

# dots per inch of every explorer figure (the figure sizes are in inches)
DPI = 100
SLIDER_WIDTH = "360px"


def new_figure(figsize: tuple[float, float]) -> Figure:
    """An explorer's figure of ``figsize`` inches at ``DPI``, with a font for the language posref speaks
    (``fonts.use_language_font``): make it before writing any text."""
    use_language_font()
    return Figure(figsize=figsize, dpi=DPI)


def check_position(name: str, value: object) -> float:
    """``value`` as a float if it is a finite real number >= 0 (a token position), else a ``ValueError``."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not math.isfinite(value)
        or value < 0
    ):
        raise ValueError(
            _("{name} must be a finite number >= 0 (a token position), got {value!r}").format(
                name=name, value=value
            )
        )
    return float(value)


def check_index(name: str, value: object, size: int, what: str) -> int:
    """``value`` as an int if it is an integer in ``[0, size)``; ``what`` says what it indexes."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 0 <= value < size:
        raise ValueError(
            _("{name} must be an int in [0, {size}) ({what}), got {value!r}").format(
                name=name, size=size, what=what, value=value
            )
        )
    return int(value)


def check_dim(name: str, value: object) -> int:
    """``value`` as an int if it is a positive even integer (a dimension encoded in pairs)."""
    check_positive_int(name, value)
    if value % 2:  # type: ignore[operator]
        raise ValueError(
            _("{name} must be even (positions are encoded in pairs of dims), got {value}").format(
                name=name, value=value
            )
        )
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


# The class of an explorer's static figure, and the CSS that shows one of the view and the picture (JupyterLab and
# nbconvert's lab template: .jp-OutputArea-child; the classic notebook: .output_area): where the view rendered an
# explorer, the output right after it (the picture) is hidden; where it did not (a failed view, "Error displaying
# widget: model not found", has no .posref-explorer), the view's output right before the picture is hidden.
STATIC_CLASS = "posref-static-figure"
STATIC_CSS = (
    ", ".join(
        f"{area}:has(.posref-explorer) + {area}:has(.{STATIC_CLASS}),"
        f" {area}:not(:has(.posref-explorer)):has(+ {area} .{STATIC_CLASS})"
        for area in (".jp-OutputArea-child", ".output_area")
    )
    + " { display: none; }"
)
STATIC_CAPTION = N_("Picture of the explorer as first drawn: run the notebook to move its controls.")


def static_figure(png: bytes, name: str = "posref.explorers") -> dict[str, str]:
    """An explorer's static figure as display data: ``{"text/html": ..., "text/plain": ...}``.

    The HTML is a ``<figure class="posref-static-figure">`` holding the PNG inline (``data:`` URL: an export needs
    no other file) with a one-line caption, preceded by ``STATIC_CSS`` in a ``<style>`` (JupyterLab strips the
    ``<style>`` of an untrusted notebook, whose widget view it does not render either: the picture shows).
    """
    if not png.startswith(b"\x89PNG"):
        raise ValueError(
            _("png must be the bytes of a PNG image (figure_png), got {png!r}").format(png=png[:8])
        )
    data = base64.b64encode(png).decode("ascii")
    said = _("<{name}: static figure>").format(name=name)
    alt = html.escape(said.strip("<>"), quote=True)
    markup = (
        f"<style>{STATIC_CSS}</style>"
        f'<figure class="{STATIC_CLASS}" style="margin: 0">'
        f'<img src="data:image/png;base64,{data}" alt="{alt}"/>'
        f'<figcaption style="font-size: 85%; color: #555">{html.escape(_(STATIC_CAPTION))}</figcaption>'
        "</figure>"
    )
    return {"text/html": markup, "text/plain": said}


def _png_output(png: bytes) -> dict[str, Any]:
    """The ``Output`` widget's content: the PNG itself (what the live explorer shows)."""
    data = {"image/png": base64.b64encode(png).decode("ascii"), "text/plain": "<posref explorer figure>"}
    return {"output_type": "display_data", "data": data, "metadata": {}}


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
        self._explorer_name = f"{name.replace('-', '_')}_explorer()"  # the function that made it: code
        for key, control in self.controls.items():
            if hasattr(self, key):
                raise ValueError(
                    _("control name {key!r} clashes with an attribute of the explorer widget").format(key=key)
                )
            setattr(self, key, control)
            control.observe(self._on_change, names="value")
        self.children = [widgets.HBox(list(self.controls.values())), self.output]
        self.add_class("posref-explorer")
        self.add_class(f"posref-{name}-explorer")
        self._grading = flag(
            "POSREF_GRADING"
        )  # no figure of its own while grading (see the module docstring)
        if not self._grading:
            self.redraw()

    def set(self, **values: Any) -> Figure:
        """Move several sliders at once and redraw once, e.g. ``explorer.set(m=3, n=8)``."""
        unknown = sorted(set(values) - set(self.controls))
        if unknown:
            raise ValueError(
                _("unknown control(s) {unknown}; this explorer has {controls}").format(
                    unknown=unknown, controls=sorted(self.controls)
                )
            )
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
        if not self._holding and not self._grading:
            self.redraw()

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        # the widget view, with a text/plain that says what it is (not the VBox's repr)
        data = super()._repr_mimebundle_(**kwargs)
        if isinstance(data, dict):
            data["text/plain"] = _("<{name}: its controls need a running kernel>").format(
                name=self._explorer_name
            )
        return data

    def _ipython_display_(self) -> None:
        """``display(explorer)`` (or an explorer last in a cell): the widget view, then its static figure."""
        from IPython.display import display

        if not self.png:  # never drawn (while grading): no picture to show
            said = _("<{name}: not drawn while grading>").format(name=self._explorer_name)
            display({"text/plain": said}, raw=True)
            return
        display(self._repr_mimebundle_(), raw=True)
        display(static_figure(self.png, self._explorer_name), raw=True)


def kept_view(make: Callable[[], Callable[..., Figure]]) -> Callable[..., Figure]:
    """A draw function over the view ``make()`` returns (a figure kept between moves, updated in place), made at the
    first draw: an explorer that never draws (while grading) never builds its figure."""
    view: Callable[..., Figure] | None = None

    def draw(**values: Any) -> Figure:
        nonlocal view
        if view is None:
            view = make()
        return view(**values)

    return draw


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
