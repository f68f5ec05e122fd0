"""Tests of posref.scaling_registry: a user's frequency function added under a new name is what RoPE then runs,
posref's own methods stay as they are, and a bad registration or a bad result is a clear error.

Oracle: rotations written out by hand from the user's frequencies (``x_a cos - x_b sin``, ``x_b cos + x_a sin`` on
the pairs ``(i, i + d/2)``), not posref's rope code.
"""

from __future__ import annotations

import copy
import math

import pytest
import torch
from conftest import assert_close

from posref.lab.positions import make_position_handler
from posref.rope import RotaryEmbedding
from posref.scaling import (
    ADDED_METHODS,
    ORIGINAL_LEN_KEY,
    SCALING_METHODS,
    add_scaling_method,
    remove_scaling_method,
    rope_frequencies,
)


@pytest.fixture(autouse=True)
def _clean_registry():
    before = dict(SCALING_METHODS)
    yield
    for name in list(ADDED_METHODS):
        remove_scaling_method(name)
    assert SCALING_METHODS == before, "a test changed posref's own methods"


def thirds(head_dim, base, params, seq_len=None):
    """A user's rule: every pair slowed by the factor, and by one more for each doubling of the length past 8."""
    extra = 0.0 if seq_len is None else max(0.0, math.log2(seq_len / 8))
    return torch.tensor(
        [base ** (-2 * i / head_dim) / (params["factor"] + extra) for i in range(head_dim // 2)],
        dtype=torch.float64,
    ), 1.5


def add_thirds(name="my_thirds", **kw):
    options = {"title": "thirds", "example": {"factor": 3.0}, "required": ("factor",), **kw}
    return add_scaling_method(name, thirds, **options)


def rotate_by_hand(x, positions, inv_freq, factor):
    """``x`` (T, d) rotated at ``positions`` with pairs (i, i + d/2), cos and sin multiplied by ``factor``."""
    half = x.shape[-1] // 2
    out = x.clone()
    for t, m in enumerate(positions):
        for i, w in enumerate(inv_freq):
            c, s = factor * math.cos(m * w), factor * math.sin(m * w)
            a, b = x[t, i].item(), x[t, i + half].item()
            out[t, i], out[t, i + half] = a * c - b * s, b * c + a * s
    return out


def test_an_added_method_is_what_rope_runs():
    add_thirds()
    dim, base = 8, 100.0
    scaling = {"rope_type": "my_thirds", "factor": 3.0}
    inv_freq, factor = rope_frequencies(dim, base=base, scaling=scaling)
    assert factor == 1.5
    assert_close(inv_freq, torch.tensor([base ** (-2 * i / dim) / 3 for i in range(4)]), atol=0, rtol=1e-6)
    x = torch.randn(5, dim, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    expected = rotate_by_hand(x, range(5), inv_freq.tolist(), 1.5)
    rotary = RotaryEmbedding(dim, base=base, scaling=scaling)
    assert_close(rotary.rotate(x.float()), expected, atol=1e-5, what="RotaryEmbedding")
    assert_close(copy.deepcopy(rotary).rotate(x.float()), expected, atol=1e-5, what="a deep copy")
    # the lab's handler (what with_positions builds) takes the same dict
    handler = make_position_handler("rope", d_model=2 * dim, n_heads=2, rope_base=base, rope_scaling=scaling)
    q = x.float()[None, None]
    rotated, _ = handler.rotate(q, q, torch.arange(5))
    assert_close(rotated[0, 0], expected, atol=1e-5, what="the lab's RoPE handler")


def test_a_length_dependent_method_follows_the_length():
    add_thirds(
        length_dependent=True,
        required=("factor", ORIGINAL_LEN_KEY),
        example={"factor": 3.0, ORIGINAL_LEN_KEY: 8},
    )
    scaling = {"rope_type": "my_thirds", "factor": 2.0, ORIGINAL_LEN_KEY: 8}
    x = torch.randn(32, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    rotary = RotaryEmbedding(4, base=10.0, scaling=scaling)
    for T in (8, 32, 16):  # the frequencies of each call's own length: 2, 4 and 3
        slowed = 2.0 + max(0.0, math.log2(T / 8))
        expected = rotate_by_hand(x[:T], range(T), [1 / slowed, 10**-0.5 / slowed], 1.5)
        assert_close(rotary.rotate(x[:T].float()), expected, atol=1e-5, what=f"T = {T}")


def test_posref_methods_are_untouched_and_cannot_be_replaced():
    linear = SCALING_METHODS["linear"]
    add_thirds()
    assert "my_thirds" not in SCALING_METHODS and SCALING_METHODS["linear"] is linear
    with pytest.raises(ValueError, match="one of posref's own scaling methods.*e.g. 'my_linear'"):
        add_thirds("linear")
    with pytest.raises(ValueError, match="posref's own.*cannot be removed"):
        remove_scaling_method("linear")
    assert rope_frequencies(8, scaling={"rope_type": "linear", "factor": 2.0})[1] == 1.0


def test_adding_again_replaces_and_removing_forgets():
    add_thirds()

    def halves(head_dim, base, params, seq_len=None):
        return torch.full((head_dim // 2,), 0.5), 1.0

    add_scaling_method("my_thirds", halves, title="halves", example={})
    assert rope_frequencies(8, scaling={"rope_type": "my_thirds"})[0].tolist() == [0.5] * 4
    remove_scaling_method("my_thirds")
    with pytest.raises(ValueError, match="unknown rope_type 'my_thirds'"):
        rope_frequencies(8, scaling={"rope_type": "my_thirds"})
    with pytest.raises(ValueError, match="no added scaling method 'my_thirds'"):
        remove_scaling_method("my_thirds")


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        ({"name": "my thirds"}, ValueError, "without spaces"),
        ({"fn": lambda head_dim, base: None}, TypeError, r"must take \(head_dim, base, params, seq_len\)"),
        ({"fn": "thirds"}, TypeError, "fn must be a function"),
        ({"title": ""}, ValueError, "title must be a non-empty string"),
        ({"required": "factor"}, ValueError, "required must be a tuple of key names"),
        ({"optional": ("factor",)}, ValueError, "either required or optional"),
        ({"example": {"factr": 3.0}}, ValueError, "does not accept key.*factr"),
        ({"example": {"rope_type": "x", "factor": 3.0}}, ValueError, "without 'rope_type'"),
        ({"length_dependent": "yes"}, TypeError, "length_dependent must be True or False"),
        ({"length_dependent": True}, ValueError, "add 'original_max_position_embeddings' to required"),
    ],
)
def test_a_bad_registration_says_what_is_wrong(change, error, message):
    options = {"name": "my_thirds", "fn": thirds, "title": "thirds", "example": {"factor": 3.0}}
    options.update({"required": ("factor",)}, **change)
    with pytest.raises(error, match=message):
        add_scaling_method(options.pop("name"), options.pop("fn"), **options)
    assert "my_thirds" not in ADDED_METHODS


def test_an_unfinished_function_fails_at_registration_with_its_own_error():
    def stub(head_dim, base, params, seq_len=None):
        raise NotImplementedError()

    with pytest.raises(NotImplementedError):
        add_scaling_method("my_stub", stub, title="stub", example={})
    assert "my_stub" not in ADDED_METHODS


@pytest.mark.parametrize(
    ("result", "error", "message"),
    [
        ("64 entries", ValueError, r"shape \(4,\) for dim 8; got \(64,\)"),
        (([1.0] * 4, 1.0), TypeError, "inv_freq must be a float tensor"),
        ((torch.zeros(4),), TypeError, r"must return \(inv_freq, attention_factor\)"),
        ((-torch.ones(4), 1.0), ValueError, "positive and finite"),
        ((torch.ones(4), None), TypeError, "attention_factor must be a positive number"),
    ],
)
def test_a_bad_result_is_a_clear_error_at_the_call(result, error, message):
    def user(head_dim, base, params, seq_len=None):
        if head_dim == 128 or result == "64 entries":  # fine at registration (dim 128), wrong at dim 8
            return torch.ones(64), 1.0
        return result

    add_scaling_method("my_user", user, title="user", example={})
    with pytest.raises(error, match=f"scaling method 'my_user' \\(user\\).*{message}"):
        rope_frequencies(8, scaling={"rope_type": "my_user"})


def test_the_function_gets_a_copy_of_the_keys():
    def greedy(head_dim, base, params, seq_len=None):
        params["factor"] = 100.0
        return torch.ones(head_dim // 2), 1.0

    add_scaling_method("my_greedy", greedy, title="greedy", example={"factor": 2.0}, required=("factor",))
    scaling = {"rope_type": "my_greedy", "factor": 2.0}
    rope_frequencies(8, scaling=scaling)
    assert scaling["factor"] == 2.0
