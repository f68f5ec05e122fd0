"""Each checker accepts the reference and correct code written differently, and rejects each classic mistake
with the hint that names it (the hint comes from recognising the mistake, so the test also checks that)."""

from __future__ import annotations

import pytest
import student_impls as s
import torch

import posref
from posref import grading
from posref.grading import CheckFailed, Draw

CORRECT = [
    (
        grading.check_attention,
        lambda q, k, v, causal=False: posref.scaled_dot_product_attention(q, k, v, causal=causal),
    ),
    (grading.check_attention, s.attention_loops),
    (grading.check_equivariance_error, posref.equivariance_error),
    (grading.check_equivariance_error, s.equivariance_error_einsum),
    (grading.check_sinusoidal_pe, lambda n, d, base=10000.0: posref.sinusoidal_pe(n, d, base=base)),
    (grading.check_sinusoidal_pe, s.sinusoidal_pe_exp_log),
    (grading.check_shift_matrix, lambda k, d, base=10000.0: posref.sinusoidal_shift_matrix(k, d, base=base)),
    (grading.check_shift_matrix, s.shift_matrix_from_tables),
    (grading.check_alibi_slopes, posref.alibi_slopes),
    (grading.check_alibi_slopes, s.alibi_slopes_geometric),
    (grading.check_alibi_bias, posref.alibi_bias),
    (grading.check_alibi_bias, s.alibi_bias_loops),
    (grading.check_t5_bucket, posref.t5_relative_position_bucket),
    (grading.check_t5_bucket, s.t5_bucket_hf_style),
    (grading.check_rope_cos_sin, posref.rope_cos_sin),
    (grading.check_rope_cos_sin, s.rope_cos_sin_float64),
    (grading.check_apply_rope, posref.apply_rope),
    (grading.check_apply_rope, s.apply_rope_complex),
    (grading.check_apply_rope, s.apply_rope_rotate_half),
    (grading.check_rope_scores, s.rope_scores_complex),
]


@pytest.mark.parametrize("hidden", [False, True], ids=["visible", "hidden"])
@pytest.mark.parametrize(("check", "fn"), CORRECT, ids=lambda v: getattr(v, "__name__", "")[:40])
def test_correct_implementations_pass(check, fn, hidden):
    check(fn, hidden=hidden)


def test_loops_pass_the_visible_sinusoidal_cases():
    grading.check_sinusoidal_pe(s.sinusoidal_pe_loops)


MISTAKES = [
    (grading.check_attention, s.attention_no_scale, "sqrt(head_dim)"),
    (grading.check_attention, s.attention_masks_past, "hides the past"),
    (grading.check_equivariance_error, s.equivariance_error_unpermuted_output, "output was not permuted"),
    (grading.check_sinusoidal_pe, s.sinusoidal_pe_intdiv, "integer division"),
    (grading.check_sinusoidal_pe, s.sinusoidal_pe_one_based, "numbered from 1"),
    (grading.check_sinusoidal_pe, s.sinusoidal_pe_halves, "wrong layout"),
    (grading.check_sinusoidal_pe, s.sinusoidal_pe_cos_first, "sin and cos are swapped"),
    (grading.check_sinusoidal_pe, s.sinusoidal_pe_swapped, "position and pair index are swapped"),
    (grading.check_shift_matrix, s.shift_matrix_transposed, "shifts the other way"),
    (grading.check_alibi_slopes, s.alibi_slopes_naive, "not a power of two"),
    (grading.check_alibi_bias, s.alibi_bias_signed, "absolute value"),
    (grading.check_t5_bucket, s.t5_bucket_unclipped, "clip"),
    (grading.check_rope_cos_sin, s.rope_cos_sin_half_precision, "float16/bfloat16"),
    (grading.check_apply_rope, s.apply_rope_wrong_layout, "wrong pairing layout"),
    (grading.check_apply_rope, s.apply_rope_sin_cos_swapped, "sin and cos are swapped"),
    (grading.check_apply_rope, s.apply_rope_full_width_half, "not i + head_dim/2"),
    (grading.check_apply_rope, s.apply_rope_float32_out, "expected dtype torch.bfloat16"),
    (grading.check_rope_scores, s.rope_scores_keys_only, "only the keys were rotated"),
]


@pytest.mark.parametrize(("check", "fn", "hint"), MISTAKES, ids=lambda v: getattr(v, "__name__", "")[:40])
def test_classic_mistakes_fail_with_their_hint(check, fn, hint):
    with pytest.raises(CheckFailed) as failure:
        check(fn)
    assert hint in str(failure.value)
    with pytest.raises(CheckFailed):
        check(fn, hidden=True)


def test_a_failure_names_the_case_expected_got_and_the_largest_error():
    with pytest.raises(CheckFailed) as failure:
        grading.check_apply_rope(s.apply_rope_wrong_layout)
    message = str(failure.value)
    assert "apply_rope(tensor float32 (3, 4)" in message and "layout='half'" in message
    assert "expected [" in message and "got      [" in message and "largest error" in message


def test_an_exception_in_student_code_is_reported_with_the_case():
    def broken(n, dim, base=10000.0):
        raise ValueError("not done yet")

    with pytest.raises(CheckFailed, match="raised ValueError: not done yet"):
        grading.check_sinusoidal_pe(broken)


def test_hidden_cases_change_between_runs_and_reproduce_from_their_seed():
    a, b = Draw(hidden=True), Draw(hidden=True)
    assert a.seed != b.seed
    again = Draw(hidden=True, seed=a.seed)
    assert torch.equal(a.randn(5), again.randn(5)) and a.int(0, 10**9) == again.int(0, 10**9)


def test_hidden_failures_quote_their_seed():
    with pytest.raises(CheckFailed, match=r"seed \d+"):
        grading.check_alibi_bias(s.alibi_bias_signed, hidden=True)


def test_in_place_changes_to_inputs_do_not_leak_into_the_reference():
    def destructive(x, cos, sin, layout="half"):
        out = posref.apply_rope(x, cos, sin, layout=layout)
        x.zero_(), cos.zero_()
        return out

    grading.check_apply_rope(destructive, hidden=True)


@pytest.mark.slow
def test_speed_budget_passes_vectorised_and_fails_a_matrix_per_position():
    grading.check_apply_rope_speed(s.apply_rope_complex)
    with pytest.raises(CheckFailed, match="too slow"):
        grading.check_apply_rope_speed(s.apply_rope_matrix_per_position)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_checkers_run_on_cuda():
    grading.check_apply_rope(posref.apply_rope, hidden=True, device="cuda")
    grading.check_rope_cos_sin(s.rope_cos_sin_float64, hidden=True, device="cuda")
    grading.check_apply_rope_speed(posref.apply_rope, device="cuda")


def _linear_closed_form(head_dim, base, params, seq_len=None):
    """Position Interpolation written out: base**(-2i/d) / factor, in float64."""
    return base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim) / params["factor"], 1.0


def _ntk_closed_form(head_dim, base, params, seq_len=None):
    """NTK-aware: the same formula with base * factor**(d/(d-2)), in float64."""
    new_base = base * params["factor"] ** (head_dim / (head_dim - 2))
    return new_base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim), 1.0


def _transformers_frequencies(rope_type):
    """The transformers library's own init function for that type (yarn, llama3): an independent oracle."""
    hf_reference = pytest.importorskip("hf_reference")

    def fn(head_dim, base, params, seq_len=None):
        inv_freq, factor = hf_reference.hf_init(
            hf_reference.hf_config(head_dim, base=base, scaling={"rope_type": rope_type, **params})
        )
        return inv_freq, float(factor)

    return fn


@pytest.mark.parametrize(
    ("rope_type", "fn"),
    [
        ("linear", _linear_closed_form),
        ("ntk", _ntk_closed_form),
        ("yarn", _transformers_frequencies("yarn")),
        ("llama3", _transformers_frequencies("llama3")),
    ],
)
def test_frequency_checkers_pass_independent_implementations(rope_type, fn):
    getattr(grading, f"check_rope_frequencies_{rope_type}")(fn)
    grading.check_frequencies(fn, rope_type, hidden=True)


@pytest.mark.parametrize(
    ("rope_type", "wrong", "hint"),
    [
        (
            "linear",
            lambda d, b, p, seq_len=None: (_linear_closed_form(d, b, p)[0] * p["factor"] ** 2, 1.0),
            "divided",
        ),
        (
            "ntk",
            lambda d, b, p, seq_len=None: _ntk_closed_form(d, b, {"factor": p["factor"] ** ((d - 2) / d)}),
            "not base * factor",
        ),
        (
            "yarn",
            lambda d, b, p, seq_len=None: (
                posref.rope_frequencies(d, base=b, scaling={"rope_type": "yarn", **p})[0],
                1.0,
            ),
            "attention factor",
        ),
        ("llama3", lambda d, b, p, seq_len=None: _linear_closed_form(d, b, p), "keeps the short wavelengths"),
    ],
)
def test_frequency_checkers_name_the_classic_mistakes(rope_type, wrong, hint):
    with pytest.raises(CheckFailed) as failure:
        grading.check_frequencies(wrong, rope_type)
    assert hint in str(failure.value).split("hint: ")[-1]


def test_grading_mode_follows_the_environment(monkeypatch):
    monkeypatch.setenv("POSREF_GRADING", "1")
    monkeypatch.setenv("POSREF_FAST", "0")
    assert grading.grading() and not grading.fast()
    monkeypatch.delenv("POSREF_GRADING")
    assert not grading.grading()
