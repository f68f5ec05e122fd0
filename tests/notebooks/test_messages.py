"""What a student reads when something is unfinished or wrong, in a real kernel on the released notebook:
a failing check shows the checker's message first and none of posref's frames (the student's own line stays),
and an unfinished function called outside a test cell says what to do.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import nbformat
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[2]
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _run(cells: list[str], tmp_path: Path) -> list[nbformat.NotebookNode]:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    env = {**os.environ, "PYTHONPATH": str(REPO), "POSREF_FAST": "1"}
    client = NotebookClient(
        nb,
        timeout=600,  # a hang guard per cell
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute(env=env)
    return nb.cells


def _error(cell) -> tuple[str, list[str]]:
    [err] = [o for o in cell.outputs if o.output_type == "error"]
    return err.ename, [ANSI.sub("", line) for text in err.traceback for line in text.splitlines()]


def _released_cells(name: str, *grade_ids: str) -> list[str]:
    nb = nbformat.read(REPO / "notebooks" / name / f"{name}.ipynb", as_version=4)
    by_id = {c.metadata.get("nbgrader", {}).get("grade_id"): c.source for c in nb.cells}
    return [by_id[g] for g in grade_ids]


def test_a_failing_check_shows_its_message_first_and_only_the_students_frames(tmp_path):
    stub, check = _released_cells("01_order", "attention", "test_attention")
    cells = _run(
        ["import torch", stub, check, "attention(torch.ones(2, 3), torch.ones(2, 3), torch.ones(2, 3))"],
        tmp_path,
    )
    ename, lines = _error(cells[2])
    assert ename == "CheckFailed"
    assert lines[0].startswith("CheckFailed: attention fails on case 1"), lines[:3]
    text = "\n".join(lines)
    assert "your function raised NotImplementedError: not done yet" in text
    assert "interactiveshell.py" not in text  # nor IPython's
    assert "posref" + os.sep + "grading" not in text and "report.py" not in text, text  # no grader internals
    assert 'raise NotImplementedError("not done yet' in text  # the student's own line
    assert "check_attention(attention)" in text  # and the check that called it
    assert len(lines) < 25, text

    ename, lines = _error(cells[3])  # the unfinished function called outside a test cell
    assert ename == "NotImplementedError"
    assert "not done yet: replace this line with your code and run its cell again" in lines[-1], lines[-1]


def test_a_student_error_inside_their_function_shows_their_line(tmp_path):
    _, check = _released_cells("01_order", "attention", "test_attention")
    mine = "def attention(q, k, v, causal=False):\n    scores = q @ k  # wrong: k not transposed\n    return scores @ v"
    cells = _run([mine, check], tmp_path)
    ename, lines = _error(cells[1])
    text = "\n".join(lines)
    assert ename == "CheckFailed" and lines[0].startswith("CheckFailed: attention fails on case 1"), lines[:3]
    assert "scores = q @ k  # wrong: k not transposed" in text and "report.py" not in text, text
    # each frame placed in words, as the message places the line (tests/grading/test_frames.py: each edition's)
    call = next(i for i, line in enumerate(check.splitlines(), 1) if "check_attention(attention)" in line)
    assert "  line 2 of your cell, in attention" in text, text
    assert f"  line {call} of your cell, in <module>" in text, text
    assert 'File "' not in text and str(tmp_path) not in text, text


def test_a_cell_after_an_unfinished_exercise_says_finish_it_first(tmp_path):
    cells = _run(
        [
            "from posref.notebook import uses",
            "def t5_bias(n):\n    raise NotImplementedError('not done yet')",
            "with uses('Exercise 3 (the T5 bias)'):\n    table = t5_bias(4)",
            "with uses('Exercise 3 (the T5 bias)'):\n    print(table)",
        ],
        tmp_path,
    )
    for cell, why in (
        (cells[2], "its stub still raises NotImplementedError"),
        (cells[3], "NameError: name 'table' is not defined"),
    ):
        ename, lines = _error(cell)
        assert ename == "ExerciseNotDone"
        assert lines == [
            f"ExerciseNotDone: finish Exercise 3 (the T5 bias) first: this cell uses its result ({why})"
        ]
