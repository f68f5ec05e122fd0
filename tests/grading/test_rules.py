"""The calls an answer may not make are found in its source (in the grader) and in its function (in the
notebook), and calls the rules allow are left alone."""

from __future__ import annotations

import linecache
import re

import pytest

import posref
from posref.grading import CheckFailed, check_apply_rope
from posref.grading.rules import RULES, binds, find_forbidden

FORBIDDEN = [
    ("check_apply_rope", "def apply_rope(x, cos, sin, layout='half'):\n    return posref.apply_rope(x, cos, sin)"),
    ("check_apply_rope", "apply_rope = posref.rope.apply_rope"),
    ("check_apply_rope", "from posref import apply_rope as ref\ndef apply_rope(*a, **k):\n    return ref(*a, **k)"),
    ("check_apply_rope_speed", "from posref.rope import apply_rope"),
    ("check_rope_scores", "def rope_scores(q, k, c, s, layout='half'):\n    return pr.apply_rope(q, c, s) @ k.mT"),
    ("check_attention", "def attention(q, k, v):\n    return F.scaled_dot_product_attention(q, k, v)"),
    ("check_attention", "attention = torch.nn.functional.scaled_dot_product_attention"),
    ("check_attention", "from torch.nn.functional import scaled_dot_product_attention as sdpa"),
    ("check_sinusoidal_pe", "def sinusoidal_pe(n, d):\n    return posref.sinusoidal_pe(n, d)"),
    ("check_rope_frequencies_yarn", "def yarn_frequencies(*a):\n    return posref.rope_frequencies(*a)"),
]  # fmt: skip


@pytest.mark.parametrize(("checker", "source"), FORBIDDEN)
def test_a_forbidden_call_is_found_and_named(checker, source):
    context = ["import posref\nimport posref as pr\nimport torch.nn.functional as F"]
    problem = find_forbidden(checker, source, context)
    assert problem is not None, source
    assert "apply_rope" in problem or "scaled_dot_product_attention" in problem or "posref" in problem


ALLOWED = [
    ("check_rope_scores", "def rope_scores(q, k, c, s, layout='half'):\n    return apply_rope(q, c, s) @ k.mT"),
    ("check_apply_rope", "def apply_rope(x, cos, sin, layout='half'):\n    c = posref.rope_cos_sin\n    return x"),
    ("check_per_position_loss", "model = posref.load_checkpoint('x')\ndef per_position_loss(l, t):\n    return l"),
    ("check_attention", "def attention(q, k, v):\n    return torch.softmax(q @ k.mT, -1) @ v"),
    ("check_causal_mean", "def causal_mean(v):\n    return F.scaled_dot_product_attention(v, v, v)"),
    ("no_such_checker", "posref.apply_rope"),
    ("check_apply_rope", "this is not python ("),
]  # fmt: skip


def test_a_name_another_cell_imported_from_posref_is_found_unless_a_cell_defines_it_again():
    setup = "from posref import apply_rope as rotate\nfrom posref import apply_rope"
    answer = "def rope_scores(q, k, c, s, layout='half'):\n    return rotate(q, c, s) @ k.mT"
    assert "rotate (posref.apply_rope)" in find_forbidden("check_rope_scores", answer, [setup])
    own = "def apply_rope(x, cos, sin, layout='half'):\n    return x"
    answer = "def rope_scores(q, k, c, s, layout='half'):\n    return apply_rope(q, c, s) @ k.mT"
    assert find_forbidden("check_rope_scores", answer, [setup, own]) is None


@pytest.mark.parametrize(("checker", "source"), ALLOWED)
def test_what_the_rules_allow_is_left_alone(checker, source):
    assert find_forbidden(checker, source, ["import posref\nimport torch.nn.functional as F"]) is None


def test_every_checker_of_the_package_has_a_rule():
    import posref.grading as grading

    checkers = {name for name in grading.__all__ if name.startswith("check_")}
    assert checkers <= set(RULES), checkers - set(RULES)


def test_the_cell_that_defines_a_function_is_found():
    assert binds("import torch\n\ndef apply_rope(x):\n    return x", "apply_rope")
    assert binds("apply_rope = posref.apply_rope", "apply_rope")
    assert binds("from posref import apply_rope", "apply_rope")
    assert not binds("def helper():\n    def apply_rope(x):\n        return x", "apply_rope")


NOTEBOOK = """
import posref, torch
from posref.grading import check_apply_rope, check_attention, check_rope_scores

def apply_rope(x, cos, sin, layout="half"):
    return posref.apply_rope(x, cos, sin, layout=layout)

def attention(q, k, v, causal=False):
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)

from posref import apply_rope as library_rope

def rope_scores(q, k, cos, sin, layout="half"):
    return library_rope(q, cos, sin, layout=layout) @ library_rope(k, cos, sin, layout=layout).mT
"""


def _notebook() -> dict:
    """NOTEBOOK run as a notebook cell runs: in ``__main__``, its source where ``inspect`` finds it (IPython keeps
    each cell in ``linecache``)."""
    filename = "<notebook cell>"
    linecache.cache[filename] = (len(NOTEBOOK), None, NOTEBOOK.splitlines(True), filename)
    namespace = {"__name__": "__main__"}
    exec(compile(NOTEBOOK, filename, "exec"), namespace)
    return namespace


def test_in_the_notebook_posrefs_function_or_a_call_of_it_fails_with_the_reason():
    namespace = _notebook()
    calls = {
        "check_apply_rope(apply_rope)": "earns nothing here: its answer uses posref.apply_rope, which is posref's own",
        "check_apply_rope(posref.apply_rope)": "its answer is posref.rope.apply_rope, which is posref's own",
        "check_attention(attention)": "write attention from its formula",
        "check_rope_scores(rope_scores)": "uses library_rope (posref.rope.apply_rope), which is posref's own",
    }  # fmt: skip
    for call, message in calls.items():
        with pytest.raises(CheckFailed, match=re.escape(message)):
            exec(call, namespace)


def test_outside_a_notebook_the_checkers_take_posrefs_own_functions():
    check_apply_rope(posref.apply_rope)  # the course's tests show that the reference passes its own checker
