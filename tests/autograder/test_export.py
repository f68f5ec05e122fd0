"""`python -m autograder export`: a row for every student, safe in a spreadsheet and a terminal."""

from __future__ import annotations

import json

import nbformat
import pytest
from course_helpers import REPO, assert_safe_csv, gradebook_copy

from autograder import cli
from autograder.grading.export import export
from autograder.intake.submission import fingerprint

# what a student controls and an export shows: an id, a notebook's name, a message the child sends back
PAYLOADS = [
    '=HYPERLINK("http://x","y")', "@SUM(A1)", "+1+2", "-2+3", "\t=1", "\r=1",
    "see notes;=40+2", "a,=1", "a|=1", "a\t=1", "a\n=1", "a\r\n@1", "a\r+1", "a\u2028=1", "a\x85=1",
    'a;"=1', "a; =1", 'a," -1', "a;\u00a0=1", "a;＝1", "a|＠1", "a,＋1", "a;－1", "a\x00;=1", "\x1b[2Jfake",
    "a\u202e;=1", "=" * 40_000, "E;" * 100_000,
]  # fmt: skip


def test_no_field_of_the_export_reads_as_a_formula_under_any_separator_and_the_csv_opens_anywhere(
    tmp_path, monkeypatch, capsys, empty_gradebook
):
    """A message `see notes;=40+2` was exported unquoted: read with `;` as the separator (German and French
    locales), a cell was `=40+2`. Only a leading = + - @ of a whole field was neutralised, and a 60 MB field
    opened neither in a spreadsheet (32,767 characters) nor in Python's csv (131,072)."""
    monkeypatch.setenv("POSREF_COURSE_DIR", str(tmp_path))
    gradebook_copy(tmp_path, empty_gradebook).close()
    records = tmp_path / "records" / "01_order"
    records.mkdir(parents=True)
    for i, payload in enumerate(PAYLOADS):
        nb = {"notebook": payload, "score": 1.0, "max_score": 2.0, "status": "graded", "reason": payload,
              "problems": [payload]}  # fmt: skip
        (records / f"s{i}.json").write_text(json.dumps({"student": payload, "notebooks": [nb]}))
    (records / "big.json").write_text(
        json.dumps({"student": "big", "notebooks": [{**nb, "reason": "x" * 6 * 10**7}]})
    )
    cli.main(
        ["export", "01_order", "--csv", str(tmp_path / "new folder" / "out.csv")]
    )  # a folder made for it
    rows = assert_safe_csv(tmp_path / "new folder" / "out.csv")
    assert len(rows) == len(PAYLOADS) + 2
    assert "\x1b" not in capsys.readouterr().out
    by_student = {row[0]: row for row in rows[1:]}
    # what was safe stays as it was; the rest is readable, with an apostrophe where a cell could start
    assert by_student["see notes;'=40+2"][-1] == "see notes;'=40+2"
    formula = '\'=HYPERLINK("http://x","y")'
    assert by_student[formula][1] == formula
    assert len(by_student["big"][-1]) <= 32_000 and by_student["big"][-1].endswith(
        "[...: the record holds the rest]"
    )


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


def test_the_edition_column_holds_only_an_edition_of_the_course(tmp_path, monkeypatch, empty_gradebook):
    """A class mixes editions: each notebook's row says the edition it was graded in (the record's, which the grader
    read from the student's metadata through `editions.edition_of`). A record is the grader's, but a worker that
    lies or a hand that edits one can put anything there: only `en`, `zh-TW` and `zh-CN` reach the CSV, a record
    from before editions (no `edition`) was graded in English, and a notebook the grader could not read has none."""
    monkeypatch.setenv("POSREF_COURSE_DIR", str(tmp_path))
    gradebook_copy(tmp_path, empty_gradebook).close()
    records = tmp_path / "records" / "01_order"
    records.mkdir(parents=True)
    said = {"tw": "zh-TW", "cn": "zh-CN", "en": "en", "unread": "", "formula": '=HYPERLINK("http://x","zh-TW")',
            "lower": "zh-tw", "list": ["zh-TW"], "number": 7, "null": None, "long": "zh-TW" * 10_000,
            "override": "zh-TW\u202e", "path": "../../zh-TW"}  # fmt: skip
    nb = {"notebook": "01_order.ipynb", "score": 1.0, "max_score": 2.0, "status": "graded", "reason": "",
          "problems": []}  # fmt: skip
    for student, edition in [*said.items(), ("before", None)]:
        notebook = nb if student == "before" else {**nb, "edition": edition}
        (records / f"{student}.json").write_text(json.dumps({"student": student, "notebooks": [notebook]}))
    cli.main(["export", "01_order", "--csv", str(tmp_path / "out.csv")])
    rows = assert_safe_csv(tmp_path / "out.csv")
    column = rows[0].index("edition")
    assert rows[0][:3] == ["student", "notebook", "edition"]
    assert {row[0]: row[column] for row in rows[1:]} == {
        "tw": "zh-TW", "cn": "zh-CN", "en": "en", "before": "en",
        **{s: "" for s in ("unread", "formula", "lower", "list", "number", "null", "long", "override", "path")},
    }  # fmt: skip
