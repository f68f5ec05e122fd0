"""Writing the score of record into nbgrader's gradebook and into the autograded notebook (for feedback)."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbgrader.preprocessors import SaveAutoGrades

from autograder import course


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


def write_scores(assignment: str, student: str, notebook: str, record: dict, autograded: Path) -> None:
    """Each test cell's auto score := the record's (``Record.to_json()``); a notebook that could not be graded is
    flagged for manual grading with no score (never a silent 0). The test cells of the autograded notebook
    show the record."""
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
        nb = nbformat.read(autograded, as_version=4)
        for cell in nb.cells:
            result = by_id.get(cell.get("metadata", {}).get("nbgrader", {}).get("grade_id"))
            if result is not None:
                text = f"Score of record: {result['score']:g} / {result['points']:g}\n{result['message']}\n"
                cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
        nbformat.write(nb, autograded)
