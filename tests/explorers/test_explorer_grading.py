"""An explorer under ``POSREF_GRADING=1`` (the autograder runs every cell, and grades no figure): its arguments are
checked and its sliders built as always, but it builds no figure, neither when it is made nor when a slider
moves; ``redraw()`` and ``set()`` still draw. Without the flag, the same calls draw (the control that makes each
test fail if the skip is removed)."""

from __future__ import annotations

import pytest
from matplotlib.figure import Figure

from posref.explorers import (
    bias_heatmap_explorer,
    decay_explorer,
    fingerprint_explorer,
    position_loss_explorer,
    rope_pair_explorer,
    scaling_explorer,
)

pytestmark = pytest.mark.usefixtures("one_thread")  # see conftest

EXPLORERS = {
    "fingerprint": (lambda: fingerprint_explorer(dim=16), "position"),
    "bias": (lambda: bias_heatmap_explorer(n_heads=4), "head"),
    "rope_pair": (lambda: rope_pair_explorer(dim=8), "m"),
    "decay": (lambda: decay_explorer(head_dim=16), "seed"),
    "scaling": (lambda: scaling_explorer(head_dim=16), "factor"),
    "position_loss": (lambda: position_loss_explorer(lengths=[16], n_windows=2), "smooth"),
}


@pytest.fixture
def figures_built(monkeypatch):
    """The list of every matplotlib ``Figure`` built from now on."""
    built: list[Figure] = []
    original_init = Figure.__init__

    def counting_init(self, *args, **kwargs):
        built.append(self)
        original_init(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "__init__", counting_init)
    return built


def move(explorer, control: str) -> None:
    slider = explorer.controls[control]
    options = getattr(slider, "options", None)
    last = options[-1] if options else slider.max
    slider.value = last[1] if isinstance(last, tuple) else last  # a (label, value) option


@pytest.mark.parametrize("grading", ["1", ""], ids=["grading", "not grading"])
@pytest.mark.parametrize("name", sorted(EXPLORERS))
def test_an_explorer_draws_nothing_of_its_own_while_grading(
    name, grading, monkeypatch, figures_built
) -> None:
    make, control = EXPLORERS[name]
    monkeypatch.setenv("POSREF_GRADING", grading)
    explorer = make()
    move(explorer, control)
    if grading:
        assert figures_built == [] and explorer.figure is None and explorer.png == b""
        assert explorer.redraws == 0 and explorer.output.outputs == ()
        assert isinstance(explorer.redraw(), Figure) and explorer.png.startswith(b"\x89PNG")  # asked: drawn
    else:
        assert figures_built and isinstance(explorer.figure, Figure) and explorer.redraws >= 2


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: decay_explorer(head_dim=15), "head_dim must be even"),
        (lambda: fingerprint_explorer(dim=0), "dim must be a positive int"),
        (lambda: rope_pair_explorer(dim=8, base=-1.0), "base"),
        (lambda: position_loss_explorer(lengths=[1]), "lengths must be ints >= 2"),
    ],
    ids=["decay", "fingerprint", "rope_pair", "position_loss"],
)
def test_bad_arguments_still_raise_while_grading(make, message, monkeypatch) -> None:
    monkeypatch.setenv("POSREF_GRADING", "1")
    with pytest.raises(ValueError, match=message):
        make()


def test_an_explorer_not_drawn_displays_one_line_of_text(monkeypatch) -> None:
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda *objs, **kwargs: shown.extend(objs))
    monkeypatch.setenv("POSREF_GRADING", "1")
    fingerprint_explorer(dim=16)._ipython_display_()
    assert shown == [{"text/plain": "<fingerprint_explorer(): not drawn while grading>"}]
    monkeypatch.setenv("POSREF_GRADING", "")
    shown.clear()
    fingerprint_explorer(dim=16)._ipython_display_()
    assert len(shown) == 2 and "text/html" in shown[1]  # the widget view, then its static figure
