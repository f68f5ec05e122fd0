"""posref.explorers.scaling: what a scaling method does to each pair, each method by its own rule (PI all
pairs, NTK-aware the last only, Llama 3 those slower than one turn in L, YaRN by turns within L), and the
explorer that updates one figure in place.

Widgets are driven by setting slider values; a redraw must change the PNG the ``Output`` shows (decoded pixels
compared) and the plotted data must follow the new value.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from explorer_helpers import assert_pixels_differ, by_gid, pixels, shown_png

from posref.explorers.base import figure_png
from posref.explorers.scaling import FACTORS, scaling_dict, scaling_explorer, scaling_figure, scaling_menu
from posref.scaling import SCALING_METHODS, ScalingMethod, default_inv_freq

LLAMA_HEAD = {"head_dim": 128, "base": 500000.0, "original_len": 8192}


def plain_wavelengths(head_dim: int, base: float) -> np.ndarray:
    return 2 * np.pi * base ** (np.arange(0, head_dim, 2) / head_dim)


def pairs_of(fig, kind: str) -> list[int]:
    """The pair indices drawn as ``kind`` in the ratio panel (an absent kind is no scatter)."""
    found = [c for ax in fig.axes for c in ax.collections if c.get_gid() == kind]
    return [int(x) for x in found[0].get_offsets()[:, 0]] if found else []


def test_scaling_dict_fills_in_what_each_method_needs() -> None:
    assert scaling_dict("linear", 4.0, 64) == {"rope_type": "linear", "factor": 4.0}
    assert scaling_dict("llama3", 8, 8192) == {
        "rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192,
        "low_freq_factor": 1.0, "high_freq_factor": 4.0,
    }  # fmt: skip
    assert scaling_dict("yarn", 4.0, 64, betas=(4.0, 1.0))["beta_fast"] == 4.0


def test_linear_divides_every_frequency_by_the_factor() -> None:
    factor = 4.0
    fig = scaling_figure("linear", factor, **LLAMA_HEAD)
    before = plain_wavelengths(128, 500000.0)
    np.testing.assert_allclose(by_gid(fig, "before").get_ydata(), before, rtol=1e-6)
    np.testing.assert_allclose(by_gid(fig, "after").get_ydata(), factor * before, rtol=1e-6)
    np.testing.assert_allclose(by_gid(fig, "interpolated").get_offsets()[:, 1], factor, rtol=1e-6)
    assert pairs_of(fig, "interpolated") == list(range(64))
    assert pairs_of(fig, "kept") == [] and "64 interpolated (of 64 pairs)" in fig.texts[0].get_text()


@pytest.mark.parametrize("factor", [2.0, 8.0, 40.0])
def test_ntk_keeps_pair_0_and_divides_the_last_pair_by_the_factor(factor: float) -> None:
    fig = scaling_figure("ntk", factor, **LLAMA_HEAD)
    assert pairs_of(fig, "kept") == [0]
    assert pairs_of(fig, "interpolated") == [63]
    assert pairs_of(fig, "blended") == list(range(1, 63))
    ratio = by_gid(fig, "blended").get_offsets()[:, 1]
    # b' = b * s**(d/(d-2)): pair i is slowed by s**(2i/(d-2)), a straight line on a log scale
    np.testing.assert_allclose(ratio, factor ** (2 * np.arange(1, 63) / 126), rtol=1e-5)


def test_llama3_on_llama31_keeps_29_blends_6_and_divides_the_29_that_never_turn_in_L() -> None:
    fig = scaling_figure("llama3", 8.0, **LLAMA_HEAD)
    kept, blended, divided = (pairs_of(fig, k) for k in ("kept", "blended", "interpolated"))
    assert (len(kept), len(blended), len(divided)) == (29, 6, 29)
    assert kept + blended + divided == list(range(64))  # contiguous bands, fast to slow
    # Llama 3 divides the pairs whose wavelength exceeds L / low_freq_factor = L: those never turn within L
    assert divided == [int(i) for i in np.flatnonzero(plain_wavelengths(128, 500000.0) > 8192)]
    assert "29 kept, 6 blended, 29 interpolated" in fig.texts[0].get_text()
    np.testing.assert_array_equal(by_gid(fig, "original").get_ydata(), [8192, 8192])
    np.testing.assert_array_equal(by_gid(fig, "target").get_ydata(), [8 * 8192, 8 * 8192])


@pytest.mark.parametrize("method", ["yarn", "ntk_by_parts"])
@pytest.mark.parametrize("factor", [2.0, 32.0])
def test_yarn_ramps_keep_fast_pairs_and_divide_pairs_that_turn_less_than_once(
    method: str, factor: float
) -> None:
    # turns within L of each pair; beta_fast = 32, beta_slow = 1 (YaRN's defaults); which pairs are kept or
    # divided does not depend on the factor
    turns = 8192 / plain_wavelengths(128, 500000.0)
    fig = scaling_figure(method, factor, **LLAMA_HEAD)
    assert pairs_of(fig, "kept") == [int(i) for i in np.flatnonzero(turns >= 32)]
    assert pairs_of(fig, "interpolated") == [int(i) for i in np.flatnonzero(turns <= 1)]
    assert pairs_of(fig, "blended") == [int(i) for i in np.flatnonzero((turns > 1) & (turns < 32))]


def test_scaling_explorer_redraws_for_method_and_factor() -> None:
    explorer = scaling_explorer()
    assert set(explorer.controls) == {"method", "factor"}
    assert explorer.values() == {"method": "llama3", "factor": 8.0}
    assert len(pairs_of(explorer.figure, "blended")) == 6
    png = explorer.png
    explorer.method.value = "linear"
    assert_pixels_differ(png, explorer.png)
    assert shown_png(explorer) == explorer.png
    assert pairs_of(explorer.figure, "interpolated") == list(range(64))
    np.testing.assert_allclose(by_gid(explorer.figure, "interpolated").get_offsets()[:, 1], 8.0, rtol=1e-6)
    explorer.factor.value = 16.0
    np.testing.assert_allclose(by_gid(explorer.figure, "interpolated").get_offsets()[:, 1], 16.0, rtol=1e-6)
    np.testing.assert_array_equal(by_gid(explorer.figure, "target").get_ydata(), [16 * 8192] * 2)
    toy = scaling_explorer(16, 50.0, 64, betas=(4.0, 1.0), method="ntk", factor=4.0)
    assert pairs_of(toy.figure, "kept") == [0] and pairs_of(toy.figure, "interpolated") == [7]


def test_scaling_explorer_updates_one_figure_and_draws_what_the_figure_function_draws() -> None:
    explorer = scaling_explorer(16, 50.0, 64, betas=(4.0, 1.0))
    figure = explorer.figure
    for name, value in (("method", "yarn"), ("factor", 2.0), ("method", "linear"), ("factor", 1.0),
                        ("method", "ntk"), ("factor", 64.0), ("method", "llama3")):  # fmt: skip
        explorer.controls[name].value = value
        assert explorer.figure is figure
        fresh = figure_png(scaling_figure(**explorer.values(), head_dim=16, base=50.0, original_len=64,
                                              betas=(4.0, 1.0)))  # fmt: skip
        np.testing.assert_array_equal(pixels(explorer.png), pixels(fresh), err_msg=f"{name}={value}")
    # a kind no pair has is an empty scatter and no legend entry
    explorer.set(method="linear", factor=4.0)
    assert pairs_of(explorer.figure, "kept") == []
    legend = [t.get_text() for t in explorer.figure.axes[1].get_legend().get_texts()]
    assert legend == ["interpolated: 8"]


def test_the_menu_is_every_registered_method_whose_one_dial_is_its_factor(monkeypatch) -> None:
    assert list(scaling_menu()) == ["linear", "ntk", "ntk_by_parts", "yarn", "llama3"]
    assert scaling_menu()["linear"] == "linear (Position Interpolation)"

    # a method registered later is in the menu, with no edit to the explorer: here every frequency divided by
    # sqrt(s), so every pair is slowed by sqrt(s), between kept (1) and interpolated (s)
    def root(dim, base, params, seq_len):
        return default_inv_freq(dim, base) / math.sqrt(params["factor"]), 1.0

    toy = ScalingMethod(
        "root", root, frozenset({"factor"}), frozenset(), False, "square-root PI", {"factor": 4.0}
    )
    monkeypatch.setitem(SCALING_METHODS, "root", toy)
    assert scaling_menu()["root"] == "root (square-root PI)"
    explorer = scaling_explorer(16, 50.0, 64, method="root", factor=9.0)
    np.testing.assert_allclose(by_gid(explorer.figure, "blended").get_offsets()[:, 1], 3.0, rtol=1e-6)
    assert pairs_of(explorer.figure, "blended") == list(range(8))
    assert "root (square-root PI), s = 9" in explorer.figure.texts[0].get_text()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: scaling_figure("dynamic", 2.0), "unknown method 'dynamic'"),
        (lambda: scaling_figure("yarn", 0.5), "factor must be a finite number >= 1"),
        (lambda: scaling_explorer(betas=(1.0, 32.0)), "beta_fast > beta_slow"),
        (lambda: scaling_explorer(head_dim=127), "head_dim must be even"),
        (lambda: scaling_explorer(original_len=0), "original_len must be a positive int"),
    ],
)
def test_bad_input_is_a_clear_error(call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize("factor", [8.0, 2**4.25, 100.0])
def test_the_factor_slider_reads_as_the_title_writes_it(factor: float) -> None:
    """Each factor on offer is labelled as the figure's title writes it (a log slider's readout said 19.0 where
    the title said s = 19.0273); the explorer's own factor is one of them, however unround."""
    explorer = scaling_explorer(16, 50.0, 64, factor=factor)
    slider = explorer.controls["factor"]
    assert slider.label == f"{factor:g}" and f"s = {slider.label}:" in explorer.figure._suptitle.get_text()
    assert all(label == f"{value:g}" for label, value in slider.options)
    assert {value for _, value in slider.options} == {*FACTORS, factor}
    explorer.factor.value = 32.0
    assert f"s = {explorer.factor.label}:" in explorer.figure._suptitle.get_text()
