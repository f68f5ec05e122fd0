"""Notebook 05's checkers accept correct code written differently and reject each classic mistake by name."""

from __future__ import annotations

import math

import pytest
import torch

from posref import apply_rope, rope_cos_sin
from posref.grading import CheckFailed, check_p_rope, check_pair_norms, check_score_by_distance


def _rows(x, n):
    """(..., D) -> (..., n, D) float64: the same vector at n positions."""
    return x.double()[..., None, :].expand(*x.shape[:-1], n, x.shape[-1])


def score_by_rotating(q, k, inv_freq, distances):
    """Rotate the key at position 0 and the query at each distance (float64 angles), then dot products."""
    angles = distances.double()[:, None] * inv_freq.double()
    qd, kd = _rows(q, len(distances)), k.double()[..., None, :]
    rq = apply_rope(qd, angles.cos(), angles.sin())
    zero = torch.zeros_like(angles[:1])
    rk = apply_rope(kd, zero.cos(), zero.sin())
    return (rq * rk).sum(-1).to(q.dtype)


def score_float32_angles(q, k, inv_freq, distances):
    cos, sin = rope_cos_sin(distances, inv_freq)  # float32 angles: wrong far away
    rq = apply_rope(_rows(q, len(distances)), cos.double(), sin.double())
    return (rq * k.double()[..., None, :]).sum(-1).to(q.dtype)


def score_keys_rotated_instead(q, k, inv_freq, distances):
    angles = distances.double()[:, None] * inv_freq.double()
    rk = apply_rope(_rows(k, len(distances)), angles.cos(), angles.sin())
    return (q.double()[..., None, :] * rk).sum(-1).to(q.dtype)


def pair_norms_complex(x, layout="half"):
    r = x.shape[-1] // 2
    pairs = torch.stack((x[..., :r], x[..., r:]), -1) if layout == "half" else x.unflatten(-1, (r, 2))
    return torch.view_as_complex(pairs.contiguous()).abs()


def pair_norms_interleaved_always(x, layout="half"):
    return x.unflatten(-1, (x.shape[-1] // 2, 2)).norm(dim=-1)


def p_rope_topk(inv_freq, p):
    keep = torch.topk(inv_freq, math.floor(p * inv_freq.shape[0])).indices
    out = torch.zeros_like(inv_freq)
    out[keep] = inv_freq[keep]
    return out


def p_rope_by_index(inv_freq, p):
    out = inv_freq.clone()
    out[math.floor(p * inv_freq.shape[0]) :] = 0
    return out


def p_rope_keep_lowest(inv_freq, p):
    out = inv_freq.clone()
    out[torch.argsort(inv_freq)[math.floor(p * inv_freq.shape[0]) :]] = 0
    return out


@pytest.mark.parametrize("hidden", [False, True], ids=["visible", "hidden"])
@pytest.mark.parametrize(
    ("check", "fn"),
    [
        (check_score_by_distance, score_by_rotating),
        (check_pair_norms, pair_norms_complex),
        (check_p_rope, p_rope_topk),
    ],
    ids=["score_by_distance", "pair_norms", "p_rope"],
)
def test_correct_implementations_pass(check, fn, hidden):
    check(fn, hidden=hidden)


@pytest.mark.parametrize(
    ("check", "fn", "hint"),
    [
        (check_score_by_distance, score_keys_rotated_instead, "sign of the sine term"),
        (check_pair_norms, pair_norms_interleaved_always, "wrong pairing layout"),
        (check_p_rope, p_rope_keep_lowest, "lowest frequencies were kept"),
    ],
)
def test_mistakes_are_named_in_visible_mode(check, fn, hint):
    with pytest.raises(CheckFailed, match=hint):
        check(fn)


def test_hidden_cases_catch_what_visible_ones_cannot():
    # far distances expose float32 angles; shuffled frequencies expose choosing by index
    check_score_by_distance(score_float32_angles)
    check_p_rope(p_rope_by_index)
    with pytest.raises(CheckFailed, match="float64"):
        for _ in range(
            5
        ):  # each hidden draw has far distances with high probability; five draws make it certain
            check_score_by_distance(score_float32_angles, hidden=True)
    with pytest.raises(CheckFailed, match="by index"):
        for _ in range(5):
            check_p_rope(p_rope_by_index, hidden=True)
