"""The page the formgrader shows for a notebook nbgrader refused (autograder/grading/stand_in.py), on a battery of the
metadata a student can hand in: nbgrader's own validator takes every stand-in, none keeps the student's metadata,
and the reasons are one line of a code block each, whatever they hold. Through the real commands:
test_refused_notebook.py."""

from __future__ import annotations

import json

import nbformat
import pytest
from nbgrader.nbgraderformat import MetadataValidator

from autograder.course import REPO
from autograder.grading.stand_in import MAX_REASON, MAX_REASONS, refusal, stand_in

SOURCE = REPO / "autograder" / "demo" / "source" / "positions" / "positions.ipynb"
MARKUP = '<script>fetch("/pwned")</script>\n\n<img src=x onerror=alert(1)>'

# cell metadata a student can write -> what the reason says (None: nbgrader takes it, no reason)
BATTERY = [
    ({"nbgrader": {"grade": True, "solution": False, "points": 1}}, "does not have a grade_id"),
    ({"nbgrader": {"grade": True, "solution": False, "grade_id": "x", "schema_version": 3}},
     "'locked' is a required property"),
    ({"nbgrader": {"grade": False, "solution": False, "locked": True, "grade_id": ""}}, "grade_id is empty"),
    ({"nbgrader": {"grade": True, "solution": False, "grade_id": "x", "points": MARKUP}}, "could not convert string to float"),
    ({"nbgrader": {"grade": True, "solution": True, "grade_id": "x", "points": 1, "schema_version": 99}},
     "Schema version is too new: 99"),
    ({"nbgrader": {"grade": MARKUP, "solution": False, "grade_id": "x", "points": 1}}, "is not of type 'boolean'"),
    ({"nbgrader": {"grade_id": MARKUP, "grade": True, "solution": False, "points": 1, "schema_version": "3"}},
     "'<' not supported between instances of 'str' and 'int'"),
    ({"nbgrader": MARKUP}, "its nbgrader metadata is a str, not a mapping"),
    ({"nbgrader": [MARKUP]}, "its nbgrader metadata is a list, not a mapping"),
    ({"nbgrader": None}, "its nbgrader metadata is a NoneType, not a mapping"),
    ({"nbgrader": {"task": True, "grade": False, "solution": False, "locked": True, "grade_id": "t", "points": 1}},
     "Task cells have to be markdown"),
    ({"tags": [MARKUP], "nbgrader": {"grade": False, "solution": False}}, None),
]  # fmt: skip


def _notebook(tmp_path, metadata: dict, *, edition=None):
    """The demo's source notebook with a code cell of the student's carrying ``metadata``, written as JSON."""
    nb = json.loads(SOURCE.read_text())
    nb["cells"].append({"cell_type": "code", "id": "theirs", "source": MARKUP, "metadata": metadata,
                        "outputs": [], "execution_count": None})  # fmt: skip
    nb["cells"][2]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": MARKUP}]
    if edition is not None:
        nb["metadata"]["posref"] = {"edition": edition}
    path = tmp_path / "positions.ipynb"
    path.write_text(json.dumps(nb))
    return path


@pytest.mark.parametrize(("metadata", "reason"), BATTERY)
def test_each_refused_cell_is_named_and_its_stand_in_is_one_nbgrader_takes(tmp_path, metadata, reason):
    path = _notebook(tmp_path, metadata)
    reasons = refusal(path.read_bytes(), "")
    last = len(json.loads(path.read_text())["cells"]) - 1
    if reason is None:
        assert reasons == ["nbgrader stopped: it gave no reason"]
    else:
        assert len(reasons) == 1 and reasons[0].startswith(f"cell {last} (code): "), reasons
        assert reason in reasons[0], reasons
    assert all("\n" not in r and len(r) <= MAX_REASON for r in reasons)
    nb = stand_in(path.read_bytes(), SOURCE, reasons)
    nbformat.validate(nb)
    MetadataValidator().validate_nb(nb)
    banner, *cells = nb.cells
    assert banner.source.split("\n\n", 1)[1] == "\n".join("    " + r for r in reasons)  # a code block
    assert [c.source for c in cells[:-1]] == [c.source for c in nbformat.read(SOURCE, as_version=4).cells]
    assert (cells[-1].source, cells[-1].metadata) == (MARKUP, {})  # theirs, without any metadata
    assert not [c for c in cells if c.get("outputs")], "outputs are cleared"


def test_a_student_cell_claiming_the_courses_ids_gets_the_source_metadata_once_and_a_test_cell_its_text(
    tmp_path,
):
    """A student's copy of a test cell (same grade id) and an answer cell retyped as markdown: the first cell of
    an id, of the source's type, gets the source's metadata (and a test cell the source's text, as nbgrader's
    OverwriteCells restores it); a second one of the same id, or one of another type, is plain."""
    nb = json.loads(SOURCE.read_text())
    test = nb["cells"][5]
    test["source"] = "pass  # my own version of the test"
    test["metadata"]["nbgrader"]["points"] = MARKUP
    nb["cells"].append({**test, "id": "again"})
    nb["cells"][2]["cell_type"] = "markdown"
    for key in ("outputs", "execution_count"):
        nb["cells"][2].pop(key)
    path = tmp_path / "positions.ipynb"
    path.write_text(json.dumps(nb))
    out = stand_in(path.read_bytes(), SOURCE, refusal(path.read_bytes(), ""))
    source = nbformat.read(SOURCE, as_version=4)
    assert (out.cells[6].source, out.cells[6].metadata) == (source.cells[5].source, source.cells[5].metadata)
    assert (out.cells[-1].source, out.cells[-1].metadata) == ("pass  # my own version of the test", {})
    assert out.cells[3].cell_type == "markdown" and out.cells[3].metadata == {}


def test_an_unreadable_notebook_gets_a_page_with_the_reason_only(tmp_path):
    path = tmp_path / "positions.ipynb"
    path.write_text('{"cells": [')
    reasons = refusal(path.read_bytes(), "Traceback ...\nValueError: whatever nbgrader said\n")
    assert reasons[0].startswith("the notebook cannot be read: ")
    nb = stand_in(path.read_bytes(), SOURCE, reasons)
    assert len(nb.cells) == 1 and reasons[0] in nb.cells[0].source


def test_without_a_refused_cell_the_reason_is_nbgraders_last_error_line(tmp_path):
    path = _notebook(tmp_path, {})
    log = "[ERROR] one\n  File x, line 1\nKeyError: 'grade_id'\n    \n"
    assert refusal(path.read_bytes(), log) == ["nbgrader stopped: KeyError: 'grade_id'"]


def test_reasons_are_bounded_in_number_and_length(tmp_path):
    nb = json.loads(SOURCE.read_text())
    for _ in range(3 * MAX_REASONS):
        nb["cells"].append(nbformat.v4.new_markdown_cell("x" * 10_000 + "\u2028" + MARKUP, metadata={
            "nbgrader": {"grade": True, "solution": False, "points": 1}}))  # fmt: skip
    path = tmp_path / "positions.ipynb"
    path.write_text(json.dumps(nb))
    reasons = refusal(path.read_bytes(), "")
    assert len(reasons) == 3 * MAX_REASONS and all(len(r) <= MAX_REASON for r in reasons)
    block = stand_in(path.read_bytes(), SOURCE, reasons).cells[0].source.split("\n\n", 1)[1].splitlines()
    assert len(block) == MAX_REASONS + 1 and block[-1] == f"    ... {2 * MAX_REASONS} more"


@pytest.mark.parametrize(
    ("edition", "expected"),
    [("zh-TW", "zh-TW"), ("zh-CN", "zh-CN"), ("en", "en"), (MARKUP, "en"), ("", "en")],
)
def test_the_page_speaks_the_students_edition(tmp_path, edition, expected):
    """The first cell in the language of the edition the record says (anything else: English), as the test cells'
    "Score of record" is."""
    path = _notebook(tmp_path, BATTERY[0][0], edition=edition)
    said = (
        stand_in(path.read_bytes(), SOURCE, refusal(path.read_bytes(), ""), edition)
        .cells[0]
        .source.split("\n\n")[0]
    )
    notebook = {"zh-TW": "筆記本", "zh-CN": "笔记本", "en": "could not take this notebook"}[expected]
    assert notebook in said and said.startswith("**nbgrader "), said
