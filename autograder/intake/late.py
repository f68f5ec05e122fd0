"""Late work's facts: when each submission came in, and each assignment's due date.

A submission's time is nbgrader's ``timestamp.txt`` in its folder (``submitted/<student>/<assignment>/``),
written by ``import`` (``submissions.py``) or by nbgrader's exchange (``nbgrader collect``). Due dates come
from the course configuration (``c.CourseDueDates.due_dates`` in ``nbgrader_config.py``) and are entered in
nbgrader's gradebook, where nbgrader counts ``total_seconds_late``. The penalty taken for it is grading's
(``autograder/grading/penalty.py``).
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from traitlets import Dict
from traitlets.config import Configurable

from autograder import course

TIMESTAMP = "timestamp.txt"  # nbgrader's name (CourseDirectory.get_existing_timestamp)


def read_timestamp(folder: Path) -> datetime | None:
    """The time in a submission folder's ``timestamp.txt`` (UTC), None without one; ValueError, saying what to
    write there, for one that cannot be read as a time (not a file, unreadable, not text, too long, no time)."""
    path = folder / TIMESTAMP
    if not (path.exists() or path.is_symlink()):
        return None
    try:
        if path.is_symlink() or not path.is_file():
            raise ValueError("it is not a file")
        with open(path, "rb") as f:
            data = f.read(200)
    except (ValueError, OSError) as err:
        raise _unreadable(folder, err) from None
    return timestamp_in(folder, data)


def timestamp_in(folder: Path, data: bytes) -> datetime:
    """The time (UTC) that ``data``, the bytes of the ``timestamp.txt`` of the submission ``folder``, says (its
    first 200 bytes are read); ValueError, saying what to write there, where they say none."""
    from nbgrader.utils import parse_utc

    try:
        return aware(parse_utc(data[:200].decode("utf-8").strip()))
    except (ValueError, OverflowError) as err:
        raise _unreadable(folder, err) from None


def _unreadable(folder: Path, err: Exception) -> ValueError:
    return ValueError(
        f"submitted/{folder.parent.name}/{folder.name}/{TIMESTAMP} cannot be read as a time "
        f"({type(err).__name__}: {str(err)[:80]}): write one such as '2026-10-05 23:59:00 UTC' there"
    )


def write_timestamp(folder: Path, when: datetime) -> None:
    """nbgrader's ``timestamp.txt`` in the format its exchange writes (UTC)."""
    (folder / TIMESTAMP).write_text(when.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f %Z"))


def seconds_late(submitted: datetime | None, due: datetime | None) -> float:
    """Seconds from the due date to the hand-in: 0 when on time or when either is not known."""
    if submitted is None or due is None:
        return 0.0
    return max(0.0, (submitted - due).total_seconds())


# Due dates


class CourseDueDates(Configurable):
    """Each assignment's due date, in ``nbgrader_config.py``."""

    due_dates = Dict(
        help="assignment -> due date, a time with its zone, e.g. '2026-10-05 23:59:00 +02:00' or '... UTC'; "
        "an assignment not listed keeps the due date of nbgrader's gradebook (`nbgrader db assignment add "
        "NAME --duedate=...`), or has none (never late)"
    ).tag(config=True)


def aware(when: datetime) -> datetime:
    """nbgrader's UTC times are naive: the same time, marked UTC."""
    return when.replace(tzinfo=timezone.utc) if when.tzinfo is None else when.astimezone(timezone.utc)


def parse_time(text: str) -> datetime:
    """A time typed by an instructor (``--timestamp``, a due date): any form nbgrader reads; without a zone,
    UTC (nbgrader's rule)."""
    from nbgrader.utils import parse_utc

    try:
        return aware(parse_utc(text))
    except (ValueError, OverflowError) as err:
        raise SystemExit(
            f"{text!r} is not a time: write one such as '2026-10-05 23:59:00 UTC' or '2026-10-05T23:59+02:00'"
        ) from err


def configured_due_dates(config) -> dict[str, datetime]:
    return {a: parse_time(str(t)) for a, t in CourseDueDates(config=config).due_dates.items()}


def due_date(assignment: str) -> datetime | None:
    """The assignment's due date (UTC): the configuration's, else the gradebook's, else None."""
    from nbgrader.api import MissingEntry

    configured = configured_due_dates(course.config()).get(assignment)
    if configured is not None or not course.has_gradebook():
        return configured
    with course.gradebook() as gb:
        try:
            when = gb.find_assignment(assignment).duedate
        except MissingEntry:
            return None
    return None if when is None else when.replace(tzinfo=timezone.utc)


def enter_due_date(assignment: str) -> datetime | None:
    """``assignment`` in nbgrader's gradebook (where nbgrader counts how late a submission is), with the
    configuration's due date when it gives one; otherwise the gradebook's due date, if any, stays. Returns the
    due date now in the gradebook (UTC; None: none), what ``due_date`` would read after it."""
    when = configured_due_dates(course.config()).get(assignment)
    with course.gradebook() as gb:
        entered = gb.update_or_create_assignment(
            assignment, **({} if when is None else {"duedate": when.replace(tzinfo=None)})
        ).duedate
    return None if entered is None else entered.replace(tzinfo=timezone.utc)
