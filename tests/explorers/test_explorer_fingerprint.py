"""posref.explorers.fingerprint: sinusoidal PE as clocks: hand angles ``p * base**(-2i/dim) mod 2*pi`` (numpy,
float64), hands at the PE pairs, labels with the wavelengths, the explorer driven by its slider.

Widgets are driven by setting slider values; a redraw must change the PNG the ``Output`` shows (decoded pixels
compared) and the plotted data must follow the new value.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from explorer_helpers import TWO_PI, angle_error, assert_pixels_differ, by_gid, shown_png

from posref.explorers.fingerprint import fingerprint_angles, fingerprint_explorer, fingerprint_figure


@pytest.mark.parametrize("dim", [8, 64, 128])
@pytest.mark.parametrize("position", [0, 1, 7, 123, 1999])
def test_fingerprint_angles_follow_the_formula(dim: int, position: int) -> None:
    expected = np.mod(position * 10000.0 ** (-np.arange(0, dim, 2) / dim), TWO_PI)
    got = fingerprint_angles(position, dim)
    assert got.shape == (dim // 2,)
    assert np.all((got >= 0) & (got < TWO_PI))
    # the frequencies are float32 (as in sinusoidal_pe): error <= position * w * 2**-23
    assert angle_error(got, expected).max() < 1e-6 + position * 2.0**-22


def test_fingerprint_hands_point_at_the_pe_pairs() -> None:
    position, dim, base = 37, 16, 500.0
    fig = fingerprint_figure(position, dim, base)
    segments = np.array(by_gid(fig, "hands").get_segments())  # (dim/2, 2 points, xy)
    assert segments.shape == (dim // 2, 2, 2)
    hand = segments[:, 1] - segments[:, 0]
    angle = position * base ** (-np.arange(0, dim, 2) / dim)
    # hand i's tip is (sin, cos) of its angle: (pe[p, 2i], pe[p, 2i+1]); angle 0 points up
    np.testing.assert_allclose(hand[:, 0], np.sin(angle), atol=1e-5)
    np.testing.assert_allclose(hand[:, 1], np.cos(angle), atol=1e-5)


def test_fingerprint_labels_give_the_wavelengths() -> None:
    texts = [t.get_text() for t in fingerprint_figure(0, 128).axes[0].texts]
    assert len(texts) == 64
    # the fastest pair turns every 2*pi ~ 6.28 positions; the slowest of d = 128 every 2*pi*10000**(126/128) ~ 54k
    assert texts[0] == "i=0  λ=6.28"
    assert texts[-1] == "i=63  λ=54k"
    assert abs(2 * math.pi * 10000 ** (126 / 128) - 54410) < 1


def test_fingerprint_explorer_redraws_when_the_slider_moves() -> None:
    explorer = fingerprint_explorer(dim=32, max_position=300)
    assert explorer.position is explorer.controls["position"]
    assert explorer.position.continuous_update is False
    assert (explorer.position.min, explorer.position.max, explorer.position.value) == (0, 300, 37)
    before, redraws = explorer.png, explorer.redraws
    assert shown_png(explorer) == before
    explorer.position.value = 123
    assert explorer.redraws == redraws + 1
    assert shown_png(explorer) == explorer.png
    assert_pixels_differ(before, explorer.png)
    hands = np.array(by_gid(explorer.figure, "hands").get_segments())
    tips = hands[:, 1] - hands[:, 0]
    np.testing.assert_allclose(
        np.arctan2(tips[:, 0], tips[:, 1]) % TWO_PI, fingerprint_angles(123, 32), atol=1e-6
    )


def test_the_explorer_starts_where_the_hands_differ() -> None:
    # its first figure is its static one (an HTML export shows it): at position 0 every hand points up; at the
    # default start most fast hands point elsewhere while the slowest still point (nearly) up
    angles = fingerprint_angles(fingerprint_explorer().position.value, 64)
    off_up = angle_error(angles, 0.0) > math.radians(30)
    assert off_up[:8].sum() >= 6, np.degrees(angles[:8])
    assert angle_error(angles[-4:], 0.0).max() < math.radians(5)
    assert fingerprint_explorer(max_position=20).position.value == 20  # clipped to the slider's range


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: fingerprint_explorer(dim=7), "dim must be even"),
        (lambda: fingerprint_explorer(base=1.0), "base must be a finite number > 1"),
        (lambda: fingerprint_explorer(base=float("inf")), "base must be a finite number > 1"),
        (lambda: fingerprint_figure(-1), "position must be a finite number >= 0"),
    ],
)
def test_bad_input_is_a_clear_error(call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()
