"""posref's argument errors speak the student's language (issue 28's leftovers): every error a student can get from
calling posref wrongly goes through ``_`` when it is raised, its English unchanged (the texts below are the ones
the code said before they were marked, written out by hand), and a zh-TW or zh-CN student reads it in Chinese.

That every marked message has a translation that keeps its placeholders is tests/grading/test_posref_catalogs.py's.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import torch

import posref
from posref import i18n
from posref.explorers.bias import bias_heatmap_figure
from posref.lab.positions import make_position_handler

PACKAGE = Path(posref.__file__).resolve().parent
# what may still raise a plain English text: the grader's internals (what they say to a student is the checkers'
# report, translated there), the instructor's benchmark and the language's own error
ENGLISH_ONLY = ("grading/", "bench.py", "bench_budgets.py", "i18n.py")
CHINESE = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture(autouse=True)
def english():
    i18n.set_language(None)
    yield
    i18n.set_language(None)


def _plain_text_raises(source: str) -> list[int]:
    """The lines of ``raise E("...")`` / ``raise E(f"...")``: a message that no language but English can say."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Raise)
        and isinstance(node.exc, ast.Call)
        and node.exc.args
        and isinstance(node.exc.args[0], ast.JoinedStr | ast.Constant)
    ]


def test_the_check_finds_a_plain_english_raise():
    found = _plain_text_raises('def f(n):\n    raise ValueError(f"n = {n}")\n\n\nraise TypeError("no")\n')
    assert sorted(found) == [2, 5]
    assert _plain_text_raises('raise ValueError(_("n = {n}").format(n=1))\nraise ValueError(message)\n') == []


def test_every_argument_error_is_marked_for_translation():
    plain = {
        path.relative_to(PACKAGE).as_posix(): lines
        for path in sorted(PACKAGE.rglob("*.py"))
        if not path.relative_to(PACKAGE).as_posix().startswith(ENGLISH_ONLY)
        and (lines := _plain_text_raises(path.read_text(encoding="utf-8")))
    }
    assert not plain, f"errors raised in English only (wrap the text in _(...).format(...)): {plain}"


_SCOPES = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.Lambda,
    ast.ClassDef,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
)
_SCOPES += (ast.GeneratorExp,)


def _shadowed_translations(source: str) -> list[int]:
    """The lines of the functions that call ``_(...)`` and also bind ``_`` in their own scope (``for _ in``, ``_,
    x = ...``): Python makes that ``_`` a local, so the message raises UnboundLocalError instead of being said."""
    found = []
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        own, stack = [], list(ast.iter_child_nodes(fn))
        while stack:  # the function's own scope: not its nested functions', lambdas' or comprehensions'
            node = stack.pop()
            own.append(node)
            if not isinstance(node, _SCOPES):
                stack.extend(ast.iter_child_nodes(node))
        binds = any(isinstance(n, ast.Name) and n.id == "_" and isinstance(n.ctx, ast.Store) for n in own)
        calls = any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "_" for n in own
        )
        if binds and calls:
            found.append(fn.lineno)
    return found


def test_the_shadow_check_finds_a_local_underscore():
    assert _shadowed_translations(
        "def f(n):\n    for _ in range(n):\n        pass\n    raise ValueError(_('x'))\n"
    )
    assert _shadowed_translations("def f(p):\n    _, q = p\n    return _('x')\n")
    kept = "def f(n):\n    xs = [0 for _ in range(n)]\n    g = lambda _: 0\n    return _('x')\n"
    assert _shadowed_translations(kept) == []  # a comprehension's or lambda's _ is its own


def test_no_function_that_says_a_message_hides_the_translator():
    shadowed = {
        path.relative_to(PACKAGE).as_posix(): lines
        for path in sorted(PACKAGE.rglob("*.py"))
        if (lines := _shadowed_translations(path.read_text(encoding="utf-8")))
    }
    assert not shadowed, f"functions that bind _ and call _(...) (rename the throwaway variable): {shadowed}"


WRONG_CALLS = {
    # name: (the wrong call, its English text as before, a piece of its zh-TW text, of its zh-CN text)
    "rope: cos/sin wider than x": (
        lambda: posref.apply_rope(torch.zeros(4, 8), torch.zeros(4, 5), torch.zeros(4, 5)),
        "cos/sin have 5 pairs (last dim) = 10 rotated dims, more than x's head_dim 8; "
        "expected cos.shape[-1] <= head_dim / 2",
        "cos/sin 有 5 對（最後一維）= 10 個旋轉的維度，比 x 的 head_dim 8 還多",
        "cos/sin 有 5 对（最后一维）= 10 个旋转的维度，比 x 的 head_dim 8 还多",
    ),
    "attention: bias heads": (
        lambda: posref.scaled_dot_product_attention(
            torch.zeros(1, 2, 3, 4),
            torch.zeros(1, 2, 3, 4),
            torch.zeros(1, 2, 3, 4),
            bias=torch.zeros(5, 3, 3),
        ),
        "bias has 5 heads but q has 2",
        "bias 有 5 個 head，但 q 有 2 個",
        "bias 有 5 个头，但 q 有 2 个",
    ),
    "t5 buckets, bidirectional": (
        lambda: posref.t5_relative_position_bucket(torch.arange(3), num_buckets=3),
        "num_buckets must be >= 4 (bidirectional: at least one exact and one log bucket per direction), got 3",
        "num_buckets 必須 >= 4（雙向：每個方向至少一個精確桶和一個對數桶），但傳入的是 3",
        "num_buckets 必须 >= 4（双向：每个方向至少一个精确桶和一个对数桶），但传入的是 3",
    ),
    "t5 buckets, one direction": (
        lambda: posref.t5_relative_position_bucket(
            torch.arange(3), bidirectional=False, num_buckets=8, max_distance=4
        ),
        "max_distance must exceed the 4 exactly bucketed distances (num_buckets=8), got max_distance=4",
        "max_distance 必須大於精確分桶的 4 個距離（num_buckets=8），但傳入的是 max_distance=4",
        "max_distance 必须大于精确分桶的 4 个距离（num_buckets=8），但传入的是 max_distance=4",
    ),
    "scaling: factor below 1": (
        lambda: posref.rope_frequencies(64, scaling={"rope_type": "linear", "factor": 0.5}),
        "rope_type 'linear': factor must be >= 1 (it stretches the context by that much), got 0.5",
        "rope_type 'linear'：factor 必須 >= 1（context 被拉長的倍數），但傳入的是 0.5",
        "rope_type 'linear'：factor 必须 >= 1（上下文被拉长的倍数），但传入的是 0.5",
    ),
    "scaling: unknown method": (
        lambda: posref.rope_frequencies(64, scaling={"rope_type": "nope"}),
        "unknown rope_type 'nope'; expected one of default, dynamic, linear, llama3, longrope, ntk, ntk_by_parts, yarn",
        "未知的 rope_type 'nope'；應為 default, dynamic, linear, llama3, longrope, ntk, ntk_by_parts, yarn 之一",
        "未知的 rope_type 'nope'；应为 default, dynamic, linear, llama3, longrope, ntk, ntk_by_parts, yarn 之一",
    ),
    "config: not a dict": (
        lambda: posref.rope_from_config(["rope_theta"]),
        "config must be a dict (a parsed config.json), got list",
        "config 必須是 dict（解析過的 config.json），但傳入的是 list",
        "config 必须是 dict（解析过的 config.json），但传入的是 list",
    ),
    "explorer: a head out of range": (
        lambda: bias_heatmap_figure(head=9, n_heads=4),
        "head must be an int in [0, 4) (one of the 4 heads), got 9",
        "head 必須是 [0, 4) 中的整數（4 個 head 之一），但傳入的是 9",
        "head 必须是 [0, 4) 中的整数（4 个头之一），但传入的是 9",
    ),
    "longrope search: parents": (
        lambda: posref.longrope_search(
            lambda f: 0.0, [torch.ones(4)], max_factor=4.0, population=2, parents=3
        ),
        "parents (3) cannot exceed population (2)",
        "parents（3）不能超過 population（2）",
        "parents（3）不能超过 population（2）",
    ),
    "lab: heads do not divide the width": (
        lambda: make_position_handler("rope", d_model=10, n_heads=3),
        "d_model (10) must be divisible by n_heads (3)",
        "d_model（10）必須能被 n_heads（3）整除",
        "d_model（10）必须能被 n_heads（3）整除",
    ),
}


@pytest.mark.parametrize("name", WRONG_CALLS)
def test_a_wrong_call_is_told_in_the_students_language(name):
    call, english, *chinese = WRONG_CALLS[name]
    said = {}
    for language in i18n.LANGUAGES:
        i18n.set_language(language)
        with pytest.raises((ValueError, TypeError)) as err:
            call()
        said[language] = str(err.value)
    assert said["en"] == english
    for language, piece in zip(i18n.LANGUAGES[1:], chinese, strict=True):
        assert piece in said[language], said[language]
    assert said["zh-TW"] != said["zh-CN"]  # each in its own script
