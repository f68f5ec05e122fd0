"""The calls an answer may not make, and how they are found in its source.

Each checker grades one function the student writes. Its answer may not call posref's own implementation of that
function (the reference it is compared with) or of what the function is built from, nor what the exercise's
text forbids (``scaled_dot_product_attention`` in 01's ``attention``). Calling posref for what is not graded
(loading a checkpoint, drawing a plot) stays allowed.

The search reads source code (``ast``), so it finds the one-line call: ``posref.apply_rope(...)``,
``posref.rope.apply_rope``, ``import posref as p; p.apply_rope``, ``from posref import apply_rope as ref``,
``F.scaled_dot_product_attention``. Code copied out of posref, or a name spelled out in a string for
``getattr``, is the honour code's business. The score of record runs the search in the grader on the answer
cell's source (``forbidden_call``), where the student's code cannot switch it off; the checkers run it in the
notebook on the function's own source (``enforce_rules``), as feedback.
"""

from __future__ import annotations

import ast
import functools
import inspect
import sys
import textwrap
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from posref.grading.report import CheckFailed

REFERENCE = "posref's own implementation of what this cell grades"


@dataclass(frozen=True)
class Rule:
    """``posref``: names of posref (any module of it) the answer may not use; ``anywhere``: attribute names it may
    not use whatever they belong to, with the reason the exercise gives."""

    posref: tuple[str, ...]
    anywhere: dict[str, str] = field(default_factory=dict)


_SDPA = (
    "the exercise asks you to write attention from its formula, so a library's attention (torch's or posref's) "
    "is not an answer"
)
_ROPE = ("apply_rope", "apply_rope_qk", "RotaryEmbedding", "apply_rope_compiled", "apply_rope_triton")
_FREQUENCIES = ("rope_frequencies", "rope_from_config", "RopeConfig", "SCALING_METHODS", "ntk_base", "yarn_mscale",
                "dynamic_ntk_alpha")  # fmt: skip

_ATTENTION = Rule(
    ("scaled_dot_product_attention", "attention_scores"), {"scaled_dot_product_attention": _SDPA}
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
    "check_drop": Rule(("with_positions", "run_drop", "NoPE", "make_position_handler")),
    "check_causal_mean": Rule(("scaled_dot_product_attention", "attention_scores")),
    "check_frequencies": Rule(_FREQUENCIES),
    "check_rope_frequencies_linear": Rule(_FREQUENCIES),
    "check_rope_frequencies_ntk": Rule(_FREQUENCIES),
    "check_ntk_pair_factor": Rule(_FREQUENCIES),
    "check_rope_frequencies_dynamic": Rule(_FREQUENCIES),
    "check_rope_frequencies_ntk_by_parts": Rule(_FREQUENCIES),
    "check_longrope_mutation": Rule(("mutate_factors", "project_factors", "longrope_search")),
    "check_rope_frequencies_yarn": Rule(_FREQUENCIES),
    "check_rope_frequencies_llama3": Rule(_FREQUENCIES),
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


def find_forbidden(checker: str, source: str, context: Iterable[str] = ()) -> str | None:
    """The first forbidden use in ``source`` for ``checker``'s rule, in words ("calls posref.apply_rope, which is
    ..."), or None. ``context``: the sources of the other cells that run before (their imports name posref's
    modules too). Source that does not parse has nothing to find."""
    rule = RULES.get(checker)
    if rule is None:
        return None
    try:
        tree = ast.parse(source)
        others = [ast.parse(s) for s in context]
    except SyntaxError:
        return None
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
            return f"uses {node.id} ({imported[node.id]}), which is {REFERENCE}"
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name in rule.posref and _is_posref(node.module):
                    return f"imports {alias.name} from {node.module}, which is {REFERENCE}"
                if alias.name in rule.anywhere:
                    return f"imports {alias.name} from {node.module}: {rule.anywhere[alias.name]}"
        elif isinstance(node, ast.Attribute):
            if node.attr in rule.anywhere:
                return f"uses {ast.unparse(node)}: {rule.anywhere[node.attr]}"
            if node.attr in rule.posref and _root(node) in aliases:
                return f"uses {ast.unparse(node)}, which is {REFERENCE}"
        elif isinstance(node, ast.Name) and node.id in rule.anywhere:
            return f"uses {node.id}: {rule.anywhere[node.id]}"
    return None


def binds(source: str, name: str) -> bool:
    """Whether ``source`` defines ``name`` at its top level (``def``, an assignment or an import)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
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
    return (
        f"{function} earns nothing here: its answer {problem}. The notebook's rules for answers list the calls an "
        f"answer may not make; write the computation yourself."
    )


def _own_problem(checker: str, fn: Any) -> str | None:
    """What ``enforce_rules`` finds about a function in the notebook's own kernel: posref's function itself, or a
    forbidden call in its source."""
    rule = RULES.get(checker)
    if rule is None:
        return None
    if not (inspect.isfunction(fn) or inspect.isclass(fn)):  # e.g. the grader's RemoteFunction: its source is
        return None  # the answer cell's, which the grader reads itself
    if _is_posref(fn.__module__) and fn.__name__ in rule.posref:
        return f"is {fn.__module__}.{fn.__name__}, which is {REFERENCE}"
    for name in getattr(getattr(fn, "__code__", None), "co_names", ()):  # the globals it reads
        value = fn.__globals__.get(name)
        if (inspect.isfunction(value) or inspect.isclass(value)) and _is_posref(value.__module__):
            if value.__name__ in rule.posref:
                return f"uses {name} ({value.__module__}.{value.__name__}), which is {REFERENCE}"
    try:
        source = inspect.getsource(fn)
    except (OSError, TypeError):
        return None
    return find_forbidden(checker, textwrap.dedent(source))


def enforce_rules(checker: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a ``check_<name>`` so that, called from a notebook (code run as ``__main__``), a function that
    breaks the rule fails the check with the reason. Elsewhere the rule is not applied here: the course's tests
    pass posref's own functions to show that they pass, and the grader reads the answer cell's source itself."""

    @functools.wraps(checker)
    def checked(fn: Any, *args: Any, **kwargs: Any) -> Any:
        in_notebook = sys._getframe(1).f_globals.get("__name__") == "__main__"
        problem = _own_problem(checker.__name__, fn) if in_notebook else None
        if problem is not None:
            raise CheckFailed(broken_rule_message(fn.__name__, problem))
        return checker(fn, *args, **kwargs)

    return checked
