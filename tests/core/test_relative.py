import math

import pytest
import torch
from conftest import assert_close

from posref import T5RelativeBias, alibi_bias, alibi_slopes, t5_relative_position_bucket


def test_alibi_slopes_8_heads_closed_form():
    assert alibi_slopes(8, dtype=torch.float64).tolist() == [2.0**-k for k in range(1, 9)]


def test_alibi_slopes_12_heads_rule():
    expected = [2.0**-k for k in range(1, 9)] + [2.0**-0.5, 2.0**-1.5, 2.0**-2.5, 2.0**-3.5]
    assert_close(
        alibi_slopes(12, dtype=torch.float64), torch.tensor(expected, dtype=torch.float64), atol=1e-15
    )


@pytest.mark.parametrize("n", [1, 2, 3, 5, 6, 12, 16, 24, 40, 112])
def test_alibi_slopes_match_bloom(n):
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor

    # Bloom's alibi tensor at key position 1 (mask all ones) is exactly the slope of each head
    bloom = build_alibi_tensor(torch.ones(1, 2), n, torch.float32)[:, 0, 1]
    assert_close(alibi_slopes(n), bloom, atol=1e-7)


def test_alibi_bias_values_and_shape():
    slopes = alibi_slopes(4)
    bias = alibi_bias(slopes, torch.arange(3), torch.arange(5))
    assert bias.shape == (4, 3, 5)
    for h in range(4):
        for i in range(3):
            for j in range(5):
                assert bias[h, i, j].item() == pytest.approx(-slopes[h].item() * abs(i - j))
    # relative: the same pair of offsets far away gets the same bias
    assert torch.equal(
        alibi_bias(slopes, torch.tensor([1]), torch.tensor([3])),
        alibi_bias(slopes, torch.tensor([101]), torch.tensor([103])),
    )


def hand_bucket(rel, bidirectional, num_buckets, max_distance):
    """Direct transcription of the T5 paper's description, in float64."""
    b = 0
    if bidirectional:
        num_buckets //= 2
        b = num_buckets if rel > 0 else 0
        n = abs(rel)
    else:
        n = max(-rel, 0)
    max_exact = num_buckets // 2
    if n < max_exact:
        return b + n
    large = max_exact + int(
        math.log(n / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
    )
    return b + min(large, num_buckets - 1)


def test_t5_small_distances_hand_table():
    rel = torch.arange(-10, 11)
    got = t5_relative_position_bucket(rel).tolist()
    # bidirectional, 32 buckets: keys before the query (rel < 0) use 0..15, after (rel > 0) use 16..31
    # distances 8..10 are the first log bucket: 8 + trunc(ln(n/8) / ln(128/8) * 8) = 8 for n in 8..10
    expected = [8, 8, 8, 7, 6, 5, 4, 3, 2, 1, 0, 17, 18, 19, 20, 21, 22, 23, 24, 24, 24]
    assert got == expected


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("num_buckets,max_distance", [(32, 128), (16, 64), (8, 20)])
def test_t5_bucket_properties(bidirectional, num_buckets, max_distance):
    rel = torch.arange(-3000, 3001)
    b = t5_relative_position_bucket(
        rel, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance
    )
    assert int(b.min()) >= 0 and int(b.max()) < num_buckets
    assert b.tolist() == [hand_bucket(r, bidirectional, num_buckets, max_distance) for r in rel.tolist()]
    past = b[:3001].flip(0)  # distance 0, 1, 2, ... into the past
    assert bool((past[1:] >= past[:-1]).all()), "buckets must be monotone in distance"
    assert int(past[-1]) == (num_buckets // 2 if bidirectional else num_buckets) - 1, (
        "far distances are clipped"
    )


def test_t5_matches_transformers():
    from transformers.models.t5.modeling_t5 import T5Attention

    rel = torch.arange(-500, 501)[None, :] - torch.arange(0, 7)[:, None]
    for bidirectional in (True, False):
        ref = T5Attention._relative_position_bucket(
            rel, bidirectional=bidirectional, num_buckets=32, max_distance=128
        )
        assert torch.equal(t5_relative_position_bucket(rel, bidirectional=bidirectional), ref)


def test_t5_module_uses_key_minus_query():
    mod = T5RelativeBias(3, bidirectional=True)
    with torch.no_grad():
        mod.embedding.weight.copy_(torch.arange(32.0)[:, None] * torch.tensor([1.0, 10.0, 100.0]))
    bias = mod(torch.arange(4), torch.arange(6))
    assert bias.shape == (3, 4, 6)
    # query 0, key 2: relative position +2 -> bucket 16 + 2 = 18
    assert bias[:, 0, 2].tolist() == [18.0, 180.0, 1800.0]
    assert bias[:, 2, 0].tolist() == [2.0, 20.0, 200.0]


def test_relative_errors():
    with pytest.raises(TypeError, match="integer positions"):
        t5_relative_position_bucket(torch.tensor([1.5]))
    with pytest.raises(ValueError, match="1-D"):
        alibi_bias(alibi_slopes(2), torch.zeros(2, 2, dtype=torch.long), 3)
    with pytest.raises(ValueError, match="positive int"):
        alibi_slopes(0)
    with pytest.raises(TypeError, match="dtype must be a floating-point"):
        alibi_slopes(4, dtype=torch.long)  # used to return slopes of 0


def test_alibi_bias_bad_lengths_and_slopes():
    slopes = alibi_slopes(2)
    with pytest.raises(ValueError, match="q_positions as a length .* must be >= 0, got -3"):
        alibi_bias(slopes, -3, 4)  # was torch's "upper bound and lower bound inconsistent with step sign"
    with pytest.raises(TypeError, match="k_positions must be a torch.Tensor, got bool"):
        alibi_bias(slopes, 3, True)  # was read as a length of 1
    with pytest.raises(TypeError, match="slopes must be a floating-point tensor"):
        alibi_bias(torch.tensor([1, 2]), 3, 4)  # integer slopes gave an integer bias
    with pytest.raises(ValueError, match="q_positions as a length"):
        T5RelativeBias(2, bidirectional=True)(-1, 3)


def test_t5_bucket_errors_name_the_argument_as_given():
    rel = torch.arange(-5, 6)
    # the message used to report the halved (per-direction) count: "got num_buckets=1" for a 3
    with pytest.raises(ValueError, match=r"num_buckets must be >= 4 \(bidirectional.*got 3$"):
        t5_relative_position_bucket(rel, num_buckets=3)
    with pytest.raises(ValueError, match=r"num_buckets must be >= 2 .*got 1$"):
        t5_relative_position_bucket(rel, bidirectional=False, num_buckets=1)
    with pytest.raises(
        ValueError, match=r"max_distance must exceed the 8 .*num_buckets=32.*got max_distance=8"
    ):
        t5_relative_position_bucket(rel, num_buckets=32, max_distance=8)
    # the smallest valid settings give buckets in range
    assert t5_relative_position_bucket(rel, num_buckets=4, max_distance=2).tolist() == [1] * 5 + [0] + [3] * 5
