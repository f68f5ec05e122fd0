"""What runs while a student's function is watched: posref's own implementation of what it is graded on, however it
is reached, and torch's forbidden functions, are reported by name; the student's own code and what the checker's
harness runs are not."""

from __future__ import annotations

import ast
import copy
import functools
import importlib
import inspect
import json
import sys
import types
import warnings
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import posref
from posref.grading.checks.lab import run_drop
from posref.grading.rules import watch_target as target
from posref.grading.watch import BLINDED, UNFOLLOWED, watching
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


# ---------------------------------------------------------------- posref's code under another name (issue 37.5)
# Each copy is self-contained: every function it runs is a code object compiled or rebuilt outside posref, so that
# neither identity nor (file, qualified name) knows it. The watch knows it by what it computes.


def _rebuilt(code: types.CodeType, filename: str) -> types.CodeType:
    """``code`` and every code object in it with another file, name, qualified name and first line."""
    consts = tuple(_rebuilt(c, filename) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(
        co_filename=filename, co_name="mine", co_qualname="mine", co_firstlineno=1, co_consts=consts
    )


def _every_code_rebuilt(module, filename: str = "<cell 3>") -> dict:
    """A copy of ``module``'s namespace in which each of its functions is rebuilt from ``_rebuilt`` code."""
    namespace = dict(vars(module))
    for name, fn in vars(module).items():
        if isinstance(fn, types.FunctionType) and fn.__module__ == module.__name__:
            copy = types.FunctionType(
                _rebuilt(fn.__code__, filename), namespace, name, fn.__defaults__, fn.__closure__
            )
            copy.__kwdefaults__ = fn.__kwdefaults__
            namespace[name] = copy
    return namespace


def _compiled_again(module, filename: str = "<cell 4>", edit=lambda tree: tree) -> dict:
    """``module``'s source compiled again under ``filename`` (after ``edit`` of its syntax tree), run in a namespace
    of its own: posref's code with no object of posref's."""
    tree = edit(ast.parse(inspect.getsource(module)))
    namespace = {"__name__": "mine", "__package__": "posref"}
    exec(compile(ast.fix_missing_locations(tree), filename, "exec"), namespace)
    return namespace


def _without_docstrings_and_renamed(tree: ast.Module) -> ast.Module:
    """Every function's docstring removed, every top-level function renamed (and the calls of it), every local
    variable of ``_apply_half`` renamed."""
    names = {n.name: f"mine{n.name}" for n in tree.body if isinstance(n, ast.FunctionDef)}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.ClassDef) and ast.get_docstring(node) is not None:
            node.body = node.body[1:] or [ast.Pass()]
        if isinstance(node, ast.FunctionDef) and node.name in names:
            if node.name == "_apply_half":
                local = {
                    n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
                }
                for n in ast.walk(node):
                    if isinstance(n, ast.Name) and n.id in local:
                        n.id = f"renamed_{n.id}"
            node.name = names[node.name]
        elif isinstance(node, ast.Name) and node.id in names:
            node.id = names[node.id]
    return tree


def _half_helper_only() -> dict:
    """Only ``_apply_half``'s source, under another file name, called by a function of the student's own."""
    source = "import torch\n" + inspect.getsource(posref.rope._apply_half).replace("_apply_half", "half_turn")
    namespace: dict = {}
    exec(compile(source, "<cell 5>", "exec"), namespace)
    namespace["apply_rope"] = lambda x, cos, sin: namespace["half_turn"](
        x, cos, sin, cos.shape[-1], torch.float32
    )
    return namespace


COPIES = {
    "every code object's file, name and first line replaced": lambda: _every_code_rebuilt(posref.rope)["apply_rope"](X, COS, SIN),
    "the module's source compiled again under another file name": lambda: _compiled_again(posref.rope)["apply_rope"](X, COS, SIN),
    "renamed, docstrings removed, locals renamed": lambda: _compiled_again(posref.rope, edit=_without_docstrings_and_renamed)["mineapply_rope"](X, COS, SIN),
    "only the private helper's source": lambda: _half_helper_only()["apply_rope"](X, COS, SIN),
    "the interleaved helpers rebuilt": lambda: _every_code_rebuilt(posref.rope)["apply_rope"](X, COS, SIN, layout="interleaved"),
}  # fmt: skip


@pytest.mark.parametrize("run", COPIES.values(), ids=COPIES.keys())
def test_posrefs_code_is_known_by_what_it_is_wherever_it_came_from(run):
    with watching(target("check_apply_rope")) as names:
        run()
    assert names and all(n.startswith("posref.rope.") for n in names), names


def test_a_copy_of_another_notebooks_reference_is_known_too():
    copied = _compiled_again(posref.absolute, "<cell 7>")
    with watching(target("check_sinusoidal_pe")) as names:
        copied["sinusoidal_pe"](6, 8)
    assert names[0] == "posref.absolute.sinusoidal_pe", names


def test_no_honest_implementation_of_the_course_is_taken_for_posrefs_code():
    # every function of the test batteries' student implementations (right and wrong) and of the model solutions
    from posref.grading.rules import RULES
    from posref.grading.watch import fingerprint

    known = {f: n for checker in RULES if (t := target(checker)) for f, n in t.contents.items()}
    sources = [p.read_text() for p in (Path(__file__).parent).glob("student_impls*.py")]
    for path in sorted((Path(__file__).parents[2] / "solutions").glob("0*/*.ipynb")):
        sources += [
            "".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"
        ]
    taken = []
    for source in sources:
        lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]  # magics
        code = compile("\n".join(lines), "<cell>", "exec")
        taken += [
            (c.co_qualname, known[fingerprint(c)]) for c in _every_code(code) if fingerprint(c) in known
        ]
    assert taken == []


def _every_code(code: types.CodeType):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _every_code(const)


# ---------------------------------------------------------------- threads the answer starts (issue 37.6)
# Each answer runs posref's rotation in another thread and waits for it: the watch follows the thread, or says that
# a thread got past it.

_WAIT = "done = threading.Event()\ndef work():\n    posref.apply_rope(X, COS, SIN)\n    done.set()\n"
THREAD_DOORS = {
    "_thread.start_new_thread": _WAIT + "import _thread\n(_thread.start_new_thread(work, ()), done.wait(10))",
    "start_new_thread bound before the call": _WAIT + "from _thread import start_new_thread as go\n(go(work, ()), done.wait(10))",
    "a fresh _thread module": _WAIT + "import importlib.util\nspec = importlib.util.find_spec('_thread')\n"
    "fresh = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(fresh)\n(fresh.start_new_thread(work, ()), done.wait(10))",
    "threading.setprofile(None) first": _WAIT + "def call():\n    threading.setprofile(None)\n    threading.Thread(target=work).start()\n    done.wait(10)\ncall()",
    "threading's profile hook emptied": _WAIT + "def call():\n    threading._profile_hook = None\n    threading.Thread(target=work).start()\n    done.wait(10)\ncall()",
    "a worker started before the call": _WAIT + "import queue\njobs = queue.Queue()\n"
    "threading.Thread(target=lambda: (jobs.get(), work()), daemon=True).start()\n(jobs.put(1), done.wait(10))",
    "a thread pool warmed before the call": "from concurrent.futures import ThreadPoolExecutor\npool = ThreadPoolExecutor(1)\n"
    "pool.submit(int).result()\npool.submit(posref.apply_rope, X, COS, SIN).result()",
}  # fmt: skip


@pytest.mark.parametrize("source", THREAD_DOORS.values(), ids=THREAD_DOORS.keys())
def test_every_thread_the_answer_starts_is_watched(source):
    names = ran("check_apply_rope", "import threading\n" + source)
    assert names and all(n.startswith("posref.rope.") or n == UNFOLLOWED for n in names), names


def test_a_thread_started_in_one_call_is_watched_in_the_next():
    namespace = {"posref": posref, "X": X, "COS": COS, "SIN": SIN}
    exec("import threading\n" + _WAIT + "go = threading.Event()\n"
         "def first():\n    threading.Thread(target=lambda: (go.wait(10), work()), daemon=True).start()\n"
         "def second():\n    go.set()\n    done.wait(10)\n", namespace)  # fmt: skip
    with watching(target("check_apply_rope")) as names:
        namespace["first"]()
    assert names == []
    with watching(target("check_apply_rope")) as names:
        namespace["second"]()
    assert names and all(n.startswith("posref.rope.") for n in names), names


# ---------------------------------------------------------------- torch's attention under any name (issue 37.7)

MHA = torch.nn.MultiheadAttention(8, 2, batch_first=True)
ATTENTION_FAMILY = {
    "aten's math attention": lambda: torch.ops.aten._scaled_dot_product_attention_math(Q, Q, Q),
    "its default overload": lambda: torch.ops.aten._scaled_dot_product_attention_math.default(Q, Q, Q),
    "torch._scaled_dot_product_attention_math": lambda: torch._scaled_dot_product_attention_math(Q, Q, Q),
    "the CPU flash kernel": lambda: torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(Q, Q, Q),
    "multi_head_attention_forward": lambda: MHA(X, X, X, need_weights=True),
    "the native multi-head attention": lambda: torch._native_multi_head_attention(
        X, X, X, 8, 2, MHA.in_proj_weight, MHA.in_proj_bias, MHA.out_proj.weight, MHA.out_proj.bias),
}  # fmt: skip


@pytest.mark.parametrize("call", ATTENTION_FAMILY.values(), ids=ATTENTION_FAMILY.keys())
def test_every_attention_operator_of_torchs_is_forbidden_where_the_exercise_forbids_a_librarys_attention(
    call,
):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # flex attention without torch.compile says it is slow
        with watching(target("check_attention")) as names:
            call()
    assert names and all(n.startswith("torch's ") for n in names), names


def test_the_attention_family_holds_every_attention_operator_in_torchs_registry():
    # an operator whose name says attention, or whose schema takes a query and a key, computes attention (or chooses
    # how to): the family is read from the registry, so an operator a later torch adds joins it
    from posref.grading.rules import RULES

    family = set(RULES["check_attention"].anywhere)
    for schema in torch._C._jit_get_all_schemas():
        if schema.name.startswith("aten::"):
            arguments = {a.name for a in schema.arguments}
            name = schema.name.removeprefix("aten::")
            if "attention" in name or {"query", "key"} <= arguments or {"q", "k"} <= arguments:
                assert name in family, schema
    assert {"scaled_dot_product_attention", "multi_head_attention_forward", "MultiheadAttention"} <= family
    # flex attention is Python, known by its code like multi_head_attention_forward (its first call takes 10 s)
    from torch.nn.attention.flex_attention import flex_attention

    assert target("check_attention").codes[id(flex_attention.__code__)][1] == "torch's flex_attention"


# ---------------------------------------------------------------- which of the student's functions ran it (37.9)


def test_the_students_own_function_that_ran_posrefs_code_is_named_with_it():
    from posref.grading.rules import ran_problem

    answers = {"__name__": "__main__", "posref": posref}
    exec(compile("def apply_rope(x, cos, sin):\n    return posref.apply_rope(x, cos, sin)\n\n"
                 "def rope_scores(q, k, cos, sin):\n    return apply_rope(q, cos, sin) @ apply_rope(k, cos, sin).mT\n",
                 "<cell 7>", "exec"), answers)  # fmt: skip
    with watching(target("check_rope_scores"), answers) as names:
        answers["rope_scores"](X, X, COS, SIN)
    assert names.through["posref.rope.apply_rope"] == "apply_rope", names.through
    assert (
        "of what this cell grades; your apply_rope called it, and what your other functions run for this answer "
        "counts as its own (it also ran" in ran_problem("check_rope_scores", names)
    )
    with watching(target("check_apply_rope"), answers) as names:  # the function checked ran it itself
        answers["apply_rope"](X, COS, SIN)
    assert names.through == {} and ran_problem("check_apply_rope", names).startswith(
        "ran posref.rope.apply_rope"
    )
