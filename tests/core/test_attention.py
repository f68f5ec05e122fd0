import math

import pytest
import torch
from conftest import assert_close

from posref import (
    attention_scores,
    causal_mask,
    equivariance_error,
    is_permutation_equivariant,
    permute_sequence,
    scaled_dot_product_attention,
)


def loop_attention(q, k, v, causal=False, bias=None):
    """Obviously-correct oracle: one query, one key at a time."""
    h, tq, d = q.shape
    tk = k.shape[1]
    out = torch.zeros(h, tq, v.shape[-1], dtype=torch.float64)
    for a in range(h):
        for i in range(tq):
            scores = []
            for j in range(tk):
                if causal and j > tk - tq + i:
                    scores.append(-math.inf)
                    continue
                s = float(q[a, i] @ k[a, j]) / math.sqrt(d)
                if bias is not None:
                    s += float(bias[a, i, j])
                scores.append(s)
            w = torch.softmax(torch.tensor(scores, dtype=torch.float64), 0)
            out[a, i] = (w[:, None] * v[a].double()).sum(0)
    return out


@pytest.mark.parametrize("causal", [False, True])
def test_matches_loop_oracle(causal):
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(3, 5, 4, generator=g, dtype=torch.float64) for _ in range(3))
    bias = torch.randn(3, 5, 5, generator=g, dtype=torch.float64)
    assert_close(
        scaled_dot_product_attention(q, k, v, causal=causal, bias=bias),
        loop_attention(q, k, v, causal, bias),
        atol=1e-12,
    )


def test_matches_torch_sdpa(device):
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(2, 4, 7, 8, generator=g).to(device) for _ in range(3))
    expected = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert_close(scaled_dot_product_attention(q, k, v, causal=True), expected, atol=1e-5)


def test_causal_mask_aligns_queries_with_last_keys():
    m = causal_mask(2, 4)
    assert m.tolist() == [[True, True, True, False], [True, True, True, True]]


def test_attention_without_mask_is_permutation_equivariant():
    g = torch.Generator().manual_seed(2)
    wq, wk, wv = (torch.randn(8, 8, generator=g) for _ in range(3))

    def self_attention(x):  # (T, 8) -> (T, 8)
        return scaled_dot_product_attention((x @ wq)[None], (x @ wk)[None], (x @ wv)[None])[0]

    def causal_self_attention(x):
        return scaled_dot_product_attention((x @ wq)[None], (x @ wk)[None], (x @ wv)[None], causal=True)[0]

    x = torch.randn(6, 8, generator=g)
    perm = torch.tensor([3, 0, 5, 1, 4, 2])
    assert equivariance_error(self_attention, x, perm) < 1e-5
    assert is_permutation_equivariant(self_attention, x, generator=g)
    assert equivariance_error(causal_self_attention, x, perm) > 1e-2
    assert not is_permutation_equivariant(causal_self_attention, x, perm)


def test_permute_sequence_and_errors():
    x = torch.arange(6.0).reshape(3, 2)
    assert permute_sequence(x, torch.tensor([2, 0, 1])).tolist() == [[4, 5], [0, 1], [2, 3]]
    with pytest.raises(ValueError, match="permutation of range\\(3\\)"):
        permute_sequence(x, torch.tensor([0, 0, 1]))


def test_bad_inputs_are_clear_errors():
    q = torch.randn(2, 3, 4)
    with pytest.raises(ValueError, match="same head_dim"):
        attention_scores(q, torch.randn(2, 3, 5))
    with pytest.raises(ValueError, match="bias must end in"):
        attention_scores(q, q, bias=torch.zeros(2, 3, 4))
    with pytest.raises(ValueError, match="heads"):
        attention_scores(q, q, bias=torch.zeros(5, 3, 3))
    with pytest.raises(TypeError, match="floating-point"):
        attention_scores(q.long(), q.long())
    with pytest.raises(TypeError, match="same dtype, got torch.float32 and torch.float64"):
        attention_scores(q, q.double())  # was torch's "expected scalar type Float but found Double"
    with pytest.raises(ValueError, match="same length"):
        scaled_dot_product_attention(q, q, torch.randn(2, 4, 4))
    # a bias with more sequences than q used to broadcast the output up: (1, 2, 3, 4) in, (4, 2, 3, 4) out
    q4 = torch.randn(1, 2, 3, 4)
    with pytest.raises(ValueError, match=r"bias of shape \(4, 2, 3, 3\) does not broadcast.*\(1, 2, 3, 3\)"):
        scaled_dot_product_attention(q4, q4, q4, bias=torch.zeros(4, 2, 3, 3))
