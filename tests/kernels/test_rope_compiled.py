"""RoPE compiled by torch.compile must equal the readable eager path (compiling takes seconds on CPU)."""

import pytest
import torch
from conftest import assert_close

from posref import apply_rope, rope_cos_sin, rope_frequencies

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("partial_rotary_factor", [1.0, 0.5])  # all dims rotated; 12 of 24 (the rest passes)
@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_fused_equals_eager(layout, partial_rotary_factor, device):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 17, 24, generator=g).to(device)
    inv_freq, _ = rope_frequencies(24, partial_rotary_factor=partial_rotary_factor, device=device)
    cos, sin = rope_cos_sin(torch.arange(17, device=device), inv_freq)
    for dtype, tol in ((torch.float32, 1e-6), (torch.bfloat16, 1e-2)):
        xd = x.to(dtype)
        fused = apply_rope(xd, cos, sin, layout=layout, fused="compile")
        assert fused.dtype == dtype
        assert_close(
            fused, apply_rope(xd, cos, sin, layout=layout, fused=False), atol=tol, what=f"{layout} {dtype}"
        )
