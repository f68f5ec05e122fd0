"""The exercise text states what its checker holds an answer to: the output dtype it accepts, the input's dtype it
keeps, and (once per notebook, in the rules cell) that a graded function leaves its tensor arguments unchanged; 01's
rules cell says the rules in full, the others their core and a link to 01's."""

from __future__ import annotations

import nbformat
import pytest
import torch

import posref
from autograder.course import REPO
from posref import grading
from posref.grading import CheckFailed

NOTEBOOKS = sorted((REPO / "solutions").glob("0*/*.ipynb"))


def _exercise_text(notebook: str, grade_id: str) -> str:
    """The markdown cell just above the answer cell ``grade_id``."""
    cells = nbformat.read(REPO / "solutions" / notebook / f"{notebook}.ipynb", as_version=4).cells
    (i,) = [i for i, c in enumerate(cells) if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id]
    return next(c.source for c in reversed(cells[:i]) if c.cell_type == "markdown")


FLOAT64_OUTPUTS = [
    ("02_absolute", "sinusoidal_pe", grading.check_sinusoidal_pe, lambda n, d, base=10000.0: (
        posref.sinusoidal_pe(n, d, base=base).double())),
    ("02_absolute", "shift_matrix", grading.check_shift_matrix, lambda k, d, base=10000.0: (
        posref.sinusoidal_shift_matrix(k, d, base=base, dtype=torch.float64))),
    ("03_relative", "alibi_slopes", grading.check_alibi_slopes, lambda n: posref.alibi_slopes(n, dtype=torch.float64)),
]  # fmt: skip


@pytest.mark.parametrize(("notebook", "grade_id", "check", "fn"), FLOAT64_OUTPUTS, ids=lambda v: str(v)[:20])
def test_a_float32_exercise_that_accepts_float64_says_so(notebook, grade_id, check, fn):
    check(fn)  # a correct float64 answer earns the points...
    text = _exercise_text(notebook, grade_id)
    assert "float32" in text
    assert "float64 is accepted too" in text, text  # ...so the text that asks for float32 must not refuse it


def test_pair_norms_says_it_keeps_the_inputs_dtype():
    def float32_out(x, layout="half"):
        a, b = x.chunk(2, -1) if layout == "half" else (x[..., 0::2], x[..., 1::2])
        return (a.float() ** 2 + b.float() ** 2).sqrt()

    with pytest.raises(CheckFailed, match="the input's dtype"):
        grading.check_pair_norms(float32_out)
    assert "in `x`'s dtype" in _exercise_text("05_rope_analysis", "pair_norms")


def _rules(path) -> str:
    """The notebook's one rules cell."""
    (rules,) = [
        c.source for c in nbformat.read(path, as_version=4).cells if "**Rules for answers.**" in c.source
    ]
    return rules


FULL = REPO / "solutions" / "01_order" / "01_order.ipynb"  # the one notebook that states the rules in full


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_each_rules_cell_states_that_inputs_stay_unchanged(path):
    rules = _rules(path)
    assert "leave its tensor arguments as they were" in rules
    assert "work on new tensors" in rules


def test_01s_rules_cell_states_that_what_runs_is_watched_earlier_answers_included():
    """The score of record gives 0 to an answer during whose check posref's version ran, reached any way, through
    the student's own earlier answer too (issue 37, item 9; ``posref.grading.watch``, the same in every notebook):
    01's rules cell, the one that states the rules in full, says that what runs is watched, and that what one's
    earlier answers run counts."""
    rules = _rules(FULL)
    assert "also watches what your function runs while it is checked" in rules
    assert "calling your own functions from earlier answers" in rules
    assert "what they run while that answer is checked counts as its own" in rules


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p != FULL], ids=lambda p: p.stem)
def test_every_other_rules_cell_says_any_route_counts_and_links_to_01s_in_full(path):
    """02-08 state the rules' core once more (issue 39, item 10: the student reads the whole text once, in 01) and
    link to 01's cell for the rest; the link leads to 01."""
    rules = _rules(path)
    assert "however they are reached" in rules
    link = "../01_order/01_order.ipynb"
    assert f"[01 order]({link}) gives these rules in full" in rules
    assert (path.parent / link).resolve() == FULL.resolve()
    assert "also watches what your function runs" not in rules  # the whole text is 01's alone


def test_a_right_answer_that_changes_its_input_fails_as_the_rules_cell_says():
    def pair_norms_in_place(x, layout="half"):
        a, b = x.chunk(2, -1) if layout == "half" else (x[..., 0::2], x[..., 1::2])
        return a.mul_(a).add_(b * b).sqrt()

    with pytest.raises(CheckFailed, match="changes its input in place"):
        grading.check_pair_norms(pair_norms_in_place)
