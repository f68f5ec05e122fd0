"""Calibrating the speed budgets: student-style implementations timed as the checker times them.

Each implementation is checked and timed by its checker's own measurement, the ``measure`` of the checker's
``posref.grading.speed.check.SpeedCheck`` (``rope.APPLY_ROPE_SPEED`` behind ``check_apply_rope_speed``,
``attention_speed.ATTENTION_SPEED`` behind ``check_scaled_dot_product_attention_speed``, and so on: same chains of
inputs, same ``speed_ratio``, same reference), ``repeats`` times; the medians go through ``budgets.propose_budget``.
``python -m autograder.calibrate`` runs this on the student-style implementations of
``tests/grading/student_impls.py`` and ``tests/grading/student_impls_speed.py`` as the score of record runs a speed
check (each implementation in a student's sandboxed child, ``reference`` the reference child's function: every round
charged CPU time, pinned to one CPU), ``python -m posref.bench --suite budgets`` in its own process by wall clock;
both print the line to paste into ``budgets.py``, with the load average of the machine before and after (a shared
machine's load is part of what a figure means).
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Mapping
from typing import Any

import torch

from posref.attention import scaled_dot_product_attention
from posref.grading.cases import Draw, resolve_device
from posref.grading.report import CheckFailed
from posref.grading.speed.budgets import propose_budget
from posref.grading.speed.check import SpeedCheck
from posref.grading.speed.order import ATTENTION_SPEED, attention_speed_chain
from posref.grading.speed.rope import APPLY_ROPE_SPEED, apply_rope_speed_chain
from posref.grading.speed.timing import Timing, seconds_per_call
from posref.kernels import fused_backends
from posref.rope import apply_rope

KINDS = ("sane", "slow")
DEFAULT = "default, as checked"
CEILING = 100.0
"""``speed_ratio``'s ``give_up_above``: timing an implementation far over this ratio is cut short, so ratios above
it may be lower bounds (they can only understate the gap between sane and slow, never invent one)."""


def _reference_backends(device: torch.device) -> dict[str, bool | str | None]:
    """``apply_rope``'s ``fused`` argument for each backend whose time per call is reported on ``device``."""
    backends: dict[str, bool | str | None] = {DEFAULT: None}
    if device.type == "cuda":
        backends.update({name: name for name in fused_backends(device)}, eager=False)
    return backends


def device_name(device: torch.device) -> str:
    return torch.cuda.get_device_name(device) if device.type == "cuda" else device.type


def calibrate_apply_rope(
    impls: Mapping[str, tuple[str, Callable[..., torch.Tensor]]],
    shape: tuple[int, ...],
    *,
    device: torch.device | str | None = None,
    repeats: int = 3,
    ceiling: float = CEILING,
) -> dict[str, float | str]:
    """``calibrate`` for ``apply_rope`` (``fn(x, cos, sin, layout="half")``, ``x`` of ``shape`` ``(..., T, D)``),
    with the reference's time per call for each backend of the device."""
    device = resolve_device(device)
    draw = Draw(hidden=True, device=device)
    reference_us = {}
    for label, fused in _reference_backends(device).items():
        seconds = seconds_per_call(
            lambda x, cos, sin, layout, fused=fused: apply_rope(x, cos, sin, layout=layout, fused=fused),
            lambda: apply_rope_speed_chain(draw, shape),
            device=device,
        )
        reference_us[label] = 1e6 * seconds
    return calibrate("APPLY_ROPE", "posref.apply_rope", APPLY_ROPE_SPEED.measure, reference_us, impls, shape,
                     device=device, repeats=repeats, ceiling=ceiling)  # fmt: skip


def calibrate_attention(
    impls: Mapping[str, tuple[str, Callable[..., torch.Tensor]]],
    shape: tuple[int, ...],
    *,
    device: torch.device | str | None = None,
    repeats: int = 3,
    ceiling: float = CEILING,
) -> dict[str, float | str]:
    """``calibrate`` for 01's ``attention`` (``fn(q, k, v, causal=False)``, all three of ``shape``)."""
    device = resolve_device(device)
    draw = Draw(hidden=True, device=device)
    seconds = seconds_per_call(
        scaled_dot_product_attention, lambda: attention_speed_chain(draw, shape), device=device
    )
    return calibrate("ATTENTION", "posref.scaled_dot_product_attention", ATTENTION_SPEED.measure,
                     {DEFAULT: 1e6 * seconds}, impls, shape, device=device, repeats=repeats,
                     ceiling=ceiling)  # fmt: skip


def calibrate_speed_check(
    check: SpeedCheck,
    constant: str,
    impls: Mapping[str, tuple[str, Callable[..., torch.Tensor]]],
    shape: tuple[int, ...] | None = None,
    *,
    device: torch.device | str | None = None,
    repeats: int = 3,
    ceiling: float = CEILING,
    reference: Callable[..., Any] | None = None,
    where: str = "in this process",
) -> dict[str, float | str]:
    """``calibrate`` for a checker built on ``SpeedCheck`` (``lab_speed.PER_POSITION_LOSS``, ...), at ``shape``
    (by default its budget's shape on ``device``), timed by ``check.measure`` against ``reference`` (by default
    ``check.reference``, in this process). The score of record's calibration (``autograder.calibrate``) passes the
    reference child's function and ``impls`` that run in a student's child, and says so in ``where``."""
    device = resolve_device(device)
    shape = tuple(shape if shape is not None else check.budget(device).shape)
    draw = Draw(hidden=True, device=device)
    baseline = reference or check.reference
    seconds = seconds_per_call(baseline, lambda: check.chain(draw, shape), device=device)
    named = f"{check.reference.__module__}.{check.reference.__name__} ({where})"
    return calibrate(constant, named, functools.partial(check.measure, reference=baseline),
                     {DEFAULT: 1e6 * seconds}, impls, shape, device=device, repeats=repeats,
                     ceiling=ceiling)  # fmt: skip


def _load() -> float:
    """The machine's one-minute load average (nan where the system has none)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return float("nan")


def calibrate(
    constant: str,
    reference: str,
    ratio_of: Callable[..., tuple[Timing, torch.device]],
    reference_us: Mapping[str, float],
    impls: Mapping[str, tuple[str, Callable[..., torch.Tensor]]],
    shape: tuple[int, ...],
    *,
    device: torch.device,
    repeats: int,
    ceiling: float,
) -> dict[str, float | str]:
    """Median ratios of each implementation at ``shape``, the reference's time per call, and a proposed budget.

    Args:
        constant: the budget's name in ``budgets.py`` without its device (``"APPLY_ROPE"``); reference: what the
            ratios are against, for the record.
        ratio_of: the checker's measurement (its ``SpeedCheck.measure``): checks
            ``fn`` and times it, ``(fn, device=, shape=, give_up_above=) -> (Timing, device)``.
        reference_us: the reference's microseconds per call, by backend (``DEFAULT`` first).
        impls: name -> (``"sane"`` or ``"slow"``, the function).
        repeats: medians measured per implementation (each from ``speed_ratio``'s 11 rounds).
    Returns: figures by name: ``"<name> (<kind>) #<i>"`` the i-th median ratio, ``"<name> seconds"`` the time
    its checks and timing took, ``"reference us per call (<backend>)"``, ``"load average at start"`` and ``"load
    average at end"`` (one minute), ``"worst sane median"``, ``"best slow median"``, ``"proposed budget"``
    (``nan`` when the rule cannot separate), ``"verdict"`` and ``"budgets.py line"`` (text; empty when there is no
    proposal). An implementation that fails the correctness check, or
    raises while timed, is reported as ``"<name> (<kind>)"``: ``"not timed: ..."``, and left out of the rule.
    """
    shape = tuple(shape)
    figures: dict[str, float | str] = {
        f"reference us per call ({label})": us for label, us in reference_us.items()
    }
    figures["load average at start"] = _load()
    medians: dict[str, dict[str, list[float]]] = {kind: {} for kind in KINDS}
    for name, (kind, fn) in impls.items():
        if kind not in KINDS:
            raise ValueError(f"{name}: kind must be one of {KINDS}, got {kind!r}")
        start = time.perf_counter()
        try:
            for i in range(repeats):
                ratio = ratio_of(fn, device=device, shape=shape, give_up_above=ceiling)[0].ratio
                figures[f"{name} ({kind}) #{i + 1}"] = ratio
                medians[kind].setdefault(name, []).append(ratio)
        # wrong output, or e.g. out of memory: reported, and the other implementations still count
        except Exception as error:
            raised = "" if isinstance(error, CheckFailed) else f"{type(error).__name__}: "
            figures[f"{name} ({kind})"] = f"not timed: {raised}{str(error).splitlines()[0][:300]}"
            medians[kind].pop(name, None)
        figures[f"{name} seconds"] = time.perf_counter() - start
    figures["load average at end"] = _load()
    load = f"load average {figures['load average at start']:.1f} -> {figures['load average at end']:.1f}"
    figures["note"] = f"ratios above {ceiling:g} may be lower bounds (timing is cut short there)"
    sane = [r for rs in medians["sane"].values() for r in rs]
    slow = [r for rs in medians["slow"].values() for r in rs]
    if not sane or not slow:
        figures["verdict"] = "no proposal: needs at least one sane and one slow implementation timed"
        figures["budgets.py line"] = ""
        return figures
    proposal = propose_budget(sane, slow)
    figures["worst sane median"] = proposal.worst_sane
    figures["best slow median"] = proposal.best_slow
    figures["proposed budget"] = float("nan") if proposal.max_ratio is None else proposal.max_ratio
    figures["verdict"] = proposal.verdict
    figures["budgets.py line"] = ""
    if proposal.max_ratio is not None:
        measured = (
            f"{device_name(device)} ({load}), torch {torch.__version__}, inputs {shape}, 11 rounds, against "
            f"{reference} ({figures[f'reference us per call ({DEFAULT})']:.0f} us per call); medians: "
            + "; ".join(
                f"{name} ({kind}) " + ", ".join(f"{r:.2f}" for r in rs)
                for kind in KINDS
                for name, rs in medians[kind].items()
            )
            + f". {proposal.verdict}."
        )
        figures["budgets.py line"] = (
            f"{constant}_{device.type.upper()} = Budget(max_ratio={proposal.max_ratio!r}, shape={shape}, "
            f"measured={measured!r})"
        )
    return figures
