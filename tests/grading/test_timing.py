"""``speed_ratio`` times chains of calls on fresh inputs, cuts a hopeless function short, keeps each function's
inputs its own, and hands the timed outputs over for verification; ``seconds_per_call`` reports what one call
takes (lower bounds from ``time.sleep``, which never returns early; no speed of real code is asserted)."""

from __future__ import annotations

import itertools
import time

import pytest
import torch

from posref.grading.report import StudentError
from posref.grading.speed import timing
from posref.grading.speed.timing import Chain, run_chain, seconds_per_call, speed_ratio, timed_outputs

CPU = torch.device("cpu")


def counting_draw():
    """Chains whose start is 0, 1, 2, ... (one per draw): which round a function saw is in its input."""
    counter = itertools.count()
    return lambda: Chain(torch.full((2,), float(next(counter))))


def plus_one(y):
    return y + 1


def test_a_round_is_a_chain_each_call_on_the_previous_output():
    chain = Chain(torch.zeros(3), (torch.ones(3),), ({"scale": 2.0}, {"scale": 3.0}))
    r = run_chain(lambda y, step, scale: y * scale + step, chain, 3, CPU)
    # ((0 * 2 + 1) * 3 + 1) * 2 + 1 = 9: the kwargs alternate, every call gets the previous output
    assert r.calls == 3 and torch.equal(r.output, torch.full((3,), 9.0)) and r.seconds > 0


def test_an_output_that_cannot_be_the_next_input_is_the_students_error():
    with pytest.raises(StudentError, match="returned a float"):
        run_chain(lambda y: 1.0, Chain(torch.zeros(2)), 2, CPU)
    with pytest.raises(StudentError, match=r"must return one torch.float32 \(2,\) on cpu"):
        run_chain(lambda y: y.double(), Chain(torch.zeros(2)), 2, CPU)


def test_a_function_far_over_the_limit_is_cut_short_and_still_reported_over_it():
    def slow(y):
        time.sleep(0.001)
        return y

    result = speed_ratio(slow, plus_one, counting_draw(), device=CPU, give_up_above=10.0)
    assert len(result.ratios) == 3 and min(result.ratios) > 10.0 and result.ratio > 10.0
    # uncut, each round would call ``slow`` as often as the reference needs for 50 ms (thousands of times)
    assert all(r.calls < result.calls for r in result.student_rounds)


def test_a_function_far_under_the_limit_is_timed_for_sure_rounds_only_and_each_of_them_is_verified():
    # the same function on both sides: a ratio near 1, so far under pass_below that no stall of a loaded machine
    # can decide the outcome (a round would have to take a million times the other's)
    fast = speed_ratio(plus_one, plus_one, counting_draw(), device=CPU, min_round_s=0.002, pass_below=1e6)
    assert len(fast.ratios) == timing.SURE_ROUNDS and max(fast.ratios) < 1e6
    assert timing.rounds_to_verify(fast) == set(range(1, timing.SURE_ROUNDS + 1))  # all of them

    def slower(y):
        time.sleep(0.0005)
        return y + 1

    # over pass_below in every round: all 11, as without it
    slow = speed_ratio(slower, plus_one, counting_draw(), device=CPU, min_round_s=0.002, pass_below=1.0)
    assert len(slow.ratios) == 11


def test_sure_rounds_are_all_verified():
    assert timing.SURE_ROUNDS <= timing.VERIFIED_ROUNDS


def test_without_a_limit_every_round_is_whole():
    def slower(y):
        time.sleep(0.0005)
        return y + 1

    result = speed_ratio(slower, plus_one, counting_draw(), device=CPU, rounds=3, min_round_s=0.002)
    assert len(result.ratios) == 3 and all(r.calls == result.calls for r in result.student_rounds)


def test_seconds_per_call_is_at_least_the_sleep():
    def sleepy(y):
        time.sleep(0.002)
        return y

    assert seconds_per_call(sleepy, counting_draw(), device=CPU, rounds=3) >= 0.002


def test_every_round_has_inputs_no_earlier_round_had_and_each_function_its_own_copy():
    # a function that overwrote its inputs (with bigger numbers, denormals, NaN) could slow the other one
    student_starts, reference_starts = [], []

    def vandal(y):
        student_starts.append(float(y[0]))
        y.fill_(float("nan"))
        return y

    def reference(y):
        reference_starts.append(float(y[0]))
        return y + 0.5

    result = speed_ratio(vandal, reference, counting_draw(), device=CPU, rounds=3, min_round_s=0.0)
    timed = [float(r.chain.start[0]) for r in result.student_rounds]
    assert len(set(timed)) == 3, "each timed round draws its own inputs"
    assert not any(s != s for s in reference_starts), "the reference never sees the student's NaN"
    assert all(s in reference_starts for s in timed), "both functions are timed on the same round's inputs"


def test_timed_outputs_are_verified_along_the_inputs_as_drawn_not_as_the_student_left_them():
    def zero_everything(y):
        # changes its input in place to what its output is: that must not become the expectation
        y.zero_()
        return y

    result = speed_ratio(zero_everything, plus_one, counting_draw(), device=CPU, rounds=3, min_round_s=0.0)
    starts = [float(r.chain.start[0]) for r in result.student_rounds]
    assert starts == sorted(starts) and starts[-1] > 0
    assert any(not torch.equal(r.output, e) for _, r, e in timed_outputs(result, plus_one))


def test_timed_outputs_are_recomputed_along_each_rounds_chain_after_the_run():
    def sometimes_wrong(y):
        return y + (1 if float(y[0]) < 100 else 2)

    result = speed_ratio(sometimes_wrong, plus_one, counting_draw(), device=CPU, rounds=3, min_round_s=0.0)
    for _, round_, expected in timed_outputs(result, plus_one):
        assert torch.equal(expected, round_.chain.start + round_.calls)
        assert torch.equal(round_.output, expected)  # this student is right while its values stay below 100


class _FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_ratio_is_the_median_round_and_one_fast_round_neither_decides_nor_stops_early(monkeypatch):
    # a clock that only the two functions move: the reference takes 1 s a call; the student 1 s a call in the
    # first timed round (a lucky round) and 5 s in every other one
    clock = _FakeClock()
    monkeypatch.setattr(timing, "_clock", clock)
    student_calls = []

    def reference(y):
        clock.now += 1.0
        return y

    def student(y):
        student_calls.append(None)
        clock.now += 1.0 if len(student_calls) <= 3 else 5.0  # 2 warm-up calls, then one round of one call
        return y

    result = speed_ratio(student, reference, counting_draw(), device=CPU, give_up_above=3.0, min_round_s=0.5)
    assert len(result.ratios) == 11 and result.ratios[0] == 1.0 and result.ratio == 5.0
