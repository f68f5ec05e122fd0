"""The instructor's commands end to end.

The hostile submissions of ``autograder/demo/submissions.py`` (patching posref, the checkers, torch.testing, the
clock, the import system and the traceback display; a shadow posref.py; writing to the gradebook; reading
other students' files; an infinite loop that swallows KeyboardInterrupt; os._exit; a memory bomb; a fork bomb;
a corrupted notebook) are graded with correct ones by ``python -m autograder demo``, in parallel; the commands
refuse what they cannot do with a message that says what to do."""

from __future__ import annotations

import csv
import html
import json
import re

import pytest
from course_helpers import gradebook_copy, needs_bwrap

from autograder import cli
from autograder.demo.run import demo
from autograder.demo.submissions import SUBMISSIONS
from autograder.grading import grade
from autograder.release.assignment import release


@pytest.fixture(scope="module")
def demo_course(tmp_path_factory):
    course = tmp_path_factory.mktemp("course")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("POSREF_COURSE_DIR", str(course))
        rows = demo(workers=2, cell_timeout=10.0)  # the looping submissions wait this long
        yield course, {row["student"]: row for row in rows}


@pytest.mark.slow
@needs_bwrap
@pytest.mark.parametrize("name", sorted(SUBMISSIONS))
def test_each_submission_gets_exactly_its_own_score(demo_course, name):
    _, rows = demo_course
    expected = SUBMISSIONS[name][2]
    row = rows[name]
    if expected is None:
        assert row["status"] == "could not grade" and row["score"] == "" and row["reason"]
    else:
        assert row["status"] == "graded", f"{name}: {row['status']}: {row['reason']}"
        assert float(row["score"]) == expected, f"{name}: {row['score']}: {row['reason']}"


@pytest.mark.slow
@needs_bwrap
def test_the_gradebook_holds_the_score_of_record_and_survives_a_student_writing_to_it(demo_course):
    from nbgrader.api import Gradebook

    course, rows = demo_course
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for name, row in rows.items():
            submission = gb.find_submission("positions", name)
            if row["status"] == "graded":
                assert submission.score == float(row["score"]), name
            else:
                assert submission.needs_manual_grade, name


@pytest.mark.slow
@needs_bwrap
def test_until_the_score_of_record_is_written_the_gradebook_holds_no_score(demo_course, monkeypatch):
    """nbgrader's autograde (notebook not executed) gave every test cell without error output its full points,
    and they stayed in the gradebook when grading stopped before the score of record was written."""
    from nbgrader.api import Gradebook

    course, _ = demo_course
    monkeypatch.setenv("POSREF_COURSE_DIR", str(course))
    monkeypatch.setenv("POSREF_SOURCE_DIR", "autograder/demo/source")
    monkeypatch.setenv("POSREF_RELEASE_DIR", str(course / "release"))
    monkeypatch.setattr(grade, "_APIS", {})
    assert grade._nbgrader_api().autograde("positions", "different", force=True, create=True)["success"]
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        grades = gb.find_submission_notebook("positions", "positions", "different").grades
        assert grades and all(g.auto_score is None and g.needs_manual_grade for g in grades)


@pytest.mark.slow
@needs_bwrap
def test_export_and_feedback(demo_course):
    course, rows = demo_course
    with open(course / "positions-grades.csv") as f:
        written = list(csv.DictReader(f))
    assert {r["student"] for r in written} == set(SUBMISSIONS)
    assert {r["status"] for r in written} == {"graded", "could not grade"}
    page = (course / "feedback" / "partial" / "positions" / "positions.html").read_text()
    text = html.unescape(re.sub(r"<[^>]+>", "", page.split("</style>")[-1]))  # what a student reads
    assert "Score of record" in text and "wrong pairing layout" in text
    assert "check_apply_rope(apply_rope)" in text  # the visible test is shown ...
    assert "hidden=True" not in text and "BEGIN HIDDEN TESTS" not in text  # ... the hidden one is not
    assert "Traceback (most recent call last)" not in text
    record = json.loads((course / "records" / "positions" / "loop.json").read_text())
    assert any("no answer within" in p for p in record["notebooks"][0]["problems"])


def test_release_and_autograde_refuse_a_wrong_name_an_unreleased_assignment_and_a_missing_student(
    tmp_path, monkeypatch, empty_gradebook, capsys
):
    """A misspelt assignment graded nobody without a word, and `release` added the misspelt name to the gradebook;
    before release nbgrader could not take the submissions and the scores went to the record only; a misspelt
    --student was graded as a phantom student 'could not grade' (a record, a CSV row); with nothing imported the
    grader failed with a traceback."""
    course = tmp_path / "course"
    monkeypatch.setenv("POSREF_COURSE_DIR", str(course))
    with pytest.raises(SystemExit, match="no assignment '02_absolut' in .*02_absolute, 03_relative"):
        release("02_absolut")
    with pytest.raises(SystemExit, match="no assignment '02_absolut'"):
        grade.autograde("02_absolut")
    # ProcessPoolExecutor's "max_workers must be greater than 0", with a traceback
    with pytest.raises(SystemExit):
        cli.main(["autograde", "02_absolute", "--workers", "0"])
    assert "a number of workers is a whole number from 1, not '0'" in capsys.readouterr().err
    gradebook_copy(course, empty_gradebook).close()
    with pytest.raises(SystemExit, match=re.escape("run `python -m autograder release 02_absolute` first")):
        grade.autograde("02_absolute")
    # what release leaves in the gradebook (without nbgrader's seconds)
    with gradebook_copy(course, empty_gradebook) as gb:
        gb.add_assignment("02_absolute")
        gb.add_notebook("02_absolute", "02_absolute")
    with pytest.raises(SystemExit, match="no submissions of 02_absolute in .*import them first"):
        grade.autograde("02_absolute")
    (course / "submitted" / "alice" / "02_absolute").mkdir(parents=True)
    with pytest.raises(SystemExit, match=r"no submission of 02_absolute for Alice \(submitted: alice\)"):
        grade.autograde("02_absolute", students=["Alice"])
    assert not (course / "records").exists()
