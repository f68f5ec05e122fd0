"""Checking a student's function against the reference on drawn cases, and reporting the first case that differs.

``first_difference`` is the loop every checker shares: for each drawn ``Case`` it calls the reference and the student's
function on private copies of the arguments, compares their outputs (``difference.py``: shape, dtype, device, then
values within a tolerance), and on the first difference (one in dtype alone only when no case differs in its values)
raises ``CheckFailed`` naming the case and what differs, with a hint when the student's output equals a known-wrong
variant (the variant is computed and compared, never guessed). A function that raises, or that changes its input in
place, fails its case too, in words: what it raised and on which line of theirs, what it changed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from posref.grading.difference import difference, differs, same_values
from posref.grading.failure import Cause, CheckFailed, StudentError
from posref.grading.frames import where_it_raised
from posref.i18n import _


@dataclass
class Case:
    """One call: ``fn(*args, **kwargs)``, a readable description of it, and its tolerance.

    ``atol``/``rtol`` bound ``|got - expected| <= atol + rtol * |expected|`` elementwise; ``None`` picks a default
    from the dtype of the expected output (``difference.default_tolerance``).
    """

    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    label: str = ""
    atol: float | None = None
    rtol: float | None = None


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


def raised_a(err: BaseException, kind: type[BaseException]) -> bool:
    """Whether ``err`` is a ``kind`` (an ``IndexError``...), raised here or, as a ``StudentError``'s classes say, in
    the child."""
    return isinstance(err, kind) or kind.__name__ in getattr(err, "types", ())


def error_text(err: BaseException) -> str:
    """``TypeName: message``, or the type's name alone for an exception without a message."""
    return f"{type(err).__name__}: {err}" if str(err) else type(err).__name__


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
    # the cause of each failure (``failure.Cause``) is said here, beside its message
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
                + ("\n  " + _("hint: {hint}").format(hint=hint) if hint else ""),
                cause=Cause.mistake(hint) if hint else _raised_cause(err),
            ) from err
        alternatives = call(accept, case) if accept is not None else ()
        tol = {"atol": case.atol, "rtol": case.rtol}
        found = differs(
            expected,
            got,
            match_dtype=match_dtype,
            at_least_float32=at_least_float32,
            accept=alternatives,
            inputs=None if elementwise_in is None else (elementwise_in[1], case.args[elementwise_in[0]]),
            **tol,
        )
        kind, problem = found or (None, None)
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
                ).format(changed=changed),
                cause=Cause("in-place"),
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
        raise CheckFailed(message, cause=Cause.mistake(hints[0]) if hints else Cause(kind))
    if wrong_dtype is not None:
        raise CheckFailed(wrong_dtype, cause=Cause("dtype"))


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


def _raised_cause(err: BaseException) -> Cause:
    """The cause of an error the student's function raised: the one the grader's own error says (the child's
    ``StudentError``, a ``ChildFailed`` that hung or ended), else its exception's type (``stub`` for a
    ``NotImplementedError``)."""
    cause = getattr(err, "cause", None)
    return cause if isinstance(cause, Cause) else Cause.raised(type(err).__name__)


def _bare_stub(err: BaseException) -> bool:
    """Whether the student's function raised a bare ``NotImplementedError`` (an untouched stub), here or in the
    child."""
    if isinstance(err, StudentError):
        return err.raised and str(err) == "NotImplementedError"
    return error_text(err) == "NotImplementedError"
