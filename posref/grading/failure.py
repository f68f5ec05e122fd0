"""What a failed check says, and why it failed in a form that can be counted.

``CheckFailed`` is the failure a student reads (its message, in the student's language); its ``cause`` is the same
failure for the instructor's statistics (``python -m autograder stats``): a ``Cause`` whose ``kind`` is one of
``KINDS`` and, for a named mistake, whose ``detail`` is the hint's key in posref's catalogs (the English hint, the
same in every edition), so that one mistake is counted once across English, zh-TW and zh-CN. The cause is set where
the message is made (``report.first_difference``, a checker's own ``raise``, the score of record's verdicts), never
read back from the message's text.

``StudentError`` is what the student's function did in the score of record's child (it raised, or answered
something the grader refuses), ``ChildFailed`` that the child itself failed (it ended, hung or answered unreadably),
each with the cause that goes with it.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass

from posref.grading.frames import shown, students
from posref.i18n import _, msgid

# every kind of failure, and what it means
KINDS = {
    "mistake": "a named mistake: the detail is its hint's catalog key",
    "raised": "the function raised an exception: the detail is its type",
    "stub": "the answer cell still holds the stub (NotImplementedError)",
    "timeout": "a call or cell gave no answer in time (an infinite loop?)",
    "crashed": "the process running the answer ended (a limit, a signal, an exit) or answered unreadably",
    "rule": "the answer used what the notebook's rules forbid",
    "slow": "too slow for the speed budget",
    "timed-result": "a wrong result while being timed",
    "not-timed": "not timed: the function fails its correctness check",
    "shape": "a result of the wrong shape",
    "dtype": "a result of the wrong dtype",
    "device": "a result on the wrong device",
    "type": "a result that is not what was asked for (not a tensor, not a float, complex, a wrong tuple)",
    "values": "wrong values, no named mistake fits them",
    "in-place": "the function changed its input in place",
    "not-defined": "the function is not defined (its cell did not run or does not define it)",
    "not-run": "the answer cells could not be run",
    "out-of-time": "the time for grading the notebook ran out",
    "unreadable": "the function gave back something the grader does not read or could not compare",
    "grader-error": "the grader's own failure",
    "unknown": "a failure whose cause was not said",
}
MAX_TYPE_NAME = 100  # characters of an exception's type name kept as a cause's detail


@dataclass(frozen=True)
class Cause:
    """Why a check failed: ``kind`` one of ``KINDS``; ``detail`` the named mistake's catalog key (``mistake``) or the
    exception's type (``raised``), else empty."""

    kind: str
    detail: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"{self.kind!r} is not a kind of failure: expected one of {', '.join(KINDS)}")

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}" if self.detail else self.kind

    @classmethod
    def mistake(cls, hint: str) -> Cause:
        """The named mistake whose hint is ``hint``: its English key, or ``hint`` said in the language spoken now
        (a checker's ``_("...")``, whose key is found in the catalog)."""
        return cls("mistake", msgid(hint))

    @classmethod
    def raised(cls, type_name: str) -> Cause:
        """An exception of ``type_name`` (the child's words: a Python name, dotted or not and in any script, of at
        most ``MAX_TYPE_NAME`` characters, else ``?``); a ``NotImplementedError`` is the stub."""
        if type_name == "NotImplementedError":
            return cls("stub")
        named = len(type_name) <= MAX_TYPE_NAME and all(part.isidentifier() for part in type_name.split("."))
        return cls("raised", type_name if named else "?")

    @classmethod
    def from_json(cls, data: object) -> Cause:
        """A cause as a record keeps it (``{"kind": ..., "detail": ...}``); ``unknown`` for anything else (a record
        from before causes, or one a hand changed)."""
        if isinstance(data, dict) and data.get("kind") in KINDS and isinstance(data.get("detail", ""), str):
            return cls(data["kind"], data.get("detail", "")[:2000])
        return cls("unknown")


class CheckFailed(AssertionError):
    """A student's function differs from the reference; the message says how, on which case, and why if known;
    ``cause`` says it for counting (``Cause``; ``unknown`` where the raiser said none).

    In a notebook, IPython shows it through ``_render_traceback_``: the message first, then only the student's
    own frames (the test cell's call, and where the student's function raised), none of posref's, each said in the
    student's language (``frames.shown``).
    """

    def __init__(self, *args: object, cause: Cause | None = None) -> None:
        super().__init__(*args)
        self.cause = cause or Cause("unknown")

    def _render_traceback_(self) -> list[str]:
        frames = []
        for err in (self.__cause__, self):  # where the student's function raised, then the check's call
            if err is not None:
                tb = traceback.extract_tb(err.__traceback__)
                frames += [f for f in tb if students(f.filename)]
        lines = [f"{type(self).__name__}: {self}"]
        if frames:
            lines += ["", _("Your code, where it was called (posref's own frames left out):")]
            lines += shown(frames)
        return lines


class StudentError(Exception):
    """The student's function raised (the message is the child's ``TypeName: message`` text, ``types`` the names of
    its exception's classes, most derived first), or, with ``raised=False``, did something the grader refuses (the
    message says what it did: "returned ..."; ``kind`` the ``Cause``'s kind of that)."""

    def __init__(
        self, message: str, *, raised: bool = True, types: tuple[str, ...] = (), kind: str = "unreadable"
    ) -> None:
        super().__init__(message)
        self.raised, self.types, self.kind = raised, types, kind

    @property
    def reported_as(self) -> str:
        """What the student's function did, as it follows "your function " in a message."""
        return _("raised {error}").format(error=self) if self.raised else str(self)

    @property
    def cause(self) -> Cause:
        if not self.raised:
            return Cause(self.kind)
        return Cause.raised(self.types[0] if self.types else "?")


class ChildFailed(Exception):
    """The child process ended, hung or answered something unreadable; ``reason`` says which, in words, and
    ``cause`` for counting (``timeout`` where it hung, else ``crashed``)."""

    kind = "crashed"

    def __init__(self, reason: str, *, hung: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        if hung:
            self.kind = "timeout"

    @property
    def reported_as(self) -> str:
        """What the student's function did, as it follows "your function " in a message."""
        return _("gave nothing back: {reason}").format(reason=self.reason)

    @property
    def cause(self) -> Cause:
        return Cause(self.kind)


class BudgetSpent(ChildFailed):
    """The notebook's whole grading time (``Child.deadline``) ran out: no cell is to blame."""

    kind = "out-of-time"
