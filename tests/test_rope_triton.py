"""The Triton RoPE kernel must equal the readable eager path (itself tested against loop oracles in test_rope.py).

On CUDA the compiled kernel runs; on CPU Triton's interpreter runs the same kernel source (the module is
imported afresh with ``TRITON_INTERPRET=1``), so CI checks the kernel's indexing, masks and layouts without a GPU.
"""

from __future__ import annotations

import importlib
import sys
import warnings

import pytest
import torch
from conftest import DEVICES, assert_close

import posref.rope
from posref import apply_rope, rope_cos_sin, rope_frequencies

pytest.importorskip("triton", reason="Triton is not installed (it comes with CUDA builds of torch)")

TOL = {torch.float32: 1e-6, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}  # one rounding of the output


@pytest.fixture(params=DEVICES)
def kernel(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    """``(device, posref.rope_triton)``: the real kernel on CUDA, Triton's interpreter on CPU."""
    monkeypatch.delitem(sys.modules, "posref.rope_triton", raising=False)
    if request.param == "cpu":
        monkeypatch.setenv("TRITON_INTERPRET", "1")  # read when the kernel is decorated, i.e. at import
    module = importlib.import_module("posref.rope_triton")
    yield request.param, module
    sys.modules.pop("posref.rope_triton", None)  # the next import gets the mode of its own environment


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


def test_needs_cuda_outside_the_interpreter(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.delitem(sys.modules, "posref.rope_triton", raising=False)
    module = importlib.import_module("posref.rope_triton")
    x = torch.randn(5, 8)
    cos, sin = _tables(8, torch.arange(5))
    with pytest.raises(ValueError, match="needs CUDA tensors, x is on cpu"):
        module.apply_rope_triton(x, cos, sin)
    sys.modules.pop("posref.rope_triton", None)


def test_apply_rope_dispatch():
    x = torch.randn(5, 8)
    cos, sin = _tables(8, torch.arange(5))
    choose = posref.rope._rope_backend
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
    import posref.rope_fused
    import posref.rope_triton

    def broken(*args, **kwargs):
        raise RuntimeError("PTX version mismatch")

    x = torch.randn(5, 8)
    cos, sin = _tables(8, torch.arange(5))
    compiled_calls = []
    monkeypatch.setattr(posref.rope, "_rope_backend", lambda *args: "triton")
    monkeypatch.setattr(posref.rope, "_TRITON_FAILED", set())
    monkeypatch.setattr(posref.rope_triton, "apply_rope_triton", broken)
    monkeypatch.setattr(
        posref.rope_fused, "apply_rope_fused", lambda *a, **k: compiled_calls.append(1) or "compiled"
    )
    with pytest.warns(RuntimeWarning, match="Triton RoPE kernel failed .*PTX version mismatch"):
        assert apply_rope(x, cos, sin) == "compiled"
    assert posref.rope._TRITON_FAILED == {("cpu", torch.float32)} and compiled_calls == [1]
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
