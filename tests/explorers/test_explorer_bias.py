"""posref.explorers.bias: ALiBi and T5 heatmaps: ALiBi's slopes written out from the paper, T5's exact buckets
for small distances, one colour scale for all heads, and the explorer that updates one figure in place.

Widgets are driven by setting slider values; a redraw must change the PNG the ``Output`` shows (decoded pixels
compared) and the plotted data must follow the new value.
"""

from __future__ import annotations

import numpy as np
import pytest
from explorer_helpers import assert_pixels_differ, by_gid, pixels

from posref.explorers.base import figure_png
from posref.explorers.bias import bias_heatmap_explorer, bias_heatmap_figure, t5_illustrative_table


def paper_slopes(n_heads: int) -> list[float]:
    """ALiBi's rule written out: 2**(-8h/n) for a power of two n; else the closest power c, then every other
    slope of 2c."""
    c = 1 << (n_heads.bit_length() - 1)
    slopes = [2 ** (-8 * h / c) for h in range(1, c + 1)]
    return slopes + [2 ** (-8 * h / (2 * c)) for h in range(1, 2 * c + 1, 2)][: n_heads - c]


@pytest.mark.parametrize(("n_heads", "head"), [(8, 0), (8, 5), (12, 9), (6, 5)])
def test_alibi_heatmap_is_minus_slope_times_distance(n_heads: int, head: int) -> None:
    length = 12
    fig = bias_heatmap_figure(head, n_heads, length)
    image = np.asarray(by_gid(fig, "alibi").get_array())
    i = np.arange(length)
    expected = -paper_slopes(n_heads)[head] * np.abs(i[:, None] - i[None, :])
    np.testing.assert_allclose(image, expected, rtol=1e-6)
    assert paper_slopes(12)[9] == 2**-1.5  # the rule itself: the 10th of 12 heads has slope 2**-1.5


def test_t5_heatmap_uses_the_illustrative_table_by_relative_position() -> None:
    n_heads, head, length = 8, 3, 40
    fig = bias_heatmap_figure(head, n_heads, length)
    image = np.asarray(by_gid(fig, "t5").get_array())
    table = t5_illustrative_table(n_heads).numpy()
    # a function of j - i only: constant along each diagonal
    for offset in range(-length + 1, length):
        diagonal = np.diagonal(image, offset)
        assert np.all(diagonal == diagonal[0]), f"not constant along j - i = {offset}"
    # small distances have exact buckets (32 buckets, bidirectional: 8 exact per side): bucket d before, 16 + d after
    for d in range(8):
        assert image[20, 20 - d] == table[d, head]
        if d:
            assert image[20, 20 + d] == table[16 + d, head]
    assert "ILLUSTRATIVE" in fig.axes[1].get_title()


def test_illustrative_table_is_monotone_and_deterministic() -> None:
    table = t5_illustrative_table(8)
    assert table.shape == (32, 8)
    assert np.array_equal(table.numpy(), t5_illustrative_table(8).numpy())
    for side in (table[:16], table[16:]):
        assert bool((side[1:] <= side[:-1]).all()), "bias must not grow with distance"
    assert bool((table[0] == 0).all())
    assert len({tuple(col) for col in table.T.tolist()}) == 8, "heads should differ"
    with pytest.raises(ValueError, match="even"):
        t5_illustrative_table(4, num_buckets=31)


def test_bias_explorer_redraws_with_the_head() -> None:
    explorer = bias_heatmap_explorer(n_heads=8, length=16)
    assert explorer.head.max == 7
    alibi0 = np.asarray(by_gid(explorer.figure, "alibi").get_array())
    t50 = np.asarray(by_gid(explorer.figure, "t5").get_array())
    png = explorer.png
    explorer.head.value = 1
    assert_pixels_differ(png, explorer.png)
    # 8 heads: slopes 1/2, 1/4, ... so head 1's bias is exactly half of head 0's
    np.testing.assert_array_equal(np.asarray(by_gid(explorer.figure, "alibi").get_array()), alibi0 / 2)
    assert not np.array_equal(np.asarray(by_gid(explorer.figure, "t5").get_array()), t50)


def test_bias_heads_share_one_colour_scale_so_the_slider_shows_the_slope() -> None:
    # with a colour scale per head, -m|i - j| normalises to the same picture for every slope: the ALiBi panel
    # looked identical for all heads and moving the head slider changed only the colour bar's numbers
    n_heads, length = 8, 16
    figures = [bias_heatmap_figure(h, n_heads, length) for h in (0, 3, 7)]
    for gid in ("alibi", "t5"):
        images = [by_gid(fig, gid) for fig in figures]
        assert len({image.get_clim() for image in images}) == 1, f"{gid}: one colour scale for all heads"
        colours = [image.to_rgba(image.get_array()) for image in images]
        assert not np.allclose(colours[0], colours[1]) and not np.allclose(colours[1], colours[2])
    steepest = -max(paper_slopes(n_heads)) * (length - 1)
    assert by_gid(figures[0], "alibi").get_clim() == pytest.approx((steepest, 0.0))
    # the gentlest head barely changes over the window: its colours stay near the top of the scale
    gentle = by_gid(figures[2], "alibi")
    assert gentle.norm(gentle.get_array()).min() > 0.99


def test_bias_explorer_updates_one_figure_and_draws_what_the_figure_function_draws() -> None:
    explorer = bias_heatmap_explorer(n_heads=8, length=16)
    figure = explorer.figure
    for head in (5, 1, 7):
        explorer.head.value = head
        assert explorer.figure is figure  # updated in place, not rebuilt
        fresh = figure_png(bias_heatmap_figure(head, 8, 16))
        np.testing.assert_array_equal(pixels(explorer.png), pixels(fresh))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: bias_heatmap_figure(8, n_heads=8), r"head must be an int in \[0, 8\)"),
    ],
)
def test_bad_input_is_a_clear_error(call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()
