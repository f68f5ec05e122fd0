"""Notebooks 06-08 (length, scaling, nope): releases in sync with their sources, no stored outputs, each solution
runs top to bottom in fast mode, and grading gives the solution every point and the untouched release none.

The helpers are shared with tests/test_notebooks.py (01-05) in tests/notebook_helpers.py. Grading runs with
``POSREF_GRADING=1``, as the grader's sandbox sets it: these notebooks then train nothing and read the shipped
checkpoints, which the sandbox must be able to reach (``clean=True`` checks that every cell ran there).
"""

from __future__ import annotations

import notebook_helpers as nh
import pytest

ASSIGNMENTS = ["06_length", "07_scaling", "08_nope"]


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    course_dir = tmp_path_factory.mktemp("course")
    nh.generate_releases(course_dir, ASSIGNMENTS)
    return course_dir


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_release_is_in_sync_with_its_source(name, course):
    nh.assert_in_sync(name, course / "release")


@pytest.mark.parametrize(
    "path", [nh.source(n) for n in ASSIGNMENTS] + [nh.release(n) for n in ASSIGNMENTS], ids=str
)
def test_no_outputs_are_stored(path):
    nh.assert_no_outputs(path)


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_release_hides_solutions_and_hidden_tests(name):
    nh.assert_release_hides_solutions(name, extra_markers=("Instructor notes",))


@pytest.mark.slow
@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_solution_runs_top_to_bottom(name, tmp_path, monkeypatch):
    """Every cell of the solution runs without error with ``POSREF_FAST=1`` (its training included, tiny)."""
    nh.run_solution(name, tmp_path, monkeypatch, POSREF_THREADS="1")


@pytest.mark.slow
@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_autograde_round_trip(name, course, monkeypatch):
    nh.assert_round_trip(name, course, monkeypatch, clean=True)
