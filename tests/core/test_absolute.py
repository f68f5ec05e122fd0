import math

import pytest
import torch
from conftest import assert_close

from posref import LearnedPositionalEmbedding, sinusoidal_pe, sinusoidal_shift_matrix


def test_matches_the_formula_elementwise():
    pe = sinusoidal_pe(50, 16, dtype=torch.float64)
    for p in (0, 1, 7, 49):
        for i in range(8):
            w = 10000.0 ** (-2 * i / 16)
            assert pe[p, 2 * i].item() == pytest.approx(math.sin(p * w), abs=1e-5)
            assert pe[p, 2 * i + 1].item() == pytest.approx(math.cos(p * w), abs=1e-5)


def test_matches_transformers_xlm_table():
    from transformers.models.xlm.modeling_xlm import create_sinusoidal_embeddings

    out = torch.empty(100, 32)
    create_sinusoidal_embeddings(100, 32, out)
    # XLM forms angles in float64, posref in float32: at p < 100 the angle error is below ~100 * 6e-8
    assert_close(sinusoidal_pe(100, 32), out, atol=1e-5)


def test_wavelengths_fastest_pair_first():
    # pair 0 turns once every 2*pi positions; the last pair (d=128) needs 2*pi*10000**(126/128) ~ 54,410
    d = 128
    wavelengths = [2 * math.pi * 10000 ** (2 * i / d) for i in range(d // 2)]
    assert wavelengths[0] == pytest.approx(6.283, abs=1e-3)
    assert wavelengths[-1] == pytest.approx(54410.1, abs=0.1)
    pe = sinusoidal_pe(8, d, dtype=torch.float64)
    # after 2*pi positions the fastest pair is (almost) back; the slowest has barely moved
    assert abs(pe[6, 0] - pe[0, 0]) < 0.3 and abs(pe[6, -1] - pe[0, -1]) < 1e-6


@pytest.mark.parametrize("k", [1, 5, 37, -3])
def test_shift_property_is_one_linear_map_for_every_position(k):
    d = 32
    pe = sinusoidal_pe(300, d, dtype=torch.float64)
    m = sinusoidal_shift_matrix(k, d, dtype=torch.float64)
    ps = torch.arange(10, 250)
    assert_close(pe[ps] @ m.T, pe[ps + k], atol=1e-5)
    # M_k is orthogonal (a rotation of every pair) and M_a M_b = M_{a+b}
    assert_close(m @ m.T, torch.eye(d, dtype=torch.float64), atol=1e-12)
    assert_close(
        m @ sinusoidal_shift_matrix(4, d, dtype=torch.float64),
        sinusoidal_shift_matrix(k + 4, d, dtype=torch.float64),
        atol=1e-10,
    )


def test_dtype_device_and_errors(device):
    assert sinusoidal_pe(4, 8, device=device, dtype=torch.bfloat16).dtype == torch.bfloat16
    assert sinusoidal_pe(4, 8, device=device).device.type == device
    with pytest.raises(ValueError, match="dim must be even"):
        sinusoidal_pe(4, 7)
    with pytest.raises(ValueError, match="n_positions must be a positive int"):
        sinusoidal_pe(0, 8)
    # an integer dtype used to give a table of 0s and 1s
    with pytest.raises(TypeError, match="dtype must be a floating-point torch.dtype"):
        sinusoidal_pe(4, 8, dtype=torch.long)
    with pytest.raises(TypeError, match="dtype must be a floating-point torch.dtype"):
        sinusoidal_shift_matrix(1, 8, dtype=torch.int32)
    # a NaN, zero or negative base used to give a table of NaNs without a word
    for base in (float("nan"), 0.0, -5.0, float("inf")):
        with pytest.raises(ValueError, match="base must be a finite number > 1"):
            sinusoidal_pe(4, 8, base=base)


def test_learned_table_lookup_and_out_of_range():
    table = LearnedPositionalEmbedding(16, 4)
    pos = torch.tensor([[0, 3, 15]])
    assert torch.equal(table(pos), table.weight[[0, 3, 15]][None])
    with pytest.raises(IndexError, match="position 16 is outside the learned table.*0..15"):
        table(torch.arange(17))
    with pytest.raises(IndexError, match="position -1"):
        table(torch.tensor([-1]))
    with pytest.raises(TypeError, match="integer positions"):
        table(torch.tensor([1.0]))
