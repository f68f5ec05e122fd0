"""Speed as a ratio: a student's function against the reference, on the same device, in the same run.

Timing on shared machines is noisy, so a ratio is measured as the design notes ask: one thread, warm-up
rounds, at least 11 rounds that alternate which function goes first, and the median of the per-round ratios
(a slow round slows both functions of that round, so it cancels in its ratio). CUDA is synchronised around
each timed block.

A round is a ``Chain``: ``calls`` calls in a row, each on the previous call's output
(``y_i = fn(y_{i-1}, *args, **kwargs_i)``), on inputs drawn fresh for that round. So every call of a round has
an input no call has had before (remembering answers cannot help), the inputs exist only once the round is
drawn (nothing can be computed ahead), one round is a single request to a child that runs the student's code
(``Child.run_chain``: the transport costs one small message and one copy of an input and an output per round,
not per call), and the round's last output depends on every call: ``timed_outputs`` hands it to the checker,
which verifies it against its own computation after the clock has stopped. A function whose output feeds its
own next call is the checker's choice (``apply_rope`` keeps its input's shape; a rotation keeps an error's size,
so a wrong call anywhere in the chain shows at its end).
"""

from __future__ import annotations

import math
import random
import statistics
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from posref.grading.report import CheckFailed, StudentError, difference, private_copy
from posref.grading.speed.links import run_calls

_clock = time.perf_counter  # bound once, at import


@contextmanager
def single_thread() -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def synchronize(device: torch.device) -> None:
    """Wait for the device's queued work (CUDA runs asynchronously), so a clock reading covers it."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@dataclass(frozen=True)
class Chain:
    """One round's inputs: call ``i`` (from 0) is ``fn(x_i, *args, **kwargs[i % len(kwargs)])`` (or, with ``into``,
    ``fn(*args, **kwargs[...], into=x_i)``), where ``x_0`` is ``start`` and ``x_i`` is the previous call's output,
    or what the ``link`` named makes of it (``posref.grading.speed.links``: for functions whose output is not their
    input's shape). Every output must be a tensor of ``out_shape``, ``out_dtype`` and ``out_device`` (by default
    ``start``'s)."""

    start: Any
    args: tuple[Any, ...] = ()
    kwargs: tuple[dict[str, Any], ...] = ({},)
    link: str | None = None
    into: str | None = None
    out_shape: tuple[int, ...] | None = None
    out_dtype: torch.dtype | None = None
    out_device: torch.device | None = None

    def private(self) -> Chain:
        """A copy with its own tensors: what one function does to its inputs never reaches another's."""
        return replace(
            self,
            start=private_copy(self.start),
            args=private_copy(self.args),
            kwargs=private_copy(self.kwargs),
        )

    def output_like(self) -> torch.Tensor:
        """An empty tensor like every output of the chain must be."""
        like = self.start if isinstance(self.start, torch.Tensor) else None
        shape = self.out_shape if self.out_shape is not None else like.shape
        dtype = self.out_dtype if self.out_dtype is not None else like.dtype
        device = self.out_device if self.out_device is not None else like.device
        return torch.empty(shape, dtype=dtype, device=device)

    def run(self, fn: Callable[..., Any], calls: int, check: Callable[[Any], None] = lambda y: None,
            stop: Callable[[], bool] = lambda: False) -> tuple[Any, int]:  # fmt: skip
        """``links.run_calls`` along this chain: (the last output, calls made)."""
        return run_calls(fn, self, calls, check, stop)


class TimedElsewhere(ABC):
    """A function whose timed rounds run in another process: the grader's ``RemoteFunction``
    (``posref.grading.child.remote``), which runs a whole round in the student's child in one request and can hold
    that child still while the reference is timed. Declared here so that the speed machinery needs nothing of the
    child's machinery."""

    @abstractmethod
    def timed_round(
        self, chain: Chain, calls: int, stop_after: float, clock: Callable[[], float]
    ) -> tuple[float, int, torch.Tensor]:
        """``calls`` calls along ``chain`` (fewer once ``stop_after`` seconds have passed), timed by ``clock``:
        (seconds, calls made, the last output)."""

    @abstractmethod
    def held_still(self) -> AbstractContextManager:
        """A context in which nothing of this function's process runs."""


@dataclass
class Round:
    """What one timed round did: its inputs, how many calls ran, the wall seconds they took and the last output."""

    chain: Chain
    calls: int
    seconds: float
    output: torch.Tensor


def run_chain(
    fn: Callable[..., Any], chain: Chain, calls: int, device: torch.device, stop_after: float = math.inf
) -> Round:
    """``calls`` calls of ``fn`` along ``chain`` (fewer once ``stop_after`` seconds have passed; at least one),
    timed by the grader's clock and synchronised at both ends. A ``TimedElsewhere`` function (the grader's
    ``RemoteFunction``) runs the chain in its child in one request (``Child.run_chain``); anything else runs here."""
    if isinstance(fn, TimedElsewhere):
        seconds, done, output = fn.timed_round(chain, calls, stop_after, _clock)
        return Round(chain, done, seconds, output)
    like = chain.output_like()

    def check(y: Any) -> None:
        problem = chain_output_problem(y, like)
        if problem is not None:
            raise StudentError(f"{problem} while being timed", raised=False)

    synchronize(device)
    start = _clock()
    y, done = chain.run(fn, calls, check, lambda: _clock() - start > stop_after)
    synchronize(device)
    return Round(chain, done, _clock() - start, y)


def quiet(student: Callable[..., Any]) -> AbstractContextManager:
    """While the reference is timed: a student's child stopped, so that nothing it started (a thread or process
    that burns CPU whenever its own function is idle) can slow the reference down; nothing for a local function
    (in the student's own kernel nothing is protected anyway)."""
    return student.held_still() if isinstance(student, TimedElsewhere) else nullcontext()


def _calls_per_round(
    fn: Callable[..., Any], draw: Callable[[], Chain], device: torch.device, min_round_s: float
) -> tuple[int, float]:
    """The number of calls (a power of two, at most 65536) that takes ``fn`` at least ``min_round_s``, and the
    seconds per call of the last try."""
    calls = 1
    while (r := run_chain(fn, draw(), calls, device)).seconds < min_round_s and calls < 1 << 16:
        calls *= 2
    return calls, r.seconds / r.calls


def seconds_per_call(
    fn: Callable[..., Any],
    draw: Callable[[], Chain],
    *,
    device: torch.device,
    rounds: int = 5,
    min_round_s: float = 0.004,
) -> float:
    """Median over ``rounds`` of the mean time of one call of ``fn`` along fresh chains, timed like
    ``speed_ratio``. An absolute time, for benchmark reports only (checks compare ratios)."""
    with single_thread():
        run_chain(fn, draw(), 1, device)  # warm-up
        calls, _ = _calls_per_round(fn, draw, device, min_round_s)
        return statistics.median(
            (r := run_chain(fn, draw(), calls, device)).seconds / r.calls for _ in range(rounds)
        )


@dataclass
class Timing:
    """``speed_ratio``'s result: the median ratio, the per-round ratios, the calls per round, and the student's
    timed rounds (their last outputs are still to be verified, see ``timed_outputs``)."""

    ratio: float
    ratios: list[float]
    calls: int = 0
    student_rounds: list[Round] = field(default_factory=list)


SURE_ROUNDS = 5
"""Rounds after which a function every one of whose ratios is under ``pass_below`` stops being timed; at most
``VERIFIED_ROUNDS``, so that every one of those rounds is verified."""

CUT_MARGIN = 1.25
"""How far over ``give_up_above`` a student's round may run before it is cut: enough that a cut round's ratio is
clearly over the limit whatever the clock's jitter, small because a slow function spends all of it three times
(the checks' ``give_up_above`` is twice the budget, so a slow function costs about 3 x 2.5 x budget reference
rounds)."""


def speed_ratio(
    student: Callable[..., Any],
    reference: Callable[..., Any],
    draw: Callable[[], Chain],
    *,
    device: torch.device,
    rounds: int = 11,
    warmup: int = 2,
    min_round_s: float = 0.05,
    give_up_above: float | None = None,
    pass_below: float | None = None,
) -> Timing:
    """Median of per-round ``(student seconds per call) / (reference seconds per call)``.

    Every round draws a fresh ``Chain`` (``draw()``), gives each function its own copy of it, and runs ``calls``
    calls of each (set so that the reference takes at least ``min_round_s``). ``give_up_above``: stop early,
    after 3 rounds, when every ratio so far exceeds it (a function 100x over budget need not be timed 11 times to
    know it is over); and cut the student's round short once it has taken ``CUT_MARGIN`` x ``give_up_above``
    times the reference's latest round, so a function 1000x slower costs a few dozen reference rounds, not 1000. A
    cut round is a ratio per call made, so it stays comparable, and it is over ``give_up_above`` by construction.

    ``pass_below``: stop early, after ``SURE_ROUNDS``, when every ratio so far is under it (half a budget: the
    median of 11 could then exceed the budget only if every later round did; and those rounds are all verified,
    ``rounds_to_verify``).

    The student's outputs are not looked at while the clock runs: ``Timing.student_rounds`` holds them for the
    checker to verify afterwards (``timed_outputs``).
    """
    timing = Timing(math.nan, [])
    with single_thread():
        for _ in range(warmup):
            with quiet(student):
                run_chain(reference, draw(), 1, device)
            run_chain(student, draw(), 1, device)
        with quiet(student):
            calls, per_call = _calls_per_round(reference, draw, device, min_round_s)
        timing.calls = calls
        cap = math.inf if give_up_above is None else CUT_MARGIN * give_up_above
        for r in range(rounds):
            chain = draw()
            if r % 2:  # the student first: capped by the reference's previous round
                capping = per_call
                mine = run_chain(student, chain.private(), calls, device, stop_after=cap * capping * calls)
                with quiet(student):
                    theirs = run_chain(reference, chain.private(), calls, device)
                per_call = theirs.seconds / theirs.calls
            else:
                with quiet(student):
                    theirs = run_chain(reference, chain.private(), calls, device)
                per_call = capping = theirs.seconds / theirs.calls
                mine = run_chain(student, chain.private(), calls, device, stop_after=cap * capping * calls)
            # a round cut short is compared with the reference time that set the cap, so its ratio stays above
            # the cap even when the reference's next round happens to be slower
            cut = mine.calls < calls
            # verified along the inputs as drawn: the student's copy may have been changed in place
            timing.student_rounds.append(Round(chain, mine.calls, mine.seconds, mine.output))
            timing.ratios.append((mine.seconds / mine.calls) / max(capping if cut else per_call, 1e-12))
            if give_up_above is not None and len(timing.ratios) >= 3 and min(timing.ratios) > give_up_above:
                break
            if (
                pass_below is not None
                and len(timing.ratios) >= SURE_ROUNDS
                and max(timing.ratios) < pass_below
            ):
                break
    timing.ratio = statistics.median(timing.ratios)
    return timing


def timed_outputs(
    timing: Timing, step: Callable[..., torch.Tensor], numbers: Collection[int] | None = None
) -> Iterator[tuple[int, Round, torch.Tensor]]:
    """For each of the student's timed rounds (those numbered ``numbers``, from 1, when given): (round number, the
    round, the output it should have given), the expected output computed here by running ``step`` (the
    reference) along the round's chain as many calls as the student made. Run after the clock has stopped."""
    for number, round_ in enumerate(timing.student_rounds, 1):
        if numbers is not None and number not in numbers:
            continue
        yield number, round_, round_.chain.private().run(step, round_.calls)[0]


VERIFIED_ROUNDS = 5


def rounds_to_verify(timing: Timing, k: int = VERIFIED_ROUNDS) -> set[int]:
    """``k`` of the student's timed rounds (numbers from 1), drawn from the operating system's randomness after
    the run: nothing the student's code did or saw can predict them.

    Why a sample is enough: the median of 11 ratios is within budget only when 6 rounds are, so a slow function
    must answer wrongly (fast) in at least 6 of the 11 to pass; then all ``k = 5`` verified rounds land among the
    other 5 with probability 1 / C(11, 5) = 1/462. Verifying every round would cost as much again as the timing
    (a round replays all its calls). A function that passed after ``SURE_ROUNDS`` has every round verified."""
    n = len(timing.student_rounds)
    return {i + 1 for i in random.SystemRandom().sample(range(n), min(k, n))}


def verify_timed_outputs(
    name: str,
    timing: Timing,
    step: Callable[..., torch.Tensor],
    atol: Callable[[Round], float],
    *,
    chained: str,
) -> None:
    """Raise ``CheckFailed`` unless the last output of each sampled timed round (``rounds_to_verify``) is
    ``step``'s (the reference, run here along the same chain after the clock has stopped) within ``atol(round)``;
    ``chained`` says how the calls of a round vary, for the message."""
    with single_thread():  # a second thread made these replays 8x slower on a loaded 2-core machine
        verified = list(timed_outputs(timing, step, rounds_to_verify(timing)))
    for number, timed, expected in verified:
        problem = difference(expected, timed.output, atol=atol(timed), rtol=0.0, match_dtype=False,
                             what="last output")  # fmt: skip
        if problem is not None:
            raise CheckFailed(
                f"{name} gave a wrong result while being timed: in timed round {number}, {timed.calls} calls each "
                f"on the previous call's output ({chained}), the last output is not the reference's.\n"
                f"  {problem}\n  Every call must compute its own result: a function that remembers answers, "
                f"changes what it does on repeated calls or returns a tensor it did not fill is not fast, it is "
                f"wrong."
            )


def within_budget(name: str, measure: Callable[..., tuple[Timing, torch.device]], budget: Any, device: Any,
                  *, inputs: str, advice: str, reference: Callable[..., Any] | None) -> float:  # fmt: skip
    """The ratio ``measure(fn's timing)`` gives at ``budget.shape`` on ``device``; ``CheckFailed`` saying how slow
    ``name`` was, on what ``inputs`` (the budget's shape follows), and the ``advice``, when it is over
    ``budget.max_ratio``. ``measure`` is a checker's ``<name>_speed_ratio`` with its function bound."""
    timing, ran_on = measure(device=device, shape=budget.shape, give_up_above=2 * budget.max_ratio,
                             pass_below=budget.max_ratio / 2, reference=reference)  # fmt: skip
    if timing.ratio > budget.max_ratio:
        provisional = (
            f" This {ran_on.type} budget is provisional ({budget.measured})." if budget.provisional else ""
        )
        raise CheckFailed(
            f"{name} is too slow: {timing.ratio:.1f}x the reference's time (budget {budget.max_ratio:g}x on "
            f"{ran_on.type}; median of {len(timing.ratios)} rounds on {ran_on}, {inputs} of shape "
            f"{tuple(budget.shape)} float32).{provisional} {advice}"
        )
    return timing.ratio


def chain_output_problem(y: Any, like: torch.Tensor) -> str | None:
    """None if ``y`` is what a timed chain's calls must return (a plain tensor of ``like``'s shape, dtype and
    device), else what the function returned instead."""
    if type(y) is not torch.Tensor:
        return f"returned a {type(y).__name__}, not a torch.Tensor"
    if y.shape != like.shape or y.dtype != like.dtype or y.device != like.device:
        return (
            f"returned a tensor {y.dtype} {tuple(y.shape)} on {y.device}, where every call must return one "
            f"{like.dtype} {tuple(like.shape)} on {like.device}"
        )
    return None
