"""One speed check, described once: what ``check_apply_rope_speed`` does, for any graded function.

A ``SpeedCheck`` holds what differs between functions (how a round's inputs are drawn, the reference, the float64
recomputation that verifies the timed outputs, the budget, the advice); ``measure`` and ``check`` do the rest as
``posref.grading.checks.rope`` does it: ``fn`` checked on the timed shape first, then timed against the reference on
fresh chains (``posref.grading.speed.timing``), then every timed round's last output verified, then the median ratio
held to the device's budget.

The score of record times the student's function against the reference running in a child like the student's
(``autograder.grading.record``): the reference it imports there is ``reference_path`` (``"module:name"``, a
function with the student's signature), which ``speed_check`` puts on the checker as its ``reference_path`` attribute.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from posref.grading.cases import Draw, resolve_device
from posref.grading.failure import Cause
from posref.grading.report import Case, CheckFailed, first_difference
from posref.grading.speed.budgets import Budget
from posref.grading.speed.timing import Chain, Round, Timing, speed_ratio, verify_timed_outputs, within_budget
from posref.i18n import _

SPEED_CHECKS: dict[str, SpeedCheck] = {}
"""Every ``SpeedCheck`` declared, by its ``name`` (``"causal_mean"``)."""


@dataclass(frozen=True)
class SpeedCheck:
    """What one function's speed check needs.

    Args:
        name: the function as messages name it; reference: the baseline it is timed against (and checked
            against first); step: the reference as the verification runs it (float64 inside).
        chain: ``chain(draw, shape)`` -> a fresh round's ``Chain``; cases: ``cases(draw, shape)`` -> the cases
            ``fn`` must pass before it is timed (by default the first call of two fresh chains).
        atol: a timed round's tolerance for its last output; chained: how the calls of a round vary, in words.
        budget: ``budget(device)`` -> its ``Budget``; inputs: what ``budget.shape`` is the shape of, in words.
        advice: what a slow function should do instead; mistakes: hints for ``first_difference``; match_dtype:
            whether the cases also hold ``fn``'s output to the reference's dtype (the timed rounds always do).
        correctness: the name of the function's correctness checker in ``posref.grading`` (``"check_causal_mean"``):
            a speed point is for a correct function, so ``check`` runs its hidden cases before timing anything.
    """

    name: str
    reference: Callable[..., Any]
    step: Callable[..., Any]
    chain: Callable[[Draw, tuple[int, ...]], Chain]
    atol: Callable[[Round], float]
    chained: str
    budget: Callable[[torch.device | str], Budget]
    inputs: str
    advice: str
    correctness: str
    cases: Callable[[Draw, tuple[int, ...]], list[Case]] | None = None
    mistakes: dict[str, Callable[..., Any]] = field(default_factory=dict)
    match_dtype: bool = False

    def __post_init__(self) -> None:
        SPEED_CHECKS[self.name] = self

    def line(self, ratio: float, device=None) -> str:
        """What a speed cell prints after ``check``: the ratio, the budget on ``device`` and the shape timed, in
        the language posref speaks."""
        budget = self.budget(resolve_device(device))
        return _(
            "your {name} takes {ratio:.1f}x the reference's time (budget {budget:g}x, {inputs} of shape {shape})"
        ).format(
            name=self.name,
            ratio=ratio,
            budget=budget.max_ratio,
            inputs=_(self.inputs),
            shape=tuple(budget.shape),
        )

    def _cases(self, draw: Draw, shape: tuple[int, ...]) -> list[Case]:
        if self.cases is not None:
            return self.cases(draw, shape)
        out = []
        for _i in range(2):
            chain = self.chain(draw, shape)
            start = chain.start if isinstance(chain.start, tuple) else (chain.start,)
            args = (*start, *chain.args) if chain.into is None else chain.args
            kwargs = chain.kwargs[0] if chain.into is None else {**chain.kwargs[0], chain.into: chain.start}
            out.append(Case(args, kwargs, atol=1e-4, rtol=1e-4))
        return out

    def measure(
        self,
        fn: Callable[..., Any],
        *,
        device: torch.device | str | None,
        shape: tuple[int, ...],
        give_up_above: float | None,
        pass_below: float | None = None,
        reference: Callable[..., Any] | None = None,
    ) -> tuple[Timing, torch.device]:
        """``fn`` checked at ``shape``, timed against ``reference`` (default ``self.reference``) on fresh chains,
        its timed outputs verified: (the ``Timing``, the device it ran on). What calibration runs too."""
        draw = Draw(hidden=True, device=device)
        first_difference(self.name, fn, self.reference, self._cases(draw, shape), mistakes=self.mistakes,
                         match_dtype=self.match_dtype, seed=draw.quoted_seed)  # fmt: skip
        timing = speed_ratio(fn, reference or self.reference, lambda: self.chain(draw, shape),
                             device=draw.device, give_up_above=give_up_above, pass_below=pass_below)  # fmt: skip
        verify_timed_outputs(self.name, timing, self.step, self.atol, chained=self.chained)
        return timing, draw.device

    def check(
        self,
        fn: Callable[..., Any],
        *,
        device=None,
        reference: Callable[..., Any] | None = None,
        checked: bool = False,
    ) -> float:
        """``CheckFailed`` unless ``fn`` passes its correctness checker's hidden cases (skipped when ``checked``: the
        caller has run them, as the score of record does, whose speed cell then depends on the correctness cell) and
        is within the device's budget; returns the ratio."""
        target = resolve_device(device)
        if not checked:
            self.correct(fn, device=target)
        return within_budget(self.name, lambda **kw: self.measure(fn, **kw), self.budget(target), target,
                             inputs=self.inputs, advice=self.advice, reference=reference)  # fmt: skip

    def correct(self, fn: Callable[..., Any], *, device: torch.device) -> None:
        """``CheckFailed`` ("not timed: ...", with the failure) unless ``fn`` passes the hidden cases of its correctness
        checker. The checker is looked up by name in the package ``posref.grading``, which imports the checkers and
        the speed checks both (the speed machinery imports no checker: ``tests/test_layers.py``)."""
        checker = getattr(sys.modules["posref.grading"], self.correctness)
        try:
            checker(fn, hidden=True, device=device)
        except CheckFailed as failure:
            raise CheckFailed(
                _(
                    "not timed: {name} fails its correctness check on the hidden cases (a speed point is for a "
                    "correct function):\n{failure}"
                ).format(name=self.name, failure=failure),
                cause=Cause("not-timed"),
            ) from None


def speed_check(reference_path: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a ``check_<name>_speed`` with the ``"module:name"`` of the reference the score of record runs in its
    reference child (instead of ``posref.<name>``)."""

    def mark(checker: Callable[..., Any]) -> Callable[..., Any]:
        checker.reference_path = reference_path
        return checker

    return mark


def speed_line(name: str, ratio: float, device=None) -> str:
    """The line a speed cell prints after its check returned ``ratio``: ``print(speed_line("causal_mean", ratio,
    device))`` says "your causal_mean takes 1.1x the reference's time (budget 5x, v of shape (1, 8, 128, 16))",
    in the language posref speaks (the cell is graded code, the same in every edition; the sentence is posref's).
    ``name`` is a ``SpeedCheck``'s (the graded function's)."""
    if name not in SPEED_CHECKS:
        raise ValueError(
            _("no speed check is named {name!r}: expected one of {names}").format(
                name=name, names=", ".join(sorted(SPEED_CHECKS))
            )
        )
    return SPEED_CHECKS[name].line(ratio, device)
