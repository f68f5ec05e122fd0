"""nbgrader's late penalty on the score of record: this course's plugin, and the penalty assigned again once the
scores are in the gradebook.

The penalty is nbgrader's ``LateSubmissionPlugin`` named in ``nbgrader_config.py``
(``c.AssignLatePenalties.plugin_class``); how late a submission is, the ``Submission`` says (its hand-in time
and due date, read once by ``autograder/intake/submission.py``).
nbgrader assigns the penalty inside its autograde step, before the score of record is written (``PendingScores``
leaves every grade empty then, so that penalty is taken from a score of 0): ``assign_penalties`` runs nbgrader's
own ``AssignLatePenalties`` again once the scores are in the gradebook.

Extensions (``intake/extensions.py``, ``python -m autograder extend``): the penalty is counted from the student's
due date, the assignment's plus their extension, which is entered in the gradebook where nbgrader counts it
(``SubmittedAssignment.extension``); the record keeps the due date it was counted against. ``extend`` counts a
graded student's penalty again at once (``reassess``: the gradebook and the record, no notebook graded again), and
``export`` does for a record whose due date is not the student's any more (an extension edited by hand).
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta
from pathlib import Path

import nbformat
from nbgrader.plugins import LateSubmissionPlugin
from traitlets import Float

from autograder import course
from autograder.intake import extensions, late
from autograder.intake.submission import Submission


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


def assign_penalties(
    config, assignment: str, student: str, notebooks: list[str], extended: timedelta | None
) -> dict[str, float | None]:
    """nbgrader's ``AssignLatePenalties`` for each notebook (by name, without ``.ipynb``) of a submission whose
    scores of record are in the gradebook, with the student's extension (``extended``, None: none) entered where
    nbgrader counts how late the submission is (``SubmittedAssignment.extension``): the penalty nbgrader stores
    (``SubmittedNotebook.late_submission_penalty``), computed from those scores. Returns notebook -> penalty
    (None: none)."""
    from nbgrader.preprocessors import AssignLatePenalties

    with course.gradebook() as gb:
        gb.find_submission(assignment, student).extension = extended
        gb.db.commit()
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


def penalise(submission: Submission, notebooks: list[dict], in_gradebook: bool, config) -> dict:
    """After the score of record is in the gradebook: each notebook record (``Record.to_json()``) of
    ``submission`` gets its ``late_penalty`` (points, None: none), counted from the student's due date (the
    assignment's, and their extension: ``intake/extensions.py``, both read with the submission), nbgrader's own
    where the gradebook has the notebook (``in_gradebook``), the plugin's otherwise, as the course's nbgrader
    configuration ``config`` names it. Returns the submission's ``submitted`` (ISO time, None: not known),
    ``seconds_late`` and the ``due`` date they were counted against (ISO, None: none)."""
    return _penalise(
        config, submission.assignment, submission.student, submission.submitted, submission.extension,
        submission.due, submission.seconds_late, notebooks, in_gradebook,
    )  # fmt: skip


def _penalise(
    config,
    assignment: str,
    student: str,
    submitted: datetime | None,
    extended: timedelta | None,
    due: datetime | None,
    seconds: float,
    notebooks: list[dict],
    in_gradebook: bool,
) -> dict:
    graded = [Path(r["notebook"]).stem for r in notebooks if r["status"] == "graded"]
    # run again even when on time: a penalty stored before an extension was granted is taken back
    stored = (
        assign_penalties(config, assignment, student, graded, extended) if in_gradebook and graded else {}
    )
    for record in notebooks:
        if record["status"] != "graded":
            record["late_penalty"] = None
        elif in_gradebook:
            record["late_penalty"] = stored.get(Path(record["notebook"]).stem)
        else:
            record["late_penalty"] = plugin_penalty(config, student, record["score"], seconds)
    return {
        "submitted": None if submitted is None else submitted.isoformat(),
        "seconds_late": seconds,
        "due": None if due is None else due.isoformat(),
    }


def outdated(record: dict, due: datetime | None, extended: timedelta | None) -> bool:
    """Whether a graded record's late penalty was counted against another due date than the student's now
    (``due``: an extension granted, changed or removed, by ``extend`` or by hand; the assignment's due date moved).
    A record from before records kept their due date is outdated where the student has an extension."""
    if record.get("error") or not record.get("notebooks"):
        return False
    if "due" not in record:
        return extended is not None
    return record["due"] != (None if due is None else due.isoformat())


def reassess(assignment: str, student: str) -> tuple[dict[str, float | None], dict] | None:
    """The late penalty of the student's record counted again from their due date now, in the gradebook and the
    record (written back), without grading anything again: after an extension. Returns each notebook's penalty
    before, and the record; None where the student has no graded record."""
    from nbgrader.api import MissingEntry

    path = course.course_dir() / "records" / assignment / f"{student}.json"
    if not path.exists():
        return None
    record = json.loads(path.read_text())
    if record.get("error") or not record.get("notebooks"):
        return None
    before = {nb["notebook"]: nb.get("late_penalty") for nb in record["notebooks"]}
    graded = [Path(nb["notebook"]).stem for nb in record["notebooks"] if nb["status"] == "graded"]
    try:  # as record_student found it: nbgrader's gradebook holds the notebooks, unless nbgrader refused them
        with course.gradebook() as gb:
            for notebook in graded:
                gb.find_submission_notebook(notebook, assignment, student)
        in_gradebook = True
    except MissingEntry:
        in_gradebook = False
    submitted = None if record.get("submitted") is None else datetime.fromisoformat(record["submitted"])
    extended = extensions.extension(course.course_dir(), assignment, student)
    due = extensions.due_for(late.due_date(assignment), extended)
    seconds = late.seconds_late(submitted, due)
    config, notebooks = course.config(), record["notebooks"]
    record.update(
        _penalise(config, assignment, student, submitted, extended, due, seconds, notebooks, in_gradebook)
    )
    course.replace_file(path, json.dumps(record, indent=1).encode())
    return before, record


def extend(student: str, assignment: str, hours: float) -> list[str]:
    """``python -m autograder extend``: the extension granted (``extensions.grant``; 0 hours: taken back) and the
    student's late penalty counted again where they are graded. Returns the lines to print; SystemExit for a
    student id that is not one, an assignment without a due date, or hours out of bounds."""
    problem = course.student_id_problem(student)
    if problem is not None:
        raise SystemExit(problem)
    course.require_assignment(assignment)
    due = late.due_date(assignment)
    if due is None:
        raise SystemExit(
            f"{assignment} has no due date: an extension is time after one (set it in nbgrader_config.py, "
            "c.CourseDueDates.due_dates)"
        )
    try:
        extensions.grant(course.course_dir(), assignment, student, hours)
    except ValueError as err:
        raise SystemExit(f"no extension granted: {err}") from None
    until = extensions.due_for(due, timedelta(hours=hours))
    lines = [f"{student}: {assignment} due {until:%Y-%m-%d %H:%M} UTC"
             + (f" ({hours:g} h after {due:%Y-%m-%d %H:%M} UTC)" if hours else " (no extension)")]  # fmt: skip
    reassessed = reassess(assignment, student)
    if reassessed is None:
        return [
            *lines,
            f"  no graded record yet: autograde counts the late penalty from {until:%Y-%m-%d %H:%M} UTC",
        ]
    before, record = reassessed
    for nb in record["notebooks"]:
        if nb["status"] == "graded":
            was, now = (f"{p or 0:g}" for p in (before.get(nb["notebook"]), nb["late_penalty"]))
            lines.append(f"  {nb['notebook']}: late penalty {now} (was {was}), without grading it again")
    return lines
