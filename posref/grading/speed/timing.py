"""Speed as a ratio: a student's function against the reference, on the same device, in the same run.

Timing on shared machines is noisy, so a ratio is measured as the design notes ask: one thread, warm-up
rounds, at least 11 rounds that alternate which function goes first, and the median of the per-round ratios
(a slow round slows both functions of that round, so it cancels in its ratio). CUDA is synchronised around
each timed block.

A round is a ``Chain``: calls in a row, each on the previous call's output as ``links`` makes the next input of it
(every call's input is new, and depends on the previous call non-linearly: nothing can be remembered, computed ahead
or composed), on inputs drawn fresh for that round and revealed only when its clock starts. A round lasts
``ROUND_S`` seconds, whatever the function's speed: the function is never told how many calls it has left (the
grader stops it when the time is up, after the call it is making), and its time per call is the round's time divided
by the calls it made. One round is a single request to a child that runs the student's code (``Child.run_chain``:
the transport costs one small message and one copy of the inputs and the last output per round, not per call).

Every call leaves a checksum (``links.checksum``): the checker recomputes, after the clock has stopped, every call of
a sample of the rounds in float64 (``verify_timed_outputs``). So a call that was skipped, answered from memory or
answered wrongly fails the check wherever it was in its round; a correct float32 function stays within the tolerance
because no link amplifies a rounding difference.
"""

from __future__ import annotations

import math
import random
import statistics
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from posref.grading.difference import difference
from posref.grading.failure import Cause, CheckFailed, StudentError
from posref.grading.report import private_copy
from posref.grading.speed.links import ALIGN, run_calls, starts, weights_at
from posref.i18n import _

_clock = time.perf_counter  # bound once, at import

ROUND_S = 0.05
"""Seconds a timed round lasts (at least one call): long enough that a round's time is not a clock's jitter."""

MAX_CALLS = 1 << 16
"""The most calls a round may make, the same for every round (it tells the function nothing)."""

WEIGHT_STARTS = 1024
"""Checksum weights hold at least this many aligned offsets beyond the output's size: a checksum cannot be computed
for a few offsets ahead and reused."""


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
    """One round's inputs: call ``i`` (from 0) is ``fn(x_i, *args, **kwargs[i % len(kwargs)])`` (``fn(*x_i, ...)``
    when ``x_i`` is a tuple; with ``into``, ``fn(*args, **kwargs[...], into=x_i)``), where ``x_0`` is ``start`` and
    ``x_i`` what the ``link`` named makes of the previous call's output (``posref.grading.speed.links``). Every output
    must be a tensor of ``out_shape``, ``out_dtype`` and ``out_device`` (by default those of ``start``, or of its
    first tensor). ``phase``, ``weights`` and ``offsets`` (``seal``) make each call's input new and its checksum."""

    start: Any
    args: tuple[Any, ...] = ()
    kwargs: tuple[dict[str, Any], ...] = ({},)
    link: str | None = None
    into: str | None = None
    out_shape: tuple[int, ...] | None = None
    out_dtype: torch.dtype | None = None
    out_device: torch.device | None = None
    phase: float = 0.0
    weights: torch.Tensor | None = None
    offsets: tuple[int, int] = (0, 1)

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
        like = self.start[0] if isinstance(self.start, tuple) else self.start
        like = like if isinstance(like, torch.Tensor) else None
        shape = self.out_shape if self.out_shape is not None else like.shape
        dtype = self.out_dtype if self.out_dtype is not None else like.dtype
        device = self.out_device if self.out_device is not None else like.device
        return torch.empty(shape, dtype=dtype, device=device)

    def run(self, fn: Callable[..., Any], calls: int, check: Callable[[Any], None] = lambda y: None,
            stop: Callable[[], bool] = lambda: False,
            sums: torch.Tensor | None = None) -> tuple[Any, int]:  # fmt: skip
        """``links.run_calls`` along this chain: (the last output, calls made)."""
        return run_calls(fn, self, calls, check, stop, sums)


def seal(chain: Chain) -> Chain:
    """``chain`` with what a timed round adds, drawn from the operating system's randomness: the ``phase`` of its
    fresh factors, the checksum ``weights`` (float32, unit normal: the output's size plus at least 1024 aligned
    offsets' worth) and their ``offsets`` ``(a, b)``, ``b`` coprime to the number ``K`` of offsets (the calls go
    through all ``K`` before any repeats)."""
    system = random.SystemRandom()
    like = chain.output_like()
    n = like.numel()
    size = 2 * n + ALIGN * WEIGHT_STARTS
    generator = torch.Generator().manual_seed(system.getrandbits(63))
    weights = torch.randn(size, generator=generator).to(like.device)
    k = starts(size, n)
    step = system.randrange(1, k)
    while math.gcd(step, k) != 1:  # a step sharing a factor with K would come back after K / gcd calls
        step = system.randrange(1, k)
    return replace(chain, phase=system.random(), weights=weights, offsets=(system.randrange(k), step))


class TimedElsewhere(ABC):
    """A function whose timed rounds run in another process: the grader's ``RemoteFunction``
    (``posref.grading.child.remote``), which runs a whole round in the student's child in one request and can hold
    that child still while the reference is timed. Declared here so that the speed machinery needs nothing of the
    child's machinery."""

    @abstractmethod
    def timed_round(
        self, chain: Chain, max_calls: int, seconds: float, clock: Callable[[], float]
    ) -> tuple[float, int, torch.Tensor, torch.Tensor]:
        """Calls along ``chain`` until ``seconds`` have passed on ``clock`` (at least one, at most ``max_calls``;
        the function is not told how many): (seconds charged, calls made, the last output, every call's checksum
        as float64)."""

    @abstractmethod
    def held_still(self) -> AbstractContextManager:
        """A context in which nothing of this function's process runs."""


@dataclass
class Round:
    """What one timed round did: its inputs, how many calls ran, the seconds they took, the last output and every
    call's checksum (float64, one per call)."""

    chain: Chain
    calls: int
    seconds: float
    output: torch.Tensor
    sums: torch.Tensor


def run_chain(
    fn: Callable[..., Any], chain: Chain, device: torch.device, seconds: float, max_calls: int = MAX_CALLS
) -> Round:
    """Calls of ``fn`` along ``chain`` until ``seconds`` have passed (at least one, at most ``max_calls``), timed by
    the grader's clock and synchronised at both ends. A ``RemoteFunction`` runs the chain in its child in one request
    (``Child.run_chain``: the child pinned to one CPU, and charged the CPU time of all its processes when that is
    more than the wall time, ``pinning``); anything else runs here."""
    if isinstance(fn, TimedElsewhere):
        spent, done, output, sums = fn.timed_round(chain, max_calls, seconds, _clock)
        return Round(chain, done, spent, output, sums)
    like = chain.output_like()
    sums = torch.empty(max_calls, dtype=torch.float64, device=like.device)

    def check(y: Any) -> None:
        problem = chain_output_problem(y, like)
        if problem is not None:
            raise StudentError(
                _("{problem} while being timed").format(problem=problem), raised=False, kind="timed-result"
            )

    synchronize(device)
    start = _clock()
    y, done = chain.run(fn, max_calls, check, lambda: _clock() - start > seconds, sums)
    synchronize(device)
    return Round(chain, done, _clock() - start, y, sums[:done].cpu())


def quiet(student: Callable[..., Any]) -> AbstractContextManager:
    """While the reference is timed: a student's child stopped, so that nothing it started (a thread or process
    that burns CPU whenever its own function is idle) can slow the reference down; nothing for a local function
    (in the student's own kernel nothing is protected anyway)."""
    return student.held_still() if isinstance(student, TimedElsewhere) else nullcontext()


def seconds_per_call(
    fn: Callable[..., Any],
    draw: Callable[[], Chain],
    *,
    device: torch.device,
    rounds: int = 5,
    round_s: float = ROUND_S,
) -> float:
    """Median over ``rounds`` of the mean time of one call of ``fn`` along fresh chains, timed like
    ``speed_ratio``. An absolute time, for benchmark reports only (checks compare ratios)."""
    with single_thread():
        run_chain(fn, seal(draw()), device, 0.0, max_calls=1)  # warm-up
        return statistics.median(
            (r := run_chain(fn, seal(draw()), device, round_s)).seconds / r.calls for _ in range(rounds)
        )


@dataclass
class Timing:
    """``speed_ratio``'s result: the median ratio, the per-round ratios, the reference's calls in its last round,
    and the student's timed rounds (their checksums are still to be verified, see ``verify_timed_outputs``)."""

    ratio: float
    ratios: list[float]
    calls: int = 0
    student_rounds: list[Round] = field(default_factory=list)


SURE_ROUNDS = 5
"""Rounds after which a function every one of whose ratios is under ``pass_below`` stops being timed; at most
``VERIFIED_ROUNDS``, so that every one of those rounds is verified."""


def speed_ratio(
    student: Callable[..., Any],
    reference: Callable[..., Any],
    draw: Callable[[], Chain],
    *,
    device: torch.device,
    rounds: int = 11,
    warmup: int = 2,
    round_s: float = ROUND_S,
    give_up_above: float | None = None,
    pass_below: float | None = None,
) -> Timing:
    """Median of per-round ``(student seconds per call) / (reference seconds per call)``.

    Every round draws a fresh ``Chain`` (``draw()``, sealed by ``seal``), gives each function its own copy of it,
    and runs each for ``round_s`` seconds (a function slower than that makes one call). ``give_up_above``: stop
    early, after 3 rounds, when every ratio so far exceeds it (a function 100x over budget need not be timed 11
    times to know it is over). ``pass_below``: stop early, after ``SURE_ROUNDS``, when every ratio so far is under it
    (half a budget: the median of 11 could then exceed the budget only if every later round did; and those rounds
    are all verified, ``rounds_to_verify``).

    The student's outputs are not looked at while the clock runs: ``Timing.student_rounds`` holds them (and their
    checksums) for the checker to verify afterwards (``verify_timed_outputs``).
    """
    timing = Timing(math.nan, [])
    with single_thread():
        for _ in range(warmup):
            with quiet(student):
                run_chain(reference, seal(draw()), device, 0.0, max_calls=1)
            run_chain(student, seal(draw()), device, 0.0, max_calls=1)
        for r in range(rounds):
            chain = seal(draw())
            if r % 2:  # the student first
                mine = run_chain(student, chain.private(), device, round_s)
                with quiet(student):
                    theirs = run_chain(reference, chain.private(), device, round_s)
            else:
                with quiet(student):
                    theirs = run_chain(reference, chain.private(), device, round_s)
                mine = run_chain(student, chain.private(), device, round_s)
            timing.calls = theirs.calls
            # verified along the inputs as drawn: the student's copy may have been changed in place
            timing.student_rounds.append(replace(mine, chain=chain))
            timing.ratios.append((mine.seconds / mine.calls) / max(theirs.seconds / theirs.calls, 1e-12))
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


@dataclass
class Replay:
    """A timed round recomputed by the reference after the clock has stopped: every call's checksum (float64), the
    size of its terms (``sum |w y|``, for the tolerance of a float32 sum) and the last output."""

    sums: list[float]
    sizes: list[float]
    output: torch.Tensor


def replay(
    round_: Round,
    step: Callable[..., torch.Tensor],
    on_call: Callable[[int, float, float], None] = lambda *a: None,
) -> Replay:
    """``step`` (the reference) run along the round's chain, as many calls as the student made, each call's checksum
    taken with the round's weights in float64 and handed to ``on_call(i, checksum, size)`` as soon as it is known
    (which may raise: a round is replayed only as far as it is right)."""
    chain = round_.chain.private()
    weights = chain.weights.double()
    sums: list[float] = []
    sizes: list[float] = []

    def note(y: torch.Tensor) -> None:
        w = weights_at(weights, chain.offsets, len(sums), y.numel())
        flat = y.reshape(-1).double()
        sums.append(float(flat @ w))
        sizes.append(float(flat.abs() @ w.abs()))
        on_call(len(sums) - 1, sums[-1], sizes[-1])

    output, _done = chain.run(step, round_.calls, note)
    return Replay(sums, sizes, output)


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


SIGMAS = 8.0
"""How many standard deviations of a correct function's checksum difference a call's tolerance allows: ``<w, e>``
for unit-normal weights ``w`` drawn independently of a rounding difference ``e`` is normal with deviation ``|e|``, so
a correct function fails by chance with probability below 1e-15 per call."""

_SUM_ROUNDING = {torch.float32: 2.0**-12, torch.float64: 2.0**-40}
"""The rounding of a checksum's own sum relative to the size of its terms: float32 (the child sums a float32 output
in float32; 2^-12 bounds a sum of 4096 terms, every SIMD lane of a 131072-term product) or float64."""


def call_tolerance(n: int, atol: float, size: float, dtype: torch.dtype) -> float:
    """How far a correct call's checksum may be from the replay's: ``SIGMAS`` times the largest ``|e|`` that an
    output within ``atol`` of the reference in each of its ``n`` elements can have, plus the checksum's own rounding
    (``size`` = ``sum |w y|``)."""
    return SIGMAS * math.sqrt(n) * atol + _SUM_ROUNDING.get(dtype, 2.0**-40) * size


def verify_timed_outputs(
    name: str,
    timing: Timing,
    step: Callable[..., torch.Tensor],
    atol: Callable[[Round], float],
    *,
    chained: str,
) -> None:
    """Raise ``CheckFailed`` unless every call of each sampled timed round (``rounds_to_verify``) left the checksum of
    ``step``'s result (the reference, run here along the same chain after the clock has stopped) within
    ``call_tolerance``, and the round's last output is ``step``'s within ``atol(round)``; ``chained`` says how the
    calls of a round follow one another, for the message. A round is replayed up to its first wrong call only."""
    with single_thread():  # a second thread made these replays 8x slower on a loaded 2-core machine
        for number in sorted(rounds_to_verify(timing)):
            _verify_round(name, number, timing.student_rounds[number - 1], step, atol, chained)


def _verify_round(
    name: str,
    number: int,
    timed: Round,
    step: Callable[..., torch.Tensor],
    atol: Callable[[Round], float],
    chained: str,
) -> None:
    n, dtype, allowed_error = timed.output.numel(), timed.output.dtype, atol(timed)

    def fail(where: str) -> None:
        raise CheckFailed(
            _(
                "{name} gave a wrong result while being timed: in timed round {number}, {calls} calls each on the "
                "previous call's output ({chained}), {where}\n  Every call must compute its own result: a function "
                "that skips calls, remembers answers, changes what it does on repeated calls or returns a tensor it "
                "did not fill is not fast, it is wrong."
            ).format(name=name, number=number, calls=timed.calls, chained=_(chained), where=where),
            cause=Cause("timed-result"),
        )

    def compare(i: int, theirs: float, size: float) -> None:
        mine, allowed = float(timed.sums[i]), call_tolerance(n, allowed_error, size, dtype)
        if not abs(mine - theirs) <= allowed:  # NaN fails too
            fail(
                _(
                    "call {call} of {calls} gave a result that is not the reference's: its checksum (the output's dot "
                    "product with weights drawn for the round) is {mine:.7g}, the reference's {theirs:.7g} "
                    "(tolerance {allowed:.2g})."
                ).format(call=i + 1, calls=timed.calls, mine=mine, theirs=theirs, allowed=allowed)
            )

    expected = replay(timed, step, compare)
    problem = difference(expected.output, timed.output, atol=allowed_error, rtol=0.0, match_dtype=False,
                         what=_("last output"))  # fmt: skip
    if problem is not None:
        fail(
            _("the last output (call {calls}) is not the reference's.").format(calls=timed.calls)
            + "\n  "
            + problem
        )


def within_budget(name: str, measure: Callable[..., tuple[Timing, torch.device]], budget: Any, device: Any,
                  *, inputs: str, advice: str, reference: Callable[..., Any] | None) -> float:  # fmt: skip
    """The ratio ``measure(fn's timing)`` gives at ``budget.shape`` on ``device``; ``CheckFailed`` saying how slow
    ``name`` was, on what ``inputs`` (the budget's shape follows), and the ``advice``, when it is over
    ``budget.max_ratio``. ``measure`` is a checker's ``<name>_speed_ratio`` with its function bound.

    A ratio over the budget is measured a second time, and the lower of the two medians stands. On a loaded machine
    a burst of other work can slow a round's two functions unevenly: a median of 11 rounds of a sane float64 answer
    once read 15.4x against a 12x budget its calibration put 2x above it. Such a burst seldom lasts through a second
    measurement, while an answer over its budget by design (budgets sit 3x below the best slow implementation) is
    over it again; one given up early (2x over the budget) costs its second measurement 3 rounds."""

    def timed() -> tuple[Timing, torch.device]:
        return measure(device=device, shape=budget.shape, give_up_above=2 * budget.max_ratio,
                       pass_below=budget.max_ratio / 2, reference=reference)  # fmt: skip

    timing, ran_on = timed()
    if timing.ratio > budget.max_ratio:  # measured again before the verdict stands
        timing, ran_on = min((timing, ran_on), timed(), key=lambda measured: measured[0].ratio)
    if timing.ratio > budget.max_ratio:
        provisional = (
            _(" This {device} budget is provisional ({measured}).").format(
                device=ran_on.type, measured=budget.measured
            )
            if budget.provisional
            else ""
        )
        raise CheckFailed(
            _(
                "{name} is too slow: {ratio:.1f}x the reference's time (budget {budget:g}x on {device}; median of "
                "{rounds} rounds on {ran_on}, {inputs} of shape {shape} float32)."
            ).format(
                name=name,
                ratio=timing.ratio,
                budget=budget.max_ratio,
                device=ran_on.type,
                rounds=len(timing.ratios),
                ran_on=ran_on,
                inputs=_(inputs),
                shape=tuple(budget.shape),
            )
            + f"{provisional} {_(advice)}",
            cause=Cause("slow"),
        )
    return timing.ratio


def chain_output_problem(y: Any, like: torch.Tensor) -> str | None:
    """None if ``y`` is what a timed chain's calls must return (a plain tensor of ``like``'s shape, dtype and
    device), else what the function returned instead."""
    if type(y) is not torch.Tensor:
        return _("returned a {kind}, not a torch.Tensor").format(kind=type(y).__name__)
    if y.shape != like.shape or y.dtype != like.dtype or y.device != like.device:
        return _(
            "returned a tensor {dtype} {shape} on {device}, where every call must return one {like_dtype} "
            "{like_shape} on {like_device}"
        ).format(
            dtype=y.dtype,
            shape=tuple(y.shape),
            device=y.device,
            like_dtype=like.dtype,
            like_shape=tuple(like.shape),
            like_device=like.device,
        )
    return None
