"""``speed_ratio`` cuts a hopeless function short, and ``seconds_per_call`` reports what one call takes (lower
bounds from ``time.sleep``, which never returns early; no speed of real code is asserted)."""

from __future__ import annotations

import time

import torch

from posref.grading import timing
from posref.grading.timing import seconds_per_call, speed_ratio

CPU = torch.device("cpu")
POOL = [((), {})] * 3


def test_a_function_far_over_the_limit_is_cut_short_and_still_reported_over_it():
    def slow():
        time.sleep(0.001)

    start = time.perf_counter()
    ratio, ratios = speed_ratio(slow, lambda: None, POOL, device=CPU, give_up_above=10.0)
    elapsed = time.perf_counter() - start
    # uncut, each round would call ``slow`` as often as the reference needs for 4 ms (tens of thousands of times)
    assert elapsed < 10.0, f"took {elapsed:.1f} s"
    assert len(ratios) == 3 and min(ratios) > 10.0 and ratio > 10.0


def test_without_a_limit_every_round_is_whole():
    ratio, ratios = speed_ratio(
        lambda: time.sleep(0.0005), lambda: time.sleep(0.0001), POOL, device=CPU, rounds=3
    )
    assert len(ratios) == 3 and ratio > 1.0


def test_seconds_per_call_is_at_least_the_sleep():
    assert seconds_per_call(lambda: time.sleep(0.002), POOL, device=CPU, rounds=3) >= 0.002


def test_what_the_student_does_to_its_inputs_never_reaches_the_references_inputs():
    # a function that overwrote the shared inputs (with bigger numbers, denormals, NaN) could slow the reference
    pool = [((torch.ones(4),), {}) for _ in range(3)]
    seen = []

    def vandal(x):
        x.fill_(float("nan"))

    def reference(x):
        seen.append(bool(torch.equal(x, torch.ones(4))))

    speed_ratio(vandal, reference, pool, device=CPU, rounds=3, min_round_s=0.0)
    assert seen and all(seen)
    assert all(torch.equal(args[0], torch.ones(4)) for args, _ in pool)


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

    def reference():
        clock.now += 1.0

    def student():
        student_calls.append(None)
        clock.now += 1.0 if len(student_calls) <= 2 * len(POOL) + len(POOL) else 5.0

    ratio, ratios = speed_ratio(student, reference, POOL, device=CPU, give_up_above=3.0)
    assert len(ratios) == 11 and ratios[0] == 1.0 and ratio == 5.0
