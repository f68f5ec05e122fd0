"""Notebook 04's derivation checker: the family R_p = step^p. Its reference agrees with repeated matrix products (an
independent computation) and has the relative property the derivation starts from; the checker accepts correct
answers written either way and names each classic mistake, on every hidden draw."""

from __future__ import annotations

import math
import re

import pytest
import torch

from posref.grading import CheckFailed, check_rotations_from_step
from posref.grading.cases import Draw
from posref.grading.checks.derivation import _hidden_cases, _mistakes, rotation, rotations_from_step
from posref.grading.report import difference


def by_matrix_products(step, positions):
    """R_p as p products of step (of step^T for p < 0), one position at a time: no angle anywhere."""
    out = []
    for p in positions.tolist():
        r = torch.eye(2, dtype=step.dtype, device=step.device)
        for _ in range(abs(p)):
            r = r @ (step if p > 0 else step.T)
        out.append(r)
    return torch.stack(out)


def by_matrix_power(step, positions):
    return torch.stack([torch.linalg.matrix_power(step, p) for p in positions.tolist()])


@pytest.mark.parametrize("theta", [0.3, 2.5, -1.2, math.pi - 1e-4, 1e-4])
def test_the_reference_is_the_power_of_the_step(theta):
    step = rotation(torch.tensor([theta], dtype=torch.float64))[0]
    positions = torch.tensor([0, 1, 2, -1, -3, 7, 40, -25])
    torch.testing.assert_close(rotations_from_step(step, positions), by_matrix_products(step, positions))


def test_the_family_has_the_relative_property():
    """R_m^T R_n = R_{n-m}: the score <R_m q, R_n k> = q^T R_m^T R_n k depends on n - m only."""
    step = rotation(torch.tensor([0.7], dtype=torch.float64))[0]
    m, n = torch.arange(-6, 7).repeat_interleave(13), torch.arange(-6, 7).repeat(13)
    lhs = rotations_from_step(step, m).mT @ rotations_from_step(step, n)
    torch.testing.assert_close(lhs, rotations_from_step(step, n - m))


@pytest.mark.parametrize("answer", [rotations_from_step, by_matrix_power], ids=["angles", "matrix_power"])
def test_correct_answers_pass_visible_and_hidden(answer):
    check_rotations_from_step(answer)
    for _ in range(3):
        check_rotations_from_step(answer, hidden=True)


@pytest.mark.parametrize("hint", list(_mistakes()))
def test_each_mistake_is_named(hint):
    wrong = _mistakes()[hint]
    for hidden in (False, True):
        with pytest.raises(CheckFailed, match="hint: " + re.escape(hint[:30])):
            check_rotations_from_step(wrong, hidden=hidden)


@pytest.mark.parametrize("seed", range(40))
def test_every_hidden_draw_catches_every_mistake(seed):
    """No verdict depends on a draw: each draw holds negative positions, position 0, positions in the thousands and
    a slow and a near-half-turn step, so each mistake differs from the reference on some case of every draw."""
    cases = _hidden_cases(Draw(hidden=True, seed=seed))
    for hint, wrong in _mistakes().items():
        assert any(
            difference(rotations_from_step(*c.args), wrong(*c.args), atol=c.atol, rtol=c.rtol) is not None
            for c in cases
        ), (seed, hint)


def test_a_float32_answer_is_refused_by_dtype():
    def float32_family(step, positions):
        return rotations_from_step(step.float(), positions)

    with pytest.raises(CheckFailed, match="float64|dtype"):
        check_rotations_from_step(float32_family)
