"""The score of record in nbgrader's gradebook (autograder/grading/gradebook.py)."""

from __future__ import annotations

import pytest
from course_helpers import gradebook_copy


@pytest.mark.filterwarnings("ignore:Object of type <Submitted")  # nbgrader's own session bookkeeping
def test_write_scores_leaves_a_notebook_that_could_not_be_graded_without_a_score(
    tmp_path, monkeypatch, empty_gradebook
):
    from autograder.grading.gradebook import write_scores
    from autograder.grading.record import CellResult, Record

    course = tmp_path / "course"
    monkeypatch.setenv("POSREF_COURSE_DIR", str(course))
    with gradebook_copy(course, empty_gradebook) as gb:
        gb.add_assignment("a")
        gb.add_notebook("nb", "a")
        gb.add_grade_cell("cell1", "nb", "a", max_score=2, cell_type="code")
        gb.add_student("s")
        gb.add_submission("a", "s")

    def grade():
        with gradebook_copy(course, empty_gradebook) as gb:
            (g,) = gb.find_submission_notebook("nb", "a", "s").grades
            return g.auto_score, g.needs_manual_grade

    cells = [CellResult("cell1", 2.0, 0.0)]
    write_scores(
        "a", "s", "nb", Record("nb", "could not grade", "broken", cells).to_json(), tmp_path / "none.ipynb"
    )
    assert grade() == (None, True)  # never a silent 0
    cells = [CellResult("cell1", 2.0, 2.0)]
    write_scores("a", "s", "nb", Record("nb", "graded", cells=cells).to_json(), tmp_path / "none.ipynb")
    assert grade() == (2.0, False)
