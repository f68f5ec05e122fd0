"""The speed budgets' calibration: ``python -m posref.bench --suite budgets [--checks NAME,...]``.

It times the student-style implementations of ``tests/grading/student_impls.py`` (apply_rope, attention) and
``tests/grading/student_impls_speed.py`` (the other checkers, ``SPEED_CHECKS``) with their checkers' own measurement
(``posref.grading.speed.calibration``), in this process by wall clock, as a student's notebook kernel times them,
and reports each median ratio, the reference's time per call, the machine's load average and the budget
``posref.grading.speed.budgets.propose_budget`` makes of them, with the line to paste into ``budgets.py``. That is
how a GPU's budgets are measured (the score of record grades on the CPU only); the CPU budgets are the score of
record's, measured through its sandboxed children, charged CPU time and pinned to one CPU, by
``python -m autograder.calibrate`` (which takes its implementations from ``CALIBRATED``). ``posref.bench`` times the
reference itself.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from pathlib import Path

import torch

CALIBRATION_SHAPE_GPU = (4, 16, 1024, 128)  # fp32: 34 MB per input; a matrix per position builds 4.3 GB
STUDENT_IMPLS = Path(__file__).resolve().parents[1] / "tests" / "grading" / "student_impls.py"
STUDENT_IMPLS_SPEED = STUDENT_IMPLS.with_name("student_impls_speed.py")
ROPE_AND_ATTENTION: dict[str, tuple[str, str, str, str]] = {
    # name: (module, its SpeedCheck, the budget's name in budgets.py, the implementations in STUDENT_IMPLS)
    "apply_rope": ("posref.grading.speed.rope", "APPLY_ROPE_SPEED", "APPLY_ROPE", "APPLY_ROPE_IMPLS"),
    "attention": ("posref.grading.speed.order", "ATTENTION_SPEED", "ATTENTION", "ATTENTION_IMPLS"),
}
SPEED_CHECKS: dict[str, tuple[str, str, str, str]] = {
    # as ROPE_AND_ATTENTION, the implementations in STUDENT_IMPLS_SPEED
    "per_position_loss": ("posref.grading.speed.lab", "PER_POSITION_LOSS", "PER_POSITION_LOSS", "PER_POSITION_LOSS_IMPLS"),
    "rope_handler": ("posref.grading.speed.lab", "ROPE_HANDLER", "HANDLER", "ROPE_HANDLER_IMPLS"),
    "alibi_handler": ("posref.grading.speed.lab", "ALIBI_HANDLER", "HANDLER", "ALIBI_HANDLER_IMPLS"),
    "causal_mean": ("posref.grading.speed.lab", "CAUSAL_MEAN", "CAUSAL_MEAN", "CAUSAL_MEAN_IMPLS"),
    "alibi_bias": ("posref.grading.speed.relative", "ALIBI_BIAS", "ALIBI_BIAS", "ALIBI_BIAS_IMPLS"),
    "sinusoidal_pe": ("posref.grading.speed.absolute", "SINUSOIDAL_PE", "SINUSOIDAL_PE", "SINUSOIDAL_PE_IMPLS"),
    "t5_bucket": ("posref.grading.speed.relative", "T5_BUCKET", "T5_BUCKET", "T5_BUCKET_IMPLS"),
    "t5_learned_bias": ("posref.grading.speed.relative", "T5_LEARNED_BIAS", "T5_LEARNED_BIAS", "T5_LEARNED_BIAS_IMPLS"),
}  # fmt: skip
CPU_ONLY_CHECKS = {"sinusoidal_pe"}  # the exercise builds its table on the CPU: timed there only
CHECKS = (*ROPE_AND_ATTENTION, *SPEED_CHECKS)
CALIBRATED = {**ROPE_AND_ATTENTION, **SPEED_CHECKS}
"""Every timed function's calibration by name: (module, its SpeedCheck, the budget's name in budgets.py, the
implementations' dict in STUDENT_IMPLS or STUDENT_IMPLS_SPEED)."""


def _module_from(path: Path, name: str):
    """The Python file at ``path`` imported as a module named ``name`` (not entered in ``sys.modules``)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_student_impls(path: Path, impls: str = "APPLY_ROPE_IMPLS") -> dict[str, tuple[str, Callable]] | None:
    """The calibration's implementations (name -> (kind, function)) of the dict ``impls`` of the tests'
    student-style file at ``path``; None if the file is absent (an installed posref without its source checkout)."""
    if not path.is_file():
        return None
    return dict(getattr(_module_from(path, path.stem), impls))


def calibration_impls(name: str) -> dict[str, tuple[str, Callable]] | None:
    """The implementations (name -> (kind, function)) calibrated for the timed function ``name`` of ``CALIBRATED``;
    None without the tests' files."""
    path = STUDENT_IMPLS if name in ROPE_AND_ATTENTION else STUDENT_IMPLS_SPEED
    return load_student_impls(path, CALIBRATED[name][3])


def bench_speed_checks(device: torch.device, names: list[str], *, repeats: int = 3) -> dict[str, dict]:
    """Calibration of the budgets of the ``SpeedCheck`` checkers ``names`` (keys of ``SPEED_CHECKS``) on
    ``device``, each at its budget's shape, on the implementations of ``STUDENT_IMPLS_SPEED``."""
    from posref.grading.speed.calibration import calibrate_speed_check

    if not STUDENT_IMPLS_SPEED.is_file():
        print(
            f"  budgets: {STUDENT_IMPLS_SPEED} not found (it comes with a source checkout): calibration skipped"
        )
        return {"speed check calibration": {"skipped": f"{STUDENT_IMPLS_SPEED} not found"}}
    impls = _module_from(STUDENT_IMPLS_SPEED, "student_impls_speed")
    figures: dict[str, dict] = {}
    for name in names:
        module, check_name, constant, impls_name = SPEED_CHECKS[name]
        if name in CPU_ONLY_CHECKS and device.type != "cpu":
            figures[f"{name} budget calibration {device.type}"] = {"skipped": "timed on the CPU only"}
            continue
        check = getattr(importlib.import_module(module), check_name)
        shape = tuple(check.budget(device).shape)
        figures[f"{name} budget calibration {shape} {device.type}"] = calibrate_speed_check(
            check, constant, getattr(impls, impls_name), shape, device=device, repeats=repeats
        )
    return figures


OF_RECORD_ONLY = "none on the CPU: a CPU budget is the score of record's (python -m autograder.calibrate)"

SMALL_CEILING = 8.0
"""``--small``'s ``ceiling`` for the calibration (``posref.grading.speed.calibration.CEILING`` otherwise)."""


def bench_budgets(
    device: torch.device, *, small: bool = False, repeats: int = 3, checks: list[str] | None = None
) -> dict[str, dict]:
    """Calibration of the speed budgets ``checks`` (names of ``CHECKS``; by default all of them, or only
    ``apply_rope`` and ``attention`` when ``small``) on ``device`` (``posref.grading.speed.calibration``).

    apply_rope's shapes: the checker's shape on this device and, on CUDA, the CPU's and ``CALIBRATION_SHAPE_GPU``
    too (the CPU shape is launch-bound on a GPU, where a matrix per position can look cheap); ``small``: two tiny
    shapes (and a tiny one for attention). The recommendation is the first of these shapes at which the rule
    proposes a budget. Every other check is calibrated at its budget's shape (``bench_speed_checks``). One run is
    one sample of a shared machine's noise: where several runs exist, apply ``propose_budget`` to all their
    medians.
    """
    checks = list(checks if checks is not None else (("apply_rope", "attention") if small else CHECKS))
    unknown = [name for name in checks if name not in CHECKS]
    if unknown:
        raise ValueError(f"unknown checks {unknown}: choose from {', '.join(CHECKS)}")
    figures: dict[str, dict] = {}
    if "apply_rope" in checks or "attention" in checks:
        figures.update(_bench_rope_and_attention(device, small=small, repeats=repeats, checks=checks))
    rest = [name for name in checks if name in SPEED_CHECKS]
    if rest:
        figures.update(bench_speed_checks(device, rest, repeats=repeats))
    if (
        device.type == "cpu"
    ):  # timed in this process: a notebook kernel's cross-check, not a CPU budget to paste
        for part in figures.values():
            if part.get("budgets.py line"):
                part["budgets.py line"] = OF_RECORD_ONLY
    return figures


def _bench_rope_and_attention(device: torch.device, *, small: bool, repeats: int, checks: list[str]) -> dict:
    """``bench_budgets``'s apply_rope and attention parts (those of ``checks``)."""
    from posref.grading.speed.budgets import APPLY_ROPE_CPU, apply_rope_budget, attention_budget
    from posref.grading.speed.calibration import CEILING, calibrate_apply_rope, calibrate_attention

    impls = load_student_impls(STUDENT_IMPLS)
    if impls is None:
        print(f"  budgets: {STUDENT_IMPLS} not found (it comes with a source checkout): calibration skipped")
        return {"apply_rope budget calibration": {"skipped": f"{STUDENT_IMPLS} not found"}}
    if small:
        shapes = [(1, 2, 16, 8), (1, 2, 32, 16)]
    elif device.type == "cuda":
        shapes = list(
            dict.fromkeys((apply_rope_budget(device).shape, APPLY_ROPE_CPU.shape, CALIBRATION_SHAPE_GPU))
        )
    else:
        shapes = [apply_rope_budget(device).shape]
    figures: dict[str, dict] = {}
    recommended: dict[str, str] = {}
    # tiny shapes check that the calibration runs, not where a budget goes: slow ones are timed only until they
    # are clearly slow, else each of their 11 rounds lasts up to CEILING reference rounds
    ceiling = SMALL_CEILING if small else CEILING
    for shape in shapes if "apply_rope" in checks else []:
        part = calibrate_apply_rope(impls, tuple(shape), device=device, repeats=repeats, ceiling=ceiling)
        figures[f"apply_rope budget calibration {tuple(shape)} {device.type}"] = part
        # the first shape (cheapest to check) that separates
        if part.get("budgets.py line") and not recommended:
            recommended = {"shape": str(tuple(shape)), "budgets.py line": part["budgets.py line"]}
    if "apply_rope" in checks:
        figures[f"apply_rope budget recommendation {device.type}"] = recommended or {
            "shape": "none: the rule separates sane from slow at none of the shapes timed"
        }
    if "attention" not in checks:
        return figures
    attention = load_student_impls(STUDENT_IMPLS, "ATTENTION_IMPLS")
    shape = (1, 2, 16, 8) if small else attention_budget(device).shape
    figures[f"attention budget calibration {tuple(shape)} {device.type}"] = calibrate_attention(
        attention, tuple(shape), device=device, repeats=repeats, ceiling=ceiling
    )
    return figures
