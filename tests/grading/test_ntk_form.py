"""``check_ntk_pair_factor`` (notebook 07): NTK-aware's multipliers in the slide's form, s**(-2i/(d-2))."""

from __future__ import annotations

import math

import pytest
import torch

from posref.grading import CheckFailed, check_ntk_pair_factor


def slide_form(head_dim, factor):
    # the lecture's form, written from slides 50-51 in plain Python: one pair at a time
    return torch.tensor(
        [factor ** (-2 * i / (head_dim - 2)) for i in range(head_dim // 2)], dtype=torch.float64
    )


def from_base_change(head_dim, factor):
    # another correct answer: the ratio of NTK-aware's frequencies to plain RoPE's, in float32
    base = 500000.0
    i = torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim
    return (base * factor ** (head_dim / (head_dim - 2))) ** -i / base**-i


@pytest.mark.parametrize("hidden", [False, True])
@pytest.mark.parametrize("fn", [slide_form, from_base_change])
def test_correct_answers_pass(fn, hidden):
    check_ntk_pair_factor(fn, hidden=hidden)


def test_the_endpoints_are_one_and_one_over_the_factor():
    # what the notebook has the student see: pair 0 kept, the last pair divided by exactly s
    for head_dim, factor in ((16, 4.0), (128, 8.0), (4, 3.0)):
        ratios = slide_form(head_dim, factor)
        assert ratios[0] == 1.0 and math.isclose(ratios[-1].item(), 1 / factor, rel_tol=1e-12)


WRONG = {
    "-2i/d": (lambda d, s: slide_form(d + 2, s)[: d // 2], "the exponent is -2i/(d-2), not -2i/d"),
    "positive power": (lambda d, s: 1 / slide_form(d, s), "a multiplier of at most 1"),
    "counts from 1": (
        lambda d, s: torch.tensor(
            [s ** (-2 * (i + 1) / (d - 2)) for i in range(d // 2)], dtype=torch.float64
        ),
        "pair 0 keeps its frequency",
    ),
}


@pytest.mark.parametrize("hidden", [False, True])
@pytest.mark.parametrize("wrong", WRONG, ids=str)
def test_the_usual_mistakes_fail_with_their_hint(wrong, hidden):
    fn, hint = WRONG[wrong]
    with pytest.raises(CheckFailed, match=hint.replace("(", r"\(").replace(")", r"\)")):
        check_ntk_pair_factor(fn, hidden=hidden)


def test_half_precision_and_a_wrong_length_fail():
    with pytest.raises(CheckFailed):
        check_ntk_pair_factor(lambda d, s: slide_form(d, s).to(torch.bfloat16))
    with pytest.raises(CheckFailed):
        check_ntk_pair_factor(lambda d, s: slide_form(d, s)[:-1])
