"""The speed check of the score of record: classic slow ``apply_rope`` solutions fail it and vectorised ones pass,
timed through the sandboxed children exactly as ``grade_notebook`` times them (on a loaded machine too: the
budget sits far from both kinds, and the chained rounds keep the transport out of the ratio)."""

from __future__ import annotations

from pathlib import Path

import pytest

from autograder.record import _Children, _run_check
from autograder.sandbox import Sandbox

STUDENT_IMPLS = Path(__file__).resolve().parent.parent / "grading" / "student_impls.py"


@pytest.fixture(scope="module")
def children(tmp_path_factory):
    """One child running ``tests/student_impls.py`` as its answer cell (the reference's child comes with it)."""
    sandbox = Sandbox()
    scratch = sandbox.scratch(None, tmp_path_factory.mktemp("speed"))
    kids = _Children([(0, STUDENT_IMPLS.read_text())], sandbox, scratch, [], timeout=120, budget=1800)
    yield kids
    kids.close()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["apply_rope_position_loop", "apply_rope_matrix_per_position"])
def test_a_classic_slow_solution_fails_the_speed_check_of_record(children, name):
    assert _run_check(children, "check_apply_rope", name) == "", "it is correct: only its speed is wrong"
    message = _run_check(children, "check_apply_rope_speed", name)
    assert message.startswith("apply_rope is too slow:"), message


@pytest.mark.slow
@pytest.mark.parametrize("name", ["apply_rope_rotate_half", "apply_rope_complex"])
def test_a_vectorised_solution_passes_the_speed_check_of_record(children, name):
    assert _run_check(children, "check_apply_rope_speed", name) == ""
