"""tools/study_time.py: each part of the estimate counted on a notebook built here, where every minute is known."""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("study_time", ROOT / "tools" / "study_time.py")
study_time = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(study_time)

RATES = {
    "words_per_minute": 10.0,
    "display_math_minutes": 7.0,
    "words_per_formula": 5.0,
    "seconds_per_code_line": 30.0,
    "answer_base_minutes": 100.0,
    "minutes_per_answer_line": 11.0,
    "pasted_block_minutes": 1000.0,
    "question_base_minutes": 13.0,
    "minutes_per_point": 17.0,
    "explorer_minutes": 19.0,
}  # far apart, so that each count shows in the sum it lands in


def _notebook(answer: str) -> nbformat.NotebookNode:
    answer_cell = nbformat.v4.new_code_cell(answer)
    answer_cell.metadata["nbgrader"] = {"solution": True, "grade_id": "f"}
    check = nbformat.v4.new_code_cell("assert f(1) == 2\nassert f(2) == 3")
    check.metadata["nbgrader"] = {"grade": True, "grade_id": "f_check"}
    question = nbformat.v4.new_markdown_cell("a model answer of many words that nobody counts as reading")
    question.metadata["nbgrader"] = {"solution": True, "grade_id": "q", "points": 2}
    return nbformat.v4.new_notebook(
        cells=[
            # 10 words (math, code and a fenced block left out), one inline formula, one displayed formula
            nbformat.v4.new_markdown_cell(
                "Ten words here: one two three four five, and $x^2$ six.\n$$a = b$$\n```\nnot words at all\n```"
            ),
            nbformat.v4.new_code_cell("# a comment\nx = 1\n\nwidget_explorer(x)"),  # 2 code lines, 1 explorer
            answer_cell,
            check,
            question,
        ]
    )


def test_each_part_is_counted_at_its_rate():
    answer = "def f(x):\n    ### BEGIN SOLUTION\n    y = x + 1\n    return y\n    ### END SOLUTION\n"
    earlier: set[str] = set()
    parts = study_time.estimate(_notebook(answer), earlier, RATES)
    assert study_time.prose_words("Ten words here: one two three four five, and $x^2$ six.") == 10
    assert parts["words"] == 10
    assert parts["reading"] == pytest.approx((10 + 5 * 1) / 10 + 7)
    assert parts["code"] == pytest.approx(2 * 30 / 60)  # the check cell is not read as code
    assert parts["explorers"] == 19
    assert parts["answers"] == 100 + 11 * 2
    assert parts["questions"] == 13 + 17 * 2
    assert earlier == {"def f(x):", "y = x + 1", "return y"}  # the whole answer cell, as a student pastes it


def test_a_solution_pasted_from_an_earlier_notebook_counts_as_one_block():
    answer = "def f(x):\n    ### BEGIN SOLUTION\n    y = x + 1\n    return y\n    ### END SOLUTION\n"
    parts = study_time.estimate(_notebook(answer), {"y = x + 1", "return y", "z = 0"}, RATES)
    assert parts["answers"] == 100 + 1000
    changed = answer.replace("return y", "return y * 1")  # one new line: written, not pasted
    parts = study_time.estimate(_notebook(changed), {"y = x + 1", "return y"}, RATES)
    assert parts["answers"] == 100 + 11 * 2


def test_the_table_adds_the_running_time_and_sums_the_rows():
    answer = "def f(x):\n    ### BEGIN SOLUTION\n    return x + 1\n    ### END SOLUTION\n"
    books = {"01_a": _notebook(answer), "02_b": _notebook(answer)}
    lines = study_time.table(books, {"01_a": 600.0}, RATES)
    first, second = (study_time.estimate(nb, set(), RATES) for nb in books.values())
    assert second["answers"] == 100 + 11 * 1  # read alone; in the table 02_b pastes 01_a's line
    one = sum(first[k] for k in ("reading", "code", "answers", "questions", "explorers")) + 10
    two = one - 10 - (100 + 11) + (100 + 1000)
    assert lines[1].split()[-1] == f"{one:.0f}" and lines[2].split()[-1] == f"{two:.0f}"
    assert lines[-1].endswith(f"{one + two:.0f}  = {(one + two) / 60:.1f} hours")


def test_the_course_notebooks_are_all_read():
    books = study_time.notebooks(None)
    assert len(books) >= 9 and all(name[:2].isdigit() for name in books)
    for name, nb in books.items():
        parts = study_time.estimate(nb, set())
        assert parts["words"] > 0 and parts["answers"] > 0 and parts["questions"] > 0, name


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("speed=2", "unknown rate 'speed'"),
        ("words_per_minute=0", "words_per_minute must be a positive number, got '0'"),
        ("words_per_minute=fast", "must be a positive number, got 'fast'"),
        ("words_per_minute=nan", "must be a positive number, got 'nan'"),
    ],
)
def test_a_bad_rate_is_refused_with_what_was_expected(text, message):
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        study_time.rate(text)
    assert study_time.rate("words_per_minute=200") == ("words_per_minute", 200.0)
