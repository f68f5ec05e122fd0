"""Notebooks 06-08 (length, scaling, nope): releases in sync with their sources, no stored outputs, each solution
runs top to bottom in fast mode, and autograding gives the solution every point and the untouched release none.

Autograding runs with ``POSREF_GRADING=1``, as the grader does: the notebooks then train nothing and use the
shipped checkpoints. Set ``POSREF_NOTEBOOK_TIMES`` to a file to collect the run times (also printed; ``pytest -s``).
"""

from __future__ import annotations

import notebook_helpers as nh
import pytest

ASSIGNMENTS = ["06_length", "07_scaling", "08_nope"]


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_release_is_in_sync_with_its_source(name, tmp_path):
    nh.assert_in_sync(name, tmp_path)


@pytest.mark.parametrize(
    "path", [nh.source(n) for n in ASSIGNMENTS] + [nh.release(n) for n in ASSIGNMENTS], ids=str
)
def test_no_outputs_are_stored(path):
    nh.assert_no_outputs(path)


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_release_hides_solutions_and_hidden_tests(name):
    text = nh.release(name).read_text()
    for marker in ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "hidden=True", "Instructor notes"):
        assert marker not in text, f"{name}: the release still contains {marker!r}"
    assert "raise NotImplementedError()" in text


@pytest.mark.slow
@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_solution_runs_top_to_bottom(name, tmp_path):
    """Every cell of the solution runs without error with ``POSREF_FAST=1`` (training included, tiny)."""
    seconds = nh.execute(nh.source(name), nh.notebook_env(tmp_path, POSREF_THREADS="1"), tmp_path)
    nh.report_time(f"{name} (solution, POSREF_FAST=1, nbclient)", seconds)


@pytest.mark.slow
@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_autograde_gives_the_solution_full_marks_and_the_release_none(name, tmp_path):
    scores = nh.autograde(name, tmp_path, POSREF_GRADING="1", POSREF_THREADS="1")
    solved, possible = scores["solution"]
    assert possible > 0
    assert solved == possible, f"{name}: the solution scored {solved} of {possible} autograded points"
    assert scores["release"][0] == 0, f"{name}: the untouched release scored {scores['release'][0]} points"


@pytest.mark.slow
@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_score_of_record_in_the_sandbox(name, tmp_path):
    """The grader's own path (``autograder.record``: answer cells in the sandbox, checkers in the grader): every
    cell of the solution runs there (it needs ``data/``), the solution gets every point and the release none."""
    from autograder.record import grade_notebook
    from autograder.sandbox import Sandbox

    sandbox = Sandbox()
    solved = grade_notebook(nh.source(name), nh.source(name), sandbox=sandbox, scratch_base=tmp_path / "s")
    assert solved.status == "graded" and solved.problems == [], (solved.reason, solved.problems)
    assert solved.max_score > 0 and solved.score == solved.max_score, [c.message for c in solved.cells]
    untouched = grade_notebook(
        nh.source(name), nh.release(name), sandbox=sandbox, scratch_base=tmp_path / "r"
    )
    assert untouched.status == "graded" and untouched.score == 0, [c.message for c in untouched.cells]
