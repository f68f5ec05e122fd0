"""posref.explorers.base: the Explorer widget driven from Python, its static figure, and what makes the heavy
explorers' slider moves cheap (one figure kept and redrawn on its own canvas, never rebuilt).

No test here reads a clock: how much a kept figure saves is measured by ``python -m posref.bench --suite
explorers`` (a ratio within one run).
"""

from __future__ import annotations

import base64
import re

import ipywidgets as widgets
import pytest
from explorer_helpers import run_headless, shown_png
from matplotlib.figure import Figure

from posref.explorers import (
    bias_heatmap_explorer,
    decay_explorer,
    fingerprint_explorer,
    fingerprint_figure,
    rope_pair_explorer,
    scaling_explorer,
)
from posref.explorers.base import STATIC_CLASS, STATIC_CSS, Explorer, figure_png, int_slider, static_figure


def counting_explorer() -> tuple[Explorer, list[dict]]:
    """An explorer over a draw function that records every call's arguments."""
    calls: list[dict] = []

    def draw(**values) -> Figure:
        calls.append(values)
        fig = Figure(figsize=(2, 1))
        fig.text(0.5, 0.5, repr(values))
        return fig

    controls = {"a": int_slider("a", 0, 0, 9), "b": int_slider("b", 0, 0, 9)}
    return Explorer(draw, controls, name="counting", fixed={"c": "fixed"}), calls


def test_an_explorer_draws_once_per_move_with_its_fixed_arguments() -> None:
    explorer, calls = counting_explorer()
    assert calls == [{"c": "fixed", "a": 0, "b": 0}] and explorer.redraws == 1
    assert explorer.a is explorer.controls["a"] and explorer.a.continuous_update is False
    explorer.b.value = 4
    assert calls[-1] == {"c": "fixed", "a": 0, "b": 4} and explorer.redraws == 2
    explorer.set(a=7, b=1)  # two sliders, one redraw
    assert calls[-1] == {"c": "fixed", "a": 7, "b": 1} and explorer.redraws == 3
    assert explorer.values() == {"a": 7, "b": 1}
    assert shown_png(explorer) == explorer.png == figure_png(explorer.figure)
    with pytest.raises(ValueError, match=r"unknown control\(s\) \['z'\]; this explorer has \['a', 'b'\]"):
        explorer.set(z=3)
    assert explorer.redraws == 3


def test_a_control_may_not_hide_an_attribute_of_the_widget() -> None:
    with pytest.raises(ValueError, match="control name 'children' clashes"):
        Explorer(lambda children: Figure(), {"children": int_slider("c", 0, 0, 1)}, name="clash")


def _displayed(explorer) -> list[dict]:
    """What ``display(explorer)`` publishes in a notebook: the data of each output, in order."""
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.display import display
    from IPython.utils.capture import capture_output

    InteractiveShell.instance()
    with capture_output() as captured:
        display(explorer)
    return [output.data for output in captured.outputs]


def test_display_leaves_the_widget_view_then_a_static_figure_of_the_current_png() -> None:
    explorer = fingerprint_explorer(dim=8)
    explorer.set(position=11)
    view, static = _displayed(explorer)
    assert "application/vnd.jupyter.widget-view+json" in view
    assert "image/png" not in view  # nbconvert would pick it beside the static figure: two pictures
    assert view["text/plain"] == "<fingerprint_explorer(): its controls need a running kernel>"
    markup = static["text/html"]
    assert "application/vnd.jupyter.widget-view+json" not in static
    (src,) = re.findall(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"', markup)
    assert base64.b64decode(src) == explorer.png == figure_png(fingerprint_figure(11, 8))
    assert f'<figure class="{STATIC_CLASS}"' in markup and f"<style>{STATIC_CSS}</style>" in markup
    assert "posref-explorer" in explorer._dom_classes
    assert "posref-fingerprint-explorer" in explorer._dom_classes
    assert isinstance(explorer.children[0], widgets.HBox) and explorer.children[1] is explorer.output


def test_the_static_css_shows_either_the_rendered_explorer_or_its_picture() -> None:
    # per output area (JupyterLab and nbconvert's lab template, then the classic notebook): the picture after a
    # rendered explorer is hidden; the view's output before the picture is hidden where it holds no explorer (the
    # "model not found" error). A browser test shows both: test_static_figures.py
    rules = [part.strip() for part in STATIC_CSS.split("{")[0].split(",")]
    expected = []
    for area in (".jp-OutputArea-child", ".output_area"):
        expected += [
            f"{area}:has(.posref-explorer) + {area}:has(.{STATIC_CLASS})",
            f"{area}:not(:has(.posref-explorer)):has(+ {area} .{STATIC_CLASS})",
        ]
    assert rules == expected
    assert STATIC_CSS.endswith("{ display: none; }")


def test_static_figure_wants_png_bytes() -> None:
    with pytest.raises(ValueError, match="png must be the bytes of a PNG image"):
        static_figure(b"GIF89a", "x")


@pytest.mark.parametrize(
    ("make", "moves"),
    [
        (rope_pair_explorer, [{"m": 4, "n": 7}, {"pair": 2}, {"m": 30, "n": 1}]),
        (bias_heatmap_explorer, [{"head": 3}, {"head": 7}, {"head": 0}]),
        (scaling_explorer, [{"method": "yarn"}, {"factor": 2.0}, {"method": "linear", "factor": 32.0}]),
    ],
    ids=["rope_pair", "bias", "scaling"],
)
def test_heavy_explorers_redraw_one_figure_on_one_canvas_and_never_rebuild_it(
    make, moves, monkeypatch
) -> None:
    # what makes a move cheap: no Figure is built, the Agg canvas (and its renderer, which caches text layouts)
    # is the one the first render made, and no artist piles up (each move sets data on the artists it has)
    explorer = make()
    figure, canvas = explorer.figure, explorer.figure.canvas
    renderer = canvas.get_renderer()
    artists = [len(ax.get_children()) for ax in figure.axes]
    built = []
    original_init = Figure.__init__

    def counting_init(self, *args, **kwargs):
        built.append(self)
        original_init(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "__init__", counting_init)
    for values in moves:
        png = explorer.png
        explorer.set(**values)
        assert explorer.png != png, f"{values}: the picture did not change"
    monkeypatch.undo()
    assert built == [], f"{len(built)} figure(s) built by {len(moves)} slider moves"
    assert explorer.figure is figure and figure.canvas is canvas
    assert canvas.get_renderer() is renderer
    assert [len(ax.get_children()) for ax in figure.axes] == artists


HEADLESS = """
import sys
import matplotlib
from posref import explorers as E

explorers = [E.fingerprint_explorer(), E.rope_pair_explorer(), E.bias_heatmap_explorer(), E.decay_explorer(),
             E.scaling_explorer()]
changes = [("position", 50), ("m", 9), ("head", 4), ("seed", 2), ("method", "ntk")]
for explorer, (name, value) in zip(explorers, changes, strict=True):
    before = explorer.png
    explorer.controls[name].value = value
    assert explorer.png[:8] == b"\\x89PNG\\r\\n\\x1a\\n" and explorer.png != before, name
assert matplotlib.get_backend().lower() == "agg", matplotlib.get_backend()
assert "matplotlib.pyplot" not in sys.modules, "the explorers must not touch pyplot state"
print("headless ok")
"""


def test_every_explorer_works_headless() -> None:
    run_headless(HEADLESS)


def _legends_over_data(fig: Figure) -> list[str]:
    """Each legend of ``fig`` that covers data of its axes: a line's vertex, a scatter point or an image."""
    renderer = fig.canvas.get_renderer()
    found = []
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None:
            continue
        box = legend.get_window_extent(renderer)
        if ax.images and box.overlaps(ax.get_window_extent(renderer)):
            found.append(f"{ax.get_title()!r}: over the image")
        points = [
            line.get_transform().transform(line.get_xydata()) for line in ax.lines if line.get_visible()
        ]
        points += [
            c.get_offset_transform().transform(c.get_offsets())
            for c in ax.collections
            if len(c.get_offsets())
        ]
        for xy in points:
            inside = (xy[:, 0] > box.x0) & (xy[:, 0] < box.x1) & (xy[:, 1] > box.y0) & (xy[:, 1] < box.y1)
            if inside.any():
                found.append(
                    f"{ax.get_title()!r}: over {int(inside.sum())} data point(s), e.g. {xy[inside][0]}"
                )
                break
    return found


@pytest.mark.parametrize(
    ("make", "states"),
    [
        (rope_pair_explorer, [{}, {"pair": 3, "m": 40, "n": 1}]),
        (bias_heatmap_explorer, [{}, {"head": 7}]),
        (decay_explorer, [{}, {"max_distance": 64}, {"base": 100.0, "seed": 3}]),
        (
            scaling_explorer,
            [{}, {"method": "linear"}, {"method": "ntk", "factor": 64.0}, {"method": "yarn", "factor": 2.0}],
        ),
    ],
    ids=["rope_pair", "bias", "decay", "scaling"],
)
def test_no_legend_covers_data(make, states) -> None:
    explorer = make()
    for values in states:
        if values:
            explorer.set(**values)
        assert _legends_over_data(explorer.figure) == [], values
