"""posref's messages stay in step with their catalogs (issue 28, item 4: "a checker message has no translation"
fails here), keep their placeholders, and a checker that fails in zh-TW or zh-CN says so in Chinese.

The messages are read from the source (``autograder.editions.messages.extract``, an AST walk of every ``_("...")`` and
``N_("...")``), never from the catalogs themselves. After changing or adding a message: ``python -m
autograder.editions.messages`` adds it to both catalogs (untranslated, or fuzzy beside the old translation), then
translate it.
"""

from __future__ import annotations

import re
import textwrap

import polib
import pytest
import student_impls as s
import torch

from autograder.editions import messages
from posref import grading, i18n
from posref.grading import CheckFailed

LANGUAGES = i18n.LANGUAGES[1:]


@pytest.fixture(scope="module")
def source_messages() -> dict[str, list[tuple[str, int]]]:
    return messages.extract()


@pytest.fixture(scope="module", params=LANGUAGES)
def catalog(request) -> tuple[str, polib.POFile]:
    return request.param, polib.pofile(str(i18n.catalog_path(request.param)))


def _listed(entries) -> str:
    return "\n".join(f"  {e.msgid[:100]!r} ({', '.join(w for w, _line in e.occurrences)})" for e in entries)


def test_every_message_has_a_translation(source_messages, catalog):
    language, po = catalog
    entries = {e.msgid: e for e in po if not e.obsolete}
    missing = [m for m in source_messages if m not in entries]
    assert not missing, (
        f"{language}: messages not in the catalog (run python -m autograder.editions.messages): {missing}"
    )
    assert not po.untranslated_entries(), f"{language}: untranslated:\n{_listed(po.untranslated_entries())}"
    assert not po.fuzzy_entries(), (
        f"{language}: fuzzy (the English changed; check, then clear the flag):\n"
        + _listed(po.fuzzy_entries())
    )
    gone = [e for e in po if e.obsolete or e.msgid not in source_messages]
    assert not gone, f"{language}: obsolete (no longer in the source; delete them):\n{_listed(gone)}"


def test_every_translation_keeps_its_placeholders(catalog):
    language, po = catalog
    wrong = [
        f"  {e.msgid[:80]!r}: {messages.placeholders(e.msgid)} != {messages.placeholders(e.msgstr)}"
        for e in po.translated_entries()
        if messages.placeholders(e.msgid) != messages.placeholders(e.msgstr)
    ]
    assert not wrong, f"{language}: translations whose {{fields}} differ from the English:\n" + "\n".join(
        wrong
    )


def test_placeholders_are_the_format_fields_as_written():
    assert messages.placeholders("{what}: {n_bad} of {n} at {x!r} ({y:.3g})") == [
        "n",
        "n_bad",
        "what",
        "x!r",
        "y:.3g",
    ]
    assert messages.placeholders("no fields, M_{-k} aside") == ["-k"]


def test_extract_refuses_a_message_that_cannot_be_a_msgid(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "ok.py").write_text('X = N_("kept")\ny = _(X)\nz = _("said {n}").format(n=1)\n')
    assert list(messages.extract(tmp_path, ("pkg",))) == ["kept", "said {n}"]
    for bad in ('_(f"n = {n}")', '_("a" + b)', '_("a {n}".format(n=1))', "N_(x)"):
        (package / "bad.py").write_text(f"{bad}\n")
        with pytest.raises(ValueError, match=r"pkg/bad.py:1: N?_\(\.\.\.\) needs one string literal"):
            messages.extract(tmp_path, ("pkg",))


def test_update_marks_an_edited_message_fuzzy_beside_its_old_translation(tmp_path, monkeypatch):
    """Changing one English sentence shows the translator exactly which entry to redo, and how it read before."""
    monkeypatch.setattr(i18n, "LOCALE_DIR", tmp_path)
    old = "the bias must be a penalty: -slope * |i - j| is <= 0"
    po = polib.POFile()
    po.append(polib.POEntry(msgid=old, msgstr="偏置必須是懲罰項：-slope * |i - j| <= 0"))
    po.append(polib.POEntry(msgid="kept", msgstr="保留"))
    po.append(polib.POEntry(msgid="removed and unlike anything", msgstr="刪掉"))
    (tmp_path / "zh_TW").mkdir()
    po.save(str(tmp_path / "zh_TW" / "posref.po"))
    new = old + " and falls with distance"
    updated = messages.update(
        "zh-TW", {"kept": [("a.py", 1)], new: [("a.py", 2)], "brand new": [("b.py", 3)]}
    )
    entries = {e.msgid: e for e in updated}
    assert entries["kept"].msgstr == "保留" and not entries["kept"].fuzzy
    assert (
        entries[new].fuzzy and entries[new].previous_msgid == old and entries[new].msgstr.startswith("偏置")
    )
    assert entries["brand new"].msgstr == "" and not entries["brand new"].fuzzy
    assert entries["removed and unlike anything"].obsolete
    assert entries[old].obsolete  # kept as obsolete until the translator deletes it
    assert entries["kept"].occurrences == [("a.py", "")]


def test_mainland_terms_fix_what_opencc_leaves_taiwanese():
    """Rows and columns swap characters across the strait; the lecture's English words are capitalised."""
    assert (
        messages.mainland("第 p 列放的是位置 p，排列和序列不变，偶数栏放 sin")
        == "第 p 行放的是位置 p，排列和序列不变，偶数列放 sin"
    )
    assert (
        messages.mainland("把 token 的 key 依 key_position 放进 'key'")
        == "把 Token 的 Key 按 key_position 放进 'key'"
    )
    assert messages.mainland("少了遮罩：旋转 token 矢量") == "少了掩码：旋转 Token 向量"
    assert (
        messages.mainland("得到的是 {value}，{head} 个 head 的 value")
        == "得到的是 {value}，{head} 个头的 Value"
    )


# ---------------------------------------------------------------------------------------------------------------
# a real failing check of each notebook family, in zh-TW and zh-CN: the header, the hint and the comparison are
# Chinese, and no English sentence of the message is left


def _alibi_bias_signed(slopes, q_positions, k_positions):
    return slopes[:, None, None] * (q_positions[:, None] - k_positions[None, :]).abs().to(slopes.dtype)


def _squared_pair_norms(x, layout="half"):
    from posref import pair_norms

    return pair_norms(x, layout=layout) ** 2


def _linear_multiplied(head_dim, base, params, seq_len=None):
    inv_freq = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    return (inv_freq * params["factor"]).float(), 1.0


def _causal_sum(x):
    return x.cumsum(dim=-2)


FAMILIES = {
    # family: (checker, wrong answer, its hint in zh-TW, in zh-CN)
    "01 order": (
        grading.check_attention,
        s.attention_no_scale,
        "分數沒有除以 sqrt(head_dim)",
        "分数没有除以 sqrt(head_dim)",
    ),
    "02 absolute": (
        grading.check_sinusoidal_pe,
        s.sinusoidal_pe_cos_first,
        "sin 和 cos 對調了",
        "sin 和 cos 对调了",
    ),
    "03 relative": (grading.check_alibi_bias, _alibi_bias_signed, "偏置必須是懲罰項", "偏置必须是惩罚项"),
    "04 rope": (
        grading.check_apply_rope,
        s.apply_rope_sin_cos_swapped,
        "sin 和 cos 對調了",
        "sin 和 cos 对调了",
    ),
    "05 rope_analysis": (
        grading.check_pair_norms,
        _squared_pair_norms,
        "這些是長度的平方",
        "这些是长度的平方",
    ),
    "06 length": (
        grading.check_causal_mean,
        _causal_sum,
        "這是累加的總和（SUM），不是平均：第 t 列要除以",
        "这是累加的总和（SUM），不是平均：第 t 行要除以",
    ),
    "07 scaling": (
        grading.check_rope_frequencies_linear,
        _linear_multiplied,
        "Position Interpolation 把位置壓縮成 m -> m / factor",
        "位置插值（Position Interpolation）把位置压缩成 m -> m / factor",
    ),
}


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("family", FAMILIES)
def test_a_failing_check_speaks_the_students_language(family, language):
    check, wrong, *hints = FAMILIES[family]
    i18n.set_language(language)
    try:
        with pytest.raises(CheckFailed) as failed:
            check(wrong)
    finally:
        i18n.set_language(None)
    text = str(failed.value)
    head = {
        "zh-TW": r"在第 1 個案例（共 \d+ 個.*）與參考實作不同：",
        "zh-CN": r"在第 1 个用例（共 \d+ 个.*）与参考实现不同：",
    }[language]
    assert re.search(head, text), text
    assert {"zh-TW": "提示：", "zh-CN": "提示："}[language] + hints[LANGUAGES.index(language)] in text, text
    for english in (
        "differs from the reference",
        "on case",
        "hint:",
        "values differ",
        "largest error",
        "expected [",
    ):
        assert english not in text, f"{english!r} left in English:\n{text}"


def test_english_stays_the_default():
    with pytest.raises(CheckFailed) as failed:
        grading.check_attention(s.attention_no_scale)
    text = str(failed.value)
    assert text.startswith("attention differs from the reference on case 1 of 3:\n  attention(tensor float32")
    assert "\n  hint: scores are not divided by sqrt(head_dim)" in text


def test_a_broken_rule_is_said_in_the_students_language():
    source = textwrap.dedent(
        """
        from posref import scaled_dot_product_attention
        def attention(q, k, v, causal=False):
            return scaled_dot_product_attention(q, k, v, causal=causal)
        """
    )
    problem = {}
    for language in ("en", "zh-TW"):
        i18n.set_language(language)
        try:
            found = grading.rules.find_forbidden("check_attention", source)
            problem[language] = grading.rules.broken_rule_message("attention", found)
        finally:
            i18n.set_language(None)
    assert problem["en"].startswith(
        "attention earns nothing here: its answer imports scaled_dot_product_attention"
    )
    assert problem["zh-TW"].startswith(
        "attention 在這裡得不到分數：它的答案從 posref 匯入了 scaled_dot_product_attention"
    )
    assert "posref 自己對這個儲存格所評分內容的實作" in problem["zh-TW"]


def test_a_speed_verdict_speaks_the_students_language():
    """The too-slow verdict with its advice, from a measurement that says 40x (no clock involved)."""
    from posref.grading.speed.budgets import Budget
    from posref.grading.speed.rope import APPLY_ROPE_SPEED
    from posref.grading.speed.timing import Timing, within_budget

    def measure(**_kw):
        return Timing(40.0, [40.0, 39.0, 41.0]), torch.device("cpu")

    budget = Budget(max_ratio=27.0, measured="a test", shape=(1, 8, 256, 64))
    verdicts = {}
    for language in ("en", "zh-TW", "zh-CN"):
        i18n.set_language(language)
        try:
            with pytest.raises(CheckFailed) as failed:
                within_budget("apply_rope", measure, budget, torch.device("cpu"), inputs=APPLY_ROPE_SPEED.inputs,
                              advice=APPLY_ROPE_SPEED.advice, reference=None)  # fmt: skip
        finally:
            i18n.set_language(None)
        verdicts[language] = str(failed.value)
    assert verdicts["en"] == (
        "apply_rope is too slow: 40.0x the reference's time (budget 27x on cpu; median of 3 rounds on cpu, x of shape "
        "(1, 8, 256, 64) float32). Rotate all positions at once with elementwise products (x * cos + rotate(x) * "
        "sin): no Python loop over positions and no (D, D) rotation matrix per position."
    )
    assert verdicts["zh-TW"].startswith(
        "apply_rope 太慢了：花了參考實作 40.0 倍的時間（cpu 上的速度預算是 27 倍"
    )
    assert verdicts["zh-TW"].endswith(
        "用逐元素乘積一次旋轉所有位置（x * cos + rotate(x) * sin）：不要用 Python 迴圈跑過位置，也不要每個位置各用一個 (D, D) 的旋轉矩陣。"
    )
    assert verdicts["zh-CN"].startswith(
        "apply_rope 太慢了：花了参考实现 40.0 倍的时间（cpu 上的速度预算是 27 倍"
    )
    assert "不要用 Python 循环跑过位置" in verdicts["zh-CN"]


def test_a_speed_check_of_a_wrong_function_says_not_timed_in_the_students_language():
    i18n.set_language("zh-TW")
    try:
        with pytest.raises(CheckFailed) as failed:
            grading.check_apply_rope_speed(s.apply_rope_sin_cos_swapped)
    finally:
        i18n.set_language(None)
    text = str(failed.value)
    assert re.match(
        "沒有計時：apply_rope 沒通過隱藏案例的正確性檢查（速度分數只給正確的函式）：\napply_rope 在第 1 個案例（共 \\d+ 個.*）與參考實作不同",
        text,
    ), text
    assert "提示：sin 和 cos 對調了" in text


def test_no_message_is_said_when_its_module_is_imported():
    """``_(...)`` runs where a message is shown, never at import (a module-level constant, a dict of hints): said at
    import it stays in the language of that moment, English, whatever the student's edition (notebook 07's two
    ntk_pair_factor hints were English in zh-TW). A constant is marked ``N_`` and said with ``_`` where it is shown."""
    import ast
    from pathlib import Path

    root = Path(messages.ROOT)
    found = []
    for path in sorted(p for source in messages.SOURCES for p in (root / source).rglob("*.py")):
        pending = [(ast.parse(path.read_text(encoding="utf-8")), False)]
        while pending:
            node, in_function = pending.pop()
            for child in ast.iter_child_nodes(node):
                said = (
                    isinstance(child, ast.Call) and isinstance(child.func, ast.Name) and child.func.id == "_"
                )
                if said and not in_function:
                    found.append(f"{path.relative_to(root)}:{child.lineno}")
                inside = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
                pending.append((child, inside))
    assert found == []
