"""Writing the score of record into nbgrader's gradebook and into the autograded notebook (for feedback)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import nbformat
from nbgrader import utils as nbgrader_utils
from nbgrader.preprocessors import SaveAutoGrades

from autograder import course
from autograder.editions.catalogs import editions_dir
from autograder.editions.notebook import EDITIONS, ENGLISH, TEXT_STUB
from posref import i18n
from posref.i18n import _


class PendingScores(SaveAutoGrades):
    """nbgrader's ``SaveAutoGrades`` in ``python -m autograder autograde``, except that every grade is left
    without a score and flagged for grading until ``write_scores`` writes the score of record.

    The notebook is not executed there, and nbgrader's own rule gives a test cell without error output its full
    points: a run that stopped between nbgrader's autograde and ``write_scores`` (a crash, Ctrl-C, a killed
    worker) would have left full marks in the gradebook."""

    def _add_score(self, cell, resources) -> None:
        grade = self.gradebook.find_grade(
            cell.metadata["nbgrader"]["grade_id"], self.notebook_id, self.assignment_id, self.student_id
        )
        grade.auto_score, grade.needs_manual_grade = None, True
        self.gradebook.db.commit()

    def _add_comment(self, cell, resources) -> None:
        """nbgrader's "No response." for an answer left as released, as an edition's release has it too (nbgrader
        compares the cell with the English release's checksum only): a written answer's stub, an answer cell of
        code with the edition's stub and docstrings."""
        super()._add_comment(cell, resources)
        as_released = (cell.metadata["nbgrader"]["grade_id"], nbgrader_utils.compute_checksum(cell))
        if (cell.cell_type == "markdown" and cell.source in TEXT_STUB.values()) or (
            not nbgrader_utils.is_task(cell)
            and as_released in _answers_as_released(self.assignment_id, self.notebook_id)
        ):
            comment = self.gradebook.find_comment(
                cell.metadata["nbgrader"]["grade_id"], self.notebook_id, self.assignment_id, self.student_id
            )
            comment.auto_comment = "No response."
            self.gradebook.db.commit()


def _answers_as_released(assignment: str, notebook: str) -> frozenset[tuple[str, str]]:
    """(grade id, nbgrader checksum) of each answer cell as each edition's release of ``notebook`` holds it
    (``editions/<tag>/notebooks/<assignment>/<notebook>.ipynb``; none where an edition has no release)."""
    releases = [editions_dir() / tag / "notebooks" / assignment / f"{notebook}.ipynb" for tag in EDITIONS]
    return frozenset().union(*(_answers_in(p, p.stat().st_mtime_ns) for p in releases if p.is_file()))


@cache
def _answers_in(release: Path, _mtime_ns: int) -> frozenset[tuple[str, str]]:
    """The answer cells of one release (read again when the file changes: its time is part of the key)."""
    answers = set()
    for cell in nbformat.read(release, as_version=4).cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") and meta.get("grade_id"):
            answers.add((meta["grade_id"], nbgrader_utils.compute_checksum(cell)))
    return frozenset(answers)


def write_scores(assignment: str, student: str, notebook: str, record: dict, autograded: Path) -> None:
    """Each test cell's auto score := the record's (``Record.to_json()``); a notebook that could not be graded is
    flagged for manual grading with no score (never a silent 0). The test cells of the autograded notebook
    show the record, in the language of the student's edition (the record's ``edition``)."""
    by_id = {c["grade_id"]: c for c in record["cells"]}
    with course.gradebook() as gb:
        for grade in gb.find_submission_notebook(notebook, assignment, student).grades:
            cell = by_id.get(grade.name)
            if record["status"] != "graded" or cell is None:
                grade.auto_score, grade.needs_manual_grade = None, True
            else:
                grade.auto_score, grade.needs_manual_grade = cell["score"], False
        gb.db.commit()
    if autograded.exists():
        edition = record.get("edition")
        i18n.set_language(edition if isinstance(edition, str) and edition in EDITIONS else ENGLISH)
        try:
            header = _("Score of record: {score} / {points}")
        finally:
            i18n.set_language(None)
        nb = nbformat.read(autograded, as_version=4)
        for cell in nb.cells:
            result = by_id.get(cell.get("metadata", {}).get("nbgrader", {}).get("grade_id"))
            if result is not None:
                score = header.format(score=f"{result['score']:g}", points=f"{result['points']:g}")
                text = f"{score}\n{result['message']}\n"
                cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
        write_notebook(nb, autograded)


def write_notebook(nb, path: Path) -> None:
    """``nb`` into the course's notebook ``path`` as ``nbformat.write`` writes it, replacing the file whole, its
    mode kept (``course.replace_file``: nbgrader leaves an autograded notebook read-only)."""
    text = nbformat.writes(nb)
    course.replace_file(path, (text if text.endswith("\n") else text + "\n").encode())
