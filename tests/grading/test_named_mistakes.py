"""Every mistake a notebook names gets a hint that fires on it (issue 26, item 6): 07's NTK-by-parts on the library's
index ramp or with the default betas, YaRN's ramp the wrong way round, Llama 3's blend the wrong way round; 06's
ALiBi handler with 2**(-8h/n) for any head count and its RoPE handler with exponent i/D. Each wrong answer is
written here from the notebook's text, not taken from the checker, and must get its hint in the visible check and
in each of 5 hidden draws."""

from __future__ import annotations

import math

import pytest
import torch

from posref import grading
from posref.grading import CheckFailed
from posref.grading.cases import hidden_seed
from posref.lab.positions import PositionHandler, handler_attention

L_KEY = "original_max_position_embeddings"


def _plain(head_dim, base):
    return base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)


def _by_parts(head_dim, base, params, gamma):
    """theta' = (1 - gamma) theta / s + gamma theta with ``gamma`` per pair (1 keeps a pair, 0 divides it)."""
    theta = _plain(head_dim, base)
    return ((1 - gamma) * theta / params["factor"] + gamma * theta).float()


def _turns(head_dim, base, params):
    return params[L_KEY] * _plain(head_dim, base) / (2 * math.pi)


def ntk_by_parts_index_ramp(head_dim, base, params, seq_len=None):
    """The ramp linear in the pair index between the pairs that make beta_fast and beta_slow turns (the library's
    YaRN ramp), rounded to whole pairs as the library does."""
    fast, slow = params.get("beta_fast", 32.0), params.get("beta_slow", 1.0)

    def pair(turns):  # the fractional pair index whose wavelength fits `turns` turns in L
        return head_dim * math.log(params[L_KEY] / (turns * 2 * math.pi)) / (2 * math.log(base))

    low, high = max(math.floor(pair(fast)), 0), min(math.ceil(pair(slow)), head_dim - 1)
    high = high + 0.001 if low == high else high
    ramp = ((torch.arange(head_dim // 2, dtype=torch.float64) - low) / (high - low)).clamp(0, 1)
    return _by_parts(head_dim, base, params, 1 - ramp), 1.0


def ntk_by_parts_default_betas(head_dim, base, params, seq_len=None):
    gamma = ((_turns(head_dim, base, params) - 1.0) / (32.0 - 1.0)).clamp(0, 1)
    return _by_parts(head_dim, base, params, gamma), 1.0


def yarn_ramp_backwards(head_dim, base, params, seq_len=None):
    fast, slow = params.get("beta_fast", 32.0), params.get("beta_slow", 1.0)
    gamma = ((_turns(head_dim, base, params) - slow) / (fast - slow)).clamp(0, 1)
    return _by_parts(head_dim, base, params, 1 - gamma), 0.1 * math.log(params["factor"]) + 1.0


class ALiBiAnyCount(PositionHandler):
    """ALiBi with 2**(-8h/n) for every head count (right only for powers of two)."""

    def __init__(self, n_heads):
        super().__init__()
        self.slopes = torch.tensor([2.0 ** (-8.0 * h / n_heads) for h in range(1, n_heads + 1)])

    def bias(self, q_positions, k_positions):
        distance = (q_positions[:, None] - k_positions[None, :]).abs().float()
        return -self.slopes.to(distance.device)[:, None, None] * distance


def alibi_any_count(x, w_qkv, n_heads, start, n_new):
    return handler_attention(ALiBiAnyCount(n_heads), x, w_qkv, n_heads, start=start, n_new=n_new)


class RoPEExponentI(PositionHandler):
    """RoPE whose pair i turns at base**(-i/D) instead of base**(-2i/D)."""

    def __init__(self, head_dim, base):
        super().__init__()
        self.head_dim, self.base = head_dim, base

    def rotate(self, q, k, positions):
        r = self.head_dim // 2
        theta = self.base ** (-torch.arange(r, dtype=torch.float32, device=q.device) / self.head_dim)
        angles = positions.float()[:, None] * theta
        cos, sin = angles.cos(), angles.sin()

        def turn(x):
            a, b = x[..., :r], x[..., r:]
            return torch.cat((a * cos - b * sin, b * cos + a * sin), dim=-1)

        return turn(q), turn(k)


def rope_exponent_i(x, w_qkv, n_heads, start, n_new, base):
    handler = RoPEExponentI(x.shape[-1] // n_heads, base)
    return handler_attention(handler, x, w_qkv, n_heads, start=start, n_new=n_new)


def _frequencies(rope_type):
    def check(fn, *, hidden=False):
        grading.check_frequencies(fn, rope_type, hidden=hidden)

    return check


NAMED = [
    (
        _frequencies("ntk_by_parts"),
        ntk_by_parts_index_ramp,
        "a ramp linear in the pair index is the transformers",
    ),
    (_frequencies("ntk_by_parts"), ntk_by_parts_default_betas, "what the defaults 32 and 1 give"),
    (_frequencies("yarn"), yarn_ramp_backwards, "the ramp runs the wrong way"),
    (grading.check_alibi_handler, alibi_any_count, "for a head count that is not a power of two"),
    (grading.check_rope_handler, rope_exponent_i, "the exponent is 2i/D (you used i/D)"),
]


@pytest.mark.parametrize(("check", "wrong", "hint"), NAMED, ids=[w.__name__ for _, w, _ in NAMED])
def test_a_mistake_the_notebook_names_gets_its_hint(check, wrong, hint):
    for seed in [None, *range(5)]:  # the visible check, then 5 hidden draws
        with pytest.raises(CheckFailed) as failure:
            if seed is None:
                check(wrong)
            else:
                with hidden_seed(seed):
                    check(wrong, hidden=True)
        assert f"hint: {hint}" in str(failure.value) or hint in str(failure.value).split("hint:")[-1], (
            seed,
            str(failure.value),
        )
