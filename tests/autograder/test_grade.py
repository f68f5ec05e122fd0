"""`python -m autograder autograde` for each student (autograder/grade.py): records kept whatever fails."""

from __future__ import annotations

import json

from course_helpers import gradebook_copy

from autograder import grade
from autograder.sandbox import Sandbox
from autograder.submissions import fingerprint


def test_a_student_whose_grading_failed_is_recorded_so_not_left_with_the_previous_record(
    tmp_path, monkeypatch, empty_gradebook
):
    """A worker that failed (a gradebook locked too long, a worker killed) left no record: export then showed the
    student's previous score, or no row at all."""
    from concurrent.futures import ThreadPoolExecutor

    course = tmp_path / "course"
    monkeypatch.setenv("POSREF_COURSE_DIR", str(course))
    with gradebook_copy(course, empty_gradebook) as gb:
        gb.add_assignment("02_absolute")
        gb.add_notebook("02_absolute", "02_absolute")
    (course / "submitted" / "alice" / "02_absolute").mkdir(parents=True)
    earlier = course / "records" / "02_absolute" / "alice.json"
    earlier.parent.mkdir(parents=True)
    earlier.write_text(
        json.dumps({"student": "alice", "assignment": "02_absolute", "notebooks": [{"score": 6}]})
    )

    def fails(*args):
        raise RuntimeError("the worker died")

    monkeypatch.setattr(grade, "grade_student", fails)
    monkeypatch.setattr(
        grade, "ProcessPoolExecutor", lambda max_workers, **_: ThreadPoolExecutor(max_workers)
    )
    (result,) = grade.autograde("02_absolute", workers=1)
    assert result["error"] == "RuntimeError('the worker died')"
    assert json.loads(earlier.read_text()) == result


def test_grading_a_student_again_removes_the_feedback_page_of_the_submission_it_replaces(
    tmp_path, monkeypatch
):
    """nbgrader cannot take a re-submission whose notebook was renamed: generate_feedback then left the page of the
    earlier submission (6/10) beside a record that says 'could not grade'."""
    course = tmp_path / "course"
    monkeypatch.setenv("POSREF_COURSE_DIR", str(course))
    submission = course / "submitted" / "grace" / "02_absolute"
    submission.mkdir(parents=True)
    (submission / "02_absolute (1).ipynb").write_text("{}")
    old_page = course / "feedback" / "grace" / "02_absolute" / "02_absolute.html"
    old_page.parent.mkdir(parents=True)
    old_page.write_text("Score: 6.0 / 10.0")

    class NbgraderFails:
        def autograde(self, *args, **kwargs):
            return {"success": False}

    def not_graded(*args, **kwargs):
        raise AssertionError("the sandbox must not start for a missing notebook")

    monkeypatch.setattr(grade, "_API", NbgraderFails())
    monkeypatch.setattr(Sandbox, "scratch", not_graded)
    out = grade.grade_student("02_absolute", "grace", cell_timeout=1)
    assert not old_page.exists()
    (nb,) = out["notebooks"]
    assert nb["status"] == "could not grade" and nb["score"] is None
    assert nb["reason"] == (
        "no 02_absolute.ipynb in the submission (it holds 02_absolute (1).ipynb: rename it, then grade this "
        "student again)"
    )
    assert out["submission"] == fingerprint(submission)
    assert json.loads((course / "records" / "02_absolute" / "grace.json").read_text()) == out
