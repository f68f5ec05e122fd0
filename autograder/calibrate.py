"""The CPU speed budgets' calibration, measured as the score of record measures a speed cell:

    python -m autograder.calibrate                                  # every timed function
    python -m autograder.calibrate --checks apply_rope,causal_mean --repeats 3 --json figures.json

For each timed function (``posref.bench_budgets.CALIBRATED``), the student-style implementations of
``tests/grading/student_impls.py`` and ``student_impls_speed.py`` run as the answer cells of a student's child and
the reference runs in the reference child, both started as ``record.grade_notebook`` starts them (``record._Children``:
the sandbox and its limits, a fork of the worker's fork server, the reference child ``record.reference_path`` names).
Each implementation is then measured by its speed check's own measurement against the reference child's function,
as ``record._timed_against_reference`` runs the check (``SpeedCheck.measure(..., reference=)``): the same chained
rounds, each charged the CPU time of the child's process tree with every thread pinned to one CPU
(``posref.grading.speed.pinning``). ``calibrate_speed_check`` prints each median ratio, the load average and the
budget ``budgets.propose_budget`` makes of them, with the line to paste into ``budgets.py``.

``python -m posref.bench --suite budgets`` times the same implementations in its own process by wall clock, as a
student's notebook kernel does (and as a GPU's budgets are measured: the score of record runs on the CPU only).
"""

from __future__ import annotations

import argparse
import importlib
import json
import tempfile
from collections.abc import Iterable
from pathlib import Path

from autograder.grading.record import _Children, reference_path
from autograder.sandbox.sandbox import Sandbox
from posref import bench, bench_budgets
from posref.grading.child.remote import RemoteFunction
from posref.grading.speed.calibration import CEILING, calibrate_speed_check
from posref.grading.speed.check import SpeedCheck

CHECKERS = {"attention": "check_scaled_dot_product_attention_speed"}
"""The speed checker of a timed function whose checker is not ``check_<SpeedCheck.name>_speed``."""


def speed_check(name: str) -> tuple[SpeedCheck, str, str, str]:
    """The timed function ``name`` of ``posref.bench_budgets.CALIBRATED``: (its ``SpeedCheck``, its checker's name in
    ``posref.grading``, its budget's name in ``budgets.py``, the name of its implementations' dict)."""
    module, attribute, constant, impls = bench_budgets.CALIBRATED[name]
    check = getattr(importlib.import_module(module), attribute)
    return check, CHECKERS.get(name, f"check_{check.name}_speed"), constant, impls


def child_name(impls: str, i: int) -> str:
    """The name the ``i``-th implementation of the dict ``impls`` has in the child that ``program`` starts."""
    return f"{impls}_{i}"


def program(names: Iterable[str]) -> list[tuple[int, str]]:
    """A child's answer cells: the tests' two student-style files, then a cell that binds the implementations of each
    timed function of ``names`` to their ``child_name`` (a child's functions are called by name)."""
    binding = ""
    for name in names:
        impls = bench_budgets.CALIBRATED[name][3]
        for i in range(len(bench_budgets.calibration_impls(name))):
            binding += f"{child_name(impls, i)} = list({impls}.values())[{i}][1]\n"
    return [
        (0, bench_budgets.STUDENT_IMPLS.read_text()),
        (1, bench_budgets.STUDENT_IMPLS_SPEED.read_text()),
        (2, binding),
    ]


def calibrate_of_record(
    name: str,
    scratch_base: Path,
    *,
    repeats: int = 3,
    shape: tuple[int, ...] | None = None,
    ceiling: float = CEILING,
) -> dict[str, float | str]:
    """``calibrate_speed_check``'s figures for the timed function ``name`` at ``shape`` (by default its CPU budget's),
    each implementation in a student's child against the reference child, as the score of record times them. A
    student's child of its own per function (its CPU limit is per process)."""
    check, checker, constant, impls_name = speed_check(name)
    local = bench_budgets.calibration_impls(name)
    if local is None:
        raise FileNotFoundError(
            f"{bench_budgets.STUDENT_IMPLS.parent}: the tests' student-style files are not there"
        )
    sandbox = Sandbox()
    children = _Children(
        program([name]), sandbox, sandbox.scratch(scratch_base), [], timeout=120, budget=24 * 3600
    )
    try:
        child = children.get()
        remote = {label: (kind, RemoteFunction(child, child_name(impls_name, i)))
                  for i, (label, (kind, _fn)) in enumerate(local.items())}  # fmt: skip
        return calibrate_speed_check(check, constant, remote, shape, device="cpu", repeats=repeats, ceiling=ceiling,
                                     reference=children.reference_fn(reference_path(checker)),
                                     where=f"the score of record's children, {sandbox.mode}")  # fmt: skip
    finally:
        children.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--checks", help=f"comma-separated, of {', '.join(bench_budgets.CHECKS)} (default: all)"
    )
    parser.add_argument("--repeats", type=int, default=3, help="medians per implementation (11 rounds each)")
    parser.add_argument(
        "--json", help="also write every figure to this JSON file (rewritten after each check)"
    )
    args = parser.parse_args(argv)
    names = (
        bench_budgets.CHECKS
        if args.checks is None
        else [n.strip() for n in args.checks.split(",") if n.strip()]
    )
    unknown = [n for n in names if n not in bench_budgets.CALIBRATED]
    if unknown:
        parser.error(f"unknown checks {unknown}: choose from {', '.join(bench_budgets.CHECKS)}")
    figures: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="posref-calibrate-") as scratch:
        for name in names:
            figures_of = calibrate_of_record(name, Path(scratch), repeats=args.repeats)
            part = {f"{name} budget calibration of record": figures_of}
            figures.update(part)
            bench.print_table(part)
            if args.json:
                Path(args.json).write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
