"""`python -m autograder export`: a row for every student, safe in a spreadsheet and a terminal."""

from __future__ import annotations

import csv
import json

import nbformat
import pytest
from course_helpers import REPO, gradebook_copy

from autograder.export import export, print_table
from autograder.submissions import fingerprint


def test_export_keeps_formulas_out_of_spreadsheets_and_escapes_out_of_the_terminal(
    tmp_path, monkeypatch, capsys, empty_gradebook
):
    monkeypatch.setenv("POSREF_COURSE_DIR", str(tmp_path))
    gradebook_copy(tmp_path, empty_gradebook).close()
    records = tmp_path / "records" / "01_order"
    records.mkdir(parents=True)
    nb = {"notebook": "a1.ipynb", "score": 1.0, "max_score": 2.0, "status": "graded", "reason": "",
          "problems": ["cell 2 raised \x1b[2Jfake"]}  # fmt: skip
    for student in ['=HYPERLINK("http://x","y")', "@SUM(A1)", "bob"]:
        (records / f"{len(student)}.json").write_text(json.dumps({"student": student, "notebooks": [nb]}))
    print_table(export("01_order", tmp_path / "new folder" / "out.csv"))  # a folder made for it
    with open(tmp_path / "new folder" / "out.csv") as f:
        students = sorted(row["student"] for row in csv.DictReader(f))
    assert students == ['\'=HYPERLINK("http://x","y")', "'@SUM(A1)", "bob"]
    assert "\x1b" not in capsys.readouterr().out


def test_export_has_a_row_for_every_student_and_no_score_for_a_submission_graded_before_it_changed(
    tmp_path, monkeypatch, empty_gradebook
):
    """A student who did not submit, or whose submission was imported but not graded, had no row at all; one
    imported again after grading kept the score of the submission it replaced; a misspelt assignment wrote an
    empty CSV."""
    course = tmp_path / "course"
    monkeypatch.setenv("POSREF_COURSE_DIR", str(course))
    with pytest.raises(SystemExit, match="no assignment '02_absolut'"):
        export("02_absolut")
    with gradebook_copy(course, empty_gradebook) as gb:
        gb.add_student("dave")  # on the roster, submitted nothing
    records = course / "records" / "02_absolute"
    records.mkdir(parents=True)
    cells = [{"grade_id": "t", "points": 6.0, "score": 6.0, "message": "passed"}]
    graded = {"notebook": "02_absolute.ipynb", "status": "graded", "reason": "", "cells": cells, "problems": [],
              "sandbox": "bubblewrap", "score": 6.0, "max_score": 6.0}  # fmt: skip
    for student in ("alice", "bob", "carol"):
        folder = course / "submitted" / student / "02_absolute"
        folder.mkdir(parents=True)
        (folder / "02_absolute.ipynb").write_text("{}")
        if student != "carol":  # carol: imported, not graded yet
            record = {"student": student, "assignment": "02_absolute", "submission": fingerprint(folder),
                      "notebooks": [graded]}  # fmt: skip
            (records / f"{student}.json").write_text(json.dumps(record))
    (course / "submitted" / "bob" / "02_absolute" / "02_absolute.ipynb").write_text('{"cells": []}')  # again
    crashed = {
        "student": "erin",
        "assignment": "02_absolute",
        "error": "BrokenProcessPool()",
        "notebooks": [],
    }
    (records / "erin.json").write_text(json.dumps(crashed))
    rows = {row["student"]: row for row in export("02_absolute")}
    assert sorted(rows) == ["alice", "bob", "carol", "dave", "erin"]
    assert (rows["alice"]["score"], rows["alice"]["status"]) == ("6", "graded")
    for student, status, reason in [
        ("bob", "not graded", "imported again after it was graded"),
        ("carol", "not graded", "imported, not autograded yet"),
        ("dave", "not submitted", ""),
        ("erin", "could not grade", "grader error: BrokenProcessPool()"),
    ]:
        assert rows[student]["score"] == "" and rows[student]["status"] == status, rows[student]
        assert rows[student]["reason"].startswith(reason), rows[student]
    # the notebook's autograded points, counted here from the source notebook's test cells
    source = nbformat.read(REPO / "solutions" / "02_absolute" / "02_absolute.ipynb", as_version=4)
    autograded = [
        c.metadata.nbgrader for c in source.cells if c.cell_type == "code" and "nbgrader" in c.metadata
    ]
    top = sum(m.get("points", 0) for m in autograded if m.get("grade") and not m.get("solution"))
    assert top > 0
    assert rows["dave"]["max_score"] == f"{top:g}" and rows["dave"]["notebook"] == "02_absolute.ipynb"
