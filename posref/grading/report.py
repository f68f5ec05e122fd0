"""Comparing a student's output with the reference, and saying what differs in words a student can act on.

``first_difference`` is the loop every checker shares: for each drawn ``Case`` it calls the reference and the student's
function on private copies of the arguments, compares (shape, dtype, device, then values within a tolerance),
and on the first difference (one in dtype alone only when no case differs in its values) raises ``CheckFailed``
naming the case, a few expected and obtained numbers, the largest error and where it is, and a hint when the
student's output equals a known-wrong variant (the variant is computed and compared, never guessed).

The comparison is written with plain tensor arithmetic (no ``torch.testing``) so that it does not depend on
helpers a notebook could replace.
"""

from __future__ import annotations

import math
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from posref.grading.frames import students, where_it_raised
from posref.i18n import _


class CheckFailed(AssertionError):
    """A student's function differs from the reference; the message says how, on which case, and why if known.

    In a notebook, IPython shows it through ``_render_traceback_``: the message first, then only the student's
    own frames (the test cell's call, and where the student's function raised), none of posref's.
    """

    def _render_traceback_(self) -> list[str]:
        frames = []
        for err in (self.__cause__, self):  # where the student's function raised, then the check's call
            if err is not None:
                tb = traceback.extract_tb(err.__traceback__)
                frames += [f for f in tb if students(f.filename)]
        lines = [f"{type(self).__name__}: {self}"]
        if frames:
            lines += ["", _("Your code, where it was called (posref's own frames left out):")]
            lines += [line.rstrip("\n") for line in traceback.format_list(frames)]
        return lines


@dataclass
class Case:
    """One call: ``fn(*args, **kwargs)``, a readable description of it, and its tolerance.

    ``atol``/``rtol`` bound ``|got - expected| <= atol + rtol * |expected|`` elementwise; ``None`` picks a default
    from the dtype of the expected output (see ``default_tolerance``).
    """

    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    label: str = ""
    atol: float | None = None
    rtol: float | None = None


# atol, rtol for outputs of each dtype, so that a different but correct order of operations passes and a wrong
# formula (errors of order one) does not: a few units in the last place of values of order one in float16 and
# bfloat16; about 170 in float32 (sums of many terms in another order), which a float32 output computed in half
# precision still exceeds; 1e-7 relative in float64, which accepts a float32 computation returned as float64.
_TOLERANCES = {
    torch.float64: (1e-9, 1e-7),
    torch.float32: (2e-5, 2e-5),
    torch.float16: (4e-3, 4e-3),
    torch.bfloat16: (3e-2, 2e-2),
}


def default_tolerance(dtype: torch.dtype) -> tuple[float, float]:
    return _TOLERANCES.get(dtype, (0.0, 0.0))


def describe(value: Any) -> str:
    """Short text for an argument: tensors by dtype and shape (and a few values when small), others by repr."""
    if isinstance(value, torch.Tensor):
        dtype = str(value.dtype).replace("torch.", "")
        text = _("tensor {dtype} {shape}").format(dtype=dtype, shape=tuple(value.shape))
        if value.device.type != "cpu":
            text += _(" on {device}").format(device=value.device)
        if value.numel() <= 8:
            text += f" = {value.tolist()}"
        return text
    if callable(value) and hasattr(value, "describe"):
        return value.describe()
    return repr(value)


def describe_call(name: str, case: Case) -> str:
    parts = [describe(a) for a in case.args] + [f"{k}={describe(v)}" for k, v in case.kwargs.items()]
    text = f"{name}({', '.join(parts)})"
    return f"{text}  [{case.label}]" if case.label else text


def private_copy(value: Any) -> Any:
    """``value`` with every tensor in it (inside tuples, lists and dicts too) replaced by a detached copy."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, (list, tuple)):
        return type(value)(private_copy(v) for v in value)
    if isinstance(value, dict):
        return {k: private_copy(v) for k, v in value.items()}
    return value


def call(fn: Callable[..., Any], case: Case) -> Any:
    """``fn`` on private copies of the case's arguments (so an in-place change cannot leak into the next call)."""
    return fn(*private_copy(case.args), **private_copy(case.kwargs))


def _changed_inputs(case: Case, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    """Which tensor argument the call changed in place (``args``/``kwargs`` are the copies it was given), or None."""
    argument = _("argument {which}")
    given = [
        (argument.format(which=i + 1), a, b) for i, (a, b) in enumerate(zip(case.args, args, strict=True))
    ]
    given += [(argument.format(which=k), case.kwargs[k], kwargs[k]) for k in case.kwargs]
    for where, before, after in given:
        if (
            isinstance(before, torch.Tensor)
            and isinstance(after, torch.Tensor)
            and not same_values(before, after)
        ):
            return f"{where} ({describe(before)})"
    return None


def same_values(before: torch.Tensor, after: torch.Tensor) -> bool:
    """Whether ``after`` holds what ``before`` held: same shape and dtype, equal values (NaN where NaN was)."""
    if before.shape != after.shape or before.dtype != after.dtype:
        return False
    equal = before == after
    if before.is_floating_point() or before.is_complex():
        equal |= before.isnan() & after.isnan()
    return bool(equal.all())


def raised_a(err: BaseException, kind: type[BaseException]) -> bool:
    """Whether ``err`` is a ``kind`` (an ``IndexError``...), raised here or, as a ``StudentError``'s classes say, in
    the child."""
    return isinstance(err, kind) or kind.__name__ in getattr(err, "types", ())


def error_text(err: BaseException) -> str:
    """``TypeName: message``, or the type's name alone for an exception without a message."""
    return f"{type(err).__name__}: {err}" if str(err) else type(err).__name__


def _fmt(x: float) -> str:
    return f"{x:.6g}"


def _fmt_apart(a: float, b: float) -> tuple[str, str]:
    """``a`` and ``b`` with 6 significant digits, or as many more (up to 17) as it takes to tell them apart: a
    difference beyond a float32's rounding must not read "expected 25.4782, got 25.4782"."""
    for digits in range(6, 18):
        shown = f"{a:.{digits}g}", f"{b:.{digits}g}"
        if shown[0] != shown[1] or a == b or (math.isnan(a) and math.isnan(b)):
            return shown
    return shown


def _sample(t: torch.Tensor, start: int = 0, n: int = 6) -> str:
    flat = t.reshape(-1)[start : start + n].tolist()
    more = ", ..." if t.numel() > start + n else ""
    return "[" + ("..., " if start else "") + ", ".join(_fmt(v) for v in flat) + more + "]"


def _index(flat: int, shape: torch.Size) -> tuple[int, ...]:
    return tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), shape)) if len(shape) else ()


def difference(
    expected: Any,
    got: Any,
    *,
    atol: float | None = None,
    rtol: float | None = None,
    match_dtype: bool = True,
    at_least_float32: bool = False,
    accept: Sequence[Any] = (),
    what: str | None = None,
    inputs: tuple[str, torch.Tensor] | None = None,
) -> str | None:
    """None if ``got`` matches ``expected`` (elementwise, or any of the alternatives in ``accept``), else why not.

    ``expected`` may be a tensor, a float, or a tuple of them (compared item by item). ``accept`` holds other
    correct outputs (e.g. the same formula in another precision): each element may match any of them.
    ``at_least_float32`` (with ``match_dtype=False``): any float dtype is accepted except float16 and bfloat16,
    which are said to be too coarse instead of being reported as a list of rounding errors.
    ``inputs`` (name, tensor of the output's shape): the input each output element was computed from; the
    message quotes its value where the largest error is (a bucket is explained by its distance, not its index).
    ``what`` names the output in the message (default: "output", in the language spoken).
    """
    what = _("output") if what is None else what
    if isinstance(expected, tuple):
        if not isinstance(got, (tuple, list)) or len(got) != len(expected):
            return _("expected a tuple of {n} values, got {kind}").format(n=len(expected), kind=_kind(got))
        for i, (e, g) in enumerate(zip(expected, got, strict=True)):
            alts = [a[i] for a in accept]
            problem = difference(
                e,
                g,
                atol=atol,
                rtol=rtol,
                match_dtype=match_dtype,
                at_least_float32=at_least_float32,
                accept=alts,
                what=f"{what}[{i}]",
            )
            if problem:
                return problem
        return None
    if isinstance(expected, float):
        return _scalar_difference(expected, got, atol=atol, rtol=rtol, what=what)
    return _tensor_difference(
        expected,
        got,
        atol=atol,
        rtol=rtol,
        match_dtype=match_dtype,
        at_least_float32=at_least_float32,
        accept=accept,
        what=what,
        inputs=inputs,
    )


def _kind(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return _("a tensor of shape {shape}").format(shape=tuple(value.shape))
    return f"{type(value).__name__} {value!r}"[:200]


def _scalar_difference(
    expected: float, got: Any, *, atol: float | None, rtol: float | None, what: str
) -> str | None:
    if isinstance(got, torch.Tensor) and got.numel() == 1:
        return _(
            "{what}: expected a Python float, got a one-element tensor {got}; return tensor.item()"
        ).format(what=what, got=repr(got))
    if isinstance(got, bool) or not isinstance(got, (int, float)):
        return _("{what}: expected a Python float, got {kind}").format(what=what, kind=_kind(got))
    a = 1e-6 if atol is None else atol
    r = 1e-5 if rtol is None else rtol
    err = abs(float(got) - expected)
    if not math.isfinite(expected):  # inf matches only itself (its band would hold every value); NaN nothing
        wrong = float(got) != expected
    else:
        wrong = math.isnan(float(got)) or err > a + r * abs(expected)
    if wrong:
        shown = _fmt_apart(expected, float(got))
        return _("{what}: expected {expected}, got {got} (|error| {error}, tolerance {tolerance})").format(
            what=what, expected=shown[0], got=shown[1], error=_fmt(err), tolerance=_fmt(a + r * abs(expected))
        )
    return None


def _tensor_difference(
    expected: torch.Tensor,
    got: Any,
    *,
    atol: float | None,
    rtol: float | None,
    match_dtype: bool,
    at_least_float32: bool = False,
    accept: Sequence[Any],
    what: str,
    inputs: tuple[str, torch.Tensor] | None = None,
) -> str | None:
    if not isinstance(got, torch.Tensor):
        return _("{what}: expected a torch.Tensor, got {kind}").format(what=what, kind=_kind(got))
    if tuple(got.shape) != tuple(expected.shape):
        message = _("{what}: expected shape {expected}, got shape {got}").format(
            what=what, expected=tuple(expected.shape), got=tuple(got.shape)
        )
        reshaped = got.numel() == expected.numel() and got.device == expected.device and not got.is_complex()
        if reshaped and not _mismatch(expected, got.detach().reshape(expected.shape), atol, rtol).any():
            message += _(" (the right values in the wrong shape: return them as {expected})").format(
                expected=tuple(expected.shape)
            )
        return message
    if got.device != expected.device:
        return _(
            "{what}: expected a tensor on {expected} (the inputs' device), got one on {got}; "
            "create new tensors with device=<input>.device"
        ).format(what=what, expected=expected.device, got=got.device)
    exact = not expected.is_floating_point()
    if exact and (got.is_floating_point() or got.is_complex()):
        return _("{what}: expected integer values (dtype {expected}), got dtype {got}").format(
            what=what, expected=expected.dtype, got=got.dtype
        )
    if match_dtype and not exact and got.dtype != expected.dtype:
        return _(
            "{what}: expected dtype {expected} (the input's dtype), got {got}; "
            "compute in any precision you like but return .to(<input>.dtype)"
        ).format(what=what, expected=expected.dtype, got=got.dtype)
    if at_least_float32 and not exact and got.dtype in (torch.float16, torch.bfloat16):
        return _(
            "{what}: expected float32 (or float64) values, got {got}: half precision keeps only 2-3 "
            "significant digits, too few for this output; return float32"
        ).format(what=what, got=got.dtype)
    if got.is_complex():
        return _("{what}: expected real values, got dtype {got}; take the real part or view_as_real").format(
            what=what, got=got.dtype
        )
    bad = _mismatch(expected, got, atol, rtol)
    for alt in accept:
        if isinstance(alt, torch.Tensor) and alt.shape == expected.shape:
            bad &= _mismatch(alt.to(expected.device), got, atol, rtol)
    if not bad.any():
        return None
    e64, g64 = expected.double(), got.detach().double()
    n_bad, n = int(bad.sum()), bad.numel()
    a, r = _tol(expected.dtype, atol, rtol)
    coarser = got.dtype.is_floating_point and torch.finfo(got.dtype).eps > torch.finfo(expected.dtype).eps
    if coarser and not _mismatch(expected, got, *default_tolerance(got.dtype)).any():
        # right to the precision of the dtype returned, which is not the one asked for: say so, not "25.4782, got
        # 25.4782"
        return _(
            "{what}: expected {expected} values, got {got}: they agree with the reference to {got}'s precision "
            "(largest difference {error}), but {n_bad} of {n} are outside this output's tolerance (|got - "
            "expected| <= {atol} + {rtol} * |expected|); compute it in {expected} and return {expected}"
        ).format(
            what=what,
            expected=str(expected.dtype).removeprefix("torch."),
            got=str(got.dtype).removeprefix("torch."),
            error=_fmt(float((g64 - e64).abs().max())),
            n_bad=n_bad,
            n=n,
            atol=_fmt(a),
            rtol=_fmt(r),
        )
    err = (g64 - e64).abs().nan_to_num(nan=math.inf)
    err = torch.where(bad, err, torch.zeros_like(err))
    flat = int(err.reshape(-1).argmax())
    where = _index(flat, expected.shape)
    first = int(bad.reshape(-1).nonzero()[0])
    if inputs is not None and tuple(inputs[1].shape) == tuple(expected.shape):
        where = f"{where} ({inputs[0]} = {_fmt(inputs[1].reshape(-1)[flat].item())})"
    there = _fmt_apart(float(e64.reshape(-1)[flat]), float(g64.reshape(-1)[flat]))
    message = _(
        "{what}: {n_bad} of {n} values differ (tolerance |got - expected| <= {atol} + {rtol} * |expected|)\n"
        "    expected {expected}\n"
        "    got      {got}\n"
        "    largest error {error} at index {where}: expected {expected_there}, got {got_there}"
    ).format(
        what=what,
        n_bad=n_bad,
        n=n,
        atol=_fmt(a),
        rtol=_fmt(r),
        expected=_sample(e64, first),
        got=_sample(g64, first),
        error=_fmt(float(err.reshape(-1)[flat])),
        where=where,
        expected_there=there[0],
        got_there=there[1],
    )
    # the coarser grid first: a bfloat16 value is a float16 one too
    for low in (torch.bfloat16, torch.float16):
        # every value one of ``low``'s, and every difference within its rounding: computed in ``low`` (a wrong
        # formula's values are not all on its grid)
        rounded = got.dtype != low and not coarser and bool((got.detach().to(low).to(got.dtype) == got).all())
        if rounded and not _mismatch(expected, got, *default_tolerance(low)).any():
            message += "\n    " + _(
                "every difference is within {low}'s rounding (|got - expected| <= {atol} + {rtol} * |expected|): did a "
                "step of your computation run in {low}? keep every step in {dtype}"
            ).format(
                low=str(low).removeprefix("torch."),
                atol=_fmt(default_tolerance(low)[0]),
                rtol=_fmt(default_tolerance(low)[1]),
                dtype=str(got.dtype).removeprefix("torch."),
            )
            break
    if first:  # the values shown start where the first difference is
        message += "\n    " + _("(both lists from index {index}, the first value that differs)").format(
            index=_index(first, expected.shape)
        )
    broken = int((~torch.isfinite(g64) & torch.isfinite(e64)).sum())
    if broken:
        message += "\n    " + _(
            "{broken} of your values are NaN or infinite where the reference's are finite: look for an overflow "
            "(float16 holds at most 65504), a division by zero or the log of 0"
        ).format(broken=broken)
    return message


def _tol(dtype: torch.dtype, atol: float | None, rtol: float | None) -> tuple[float, float]:
    a, r = default_tolerance(dtype)
    return (a if atol is None else atol), (r if rtol is None else rtol)


def _mismatch(
    expected: torch.Tensor, got: torch.Tensor, atol: float | None, rtol: float | None
) -> torch.Tensor:
    """Boolean tensor: True where ``got`` is outside the tolerance around ``expected`` (NaN never matches, an
    infinity only itself)."""
    a, r = _tol(expected.dtype, atol, rtol)
    e, g = expected.double(), got.detach().double()
    # an infinite expected value matches only itself: its band a + r * |e| would be infinite (any value inside)
    same_inf = torch.isinf(e) & (e == g)
    close = torch.isfinite(e) & ((g - e).abs() <= a + r * e.abs())
    return ~(close | same_inf)


def first_difference(
    name: str,
    fn: Callable[..., Any],
    reference: Callable[..., Any],
    cases: Sequence[Case],
    *,
    mistakes: Mapping[str, Callable[..., Any]] | None = None,
    match_dtype: bool = True,
    at_least_float32: bool = False,
    accept: Callable[..., Sequence[Any]] | None = None,
    seed: int | None = None,
    elementwise_in: tuple[int, str] | None = None,
    error_hint: Callable[[Case, BaseException], str | None] | None = None,
) -> None:
    """Raise ``CheckFailed`` on the first case where ``fn`` differs from ``reference``; return None if none does.

    Args:
        name: the function's name as the student knows it (used in the message).
        mistakes: hint -> a known-wrong variant with the reference's signature. When the student's output
            matches a variant (within the case's tolerance) and not the reference, the hint is shown.
        at_least_float32: with ``match_dtype=False``, reject float16/bfloat16 outputs by name (see ``difference``).
        accept: ``accept(*args, **kwargs)`` -> other correct outputs for that case (see ``difference``).
        seed: the seed the cases were drawn from, quoted so that a failing hidden case can be reproduced.
        elementwise_in: (position, name) of the argument the output is elementwise in: a failure quotes its
            value where the largest error is.
        error_hint: ``error_hint(case, err)`` -> the hint for the error the student's function raised on that case
            (a known mistake that raises, e.g. indexing the batch dimension), or None.

    A case whose values are right in the wrong dtype is reported only when no later case has wrong values: a
    function with two mistakes is told the one in its numbers first (often a named one, with its hint), whichever
    case the draw put first.
    """
    wrong_dtype: str | None = None  # the message for the first case right but for its dtype
    for i, case in enumerate(cases):
        expected = call(reference, case)
        args, kwargs = private_copy(case.args), private_copy(case.kwargs)
        try:
            got = fn(*args, **kwargs)
        except CheckFailed:
            raise
        # the student's code raised: that is a failed case, reported with its arguments
        except Exception as err:
            did = getattr(err, "reported_as", None) or _("raised {error}").format(
                error=error_text(err) + where_it_raised(err)
            )
            if _bare_stub(err):  # a bare stub (the course's stubs say what to do themselves)
                did += "\n  " + _(
                    "(the answer cell still holds the stub: replace its `raise NotImplementedError(...)` line with your code)"
                )
            hint = error_hint(case, err) if error_hint is not None else None
            raise CheckFailed(
                _header(name, case, i, len(cases), seed, what=_("fails"))
                + "\n  "
                + _("your function {did}").format(did=did)
                + ("\n  " + _("hint: {hint}").format(hint=hint) if hint else "")
            ) from err
        alternatives = call(accept, case) if accept is not None else ()
        tol = {"atol": case.atol, "rtol": case.rtol}
        problem = difference(
            expected,
            got,
            match_dtype=match_dtype,
            at_least_float32=at_least_float32,
            accept=alternatives,
            inputs=None if elementwise_in is None else (elementwise_in[1], case.args[elementwise_in[0]]),
            **tol,
        )
        changed = _changed_inputs(case, args, kwargs)
        if problem is None and changed is None:
            continue
        if problem is None:
            raise CheckFailed(
                _header(name, case, i, len(cases), seed, what=_("changes its input in place"))
                + "\n  "
                + _(
                    "the output is right, but the call changed {changed}. The caller still needs its tensors: work "
                    "on new tensors (y = x * 2, x.clone()), not in-place operations (x *= 2, x[...] = ..., x.add_(...))"
                ).format(changed=changed)
            )
        message = _header(name, case, i, len(cases), seed) + "\n  " + problem
        if changed is None and match_dtype and _values_agree(expected, got, alternatives, tol):
            wrong_dtype = wrong_dtype or message
            continue
        if changed is not None:
            message += "\n  " + _("(your function also changed its input in place: {changed})").format(
                changed=changed
            )
        hints = _explaining(mistakes or {}, case, expected, got)
        # a case can fit several mistakes (shuffled frequencies whose first comes out lowest): the later cases
        # on which the function is wrong too keep only the mistakes that fit them as well
        for later in cases[i + 1 :] if len(hints) > 1 else ():
            try:
                their = fn(*private_copy(later.args), **private_copy(later.kwargs))
            except Exception:
                break
            expected_later = call(reference, later)
            tol_later = {"atol": later.atol, "rtol": later.rtol}
            if difference(expected_later, their, match_dtype=False, **tol_later) is None:
                continue
            hints = _explaining({h: mistakes[h] for h in hints}, later, expected_later, their) or hints
            if len(hints) == 1:
                break
        if hints:
            message += "\n  " + _("hint: {hint}").format(hint=hints[0])
        raise CheckFailed(message)
    if wrong_dtype is not None:
        raise CheckFailed(wrong_dtype)


def _values_agree(expected: Any, got: Any, accept: Sequence[Any], tol: dict[str, float | None]) -> bool:
    """Whether ``got`` holds the expected values (shape and device too) in whatever dtype."""
    return difference(expected, got, match_dtype=False, accept=accept, **tol) is None


def _explaining(mistakes: Mapping[str, Callable[..., Any]], case: Case, expected: Any, got: Any) -> list[str]:
    """The hints of the ``mistakes`` whose variant gives ``got`` on ``case`` where the reference does not."""
    tol = {"atol": case.atol, "rtol": case.rtol}
    hints = []
    for hint, wrong in mistakes.items():
        try:
            variant = call(wrong, case)
        except Exception:  # a variant that cannot run on this case cannot explain it
            continue
        explains = difference(variant, got, match_dtype=False, **tol) is None
        if explains and difference(expected, variant, match_dtype=False, **tol) is not None:
            hints.append(hint)
    return hints


def _header(
    name: str,
    case: Case,
    index: int,
    total: int,
    seed: int | None,
    *,
    what: str | None = None,
) -> str:
    """The first lines of a failure: ``{name} {what} on case {i} of {n}`` and the call; ``what`` defaults to
    "differs from the reference"."""
    what = _("differs from the reference") if what is None else what
    drawn = _(", cases drawn with seed {seed}").format(seed=seed) if seed is not None else ""
    return (
        _("{name} {what} on case {number} of {total}{drawn}:").format(
            name=name, what=what, number=index + 1, total=total, drawn=drawn
        )
        + "\n  "
        + describe_call(name, case)
    )


def _bare_stub(err: BaseException) -> bool:
    """Whether the student's function raised a bare ``NotImplementedError`` (an untouched stub), here or in the
    child."""
    if isinstance(err, StudentError):
        return err.raised and str(err) == "NotImplementedError"
    return error_text(err) == "NotImplementedError"


class StudentError(Exception):
    """The student's function raised (the message is the child's ``TypeName: message`` text, ``types`` the names of
    its exception's classes, most derived first), or, with ``raised=False``, did something the grader refuses (the
    message says what it did: "returned ...")."""

    def __init__(self, message: str, *, raised: bool = True, types: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.raised, self.types = raised, types

    @property
    def reported_as(self) -> str:
        """What the student's function did, as it follows "your function " in a message."""
        return _("raised {error}").format(error=self) if self.raised else str(self)
