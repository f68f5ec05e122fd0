"""What runs while a student's function is watched: posref's own implementation of what it is graded on, however it
is reached, and torch's forbidden functions, are reported by name; the student's own code and what the checker's
harness runs are not."""

from __future__ import annotations

import copy
import functools
import importlib
import sys

import pytest
import torch
import torch.nn.functional as F

import posref
from posref.grading.checks.lab import run_drop
from posref.grading.rules import watch_target as target
from posref.grading.watch import BLINDED, watching
from posref.lab.model import build_model
from posref.lab.positions import NoPE, PositionHandler, make_position_handler

X = torch.randn(2, 5, 8)
COS, SIN = posref.rope_cos_sin(torch.arange(5), posref.scaling.default_inv_freq(8, 10000.0))
Q = torch.randn(1, 2, 4, 8)


def ran(checker: str, source: str) -> list[str]:
    """What runs while the last line of ``source`` (an expression) is evaluated under ``checker``'s watch, the
    lines before it run unwatched as an answer cell's definitions are."""
    *setup, last = source.strip().splitlines()
    namespace = {"posref": posref, "torch": torch, "X": X, "COS": COS, "SIN": SIN, "Q": Q}
    exec("\n".join(setup), namespace)
    with watching(target(checker)) as names:
        eval(last, namespace)
    return names


ROPE_CHEATS = {
    "a star import": "from posref.rope import *\napply_rope(X, COS, SIN)",
    "importlib, the name in strings": "import importlib\n"
    "getattr(importlib.import_module('posref.' + 'rope'), 'apply' + '_rope')(X, COS, SIN)",
    "a private helper": "from posref.rope import _apply_half\n_apply_half(X, COS, SIN, 4, torch.float32)",
    "the module's method": "r = posref.RotaryEmbedding(8, base=10000.0)\nr(X[None], X[None], positions=torch.arange(5))",
    "a copy of the function object": "import types\nf = posref.apply_rope\n"
    "g = types.FunctionType(f.__code__, f.__globals__, 'mine', f.__defaults__, f.__closure__)\n"
    "g.__kwdefaults__ = f.__kwdefaults__\n"
    "g(X, COS, SIN)",
    "a partial": "import functools\nfunctools.partial(posref.apply_rope, X)(COS, SIN)",
}


@pytest.mark.parametrize("source", ROPE_CHEATS.values(), ids=ROPE_CHEATS.keys())
def test_posrefs_rotation_is_reported_however_it_is_reached(source):
    names = ran("check_apply_rope", source)
    assert names and all(n.startswith("posref.rope.") for n in names), names


def test_a_reloaded_module_is_still_posrefs_code():
    reloaded = importlib.reload(importlib.import_module("posref.rope"))
    try:
        with watching(target("check_apply_rope")) as names:
            reloaded.apply_rope(X, COS, SIN)
        assert "posref.rope.apply_rope" in names
    finally:
        importlib.reload(reloaded)  # leave the module as every other test expects it


def test_torchs_attention_is_reported_from_python_and_from_c():
    for call in (
        lambda: F.scaled_dot_product_attention(Q, Q, Q),
        functools.partial(F.scaled_dot_product_attention, Q, Q, Q),  # called from C: the torch function mode
        lambda: torch.ops.aten.scaled_dot_product_attention(Q, Q, Q),
    ):
        with watching(target("check_attention")) as names:
            call()
        assert names == ["torch's scaled_dot_product_attention"]


def test_a_forbidden_class_is_reported_when_built_or_when_its_inherited_methods_run():
    class Mine(NoPE):  # a subclass of the forbidden class is the forbidden class
        pass

    built = NoPE()
    for call in (
        NoPE,
        lambda: built.rotate(Q, Q, None),
        Mine,
        lambda: make_position_handler("nope", d_model=8, n_heads=2),
    ):
        with watching(target("check_nope_handler")) as names:
            call()
        assert "posref.lab.positions.NoPE" in names


def test_the_students_own_code_and_allowed_posref_calls_are_not_reported():
    class NoPEHandler(PositionHandler):  # the base class's identity hooks are the student's to inherit
        pass

    handler = NoPEHandler()
    with watching(target("check_nope_handler")) as names:
        handler.rotate(Q, Q, None), NoPEHandler(), posref.rope_cos_sin(torch.arange(3), torch.ones(2))
    assert names == []
    with watching(target("check_attention")) as names:
        torch.softmax(Q @ Q.mT / 8**0.5, dim=-1) @ Q, posref.apply_rope(X, COS, SIN)
    assert names == []


def _drop(model):  # 08's model answer, with a handler of the student's own
    class NoPEHandler(PositionHandler):
        pass

    dropped = copy.deepcopy(model)
    dropped.positions = NoPEHandler()
    return dropped


def test_what_the_harness_runs_is_not_the_students_and_with_positions_called_as_a_method_is():
    weights = torch.nn.utils.parameters_to_vector(
        build_model(11, {"method": "rope"}, d_model=8, n_layers=1, n_heads=2).parameters()
    )
    idx = torch.randint(0, 11, (1, 6))
    with watching(target("check_drop")) as names:
        run_drop(_drop, weights, idx, 11, 8, 1, 2)  # builds a RoPE model through make_position_handler
    assert names == []
    with watching(target("check_drop")) as names:
        run_drop(lambda m: m.with_positions("nope"), weights, idx, 11, 8, 1, 2)
    assert names[0] == "posref.lab.model.TinyDecoder.with_positions"
    assert "posref.lab.positions.NoPE" in names


def test_switching_the_watch_off_is_reported_and_the_previous_profile_is_restored():
    def mine(frame, event, arg):
        return None

    sys.setprofile(mine)
    try:
        with watching(target("check_apply_rope")) as names:
            sys.setprofile(None)
        assert names == ["sys.setprofile", BLINDED]
        assert sys.getprofile() is mine
    finally:
        sys.setprofile(None)


def test_a_checker_without_a_rule_watches_nothing():
    assert target("no_such_checker") is None
    with watching(None) as names:
        posref.apply_rope(X, COS, SIN)
    assert names == []
