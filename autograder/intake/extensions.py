"""Extensions: more time for one student on one assignment, granted by the instructor and kept in the course folder.

``<course>/extensions.json`` (the instructor's file; ``python -m autograder extend`` writes it, a hand may edit it)::

    {"version": 1, "extensions": {"02_absolute": {"alice": {"hours": 48.0, "granted": "2026-10-06T08:00:00+00:00"}}}}

An extension is hours after the assignment's due date (nbgrader's own model, ``SubmittedAssignment.extension``:
a due date moved in ``nbgrader_config.py`` moves the extension with it). Nothing a student hands in says anything
about it. The student's due date is the assignment's plus the extension: the late penalty is 0 before it and
counted from it after (``grading/penalty.py``).
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from pathlib import Path

from autograder.intake.versioned import VersionedFile, locked

FILE = "extensions.json"
VERSION = 1
MAX_HOURS = 24 * 366  # an extension of more than a year is a typing mistake


def _granted(students: object) -> bool:
    """An assignment's entry: student -> hours (0 to ``MAX_HOURS``) and when they were granted."""
    return isinstance(students, dict) and all(
        isinstance(e, dict) and _hours_problem(e.get("hours")) is None and isinstance(e.get("granted"), str)
        for e in students.values()
    )


EXTENSIONS = VersionedFile(
    what="the course's extensions",
    field="extensions",
    version=VERSION,
    entry_ok=_granted,
    expected=f"per assignment and student, hours (0-{MAX_HOURS}) and granted",
    remedy="fix it, or remove it and grant them again",
)


def read(course: Path) -> dict[str, dict[str, dict]]:
    """assignment -> student -> {hours, granted}; ValueError, saying what is wrong, for a file that is not one."""
    return EXTENSIONS.read(course / FILE)


def _hours_problem(hours: object) -> str | None:
    if isinstance(hours, bool) or not isinstance(hours, int | float) or not math.isfinite(hours):
        return f"{hours!r} is not a number of hours"
    if not 0 <= hours <= MAX_HOURS:
        return f"{hours:g} hours is not from 0 to {MAX_HOURS}"
    return None


def extension(course: Path, assignment: str, student: str) -> timedelta | None:
    """The student's extension on the assignment; None where there is none (ValueError: see ``read``)."""
    entry = read(course).get(assignment, {}).get(student)
    return None if entry is None or not entry["hours"] else timedelta(hours=entry["hours"])


def due_for(due: datetime | None, extended: timedelta | None) -> datetime | None:
    """A student's due date: the assignment's, ``extended``; None where the assignment has none."""
    return None if due is None else due + (extended or timedelta())


def grant(course: Path, assignment: str, student: str, hours: float) -> None:
    """``student``'s extension on ``assignment`` is ``hours`` from now on (0: none), replacing an earlier one
    (extensions do not add up, as nbgrader's do not). ValueError for hours out of bounds or a file that cannot be
    read; held under a lock, written whole and renamed over the old one."""
    problem = _hours_problem(hours)
    if problem is not None:
        raise ValueError(problem)
    path = course / FILE
    with locked(path):
        extensions = read(course)
        students = extensions.setdefault(assignment, {})
        if hours:
            granted = datetime.now(timezone.utc).isoformat(timespec="seconds")
            students[student] = {"hours": float(hours), "granted": granted}
        else:
            students.pop(student, None)
        EXTENSIONS.write(path, {a: s for a, s in extensions.items() if s})
