"""posref.explorers.position_loss: per-position losses of the shipped checkpoints, their figure, and the
explorer.

The independent facts: the whole-window losses recorded in each checkpoint's JSON when it was trained (128
validation windows at length 64), a per-position loss written out here with ``log_softmax`` and a loop over
windows, and a moving average written as a loop. Widgets are driven by setting their controls; a redraw must
change the PNG the ``Output`` shows and the plotted curves must follow the new selection.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from explorer_helpers import assert_pixels_differ, by_gid, run_headless, shown_png
from torch import nn

from posref.explorers import position_loss as PL
from posref.lab.checkpoints import checkpoint_info, load_checkpoint
from posref.lab.tasks import lm_eval_batches, load_char_corpus

pytestmark = pytest.mark.usefixtures("one_thread")  # see conftest


class CountingModel(nn.Module):
    """Wraps a model and counts its forward calls (to see what the cache saves)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model
        self.calls = 0

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return self.model(idx)


def loop_moving_average(curve: np.ndarray, width: int) -> np.ndarray:
    return np.array([curve[p - width + 1 : p + 1].mean() for p in range(width - 1, len(curve))])


def test_moving_average_is_the_mean_of_the_last_width_positions() -> None:
    curve = np.random.default_rng(0).normal(size=50)
    for width in (1, 2, 7, 50):
        x, y = PL.moving_average(curve, width)
        np.testing.assert_array_equal(x, np.arange(width - 1, 50))
        np.testing.assert_allclose(y, loop_moving_average(curve, width), rtol=1e-12, atol=1e-12)
    step = np.r_[np.zeros(20), np.ones(20)]  # a jump at position 20 starts at 20 in the average
    x, y = PL.moving_average(step, 8)
    assert x[np.flatnonzero(y > 0)[0]] == 20


@pytest.mark.parametrize("name", ["rope", "learned", "alibi"])
def test_curves_reproduce_the_loss_recorded_when_the_checkpoint_was_trained(name: str) -> None:
    curve = PL.LossCurves(n_windows=128).curve(name, 64)
    assert curve.shape == (64,)
    recorded = checkpoint_info(name)["eval"]["lengths"]["64"]["loss"]  # rounded to 4 decimals
    assert curve.mean().item() == pytest.approx(recorded, abs=6e-5)


def test_curve_is_the_mean_loss_at_each_position_over_the_windows() -> None:
    model = load_checkpoint("nope")
    curve = PL.LossCurves({"nope": model}, n_windows=6, seed=3).curve("nope", 40)
    val = load_char_corpus().val
    losses = []
    with torch.no_grad():
        for x, y in lm_eval_batches(val, 40, n_windows=6, batch_size=4, seed=3):
            for window, target in zip(x, y, strict=True):  # one window at a time
                log_probs = torch.log_softmax(model(window[None])[0].double(), dim=-1)  # (T, V)
                losses.append(-log_probs[torch.arange(40), target])
    expected = torch.stack(losses).mean(0)  # (T,)
    torch.testing.assert_close(curve.double(), expected, rtol=1e-5, atol=1e-5)


def test_curves_are_cached_and_factories_get_the_length() -> None:
    counting = CountingModel(load_checkpoint("rope"))
    asked = []

    def at_length(T: int) -> nn.Module:
        asked.append(T)
        return counting

    source = PL.LossCurves({"rope": at_length}, n_windows=8)
    first = source.curve("rope", 32)
    calls = counting.calls
    assert calls == 1 and asked == [32]  # 8 windows: one batch of 16 or fewer
    assert source.curve("rope", 32) is first and counting.calls == calls  # from the cache
    source.curve("rope", 48)
    assert asked == [32, 48] and counting.calls == calls + 1
    with pytest.raises(ValueError, match=r"unknown model 'alibi'; this explorer has \['rope'\]"):
        source.curve("alibi", 32)


def test_a_model_that_cannot_run_gets_a_note_instead_of_a_curve() -> None:
    source = PL.LossCurves(n_windows=1)
    curves = source.curves(["learned", "alibi"], 520)  # the learned table has 512 rows
    assert isinstance(curves["learned"], str) and "outside the learned table" in curves["learned"]
    fig = PL.position_loss_figure(curves)
    assert [line.get_gid() for line in fig.axes[0].lines] == ["alibi", "train_len"]
    assert "learned: no curve" in fig.axes[0].texts[0].get_text()


def test_figure_draws_each_curve_smoothed_with_its_means_and_the_training_length() -> None:
    rng = np.random.default_rng(1)
    curves = {"a": rng.uniform(1, 2, 100), "b": np.r_[np.full(64, 1.0), np.full(36, 3.0)]}
    fig = PL.position_loss_figure(curves, train_len=64, smooth=5)
    for name, curve in curves.items():
        line = by_gid(fig, name)
        np.testing.assert_array_equal(line.get_xdata(), np.arange(4, 100))
        np.testing.assert_allclose(line.get_ydata(), loop_moving_average(curve, 5), rtol=1e-12)
        assert (
            line.get_label()
            == f"{name}: {curve[:64].mean():.2f} before 64, {curve[64:].mean():.2f} from 64 on"
        )
    np.testing.assert_array_equal(by_gid(fig, "train_len").get_xdata(), [64, 64])
    assert "T = 100" in fig.axes[0].get_title()


def test_loss_explorer_reacts_to_models_length_and_smoothing() -> None:
    explorer = PL.position_loss_explorer(lengths=(32, 96), selected=("rope", "nope"), n_windows=4, seed=1)
    assert set(explorer.controls) == {"methods", "length", "smooth"}
    assert explorer.values() == {"methods": ("rope", "nope"), "length": 96, "smooth": 8}
    shown = [line.get_gid() for line in explorer.figure.axes[0].lines]
    assert shown == ["rope", "nope", "train_len"]
    nope_colour = by_gid(explorer.figure, "nope").get_color()
    png = explorer.png
    explorer.methods.value = ("nope", "learned")
    assert_pixels_differ(png, explorer.png)
    assert shown_png(explorer) == explorer.png
    # shown in the list's order, and a model keeps its colour whatever else is selected
    assert [line.get_gid() for line in explorer.figure.axes[0].lines] == ["learned", "nope", "train_len"]
    assert by_gid(explorer.figure, "nope").get_color() == nope_colour
    explorer.set(length=32, smooth=1)
    line = by_gid(explorer.figure, "nope")
    np.testing.assert_array_equal(line.get_xdata(), np.arange(32))
    np.testing.assert_array_equal(line.get_ydata(), explorer.curves.curve("nope", 32).double().numpy())
    explorer.methods.value = ()
    assert "no model selected" in explorer.figure.axes[0].texts[0].get_text()


def test_loss_explorer_takes_the_notebooks_models() -> None:
    rope = load_checkpoint("rope")
    explorer = PL.position_loss_explorer(
        {"RoPE": rope, "DroPE (not recalibrated)": rope.with_positions("nope")}, lengths=(48,), n_windows=2
    )
    assert explorer.values()["methods"] == ("RoPE", "DroPE (not recalibrated)")
    assert explorer.values()["length"] == 48
    assert (
        by_gid(explorer.figure, "RoPE").get_ydata().mean()
        < by_gid(explorer.figure, "DroPE (not recalibrated)").get_ydata().mean()
    )  # removing the rotation without recalibration hurts even within the training length


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: PL.LossCurves({}), "models must be a non-empty dict"),
        (lambda: PL.LossCurves({"x": 3}), "models must map names"),
        (lambda: PL.LossCurves(seed=-1), "seed must be an int >= 0"),
        (lambda: PL.LossCurves(n_windows=0), "n_windows must be a positive int"),
        (lambda: PL.position_loss_explorer(lengths=()), "lengths must be a non-empty list"),
        (lambda: PL.position_loss_explorer(lengths=(64, 1)), "lengths must be ints >= 2"),
        (lambda: PL.position_loss_explorer(lengths=(64,), length=128), "length must be one of lengths"),
        (lambda: PL.position_loss_explorer(selected=("rotary",)), r"selected names \['rotary'\]"),
        (lambda: PL.position_loss_figure({"a": np.ones(10), "b": np.ones(12)}), "one length T"),
        (lambda: PL.position_loss_figure({"a": np.ones(10)}, smooth=11), "smooth must be <="),
        (lambda: PL.moving_average(np.ones((2, 3)), 1), "curve must be 1-D"),
    ],
)
def test_bad_input_is_a_clear_error(call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()


HEADLESS = """
import sys
import matplotlib
from posref.explorers import position_loss_explorer

explorer = position_loss_explorer(lengths=(16,), selected=("rope",), n_windows=1)
before = explorer.png
explorer.methods.value = ("alibi", "rope")
assert explorer.png[:8] == b"\\x89PNG\\r\\n\\x1a\\n" and explorer.png != before
assert matplotlib.get_backend().lower() == "agg", matplotlib.get_backend()
assert "matplotlib.pyplot" not in sys.modules, "the explorer must not touch pyplot state"
print("headless ok")
"""


def test_the_explorer_works_headless() -> None:
    run_headless(HEADLESS)


def test_loss_explorer_first_shows_the_longest_length_up_to_four_times_the_training_length() -> None:
    # 4 L = 256 with L = 64: past that most methods have failed and the picture says little more
    first = PL.position_loss_explorer(lengths=(64, 128, 256, 512), selected=("nope",), n_windows=1)
    assert first.values()["length"] == 256
    assert (
        PL.position_loss_explorer(lengths=(300, 400), selected=("nope",), n_windows=1).values()["length"]
        == 300
    )
