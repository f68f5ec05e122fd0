"""rope_analysis against independent derivations: apply_rope at explicit positions, loops, closed forms."""

import math
from fractions import Fraction

import pytest
import torch

from posref import apply_rope, rope_cos_sin, rope_frequencies
from posref.rope_analysis import p_rope_inv_freq, pair_norms, rope_scores_by_distance


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("partial", [1.0, 0.5])
def test_scores_by_distance_match_rotating_at_positions(layout, partial):
    torch.manual_seed(0)
    inv_freq, _ = rope_frequencies(16, base=100.0, partial_rotary_factor=partial)
    q, k = torch.randn(3, 16, dtype=torch.float64), torch.randn(3, 16, dtype=torch.float64)
    distances = torch.tensor([-5, 0, 1, 7, 40])
    got = rope_scores_by_distance(q, k, inv_freq, distances, layout=layout)
    for n in (0, 13):  # the score must not depend on the key's absolute position
        cos_k, sin_k = rope_cos_sin(torch.tensor([n]), inv_freq)
        cos_q, sin_q = rope_cos_sin(n + distances, inv_freq)
        rk = apply_rope(k[:, None].expand(3, 1, 16), cos_k.double(), sin_k.double(), layout=layout)
        rq = apply_rope(q[:, None].expand(3, 5, 16), cos_q.double(), sin_q.double(), layout=layout)
        want = (rq * rk).sum(-1)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)  # the oracle forms its angles in float32


def test_all_ones_pairing_is_sum_of_cosines():
    # q = k = all ones: A_i = 2, B_i = 0, so the score is 2 * sum_i cos(d w_i) (RoFormer's decaying case)
    inv_freq, _ = rope_frequencies(8)
    d = torch.arange(50)
    got = rope_scores_by_distance(torch.ones(8), torch.ones(8), inv_freq, d)
    want = torch.tensor([2 * sum(math.cos(int(di) * float(w)) for w in inv_freq) for di in d])
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_pair_norms_loop_and_layout_relation():
    x = torch.randn(4, 10)
    half = pair_norms(x)
    inter = pair_norms(x, layout="interleaved")
    for i in range(5):
        torch.testing.assert_close(half[:, i], (x[:, i] ** 2 + x[:, i + 5] ** 2).sqrt())
        torch.testing.assert_close(inter[:, i], (x[:, 2 * i] ** 2 + x[:, 2 * i + 1] ** 2).sqrt())
    inv_freq, _ = rope_frequencies(10)
    cos, sin = rope_cos_sin(torch.arange(4), inv_freq)
    torch.testing.assert_close(pair_norms(apply_rope(x, cos, sin)), half)  # rotation keeps each pair's length


def test_p_rope_keeps_highest_fraction():
    inv_freq, _ = rope_frequencies(16)  # 8 pairs, decreasing
    torch.testing.assert_close(p_rope_inv_freq(inv_freq, 1.0), inv_freq)
    assert p_rope_inv_freq(inv_freq, 0.0).eq(0).all()
    quarter = p_rope_inv_freq(inv_freq, 0.25)
    torch.testing.assert_close(quarter[:2], inv_freq[:2])
    assert quarter[2:].eq(0).all()
    assert p_rope_inv_freq(inv_freq, 0.3).ne(0).sum() == 2  # floor(0.3 * 8) = 2
    shuffled = inv_freq[[3, 0, 7, 1, 5, 2, 6, 4]]
    kept = p_rope_inv_freq(shuffled, 0.5)
    assert set(kept[kept != 0].tolist()) == set(inv_freq[:4].tolist())


def test_p_rope_keeps_the_exact_fraction_where_floating_point_falls_short():
    # 0.58 * 50 is 28.999999999999996 in floating point; the fraction p of 50 pairs is exactly 29
    inv_freq, _ = rope_frequencies(100)
    for p in (0.58, 0.29, 0.57):
        exact = math.floor(Fraction(str(p)) * 50)
        assert p_rope_inv_freq(inv_freq, p).ne(0).sum() == exact, p


def test_p_rope_rejects_bad_p():
    with pytest.raises(ValueError, match="p must be a number in"):
        p_rope_inv_freq(torch.ones(4), 1.5)
