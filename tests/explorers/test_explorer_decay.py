"""posref.explorers.decay: does RoPE decay? The aligned and random scores in closed form, RoFormer's Abel-
summation inequality, and the explorer driven by its sliders.

Widgets are driven by setting slider values; a redraw must change the PNG the ``Output`` shows (decoded pixels
compared) and the plotted data must follow the new value.
"""

from __future__ import annotations

import numpy as np
import pytest
from explorer_helpers import assert_pixels_differ, by_gid

from posref.explorers.decay import decay_curves, decay_explorer, roformer_bound


def pair_norms_and_products(q: np.ndarray, k: np.ndarray):
    """Half layout: pair i is (i, i + D/2)."""
    h = q.shape[-1] // 2
    qa, qb, ka, kb = q[:h], q[h:], k[:h], k[h:]
    return qa * ka + qb * kb, qb * ka - qa * kb


def test_decay_curves_match_the_closed_forms() -> None:
    head_dim, base, max_distance = 64, 10000.0, 600
    curves = decay_curves(head_dim, base, max_distance, seed=3)
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
    curves = [decay_curves(128, 10000.0, 512, seed=s) for s in range(8)]
    aligned = np.stack([c["aligned"] for c in curves])
    random = np.stack([c["random"] for c in curves])
    assert aligned[:, 200:].max() < 0.8 and aligned[:, 0].min() == pytest.approx(1.0, abs=1e-6)
    # random q, k: the score at distance 0 is no larger than far away (no decay to speak of)
    assert np.abs(random[:, 0]).mean() < 3 * np.abs(random[:, 200:]).mean()


def test_roformer_bound_is_an_upper_bound_by_abel_summation() -> None:
    n_pairs = 32
    w = 10000.0 ** (-np.arange(n_pairs) * 2 / (2 * n_pairs))
    distances = np.arange(0, 2000, 7)
    bound = roformer_bound(distances, w)
    assert bound[0] == pytest.approx((n_pairs + 1) / 2)  # |S_j| = j at distance 0
    rng = np.random.default_rng(0)
    for _ in range(20):
        h = rng.normal(size=n_pairs) + 1j * rng.normal(size=n_pairs)
        step = np.abs(np.diff(np.append(h, 0))).max()  # h_{N} = 0
        sums = np.abs(np.exp(1j * distances[:, None] * w) @ h)
        assert np.all(sums <= n_pairs * step * bound + 1e-9)
    assert bound[-1] < 0.5 * bound[0]


def test_decay_explorer_redraws_for_seed_base_and_distance() -> None:
    explorer = decay_explorer(head_dim=32, max_distance=256)
    assert set(explorer.controls) == {"base", "seed", "max_distance"}
    assert explorer.base.value == pytest.approx(10000.0)
    png, random = explorer.png, by_gid(explorer.figure, "random").get_ydata()
    explorer.seed.value = 5
    assert_pixels_differ(png, explorer.png)
    assert not np.allclose(by_gid(explorer.figure, "random").get_ydata(), random)
    expected = decay_curves(32, 10000.0, 256, seed=5)["aligned"]
    np.testing.assert_array_equal(by_gid(explorer.figure, "aligned").get_ydata(), expected)
    bound = by_gid(explorer.figure, "bound").get_ydata()
    explorer.base.value = 100.0
    assert not np.allclose(by_gid(explorer.figure, "bound").get_ydata(), bound)
    explorer.max_distance.value = 64
    assert len(by_gid(explorer.figure, "aligned").get_xdata()) == 65


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: decay_curves(head_dim=30, seed=-1), "seed must be an int >= 0"),
        (lambda: decay_explorer(head_dim=33), "head_dim must be even"),
    ],
)
def test_bad_input_is_a_clear_error(call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()
