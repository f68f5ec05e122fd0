"""The calls an answer may not make, and how they are found in its source.

Each checker grades one function the student writes. Its answer may not call posref's own implementation of that
function (the reference it is compared with) or of what the function is built from, nor what the exercise's
text forbids (``scaled_dot_product_attention`` in 01's ``attention``). Calling posref for what is not graded
(loading a checkpoint, drawing a plot) stays allowed.

Two searches apply each rule. Reading the source (``ast``) finds the one-line call early, with a friendly message:
``posref.apply_rope(...)``, ``posref.rope.apply_rope``, ``import posref as p; p.apply_rope``, ``from posref import
apply_rope as ref``, ``F.scaled_dot_product_attention``. Watching what runs (``posref.grading.watch``) finds the
rest, however it was reached (a star import, a name in a string, a private helper, a method, a subclass), while the
function runs its correctness cases. The score of record reads the answer cell's source in the grader
(``find_forbidden``) and watches in the child where the student's code runs, whose report of what ran costs the
function's cells (``ran_problem``); in the notebook the checkers do both on the function itself (``enforce_rules``),
as feedback. Code copied out of posref under another name is the honour code's business.

Source the grader cannot parse (a 100,000-term sum is too deep for Python's parser) is the submission's: the
function it would define earns nothing, with the reason (``UNREADABLE``), and the other answers are graded as usual.
"""

from __future__ import annotations

import ast
import functools
import inspect
import sys
import textwrap
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from posref.grading import watch
from posref.grading.failure import Cause, CheckFailed
from posref.i18n import N_, _

REFERENCE = N_("posref's own implementation of what this cell grades")


@dataclass(frozen=True)
class Rule:
    """``posref``: names of posref (any module of it) the answer may not use; ``anywhere``: attribute names it may
    not use whatever they belong to, with the reason the exercise gives; ``harness``: those of ``posref`` that the
    checker's own harness runs around the student's function (08's ``run_drop`` builds the model it hands to
    ``drop``), forbidden in the answer's source but not watched when they run."""

    posref: tuple[str, ...]
    anywhere: dict[str, str] = field(default_factory=dict)
    harness: tuple[str, ...] = ()


_SDPA = N_(
    "the exercise asks you to write attention from its formula, so a library's attention (torch's or posref's) "
    "is not an answer"
)


def torch_attention() -> tuple[str, ...]:
    """The names of every attention operator torch has, which an exercise that asks for attention's formula forbids
    all alike: the operators of ``torch.ops.aten`` whose name says attention or whose schema takes a query and a key
    (``scaled_dot_product_attention``, its math, flash, efficient and cuDNN kernels, the multi-head ones; read from
    torch's registry, so that an operator a later torch adds joins them), and torch's attention written in Python or
    built from them (``multi_head_attention_forward``, ``MultiheadAttention``, ``flex_attention``).
    ``tests/grading/test_watch.py`` holds the family against the registry."""
    names = {"multi_head_attention_forward", "MultiheadAttention", "flex_attention"}
    for schema in torch._C._jit_get_all_schemas():
        if schema.name.startswith("aten::"):
            name, arguments = schema.name.removeprefix("aten::"), {a.name for a in schema.arguments}
            if "attention" in name or {"query", "key"} <= arguments or {"q", "k"} <= arguments:
                names.add(name)
    return tuple(sorted(names))


_ROPE = ("apply_rope", "apply_rope_qk", "RotaryEmbedding", "apply_rope_compiled", "apply_rope_triton")
_FREQUENCIES = ("rope_frequencies", "rope_from_config", "RopeConfig", "SCALING_METHODS", "ntk_base", "yarn_mscale",
                "dynamic_ntk_alpha")  # fmt: skip

_ATTENTION = Rule(
    ("scaled_dot_product_attention", "attention_scores"), dict.fromkeys(torch_attention(), _SDPA)
)
RULES: dict[str, Rule] = {
    "check_attention": _ATTENTION,
    "check_scaled_dot_product_attention_speed": _ATTENTION,
    "check_equivariance_error": Rule(("equivariance_error", "is_permutation_equivariant")),
    "check_learned_positions": Rule(("LearnedPositionalEmbedding",)),
    "check_sinusoidal_pe": Rule(("sinusoidal_pe", "sinusoidal_frequencies")),
    "check_sinusoidal_pe_speed": Rule(("sinusoidal_pe", "sinusoidal_frequencies")),
    "check_shift_matrix": Rule(("sinusoidal_shift_matrix",)),
    "check_alibi_slopes": Rule(("alibi_slopes",)),
    "check_alibi_bias": Rule(("alibi_bias",)),
    "check_alibi_bias_speed": Rule(("alibi_bias",)),
    "check_t5_bucket": Rule(("t5_relative_position_bucket", "T5RelativeBias")),
    "check_t5_learned_bias": Rule(("t5_relative_position_bucket", "T5RelativeBias")),
    "check_t5_bucket_speed": Rule(("t5_relative_position_bucket", "T5RelativeBias")),
    "check_t5_learned_bias_speed": Rule(("t5_relative_position_bucket", "T5RelativeBias")),
    "check_rope_cos_sin": Rule(("rope_cos_sin", "RotaryEmbedding")),
    "check_apply_rope": Rule(_ROPE),
    "check_apply_rope_speed": Rule(_ROPE),
    "check_rope_scores": Rule(_ROPE),
    "check_rotations_from_step": Rule(()),  # posref has no function for it: nothing to forbid
    "check_step_from_two": Rule(()),  # nor for this one
    "check_score_by_distance": Rule(("rope_scores_by_distance",)),
    "check_pair_norms": Rule(("pair_norms",)),
    "check_p_rope": Rule(("p_rope_inv_freq",)),
    "check_per_position_loss": Rule(("per_position_loss",)),
    "check_per_position_loss_speed": Rule(("per_position_loss",)),
    "check_rope_handler_attention_speed": Rule(
        ("RoPEPositions", "make_position_handler", "with_positions", *_ROPE, "rope_cos_sin")
    ),
    "check_alibi_handler_attention_speed": Rule(
        ("ALiBiPositions", "make_position_handler", "with_positions", "alibi_slopes", "alibi_bias")
    ),
    "check_causal_mean_speed": Rule(("scaled_dot_product_attention", "attention_scores", "causal_mean")),
    "check_rope_handler": Rule(
        ("RoPEPositions", "make_position_handler", "with_positions", *_ROPE, "rope_cos_sin")
    ),
    "check_alibi_handler": Rule(
        ("ALiBiPositions", "make_position_handler", "with_positions", "alibi_slopes", "alibi_bias")
    ),
    "check_nope_handler": Rule(("NoPE", "make_position_handler", "with_positions")),
    # 08's drop and the NoPEHandler pasted in from 06 that it uses (that cell has no test of its own there)
    "check_drop": Rule(
        ("with_positions", "run_drop", "NoPE", "make_position_handler"),
        harness=("run_drop", "make_position_handler"),
    ),
    "check_causal_mean": Rule(("scaled_dot_product_attention", "attention_scores")),
    "check_frequencies": Rule(_FREQUENCIES),
    "check_rope_frequencies_linear": Rule(_FREQUENCIES),
    "check_rope_frequencies_ntk": Rule(_FREQUENCIES),
    "check_rope_frequencies_ntk_by_parts": Rule(_FREQUENCIES),
    "check_longrope_mutation": Rule(("mutate_factors", "project_factors", "longrope_search")),
    "check_rope_frequencies_yarn": Rule(_FREQUENCIES),
}


def _is_posref(module: str | None) -> bool:
    return module is not None and (module == "posref" or module.startswith("posref."))


def _posref_aliases(trees: Iterable[ast.AST]) -> set[str]:
    """Names that ``import`` statements bind to posref or one of its modules (``posref``, ``p`` of ``import posref
    as p``, ``rope`` of ``from posref import rope``)."""
    names = {"posref"}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names |= {a.asname or a.name.split(".")[0] for a in node.names if _is_posref(a.name)}
            elif isinstance(node, ast.ImportFrom) and _is_posref(node.module):
                names |= {a.asname or a.name for a in node.names}
    return names


def _root(node: ast.AST) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


UNREADABLE = N_(
    "cannot be read by the grader ({error} while parsing it: an expression nested too deeply for Python's parser, "
    "such as a sum of thousands of terms written out; build it with a loop or sum() instead)"
)


def _parse(source: str) -> ast.Module | None:
    """``source``'s tree; None if it is not Python (nothing to find in it: running it fails on its own). Raises
    ``RecursionError``/``MemoryError`` where the parser gives up on source nested too deeply."""
    try:
        return ast.parse(source)
    except SyntaxError:
        return None


def _tree(source: str) -> ast.Module | None:
    """``source``'s tree, or None for source that does not parse or is too deep to."""
    try:
        return _parse(source)
    except (RecursionError, MemoryError):
        return None


def find_forbidden(checker: str, source: str, context: Iterable[str] = ()) -> str | None:
    """The first forbidden use in ``source`` for ``checker``'s rule, in words ("calls posref.apply_rope, which is
    ..."), or None. ``context``: the sources of the other cells that run before (their imports name posref's
    modules too; one too deep to parse is left out). Source that does not parse has nothing to find; source too
    deep for the parser is a problem of its own (``UNREADABLE``)."""
    rule = RULES.get(checker)
    if rule is None:
        return None
    try:
        tree = _parse(source)
    except (RecursionError, MemoryError) as err:
        return _(UNREADABLE).format(error=type(err).__name__)
    if tree is None:
        return None
    others = [t for t in map(_tree, context) if t is not None]
    aliases = _posref_aliases([tree, *others])
    # posref's forbidden names imported by another cell, under any name that no cell defines again
    imported = {
        alias.asname or alias.name: f"{node.module}.{alias.name}"
        for t in others
        for node in ast.walk(t)
        if isinstance(node, ast.ImportFrom) and _is_posref(node.module)
        for alias in node.names
        if alias.name in rule.posref
    }
    for t in [tree, *others]:
        for node in t.body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name in imported:
                del imported[node.name]
            elif isinstance(node, ast.Assign):
                for name in (
                    n.id for target in node.targets for n in ast.walk(target) if isinstance(n, ast.Name)
                ):
                    imported.pop(name, None)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in imported:
            return _("uses {name} ({where}), which is {reference}").format(
                name=node.id, where=imported[node.id], reference=_(REFERENCE)
            )
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name in rule.posref and _is_posref(node.module):
                    return _("imports {name} from {module}, which is {reference}").format(
                        name=alias.name, module=node.module, reference=_(REFERENCE)
                    )
                if alias.name in rule.anywhere:
                    return _("imports {name} from {module}: {reason}").format(
                        name=alias.name, module=node.module, reason=_(rule.anywhere[alias.name])
                    )
        elif isinstance(node, ast.Attribute):
            if node.attr in rule.anywhere:
                return _("uses {name}: {reason}").format(
                    name=ast.unparse(node), reason=_(rule.anywhere[node.attr])
                )
            if node.attr in rule.posref and _root(node) in aliases:
                return _("uses {name}, which is {reference}").format(
                    name=ast.unparse(node), reference=_(REFERENCE)
                )
        elif isinstance(node, ast.Name) and node.id in rule.anywhere:
            return _("uses {name}: {reason}").format(name=node.id, reason=_(rule.anywhere[node.id]))
    return None


def binds(source: str, name: str) -> bool:
    """Whether ``source`` defines ``name`` at its top level (``def``, an assignment or an import); False for source
    that does not parse or is too deep to (then what it defines is unknown)."""
    tree = _tree(source)
    if tree is None:
        return False
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name == name:
            return True
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(n, ast.Name) and n.id == name for t in targets for n in ast.walk(t)):
                return True
        if isinstance(node, ast.Import | ast.ImportFrom):
            if any((a.asname or a.name.split(".")[0]) == name for a in node.names):
                return True
    return False


def broken_rule_message(function: str, problem: str) -> str:
    unreadable = (_(UNREADABLE).format(error=kind.__name__) for kind in (RecursionError, MemoryError))
    if problem in unreadable:  # the grader cannot tell what the cell defines
        return _("{function} earns nothing here: the answer cell that defines it {problem}.").format(
            function=function, problem=problem
        )
    return _(
        "{function} earns nothing here: its answer {problem}. The notebook's rules for answers list the calls an "
        "answer may not make; write the computation yourself."
    ).format(function=function, problem=problem)


def watch_target(checker: str) -> watch.Target | None:
    """What ``checker``'s rule forbids to run (``posref.grading.watch``); None for a checker without a rule."""
    rule = RULES.get(checker)
    return None if rule is None else watch.target(rule.posref, tuple(rule.anywhere), rule.harness)


def ran_problem(checker: str, ran: Sequence[str]) -> str:
    """What a function did, in words, when ``ran`` (names reported by ``posref.grading.watch``, a ``watch.Ran``) ran
    while it was checked under ``checker``'s rule: the first name with its reason and, where one of the student's own
    functions other than the one checked ran it (``Ran.through``), that function; and any others."""
    first, others = ran[0], [n for n in ran[1:] if n not in (watch.BLINDED, watch.UNFOLLOWED)]
    rule = RULES.get(checker, Rule(()))
    via = getattr(ran, "through", {}).get(first)
    if first == watch.UNFOLLOWED:
        why = _(
            "ran code in a thread that the grader's watch could not follow (one started past _thread and threading, "
            "or one that switched the watch off), which no answer needs"
        )
    elif first == watch.BLINDED or first.startswith(("sys.", "threading.")):
        # watch.BLINDED names it "(switched off)"; the sentence says so itself
        why = _("switched off the grader's watch of what runs ({first}), which no answer needs").format(
            first=first
        )
    else:
        torch_name = first.removeprefix("torch's ")
        if first.startswith("torch's ") and torch_name in rule.anywhere:
            why = _("ran {name} while it was checked: {reason}").format(
                name=first, reason=_(rule.anywhere[torch_name])
            )
        else:
            why = _("ran {name} while it was checked, which is {reference}").format(
                name=first, reference=_(REFERENCE)
            )
        if via is not None:  # one of the student's other functions ran it for the one checked
            why = _(
                "{problem}; your {function} called it, and what your other functions run for this answer counts as "
                "its own"
            ).format(problem=why, function=via)
    if not others:
        return why
    listed = ", ".join(others[:3]) + (", ..." if len(others) > 3 else "")
    return why + _(" (it also ran {names})").format(names=listed)


def _own_problem(checker: str, fn: Any) -> str | None:
    """What ``enforce_rules`` finds about a function in the notebook's own kernel: posref's function itself, or a
    forbidden call in its source."""
    rule = RULES.get(checker)
    if rule is None:
        return None
    if not (inspect.isfunction(fn) or inspect.isclass(fn)):  # e.g. the grader's RemoteFunction: its source is
        return None  # the answer cell's, which the grader reads itself
    if _is_posref(fn.__module__) and fn.__name__ in rule.posref:
        return _("is {name}, which is {reference}").format(
            name=f"{fn.__module__}.{fn.__name__}", reference=_(REFERENCE)
        )
    for name in getattr(getattr(fn, "__code__", None), "co_names", ()):  # the globals it reads
        value = fn.__globals__.get(name)
        if (inspect.isfunction(value) or inspect.isclass(value)) and _is_posref(value.__module__):
            if value.__name__ in rule.posref:
                return _("uses {name} ({where}), which is {reference}").format(
                    name=name, where=f"{value.__module__}.{value.__name__}", reference=_(REFERENCE)
                )
    try:
        source = inspect.getsource(fn)
    except (OSError, TypeError):
        return None
    return find_forbidden(checker, textwrap.dedent(source))


def watched(checker: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` run under ``checker``'s watch (``posref.grading.watch``): a call during which forbidden code ran
    fails the check with what ran, whatever the call returned or raised."""
    forbidden = watch_target(checker)
    # the namespace of the answer cells: the function's own globals (its __init__'s for a class)
    answers = getattr(fn, "__globals__", None) or getattr(getattr(fn, "__init__", None), "__globals__", None)

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        error = None
        with watch.watching(forbidden, answers) as ran:
            try:
                result = fn(*args, **kwargs)
            except Exception as err:  # reported below unless forbidden code ran first
                error = err
        if ran:
            raise CheckFailed(
                broken_rule_message(fn.__name__, ran_problem(checker, ran)), cause=Cause("rule")
            ) from error
        if error is not None:
            raise error
        return result

    return run


def enforce_rules(checker: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a ``check_<name>`` so that, called from a notebook (code run as ``__main__``), a function that
    breaks the rule fails the check with the reason: what its source names, then what runs while it is checked
    (``watched``; not while a speed check times it). Elsewhere the rule is not applied here: the course's tests pass
    posref's own functions to show that they pass, and the score of record applies it itself (it reads the answer
    cell's source, and the child where the answer runs watches it)."""
    return _in_the_notebook(checker, read_source=True)


def watch_rules(checker: Callable[..., Any]) -> Callable[..., Any]:
    """``enforce_rules`` for a checker whose function is the notebook's own wrapper around the answer (06's
    ``rope_handler_attention``, 08's ``drop_and_run``, which calls ``run_drop`` as it should): only what runs is
    watched, the wrapper's source is not the answer's."""
    return _in_the_notebook(checker, read_source=False)


def _in_the_notebook(checker: Callable[..., Any], *, read_source: bool) -> Callable[..., Any]:
    @functools.wraps(checker)
    def checked(fn: Any, *args: Any, **kwargs: Any) -> Any:
        if sys._getframe(1).f_globals.get("__name__") != "__main__":
            return checker(fn, *args, **kwargs)
        problem = _own_problem(checker.__name__, fn) if read_source else None
        if problem is not None:
            raise CheckFailed(broken_rule_message(fn.__name__, problem), cause=Cause("rule"))
        if not checker.__name__.endswith("_speed") and callable(fn):
            fn = watched(checker.__name__, fn)
        return checker(fn, *args, **kwargs)

    return checked
