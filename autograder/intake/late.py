"""Late work: when each submission came in, each assignment's due date, and nbgrader's late penalty.

A submission's time is nbgrader's ``timestamp.txt`` in its folder (``submitted/<student>/<assignment>/``),
written by ``import`` (``submissions.py``) or by nbgrader's exchange (``nbgrader collect``). Due dates come
from the course configuration (``c.CourseDueDates.due_dates`` in ``nbgrader_config.py``) and are entered in
nbgrader's gradebook, where nbgrader counts ``total_seconds_late``. The penalty is nbgrader's
``LateSubmissionPlugin`` named there (``c.AssignLatePenalties.plugin_class``).

nbgrader assigns the penalty inside its autograde step, before the score of record is written (``PendingScores``
leaves every grade empty then, so that penalty is taken from a score of 0): ``assign_penalties`` runs nbgrader's
own ``AssignLatePenalties`` again once the scores are in the gradebook.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from pathlib import Path

import nbformat
from nbgrader.plugins import LateSubmissionPlugin
from nbgrader.utils import parse_utc
from traitlets import Float

from autograder import course
from autograder.course import aware, due_date, enter_due_date, parse_time  # noqa: F401  (read from here)

TIMESTAMP = "timestamp.txt"  # nbgrader's name (CourseDirectory.get_existing_timestamp)


class PenaltyPerHour(LateSubmissionPlugin):
    """nbgrader's late penalty plugin for this course: a fraction of the notebook's score for each started hour
    late, and the whole score from ``zero_after_hours`` on (0: never)."""

    fraction_per_hour = Float(0.01, help="fraction of the score lost per started hour late").tag(config=True)
    zero_after_hours = Float(72.0, help="hours late from which the score is 0 (0: never)").tag(config=True)

    def late_submission_penalty(
        self, student_id: str, score: float, total_seconds_late: float
    ) -> float | None:
        if total_seconds_late <= 0 or not score:
            return None
        hours = total_seconds_late / 3600
        if self.zero_after_hours and hours >= self.zero_after_hours:
            return score
        return min(score, score * self.fraction_per_hour * math.ceil(hours))


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
            text = f.read(200).decode("utf-8").strip()
        return aware(parse_utc(text))
    except (ValueError, OverflowError, OSError) as err:
        raise ValueError(
            f"submitted/{folder.parent.name}/{folder.name}/{TIMESTAMP} cannot be read as a time "
            f"({type(err).__name__}: {str(err)[:80]}): write one such as '2026-10-05 23:59:00 UTC' there"
        ) from None


def write_timestamp(folder: Path, when: datetime) -> None:
    """nbgrader's ``timestamp.txt`` in the format its exchange writes (UTC)."""
    (folder / TIMESTAMP).write_text(when.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f %Z"))


def seconds_late(submitted: datetime | None, due: datetime | None) -> float:
    if submitted is None or due is None:
        return 0.0
    return max(0.0, (submitted - due).total_seconds())


def assign_penalties(config, assignment: str, student: str, notebooks: list[str]) -> dict[str, float | None]:
    """nbgrader's ``AssignLatePenalties`` for each notebook (by name, without ``.ipynb``) of a submission whose
    scores of record are in the gradebook: the penalty nbgrader stores (``SubmittedNotebook.
    late_submission_penalty``), computed from those scores. Returns notebook -> penalty (None: none)."""
    from nbgrader.preprocessors import AssignLatePenalties

    from autograder import course

    penalties = {}
    for notebook in notebooks:
        resources = {"nbgrader": {"notebook": notebook, "assignment": assignment, "student": student,
                                  "db_url": course.gradebook_url()}}  # fmt: skip
        AssignLatePenalties(config=config).preprocess(nbformat.v4.new_notebook(), resources)
        with course.gradebook() as gb:
            penalties[notebook] = gb.find_submission_notebook(
                notebook, assignment, student
            ).late_submission_penalty
    return penalties


def plugin_penalty(config, student: str, score: float | None, late: float) -> float | None:
    """The configured plugin's penalty where nbgrader's gradebook has no row for the notebook (nbgrader could
    not take the submission), held to [0, score] as ``AssignLatePenalties`` holds it."""
    from nbgrader.preprocessors import AssignLatePenalties

    if late <= 0 or score is None:
        return None
    step = AssignLatePenalties(config=config)
    step.init_plugin()
    penalty = step.plugin_inst.late_submission_penalty(student, score, late)
    return None if penalty is None else min(max(penalty, 0.0), score)


def penalise(assignment: str, student: str, notebooks: list[dict], in_gradebook: bool) -> dict:
    """After the score of record is in the gradebook: each notebook record (``Record.to_json()``) gets its
    ``late_penalty`` (points, None: none), nbgrader's own where the gradebook has the notebook
    (``in_gradebook``), the plugin's otherwise. Returns the submission's ``submitted`` (ISO time, None: not
    known) and ``seconds_late``."""
    config = course.config()
    submitted = read_timestamp(course.course_dir() / "submitted" / student / assignment)
    late = seconds_late(submitted, due_date(assignment))
    graded = [r for r in notebooks if r["status"] == "graded"]
    stored = (
        assign_penalties(config, assignment, student, [Path(r["notebook"]).stem for r in graded])
        if (in_gradebook and late > 0)
        else {}
    )
    for record in notebooks:
        if record["status"] != "graded":
            record["late_penalty"] = None
        elif in_gradebook:
            record["late_penalty"] = stored.get(Path(record["notebook"]).stem)
        else:
            record["late_penalty"] = plugin_penalty(config, student, record["score"], late)
    return {"submitted": None if submitted is None else submitted.isoformat(), "seconds_late": late}
