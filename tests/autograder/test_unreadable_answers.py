"""What the grader cannot process about a submission's own source costs that submission the points of the function
it defines, with the reason; it is never "could not grade" (issue 25, item 5). An answer cell too deep for Python's
parser (a 100,000-term sum raises RecursionError, a long unary chain MemoryError) is read by the rules' search of
the source: that function's cells earn 0 and say why, every other function is graded as usual."""

from __future__ import annotations

import pytest
from course_helpers import grade_with_answers

pytestmark = pytest.mark.xdist_group("sandbox")  # children as Sandbox()'s default uid: see tests/conftest.py

ATTENTION = """
import math


def attention(q, k, v, causal=False):
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        tq, tk = scores.shape[-2:]
        scores = scores.masked_fill(~torch.ones(tq, tk, dtype=torch.bool, device=q.device).tril(), float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
"""

TOO_DEEP = {
    "a 100,000-term sum (RecursionError)": "TOTAL = " + " + ".join(["1"] * 100_000),
    "a 100,000-long unary chain (MemoryError)": "TOTAL = " + "-" * 100_000 + "1",
}


@pytest.mark.parametrize("expression", TOO_DEEP.values(), ids=TOO_DEEP.keys())
def test_an_answer_too_deep_to_parse_costs_its_function_and_nothing_else(tmp_path, expression):
    record = grade_with_answers(tmp_path, "01", {"attention": ATTENTION + "\n" + expression + "\n"})
    cells = {c.grade_id: c for c in record.cells}
    assert record.status == "graded", record.reason
    assert cells["test_attention"].score == 0
    assert cells["test_attention"].message.startswith(
        "attention earns nothing here: the answer cell that defines it cannot be read by the grader"
    )
    assert "nested too deeply for Python's parser" in cells["test_attention"].message
    assert cells["test_equivariance_error"].score == cells["test_equivariance_error"].points, cells[
        "test_equivariance_error"
    ].message
