"""In the score of record, an answer that makes a call its notebook's rules forbid earns nothing for that
function's tests, with a message naming the call; the other answers are graded as usual."""

from __future__ import annotations

import re

import nbformat
import pytest
from course_helpers import grade_with_answers

from autograder.course import REPO
from autograder.grading.record import _broken_rule, grade_notebook
from autograder.sandbox.sandbox import Sandbox

pytestmark = pytest.mark.xdist_group("sandbox")  # children as Sandbox()'s default uid: see tests/conftest.py


def test_calling_sdpa_in_01s_attention_earns_nothing_for_it_and_changes_nothing_else(tmp_path):
    source = REPO / "solutions" / "01_order" / "01_order.ipynb"
    nb = nbformat.read(source, as_version=4)
    (attention,) = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "attention"]
    attention.source = (
        "import torch.nn.functional as F\n\ndef attention(q, k, v, causal=False):\n"
        "    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)\n"
    )
    submitted = tmp_path / "alice" / source.name
    submitted.parent.mkdir()
    nbformat.write(nb, submitted)
    record = grade_notebook(source, submitted, sandbox=Sandbox(), scratch_base=tmp_path / "scratch")
    cells = {c.grade_id: c for c in record.cells}
    assert record.status == "graded"
    assert cells["test_attention"].score == 0
    assert cells["test_attention"].message.startswith(
        "attention earns nothing here: its answer uses F.scaled_dot_product_attention: the exercise asks you"
    )
    assert cells["test_equivariance_error"].score == cells["test_equivariance_error"].points


def test_the_answer_cell_that_defines_the_function_is_the_one_read():
    program = [
        (0, "import posref\nimport posref as pr"),  # the notebook's own set-up cell: its imports count
        (
            3,
            "def apply_rope(x, cos, sin, layout='half'):\n    return pr.apply_rope(x, cos, sin, layout=layout)",
        ),
        (5, "def rope_scores(q, k, cos, sin, layout='half'):\n    return apply_rope(q, cos, sin) @ k.mT"),
        (7, "model = posref.load_checkpoint('rope')"),
    ]
    answers = {3, 5, 7}
    verdict = _broken_rule(program, answers, "check_apply_rope", "apply_rope")
    message = verdict.message
    assert str(verdict.cause) == "rule"
    assert message.startswith(
        "apply_rope earns nothing here: its answer uses pr.apply_rope, which is posref's own"
    )
    assert _broken_rule(program, answers, "check_rope_scores", "rope_scores") is None  # its own apply_rope
    assert _broken_rule(program, answers, "check_apply_rope_speed", "apply_rope") == verdict
    one_line = [(0, "import posref"), (3, "apply_rope = posref.apply_rope")]
    assert "posref.apply_rope" in _broken_rule(one_line, {3}, "check_apply_rope", "apply_rope").message


def test_each_notebook_states_the_rules_its_grader_enforces_once():
    from autograder.grading.record import checker_calls
    from posref.grading.rules import RULES, torch_attention

    for path in sorted((REPO / "solutions").glob("0*/*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        stated = [c.source for c in nb.cells if "**Rules for answers.**" in c.source]
        assert len(stated) == 1, f"{path.name}: the rules are stated {len(stated)} times"
        for cell in nb.cells:
            if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade"):
                for checker, fn in checker_calls(cell.source):
                    anywhere = set(RULES[checker].anywhere)
                    if anywhere & set(
                        torch_attention()
                    ):  # the family is stated as one, by its best-known member
                        assert ".scaled_dot_product_attention`" in stated[0], (path.name, fn)
                        assert "a library's attention" in stated[0], (path.name, fn)
                    named = {*RULES[checker].posref, *(anywhere - set(torch_attention()))}
                    # on one line of the list, after its colon: a name moved under another function is not stated
                    assert any(named <= line for line in _listed(stated[0])), (path.name, fn, named)


def _listed(stated: str) -> list[set[str]]:
    """The names each line of a rules cell's list forbids ("- `fn`: posref's `a`, `b`; ..."): the code spans after its
    colon, each by its last dotted part (`torch.nn.functional.x` is x)."""
    return [
        {name.rsplit(".", 1)[-1] for name in re.findall(r"`([^`]+)`", line.partition(":")[2])}
        for line in stated.splitlines()
        if line.startswith("- `")
    ]


# ---------------------------------------------------------------- what runs (issue 26, item 2)
# answers that name nothing forbidden in their source, yet run posref's implementation (or torch's attention) while
# they are checked: the child watches, and what it reports costs the function's cells, with a message naming it

STRINGS_STAR_AND_HELPERS = {
    "rope_cos_sin": 'import importlib\nrope_cos_sin = getattr(importlib.import_module("posref." + "rope"), "rope_" + "cos_sin")\n',
    "apply_rope": "from posref.rope import *\n",
    "rope_scores": (
        "import posref.rope as R\n\n\ndef rope_scores(q, k, cos, sin, layout='half'):\n"
        "    turn = R._apply_half if layout == 'half' else R._apply_interleaved\n"
        "    r = cos.shape[-1]\n"
        "    return turn(q, cos, sin, r, torch.float32) @ turn(k, cos, sin, r, torch.float32).transpose(-1, -2)\n"
    ),
}  # fmt: skip


def _cells(record) -> dict:
    assert record.status == "graded", record.reason
    return {c.grade_id: c for c in record.cells}


def test_04_names_in_strings_a_star_import_and_private_helpers_earn_nothing(tmp_path):
    cells = _cells(grade_with_answers(tmp_path, "04", dict(STRINGS_STAR_AND_HELPERS)))
    ran = {
        "test_rope_cos_sin": "rope_cos_sin earns nothing here: its answer ran posref.rope.rope_cos_sin while it was "
        "checked, which is posref's own implementation",
        "test_apply_rope": "apply_rope earns nothing here: its answer ran posref.rope.apply_rope while",
        "test_rope_scores": "rope_scores earns nothing here: its answer ran posref.rope._apply_",
    }
    for grade_id, message in ran.items():
        assert cells[grade_id].score == 0 and cells[grade_id].message.startswith(message), cells[
            grade_id
        ].message


def test_08_with_positions_called_as_a_method_of_the_students_model_earns_nothing(tmp_path):
    drop = "def drop(model):\n    return model.with_positions('nope')\n"
    cells = _cells(grade_with_answers(tmp_path, "08", {"drop": drop}))
    assert cells["test_drop"].score == 0
    assert cells["test_drop"].message.startswith(
        "drop_and_run earns nothing here: its answer ran posref.lab.model.TinyDecoder.with_positions while it was "
        "checked, which is posref's own implementation of what this cell grades; your drop called it"
    ), cells["test_drop"].message
    assert all(c.score == c.points for g, c in cells.items() if g != "test_drop"), cells


def test_01_torchs_attention_by_a_name_in_strings_earns_nothing_and_is_named(tmp_path):
    attention = (
        "import torch.nn.functional\n\n\ndef attention(q, k, v, causal=False):\n"
        "    sdpa = getattr(torch.nn.functional, 'scaled_dot_' + 'product_attention')\n"
        "    return sdpa(q, k, v, is_causal=causal)\n"
    )
    cells = _cells(grade_with_answers(tmp_path, "01", {"attention": attention}))
    assert cells["test_attention"].score == 0 and cells["test_attention_speed"].score == 0
    assert cells["test_attention"].message.startswith(
        "attention earns nothing here: its answer ran torch's scaled_dot_product_attention while it was "
        "checked: the exercise asks you to write attention from its formula"
    ), cells["test_attention"].message
    assert cells["test_equivariance_error"].score == cells["test_equivariance_error"].points


# ---------------------------------------------------------------- issue 37, items 5, 6, 7 and 9 through the record
# 04: apply_rope is posref's module compiled again under another name (5), rope_cos_sin runs posref's in a thread of
# _thread's (6), rope_scores is the student's own and calls that apply_rope (9: the message names it). 01: attention
# is aten's math attention under its operator name (7)

COPIED_AND_THREADED = {
    "rope_cos_sin": (
        "import _thread, threading\nimport posref.rope as _r\n\n\ndef rope_cos_sin(positions, inv_freq):\n"
        "    out, done = [], threading.Event()\n"
        "    _thread.start_new_thread(lambda: (out.append(getattr(_r, 'rope_' + 'cos_sin')(positions, inv_freq)), done.set()), ())\n"
        "    done.wait()\n    return out[0]\n"
    ),
    "apply_rope": (
        "import inspect\nimport posref.rope as _r\n\n_mine = {'__name__': 'mine'}\n"
        "exec(compile(inspect.getsource(_r), '<mine>', 'exec'), _mine)\napply_rope = _mine['apply' + '_rope']\n"
    ),
}  # fmt: skip


def test_04_posrefs_code_copied_or_in_a_thread_earns_nothing_and_an_answer_that_calls_it_is_told_which(
    tmp_path,
):
    cells = _cells(grade_with_answers(tmp_path, "04", dict(COPIED_AND_THREADED)))
    expected = {
        "test_rope_cos_sin": "rope_cos_sin earns nothing here: its answer ran posref.rope.rope_cos_sin while it was "
        "checked",
        "test_apply_rope": "apply_rope earns nothing here: its answer ran posref.rope.apply_rope while it was checked",
        "test_apply_rope_speed": "not timed: apply_rope fails its correctness check above",
        "test_rope_scores": "rope_scores earns nothing here: its answer ran posref.rope.apply_rope while it was "
        "checked, which is posref's own implementation of what this cell grades; your apply_rope called it",
    }  # fmt: skip
    for grade_id, message in expected.items():
        assert cells[grade_id].score == 0 and cells[grade_id].message.startswith(message), cells[
            grade_id
        ].message
    assert cells["test_rotations_from_step"].score == cells["test_rotations_from_step"].points


def test_01_a_librarys_attention_under_another_operators_name_earns_nothing(tmp_path):
    attention = (
        "import torch\n\n\ndef attention(q, k, v, causal=False):\n"
        "    op = getattr(torch.ops.aten, '_scaled_dot_product_' + 'attention_math')\n"
        "    return op(q, k, v, is_causal=causal)[0]\n"
    )
    cells = _cells(grade_with_answers(tmp_path, "01", {"attention": attention}))
    assert cells["test_attention"].score == 0 and cells["test_attention"].message.startswith(
        "attention earns nothing here: its answer ran torch's _scaled_dot_product_attention_math while it was "
        "checked: the exercise asks you to write attention from its formula"
    ), cells["test_attention"].message
    assert cells["test_equivariance_error"].score == cells["test_equivariance_error"].points
