"""nbgrader's late penalty on the score of record: this course's plugin, and the penalty assigned again once the
scores are in the gradebook.

The penalty is nbgrader's ``LateSubmissionPlugin`` named in ``nbgrader_config.py``
(``c.AssignLatePenalties.plugin_class``); how late a submission is comes from ``autograder/intake/late.py``.
nbgrader assigns the penalty inside its autograde step, before the score of record is written (``PendingScores``
leaves every grade empty then, so that penalty is taken from a score of 0): ``assign_penalties`` runs nbgrader's
own ``AssignLatePenalties`` again once the scores are in the gradebook.
"""

from __future__ import annotations

import math
from pathlib import Path

import nbformat
from nbgrader.plugins import LateSubmissionPlugin
from traitlets import Float

from autograder import course
from autograder.intake import late


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


def assign_penalties(config, assignment: str, student: str, notebooks: list[str]) -> dict[str, float | None]:
    """nbgrader's ``AssignLatePenalties`` for each notebook (by name, without ``.ipynb``) of a submission whose
    scores of record are in the gradebook: the penalty nbgrader stores (``SubmittedNotebook.
    late_submission_penalty``), computed from those scores. Returns notebook -> penalty (None: none)."""
    from nbgrader.preprocessors import AssignLatePenalties

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
    submitted = late.read_timestamp(course.course_dir() / "submitted" / student / assignment)
    seconds = late.seconds_late(submitted, late.due_date(assignment))
    graded = [r for r in notebooks if r["status"] == "graded"]
    stored = (
        assign_penalties(config, assignment, student, [Path(r["notebook"]).stem for r in graded])
        if (in_gradebook and seconds > 0)
        else {}
    )
    for record in notebooks:
        if record["status"] != "graded":
            record["late_penalty"] = None
        elif in_gradebook:
            record["late_penalty"] = stored.get(Path(record["notebook"]).stem)
        else:
            record["late_penalty"] = plugin_penalty(config, student, record["score"], seconds)
    return {"submitted": None if submitted is None else submitted.isoformat(), "seconds_late": seconds}
