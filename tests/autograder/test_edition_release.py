"""The editions' notebooks (autograder/release/editions.py, editions.py): the committed editions/ hold every notebook
under its English name with the English graded code byte for byte and the English code elsewhere, its sentences
translated (what one gradebook needs to grade a class of mixed editions), say their edition, hide the answers in the release, and `release --lang` releases an edition beside the
English one, which alone enters the gradebook."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys

import nbformat
import pytest

from autograder.course import REPO
from autograder.editions.catalogs import START_PAGE, source_notebooks
from autograder.editions.notebook import (
    CODE_STUB,
    EDITION_SPANS,
    EDITION_TEXT,
    EDITIONS,
    ENGLISH,
    TEXT_STUB,
    edition_notebook,
    edition_of,
    is_translated_code,
)
from autograder.release.editions import EDITIONS_DIR

NOTEBOOKS = source_notebooks()


def _relative(name: str):
    return NOTEBOOKS[name].relative_to(REPO / "solutions")


def _cells(path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


@pytest.mark.parametrize(
    ("metadata", "edition"),
    [
        ({"posref": {"edition": "zh-TW"}}, "zh-TW"),
        ({"posref": {"edition": "zh-CN"}}, "zh-CN"),
        ({}, ENGLISH),
        ({"posref": {"edition": "en"}}, ENGLISH),
        ({"posref": {"edition": "zh-tw"}}, ENGLISH),  # not a tag the course writes
        ({"posref": {"edition": "zh_TW"}}, ENGLISH),
        ({"posref": {"edition": " zh-TW"}}, ENGLISH),
        ({"posref": {"edition": "fr"}}, ENGLISH),
        ({"posref": {"edition": "../../etc/passwd"}}, ENGLISH),
        ({"posref": {"edition": "zh-TW" * 100_000}}, ENGLISH),
        ({"posref": {"edition": ["zh-TW"]}}, ENGLISH),
        ({"posref": {"edition": {"zh-TW": 1}}}, ENGLISH),
        ({"posref": {"edition": None}}, ENGLISH),
        ({"posref": {"edition": 7}}, ENGLISH),
        ({"posref": "zh-TW"}, ENGLISH),
        ({"posref": ["edition", "zh-TW"]}, ENGLISH),
        ({"posref": None}, ENGLISH),
        ("zh-TW", ENGLISH),
        (None, ENGLISH),
        ([{"posref": {"edition": "zh-TW"}}], ENGLISH),
    ],
    ids=repr,
)
def test_a_notebook_says_its_edition_and_anything_else_is_english(metadata, edition):
    """A submission's metadata is the student's: whatever is there, a known edition or English, never an error."""
    assert edition_of({"metadata": metadata, "cells": []}) == edition
    assert edition_of("not a notebook") == ENGLISH and edition_of(None) == ENGLISH


def test_an_edition_notebook_translates_markdown_and_what_code_cells_say_but_no_graded_code():
    nb = nbformat.v4.new_notebook()
    graded = {"nbgrader": {"grade_id": "test_order", "grade": True, "locked": True, "points": 1}}
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Order\n\n$$x$$\n\nKept in English."),
        nbformat.v4.new_code_cell("# Order\nprint('Order')\nkey = 'Order'"),
        nbformat.v4.new_code_cell("# Order\nprint('Order')", metadata=graded),
    ]
    out = edition_notebook(nb, {"# Order": "# 順序", "'Order'": "'順序'"}, "zh-TW")
    assert out.cells[0].source == "# 順序\n\n$$x$$\n\nKept in English."
    assert out.cells[1].source == "# 順序\nprint('順序')\nkey = 'Order'"
    assert out.cells[2] == nb.cells[2] and out.metadata["posref"]["edition"] == "zh-TW"
    assert "posref" not in nb.metadata  # the English notebook is not changed
    with pytest.raises(ValueError, match="no edition 'fr': the editions are zh-TW, zh-CN"):
        edition_notebook(nb, {}, "fr")


@pytest.mark.parametrize("edition", list(EDITIONS))
def test_an_editions_start_page_sends_its_student_to_the_editions_folder_and_commands(edition):
    """The start page's `work/`, `make lab`, `notebooks/` and `posref update` are the edition's: `work-zh-TW/`, `make
    lab EDITION=zh-TW`, ... (what `posref lab --lang` opens), in its translated text; so are the stubs it shows
    and the line an unfinished exercise stops with."""
    text = "\n".join(
        c.source
        for c in nbformat.read(EDITIONS_DIR / edition / "notebooks" / "00_start.ipynb", as_version=4).cells
        if c.cell_type == "markdown"
    )
    english = "\n".join(c.source for c in nbformat.read(NOTEBOOKS[START_PAGE], as_version=4).cells)
    for span, theirs in EDITION_SPANS.items():
        if span in english:
            assert theirs.format(tag=edition) in text and span not in text, span
    for (
        span,
        theirs,
    ) in EDITION_TEXT.items():  # the stubs and the unfinished exercise's line as the edition has them
        assert span in english and theirs[edition] in text and span not in text, span


class _Unworded(ast.NodeTransformer):
    """A tree with every string constant emptied and a formatted string reduced to its fields (in any order: a
    translation may put them elsewhere in the sentence): what code does, whatever its sentences say."""

    def visit_Constant(self, node):
        return ast.Constant("") if isinstance(node.value, str) else node

    def visit_JoinedStr(self, node):
        fields = [self.visit(v) for v in node.values if isinstance(v, ast.FormattedValue)]
        return ast.JoinedStr(sorted(fields, key=ast.dump))


def _code_without_words(source: str) -> str:
    return ast.dump(_Unworded().visit(ast.parse(source)))


@pytest.mark.parametrize("kind", ["solutions", "notebooks"])
@pytest.mark.parametrize("edition", list(EDITIONS))
@pytest.mark.parametrize("name", list(NOTEBOOKS))
def test_an_editions_code_is_the_english_code(name, edition, kind):
    """Same file name, same cells in the same order (ids, types, nbgrader metadata: grade ids and points), every
    graded code cell (tests) identical in the committed JSON; the other code cells, answer cells included, the same
    code as the English, only their comments and string literals may differ (translated; a stub's too), their
    metadata and outputs the same; markdown differs (and an answer's checksum, which nbgrader computes from the
    edition's stub in the release), and the notebook says its edition."""
    english = REPO / kind / _relative(name)
    path = EDITIONS_DIR / edition / kind / _relative(name)
    ours, theirs = _cells(path), _cells(english)
    assert [(c["id"], c["cell_type"]) for c in ours] == [(c["id"], c["cell_type"]) for c in theirs]
    for mine, source in zip(ours, theirs, strict=True):
        if source["cell_type"] == "code" and not is_translated_code(source):
            assert mine == source, f"{path}: graded code cell {source['id']} differs from the English"
        elif source["cell_type"] == "code":
            code = ("".join(c["source"]) for c in (mine, source))
            assert _code_without_words(next(code)) == _code_without_words(next(code)), (
                f"{path}: code cell {source['id']} does not run the English code"
            )
            rest = [{k: v for k, v in c.items() if k != "source"} for c in (mine, source)]
            for cell in rest:  # an answer's checksum is of the edition's stub
                cell["metadata"].get("nbgrader", {}).pop("checksum", None)
            assert rest[0] == rest[1], f"{path}: code cell {source['id']}: metadata or outputs differ"
        else:
            grading = {k: v for k, v in source["metadata"].get("nbgrader", {}).items() if k != "checksum"}
            assert {
                k: v for k, v in mine["metadata"].get("nbgrader", {}).items() if k != "checksum"
            } == grading
    assert edition_of(json.loads(path.read_text(encoding="utf-8"))) == edition


@pytest.mark.parametrize("edition", list(EDITIONS))
@pytest.mark.parametrize("name", [n for n in NOTEBOOKS if n != START_PAGE])
def test_an_editions_release_hides_its_answers(name, edition):
    """No solution, hidden test or model answer (in the edition's words) in the release; the stub is the edition's."""
    release = EDITIONS_DIR / edition / "notebooks" / _relative(name)
    text = release.read_text(encoding="utf-8")
    for marker in ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "hidden=True"):
        assert marker not in text
    solutions = nbformat.read(EDITIONS_DIR / edition / "solutions" / _relative(name), as_version=4)
    answers = [
        c
        for c in solutions.cells
        if c.cell_type == "markdown" and c.metadata.get("nbgrader", {}).get("solution")
    ]
    assert answers, "every assignment has written answers"
    for cell in nbformat.read(release, as_version=4).cells:
        if cell.metadata.get("nbgrader", {}).get("solution") and cell.cell_type == "markdown":
            assert cell.source == TEXT_STUB[edition]
        elif cell.metadata.get("nbgrader", {}).get("solution"):
            assert all(line in cell.source for line in CODE_STUB[edition].split("\n")), (
                cell.source
            )  # indented
            assert "not done yet" not in cell.source
    for answer in answers:
        assert answer.source.split("\n\n")[-1] not in text


@pytest.mark.slow
def test_release_lang_releases_the_edition_and_enters_only_the_english_in_the_gradebook(tmp_path):
    """`python -m autograder release 01_order --lang zh-TW`: the English release (the gradebook's source) and the
    edition's, equal to the committed one."""
    from nbgrader.api import Gradebook

    env = dict(
        os.environ,
        POSREF_COURSE_DIR=str(tmp_path / "course"),
        POSREF_RELEASE_DIR=str(tmp_path / "release"),
        POSREF_EDITIONS_DIR=str(tmp_path / "editions"),
        PATH=os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]),
    )
    done = subprocess.run(
        [sys.executable, "-m", "autograder", "release", "01_order", "--lang", "zh-TW"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    relative = _relative("01_order")
    assert str(tmp_path / "editions" / "zh-TW" / "notebooks" / relative) in done.stdout
    # and it tells where that edition's students work (issue 42.5): the English work/ and work-zh-TW/
    assert "`make lab EDITION=zh-TW` in work-zh-TW/" in done.stdout and " work/" in done.stdout, done.stdout
    for part in (relative, "00_start.ipynb"):
        made = json.loads((tmp_path / "editions" / "zh-TW" / "notebooks" / part).read_text())
        assert made == json.loads((EDITIONS_DIR / "zh-TW" / "notebooks" / part).read_text())
    assert _cells(tmp_path / "release" / relative) == _cells(REPO / "notebooks" / relative)
    with Gradebook(f"sqlite:///{tmp_path / 'course' / 'gradebook.db'}", "posref") as gb:
        sources = [c.source for c in gb.find_notebook("01_order", "01_order").source_cells]
    # the written answers' cells as the English release has them (the graded code is the same in both)
    assert sources.count("YOUR ANSWER HERE") == 2 and not any(TEXT_STUB["zh-TW"] in s for s in sources)


@pytest.mark.parametrize("name", list(NOTEBOOKS))
def test_a_graded_code_cell_says_no_sentence_of_its_own(name):
    """A graded code cell (a test, a speed check) is the same in every edition, so a comment in it would reach a
    Chinese edition in English: what a student should know about a check is said in the markdown before it, which
    is translated. nbgrader's own markers (### BEGIN HIDDEN TESTS) are not sentences: the release removes them."""
    import io
    import tokenize

    said = []
    for cell in _cells(NOTEBOOKS[name]):
        if cell["cell_type"] != "code" or is_translated_code(cell):
            continue
        source = "".join(cell["source"])
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT and not token.string.startswith("###"):
                said.append((cell["id"], token.string))
    assert said == [], f"{name}: graded code cells with comments of their own: {said}"
