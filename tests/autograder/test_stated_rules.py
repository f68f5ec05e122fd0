"""Every rule a notebook's text states about a graded function is checked (issue 26, item 4), and the mistakes it
names get their hint (issue 29, item 5): 02's learned table must raise an IndexError (a ValueError fails), keep x's
dtype (a float32 result for bfloat16 x fails) and hold its table as a parameter (a buffer never trains); 01's
equivariance_error that indexes the batch dimension is told so, whether that raises or returns a wrong number."""

from __future__ import annotations

import json

import pytest
from course_helpers import plain_child

import posref
from autograder.course import REPO
from posref.grading import CheckFailed, check_equivariance_error, check_learned_positions
from posref.grading.cases import hidden_seed
from posref.grading.child.remote import RemoteFunction


def _wrapper_cell() -> str:
    """02's own ``learned_positions``: the cell after the answer, which the checker calls (it builds the module)."""
    nb = json.loads((REPO / "solutions" / "02_absolute" / "02_absolute.ipynb").read_text())
    (cell,) = [c for c in nb["cells"] if "".join(c["source"]).startswith("def learned_positions(")]
    return "".join(cell["source"])


CHECKED = """
import torch
from torch import nn


class LearnedPositions(nn.Module):
    def __init__(self, max_positions, dim):
        super().__init__()
        self.max_positions = max_positions
        {table}

    def forward(self, x, positions):
        bad = positions[(positions < 0) | (positions >= self.max_positions)]
        if bad.numel():
            raise {error}(f"position {{int(bad[0])}} has no row: the table has {{self.max_positions}} rows")
        return (x + self.weight[positions]){cast}
"""
PARAMETER = "self.weight = nn.Parameter(torch.randn(max_positions, dim) * 0.02)"
BUFFER = 'self.register_buffer("weight", torch.randn(max_positions, dim) * 0.02)'


def _learned(table=PARAMETER, error="IndexError", cast=".to(x.dtype)") -> str:
    """02's answer (a parameter, an IndexError, x's dtype) with one of its three rules changed."""
    return CHECKED.format(table=table, error=error, cast=cast) + "\n" + _wrapper_cell() + "\ndevice = 'cpu'\n"


def _local(source: str):
    namespace: dict = {}
    exec(source, namespace)
    return namespace["learned_positions"]


def test_the_model_table_passes_visible_and_hidden():
    fn = _local(_learned())
    check_learned_positions(fn)
    for seed in range(10):
        with hidden_seed(seed):
            check_learned_positions(fn, hidden=True)


def test_a_value_error_fails_and_says_an_index_error_is_asked_for():
    with pytest.raises(CheckFailed, match="raise an IndexError") as failure:
        check_learned_positions(_local(_learned(error="ValueError")))
    assert "ValueError: position" in str(failure.value)


def test_a_value_error_raised_in_the_child_fails_too_and_an_index_error_subclass_passes():
    with (
        plain_child(_learned(error="ValueError")) as child,
        pytest.raises(CheckFailed, match="raise an IndexError"),
    ):
        check_learned_positions(RemoteFunction(child, "learned_positions"), hidden=True)
    own = "class PositionError(IndexError):\n    pass\n" + _learned(error="PositionError")
    with plain_child(own) as child:
        check_learned_positions(RemoteFunction(child, "learned_positions"), hidden=True)


def test_a_result_not_in_xs_dtype_fails_visible_and_every_hidden_draw():
    fn = _local(_learned(cast=".float()"))
    with pytest.raises(CheckFailed, match="expected dtype torch.bfloat16"):
        check_learned_positions(fn)
    for seed in range(200):
        with hidden_seed(seed), pytest.raises(CheckFailed, match="expected dtype"):
            check_learned_positions(fn, hidden=True)


def test_a_table_kept_as_a_buffer_fails_with_the_reason():
    with pytest.raises(CheckFailed, match="LearnedPositions.weight must be an nn.Parameter"):
        check_learned_positions(_local(_learned(table=BUFFER)))


def equivariance_error_batch_indexed(f, x, perm):
    """The mistake 01 names: P x written x[perm], which permutes the batch of a batched x."""
    return float((f(x[perm]) - f(x)[perm]).abs().max())


BATCH_HINT = "x may carry a batch dimension, (B, T, d): permute the positions, the next-to-last dim"


def test_an_equivariance_error_that_indexes_the_batch_is_told_so_when_it_raises_and_when_it_is_wrong():
    with pytest.raises(CheckFailed) as failure:  # the visible batched case raises an IndexError
        check_equivariance_error(equivariance_error_batch_indexed)
    assert "raised IndexError" in str(failure.value) and BATCH_HINT in str(failure.value)
    for seed in range(50):  # hidden: either way, the hint
        with hidden_seed(seed), pytest.raises(CheckFailed) as failure:
            check_equivariance_error(equivariance_error_batch_indexed, hidden=True)
        assert BATCH_HINT in str(failure.value), str(failure.value)
    check_equivariance_error(posref.equivariance_error, hidden=True)  # the right answer passes


def test_the_batch_hint_travels_from_the_child():
    code = "def equivariance_error(f, x, perm):\n    return float((f(x[perm]) - f(x)[perm]).abs().max())\n"
    with plain_child(code) as child, pytest.raises(CheckFailed, match="x may carry a batch dimension"):
        check_equivariance_error(RemoteFunction(child, "equivariance_error"))
