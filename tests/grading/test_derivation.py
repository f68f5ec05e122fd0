"""Notebook 04's derivation checkers. The family R_p = step^p: its reference agrees with repeated matrix products (an
independent computation) and has the relative property the derivation starts from. The step from two neighbouring
positions: its reference recovers the step each drawn family was built from, for rotations, reflections, RoPE heads
and orthogonal matrices of any size. Both checkers accept correct answers written in several ways and name each
classic mistake, on every hidden draw."""

from __future__ import annotations

import math
import re

import pytest
import torch

from posref.grading import CheckFailed, check_rotations_from_step, check_step_from_two
from posref.grading.cases import Draw, hidden_seed
from posref.grading.checks.derivation import (
    _Family,
    _hidden_cases,
    _hidden_two_cases,
    _mistakes,
    _two_mistakes,
    rotation,
    rotations_from_step,
    step_from_two,
)
from posref.grading.difference import difference


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


# ---------------------------------------------------------------- the step from two neighbouring positions

KINDS = ("rotation", "reflection", "head", "orthogonal")


def _family(kind: str, seed: int) -> _Family:
    return _Family(Draw(hidden=True, seed=seed), kind, theta=2.3 if kind == "rotation" else None)


@pytest.mark.parametrize("kind", KINDS)
def test_each_family_meets_the_requirement_and_is_the_powers_of_its_step(kind):
    """R_m^T R_n = R_{n-m} for m, n in -6..6 (the requirement), R_0 = I, and R_p = R_1^p by repeated products."""
    family = _family(kind, seed=3)
    at = {p: family.at(p) for p in range(-12, 13)}
    eye = torch.eye(at[0].shape[0], dtype=torch.float64)
    torch.testing.assert_close(at[0], eye)
    for m in range(-6, 7):
        for n in range(-6, 7):
            torch.testing.assert_close(at[m].mT @ at[n], at[n - m])
    power = eye
    for p in range(1, 7):
        power = power @ at[1]
        torch.testing.assert_close(at[p], power)


@pytest.mark.parametrize("kind", KINDS)
def test_the_reference_recovers_the_step_the_family_was_built_from(kind):
    for seed in range(5):
        family = _family(kind, seed)
        for m in (-3001, -2, 0, 1, 5, 4000):
            for n in (m + 1, m - 1):
                got = step_from_two(family.at(m), family.at(n), m, n)
                torch.testing.assert_close(got, family.at(1), atol=1e-9, rtol=0)


def _by_solving(r_m, r_n, m, n):
    earlier, later = (r_m, r_n) if n > m else (r_n, r_m)
    return torch.linalg.solve(earlier, later)  # R_earlier^-1 R_later, no transpose used


def _later_times_transposed(r_m, r_n, m, n):
    earlier, later = (r_m, r_n) if n > m else (r_n, r_m)
    return later @ earlier.mT  # powers of one matrix commute: R_{m+1} R_m^T = R_1 too


@pytest.mark.parametrize("answer", [step_from_two, _by_solving, _later_times_transposed])
def test_correct_steps_pass_visible_and_hidden(answer):
    check_step_from_two(answer)
    for _ in range(3):
        check_step_from_two(answer, hidden=True)


@pytest.mark.parametrize("hint", list(_two_mistakes()))
def test_each_mistake_of_the_step_is_named(hint):
    wrong = _two_mistakes()[hint]
    with pytest.raises(CheckFailed, match="hint: " + re.escape(hint[:30])):
        check_step_from_two(wrong)
    for seed in range(10):  # the hint on every hidden draw, not only on a lucky one
        with hidden_seed(seed), pytest.raises(CheckFailed, match="hint: " + re.escape(hint[:30])):
            check_step_from_two(wrong, hidden=True)


@pytest.mark.parametrize("seed", range(40))
def test_every_hidden_draw_holds_every_class_and_catches_every_mistake(seed):
    cases = _hidden_two_cases(Draw(hidden=True, seed=seed))
    classes = {(c.label.split(",")[0], c.args[3] - c.args[2]) for c in cases}
    for kind in ("a rotation's powers", "a reflection's powers", "a RoPE head's rotations",
                 "an orthogonal matrix's powers"):  # fmt: skip
        assert {(kind, 1), (kind, -1)} <= classes, (seed, kind)
    assert any(c.args[2] == 0 and c.args[3] == 1 for c in cases)
    assert any(abs(c.args[2]) >= 1000 and c.args[0].shape == (2, 2) for c in cases)
    for hint, wrong in _two_mistakes().items():
        assert any(
            difference(step_from_two(*c.args), wrong(*c.args), atol=c.atol, rtol=c.rtol) is not None
            for c in cases
            if c.args[0].shape == (2, 2) or "angle" not in wrong.__name__
        ), (seed, hint)


def test_a_float32_step_is_refused_by_dtype():
    def float32_step(r_m, r_n, m, n):
        return step_from_two(r_m, r_n, m, n).float()

    with pytest.raises(CheckFailed, match="float64|dtype"):
        check_step_from_two(float32_step)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_both_derivation_checkers_run_on_cuda():
    check_rotations_from_step(rotations_from_step, hidden=True, device="cuda")
    check_step_from_two(step_from_two, hidden=True, device="cuda")
    with pytest.raises(CheckFailed, match="hint: you returned R_"):
        check_step_from_two(
            lambda r_m, r_n, m, n: r_m @ r_n.mT if n == m + 1 else r_n @ r_m.mT, device="cuda"
        )
