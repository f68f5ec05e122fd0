"""``speed_ratio`` times rounds of chained calls that last a fixed time, on fresh inputs, keeps each function's inputs
its own, and hands every call's checksum over for verification; ``verify_timed_outputs`` finds a wrong call wherever
it is in a round; ``seconds_per_call`` reports what one call takes (lower bounds from ``time.sleep``, which never
returns early; no speed of real code is asserted)."""

from __future__ import annotations

import itertools
import time
from dataclasses import replace

import pytest
import torch

from posref.grading.report import CheckFailed, StudentError
from posref.grading.speed import timing
from posref.grading.speed.links import weights_at
from posref.grading.speed.timing import (
    Chain,
    Timing,
    run_chain,
    seal,
    seconds_per_call,
    speed_ratio,
    verify_timed_outputs,
)

CPU = torch.device("cpu")


def counting_draw():
    """Chains whose start is 0, 1, 2, ... (one per draw): which round a function saw is in its input."""
    counter = itertools.count()
    return lambda: Chain(torch.full((2,), float(next(counter))))


def plus_one(y):
    return y + 1


def test_a_round_is_a_chain_each_call_on_the_previous_output_with_one_checksum_per_call():
    chain = seal(Chain(torch.zeros(3), (torch.ones(3),), ({"scale": 2.0}, {"scale": 3.0})))
    r = run_chain(lambda y, step, scale: y * scale + step, chain, CPU, 0.0, max_calls=3)
    assert r.calls == 1, "a round of 0 seconds makes one call"
    r = run_chain(lambda y, step, scale: y * scale + step, chain, CPU, 60.0, max_calls=3)
    # ((0 * 2 + 1) * 3 + 1) * 2 + 1 = 9: the kwargs alternate, every call gets the previous output
    assert r.calls == 3 and torch.equal(r.output, torch.full((3,), 9.0)) and r.seconds > 0
    outputs = [torch.full((3,), v) for v in (1.0, 4.0, 9.0)]
    weights = [weights_at(chain.weights, chain.offsets, i, 3) for i in range(3)]
    assert all(len({w.data_ptr() for w in weights[i : i + 2]}) == 2 for i in range(2)), (
        "new weights every call"
    )
    expected = torch.stack([(y * w).sum().double() for y, w in zip(outputs, weights, strict=True)])
    assert torch.allclose(r.sums, expected)


def test_a_round_lasts_its_time_whatever_the_function_and_is_never_told_how_many_calls():
    def sleepy(y):
        time.sleep(0.002)
        return y + 1

    r = run_chain(sleepy, seal(Chain(torch.zeros(2))), CPU, 0.03)
    # at least the round's time (a sleep never returns early), in as many calls as fit: no count was given
    assert (
        r.seconds >= 0.03
        and 1 <= r.calls < timing.MAX_CALLS
        and torch.equal(r.output, torch.full((2,), float(r.calls)))
    )


def test_an_output_that_cannot_be_the_next_input_is_the_students_error():
    with pytest.raises(StudentError, match="returned a float"):
        run_chain(lambda y: 1.0, seal(Chain(torch.zeros(2))), CPU, 1.0)
    with pytest.raises(StudentError, match=r"must return one torch.float32 \(2,\) on cpu"):
        run_chain(lambda y: y.double(), seal(Chain(torch.zeros(2))), CPU, 1.0)


def test_a_function_far_over_the_limit_is_given_up_after_three_rounds_and_reported_over_it():
    def slow(y):
        time.sleep(0.02)
        return y + 1

    # the reference makes thousands of calls in a round, the slow one one or two: hundreds of times over 10
    result = speed_ratio(slow, plus_one, counting_draw(), device=CPU, give_up_above=10.0, round_s=0.01)
    assert len(result.ratios) == 3 and min(result.ratios) > 10.0 and result.ratio > 10.0


def test_a_function_far_under_the_limit_is_timed_for_sure_rounds_only_and_each_of_them_is_verified():
    # the same function on both sides: a ratio near 1, so far under pass_below that no stall of a loaded machine
    # can decide the outcome (a round would have to take a million times the other's)
    fast = speed_ratio(plus_one, plus_one, counting_draw(), device=CPU, round_s=0.002, pass_below=1e6)
    assert len(fast.ratios) == timing.SURE_ROUNDS and max(fast.ratios) < 1e6
    assert timing.rounds_to_verify(fast) == set(range(1, timing.SURE_ROUNDS + 1))  # all of them

    def slower(y):
        time.sleep(0.0005)
        return y + 1

    # over pass_below in every round (a sleep of 0.5 ms against an addition): all 11, as without it
    slow = speed_ratio(slower, plus_one, counting_draw(), device=CPU, round_s=0.002, pass_below=1.0)
    assert len(slow.ratios) == 11


def test_sure_rounds_are_all_verified():
    assert timing.SURE_ROUNDS <= timing.VERIFIED_ROUNDS


def test_seconds_per_call_is_at_least_the_sleep():
    def sleepy(y):
        time.sleep(0.002)
        return y

    assert seconds_per_call(sleepy, counting_draw(), device=CPU, rounds=3, round_s=0.01) >= 0.002


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

    result = speed_ratio(vandal, reference, counting_draw(), device=CPU, rounds=3, round_s=0.0)
    timed = [float(r.chain.start[0]) for r in result.student_rounds]
    assert len(set(timed)) == 3, "each timed round draws its own inputs"
    assert not any(s != s for s in reference_starts), "the reference never sees the student's NaN"
    assert all(s in reference_starts for s in timed), "both functions are timed on the same round's inputs"


def _timing_of(fn, chain: Chain, calls: int) -> Timing:
    """One round of ``fn``, ``calls`` calls along ``chain`` (sealed), as ``speed_ratio`` would record it."""
    sealed = seal(chain)
    round_ = run_chain(fn, sealed.private(), CPU, 60.0, max_calls=calls)
    return Timing(1.0, [1.0], calls, [replace(round_, chain=sealed)])


@pytest.mark.parametrize("wrong_call", [0, 1, 17, 38, 39])
def test_a_call_answered_wrongly_is_caught_wherever_it_is_in_the_round_and_named(wrong_call):
    # a contracting chain (each call halves the previous output): a wrong call early in a round used to fade
    # before the last output, the only one verified
    calls = []

    def wrong_once(y):
        calls.append(None)
        return y / 2 + (1.0 if len(calls) - 1 == wrong_call else 0.0)

    timed = _timing_of(wrong_once, Chain(torch.randn(64)), 40)
    with pytest.raises(
        CheckFailed, match=rf"call {wrong_call + 1} of 40 gave a result that is not the reference's"
    ):
        verify_timed_outputs("halve", timed, lambda y: y / 2, lambda r: 1e-6, chained="halved")


def test_a_correct_round_passes_and_its_inputs_as_drawn_are_what_is_replayed():
    def zero_then_halve(y):
        out = y / 2
        y.zero_()  # changes its input in place: that must not become the expectation
        return out

    timed = _timing_of(zero_then_halve, Chain(torch.randn(64)), 40)
    verify_timed_outputs("halve", timed, lambda y: y / 2, lambda r: 1e-6, chained="halved")


def test_a_nan_checksum_fails():
    timed = _timing_of(lambda y: y / 2, Chain(torch.randn(64)), 5)
    timed.student_rounds[0].sums[2] = float("nan")
    with pytest.raises(CheckFailed, match="call 3 of 5"):
        verify_timed_outputs("halve", timed, lambda y: y / 2, lambda r: 1e-6, chained="halved")


class _FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_ratio_is_the_median_round_and_one_fast_round_neither_decides_nor_stops_early(monkeypatch):
    # a clock that only the two functions move: the reference takes 1 s a call; the student 1 s a call in the
    # first timed round (a lucky round) and 5 s in every other one; a round lasts 0.5 s (one call each)
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

    result = speed_ratio(student, reference, counting_draw(), device=CPU, give_up_above=3.0, round_s=0.5)
    assert len(result.ratios) == 11 and result.ratios[0] == 1.0 and result.ratio == 5.0


def _verdict(medians: list[float]) -> tuple[float | None, str, int]:
    """``within_budget`` (budget 12x) on a measure whose successive calls return ``medians``: (the ratio it returns, or
    None when it raised; its message; how many times it measured)."""
    from posref.grading.speed.budgets import Budget

    calls = iter(medians)
    measured = []

    def measure(**_kw):
        ratio = next(calls)
        measured.append(ratio)
        return Timing(ratio, [ratio] * 11), CPU

    budget = Budget(max_ratio=12.0, measured="a test", shape=(1, 8, 256, 64))
    try:
        ratio = timing.within_budget("f", measure, budget, CPU, inputs="x", advice="", reference=None)
        return ratio, "", len(measured)
    except CheckFailed as failure:
        return None, str(failure), len(measured)


def test_a_ratio_over_the_budget_is_measured_again_and_the_lower_median_stands():
    """No clock: the measurements are given. Within the budget: measured once. Over it, then within: passes with the
    second. Over it twice: fails with the lower median of the two, whichever came first."""
    assert _verdict([6.0]) == (6.0, "", 1)
    assert _verdict([12.0]) == (12.0, "", 1)  # at the budget is within it
    assert _verdict([15.4, 6.2]) == (6.2, "", 2)
    for medians in ([40.0, 41.0], [41.0, 40.0]):
        ratio, message, measured = _verdict(medians)
        assert ratio is None and measured == 2, (medians, ratio, measured)
        assert message.startswith("f is too slow: 40.0x the reference's time (budget 12x on cpu"), message
