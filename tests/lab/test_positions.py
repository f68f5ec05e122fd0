import pytest
import torch
from conftest import assert_close

from posref import (
    POSITION_METHODS,
    NoPE,
    alibi_bias,
    alibi_slopes,
    handler_attention,
    make_position_handler,
    sinusoidal_pe,
)


def handler(method, **kw):
    return make_position_handler(method, d_model=16, n_heads=4, max_positions=8, **kw)


def test_every_method_uses_only_its_hook():
    x, q, k = torch.randn(2, 5, 16), torch.randn(2, 4, 5, 4), torch.randn(2, 4, 5, 4)
    pos = torch.arange(5)
    touches = {}
    for method in POSITION_METHODS:
        h = handler(method)
        rq, rk = h.rotate(q, k, pos)
        touches[method] = (
            not torch.equal(h.embed(x, pos), x),
            not (torch.equal(rq, q) and torch.equal(rk, k)),
            h.bias(pos, pos) is not None,
        )
    assert touches == {
        "learned": (True, False, False),
        "sinusoidal": (True, False, False),
        "alibi": (False, False, True),
        "t5": (False, False, True),
        "rope": (False, True, False),
        "nope": (False, False, False),
    }


def test_nope_is_a_method_not_a_missing_argument():
    h = handler("nope")
    assert isinstance(h, NoPE) and h.name == "nope" and not list(h.parameters())


def test_hooks_compute_what_the_core_computes():
    x, pos = torch.zeros(1, 6, 16), torch.arange(6)
    assert_close(handler("sinusoidal").embed(x, pos)[0], sinusoidal_pe(6, 16), atol=0)
    assert_close(handler("alibi").bias(pos, pos), alibi_bias(alibi_slopes(4), pos, pos), atol=0)


def test_learned_past_its_table_and_bad_choices():
    with pytest.raises(IndexError, match="outside the learned table"):
        handler("learned").embed(torch.zeros(1, 9, 16), torch.arange(9))
    with pytest.raises(ValueError, match="unknown position method 'absolute'"):
        handler("absolute")
    with pytest.raises(ValueError, match="divisible"):
        make_position_handler("rope", d_model=10, n_heads=4)
    with pytest.raises(ValueError, match="needs max_positions"):
        make_position_handler("learned", d_model=16, n_heads=4)
    with pytest.raises(ValueError, match="n_heads must be a positive int, got 0"):
        make_position_handler("alibi", d_model=16, n_heads=0)  # was ZeroDivisionError


def test_sinusoidal_positions_must_be_non_negative_integers():
    h = handler("sinusoidal")
    x = torch.zeros(1, 2, 16)
    # position -1 used to read the table's last row (here position 3's encoding), without a word
    with pytest.raises(ValueError, match="sinusoidal positions must be >= 0, got -1"):
        h.embed(x, torch.tensor([-1, 3]))
    with pytest.raises(TypeError, match="positions must hold integer positions"):
        h.embed(x, torch.tensor([0.0, 1.0]))


def test_sinusoidal_embeds_each_token_at_its_own_position():
    # positions need not start at 0 (a window read from the middle of a text, a KV-cache step): row p of the
    # Vaswani table is sin(p / 10000**(2i/d)) in dim 2i and cos(...) in dim 2i + 1
    pos = torch.tensor([5, 7, 6])
    out = handler("sinusoidal").embed(torch.zeros(1, 3, 16), pos)[0]
    angle = pos[:, None].double() / 10000.0 ** (torch.arange(0, 16, 2).double() / 16)  # (3, 8)
    expected = torch.stack((angle.sin(), angle.cos()), dim=-1).flatten(1)  # interleaved sin, cos
    assert_close(out.double(), expected, atol=1e-6)


def test_t5_handler_bias_runs_from_queries_to_keys():
    # one query at position 3 against keys 0..3 (a decoding step): (H, 1, 4), the key d positions back in
    # bucket d (distances below 16 have their own bucket); a decoder's buckets are one-sided, so keys after
    # a query share bucket 0 with the query's own position
    h = handler("t5")
    table = h.relative.embedding.weight  # (num_buckets, H)
    assert_close(h.bias(torch.tensor([3]), torch.arange(4))[:, 0, :], table[[3, 2, 1, 0]].T, atol=0)
    assert_close(h.bias(torch.tensor([0]), torch.arange(4))[:, 0, :], table[[0, 0, 0, 0]].T, atol=0)


def test_handler_options_reach_the_handler():
    rope = handler("rope", rope_layout="interleaved", rope_base=50.0)
    assert rope.rotary.layout == "interleaved" and rope.rotary.base == 50.0
    t5 = handler("t5", t5_num_buckets=8, t5_max_distance=20)
    assert t5.relative.num_buckets == 8 and t5.relative.max_distance == 20


@pytest.mark.parametrize("method", POSITION_METHODS)
def test_handler_attention_is_the_models_attention_layer(method):
    """With every token a query, ``handler_attention`` gives the TinyDecoder's attention layer (its fused kernel,
    output projection set to the identity) on the handler's embedded tokens."""
    from posref.lab.model import CausalSelfAttention

    torch.manual_seed(0)
    h, x, start = handler(method, t5_num_buckets=8, t5_max_distance=16), torch.randn(2, 6, 16), 2
    layer = CausalSelfAttention(16, 4)
    with torch.no_grad():
        layer.out.weight.copy_(torch.eye(16))
        pos = torch.arange(start, start + 6)
        expected = layer(h.embed(x, pos), pos, h, h.bias(pos, pos))
        got = handler_attention(h, x, layer.qkv.weight, 4, start=start)
    assert_close(got.transpose(1, 2).reshape(2, 6, 16), expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("method", POSITION_METHODS)
def test_a_kv_cache_step_gives_the_last_rows_of_the_whole_layer(method):
    """Queries for the last ``n_new`` tokens only, every token a key: the same rows as the whole layer gives."""
    torch.manual_seed(1)
    h, x, w = (
        handler(method, t5_num_buckets=8, t5_max_distance=16),
        torch.randn(1, 7, 16),
        torch.randn(48, 16) / 4,
    )
    whole = handler_attention(h, x, w, 4, start=1)
    for n_new in (1, 3):
        assert_close(
            handler_attention(h, x, w, 4, start=1, n_new=n_new), whole[:, :, -n_new:], atol=1e-5, rtol=1e-5
        )


def test_handler_attention_rejects_a_step_longer_than_the_input():
    with pytest.raises(ValueError, match="n_new"):
        handler_attention(NoPE(), torch.randn(1, 3, 16), torch.randn(48, 16), 4, n_new=4)
