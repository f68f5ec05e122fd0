import pytest
import torch
from conftest import assert_close

from posref import POSITION_METHODS, NoPE, alibi_bias, alibi_slopes, make_position_handler, sinusoidal_pe


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
