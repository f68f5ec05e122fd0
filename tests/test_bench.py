"""The benchmark runs end to end on tiny inputs and reports a ratio for every contender (speeds are not asserted:
they are measured by ``python -m posref.bench``, never in tests)."""

import math

import torch

from posref.bench import bench_apply_rope, bench_biased_attention, interleaved_times, median_ratio


def test_median_ratio_is_the_median_of_per_round_ratios():
    times = {"a": [2.0, 9.0, 3.0], "base": [1.0, 9.0, 1.0]}  # per round 2, 1, 3; a ratio of medians would give 3
    assert median_ratio(times, "a", "base") == 2.0
    times = {"a": [2.0, 4.0, 30.0], "base": [1.0, 1.0, 1.0]}
    assert median_ratio(times, "a", "base") == 4.0


def test_interleaved_times_runs_each_contender_once_per_round_in_order():
    calls = []
    times = interleaved_times(
        {"x": lambda: calls.append("x"), "y": lambda: calls.append("y")},
        rounds=3,
        warmup=1,
        device=torch.device("cpu"),
    )
    assert calls == ["x", "y"] * 4 and [len(t) for t in times.values()] == [3, 3]


def test_rope_and_attention_benchmarks_report_every_contender():
    rope = bench_apply_rope(
        (1, 2, 16, 8), device=torch.device("cpu"), dtype=torch.float32, rounds=2, fused=False
    )
    expected = {"posref half eager / copy", "posref interleaved eager / copy", "transformers / copy"}
    assert expected <= set(rope)
    attention = bench_biased_attention(32, device=torch.device("cpu"), dtype=torch.float32, rounds=1, heads=2)
    assert set(attention) == {"sdpa causal ms", "flex alibi / sdpa", "flex t5 / sdpa"}
    for value in [*rope.values(), *attention.values()]:
        assert math.isfinite(value) and value > 0
