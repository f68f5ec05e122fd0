"""posref.explorers.rope_pair: one RoPE pair: the score ``|q||k| cos((n - m) w + phi)`` written out in numpy,
the arrows turned by ``position * w``, the arc, and the explorer that updates one figure in place.

Widgets are driven by setting slider values; a redraw must change the PNG the ``Output`` shows (decoded pixels
compared) and the plotted data must follow the new value.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from explorer_helpers import angle_error, assert_pixels_differ, by_gid, pixels

from posref.explorers.base import figure_png
from posref.explorers.rope_pair import PAIR_KEY, PAIR_QUERY, rope_pair_explorer, rope_pair_figure


def pair_score(m: np.ndarray, n: np.ndarray, w: float) -> np.ndarray:
    q, k = np.array(PAIR_QUERY), np.array(PAIR_KEY)
    phi = math.atan2(k[1], k[0]) - math.atan2(q[1], q[0])
    return np.linalg.norm(q) * np.linalg.norm(k) * np.cos((n - m) * w + phi)


@pytest.mark.parametrize(("pair", "dim", "base"), [(0, 8, 10000.0), (1, 8, 10000.0), (2, 6, 50.0)])
def test_rope_pair_scores_depend_on_n_minus_m_only(pair: int, dim: int, base: float) -> None:
    P = 20
    fig = rope_pair_figure(3, 11, pair, dim, base, max_position=P)
    scores = np.asarray(by_gid(fig, "scores").get_array())
    w = base ** (-2 * pair / dim)
    grid = np.arange(P + 1)
    expected = pair_score(grid[:, None], grid[None, :], w)  # rows m, columns n
    np.testing.assert_allclose(scores, expected, atol=2e-5)


def test_rope_pair_arrows_turn_by_position_times_frequency() -> None:
    m, n, pair, dim = 4, 9, 1, 8
    fig = rope_pair_figure(m, n, pair, dim)
    w = 10000.0 ** (-2 * pair / dim)
    for gid, vector, position in (("query", PAIR_QUERY, m), ("key", PAIR_KEY, n)):
        x, y = by_gid(fig, gid).get_xydata()[1]
        assert math.hypot(x, y) == pytest.approx(math.hypot(*vector), abs=1e-6)
        expected = math.atan2(vector[1], vector[0]) + position * w
        assert angle_error(math.atan2(y, x), expected) < 1e-6
    assert f"{pair_score(m, n, w):+.3f}" in fig.axes[0].get_title()


@pytest.mark.parametrize(("m", "n"), [(4, 9), (9, 4), (0, 3), (3, 0)])
def test_rope_pair_arc_turns_from_q_to_k_by_the_angle_the_caption_names(m: int, n: int) -> None:
    # pair 0 turns 1 rad a position: n - m = -5 is -5 rad, 1.28 rad counter-clockwise (the shorter way is the other)
    from matplotlib.patches import Arc

    fig = rope_pair_figure(m, n, 0, 8)
    (arc,) = [p for p in fig.axes[0].patches if isinstance(p, Arc)]
    phi = math.atan2(PAIR_KEY[1], PAIR_KEY[0]) - math.atan2(PAIR_QUERY[1], PAIR_QUERY[0])
    q_angle = math.atan2(PAIR_QUERY[1], PAIR_QUERY[0]) + m * 1.0
    assert angle_error(math.radians(arc.theta1), q_angle) < 1e-6
    assert math.radians(arc.theta2 - arc.theta1) == pytest.approx(
        ((n - m) * 1.0 + phi) % (2 * math.pi), abs=1e-6
    )


def test_rope_pair_explorer_moves_with_m_and_keeps_the_score_for_equal_shifts() -> None:
    explorer = rope_pair_explorer(dim=8, max_position=30)
    assert set(explorer.controls) == {"pair", "m", "n"}
    assert explorer.pair.max == 3

    def arrow_tips() -> np.ndarray:
        return np.array([by_gid(explorer.figure, g).get_xydata()[1] for g in ("query", "key")])

    explorer.set(m=2, n=7)
    tips, png = arrow_tips(), explorer.png
    redraws = explorer.redraws
    explorer.set(m=12, n=17)  # same n - m = 5: one redraw
    assert explorer.redraws == redraws + 1
    shifted = arrow_tips()
    assert_pixels_differ(png, explorer.png)
    assert not np.allclose(tips, shifted)  # both arrows turned ...
    assert tips[0] @ tips[1] == pytest.approx(shifted[0] @ shifted[1], abs=1e-6)  # ... the score did not
    explorer.n.value = 18  # n - m = 6: another score
    other = arrow_tips()
    assert other[0] @ other[1] != pytest.approx(shifted[0] @ shifted[1], abs=1e-3)
    explorer.pair.value = 3
    assert "pair 3 of dim 8" in explorer.figure.axes[0].get_title()
    with pytest.raises(ValueError, match="unknown control"):
        explorer.set(position=3)


def test_rope_pair_explorer_updates_one_figure_and_draws_what_the_figure_function_draws() -> None:
    explorer = rope_pair_explorer(dim=8, max_position=30)
    figure = explorer.figure
    for name, value in (("m", 20), ("n", 0), ("pair", 2), ("m", 30), ("n", 29), ("pair", 0)):
        explorer.controls[name].value = value
        assert explorer.figure is figure
        fresh = figure_png(rope_pair_figure(**explorer.values(), dim=8, max_position=30))
        np.testing.assert_array_equal(pixels(explorer.png), pixels(fresh), err_msg=f"{name}={value}")
    assert len(figure.axes[0].patches) == 2  # the circle and one arc: the old arc is removed


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: rope_pair_figure(0, 0, pair=4, dim=8), r"pair must be an int in \[0, 4\)"),
    ],
)
def test_bad_input_is_a_clear_error(call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()
