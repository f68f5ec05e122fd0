"""The CPU budgets' calibration measures what the score of record measures: every timed round of an implementation
runs in a student's sandboxed child and every round of the reference in the reference child (``Child.run_chain``:
pinned to one CPU, charged CPU time), never in the calibrating process. No speed is asserted here."""

from __future__ import annotations

import importlib

import pytest

from autograder import calibrate
from autograder.grading.record import reference_path
from posref import bench_budgets, grading
from posref.grading.child.remote import Child
from posref.grading.speed import timing

pytestmark = pytest.mark.xdist_group("sandbox")  # children as Sandbox()'s default uid: see tests/conftest.py


def test_every_calibrated_function_has_its_checker_its_reference_child_and_both_kinds_of_implementation():
    assert set(bench_budgets.CALIBRATED) == set(bench_budgets.CHECKS)
    for name in bench_budgets.CALIBRATED:
        check, checker, _constant, _impls = calibrate.speed_check(name)
        assert getattr(grading, checker).__module__ == bench_budgets.CALIBRATED[name][0], (name, checker)
        assert check is getattr(
            importlib.import_module(bench_budgets.CALIBRATED[name][0]), bench_budgets.CALIBRATED[name][1]
        )
        module, function = reference_path(checker).split(":")
        assert callable(getattr(importlib.import_module(module), function)), (name, checker)
        assert {kind for kind, _fn in bench_budgets.calibration_impls(name).values()} == {"sane", "slow"}, (
            name
        )


@pytest.mark.slow
def test_the_calibration_of_record_times_each_implementation_in_a_child_against_the_reference_child(
    tmp_path, monkeypatch
):
    rounds: dict[int, int] = {}  # pid of the child -> timed rounds it ran
    in_child, timed = Child.run_chain, timing.run_chain

    def counted(self, *args, **kwargs):
        rounds[self.process.pid] = rounds.get(self.process.pid, 0) + 1
        return in_child(self, *args, **kwargs)

    def elsewhere_only(fn, *args, **kwargs):
        assert isinstance(fn, timing.TimedElsewhere), f"a timed round of {fn} ran in the calibrating process"
        return timed(fn, *args, **kwargs)

    monkeypatch.setattr(Child, "run_chain", counted)
    monkeypatch.setattr(timing, "run_chain", elsewhere_only)
    figures = calibrate.calibrate_of_record(
        "causal_mean", tmp_path, repeats=1, shape=(1, 1, 16, 4), ceiling=5.0
    )
    for label, (kind, _fn) in bench_budgets.calibration_impls("causal_mean").items():
        assert figures[f"{label} ({kind}) #1"] > 0, figures
    assert figures["reference us per call (default, as checked)"] > 0
    assert isinstance(figures["verdict"], str)
    # the student's child and the reference child, each at least 2 warm-up and 3 timed rounds per implementation
    assert len(rounds) == 2 and min(rounds.values()) >= 5 * (2 + 3), rounds
    if figures["budgets.py line"]:
        assert "the score of record's children" in figures["budgets.py line"]
