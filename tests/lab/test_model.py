"""TinyDecoder: attention against the readable reference, causality, position swapping, learned-table limits."""

import math

import pytest
import torch

from posref import scaled_dot_product_attention
from posref.lab.model import TinyDecoder, build_model, causal_attention

VOCAB = 11
METHODS = ["learned", "sinusoidal", "alibi", "t5", "rope", "nope"]


def spec(method):
    return {"method": "learned", "max_positions": 64} if method == "learned" else method


def tokens(batch, length, seed=0):
    return torch.randint(0, VOCAB, (batch, length), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.float64, 1e-10)])
@pytest.mark.parametrize("with_bias", [False, True])
def test_causal_attention_matches_reference(dtype, tol, with_bias):
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(2, 3, 9, 8, generator=g, dtype=dtype) for _ in range(3))
    bias = torch.randn(3, 9, 9, generator=g, dtype=dtype) if with_bias else None
    expected = scaled_dot_product_attention(q, k, v, causal=True, bias=bias)
    torch.testing.assert_close(causal_attention(q, k, v, bias), expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("method", METHODS)
def test_output_at_t_ignores_later_tokens(method):
    model = build_model(VOCAB, spec(method), seed=0, d_model=16, n_heads=2)
    x = tokens(2, 20)
    changed = x.clone()
    changed[:, 12:] = (changed[:, 12:] + 1) % VOCAB  # alter every token from position 12 on
    before, after = model(x), model(changed)
    torch.testing.assert_close(before[:, :12], after[:, :12], rtol=0, atol=1e-6)
    assert (before[:, 12:] - after[:, 12:]).abs().max() > 1e-3  # and the later outputs do see them


@pytest.mark.parametrize("method", ["learned", "sinusoidal"])
def test_absolute_positions_tell_identical_tokens_apart_and_relative_ones_cannot(method):
    # identical tokens everywhere: only an absolute position signal makes outputs differ across positions.
    # Relative methods (ALiBi, T5, RoPE) only reweight identical values, and NoPE sees nothing at all.
    same = torch.full((1, 10), 3)
    varies = build_model(VOCAB, spec(method), seed=0, d_model=16, n_heads=2)(same)
    assert (varies[0, 1:] - varies[0, :1]).abs().max() > 1e-4
    for relative in ["alibi", "t5", "rope", "nope"]:
        flat = build_model(VOCAB, relative, seed=0, d_model=16, n_heads=2)(same)
        torch.testing.assert_close(flat[0, 1:], flat[0, :1].expand(9, -1), rtol=0, atol=1e-5)


def test_learned_table_past_its_length_is_a_clear_error():
    model = build_model(VOCAB, {"method": "learned", "max_positions": 16}, d_model=16, n_heads=2)
    model(tokens(1, 16))  # the whole table is fine
    with pytest.raises(IndexError, match=r"position 16 is outside the learned table.*max_positions=16"):
        model(tokens(1, 17))


def test_nope_and_rope_differ_only_in_position_handling():
    rope = build_model(VOCAB, {"method": "rope", "rope_base": 50.0}, seed=3, d_model=16, n_heads=2)
    nope = build_model(VOCAB, "nope", seed=3, d_model=16, n_heads=2)
    rope_state, nope_state = rope.state_dict(), nope.state_dict()
    assert rope_state.keys() == nope_state.keys()
    for key in rope_state:
        torch.testing.assert_close(rope_state[key], nope_state[key], rtol=0, atol=0)
    x = tokens(2, 12)
    # every token at position 0: all rotations are the identity (cos 1, sin 0), so RoPE is disabled
    zeros = torch.zeros(12, dtype=torch.long)
    torch.testing.assert_close(rope(x, positions=zeros), nope(x), rtol=1e-6, atol=1e-6)
    assert (rope(x) - nope(x)).abs().max() > 1e-5  # near-uniform attention at initialisation: small, not 0


def test_with_positions_keeps_every_weight_and_leaves_the_original_alone():
    model = build_model(VOCAB, {"method": "learned", "max_positions": 32}, seed=0, d_model=16, n_heads=2)
    x = tokens(2, 10)
    before = model(x).detach()
    dropped = model.with_positions("nope")
    old, new = dict(model.named_parameters()), dict(dropped.named_parameters())
    assert set(old) - set(new) == {"positions.table.weight"} and set(new) <= set(old)
    for name, param in new.items():
        torch.testing.assert_close(param, old[name], rtol=0, atol=0)
        assert param.data_ptr() != old[name].data_ptr()  # a copy, not shared storage
    with torch.no_grad():
        next(dropped.parameters()).add_(1.0)
    torch.testing.assert_close(model(x), before, rtol=0, atol=0)
    assert model.position_spec["method"] == "learned" and dropped.position_spec == {"method": "nope"}
    assert dropped.config()["positions"] == {"method": "nope"}


def test_rope_scaling_swap_equals_reading_positions_slower():
    # linear scaling (PI, arXiv 2306.15595) by s divides every frequency by s: at position s*p a scaled model
    # sees exactly the angles the original saw at p
    model = build_model(VOCAB, {"method": "rope", "rope_base": 50.0}, seed=0, d_model=16, n_heads=2)
    scaled = model.with_positions(
        {"method": "rope", "rope_base": 50.0, "rope_scaling": {"rope_type": "linear", "factor": 4.0}}
    )
    x = tokens(2, 12)
    stretched = 4 * torch.arange(12)
    torch.testing.assert_close(scaled(x, positions=stretched), model(x), rtol=1e-5, atol=1e-5)
    assert (scaled(x) - model(x)).abs().max() > 1e-5


def test_config_rebuilds_the_same_model():
    model = build_model(
        VOCAB, {"method": "t5", "t5_num_buckets": 8, "t5_max_distance": 20}, d_model=16, n_heads=2
    )
    clone = TinyDecoder(**model.config())
    clone.load_state_dict(model.state_dict())
    x = tokens(1, 30)
    torch.testing.assert_close(clone(x), model(x), rtol=0, atol=0)


def test_build_model_is_seeded_and_leaves_global_rng_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    a = build_model(VOCAB, "alibi", seed=5, d_model=16, n_heads=2)
    assert torch.equal(torch.rand(3), expected)
    b = build_model(VOCAB, "alibi", seed=5, d_model=16, n_heads=2)
    c = build_model(VOCAB, "alibi", seed=6, d_model=16, n_heads=2)
    assert torch.equal(a.tok_emb.weight, b.tok_emb.weight)
    assert not torch.equal(a.tok_emb.weight, c.tok_emb.weight)


def test_initial_loss_is_near_uniform():
    # GPT-2 initialisation (std 0.02) gives near-zero logits: the loss starts at about ln(V)
    model = build_model(VOCAB, "rope", d_model=16, n_heads=2)
    x = tokens(4, 16)
    loss = torch.nn.functional.cross_entropy(model(x).flatten(0, 1), x.flatten())
    assert abs(loss.item() - math.log(VOCAB)) < 0.05


@pytest.mark.parametrize("method", ["t5", "rope"])
def test_float64_matches_float32(method):
    model = build_model(VOCAB, spec(method), seed=0, d_model=16, n_heads=2)
    x = tokens(2, 12)
    expected = model(x)
    out = model.to(torch.float64)(x)
    assert out.dtype == torch.float64
    torch.testing.assert_close(out.float(), expected, rtol=1e-4, atol=1e-5)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("method", METHODS)
def test_cuda_matches_cpu(method):
    model = build_model(VOCAB, spec(method), seed=0, d_model=16, n_heads=2)
    x = tokens(2, 12)
    expected = model(x)
    out = model.to("cuda")(x.cuda())
    assert out.device.type == "cuda"
    torch.testing.assert_close(out.cpu(), expected, rtol=1e-3, atol=1e-4)
    swapped = model.with_positions("nope")
    assert all(p.device.type == "cuda" for p in swapped.parameters())
    swapped(x.cuda())


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize(
    "layers",
    [
        {"no_rope_layers": [1, 0]},
        {"attention_chunk_size": 5},
        {"no_rope_layers": [1, 0], "attention_chunk_size": 5},
    ],
)
def test_layer_options_on_cuda_match_cpu(layers):
    """The chunk mask and the layers without rotation follow the model to the GPU (positions made there)."""
    model = build_model(VOCAB, {"method": "rope", "rope_base": 50.0, **layers}, seed=0, d_model=16, n_heads=2)
    x = tokens(2, 12)
    expected = model(x, positions=torch.arange(3, 15))
    out = model.to("cuda")(x.cuda(), positions=torch.arange(3, 15, device="cuda"))
    torch.testing.assert_close(out.cpu(), expected, rtol=1e-3, atol=1e-4)


def test_bad_arguments_are_clear_errors():
    with pytest.raises(TypeError, match="method name or a dict with a 'method' key"):
        TinyDecoder(VOCAB, {"rope_base": 50.0})
    with pytest.raises(ValueError, match="unknown position method 'rotary'"):
        TinyDecoder(VOCAB, "rotary")
    with pytest.raises(ValueError, match="divisible by n_heads"):
        TinyDecoder(VOCAB, "nope", d_model=10, n_heads=4)
    model = build_model(VOCAB, "nope", d_model=16, n_heads=2)
    with pytest.raises(ValueError, match=r"idx must be \(batch, seq\)"):
        model(torch.zeros(5, dtype=torch.long))
    with pytest.raises(ValueError, match=r"positions must be \(T,\)"):
        model(tokens(1, 5), positions=torch.arange(4))


def test_a_rope_model_deep_copies_and_the_copy_shares_nothing_but_the_scaling_entry():
    """copy.deepcopy of a RoPE model (what a student's DroPE drop does) raised 'cannot pickle mappingproxy'."""
    import copy

    model = build_model(
        11, {"method": "rope", "rope_scaling": {"rope_type": "linear", "factor": 2.0}}, d_model=8
    )
    twin = copy.deepcopy(model)
    idx = torch.randint(0, 11, (1, 5))
    assert torch.equal(twin(idx), model(idx))
    assert twin.positions.rotary.method is model.positions.rotary.method
    assert twin.tok_emb.weight.data_ptr() != model.tok_emb.weight.data_ptr()


@pytest.mark.parametrize("method", METHODS)
def test_attention_weights_are_the_causal_softmax_and_leave_the_logits_alone(method):
    model = build_model(VOCAB, spec(method), seed=0, d_model=16, n_heads=2).eval()
    idx = tokens(3, 10)
    weights = []
    with torch.no_grad():
        logits = model(idx, attention_weights=weights)
        torch.testing.assert_close(logits, model(idx))
    assert len(weights) == model.n_layers and all(w.shape == (3, 2, 10, 10) for w in weights)
    for w in weights:
        assert w.triu(1).abs().max() == 0  # no weight on a later token
        torch.testing.assert_close(w.sum(-1), torch.ones(3, 2, 10))
    # the first layer's weights, recomputed from its inputs with the readable reference
    block, positions = model.blocks[0], torch.arange(10)
    with torch.no_grad():
        x = model.positions.embed(model.tok_emb(idx), positions)
        q, k, _v = block.attn.qkv(block.norm1(x)).view(3, 10, 3, 2, 8).permute(2, 0, 3, 1, 4)
        q, k = model.positions.rotate(q, k, positions)
        eye = torch.eye(10).expand(3, 2, 10, 10)  # values = one-hot rows: the output is the weights
        expected = scaled_dot_product_attention(
            q, k, eye, causal=True, bias=model.positions.bias(positions, positions)
        )
    torch.testing.assert_close(weights[0], expected, rtol=1e-5, atol=1e-6)


def test_layers_listed_0_in_no_rope_layers_run_without_rotation():
    """no_rope_layers [1, 1] is RoPE, [0, 0] is NoPE with the same weights, and [1, 0] is RoPE's first block then
    a block whose handler does nothing, computed here block by block."""
    from posref.lab.positions import NoPE

    rope = build_model(VOCAB, {"method": "rope", "rope_base": 50.0}, seed=4, d_model=16, n_heads=2)
    nope = build_model(VOCAB, "nope", seed=4, d_model=16, n_heads=2)
    x = tokens(2, 14)
    for flags, same_as in (([1, 1], rope), ([0, 0], nope)):
        twin = rope.with_positions({"method": "rope", "rope_base": 50.0, "no_rope_layers": flags})
        torch.testing.assert_close(twin(x), same_as(x), rtol=0, atol=0)
    mixed = rope.with_positions({"method": "rope", "rope_base": 50.0, "no_rope_layers": [1, 0]})
    positions = torch.arange(14)
    h = rope.tok_emb(x)
    h = rope.blocks[0](h, positions, rope.positions, None)
    h = rope.blocks[1](h, positions, NoPE(), None)
    torch.testing.assert_close(mixed(x), rope.head(rope.norm(h)), rtol=0, atol=0)
    assert (mixed(x) - rope(x)).abs().max() > 1e-6 and (mixed(x) - nope(x)).abs().max() > 1e-6
    assert rope.layer_rotates == (True, True)  # the copy's options never reach the original
    scaled = mixed.with_positions(
        {**mixed.position_spec, "rope_scaling": {"rope_type": "linear", "factor": 2.0}}
    )
    assert scaled.layer_rotates == (True, False)  # a scaling added to the spec keeps the layers' kinds
    rebuilt = TinyDecoder(**mixed.config())
    rebuilt.load_state_dict(mixed.state_dict())
    torch.testing.assert_close(rebuilt(x), mixed(x), rtol=0, atol=0)


@pytest.mark.parametrize("start", [0, 3])
def test_chunked_rope_layers_attend_within_their_chunk(start):
    """With attention_chunk_size c every layer of a RoPE model attends within position // c: the outputs of a chunk
    are the plain model's on that chunk alone (RoPE is relative, so where the chunk starts does not matter)."""
    rope = build_model(VOCAB, {"method": "rope", "rope_base": 50.0}, seed=5, d_model=16, n_heads=2)
    chunked = rope.with_positions({"method": "rope", "rope_base": 50.0, "attention_chunk_size": 5})
    x = tokens(2, 13)
    positions = torch.arange(start, start + 13)
    out = chunked(x, positions=positions)
    for first in range(0, 13):
        if first and positions[first] % 5:
            continue  # not the first token of a chunk
        end = next((t for t in range(first + 1, 13) if positions[t] % 5 == 0), 13)
        alone = rope(x[:, first:end], positions=positions[first:end])
        torch.testing.assert_close(out[:, first:end], alone, rtol=1e-5, atol=1e-5)
    wide = rope.with_positions({"method": "rope", "rope_base": 50.0, "attention_chunk_size": 13})
    torch.testing.assert_close(wide(x), rope(x), rtol=1e-5, atol=1e-5)  # one chunk: plain causal attention
    assert (out - rope(x, positions=positions)).abs().max() > 1e-4


def test_layer_options_are_checked():
    spec = {"method": "rope", "rope_base": 50.0}
    with pytest.raises(ValueError, match="applies to the 'rope' method only, got method 'nope'"):
        TinyDecoder(VOCAB, {"method": "nope", "no_rope_layers": [1, 0]}, d_model=16, n_heads=2)
    for flags in ([1], [1, 2], [1.0, 0], "10"):
        with pytest.raises(
            ValueError, match=r"one 1 \(a RoPE layer\) or 0 \(no rotation\) per layer, 2 in all"
        ):
            TinyDecoder(VOCAB, {**spec, "no_rope_layers": flags}, d_model=16, n_heads=2)
    with pytest.raises(ValueError, match="attention_chunk_size"):
        TinyDecoder(VOCAB, {**spec, "attention_chunk_size": 0}, d_model=16, n_heads=2)
