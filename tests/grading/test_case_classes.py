"""Every checker draws, in every run of its hidden cases, each case class its text names (signs, both directions,
both layouts, offsets, dtypes, shapes), and randomizes within them: a function wrong in one class only fails in
every one of 200 hidden draws (issue 26, item 3). Each draw is made from a fixed seed (``hidden_seed``), so that
these tests are deterministic; a wrong function fails on its first case that differs, so each draw costs little.
"""

from __future__ import annotations

import math

import pytest
import student_impls as s
import student_impls_lab as lab
import torch

import posref
from posref import grading
from posref.grading import CheckFailed
from posref.grading.cases import Draw, hidden_seed
from posref.grading.checks.scaling import FREQUENCY_MISTAKES
from posref.lab.positions import RoPEPositions

pytestmark = pytest.mark.spread  # each test on any worker (see tests/conftest.py)
DRAWS = 200


def attention_never_causal(q, k, v, causal=False):
    return posref.scaled_dot_product_attention(q, k, v)


def equivariance_error_unbatched(f, x, perm):  # P x as x[perm]: the batch dimension is permuted instead
    return float((f(x[perm]) - f(x)[perm]).abs().max())


def sinusoidal_pe_base_ignored(n, dim, base=10000.0):
    return posref.sinusoidal_pe(n, dim)


def alibi_bias_positions_from_zero(slopes, q_positions, k_positions):
    q = torch.arange(q_positions.numel(), device=slopes.device)
    k = torch.arange(k_positions.numel(), device=slopes.device)
    return -slopes[:, None, None] * (q[:, None] - k[None, :]).abs().to(slopes.dtype)


def t5_bucket_one_sided(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    """Right for keys before the query (and unidirectional), the later keys put in the lower half too."""
    return posref.t5_relative_position_bucket(
        -relative_position.abs(),
        bidirectional=bidirectional,
        num_buckets=num_buckets,
        max_distance=max_distance,
    )


def apply_rope_half_only(x, cos, sin, layout="half"):
    return posref.apply_rope(x, cos, sin)


def rope_scores_half_only(q, k, cos, sin, layout="half"):
    return posref.apply_rope(q, cos, sin) @ posref.apply_rope(k, cos, sin).transpose(-1, -2)


def score_by_distance_float32_angles(q, k, inv_freq, distances):
    r = inv_freq.shape[0]
    qa, qb, ka, kb = q[..., :r], q[..., r:], k[..., :r], k[..., r:]
    angles = distances.float()[:, None] * inv_freq.float()
    a, b = (qa * ka + qb * kb)[..., None, :], (qb * ka - qa * kb)[..., None, :]
    return (a * angles.cos() - b * angles.sin()).sum(-1).to(q.dtype)


def pair_norms_half_only(x, layout="half"):
    return posref.rope_analysis.pair_norms(x)


def p_rope_by_index(inv_freq, p):
    out = inv_freq.clone()
    out[math.floor(p * inv_freq.shape[0]) :] = 0
    return out


def mutation_always_monotone(parent, which, noise, low, high, monotone):
    return s.longrope_mutation_loop(parent, which, noise, low, high, True)


def causal_mean_two_dims(v):  # v.cumsum(0): right only when v has no leading dims
    return v.cumsum(0) / torch.arange(1, v.shape[0] + 1, dtype=v.dtype, device=v.device)[:, None]


def learned_float32_out(weight, x, positions):
    module = s.LearnedPositionsChecked(*weight.shape).to(device=x.device, dtype=weight.dtype)
    with torch.no_grad():
        module.weight.copy_(weight)
        return module(x, positions).float()


def rope_handler_from_zero():
    class FromZero(RoPEPositions):
        def rotate(self, q, k, positions):
            return super().rotate(q, k, torch.arange(positions.numel(), device=positions.device))

    def run(x, w_qkv, n_heads, start, n_new, base):
        handler = FromZero(x.shape[-1] // n_heads, base=base)
        return posref.lab.positions.handler_attention(handler, x, w_qkv, n_heads, start=start, n_new=n_new)

    return run


def nope_that_rotates(x, w_qkv, n_heads, start, n_new):
    handler = RoPEPositions(x.shape[-1] // n_heads, base=50.0)
    return posref.lab.positions.handler_attention(handler, x, w_qkv, n_heads, start=start, n_new=n_new)


WRONG = [
    ("causal cases", grading.check_attention, attention_never_causal),
    ("batched inputs", grading.check_equivariance_error, equivariance_error_unbatched),
    ("a base other than 10000", grading.check_sinusoidal_pe, sinusoidal_pe_base_ignored),
    ("negative k", grading.check_shift_matrix, s.shift_matrix_abs_k),
    ("half-precision x", grading.check_learned_positions, learned_float32_out),
    ("head counts not powers of two", grading.check_alibi_slopes, s.alibi_slopes_naive),
    ("fewer queries than keys", grading.check_alibi_bias, alibi_bias_positions_from_zero),
    ("keys after the query", grading.check_t5_bucket, t5_bucket_one_sided),
    ("a unidirectional bias", grading.check_t5_learned_bias, s.t5_learned_bias_always_bidirectional),
    ("half-precision frequencies far out", grading.check_rope_cos_sin, s.rope_cos_sin_half_precision),
    ("the interleaved layout", grading.check_apply_rope, apply_rope_half_only),
    ("partial rotary", grading.check_apply_rope, s.apply_rope_full_width_half),
    ("the interleaved layout", grading.check_rope_scores, rope_scores_half_only),
    ("distances of 10^5", grading.check_score_by_distance, score_by_distance_float32_angles),
    ("the interleaved layout", grading.check_pair_norms, pair_norms_half_only),
    ("shuffled frequencies", grading.check_p_rope, p_rope_by_index),
    ("monotone=False", grading.check_longrope_mutation, mutation_always_monotone),
    ("half-precision logits", grading.check_per_position_loss, lab.per_position_loss_in_half),
    ("a KV-cache offset", grading.check_rope_handler, rope_handler_from_zero()),
    ("fewer queries than keys", grading.check_alibi_handler, lab.alibi_attention(lab.ALiBiCountsFromOne)),
    ("leading dims", grading.check_causal_mean, causal_mean_two_dims),
    ("any case", grading.check_nope_handler, nope_that_rotates),
    ("any case", grading.check_drop, lab.drop_and_run(lab.drop_keeps_rope)),
]


@pytest.mark.slow
@pytest.mark.parametrize(("_class", "check", "wrong"), WRONG, ids=[f"{c.__name__}: {k}" for k, c, _ in WRONG])
def test_a_function_wrong_in_one_class_fails_every_draw(_class, check, wrong):
    for seed in range(DRAWS):
        with hidden_seed(seed), pytest.raises(CheckFailed):
            check(wrong, hidden=True)


FREQUENCY_WRONG = {
    "linear": ("any case", next(iter(FREQUENCY_MISTAKES["linear"].values()))),
    "ntk": ("any case", next(iter(FREQUENCY_MISTAKES["ntk"].values()))),
    "yarn": ("betas given", lab.yarn_paper_default_betas),
    "ntk_by_parts": ("betas given", lambda d, b, p, seq_len=None: posref.rope_frequencies(
        d, base=b, scaling={"rope_type": "ntk_by_parts", "factor": p["factor"],
                            "original_max_position_embeddings": p["original_max_position_embeddings"]})),
}  # fmt: skip


@pytest.mark.parametrize("rope_type", FREQUENCY_WRONG)
def test_a_frequency_rule_wrong_in_one_class_fails_every_draw(rope_type):
    _class, wrong = FREQUENCY_WRONG[rope_type]
    for seed in range(DRAWS):
        with hidden_seed(seed), pytest.raises(CheckFailed):
            grading.check_frequencies(wrong, rope_type, hidden=True)


def test_a_hidden_seed_fixes_the_draw_and_only_inside_its_block():
    with hidden_seed(7):
        assert Draw(hidden=True).seed == 7
        assert Draw(hidden=False).seed != 7  # the visible cases keep their own seed
    assert Draw(hidden=True).seed != Draw(hidden=True).seed  # outside it, from os.urandom again


def test_cover_draws_every_option_of_every_axis_and_randomizes_the_rest():
    for seed in range(50):
        draw = Draw(hidden=True, seed=seed)
        rows = draw.cover(
            5, layout=("half", "interleaved"), dtype=(torch.float32, torch.float16, torch.bfloat16)
        )
        assert len(rows) == 5
        assert {r["layout"] for r in rows} == {"half", "interleaved"}
        assert {r["dtype"] for r in rows} == {torch.float32, torch.float16, torch.bfloat16}
    orders = {
        tuple(r["layout"] for r in Draw(hidden=True, seed=seed).cover(4, layout=("a", "b")))
        for seed in range(20)
    }
    assert len(orders) > 1  # where each option sits is drawn too
    with pytest.raises(ValueError, match="at least 3"):
        Draw(hidden=True, seed=0).cover(2, dtype=(1, 2, 3))
