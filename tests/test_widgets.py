"""posref.widgets: the figure functions against the formulas, and the explorers driven from Python.

Formulas are written here independently of the module (numpy, float64): clock angles
``p * base**(-2i/dim) mod 2*pi``, the RoPE pair score ``|q||k| cos((n - m) w + phi)``, ALiBi's slopes from the
paper, T5's exact buckets for small distances, the aligned and random scores in closed form, RoFormer's
Abel-summation inequality, and for the scaling methods the pairs each keeps or divides by its own rule (PI all,
NTK-aware the last only, Llama 3 those slower than one turn in L, YaRN by turns within L). Widgets are driven by setting slider values; a redraw must change the PNG the
``Output`` shows (decoded pixels compared) and the plotted data must follow the new value.
"""

from __future__ import annotations

import base64
import io
import math
import os
import subprocess
import sys
from pathlib import Path

import matplotlib.image
import numpy as np
import pytest

from posref import widgets as W

REPO = Path(__file__).resolve().parents[1]
TWO_PI = 2 * np.pi


def pixels(png: bytes) -> np.ndarray:
    return matplotlib.image.imread(io.BytesIO(png), format="png")


def assert_pixels_differ(a: bytes, b: bytes, min_fraction: float = 1e-3) -> None:
    pa, pb = pixels(a), pixels(b)
    assert pa.shape == pb.shape, f"figure size changed: {pa.shape} -> {pb.shape}"
    fraction = np.any(pa != pb, axis=-1).mean()
    assert fraction > min_fraction, f"only {fraction:.2e} of the pixels differ"


def by_gid(fig, gid: str):
    found = [a for ax in fig.axes for a in (*ax.lines, *ax.collections, *ax.images) if a.get_gid() == gid]
    assert len(found) == 1, f"expected one artist with gid {gid!r}, found {len(found)}"
    return found[0]


def angle_error(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance between angles on the circle."""
    return np.abs(np.angle(np.exp(1j * (np.asarray(a) - np.asarray(b)))))


def shown_png(explorer: W.Explorer) -> bytes:
    (output,) = explorer.output.outputs
    return base64.b64decode(output["data"]["image/png"])


# ---------------------------------------------------------------------------------------------------------------
# fingerprint


@pytest.mark.parametrize("dim", [8, 64, 128])
@pytest.mark.parametrize("position", [0, 1, 7, 123, 1999])
def test_fingerprint_angles_follow_the_formula(dim: int, position: int) -> None:
    expected = np.mod(position * 10000.0 ** (-np.arange(0, dim, 2) / dim), TWO_PI)
    got = W.fingerprint_angles(position, dim)
    assert got.shape == (dim // 2,)
    assert np.all((got >= 0) & (got < TWO_PI))
    # the frequencies are float32 (as in sinusoidal_pe): error <= position * w * 2**-23
    assert angle_error(got, expected).max() < 1e-6 + position * 2.0**-22


def test_fingerprint_hands_point_at_the_pe_pairs() -> None:
    position, dim, base = 37, 16, 500.0
    fig = W.fingerprint_figure(position, dim, base)
    segments = np.array(by_gid(fig, "hands").get_segments())  # (dim/2, 2 points, xy)
    assert segments.shape == (dim // 2, 2, 2)
    hand = segments[:, 1] - segments[:, 0]
    angle = position * base ** (-np.arange(0, dim, 2) / dim)
    # hand i's tip is (sin, cos) of its angle: (pe[p, 2i], pe[p, 2i+1]); angle 0 points up
    np.testing.assert_allclose(hand[:, 0], np.sin(angle), atol=1e-5)
    np.testing.assert_allclose(hand[:, 1], np.cos(angle), atol=1e-5)


def test_fingerprint_labels_give_the_wavelengths() -> None:
    texts = [t.get_text() for t in W.fingerprint_figure(0, 128).axes[0].texts]
    assert len(texts) == 64
    # the fastest pair turns every 2*pi ~ 6.28 positions; the slowest of d = 128 every 2*pi*10000**(126/128) ~ 54k
    assert texts[0] == "i=0  λ=6.28"
    assert texts[-1] == "i=63  λ=54k"
    assert abs(2 * math.pi * 10000 ** (126 / 128) - 54410) < 1


def test_fingerprint_explorer_redraws_when_the_slider_moves() -> None:
    explorer = W.fingerprint_explorer(dim=32, max_position=300)
    assert explorer.position is explorer.controls["position"]
    assert explorer.position.continuous_update is False
    assert (explorer.position.min, explorer.position.max, explorer.position.value) == (0, 300, 0)
    before, redraws = explorer.png, explorer.redraws
    assert shown_png(explorer) == before
    explorer.position.value = 123
    assert explorer.redraws == redraws + 1
    assert shown_png(explorer) == explorer.png
    assert_pixels_differ(before, explorer.png)
    hands = np.array(by_gid(explorer.figure, "hands").get_segments())
    tips = hands[:, 1] - hands[:, 0]
    np.testing.assert_allclose(
        np.arctan2(tips[:, 0], tips[:, 1]) % TWO_PI, W.fingerprint_angles(123, 32), atol=1e-6
    )


# ---------------------------------------------------------------------------------------------------------------
# one RoPE pair


def pair_score(m: np.ndarray, n: np.ndarray, w: float) -> np.ndarray:
    q, k = np.array(W.PAIR_QUERY), np.array(W.PAIR_KEY)
    phi = math.atan2(k[1], k[0]) - math.atan2(q[1], q[0])
    return np.linalg.norm(q) * np.linalg.norm(k) * np.cos((n - m) * w + phi)


@pytest.mark.parametrize(("pair", "dim", "base"), [(0, 8, 10000.0), (1, 8, 10000.0), (2, 6, 50.0)])
def test_rope_pair_scores_depend_on_n_minus_m_only(pair: int, dim: int, base: float) -> None:
    P = 20
    fig = W.rope_pair_figure(3, 11, pair, dim, base, max_position=P)
    scores = np.asarray(by_gid(fig, "scores").get_array())
    w = base ** (-2 * pair / dim)
    grid = np.arange(P + 1)
    expected = pair_score(grid[:, None], grid[None, :], w)  # rows m, columns n
    np.testing.assert_allclose(scores, expected, atol=2e-5)


def test_rope_pair_arrows_turn_by_position_times_frequency() -> None:
    m, n, pair, dim = 4, 9, 1, 8
    fig = W.rope_pair_figure(m, n, pair, dim)
    w = 10000.0 ** (-2 * pair / dim)
    for gid, vector, position in (("query", W.PAIR_QUERY, m), ("key", W.PAIR_KEY, n)):
        x, y = by_gid(fig, gid).get_xydata()[1]
        assert math.hypot(x, y) == pytest.approx(math.hypot(*vector), abs=1e-6)
        expected = math.atan2(vector[1], vector[0]) + position * w
        assert angle_error(math.atan2(y, x), expected) < 1e-6
    assert f"{pair_score(m, n, w):+.3f}" in fig.axes[0].get_title()


@pytest.mark.parametrize(("m", "n"), [(4, 9), (9, 4), (0, 3), (3, 0)])
def test_rope_pair_arc_turns_from_q_to_k_by_the_angle_the_caption_names(m: int, n: int) -> None:
    # pair 0 turns 1 rad a position: n - m = -5 is -5 rad, 1.28 rad counter-clockwise (the shorter way is the other)
    from matplotlib.patches import Arc

    fig = W.rope_pair_figure(m, n, 0, 8)
    (arc,) = [p for p in fig.axes[0].patches if isinstance(p, Arc)]
    phi = math.atan2(W.PAIR_KEY[1], W.PAIR_KEY[0]) - math.atan2(W.PAIR_QUERY[1], W.PAIR_QUERY[0])
    q_angle = math.atan2(W.PAIR_QUERY[1], W.PAIR_QUERY[0]) + m * 1.0
    assert angle_error(math.radians(arc.theta1), q_angle) < 1e-6
    assert math.radians(arc.theta2 - arc.theta1) == pytest.approx(
        ((n - m) * 1.0 + phi) % (2 * math.pi), abs=1e-6
    )


def test_rope_pair_explorer_moves_with_m_and_keeps_the_score_for_equal_shifts() -> None:
    explorer = W.rope_pair_explorer(dim=8, max_position=30)
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
    explorer = W.rope_pair_explorer(dim=8, max_position=30)
    figure = explorer.figure
    for name, value in (("m", 20), ("n", 0), ("pair", 2), ("m", 30), ("n", 29), ("pair", 0)):
        explorer.controls[name].value = value
        assert explorer.figure is figure
        fresh = W.figure_png(W.rope_pair_figure(**explorer.values(), dim=8, max_position=30))
        np.testing.assert_array_equal(pixels(explorer.png), pixels(fresh), err_msg=f"{name}={value}")
    assert len(figure.axes[0].patches) == 2  # the circle and one arc: the old arc is removed


# ---------------------------------------------------------------------------------------------------------------
# bias heatmaps


def paper_slopes(n_heads: int) -> list[float]:
    """ALiBi's rule written out: 2**(-8h/n) for a power of two n; else the closest power c, then every other
    slope of 2c."""
    c = 1 << (n_heads.bit_length() - 1)
    slopes = [2 ** (-8 * h / c) for h in range(1, c + 1)]
    return slopes + [2 ** (-8 * h / (2 * c)) for h in range(1, 2 * c + 1, 2)][: n_heads - c]


@pytest.mark.parametrize(("n_heads", "head"), [(8, 0), (8, 5), (12, 9), (6, 5)])
def test_alibi_heatmap_is_minus_slope_times_distance(n_heads: int, head: int) -> None:
    length = 12
    fig = W.bias_heatmap_figure(head, n_heads, length)
    image = np.asarray(by_gid(fig, "alibi").get_array())
    i = np.arange(length)
    expected = -paper_slopes(n_heads)[head] * np.abs(i[:, None] - i[None, :])
    np.testing.assert_allclose(image, expected, rtol=1e-6)
    assert paper_slopes(12)[9] == 2**-1.5  # the rule itself: the 10th of 12 heads has slope 2**-1.5


def test_t5_heatmap_uses_the_illustrative_table_by_relative_position() -> None:
    n_heads, head, length = 8, 3, 40
    fig = W.bias_heatmap_figure(head, n_heads, length)
    image = np.asarray(by_gid(fig, "t5").get_array())
    table = W.t5_illustrative_table(n_heads).numpy()
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
    table = W.t5_illustrative_table(8)
    assert table.shape == (32, 8)
    assert np.array_equal(table.numpy(), W.t5_illustrative_table(8).numpy())
    for side in (table[:16], table[16:]):
        assert bool((side[1:] <= side[:-1]).all()), "bias must not grow with distance"
    assert bool((table[0] == 0).all())
    assert len({tuple(col) for col in table.T.tolist()}) == 8, "heads should differ"
    with pytest.raises(ValueError, match="even"):
        W.t5_illustrative_table(4, num_buckets=31)


def test_bias_explorer_redraws_with_the_head() -> None:
    explorer = W.bias_heatmap_explorer(n_heads=8, length=16)
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
    figures = [W.bias_heatmap_figure(h, n_heads, length) for h in (0, 3, 7)]
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
    explorer = W.bias_heatmap_explorer(n_heads=8, length=16)
    figure = explorer.figure
    for head in (5, 1, 7):
        explorer.head.value = head
        assert explorer.figure is figure  # updated in place, not rebuilt
        fresh = W.figure_png(W.bias_heatmap_figure(head, 8, 16))
        np.testing.assert_array_equal(pixels(explorer.png), pixels(fresh))


# ---------------------------------------------------------------------------------------------------------------
# does RoPE decay?


def pair_norms_and_products(q: np.ndarray, k: np.ndarray):
    """Half layout: pair i is (i, i + D/2)."""
    h = q.shape[-1] // 2
    qa, qb, ka, kb = q[:h], q[h:], k[:h], k[h:]
    return qa * ka + qb * kb, qb * ka - qa * kb


def test_decay_curves_match_the_closed_forms() -> None:
    head_dim, base, max_distance = 64, 10000.0, 600
    curves = W.decay_curves(head_dim, base, max_distance, seed=3)
    q, k = curves["q"].double().numpy(), curves["k"].double().numpy()
    w = base ** (-np.arange(0, head_dim, 2) / head_dim)
    d = np.arange(max_distance + 1)[:, None]
    # aligned q = k: sum_i cos(d w_i) |q_i|^2
    norms, _ = pair_norms_and_products(q, q)
    aligned = (np.cos(d * w) * norms).sum(-1)
    np.testing.assert_allclose(curves["aligned"] * (q @ q), aligned, atol=2e-3 * (q @ q))
    # random q, k: sum_i (q_a k_a + q_b k_b) cos(d w_i) + (q_b k_a - q_a k_b) sin(d w_i)
    dots, crosses = pair_norms_and_products(q, k)
    scale = np.linalg.norm(q) * np.linalg.norm(k)
    random = (np.cos(d * w) * dots + np.sin(d * w) * crosses).sum(-1)
    np.testing.assert_allclose(curves["random"] * scale, random, atol=2e-3 * scale)
    assert curves["aligned"][0] == pytest.approx(1.0, abs=1e-6)
    assert curves["bound"][0] == pytest.approx(1.0)


def test_aligned_scores_decay_and_random_ones_do_not_on_average() -> None:
    curves = [W.decay_curves(128, 10000.0, 512, seed=s) for s in range(8)]
    aligned = np.stack([c["aligned"] for c in curves])
    random = np.stack([c["random"] for c in curves])
    assert aligned[:, 200:].max() < 0.8 and aligned[:, 0].min() == pytest.approx(1.0, abs=1e-6)
    # random q, k: the score at distance 0 is no larger than far away (no decay to speak of)
    assert np.abs(random[:, 0]).mean() < 3 * np.abs(random[:, 200:]).mean()


def test_roformer_bound_is_an_upper_bound_by_abel_summation() -> None:
    n_pairs = 32
    w = 10000.0 ** (-np.arange(n_pairs) * 2 / (2 * n_pairs))
    distances = np.arange(0, 2000, 7)
    bound = W.roformer_bound(distances, w)
    assert bound[0] == pytest.approx((n_pairs + 1) / 2)  # |S_j| = j at distance 0
    rng = np.random.default_rng(0)
    for _ in range(20):
        h = rng.normal(size=n_pairs) + 1j * rng.normal(size=n_pairs)
        step = np.abs(np.diff(np.append(h, 0))).max()  # h_{N} = 0
        sums = np.abs(np.exp(1j * distances[:, None] * w) @ h)
        assert np.all(sums <= n_pairs * step * bound + 1e-9)
    assert bound[-1] < 0.5 * bound[0]


def test_decay_explorer_redraws_for_seed_base_and_distance() -> None:
    explorer = W.decay_explorer(head_dim=32, max_distance=256)
    assert set(explorer.controls) == {"base", "seed", "max_distance"}
    assert explorer.base.value == pytest.approx(10000.0)
    png, random = explorer.png, by_gid(explorer.figure, "random").get_ydata()
    explorer.seed.value = 5
    assert_pixels_differ(png, explorer.png)
    assert not np.allclose(by_gid(explorer.figure, "random").get_ydata(), random)
    expected = W.decay_curves(32, 10000.0, 256, seed=5)["aligned"]
    np.testing.assert_array_equal(by_gid(explorer.figure, "aligned").get_ydata(), expected)
    bound = by_gid(explorer.figure, "bound").get_ydata()
    explorer.base.value = 100.0
    assert not np.allclose(by_gid(explorer.figure, "bound").get_ydata(), bound)
    explorer.max_distance.value = 64
    assert len(by_gid(explorer.figure, "aligned").get_xdata()) == 65


# ---------------------------------------------------------------------------------------------------------------
# what a scaling method does to each pair (Llama 3.1 8B's head unless said otherwise)

LLAMA_HEAD = {"head_dim": 128, "base": 500000.0, "original_len": 8192}


def plain_wavelengths(head_dim: int, base: float) -> np.ndarray:
    return 2 * np.pi * base ** (np.arange(0, head_dim, 2) / head_dim)


def pairs_of(fig, kind: str) -> list[int]:
    """The pair indices drawn as ``kind`` in the ratio panel (an absent kind is no scatter)."""
    found = [c for ax in fig.axes for c in ax.collections if c.get_gid() == kind]
    return [int(x) for x in found[0].get_offsets()[:, 0]] if found else []


def test_scaling_dict_fills_in_what_each_method_needs() -> None:
    assert W.scaling_dict("linear", 4.0, 64) == {"rope_type": "linear", "factor": 4.0}
    assert W.scaling_dict("llama3", 8, 8192) == {
        "rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192,
        "low_freq_factor": 1.0, "high_freq_factor": 4.0,
    }  # fmt: skip
    assert W.scaling_dict("yarn", 4.0, 64, betas=(4.0, 1.0))["beta_fast"] == 4.0


def test_linear_divides_every_frequency_by_the_factor() -> None:
    factor = 4.0
    fig = W.scaling_figure("linear", factor, **LLAMA_HEAD)
    before = plain_wavelengths(128, 500000.0)
    np.testing.assert_allclose(by_gid(fig, "before").get_ydata(), before, rtol=1e-6)
    np.testing.assert_allclose(by_gid(fig, "after").get_ydata(), factor * before, rtol=1e-6)
    np.testing.assert_allclose(by_gid(fig, "interpolated").get_offsets()[:, 1], factor, rtol=1e-6)
    assert pairs_of(fig, "interpolated") == list(range(64))
    assert pairs_of(fig, "kept") == [] and "64 interpolated (of 64 pairs)" in fig.texts[0].get_text()


@pytest.mark.parametrize("factor", [2.0, 8.0, 40.0])
def test_ntk_keeps_pair_0_and_divides_the_last_pair_by_the_factor(factor: float) -> None:
    fig = W.scaling_figure("ntk", factor, **LLAMA_HEAD)
    assert pairs_of(fig, "kept") == [0]
    assert pairs_of(fig, "interpolated") == [63]
    assert pairs_of(fig, "blended") == list(range(1, 63))
    ratio = by_gid(fig, "blended").get_offsets()[:, 1]
    # b' = b * s**(d/(d-2)): pair i is slowed by s**(2i/(d-2)), a straight line on a log scale
    np.testing.assert_allclose(ratio, factor ** (2 * np.arange(1, 63) / 126), rtol=1e-5)


def test_llama3_on_llama31_keeps_29_blends_6_and_divides_the_29_that_never_turn_in_L() -> None:
    fig = W.scaling_figure("llama3", 8.0, **LLAMA_HEAD)
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
    fig = W.scaling_figure(method, factor, **LLAMA_HEAD)
    assert pairs_of(fig, "kept") == [int(i) for i in np.flatnonzero(turns >= 32)]
    assert pairs_of(fig, "interpolated") == [int(i) for i in np.flatnonzero(turns <= 1)]
    assert pairs_of(fig, "blended") == [int(i) for i in np.flatnonzero((turns > 1) & (turns < 32))]


def test_scaling_explorer_redraws_for_method_and_factor() -> None:
    explorer = W.scaling_explorer()
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
    toy = W.scaling_explorer(16, 50.0, 64, betas=(4.0, 1.0), method="ntk", factor=4.0)
    assert pairs_of(toy.figure, "kept") == [0] and pairs_of(toy.figure, "interpolated") == [7]


def test_scaling_explorer_updates_one_figure_and_draws_what_the_figure_function_draws() -> None:
    explorer = W.scaling_explorer(16, 50.0, 64, betas=(4.0, 1.0))
    figure = explorer.figure
    for name, value in (("method", "yarn"), ("factor", 2.0), ("method", "linear"), ("factor", 1.0),
                        ("method", "ntk"), ("factor", 64.0), ("method", "llama3")):  # fmt: skip
        explorer.controls[name].value = value
        assert explorer.figure is figure
        fresh = W.figure_png(W.scaling_figure(**explorer.values(), head_dim=16, base=50.0, original_len=64,
                                              betas=(4.0, 1.0)))  # fmt: skip
        np.testing.assert_array_equal(pixels(explorer.png), pixels(fresh), err_msg=f"{name}={value}")
    # a kind no pair has is an empty scatter and no legend entry
    explorer.set(method="linear", factor=4.0)
    assert pairs_of(explorer.figure, "kept") == []
    legend = [t.get_text() for t in explorer.figure.axes[1].get_legend().get_texts()]
    assert legend == ["interpolated: 8"]


def cpu_ms(call, repeats: int = 5) -> float:
    import time

    times = []
    for _ in range(repeats):
        start = time.process_time()
        call()
        times.append(time.process_time() - start)
    return 1000 * sorted(times)[repeats // 2]


@pytest.mark.parametrize("which", ["pair", "bias", "scaling"])
def test_slider_updates_cost_much_less_than_a_fresh_figure(which: str) -> None:
    """The three heaviest figures are updated in place: a slider move re-renders one figure with its canvas (text
    layouts cached), measured against building and rendering the same figure afresh (was the same cost, 0.14 to
    0.25 s of CPU per move on a 2-core test machine). A ratio, so the machine's speed does not matter."""
    if which == "pair":
        explorer, values = W.rope_pair_explorer(), [{"m": m, "n": m + 3} for m in (4, 9, 17, 30, 41)]

        def fresh(**v):
            return W.figure_png(W.rope_pair_figure(**v))
    elif which == "bias":
        explorer, values = W.bias_heatmap_explorer(), [{"head": h} for h in (1, 2, 3, 4, 5)]

        def fresh(**v):
            return W.figure_png(W.bias_heatmap_figure(**v))
    else:
        explorer = W.scaling_explorer()
        values = [{"method": m, "factor": f} for m, f in (("yarn", 4.0), ("ntk", 8.0), ("linear", 16.0))]

        def fresh(**v):
            return W.figure_png(W.scaling_figure(**v))

    moves = iter(values * 10)
    update = cpu_ms(lambda: explorer.set(**next(moves)))
    rebuild = cpu_ms(lambda: fresh(**next(moves)))
    assert update < 0.8 * rebuild, f"a slider move costs {update:.0f} ms, a fresh figure {rebuild:.0f} ms"


# ---------------------------------------------------------------------------------------------------------------
# widget plumbing, errors, headless


def test_static_copy_in_the_mimebundle() -> None:
    explorer = W.fingerprint_explorer(dim=8)
    bundle = explorer._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert base64.b64decode(bundle["image/png"]) == explorer.png
    assert "posref-fingerprint-explorer" in explorer._dom_classes


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: W.fingerprint_explorer(dim=7), "dim must be even"),
        (lambda: W.fingerprint_explorer(base=1.0), "base must be a finite number > 1"),
        (lambda: W.fingerprint_explorer(base=float("inf")), "base must be a finite number > 1"),
        (lambda: W.fingerprint_figure(-1), "position must be a finite number >= 0"),
        (lambda: W.rope_pair_figure(0, 0, pair=4, dim=8), r"pair must be an int in \[0, 4\)"),
        (lambda: W.bias_heatmap_figure(8, n_heads=8), r"head must be an int in \[0, 8\)"),
        (lambda: W.decay_curves(head_dim=30, seed=-1), "seed must be an int >= 0"),
        (lambda: W.decay_explorer(head_dim=33), "head_dim must be even"),
        (lambda: W.scaling_figure("dynamic", 2.0), "unknown method 'dynamic'"),
        (lambda: W.scaling_figure("yarn", 0.5), "factor must be a finite number >= 1"),
        (lambda: W.scaling_explorer(betas=(1.0, 32.0)), "beta_fast > beta_slow"),
        (lambda: W.scaling_explorer(head_dim=127), "head_dim must be even"),
        (lambda: W.scaling_explorer(original_len=0), "original_len must be a positive int"),
    ],
)
def test_bad_input_is_a_clear_error(call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()


HEADLESS = """
import sys
import matplotlib
from posref import widgets as W

explorers = [W.fingerprint_explorer(), W.rope_pair_explorer(), W.bias_heatmap_explorer(), W.decay_explorer(),
             W.scaling_explorer()]
changes = [("position", 50), ("m", 9), ("head", 4), ("seed", 2), ("method", "ntk")]
for explorer, (name, value) in zip(explorers, changes, strict=True):
    before = explorer.png
    explorer.controls[name].value = value
    assert explorer.png[:8] == b"\\x89PNG\\r\\n\\x1a\\n" and explorer.png != before, name
assert matplotlib.get_backend().lower() == "agg", matplotlib.get_backend()
assert "matplotlib.pyplot" not in sys.modules, "the explorers must not touch pyplot state"
print("headless ok")
"""


def run_headless(code: str) -> None:
    """Run ``code`` in a fresh Python with no display and the Agg backend; it must print "headless ok"."""
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.update(MPLBACKEND="Agg", PYTHONPATH=os.pathsep.join(filter(None, (str(REPO), env.get("PYTHONPATH")))))
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "headless ok" in result.stdout


def test_every_explorer_works_headless() -> None:
    run_headless(HEADLESS)
