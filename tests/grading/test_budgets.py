"""The rule that turns measured ratios into a speed budget, the choice of budget by device, and the checker's use
of it (speeds themselves are measured by ``python -m posref.bench --suite budgets``, never asserted here)."""

from __future__ import annotations

import math

import pytest
import student_impls as s
import torch

from posref.grading import CheckFailed, budgets, check_apply_rope_speed
from posref.grading.budgets import Budget, apply_rope_budget, propose_budget


def test_rule_proposes_twice_the_worst_sane_median_rounded_up_when_the_slow_ones_are_far():
    proposal = propose_budget([1.3, 1.5, 3.2, 2.6], [160.0, 75.0, 329.0])
    assert proposal.max_ratio == 7.0  # ceil(2 * 3.2)
    assert (proposal.worst_sane, proposal.best_slow) == (3.2, 75.0)
    assert proposal.verdict.startswith("separable")


def test_rule_refuses_when_the_slow_ones_are_not_a_clear_margin_above():
    proposal = propose_budget([2.0, 3.0], [10.0, 400.0])  # the rule's 6x is not 3x below 10
    assert proposal.max_ratio is None and proposal.verdict.startswith("not separable")
    assert "10.00" in proposal.verdict


def test_rule_boundary_is_exactly_the_margin():
    assert propose_budget([2.5], [15.0]).max_ratio == 5.0  # 3 * 5 == 15: still separable
    assert propose_budget([2.5], [14.9]).max_ratio is None


def test_rule_rejects_missing_or_meaningless_ratios():
    with pytest.raises(ValueError, match="both kinds"):
        propose_budget([1.0], [])
    with pytest.raises(ValueError, match="finite and positive"):
        propose_budget([1.0, math.nan], [50.0])


def test_cpu_budget_agrees_with_the_rule_on_its_own_recorded_measurements():
    # the run quoted in APPLY_ROPE_CPU.measured (sane medians; slow medians)
    runs = [
        ([3.0, 2.6, 2.7, 3.5, 2.6, 3.0, 8.9, 8.9, 11.3, 7.3, 13.4, 8.8],
         [228.0, 175.0, 205.0, 132.0, 218.0, 136.0]),
    ]  # fmt: skip
    for sane, slow in runs:
        assert propose_budget(sane, slow).max_ratio is not None
        assert budgets.MARGIN * budgets.APPLY_ROPE_CPU.max_ratio <= min(slow)
    every_sane = [r for sane, _ in runs for r in sane]
    every_slow = [r for _, slow in runs for r in slow]
    assert propose_budget(every_sane, every_slow).max_ratio == budgets.APPLY_ROPE_CPU.max_ratio


def test_budget_is_chosen_by_device_type():
    cpu = apply_rope_budget(torch.device("cpu"))
    assert cpu is budgets.APPLY_ROPE_CPU and not cpu.provisional and cpu.shape == (1, 8, 256, 64)
    # no CUDA tensor is made: the choice depends on the device's type only
    assert apply_rope_budget(torch.device("cuda")) is budgets.APPLY_ROPE_CUDA
    assert apply_rope_budget("cuda:1") is budgets.APPLY_ROPE_CUDA
    if budgets.APPLY_ROPE_CUDA.provisional:
        assert "not measured" in budgets.APPLY_ROPE_CUDA.measured
    other = apply_rope_budget("meta")
    assert other.provisional and other.max_ratio == cpu.max_ratio and "meta" in other.measured


def test_speed_check_uses_the_budget_and_shape_of_its_device(monkeypatch):
    tiny = Budget(max_ratio=1e-3, shape=(1, 2, 8, 4), measured="a test's budget", provisional=True)
    monkeypatch.setattr(budgets, "APPLY_ROPE_CPU", tiny)
    with pytest.raises(CheckFailed) as failed:
        check_apply_rope_speed(s.apply_rope_rotate_half, device="cpu")
    message = str(failed.value)
    assert "budget 0.001x on cpu" in message and "(1, 2, 8, 4)" in message
    assert "provisional (a test's budget)" in message
    monkeypatch.setattr(
        budgets, "APPLY_ROPE_CPU", Budget(max_ratio=1e6, shape=(1, 2, 8, 4), measured="generous")
    )
    assert check_apply_rope_speed(s.apply_rope_rotate_half, device="cpu") > 0


def test_rule_rejects_a_ratio_of_zero_or_below():
    with pytest.raises(ValueError, match="finite and positive"):
        propose_budget([0.0], [50.0])
    with pytest.raises(ValueError, match="finite and positive"):
        propose_budget([1.0], [-3.0])


def test_attention_budget_agrees_with_the_rule_on_its_own_recorded_measurements():
    # the medians quoted in ATTENTION_CPU.measured at its shape (sane; slow)
    sane, slow = [0.79, 0.89, 0.94, 0.64, 2.08, 1.64], [37.0, 28.2, 50.9, 64.6]
    assert propose_budget(sane, slow).max_ratio == budgets.ATTENTION_CPU.max_ratio
    assert budgets.MARGIN * budgets.ATTENTION_CPU.max_ratio <= min(slow)
    assert propose_budget([2.24, 2.27], [10.2, 10.9]).max_ratio is None  # why not at (1, 8, 256, 64)


def test_attention_budget_is_chosen_by_device_type():
    assert budgets.attention_budget("cpu") is budgets.ATTENTION_CPU
    assert budgets.attention_budget("cuda:0") is budgets.ATTENTION_CUDA
    other = budgets.attention_budget("meta")
    assert other.provisional and other.max_ratio == budgets.ATTENTION_CPU.max_ratio
