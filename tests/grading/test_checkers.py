"""Each checker accepts the reference and correct code written differently, and rejects each classic mistake
with the hint that names it (the hint comes from recognising the mistake, so the test also checks that)."""

from __future__ import annotations

import math
import re

import pytest
import student_impls as s
import torch

import posref
from posref import grading
from posref.grading import CheckFailed, Draw
from posref.grading.checks.scaling import FREQUENCY_MISTAKES
from posref.grading.report import Case, first_difference

learned = s.through_learned_module  # a student's module as the function the checker calls


class _LibraryTableAdded(posref.LearnedPositionalEmbedding):
    """posref's learned table with notebook 02's interface: added to the token embeddings."""

    def forward(self, x, positions):
        return x + super().forward(positions).to(x.dtype)  # in x's dtype, as the exercise asks


CORRECT = [
    (
        grading.check_attention,
        lambda q, k, v, causal=False: posref.scaled_dot_product_attention(q, k, v, causal=causal),
    ),
    (grading.check_attention, s.attention_loops),
    (grading.check_equivariance_error, posref.equivariance_error),
    (grading.check_equivariance_error, s.equivariance_error_einsum),
    (grading.check_learned_positions, learned(_LibraryTableAdded)),
    (grading.check_learned_positions, learned(s.LearnedPositionsChecked)),
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
    (grading.check_t5_learned_bias, s.t5_learned_bias_loops),
    (grading.check_longrope_mutation, s.longrope_mutation_loop),
    (grading.check_t5_learned_bias, s.t5_learned_bias_embedding),
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
    (grading.check_learned_positions, learned(s.LearnedPositionsNoCheck), "returned a result"),
    (grading.check_learned_positions, learned(s.LearnedPositionsTorchError), "say which position"),
    (grading.check_learned_positions, learned(s.LearnedPositionsFromZero), "not at arange(T)"),
    (grading.check_learned_positions, learned(s.LearnedPositionsTableOnly), "x + weight[positions]"),
    (grading.check_sinusoidal_pe, s.sinusoidal_pe_intdiv, "integer division"),
    (grading.check_sinusoidal_pe, s.sinusoidal_pe_one_based, "numbered from 1"),
    (grading.check_sinusoidal_pe, s.sinusoidal_pe_halves, "wrong layout"),
    (grading.check_sinusoidal_pe, s.sinusoidal_pe_cos_first, "sin and cos are swapped"),
    (grading.check_sinusoidal_pe, s.sinusoidal_pe_swapped, "position and pair index are swapped"),
    (grading.check_shift_matrix, s.shift_matrix_transposed, "shifts the other way"),
    (grading.check_alibi_slopes, s.alibi_slopes_naive, "not a power of two"),
    (grading.check_alibi_bias, s.alibi_bias_signed, "absolute value"),
    (grading.check_t5_bucket, s.t5_bucket_unclipped, "clip"),
    (grading.check_longrope_mutation, s.longrope_mutation_additive, "does not add the noise"),
    (grading.check_longrope_mutation, s.longrope_mutation_unbounded, "clamp the factors"),
    (grading.check_t5_learned_bias, s.t5_learned_bias_query_minus_key, "not query - key"),
    (grading.check_t5_learned_bias, s.t5_learned_bias_always_bidirectional, "pass bidirectional on"),
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


def test_only_hidden_draws_quote_their_seed_and_the_tensor_generator_reproduces_from_it():
    assert Draw(hidden=False).quoted_seed is None and Draw(hidden=True, seed=7).quoted_seed == 7
    a, again = Draw(hidden=True, seed=7), Draw(hidden=True, seed=7)
    a.randn(3)
    again.randn(3)
    drawn = torch.randint(0, 10**6, (8,), generator=a.tensor_generator)
    assert torch.equal(drawn, torch.randint(0, 10**6, (8,), generator=again.tensor_generator))


def test_a_failing_hidden_case_quotes_the_seed_and_a_visible_one_does_not():
    def wrong(x, cos, sin, layout="half"):
        return x

    with pytest.raises(CheckFailed, match="cases drawn with seed [0-9]+"):
        grading.check_apply_rope(wrong, hidden=True)
    with pytest.raises(CheckFailed) as failure:
        grading.check_apply_rope(wrong)
    assert "seed" not in str(failure.value).split("\n")[0]


def test_an_untouched_stub_is_named_as_such():
    def stub(x, cos, sin, layout="half"):
        raise NotImplementedError()

    with pytest.raises(CheckFailed) as failure:
        grading.check_apply_rope(stub)
    message = str(failure.value)
    assert "apply_rope fails on case 1" in message and "raised NotImplementedError\n" in message
    assert "still holds the stub" in message


def test_hidden_failures_quote_their_seed():
    with pytest.raises(CheckFailed, match=r"seed \d+"):
        grading.check_alibi_bias(s.alibi_bias_signed, hidden=True)


def test_in_place_changes_to_inputs_do_not_leak_into_the_reference_and_are_reported():
    # the output is compared with a reference computed on untouched inputs, and the change itself is named
    def destructive(x, cos, sin, layout="half"):
        out = posref.apply_rope(x, cos, sin, layout=layout)
        x.zero_()
        cos.zero_()
        return out

    with pytest.raises(CheckFailed, match=r"the output is right, but the call changed argument 1") as failure:
        grading.check_apply_rope(destructive, hidden=True)
    assert "apply_rope changes its input in place on case 1" in str(failure.value)


def _rotate_in_place(x, cos, sin, layout="half"):
    return x.copy_(posref.apply_rope(x, cos, sin, layout=layout))


def _negate_slopes_in_place(slopes, q_positions, k_positions):
    return slopes.neg_()[:, None, None] * (q_positions[:, None] - k_positions[None, :]).abs().to(slopes.dtype)


def _p_rope_in_place(inv_freq, p):
    inv_freq[torch.argsort(inv_freq, descending=True)[int(p * inv_freq.shape[0]) :]] = 0
    return inv_freq


def _t5_in_place(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    kw = {"bidirectional": bidirectional, "num_buckets": num_buckets, "max_distance": max_distance}
    return relative_position.copy_(posref.t5_relative_position_bucket(relative_position, **kw))


@pytest.mark.parametrize(
    ("check", "fn", "changed"),
    [
        (grading.check_apply_rope, _rotate_in_place, "argument 1"),
        (grading.check_alibi_bias, _negate_slopes_in_place, "argument 1"),
        (grading.check_p_rope, _p_rope_in_place, "argument 1"),
        (grading.check_t5_bucket, _t5_in_place, "argument 1"),
    ],
    ids=["apply_rope", "alibi_bias", "p_rope", "t5_bucket"],
)
def test_a_right_answer_that_overwrites_its_input_fails_and_says_so(check, fn, changed):
    # notebook 03 calls alibi_bias(slopes, ...) twice with the same slopes, 04 rotates q[None] (a view of q):
    # a function that writes into its inputs breaks the cells after it, so the checker names it
    for hidden in (False, True):
        with pytest.raises(CheckFailed, match=f"changed {changed}"):
            check(fn, hidden=hidden)


def test_tensors_given_by_keyword_are_copied_and_their_changes_reported_too():
    # keyword arguments used to be passed as the case's own dict: the change went unseen and stayed in the case
    def reference(x, *, scale):
        return x * scale

    def scales_in_place(x, *, scale):
        return x * scale.mul_(1.0)

    def doubles_scale(x, *, scale):
        out = x * scale
        scale.mul_(2)
        return out

    case = Case((torch.ones(3),), {"scale": torch.tensor(2.0)})
    first_difference("f", scales_in_place, reference, [case])  # writes the same values back: not a change
    with pytest.raises(CheckFailed, match="the call changed argument scale"):
        first_difference("f", doubles_scale, reference, [case])
    assert case.kwargs["scale"].item() == 2.0


def test_returning_an_input_unchanged_is_not_an_in_place_change():
    def p_rope_alias_when_all_kept(inv_freq, p):  # the visible cases include p = 1
        keep = math.floor(p * inv_freq.shape[0])
        if keep == inv_freq.shape[0]:
            return inv_freq
        return torch.where(
            inv_freq >= inv_freq.sort(descending=True).values[max(keep - 1, 0)], inv_freq, 0.0
        ) * (keep > 0)

    grading.check_p_rope(p_rope_alias_when_all_kept)
    grading.check_p_rope(p_rope_alias_when_all_kept, hidden=True)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_tables_are_refused_by_name(dtype):
    def pe(n, dim, base=10000.0):
        return posref.sinusoidal_pe(n, dim, base=base).to(dtype)

    def shift(k, dim, base=10000.0):
        return posref.sinusoidal_shift_matrix(k, dim, base=base).to(dtype)

    for check, fn in ((grading.check_sinusoidal_pe, pe), (grading.check_shift_matrix, shift)):
        with pytest.raises(CheckFailed, match=rf"expected float32 \(or float64\) values, got {dtype}"):
            check(fn)
    grading.check_sinusoidal_pe(lambda n, d, base=10000.0: posref.sinusoidal_pe(n, d, base=base).double())


def test_the_t5_clip_hint_names_the_half_of_the_buckets():
    # clipping at num_buckets - 1 in the bidirectional case is the same as not clipping (the hint used to say
    # "min(bucket, num_buckets - 1)", which is what this code does)
    def clipped_at_num_buckets(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
        nb = num_buckets // 2 if bidirectional else num_buckets
        side = (relative_position > 0).long() * nb if bidirectional else 0
        n = relative_position.abs() if bidirectional else (-relative_position).clamp(min=0)
        log_part = torch.log(n.float().clamp(min=1) / (nb // 2)) / math.log(max_distance / (nb // 2))
        far = (nb // 2 + (log_part * (nb - nb // 2)).long()).clamp(max=num_buckets - 1)
        return side + torch.where(n < nb // 2, n, far)

    with pytest.raises(CheckFailed) as failure:
        grading.check_t5_bucket(clipped_at_num_buckets)
    assert "nb = num_buckets // 2 when bidirectional" in str(failure.value)


def _equivariance_indexing_dim_0(f, x, perm):
    return (f(x[perm]) - f(x)[perm]).abs().max().item()


def _rope_scores_dot_t(q, k, cos, sin, layout="half"):
    return posref.apply_rope(q, cos, sin, layout=layout) @ posref.apply_rope(k, cos, sin, layout=layout).T


def _alibi_bias_always_float32(slopes, q_positions, k_positions):
    return posref.alibi_bias(slopes.float(), q_positions, k_positions)


@pytest.mark.parametrize(
    ("check", "fn"),
    [
        (grading.check_equivariance_error, _equivariance_indexing_dim_0),
        (grading.check_rope_scores, _rope_scores_dot_t),
        (grading.check_alibi_bias, _alibi_bias_always_float32),
    ],
    ids=["equivariance_error", "rope_scores", "alibi_bias"],
)
@pytest.mark.filterwarnings("ignore:The use of `x.T`:UserWarning")  # the wrong answer's own .T on 3-D tensors
def test_visible_cases_cover_the_leading_dims_and_dtypes_the_exercise_promises(check, fn):
    # each of these used to pass every visible case and lose all its points to the hidden ones
    with pytest.raises(CheckFailed):
        check(fn)


@pytest.mark.slow
def test_speed_budget_passes_vectorised_and_fails_a_matrix_per_position():
    grading.check_apply_rope_speed(s.apply_rope_complex)
    with pytest.raises(CheckFailed, match="too slow"):
        grading.check_apply_rope_speed(s.apply_rope_matrix_per_position)


@pytest.mark.slow
def test_attention_speed_budget_passes_vectorised_and_fails_loops_over_queries():
    grading.check_scaled_dot_product_attention_speed(s.attention_einsum)
    for slow in (s.attention_loops, s.attention_head_query_loops):
        with pytest.raises(CheckFailed, match="attention is too slow"):
            grading.check_scaled_dot_product_attention_speed(slow)


def test_attention_speed_check_refuses_a_fast_wrong_answer_before_timing_it():
    with pytest.raises(CheckFailed, match="attention"):
        grading.check_scaled_dot_product_attention_speed(s.attention_no_scale)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_checkers_run_on_cuda():
    grading.check_apply_rope(posref.apply_rope, hidden=True, device="cuda")
    grading.check_rope_cos_sin(s.rope_cos_sin_float64, hidden=True, device="cuda")
    grading.check_apply_rope_speed(posref.apply_rope, device="cuda")
    grading.check_scaled_dot_product_attention_speed(posref.scaled_dot_product_attention, device="cuda")


def _linear_closed_form(head_dim, base, params, seq_len=None):
    """Position Interpolation written out: base**(-2i/d) / factor, in float64."""
    return base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim) / params["factor"], 1.0


def _ntk_closed_form(head_dim, base, params, seq_len=None):
    """NTK-aware: the same formula with base * factor**(d/(d-2)), in float64."""
    new_base = base * params["factor"] ** (head_dim / (head_dim - 2))
    return new_base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim), 1.0


def _dynamic_closed_form(head_dim, base, params, seq_len=None):
    """Dynamic NTK written out: the length n = max(seq_len, L) sets alpha, then the NTK-aware base."""
    s, original = params["factor"], params["original_max_position_embeddings"]
    n = original if seq_len is None else max(seq_len, original)
    return _ntk_closed_form(head_dim, base, {"factor": s * n / original - (s - 1)})


def _by_parts_closed_form(head_dim, base, params, seq_len=None):
    """NTK-by-parts from the turns each pair makes within L, in float64."""
    inv_freq = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    turns = params["original_max_position_embeddings"] * inv_freq / (2 * math.pi)
    fast, slow = params.get("beta_fast", 32.0), params.get("beta_slow", 1.0)
    kept = ((turns - slow) / (fast - slow)).clamp(0, 1)
    return kept * inv_freq + (1 - kept) * inv_freq / params["factor"], 1.0


def _transformers_frequencies(rope_type):
    """The transformers library's own init function for that type (yarn, llama3): an independent oracle, imported
    when the test calls it (seconds of CPU: not in every worker's collection)."""

    def fn(head_dim, base, params, seq_len=None):
        hf_reference = pytest.importorskip("hf_reference")
        inv_freq, factor = hf_reference.hf_init(
            hf_reference.hf_config(head_dim, base=base, scaling={"rope_type": rope_type, **params}),
            seq_len=seq_len,
        )
        return inv_freq, float(factor)

    return fn


@pytest.mark.parametrize(
    ("rope_type", "fn"),
    [
        ("linear", _linear_closed_form),
        ("ntk", _ntk_closed_form),
        ("ntk_by_parts", _by_parts_closed_form),
        ("yarn", _transformers_frequencies("yarn")),
    ],
)
def test_frequency_checkers_pass_independent_implementations(rope_type, fn):
    getattr(grading, f"check_rope_frequencies_{rope_type}")(fn)
    grading.check_frequencies(fn, rope_type, hidden=True)


def _given_in_07() -> dict:
    """Notebook 07's given code (NTK-aware's per-pair form, Llama 3, Dynamic NTK: code the student reads and runs,
    not graded), defined as the solution runs it, over the model answers of Exercises 1 and 2 it builds on."""
    import nbformat

    from autograder.course import REPO

    cells = {
        c.get("id"): c.source for c in nbformat.read(REPO / "solutions/07_scaling/07_scaling.ipynb", 4).cells
    }
    namespace = {"math": math, "torch": torch}
    for cell in ("cell-03", "cell-06", "ntk-pair-factor-given", "cell-12", "dynamic-ntk-given"):
        exec(cells[cell], namespace)
    return namespace


def test_07s_given_ntk_pair_factor_is_ntk_aware_through_the_base():
    """Slides 50-51's per-pair multipliers s**(-2i/(D-2)) against the ratio of two frequency tables written from the
    base (bloc97's b' = b s**(D/(D-2)), posref.scaling.ntk_base): the endpoints the notebook prints, pair 0 kept and
    the slowest pair divided by exactly s, checked on their own. Against transformers too, where it is installed: its
    Dynamic NTK at seq_len = s L with factor 1 is static NTK-aware with factor s."""
    given = _given_in_07()["ntk_pair_factor"]
    for head_dim, factor in ((16, 4.0), (128, 8.0), (4, 3.0), (64, 2.5)):
        ours = given(head_dim, factor)
        assert ours.shape == (head_dim // 2,) and ours.dtype == torch.float64
        for base in (50.0, 500000.0):
            i = torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim
            via_base = posref.scaling.ntk_base(base, factor, head_dim) ** -i / base**-i
            torch.testing.assert_close(ours, via_base, rtol=1e-12, atol=0)
        assert ours[0] == 1.0 and math.isclose(ours[-1].item(), 1 / factor, rel_tol=1e-12)
    hf_reference = pytest.importorskip("hf_reference")
    for head_dim, base, factor, original in ((16, 50.0, 4.0, 64), (128, 1e4, 8.0, 4096)):
        config = hf_reference.hf_config(
            head_dim,
            base=base,
            scaling={"rope_type": "dynamic", "factor": 1.0},
            max_position_embeddings=original,
        )
        theirs = hf_reference.hf_init(config, seq_len=int(factor * original))[0].double()
        plain = base ** -(torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
        torch.testing.assert_close(given(head_dim, factor), theirs / plain, rtol=1e-6, atol=0)


@pytest.mark.parametrize("bands", [(1.0, 4.0), (1.0, 2.0), (2.0, 8.0)])
def test_07s_given_llama3_is_the_librarys_rule(bands):
    given, library = _given_in_07()["llama3_frequencies"], _transformers_frequencies("llama3")
    for head_dim, base, factor, original in (
        (16, 50.0, 4.0, 64),
        (128, 500000.0, 8.0, 8192),
        (64, 1e4, 2.5, 2048),
    ):
        params = {"factor": factor, "original_max_position_embeddings": original}
        params["low_freq_factor"], params["high_freq_factor"] = bands
        ours, theirs = given(head_dim, base, params), library(head_dim, base, params)
        torch.testing.assert_close(ours[0].double(), theirs[0].double(), rtol=1e-6, atol=0)
        assert ours[1] == theirs[1] == 1.0


def test_07s_given_dynamic_ntk_is_the_librarys_rule_at_every_length():
    hf_reference = pytest.importorskip("hf_reference")
    given = _given_in_07()["dynamic_ntk_frequencies"]
    for head_dim, base, factor, original in ((16, 50.0, 4.0, 64), (128, 1e4, 2.0, 4096)):
        params = {"factor": factor, "original_max_position_embeddings": original}
        # the library reads L from the model's max_position_embeddings, not from the scaling dict
        config = hf_reference.hf_config(
            head_dim,
            base=base,
            scaling={"rope_type": "dynamic", "factor": factor},
            max_position_embeddings=original,
        )
        for seq_len in (None, original // 2, original, 3 * original):
            ours = given(head_dim, base, params, seq_len=seq_len)
            torch.testing.assert_close(
                ours[0].double(), _dynamic_closed_form(head_dim, base, params, seq_len)[0]
            )
            theirs = hf_reference.hf_init(config, seq_len=seq_len)[0].double()
            torch.testing.assert_close(ours[0].double(), theirs, rtol=1e-6, atol=0)
            assert ours[1] == 1.0


def test_frequency_checkers_are_the_registered_methods_with_an_exercise():
    assert list(FREQUENCY_MISTAKES) == ["linear", "ntk", "yarn", "ntk_by_parts"]
    for rope_type in FREQUENCY_MISTAKES:
        assert rope_type in posref.SCALING_METHODS
        assert callable(getattr(grading, f"check_rope_frequencies_{rope_type}"))
    with pytest.raises(
        ValueError, match="no frequency checker for rope_type 'longrope'; expected one of linear"
    ):
        grading.check_frequencies(_linear_closed_form, "longrope")


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
            "ntk_by_parts",
            lambda d, b, p, seq_len=None: (
                _by_parts_closed_form(d, b, p)[0],
                0.1 * math.log(p["factor"]) + 1,
            ),
            "no temperature",
        ),
        (
            "yarn",
            lambda d, b, p, seq_len=None: (
                posref.rope_frequencies(d, base=b, scaling={"rope_type": "yarn", **p})[0],
                1.0,
            ),
            "attention factor",
        ),
    ],
)
def test_frequency_checkers_name_the_classic_mistakes(rope_type, wrong, hint):
    with pytest.raises(CheckFailed) as failure:
        grading.check_frequencies(wrong, rope_type)
    assert hint in str(failure.value).split("hint: ")[-1]


def test_a_drawn_permutation_is_never_the_identity():
    # an identity permutation would let a function that ignores perm (or never permutes) pass that case
    for seed in range(40):
        assert Draw(hidden=True, seed=seed).permutation(2).tolist() == [1, 0]


def test_positions_that_are_ignored_fail_the_visible_cos_sin_check():
    # the visible cases start positions past 0 (a KV-cache offset), so arange(T) in place of positions fails
    def from_zero(positions, inv_freq):
        return posref.rope_cos_sin(torch.arange(positions.shape[-1]).expand(positions.shape), inv_freq)

    with pytest.raises(CheckFailed):
        grading.check_rope_cos_sin(from_zero)


def test_a_mistake_only_in_the_half_precision_path_fails_the_visible_check():
    # the tolerance of a bfloat16 case is a few units in its last place, not enough for a wrong angle
    def wrong_for_half(x, cos, sin, layout="half"):
        if x.dtype == torch.float32:
            return posref.apply_rope(x, cos, sin, layout=layout)
        return posref.apply_rope(x, cos.roll(1, -2), sin.roll(1, -2), layout=layout)

    with pytest.raises(CheckFailed, match="bfloat16"):
        grading.check_apply_rope(wrong_for_half)


def test_a_table_from_half_precision_frequencies_fails_the_visible_check():
    # frequencies rounded to float16 put the angles off by ~1e-3 at position 49: far above float32 rounding
    def half_frequencies(n, dim, base=10000.0):
        i = torch.arange(dim // 2, dtype=torch.float64)
        angles = torch.arange(n, dtype=torch.float64)[:, None] * (base ** (-2 * i / dim)).half().double()
        return torch.stack((angles.sin(), angles.cos()), -1).flatten(-2).float()

    with pytest.raises(CheckFailed, match="sinusoidal_pe differs"):
        grading.check_sinusoidal_pe(half_frequencies)


def test_a_shift_matrix_from_half_precision_frequencies_fails_the_visible_check():
    def shift_matrix(k, dim, base=10000.0, *, half=True):
        freq = base ** (-2 * torch.arange(dim // 2, dtype=torch.float64) / dim)
        angle = k * (freq.half().double() if half else freq)
        c, s = angle.cos(), angle.sin()
        return torch.block_diag(*torch.stack((torch.stack((c, s), -1), torch.stack((-s, c), -1)), -2)).float()

    grading.check_shift_matrix(lambda k, dim, base=10000.0: shift_matrix(k, dim, base, half=False))
    with pytest.raises(CheckFailed, match="shift_matrix differs"):
        grading.check_shift_matrix(shift_matrix)


@pytest.mark.parametrize("hidden", [False, True])
def test_a_lost_sign_of_k_is_not_called_a_sign_of_the_sine_entries(hidden):
    # M_{|k|} equals the transpose M_{-k} for k < 0: the sine-sign hint alone would be wrong for abs(k)
    with pytest.raises(CheckFailed) as failure:
        grading.check_shift_matrix(s.shift_matrix_abs_k, hidden=hidden)
    assert "the sign of k is lost (abs(k))" in str(failure.value)
    assert "check the sign of the sine entries" not in str(failure.value)


@pytest.mark.parametrize("hidden", [False, True])
def test_a_wrong_bucket_is_quoted_with_its_relative_position(hidden):
    # the index into a (10001,) tensor of distances does not say which distance failed: its value does
    with pytest.raises(CheckFailed) as failure:
        grading.check_t5_bucket(s.t5_bucket_unclipped, hidden=hidden)
    found = re.search(r"\(relative_position = (-?\d+)\): expected (\d+), got (\d+)", str(failure.value))
    assert found, str(failure.value)
    rel, expected, got = (torch.tensor([int(v)]) for v in found.groups())
    kwargs = {"bidirectional": "bidirectional=False" not in str(failure.value)}
    for name in ("num_buckets", "max_distance"):
        given = re.search(rf"{name}=(\d+)", str(failure.value))
        if given:
            kwargs[name] = int(given.group(1))
    assert torch.equal(posref.t5_relative_position_bucket(rel, **kwargs), expected)
    assert torch.equal(s.t5_bucket_unclipped(rel, **kwargs), got)
