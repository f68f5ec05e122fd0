"""The score of record of one notebook (autograder/grading/record.py): the program, the children, the checks."""

from __future__ import annotations

import json
import time

import pytest
from course_helpers import needs_bwrap, plain_child

from autograder.course import REPO
from autograder.grading.record import PASSED, Verdict, _Children, _run_check, checker_calls, grade_notebook
from autograder.sandbox.sandbox import Sandbox
from posref.grading.child.remote import BudgetSpent, RemoteFunction
from posref.grading.failure import Cause

pytestmark = pytest.mark.xdist_group("sandbox")  # children as Sandbox()'s default uid: see tests/conftest.py


def test_checker_calls_are_read_from_the_test_cell_source():
    source = (
        "check_apply_rope(apply_rope)\n### BEGIN HIDDEN TESTS\ncheck_apply_rope(apply_rope, hidden=True)\n"
    )
    source += "posref.grading.check_sinusoidal_pe(pe)\nprint(check_unknown_thing(x))\n%timeit f()\n"
    assert checker_calls(source) == [("check_apply_rope", "apply_rope"), ("check_sinusoidal_pe", "pe")]


def test_answer_cells_are_matched_by_grade_id_and_broken_metadata_is_ignored():
    """A submission's nbgrader metadata is the student's to edit: a string or null there, or an unhashable
    grade id, used to crash grade_notebook (the whole notebook went to manual grading)."""
    import nbformat

    from autograder.grading.record import _program

    source = nbformat.read(REPO / "autograder/demo/source/positions/positions.ipynb", as_version=4)
    submitted = nbformat.from_dict(json.loads(nbformat.writes(source)))
    submitted.cells[2].source, submitted.cells[4].source = "pe = 1", "rope = 1"
    submitted.cells[2].metadata["nbgrader"] = "not a dict"
    submitted.cells[4].metadata["nbgrader"]["grade_id"] = ["apply_rope"]
    submitted.cells.append(nbformat.v4.new_code_cell("extra = 1", metadata={"nbgrader": None}))
    program, tests = _program(source, submitted)
    assert dict(program) == {1: source.cells[1].source, 2: "", 4: ""}
    assert [t.metadata.nbgrader.grade_id for t in tests] == [
        "test_sinusoidal_pe", "test_apply_rope", "test_apply_rope_speed"
    ]  # fmt: skip


def test_the_notebook_budget_bounds_all_calls_together(tmp_path):
    """Each call of a function that sleeps 10 s is within its timeout (60 s), but a notebook's calls share one
    budget: 33 cases of such a function used to take 330 s per check (and 60 s a case at the default timeout).
    Ten calls would take 100 s; the budget (2.5 s) ends them within the first call's sleep."""
    code = "import time\ndef slow():\n    time.sleep(10)\n    return 1.0\n"
    with plain_child(code, call_timeout=60) as child:
        child.deadline = time.monotonic() + 2.5
        with pytest.raises(BudgetSpent):
            for _ in range(10):
                assert child.call("slow", (), {}) == 1.0
    children = _Children([], Sandbox(), tmp_path, [], timeout=10, budget=0)
    assert _run_check(children, "check_sinusoidal_pe", "sinusoidal_pe") == Verdict(
        "not checked: the time for grading this notebook (0 s) ran out", Cause("out-of-time")
    )


# the message of a test cell whose check the grader failed, as the student reads it in each edition (issue 37: it
# was English in every edition); the record's reason, the instructor's, is English in all
GRADER_FAULT = {
    "en": "grader error while checking test_sinusoidal_pe: TypeError: a bug of the grader",
    "zh-TW": "評分程式在檢查 test_sinusoidal_pe 時出錯：TypeError: a bug of the grader",
    "zh-CN": "评分程序在检查 test_sinusoidal_pe 时出错：TypeError: a bug of the grader",
}


@needs_bwrap
@pytest.mark.parametrize("edition", list(GRADER_FAULT))
def test_a_grader_fault_in_one_check_is_could_not_grade_and_a_raise_while_timed_fails_the_check(
    tmp_path, monkeypatch, edition
):
    """An exception that is not a failed check (a fault of the grader's, or a student value it did not foresee)
    used to escape grade_notebook, so the student's whole record was lost and the gradebook kept what nbgrader
    wrote; a student's function that raised while being timed (outside the checker's cases) did the same."""
    import nbformat

    import posref.grading as checkers

    source = REPO / "autograder" / "demo" / "source" / "positions" / "positions.ipynb"
    submitted = tmp_path / "alice" / source.name
    submitted.parent.mkdir()
    nb = nbformat.read(source, as_version=4)
    nb.metadata["posref"] = {"edition": edition}
    nbformat.write(nb, submitted)

    def broken_checker(fn, **kwargs):
        raise TypeError("a bug of the grader")

    def timed(fn, **kwargs):  # as a speed check does: calls outside first_difference
        fn("not", "a tensor")

    monkeypatch.setattr(checkers, "check_sinusoidal_pe", broken_checker)
    monkeypatch.setattr(checkers, "check_apply_rope_speed", timed)
    record = grade_notebook(source, submitted, sandbox=Sandbox(), scratch_base=tmp_path / "scratch")
    assert record.status == "could not grade" and record.score is None and record.edition == edition
    assert record.reason == GRADER_FAULT["en"]
    cells = {c.grade_id: c for c in record.cells}
    assert (cells["test_sinusoidal_pe"].message, cells["test_sinusoidal_pe"].causes) == (
        GRADER_FAULT[edition],
        [Cause("grader-error")],
    )
    speed = cells["test_apply_rope_speed"]
    assert speed.score == 0 and speed.causes == [Cause("raised", "TypeError")], speed


def test_a_cell_that_kills_the_child_is_left_out_and_the_rest_still_runs(tmp_path):
    sandbox = Sandbox()
    problems = []
    program = [(0, "x = 1"), (1, "import os; os._exit(3)"), (2, "def f():\n    return float(x)")]
    children = _Children(program, sandbox, sandbox.scratch(tmp_path), problems, timeout=30, budget=120)
    try:
        child = children.get()
        assert "f" in child.names and RemoteFunction(child, "f")() == 1.0
    finally:
        children.close()
    assert problems == ["cell 1 was left out: the grading process exited with code 3 while running cell 1"]


def test_the_notebook_budget_bounds_the_answer_cells_too(tmp_path):
    sandbox = Sandbox()
    program = [(0, "while True:\n    pass")]
    # the cell's own timeout (300 s) is far beyond the notebook's budget (4 s): only the budget can end it in time
    children = _Children(program, sandbox, sandbox.scratch(tmp_path), [], timeout=300, budget=4)
    try:
        with pytest.raises(BudgetSpent):
            children.get()
    finally:
        children.close()


def test_a_check_of_a_function_the_answer_cells_do_not_define_says_so(tmp_path):
    sandbox = Sandbox()
    children = _Children([(0, "x = 1")], sandbox, sandbox.scratch(tmp_path), [], timeout=30, budget=120)
    try:
        verdict = _run_check(children, "check_sinusoidal_pe", "sinusoidal_pe")
    finally:
        children.close()
    assert verdict == Verdict(
        "sinusoidal_pe is not defined: the cell that defines it did not run or does not define it",
        Cause("not-defined"),
    )


def test_checks_run_hidden_and_speed_checks_against_a_reference_in_a_child_like_the_students(
    tmp_path, monkeypatch
):
    # visible cases are public (a submission could hard-code them); a speed check timed against posref in the
    # grader's own process would make the student's function pay the pipe on every call
    import posref.grading as checkers

    seen = {}
    for name in ("check_sinusoidal_pe", "check_apply_rope_speed"):
        monkeypatch.setattr(checkers, name, lambda fn, name=name, **kw: seen.setdefault(name, (fn, kw)))
    sandbox = Sandbox()
    program = [(0, "from posref import apply_rope, sinusoidal_pe")]
    children = _Children(program, sandbox, sandbox.scratch(tmp_path), [], timeout=30, budget=120)
    try:
        assert _run_check(children, "check_sinusoidal_pe", "sinusoidal_pe") == PASSED
        assert seen["check_sinusoidal_pe"][1] == {"hidden": True, "device": "cpu"}
        assert _run_check(children, "check_apply_rope_speed", "apply_rope") == PASSED
        student, kwargs = seen["check_apply_rope_speed"]
        reference = kwargs["reference"]
        assert isinstance(reference, RemoteFunction) and reference.__name__ == "apply_rope"
        assert student.child is children.student and reference.child is not children.student
    finally:
        children.close()


def test_a_record_is_bounded_however_much_the_child_says():
    """Each problem is cut, the problems together stop at MAX_PROBLEMS with a count of the rest, and each cell's
    message at MAX_MESSAGE: a notebook's record, feedback and CSV field stay small whatever a child reports."""
    from autograder.grading.record import MAX_MESSAGE, MAX_PROBLEMS, CellResult, Record, _bounded

    record = Record("nb.ipynb", "graded", reason="R" * 10**6)
    record.cells = [CellResult("t", 1.0, 0.0, "M" * 10**6), CellResult("u", 1.0, 1.0, "passed")]
    record.problems = [f"cell {i} raised " + "E" * 1990 for i in range(30_000)]
    out = _bounded(record).to_json()
    assert len(json.dumps(out)) < MAX_PROBLEMS + 3 * MAX_MESSAGE + 1000
    assert out["problems"][0] == record.problems[0] and out["problems"][-1].endswith(
        "more problem(s), not recorded"
    )
    assert out["problems"][-1].startswith(f"... and {30_000 - len(out['problems']) + 1} more")
    assert [c["message"][:6] for c in out["cells"]] == ["MMMMMM", "passed"] and out["score"] == 1.0
