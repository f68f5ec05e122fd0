"""The Triton RoPE kernel must equal the readable eager path (itself tested against loop oracles in test_rope.py).

On CUDA the compiled kernel runs; on CPU Triton's interpreter runs the same kernel source (the module is
imported afresh with ``TRITON_INTERPRET=1``), so CI checks the kernel's indexing, masks and layouts without a GPU.
"""

from __future__ import annotations

import warnings

import pytest
import torch
from conftest import DEVICES, assert_close, fresh_rope_triton

import posref.kernels
from posref import RotaryEmbedding, apply_rope, apply_rope_qk, rope_cos_sin, rope_frequencies

pytest.importorskip("triton", reason="Triton is not installed (it comes with CUDA builds of torch)")

TOL = {torch.float32: 1e-6, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}  # one rounding of the output


@pytest.fixture(params=DEVICES)
def kernel(request: pytest.FixtureRequest):
    """``(device, posref.kernels.rope_triton)``: the real kernel on CUDA, Triton's interpreter on CPU."""
    with fresh_rope_triton(interpret=request.param == "cpu") as module:
        yield request.param, module


def _tables(dim: int, positions: torch.Tensor, partial_rotary_factor: float = 1.0):
    inv_freq, _ = rope_frequencies(dim, partial_rotary_factor=partial_rotary_factor, device=positions.device)
    return rope_cos_sin(positions, inv_freq)


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("partial_rotary_factor", [1.0, 0.5, 0.25])  # 24 dims: 12, 6 or 3 pairs rotate
@pytest.mark.parametrize("shape", [(17, 24), (2, 3, 17, 24), (2, 2, 3, 17, 24)])
def test_equals_eager(kernel, layout, partial_rotary_factor, shape):
    device, module = kernel
    g = torch.Generator().manual_seed(0)
    x = torch.randn(shape, generator=g).to(device)
    cos, sin = _tables(24, torch.arange(17, device=device), partial_rotary_factor)
    for dtype, tol in TOL.items():
        xd = x.to(dtype)
        got = module.apply_rope_triton(xd, cos, sin, layout=layout)
        assert got.dtype == dtype and got.shape == x.shape
        want = apply_rope(xd, cos, sin, layout=layout, fused=False)
        assert_close(got, want, atol=tol, rtol=tol, what=f"{layout} {dtype} {shape}")


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_strided_inputs_and_per_sequence_positions(kernel, layout):
    device, module = kernel
    g = torch.Generator().manual_seed(1)
    # (B, T, H, D) transposed to (B, H, T, D): not contiguous, as q after a head split usually is
    x = torch.randn(2, 9, 3, 16, generator=g).to(device).transpose(1, 2)
    positions = torch.randint(0, 500, (2, 9), generator=g).to(device)
    cos, sin = _tables(16, positions)
    cos, sin = cos[:, None], sin[:, None]  # (B, 1, T, r): one row of positions per sequence
    got = module.apply_rope_triton(x, cos, sin, layout=layout)
    assert_close(got, apply_rope(x, cos, sin, layout=layout, fused=False), atol=1e-6, what=layout)
    # a single position (cos of length 1 along the sequence) shared by every token
    one_cos, one_sin = _tables(16, torch.tensor([7], device=device))
    got = module.apply_rope_triton(x, one_cos, one_sin, layout=layout)
    assert_close(got, apply_rope(x, one_cos, one_sin, layout=layout, fused=False), atol=1e-6, what="T=1 cos")


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_backward_is_the_inverse_rotation(kernel, layout):
    device, module = kernel
    g = torch.Generator().manual_seed(2)
    x = torch.randn(2, 3, 11, 20, generator=g).to(device)
    cos, sin = _tables(20, torch.arange(11, device=device), partial_rotary_factor=0.8)  # 8 pairs + 4 passed
    weights = torch.randn(x.shape, generator=g).to(device)
    xt = x.clone().requires_grad_()
    (module.apply_rope_triton(xt, cos, sin, layout=layout) * weights).sum().backward()
    xe = x.clone().requires_grad_()
    (apply_rope(xe, cos, sin, layout=layout, fused=False) * weights).sum().backward()
    assert_close(xt.grad, xe.grad, atol=1e-6, what=f"{layout} gradient")
    # rotating by theta, then by -theta (the backward's rotation), gives x back
    there = module.apply_rope_triton(x, cos, sin, layout=layout)
    back = module.apply_rope_triton(there, cos, -sin, layout=layout)
    assert_close(back, x, atol=1e-5, what=f"{layout} round trip")


def test_rotation_preserves_pair_norms(kernel):
    device, module = kernel
    g = torch.Generator().manual_seed(3)
    x = torch.randn(4, 33, 32, generator=g).to(device)
    cos, sin = _tables(32, torch.arange(1000, 1033, device=device))
    out = module.apply_rope_triton(x, cos, sin, layout="half")
    assert_close(
        out[..., :16] ** 2 + out[..., 16:] ** 2,
        x[..., :16] ** 2 + x[..., 16:] ** 2,
        atol=1e-4,
        what="pair norms",
    )
    assert not torch.allclose(out, x, atol=1e-2), "positions 1000.. must rotate something"


def test_refuses_what_it_cannot_do(kernel):
    device, module = kernel
    x = torch.randn(5, 8, device=device)
    cos, sin = _tables(8, torch.arange(5, device=device))
    with pytest.raises(TypeError, match="float64"):
        module.apply_rope_triton(x.double(), cos, sin)
    with pytest.raises(ValueError, match="cos/sin"):
        module.apply_rope_triton(x, cos.clone().requires_grad_(), sin)


def test_float64_tables_rotate_float32_and_half_inputs(kernel):
    """float64 x is refused (above; apply_rope sends it to torch.compile), float64 tables are not: rope_cos_sin
    of float64 frequencies is read in float32, as apply_rope's eager path rounds them to float32 too."""
    device, module = kernel
    g = torch.Generator().manual_seed(9)
    x = torch.randn(2, 3, 7, 16, generator=g).to(device)
    inv_freq = rope_frequencies(16, device=device)[0].double()
    cos, sin = rope_cos_sin(torch.arange(1000, 1007, device=device), inv_freq)
    assert cos.dtype == torch.float64
    for dtype, tol in TOL.items():
        for layout in ("half", "interleaved"):
            got = module.apply_rope_triton(x.to(dtype), cos, sin, layout=layout)
            want = apply_rope(x.to(dtype), cos, sin, layout=layout, fused=False)
            assert_close(got, want, atol=tol, rtol=tol, what=f"{layout} {dtype}")


def test_needs_cuda_outside_the_interpreter():
    with fresh_rope_triton(interpret=False) as module:
        x = torch.randn(5, 8)
        cos, sin = _tables(8, torch.arange(5))
        with pytest.raises(ValueError, match="needs CUDA tensors, x is on cpu"):
            module.apply_rope_triton(x, cos, sin)


def test_apply_rope_dispatch():
    x = torch.randn(5, 8)
    cos, sin = _tables(8, torch.arange(5))
    choose = posref.kernels.choose
    assert choose(x, cos, sin, None) == "eager"  # CPU default: no compilation, no Triton
    assert choose(x, cos, sin, False) == "eager"
    assert choose(x, cos, sin, True) == "compile"  # Triton kernels need CUDA
    assert choose(x, cos, sin, "triton") == "triton"
    with pytest.raises(ValueError, match="expected one of 'triton', 'compile'"):
        apply_rope(x, cos, sin, fused="cuda")
    with pytest.raises(TypeError, match="fused must be"):
        apply_rope(x, cos, sin, fused=1)


def test_a_failing_kernel_falls_back_with_a_warning(monkeypatch):
    """On CUDA the automatic choice must survive a Triton/driver mismatch: warn once, then torch.compile."""
    import posref.kernels.rope_compiled
    import posref.kernels.rope_triton

    def broken(*args, **kwargs):
        raise RuntimeError("PTX version mismatch")

    x = torch.randn(5, 8)
    cos, sin = _tables(8, torch.arange(5))
    compiled_calls = []
    monkeypatch.setattr(posref.kernels, "choose", lambda *args: "triton")
    monkeypatch.setattr(posref.kernels, "_TRITON_FAILED", set())
    monkeypatch.setattr(posref.kernels.rope_triton, "apply_rope_triton", broken)
    monkeypatch.setattr(
        posref.kernels.rope_compiled,
        "apply_rope_compiled",
        lambda *a, **k: compiled_calls.append(1) or "compiled",
    )
    with pytest.warns(RuntimeWarning, match="Triton RoPE kernel failed .*PTX version mismatch"):
        assert apply_rope(x, cos, sin) == "compiled"
    assert posref.kernels._TRITON_FAILED == {("cpu", torch.float32)} and compiled_calls == [1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeError, match="PTX"):  # asked for by name: the error is not hidden
            apply_rope(x, cos, sin, fused="triton")


@pytest.mark.parametrize("heads_per_program", [1, 2, 3, 6])  # the divisors of 6 heads
@pytest.mark.parametrize("per_head_tables", [False, True])
@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_programs_looping_over_heads(kernel, heads_per_program, per_head_tables, layout):
    """The result must not depend on how heads are grouped per program, nor on tables shared or per head."""
    device, module = kernel
    g = torch.Generator().manual_seed(4)
    x = torch.randn(2, 6, 13, 20, generator=g).to(device)
    positions = torch.randint(0, 300, (2, 6, 13) if per_head_tables else (2, 1, 13), generator=g).to(device)
    cos, sin = _tables(20, positions, partial_rotary_factor=0.8)
    for direction in (1, -1):  # forward and backward rotation (the backward's kernel)
        got = module.apply_rope_triton(
            x, cos, direction * sin, layout=layout, heads_per_program=heads_per_program
        )
        want = apply_rope(x, cos, direction * sin, layout=layout, fused=False)
        assert_close(got, want, atol=1e-6, what=f"{heads_per_program} heads per program")
    with pytest.raises(ValueError, match="heads_per_program must be an int >= 1"):
        module.apply_rope_triton(x, cos, sin, heads_per_program=0)
    with pytest.raises(ValueError, match="must divide the number of heads 6, got 4"):
        module.apply_rope_triton(x, cos, sin, heads_per_program=4)


@pytest.mark.parametrize("block_t", [1, 4, 32])  # 13 positions: a partial last block each time but for 1
def test_positions_per_program(kernel, block_t):
    device, module = kernel
    g = torch.Generator().manual_seed(6)
    x = torch.randn(2, 2, 13, 12, generator=g).to(device)
    cos, sin = _tables(12, torch.arange(40, 53, device=device))
    for layout in ("half", "interleaved"):
        got = module.apply_rope_triton(x, cos, sin, layout=layout, block_t=block_t)
        assert_close(got, apply_rope(x, cos, sin, layout=layout, fused=False), atol=1e-6, what=f"{block_t}")
    with pytest.raises(ValueError, match="block_t must be a power of two, got 3"):
        module.apply_rope_triton(x, cos, sin, block_t=3)
    with pytest.raises(ValueError, match="num_warps must be an int >= 1"):
        module.apply_rope_triton(x, cos, sin, num_warps=0)


@pytest.mark.parametrize("min_programs", [1, 10**9])  # every head in one program; one head per program
def test_automatic_grouping_of_heads(kernel, monkeypatch, min_programs):
    device, module = kernel
    monkeypatch.setattr(module, "MIN_PROGRAMS", min_programs)
    g = torch.Generator().manual_seed(5)
    x = torch.randn(3, 4, 9, 16, generator=g).to(device)
    cos, sin = _tables(16, torch.arange(9, device=device))
    for layout in ("half", "interleaved"):
        got = module.apply_rope_triton(x, cos, sin, layout=layout)
        assert_close(got, apply_rope(x, cos, sin, layout=layout, fused=False), atol=1e-6, what=layout)


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize(
    "kv_heads", [6, 2, 1]
)  # as many key heads as query heads, grouped-query, multi-query
def test_queries_and_keys_in_one_launch(kernel, layout, kv_heads):
    device, module = kernel
    g = torch.Generator().manual_seed(7)
    q = torch.randn(2, 6, 11, 20, generator=g).to(device)
    k = torch.randn(2, kv_heads, 11, 20, generator=g).to(device).to(torch.bfloat16)  # dtypes may differ
    positions = torch.randint(0, 2000, (2, 11), generator=g).to(device)
    cos, sin = _tables(20, positions, partial_rotary_factor=0.8)
    cos, sin = cos[:, None], sin[:, None]
    q_rot, k_rot = module.apply_rope_qk_triton(q, k, cos, sin, layout=layout)
    assert (q_rot.dtype, k_rot.dtype) == (torch.float32, torch.bfloat16)
    assert_close(q_rot, apply_rope(q, cos, sin, layout=layout, fused=False), atol=1e-6, what="q")
    assert_close(
        k_rot, apply_rope(k, cos, sin, layout=layout, fused=False), atol=1.6e-2, rtol=1.6e-2, what="k"
    )
    # gradients, also when only one of the two outputs reaches the loss
    qt, kt = q.clone().requires_grad_(), k.float().clone().requires_grad_()
    q_out, k_out = module.apply_rope_qk_triton(qt, kt, cos, sin, layout=layout)
    (q_out.square().sum() + 3 * k_out.sum()).backward()
    qe, ke = q.clone().requires_grad_(), k.float().clone().requires_grad_()
    (apply_rope(qe, cos, sin, layout=layout, fused=False).square().sum()).backward()
    (3 * apply_rope(ke, cos, sin, layout=layout, fused=False).sum()).backward()
    assert_close(qt.grad, qe.grad, atol=1e-5, what="q gradient")
    assert_close(kt.grad, ke.grad, atol=1e-5, what="k gradient")
    only_q = q.clone().requires_grad_()
    module.apply_rope_qk_triton(only_q, kt.detach(), cos, sin, layout=layout)[0].sum().backward()
    assert_close(
        only_q.grad, apply_rope(torch.ones_like(q), cos, -sin, layout=layout, fused=False), atol=1e-5
    )
    with pytest.raises(ValueError, match="equal but for their heads"):
        module.apply_rope_qk_triton(q, k[:, :, :5], cos, sin)


def test_rotary_embedding_uses_one_launch_for_queries_and_keys(kernel, monkeypatch):
    """posref.apply_rope_qk (what RotaryEmbedding calls) takes the one-launch path when the shapes allow it."""
    device, module = kernel
    launches = []
    one_launch = module.apply_rope_qk_triton
    monkeypatch.setattr(
        module, "apply_rope_qk_triton", lambda *a, **kw: launches.append(1) or one_launch(*a, **kw)
    )
    rope = RotaryEmbedding(16, base=500.0).to(device)
    q, k = torch.randn(2, 4, 9, 16, device=device), torch.randn(2, 2, 9, 16, device=device)
    q_rot, k_rot = apply_rope_qk(q, k, *rope.cos_sin(torch.arange(9, device=device)), fused="triton")
    assert launches == [1]
    want_q, want_k = rope(q, k)  # eager on CPU, the same kernel on CUDA
    assert_close(q_rot, want_q, atol=1e-6, what="q")
    assert_close(k_rot, want_k, atol=1e-6, what="k")
    q_rot, k_rot = apply_rope_qk(q, k[0], *rope.cos_sin(torch.arange(9, device=device)), fused="triton")
    assert launches == [1], "q (B, H, T, D) and k (H, T, D): one call each, not the one-launch kernel"
    assert_close(k_rot, want_k[0], atol=1e-6, what="k alone")


@pytest.mark.parametrize("dim,partial_rotary_factor", [(2, 1.0), (4, 0.5), (6, 1 / 3), (6, 1.0)])
def test_one_token_and_a_single_pair(kernel, dim, partial_rotary_factor):
    """Decoding shapes: one position, and heads with a single rotated pair (blocks are padded, masks cover it)."""
    device, module = kernel
    g = torch.Generator().manual_seed(8)
    x = torch.randn(2, 3, 1, dim, generator=g).to(device)
    cos, sin = _tables(dim, torch.tensor([77], device=device), partial_rotary_factor)
    for layout in ("half", "interleaved"):
        got = module.apply_rope_triton(x, cos, sin, layout=layout)
        assert_close(
            got, apply_rope(x, cos, sin, layout=layout, fused=False), atol=1e-6, what=f"{dim} {layout}"
        )
