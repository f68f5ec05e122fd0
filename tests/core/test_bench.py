"""The benchmark runs end to end on tiny inputs and reports a ratio for every contender (speeds are not asserted:
they are measured by ``python -m posref.bench``, never in tests)."""

import importlib.util
import json
import math
import time

import pytest
import torch
from conftest import fresh_rope_triton

from posref import apply_rope, bench, bench_budgets
from posref.bench import (
    bench_apply_rope,
    bench_biased_attention,
    bench_explorers,
    interleaved_times,
    main,
    median_ratio,
    rope_backends,
)
from posref.grading.speed.budgets import Budget
from posref.grading.speed.calibration import calibrate_apply_rope


def test_median_ratio_is_the_median_of_per_round_ratios():
    times = {
        "a": [2.0, 9.0, 3.0],
        "base": [1.0, 9.0, 1.0],
    }  # per round 2, 1, 3; a ratio of medians would give 3
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
    assert set(attention) == {
        "sdpa causal ms",
        "flex alibi / sdpa",
        "flex t5 / sdpa",
        "flex no bias / sdpa",
        "sdpa materialised alibi / sdpa",
    }
    for value in [*rope.values(), *attention.values()]:
        assert math.isfinite(value) and value > 0


def test_explorer_benchmark_reports_a_ratio_per_explorer_that_keeps_its_figure():
    (figures,) = bench_explorers(rounds=1).values()
    assert set(figures) == {"rope pair", "bias heatmap", "scaling"}
    for value in figures.values():
        assert math.isfinite(value) and value > 0


def test_backends_are_timed_separately_on_cuda_and_as_one_fused_path_elsewhere():
    assert rope_backends(torch.device("cpu")) == {"eager": False, "fused": "compile"}
    assert rope_backends(torch.device("cpu"), fused=False) == {"eager": False}
    cuda = rope_backends(torch.device("cuda"))  # only the device's type is looked at: nothing is allocated
    assert cuda["eager"] is False and cuda["compile"] == "compile"
    assert ("triton" in cuda) == (importlib.util.find_spec("triton") is not None)


def test_budget_calibration_runs_end_to_end_and_writes_its_figures(tmp_path, capsys):
    out = tmp_path / "figures.json"
    main(["--suite", "budgets", "--small", "--json", str(out)])
    saved = json.loads(out.read_text())
    assert saved["meta"]["suite"] == "budgets"
    parts = {k: v for k, v in saved["figures"].items() if k.startswith("apply_rope budget calibration (")}
    assert len(parts) == 2
    for figures in parts.values():
        for name, (kind, _fn) in bench_budgets.calibration_impls("apply_rope").items():
            assert figures[f"{name} ({kind}) #1"] > 0 and figures[f"{name} seconds"] > 0
        assert figures["reference us per call (default, as checked)"] > 0
        assert figures["worst sane median"] > 0 and figures["best slow median"] > 0
        assert isinstance(figures["verdict"], str) and "separable" in figures["verdict"]
        assert "proposed budget" in figures
        # timed in this process: no CPU budget to paste (those are the score of record's, autograder.calibrate)
        assert figures["budgets.py line"] in ("", bench_budgets.OF_RECORD_ONLY)
    assert "shape" in saved["figures"]["apply_rope budget recommendation cpu"]
    attention = saved["figures"]["attention budget calibration (1, 2, 16, 8) cpu"]
    for name, (kind, _fn) in bench_budgets.calibration_impls("attention").items():
        assert attention[f"{name} ({kind}) #1"] > 0, attention
    assert "separable" in attention["verdict"]
    table = capsys.readouterr().out
    assert "apply_rope_position_loop (slow) #1" in table and "verdict" in table


def test_calibration_proposes_a_pastable_budget_when_slow_is_far_and_skips_wrong_code():
    def sane(x, cos, sin, layout="half"):
        return apply_rope(x, cos, sin, layout=layout)

    def slow(x, cos, sin, layout="half"):
        # far over any ratio the rule could propose for ``sane`` (about 1), even against a reference call of a few
        # milliseconds (a round's link and checksum on a loaded machine)
        time.sleep(0.25)
        return apply_rope(x, cos, sin, layout=layout)

    def wrong(x, cos, sin, layout="half"):
        return x.clone()

    impls = {"same": ("sane", sane), "sleepy": ("slow", slow), "identity": ("slow", wrong)}
    figures = calibrate_apply_rope(impls, (1, 2, 8, 4), device="cpu", repeats=2, ceiling=20.0)
    assert figures["identity (slow)"].startswith("not timed: ")
    assert figures["sleepy (slow) #1"] > 20.0 and figures["best slow median"] > 20.0
    assert figures["proposed budget"] == math.ceil(2 * figures["worst sane median"])
    budget = eval(figures["budgets.py line"].split(" = ", 1)[1], {"Budget": Budget})
    assert budget.max_ratio == figures["proposed budget"] and budget.shape == (1, 2, 8, 4)
    assert "sleepy (slow)" in budget.measured and "same (sane)" in budget.measured


def test_calibration_without_the_student_file_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(bench_budgets, "STUDENT_IMPLS", tmp_path / "absent.py")
    figures = bench_budgets.bench_budgets(torch.device("cpu"), small=True)
    assert "not found" in figures["apply_rope budget calibration"]["skipped"]


def test_triton_tuning_times_every_config_in_both_layouts():
    """Run in Triton's interpreter (the module imported afresh with TRITON_INTERPRET=1) on a tiny shape."""
    pytest.importorskip("triton", reason="Triton is not installed")
    with fresh_rope_triton(interpret=True):
        figures = bench.bench_triton_tuning(
            (1, 4, 8, 8), device=torch.device("cpu"), dtype=torch.float32, rounds=1
        )
    configs = bench.triton_configs(4)
    assert "default" in configs and "4 heads, 16 positions" in configs and "default, 8 warps" in configs
    assert set(figures) == {
        f"{layout} {c} / copy bandwidth" for layout in ("half", "interleaved") for c in configs
    }
    assert all(math.isfinite(v) and v > 0 for v in figures.values())
    assert set(bench.triton_configs(6)) >= {
        "1 heads, 8 positions",
        "6 heads, 32 positions",
    }  # 4 does not divide 6
    assert "4 heads, 8 positions" not in bench.triton_configs(6)
