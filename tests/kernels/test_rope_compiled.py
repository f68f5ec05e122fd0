"""RoPE compiled by torch.compile must equal the readable eager path (compiling takes seconds on CPU)."""

import pytest
import torch
from conftest import assert_close

import posref.kernels
from posref import apply_rope, rope_cos_sin, rope_frequencies

pytestmark = pytest.mark.slow

# one rounding of the output; float64 is rotated in float64 (not float32, whose error would be ~1e-7)
TOL = {torch.float32: 1e-6, torch.bfloat16: 1e-2, torch.float64: 1e-13}


@pytest.mark.parametrize("partial_rotary_factor", [1.0, 0.5])  # all dims rotated; 12 of 24 (the rest passes)
@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_fused_equals_eager(layout, partial_rotary_factor, device):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 17, 24, generator=g, dtype=torch.float64).to(device)
    inv_freq, _ = rope_frequencies(24, partial_rotary_factor=partial_rotary_factor, device=device)
    for dtype, tol in TOL.items():
        # float64 tables for float64: rope_cos_sin forms the angles in the wider of float32 and its inputs
        cos, sin = rope_cos_sin(torch.arange(1000, 1017, device=device), inv_freq.to(dtype))
        xd = x.to(dtype)
        fused = apply_rope(xd, cos, sin, layout=layout, fused="compile")
        assert fused.dtype == dtype
        assert_close(
            fused, apply_rope(xd, cos, sin, layout=layout, fused=False), atol=tol, what=f"{layout} {dtype}"
        )


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_float64_is_rotated_in_float64_by_every_choice(layout, device):
    """float64 never goes to the Triton kernel (it rotates in float32): on CUDA the automatic choice sends it to
    torch.compile, which keeps it in float64, so every backend keeps RoPE's relative property to ~1e-12."""
    g = torch.Generator().manual_seed(1)
    q, k = torch.randn(2, 1, 32, generator=g, dtype=torch.float64).to(device)
    inv_freq = rope_frequencies(32, device=device)[0].double()
    cos, sin = rope_cos_sin(torch.tensor([0, 3, 5000, 5003], device=device), inv_freq)
    on_cuda = q.is_cuda
    for fused, backend in [
        (None, "compile" if on_cuda else "eager"),
        (True, "compile"),
        ("compile", "compile"),
    ]:
        assert posref.kernels.choose(q, cos, sin, fused) == backend
        # (m, n) = (0, 3) and (5000, 5003): one distance, so one score
        rq = apply_rope(q.expand(4, 32), cos, sin, layout=layout, fused=fused)
        rk = apply_rope(k.expand(4, 32), cos, sin, layout=layout, fused=fused)
        assert rq.dtype == torch.float64
        near, far = float(rq[0] @ rk[1]), float(rq[2] @ rk[3])
        assert near == pytest.approx(far, abs=1e-11), f"fused={fused!r} ({backend})"
