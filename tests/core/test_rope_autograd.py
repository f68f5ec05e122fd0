"""apply_rope must be differentiable (the tiny decoder trains through it), in both layouts."""

import pytest
import torch

from posref import apply_rope, rope_cos_sin, rope_frequencies


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("head_dim,partial", [(8, 1.0), (8, 0.5)])
def test_apply_rope_gradcheck(layout, head_dim, partial):
    inv_freq, _ = rope_frequencies(head_dim, base=50.0, partial_rotary_factor=partial)
    cos, sin = rope_cos_sin(torch.arange(5), inv_freq)
    x = torch.randn(2, 5, head_dim, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: apply_rope(t, cos.double(), sin.double(), layout=layout), (x,))


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("partial", [1.0, 0.5])
def test_apply_rope_gradcheck_through_cos_and_sin(layout, partial):
    """The eager path also differentiates the tables (a learned frequency would train through them)."""
    inv_freq, _ = rope_frequencies(8, base=50.0, partial_rotary_factor=partial)
    cos, sin = (t.double().requires_grad_() for t in rope_cos_sin(torch.arange(5), inv_freq))
    x = torch.randn(2, 5, 8, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda *a: apply_rope(*a, layout=layout), (x, cos, sin))


def test_apply_rope_gradient_is_inverse_rotation():
    # d<R x, g>/dx = R^T g, and R^T is the rotation by the opposite angle
    inv_freq, _ = rope_frequencies(8, base=10.0)
    cos, sin = rope_cos_sin(torch.arange(6), inv_freq)
    x = torch.randn(3, 6, 8, requires_grad=True)
    g = torch.randn(3, 6, 8)
    (apply_rope(x, cos, sin) * g).sum().backward()
    torch.testing.assert_close(x.grad, apply_rope(g, cos, -sin), rtol=1e-5, atol=1e-6)
