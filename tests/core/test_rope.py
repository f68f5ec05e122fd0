import math

import pytest
import torch
from conftest import assert_close

from posref import RotaryEmbedding, apply_rope, layout_permutation, rope_cos_sin, rope_frequencies


def loop_rope(x, positions, base, layout):
    """Oracle: rotate each pair of one (T, D) matrix with an explicit 2x2 matrix, in float64."""
    t, d = x.shape
    out = x.double().clone()
    for p in range(t):
        for i in range(d // 2):
            theta = positions[p] * base ** (-2 * i / d)
            a, b = (i, i + d // 2) if layout == "half" else (2 * i, 2 * i + 1)
            rot = torch.tensor(
                [[math.cos(theta), -math.sin(theta)], [math.sin(theta), math.cos(theta)]], dtype=torch.float64
            )
            out[p, [a, b]] = rot @ x[p, [a, b]].double()
    return out


def cos_sin(positions, head_dim, base=10000.0, **kw):
    inv_freq, factor = rope_frequencies(head_dim, base=base, **kw)
    return rope_cos_sin(positions, inv_freq, attention_factor=factor)


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_matches_loop_oracle(layout):
    x = torch.randn(9, 8, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    positions = torch.tensor([0, 1, 2, 5, 17, 100, 1000, 4, 3])
    c, s = cos_sin(positions, 8, base=100.0)
    # angles are formed in float32 (as the transformers library does): at position 1000 they are off by ~1e-5 rad
    assert_close(
        apply_rope(x, c, s, layout=layout), loop_rope(x, positions.tolist(), 100.0, layout), atol=1e-4
    )


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_score_depends_only_on_distance(layout):
    g = torch.Generator().manual_seed(1)
    q, k = torch.randn(64, generator=g), torch.randn(64, generator=g)
    scores = {}
    for m, n in [(0, 3), (10, 13), (1000, 1003), (7, 0), (1007, 1000)]:
        cm, sm = cos_sin(torch.tensor([m]), 64)
        cn, sn = cos_sin(torch.tensor([n]), 64)
        scores[(m, n)] = (
            apply_rope(q[None], cm, sm, layout=layout) @ apply_rope(k[None], cn, sn, layout=layout).T
        ).item()
    assert scores[(0, 3)] == pytest.approx(scores[(10, 13)], abs=1e-4)
    assert scores[(0, 3)] == pytest.approx(scores[(1000, 1003)], abs=1e-3)
    assert scores[(7, 0)] == pytest.approx(scores[(1007, 1000)], abs=1e-3)
    assert abs(scores[(0, 3)] - scores[(7, 0)]) > 1e-2  # a different distance gives a different score


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_rotation_preserves_norms(layout):
    x = torch.randn(2, 3, 50, 32, generator=torch.Generator().manual_seed(2))
    c, s = cos_sin(torch.arange(50), 32)
    assert_close(apply_rope(x, c, s, layout=layout).norm(dim=-1), x.norm(dim=-1), atol=1e-4)


def test_layouts_related_by_a_fixed_permutation():
    x = torch.randn(2, 4, 20, 16, generator=torch.Generator().manual_seed(3))
    c, s = cos_sin(torch.arange(20), 16)
    perm = layout_permutation(16)
    assert perm.tolist() == [0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15]
    assert_close(
        apply_rope(x[..., perm], c, s, layout="half"),
        apply_rope(x, c, s, layout="interleaved")[..., perm],
        atol=1e-6,
    )
    assert (apply_rope(x, c, s, layout="half") - apply_rope(x, c, s, layout="interleaved")).abs().max() > 0.1


def test_matches_transformers_llama_half_layout():
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    g = torch.Generator().manual_seed(4)
    q, k = torch.randn(2, 4, 30, 64, generator=g), torch.randn(2, 4, 30, 64, generator=g)
    c, s = cos_sin(torch.arange(30), 64)
    ref_q, ref_k = apply_rotary_pos_emb(q, k, torch.cat((c, c), -1)[None], torch.cat((s, s), -1)[None])
    assert_close(apply_rope(q, c, s), ref_q, atol=1e-6)
    assert_close(apply_rope(k, c, s), ref_k, atol=1e-6)


def test_matches_transformers_gptj_interleaved_partial():
    from transformers.models.gptj.modeling_gptj import apply_rotary_pos_emb, create_sinusoidal_positions

    x = torch.randn(1, 12, 3, 32, generator=torch.Generator().manual_seed(5))  # GPT-J: (B, T, H, D)
    table = create_sinusoidal_positions(12, 16)  # rotary_dim 16 of head_dim 32
    sin, cos = torch.split(table, 8, dim=-1)
    ref = x.clone()
    ref[..., :16] = apply_rotary_pos_emb(
        x[..., :16], sin[None], cos[None]
    )  # GPT-J repeats each pair's sin/cos
    c, s = cos_sin(torch.arange(12), 32, partial_rotary_factor=0.5)
    got = apply_rope(x.transpose(1, 2), c, s, layout="interleaved").transpose(1, 2)
    assert_close(got, ref, atol=1e-5)


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("rotated", [8, 4])  # all 8 dims; 4 of them (partial rotary)
def test_views_with_odd_strides_and_offsets(layout, rotated):
    """x sliced from a wider buffer: at an odd storage offset (interleaved pairs then have no complex view and
    are copied first) and at offset 0 with an even row stride (a view of the pairs, not contiguous)."""
    buffer = torch.randn(7, 10, generator=torch.Generator().manual_seed(6), dtype=torch.float64)
    positions = [0, 1, 2, 3, 40, 41, 5]
    c, s = cos_sin(torch.tensor(positions), 8, base=100.0, partial_rotary_factor=rotated / 8)
    c, s = c.double(), s.double()
    for x in (buffer[:, 1:9], buffer[:, :8]):
        expected = x.clone()
        expected[:, :rotated] = loop_rope(x[:, :rotated], positions, 100.0, layout)
        # the oracle's float64 frequencies against float32 ones: angles differ by < 1e-6 rad at position 41
        assert_close(apply_rope(x, c, s, layout=layout), expected, atol=1e-5, what=f"stride {x.stride()}")


def test_partial_rotary_passes_the_rest_through():
    x = torch.randn(5, 10)
    c, s = cos_sin(torch.arange(5), 10, partial_rotary_factor=0.4)  # rotary dim 4 of 10
    assert c.shape == (5, 2)
    for layout in ("half", "interleaved"):
        out = apply_rope(x, c, s, layout=layout)
        assert torch.equal(out[:, 4:], x[:, 4:])
        assert torch.equal(out[0], x[0])  # position 0 is the identity


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_dtypes_and_device_kept(device, dtype):
    x = torch.randn(2, 8, 16, device=device).to(dtype)
    c, s = cos_sin(torch.arange(8, device=device), 16)
    out = apply_rope(x, c, s)
    assert out.dtype == dtype and out.device == x.device
    exact = apply_rope(x.double(), c.double(), s.double())
    tol = {torch.float16: 2e-3, torch.bfloat16: 2e-2, torch.float64: 1e-6}[dtype]
    assert_close(out, exact, atol=tol * 4, what=str(dtype))


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_float64_keeps_the_relative_property_at_long_positions(layout):
    """<R_m q, R_n k> depends on n - m alone; with float64 frequencies that holds to float64 precision (angles
    formed in float32 put an error of ~1e-5 into it at position 1000)."""
    g = torch.Generator().manual_seed(5)
    q, k = torch.randn(2, 64, generator=g, dtype=torch.float64)
    inv_freq = rope_frequencies(64)[0].double()

    def score(m: int, n: int) -> float:
        cm, sm = rope_cos_sin(torch.tensor([m]), inv_freq)
        cn, sn = rope_cos_sin(torch.tensor([n]), inv_freq)
        return (
            apply_rope(q[None], cm, sm, layout=layout) @ apply_rope(k[None], cn, sn, layout=layout).T
        ).item()

    for m, n in [(0, 3), (3, 0), (1, 1)]:
        for shift in (1000, 100_000):
            assert score(m + shift, n + shift) == pytest.approx(score(m, n), abs=1e-10), (m, n, shift)


def test_angles_in_the_wider_of_float32_and_the_inputs():
    inv_freq = rope_frequencies(16)[0]  # float32
    positions = torch.tensor([0, 7, 1000, 100_000])
    for pos, freq, want in [
        (positions.int(), inv_freq.half(), torch.float32),
        (positions, inv_freq, torch.float32),
        (positions, inv_freq.double(), torch.float64),
        (positions.double() / 4, inv_freq, torch.float64),  # Position Interpolation in float64
    ]:
        c, s = rope_cos_sin(pos, freq)
        assert (c.dtype, s.dtype) == (want, want), (pos.dtype, freq.dtype)
    # float64: the angles p * w of Python's float64 arithmetic, to float64 precision even at p = 100000
    c, s = rope_cos_sin(positions, inv_freq.double())
    angles = [[p * w for w in inv_freq.double().tolist()] for p in positions.tolist()]
    for got, fn in ((c, math.cos), (s, math.sin)):
        want = torch.tensor([[fn(a) for a in row] for row in angles], dtype=torch.float64)
        assert_close(got, want, atol=1e-12, what=fn.__name__)


def test_long_positions_use_float32_angles():
    # at position 60,000 a float16 angle is off by many radians; rope_cos_sin must not form it in half precision
    inv_freq = rope_frequencies(64)[0]
    c, _ = rope_cos_sin(torch.tensor([60_000], dtype=torch.int32), inv_freq)
    exact = torch.cos(torch.tensor(60_000.0, dtype=torch.float64) * inv_freq.double())
    assert_close(c[0], exact, atol=1e-2)


def test_bad_inputs_are_clear_errors():
    x = torch.randn(2, 4, 8, 16)
    c, s = cos_sin(torch.arange(8), 16)
    with pytest.raises(ValueError, match="unknown layout 'gptj'"):
        apply_rope(x, c, s, layout="gptj")
    with pytest.raises(ValueError, match="head_dim 16"):
        c2, s2 = cos_sin(torch.arange(8), 32)
        apply_rope(x, c2, s2)
    with pytest.raises(ValueError, match="seq = 8"):
        c3, s3 = cos_sin(torch.arange(5), 16)
        apply_rope(x, c3, s3)
    with pytest.raises(ValueError, match="ambiguous"):
        apply_rope(x, c[None], s[None])  # (1, T, r) against (B, H, T, D): heads vs batch unclear
    with pytest.raises(TypeError, match="floating-point"):
        apply_rope(x.long(), c, s)
    with pytest.raises(ValueError, match="must be even"):
        rope_frequencies(15)


def test_rope_cos_sin_positions():
    inv_freq = rope_frequencies(8)[0]
    # a negative position is the inverse rotation; a fractional one is Position Interpolation's m / s
    c, s = rope_cos_sin(torch.tensor([-3, 3]), inv_freq)
    assert_close(c[0], c[1], atol=0)
    assert_close(s[0], -s[1], atol=0)
    assert_close(rope_cos_sin(torch.tensor([1.5]), inv_freq)[0][0], (1.5 * inv_freq).cos(), atol=1e-7)
    with pytest.raises(TypeError, match="positions must be a real .* got dtype torch.bool"):
        rope_cos_sin(torch.tensor([True, False]), inv_freq)  # used to be read as positions 1 and 0
    with pytest.raises(TypeError, match="inv_freq must be a real"):
        rope_cos_sin(torch.arange(3), inv_freq.to(torch.complex64))


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("grad", [False, True])
def test_cos_sin_with_more_sequences_than_x_is_an_error(layout, grad):
    # (4, 1, T, r) against x (1, 3, T, D) broadcasts x up to 4 sequences; the half layout used to write into a
    # resized view and return an uninitialised tensor (a torch warning only)
    x = torch.randn(1, 3, 8, 16, requires_grad=grad)
    c, s = cos_sin(torch.arange(8), 16)
    with pytest.raises(ValueError, match=r"do not broadcast to x of shape \(1, 3, 8, 16\)"):
        apply_rope(x, c.expand(4, 1, 8, 8), s.expand(4, 1, 8, 8), layout=layout)


class TestRotaryEmbedding:
    def test_cached_equals_uncached_and_grows(self):
        rope = RotaryEmbedding(32, base=500.0, initial_cache_len=8)
        q, k = torch.randn(2, 3, 40, 32), torch.randn(2, 3, 40, 32)
        got_q, got_k = rope(q, k)
        assert rope.cached_len >= 40
        c, s = cos_sin(torch.arange(40), 32, base=500.0)
        assert_close(got_q, apply_rope(q, c, s), atol=1e-6)
        assert_close(got_k, apply_rope(k, c, s), atol=1e-6)
        # after growing, earlier positions still give the same result
        assert_close(
            rope(q[..., :5, :], k[..., :5, :])[0], apply_rope(q[..., :5, :], c[:5], s[:5]), atol=1e-6
        )

    def test_offset_equals_tail_of_full_call(self):
        rope = RotaryEmbedding(16, layout="interleaved")
        q, k = torch.randn(1, 2, 30, 16), torch.randn(1, 2, 30, 16)
        full_q, full_k = rope(q, k)
        tail_q, tail_k = rope(q[..., 25:, :], k[..., 25:, :], offset=25)
        assert_close(tail_q, full_q[..., 25:, :], atol=1e-6)
        assert_close(tail_k, full_k[..., 25:, :], atol=1e-6)

    def test_per_sequence_positions(self):
        rope = RotaryEmbedding(8)
        x = torch.randn(2, 3, 4, 8)
        positions = torch.tensor([[0, 1, 2, 3], [10, 11, 12, 13]])
        out = rope.rotate(x, positions=positions)
        assert_close(out[1], rope.rotate(x[1:], offset=10)[0], atol=1e-6)
        assert_close(out[0], rope.rotate(x[:1])[0], atol=1e-6)

    def test_errors(self):
        rope = RotaryEmbedding(8)
        with pytest.raises(ValueError, match="head_dim=8"):
            rope(torch.randn(1, 4, 16), torch.randn(1, 4, 16))
        # rotate() checks the head dim too: a wider x used to have its first 8 dims rotated, the rest passed
        with pytest.raises(ValueError, match=r"head_dim=8, got shape \(3, 16\)"):
            rope.rotate(torch.randn(3, 16))
        with pytest.raises(ValueError, match=r"\(\.\.\., seq, head_dim\).*got shape \(8,\)"):
            rope.rotate(torch.randn(8))
        with pytest.raises(ValueError, match="either positions or offset"):
            rope.rotate(torch.randn(3, 8), positions=torch.arange(3), offset=2)
        with pytest.raises(ValueError, match=">= 0"):
            rope.rotate(torch.randn(3, 8), positions=torch.tensor([-1, 0, 1]))
        with pytest.raises(ValueError, match="unknown rope_type 'nope'"):
            RotaryEmbedding(8, scaling={"rope_type": "nope"})
