import pytest
import torch
from conftest import assert_close

from posref import T5RelativeBias, alibi_bias, alibi_slopes, scaled_dot_product_attention
from posref.kernels.flex import alibi_score_mod, flex_biased_attention, t5_score_mod


@pytest.mark.parametrize("q_len,k_len,causal", [(32, 32, True), (32, 32, False), (8, 40, True)])
def test_alibi_score_mod_equals_materialised_bias(device, q_len, k_len, causal):
    g = torch.Generator().manual_seed(0)
    q = torch.randn(2, 6, q_len, 16, generator=g).to(device)
    k, v = (torch.randn(2, 6, k_len, 16, generator=g).to(device) for _ in range(2))
    slopes = alibi_slopes(6, device=device)
    bias = alibi_bias(
        slopes, torch.arange(k_len - q_len, k_len, device=device), torch.arange(k_len, device=device)
    )
    expected = scaled_dot_product_attention(q, k, v, causal=causal, bias=bias)
    got = flex_biased_attention(q, k, v, alibi_score_mod(slopes, q_offset=k_len - q_len), causal=causal)
    assert_close(got, expected, atol=1e-5)


@pytest.mark.parametrize("bidirectional", [True, False])
def test_t5_score_mod_equals_materialised_bias(device, bidirectional):
    torch.manual_seed(1)
    t5 = T5RelativeBias(4, bidirectional=bidirectional, num_buckets=16, max_distance=20).to(device)
    q, k, v = (torch.randn(1, 4, 48, 8, device=device) for _ in range(3))
    with torch.no_grad():
        expected = scaled_dot_product_attention(q, k, v, causal=True, bias=t5(48, 48))
        got = flex_biased_attention(q, k, v, t5_score_mod(t5, 48, 48), causal=True)
    assert_close(got, expected, atol=1e-5)


def test_flex_errors():
    x = torch.randn(4, 8, 16)
    with pytest.raises(ValueError, match=r"\(B, H, T, D\)"):
        flex_biased_attention(x, x, x, alibi_score_mod(alibi_slopes(4)))


def test_score_mods_must_fit_the_lengths_they_are_used_with():
    t5 = T5RelativeBias(2, bidirectional=True)
    q, k = torch.randn(1, 2, 2, 8), torch.randn(1, 2, 3, 8)
    # more queries than keys used to index past the bucket table (an IndexError on CPU, an unchecked read on CUDA)
    with pytest.raises(ValueError, match="q_len <= k_len .* got 5 > 3"):
        t5_score_mod(t5, 5, 3)
    # a table built for other lengths gave a wrong bias without a word
    with pytest.raises(ValueError, match=r"built for \(q_len, k_len\) = \(3, 3\) but q and k have \(2, 3\)"):
        flex_biased_attention(q, k, k, t5_score_mod(t5, 3, 3), causal=False)
    # ALiBi's query offset must agree with the causal mask, which puts the queries on the last keys
    with pytest.raises(ValueError, match="q_offset=1"):
        flex_biased_attention(q, k, k, alibi_score_mod(alibi_slopes(2)), causal=True)
    with pytest.raises(ValueError, match="q_offset must be an int >= 0"):
        alibi_score_mod(alibi_slopes(2), q_offset=-1)
