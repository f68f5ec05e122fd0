"""RotaryEmbedding with scaling: attention factor, the cos/sin cache, and the length-dependent methods.

Oracles: the uncached path (``rope_frequencies`` -> ``rope_cos_sin`` -> ``apply_rope`` at the current length),
the transformers library's own rotary module driven with the same sequence of position ids (its
``dynamic_rope_update`` is the stateful rule posref follows), and the relative property of RoPE.
"""

from __future__ import annotations

import pytest
import torch
from conftest import assert_close

from posref.rope import RotaryEmbedding, apply_rope, rope_cos_sin
from posref.scaling import ORIGINAL_LEN_KEY, SCALING_METHODS, default_inv_freq, rope_frequencies

HEAD_DIM = 32
L = 64


def at_length(name: str) -> dict | None:
    """The registry's example of method ``name`` for a ``HEAD_DIM`` head trained on ``L`` tokens (per-pair
    lists cut to ``HEAD_DIM / 2`` entries); None for plain RoPE."""
    if name == "default":
        return None
    method = SCALING_METHODS[name]
    params = {k: v[: HEAD_DIM // 2] if isinstance(v, list) else v for k, v in method.example.items()}
    if method.needs_original_len:
        params[ORIGINAL_LEN_KEY] = L
    return {"rope_type": name, **params}


# every registered method, so a new one is covered by the cache tests without an edit here
SCALINGS = {name: at_length(name) for name in SCALING_METHODS}
DYNAMIC = SCALINGS["dynamic"]
LONGROPE = SCALINGS["longrope"]


def uncached(x: torch.Tensor, positions: torch.Tensor, scaling, seq_len: int) -> torch.Tensor:
    """Rotate ``x`` at ``positions`` with frequencies computed afresh for ``seq_len`` (no module, no cache)."""
    inv_freq, attention_factor = rope_frequencies(HEAD_DIM, base=10000.0, scaling=scaling, seq_len=seq_len)
    cos, sin = rope_cos_sin(positions, inv_freq, attention_factor=attention_factor)
    return apply_rope(x, cos, sin)


@pytest.mark.parametrize("name", list(SCALINGS))
@pytest.mark.parametrize("length", [5, 64, 65, 300])
def test_cached_equals_uncached(name, length):
    torch.manual_seed(0)
    rope = RotaryEmbedding(HEAD_DIM, base=10000.0, scaling=SCALINGS[name], initial_cache_len=16)
    q, k = torch.randn(2, 3, length, HEAD_DIM), torch.randn(2, 3, length, HEAD_DIM)
    positions = torch.arange(length)
    rq, rk = rope(q, k)
    assert_close(rq, uncached(q, positions, SCALINGS[name], length), atol=1e-6)
    assert_close(rk, uncached(k, positions, SCALINGS[name], length), atol=1e-6)


def test_attention_factor_scales_the_rotated_norm():
    # YaRN's factor multiplies cos and sin: the rotated dims' norm grows by that factor, the rest does not
    scaling = SCALINGS["yarn"]
    _, factor = rope_frequencies(HEAD_DIM, scaling=scaling)
    rope = RotaryEmbedding(2 * HEAD_DIM, scaling=scaling, partial_rotary_factor=0.5)
    x = torch.randn(7, 2 * HEAD_DIM, dtype=torch.float64)
    out = rope.rotate(x)
    assert_close(out[:, :HEAD_DIM].norm(dim=-1), factor * x[:, :HEAD_DIM].norm(dim=-1), atol=0, rtol=1e-6)
    assert_close(out[:, HEAD_DIM:], x[:, HEAD_DIM:], atol=0)


def test_past_the_cache_grows_and_stays_correct():
    rope = RotaryEmbedding(HEAD_DIM, scaling=SCALINGS["yarn"], initial_cache_len=8)
    x = torch.randn(1, 100, HEAD_DIM)
    assert rope.cached_len == 0
    early = rope.rotate(x[:, :5])
    assert rope.cached_len == 8
    late = rope.rotate(x[:, :1], offset=99)  # one token far past the cache (a decoding step)
    assert rope.cached_len >= 100
    assert_close(late, uncached(x[:, :1], torch.tensor([99]), SCALINGS["yarn"], 100), atol=1e-6)
    # the grown cache still serves early positions with the same values
    assert_close(rope.rotate(x[:, :5]), early, atol=0)


def test_cast_module_keeps_float32_frequencies():
    rope = RotaryEmbedding(HEAD_DIM, scaling=SCALINGS["llama3"])
    x = torch.randn(1, 3000, HEAD_DIM).to(torch.bfloat16)
    expected = rope.rotate(x)
    half = RotaryEmbedding(HEAD_DIM, scaling=SCALINGS["llama3"]).to(torch.bfloat16)
    assert half.inv_freq.dtype == torch.float32
    assert_close(half.rotate(x), expected, atol=0)


def test_double_module_rotates_in_float64():
    """``.double()`` gives float64 frequencies and cache (half precision keeps float32, above), also after the
    cache grows and after dynamic NTK changes its frequencies: a float64 model keeps the relative property."""
    for scaling in (None, DYNAMIC):
        rope = RotaryEmbedding(HEAD_DIM, scaling=scaling, initial_cache_len=8).double()
        assert rope.inv_freq.dtype == torch.float64
        expected = default_inv_freq(HEAD_DIM, 10000.0).double()
        assert torch.equal(rope.inv_freq, expected)  # the float32 frequencies, exactly, in float64
        g = torch.Generator().manual_seed(2)
        q, k = torch.randn(2, 1, HEAD_DIM, generator=g, dtype=torch.float64)
        # a long sequence (dynamic NTK grows its base) whose last two positions are 3 apart, as are 0 and 3
        length = 3 * 128 if scaling else 3000
        positions = torch.tensor([0, 3, length - 4, length - 1])
        rq = rope.rotate(q.expand(4, HEAD_DIM), positions=positions)
        rk = rope.rotate(k.expand(4, HEAD_DIM), positions=positions)
        assert rq.dtype == rope.cos_sin(positions)[0].dtype == rope.inv_freq.dtype == torch.float64
        assert rope.cached_len >= length
        assert torch.equal(rope.inv_freq, expected) == (scaling is None), "dynamic NTK grew its base"
        assert float(rq[0] @ rk[1]) == pytest.approx(float(rq[2] @ rk[3]), abs=1e-11), scaling


def _inv_freq_after(rope: RotaryEmbedding, length: int) -> torch.Tensor:
    rope.rotate(torch.zeros(1, 1, HEAD_DIM), offset=length - 1)  # one token at position length - 1
    return rope.inv_freq.clone()


def test_dynamic_hysteresis():
    # L = 64 here; the lecture's 5000 / 3000 story with L = 2048, scaled down
    rope = RotaryEmbedding(HEAD_DIM, scaling=DYNAMIC)
    plain = default_inv_freq(HEAD_DIM, 10000.0)
    grown = rope_frequencies(HEAD_DIM, scaling=DYNAMIC, seq_len=160)[0]
    assert torch.equal(_inv_freq_after(rope, 40), plain)
    assert torch.equal(_inv_freq_after(rope, 160), grown)  # grows with the length
    assert torch.equal(_inv_freq_after(rope, 100), grown)  # shorter, but >= L: keeps the grown base
    assert torch.equal(_inv_freq_after(rope, 64), grown)  # exactly L does not reset
    assert torch.equal(_inv_freq_after(rope, 63), plain)  # below L: back to plain RoPE
    assert torch.equal(
        _inv_freq_after(rope, 100), rope_frequencies(HEAD_DIM, scaling=DYNAMIC, seq_len=100)[0]
    )


def test_longrope_switches_on_every_call():
    rope = RotaryEmbedding(HEAD_DIM, scaling=LONGROPE)
    short = rope_frequencies(HEAD_DIM, scaling=LONGROPE, seq_len=64)[0]
    long = rope_frequencies(HEAD_DIM, scaling=LONGROPE, seq_len=65)[0]
    assert not torch.equal(short, long)
    for length, expected in [(10, short), (65, long), (64, short), (200, long), (1, short)]:
        assert torch.equal(_inv_freq_after(rope, length), expected), length


@pytest.fixture(scope="module")
def hf():
    return pytest.importorskip("hf_reference", reason="needs the transformers library (a dev dependency)")


@pytest.mark.parametrize("scaling", [DYNAMIC, LONGROPE], ids=["dynamic", "longrope"])
def test_stateful_rule_matches_transformers(hf, scaling):
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    # transformers' dynamic reads L from max_position_embeddings; longrope from the dict
    hf_scaling = {k: v for k, v in scaling.items() if not (scaling is DYNAMIC and k.startswith("original"))}
    theirs = LlamaRotaryEmbedding(
        hf.hf_config(HEAD_DIM, base=10000.0, scaling=hf_scaling, max_position_embeddings=64)
    )
    ours = RotaryEmbedding(HEAD_DIM, base=10000.0, scaling=scaling)
    x = torch.zeros(1, 1, HEAD_DIM)
    for length in [10, 160, 100, 64, 63, 65, 300, 20, 64, 65]:
        positions = torch.arange(length)
        their_cos, their_sin = theirs(x, positions[None])
        our_cos, our_sin = ours.cos_sin(positions)
        # the library's cos is cat(cos, cos) over the half-split pairs
        assert_close(our_cos, their_cos[0, :, : HEAD_DIM // 2], atol=2e-6, what=f"{length}")
        assert_close(our_sin, their_sin[0, :, : HEAD_DIM // 2], atol=2e-6, what=f"{length}")


def test_kv_cache_keys_are_not_rerotated_when_the_base_grows():
    """Keys cached under the original base, queries rotated under the grown one: the score is no longer a
    function of the distance alone (two query/key pairs at the same distance score differently)."""
    torch.manual_seed(1)
    rope = RotaryEmbedding(HEAD_DIM, scaling=DYNAMIC)
    q, k = torch.randn(HEAD_DIM, dtype=torch.float64), torch.randn(HEAD_DIM, dtype=torch.float64)
    old_keys = rope.rotate(k.expand(40, HEAD_DIM).float(), positions=torch.arange(40))  # prefill: 40 < L
    # decoding grows the sequence past L: the base grows, cached keys keep their old rotation
    queries = rope.rotate(q.expand(2, HEAD_DIM).float(), positions=torch.tensor([150, 159]))
    assert not torch.equal(rope.inv_freq, default_inv_freq(HEAD_DIM, 10000.0))
    distance = 120
    mixed = [float(queries[i] @ old_keys[p - distance]) for i, p in enumerate([150, 159])]
    # what a model re-rotating everything under the current base would see: equal scores at equal distance
    # (computed outside the module: a call with positions < L would reset its base)
    fresh = apply_rope(k.expand(40, HEAD_DIM).float(), *rope_cos_sin(torch.arange(40), rope.inv_freq))
    consistent = [float(queries[i] @ fresh[p - distance]) for i, p in enumerate([150, 159])]
    assert consistent[0] == pytest.approx(consistent[1], abs=1e-4)
    assert abs(mixed[0] - mixed[1]) > 1e-2, mixed


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("name", ["yarn", "dynamic", "longrope"])
def test_cuda_module_matches_cpu(name):
    x = torch.randn(2, 3, 200, HEAD_DIM)
    cpu = RotaryEmbedding(HEAD_DIM, scaling=SCALINGS[name])
    expected = cpu.rotate(x)
    gpu = RotaryEmbedding(HEAD_DIM, scaling=SCALINGS[name]).cuda()
    assert gpu.inv_freq.device.type == "cuda" and gpu.inv_freq.dtype == torch.float32
    out = gpu.rotate(x.cuda())
    assert out.device.type == "cuda"
    assert_close(out.cpu(), expected, atol=1e-5)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_decoding_with_an_offset_never_waits_for_the_device():
    """KV-cache decoding (one token at ``offset``) reads a slice of the cache: no host-device sync per call."""
    rope = RotaryEmbedding(HEAD_DIM).cuda()
    q = torch.randn(1, 4, 1, HEAD_DIM, device="cuda")
    rope(q, q, offset=0)  # build the cache (and compile the kernel) outside the checked region
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for offset in range(1, 50):
            rope(q, q, offset=offset)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    expected = apply_rope(q.cpu(), *rope_cos_sin(torch.tensor([49]), rope.inv_freq.cpu()))
    assert_close(rope.rotate(q, offset=49).cpu(), expected, atol=1e-5)
