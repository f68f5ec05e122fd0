"""Notebook 05's checkers accept correct code written differently and reject each classic mistake by name."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
import torch

from posref import apply_rope, rope_cos_sin
from posref.grading import CheckFailed, check_p_rope, check_pair_norms, check_score_by_distance
from posref.grading.cases import hidden_seed


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
    # far distances expose float32 angles
    check_score_by_distance(score_float32_angles)
    for seed in range(50):  # every draw, not most (a loop inside pytest.raises reads only the first)
        with hidden_seed(seed), pytest.raises(CheckFailed, match="float64"):
            check_score_by_distance(score_float32_angles, hidden=True)


def test_shuffled_frequencies_expose_choosing_by_index_in_both_modes():
    # the exercise says "do not assume inv_freq is sorted": one visible case is shuffled, so it shows before grading
    with pytest.raises(CheckFailed, match="by index"):
        check_p_rope(p_rope_by_index)
    # every draw: its first case tells ranking by index from keeping the lowest (seed 64 drew 3 of 4 kept, where
    # both zero only the highest, and no later case was wrong: the hint named the lowest kept)
    for seed in [64, *range(50)]:
        with hidden_seed(seed), pytest.raises(CheckFailed, match="by index"):
            check_p_rope(p_rope_by_index, hidden=True)


def p_rope_zero_highest(inv_freq, p):
    out = inv_freq.clone()
    out[torch.argsort(inv_freq, descending=True)[: math.floor(p * inv_freq.shape[0])]] = 0
    return out


def p_rope_keeping(count):
    def p_rope(inv_freq, p):
        out = inv_freq.clone()
        out[torch.argsort(inv_freq, descending=True)[count(p, inv_freq.shape[0]) :]] = 0
        return out

    return p_rope


p_rope_ceil = p_rope_keeping(lambda p, r: math.ceil(p * r))


def p_rope_sorted_output(inv_freq, p):
    out = inv_freq.sort(descending=True).values
    out[math.floor(p * inv_freq.shape[0]) :] = 0
    return out


def pair_norms_float32(x, layout="half"):
    return pair_norms_complex(x.float(), layout)


def pair_norms_matrix_only(x, layout="half"):
    r = x.shape[-1] // 2
    a, b = (x[:, :r], x[:, r:]) if layout == "half" else (x[:, 0::2], x[:, 1::2])
    return (a * a + b * b).sqrt()


@pytest.mark.parametrize(
    ("fn", "hint"),
    [
        # this hint was unreachable (its variant was the same as keep_lowest)
        (p_rope_zero_highest, "p is the fraction KEPT"),
        (p_rope_ceil, "not ceil"),
        (p_rope_sorted_output, None),
    ],
)
def test_p_rope_visible_cases_catch_inverted_p_ceil_and_sorting(fn, hint):
    with pytest.raises(CheckFailed) as failure:
        check_p_rope(fn)
    if hint:
        assert hint in str(failure.value).split("hint: ")[-1]


@pytest.mark.parametrize(
    "count",
    [lambda p, r: math.floor(p * r), lambda p, r: math.floor(Fraction(str(p)) * r), lambda p, r: int(p * r)],
    ids=["float floor", "exact fraction", "int()"],
)
def test_p_rope_accepts_both_readings_where_p_r_falls_just_short_of_a_whole_number(count):
    # the visible case 0.58 of 50 pairs is 28.999999999999996 in floating point: 29 and 28 both pass
    check_p_rope(p_rope_keeping(count))
    for _ in range(5):
        check_p_rope(p_rope_keeping(count), hidden=True)


@pytest.mark.parametrize("fn", [pair_norms_float32, pair_norms_matrix_only])
def test_pair_norms_visible_cases_cover_dtype_and_leading_dims(fn):
    with pytest.raises(CheckFailed):
        check_pair_norms(fn)
