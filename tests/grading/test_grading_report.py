"""The comparison under every checker (``posref.grading.report``), on cases chosen so that each of its rules is
what decides: a test here fails if that rule is dropped or loosened."""

from __future__ import annotations

import pytest
import torch

from posref.grading import CheckFailed
from posref.grading.difference import difference, same_values
from posref.grading.report import Case, first_difference


@pytest.mark.parametrize(
    ("dtype", "passes", "fails"),
    [
        (torch.float64, 1e-8, 1e-5),
        # float32: another order of operations passes; a float32 output computed in half precision does not
        (torch.float32, 2e-6, 5e-4),
        (torch.float16, 1e-3, 3e-2),
        (torch.bfloat16, 8e-3, 2e-1),
    ],
)
def test_default_tolerance_passes_rounding_and_fails_a_lower_precision(dtype, passes, fails):
    expected = torch.linspace(0.5, 1.0, 16, dtype=torch.float64).to(dtype)
    assert difference(expected, (expected.double() * (1 + passes)).to(dtype)) is None
    assert difference(expected, (expected.double() * (1 + fails)).to(dtype)) is not None


def test_a_nan_float_never_matches():
    assert "got nan" in difference(1.0, float("nan"))
    assert difference(0.0, float("nan")) is not None


def test_a_bool_is_not_a_float_even_when_it_equals_one():
    assert "expected a Python float, got bool" in difference(1.0, True)


def test_a_tensor_on_another_device_is_named_as_such():
    # on a machine without CUDA the meta device stands in for "not the inputs' device"
    problem = difference(torch.zeros(3), torch.zeros(3, device="meta"))
    assert problem is not None and "expected a tensor on cpu" in problem


def test_infinities_match_only_infinities_of_the_same_sign():
    expected = torch.tensor([float("-inf"), 1.0, float("inf")])
    assert difference(expected, expected.clone()) is None
    assert difference(expected, torch.tensor([float("inf"), 1.0, float("inf")])) is not None
    assert difference(expected, torch.tensor([-1e30, 1.0, float("inf")])) is not None


def test_a_hint_is_not_given_when_the_known_mistake_agrees_with_the_reference_on_that_case():
    # the output has the wrong dtype (the right values): a "mistake" that equals the reference on this case
    # explains the values too, but it is not what went wrong, so its hint would mislead
    def reference(x):
        return x * 2

    with pytest.raises(CheckFailed) as failure:
        first_difference(
            "double",
            lambda x: (x * 2).double(),
            reference,
            [Case((torch.ones(3),))],
            mistakes={"misleading hint": lambda x: x + x},
        )
    assert "expected dtype torch.float32" in str(failure.value)
    assert "misleading hint" not in str(failure.value)


def test_a_case_that_fits_several_mistakes_is_settled_by_the_later_cases():
    # on a zero vector "negated" and "doubled" both give what the student gave: the first listed would be named
    # although the function doubles; a later case, where they differ, settles it (p-RoPE's shuffled frequencies
    # made "kept the lowest" name a choice by index in 4 of 300 hidden checks)
    mistakes = {"negated": lambda x: -x, "doubled": lambda x: 2 * x}
    cases = [Case((torch.zeros(3),)), Case((torch.arange(3.0),))]
    with pytest.raises(CheckFailed, match="case 1 of 2") as failure:
        first_difference("plus_one", lambda x: 2 * x, lambda x: x + 1, cases, mistakes=mistakes)
    assert "hint: doubled" in str(failure.value) and "negated" not in str(failure.value)
    # no later case to settle it: the first hint that fits stays
    with pytest.raises(CheckFailed) as failure:
        first_difference("plus_one", lambda x: 2 * x, lambda x: x + 1, cases[:1], mistakes=mistakes)
    assert "hint: negated" in str(failure.value)


def test_a_case_right_but_for_its_dtype_is_reported_after_a_case_with_wrong_values():
    # squaring in float64: on the first case (0 and 2) only the dtype is wrong, on the second the values are, and
    # that is the mistake to tell first, with its hint (02's table read at arange(T) in the table's dtype lost its
    # hint to a dtype complaint whenever the draw put an x in half precision and positions from 0 first)
    cases = [Case((torch.tensor([0.0, 2.0]),)), Case((torch.arange(3.0),))]
    squared = {"squared": lambda x: x**2}
    with pytest.raises(CheckFailed, match="case 2 of 2") as failure:
        first_difference("double", lambda x: (x**2).double(), lambda x: 2 * x, cases, mistakes=squared)
    assert "hint: squared" in str(failure.value)
    # wrong in its dtype alone: told so on the first case
    with pytest.raises(CheckFailed, match="case 1 of 2") as failure:
        first_difference("double", lambda x: (2 * x).double(), lambda x: 2 * x, cases, mistakes=squared)
    assert "expected dtype torch.float32" in str(failure.value)


def test_a_table_read_from_0_in_the_tables_dtype_gets_its_hint_in_every_draw():
    # the class of 02's wrong answer in tests/notebooks/test_wrong_handlers.py, which failed by its draw (seed
    # 209190437471348: a float16 x with positions from 0 first, where arange(T) is right)
    from posref.grading import check_learned_positions
    from posref.grading.cases import hidden_seed

    def from_zero(weight, x, positions):
        return x + weight[: x.shape[1]]  # the table's dtype, rows 0..T-1 whatever the positions

    for seed in [209190437471348, *range(40)]:
        with hidden_seed(seed), pytest.raises(CheckFailed) as failure:
            check_learned_positions(from_zero, hidden=True, device="cpu")
        assert "hint: look the rows up at the positions you are given" in str(failure.value), (
            seed,
            failure.value,
        )


def test_integer_outputs_must_be_integers():
    expected = torch.tensor([0, 3, 7])
    assert "expected integer values" in difference(expected, expected.float())


def test_complex_outputs_are_refused_even_when_the_real_part_is_right():
    expected = torch.tensor([1.0, 2.0])
    assert "expected real values" in difference(expected, expected.to(torch.complex64), match_dtype=False)


def test_a_one_element_tensor_for_a_float_is_told_to_use_item():
    assert "tensor.item()" in difference(0.5, torch.tensor(0.5))


def test_default_float_tolerance_is_about_float32_rounding():
    assert difference(1.0, 1.0 + 1e-7) is None
    assert difference(1.0, 1.0 + 1e-4) is not None


def test_an_infinite_float_matches_only_itself():
    assert difference(float("inf"), float("inf")) is None
    assert difference(float("inf"), 1e300) is not None and difference(float("inf"), float("-inf")) is not None
    assert difference(float("-inf"), float("nan")) is not None


def test_a_tuple_of_the_wrong_length_fails_the_check_instead_of_breaking_the_grader():
    from posref import rope_cos_sin
    from posref.grading import check_rope_cos_sin

    with pytest.raises(CheckFailed, match="expected a tuple of 2 values"):
        check_rope_cos_sin(lambda p, f: (*rope_cos_sin(p, f), None))


def test_an_input_holding_nan_is_not_seen_as_changed_when_it_is_not():
    x = torch.tensor([1.0, float("nan")])
    assert same_values(x, x.clone())
    assert not same_values(x, torch.tensor([1.0, 0.0]))


# ---------------------------------------------------------------- messages that say what differs (issue 37.10)
# Each was vague before: numbers that read the same, lists that agree, a NaN or a precision left unnamed.
_FACTORS = torch.tensor([25.478213, 3.1415927, 1.0000001, 31.99999], dtype=torch.float64)


def test_values_right_to_the_returned_dtypes_precision_name_the_dtype_asked_for():
    # LongRoPE's factors are float64; float32 ones agree to float32's precision ("expected 25.4782, got 25.4782")
    problem = difference(_FACTORS, _FACTORS.float(), atol=1e-12, rtol=1e-9, match_dtype=False)
    assert problem.startswith("output: expected float64 values, got float32: they agree with the reference to "
                              "float32's precision"), problem  # fmt: skip
    assert "compute it in float64 and return float64" in problem


def test_numbers_quoted_as_different_never_read_the_same():
    problem = difference(_FACTORS, _FACTORS + torch.tensor([0.0, 0.0, 0.0, 1e-6]), atol=1e-9, rtol=0.0)
    there = problem.rsplit("expected ", 1)[1]
    assert there.split(", got ")[0] != there.split(", got ")[1], problem
    scalar = difference(0.12345671, 0.12345679, atol=1e-9, rtol=0.0)
    assert scalar.startswith("output: expected 0.1234567, got 0.1234568"), scalar


def test_the_values_shown_start_where_the_first_difference_is():
    expected = torch.arange(20.0)
    got = expected.clone()
    got[13] += 1.0
    problem = difference(expected, got)
    assert "expected [..., 13, 14, 15" in problem and "got      [..., 14, 14, 15" in problem, problem
    assert "(both lists from index (13,), the first value that differs)" in problem


def test_nan_or_infinity_where_the_reference_is_finite_is_named():
    problem = difference(torch.ones(4), torch.tensor([1.0, float("nan"), float("inf"), 1.0]))
    assert "2 of your values are NaN or infinite where the reference's are finite" in problem, problem


def test_the_right_values_in_the_wrong_shape_are_named_as_such():
    expected = torch.randn(4, 6)
    assert difference(expected, expected[None]).endswith(
        "got shape (1, 4, 6) (the right values in the wrong shape: return them as (4, 6))"
    )
    assert "right values" not in difference(expected, torch.randn(1, 4, 6))


def test_a_result_computed_in_half_precision_is_named_as_such():
    expected = torch.randn(64, dtype=torch.float64).float()
    problem = difference(expected, expected.half().float())
    assert "did a step of your computation run in float16? keep every step in float32" in problem, problem
    assert "did a step" not in difference(expected, expected + 1e-3 * torch.randn(64))
