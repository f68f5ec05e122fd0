"""posref.i18n: which language posref speaks (set_language, then POSREF_LANG, then English) and what ``_`` returns
in it: the catalog's translation, or the English text where the catalog has none that counts (untranslated, fuzzy).
"""

from __future__ import annotations

import warnings

import polib
import pytest

from posref import i18n

HINT = "hint: {hint}"  # a message of report.py, translated in both catalogs


@pytest.fixture(autouse=True)
def english(monkeypatch: pytest.MonkeyPatch):
    """Each test starts in English with no POSREF_LANG, and leaves posref in English."""
    monkeypatch.delenv(i18n.ENV, raising=False)
    i18n.set_language(None)
    yield
    i18n.set_language(None)


@pytest.mark.parametrize(
    "spelling, language",
    [
        ("zh-TW", "zh-TW"),
        ("zh_TW", "zh-TW"),
        ("ZH-tw", "zh-TW"),
        ("zh-CN", "zh-CN"),
        ("zh_cn", "zh-CN"),
        ("en", "en"),
    ],
)
def test_set_language_takes_the_tag_or_the_locale_spelling(spelling, language):
    i18n.set_language(spelling)
    assert i18n.get_language() == language


@pytest.mark.parametrize("wrong", ["fr", "zh", "zh-HK", "", 7])
def test_an_unknown_language_is_refused_naming_the_known_ones(wrong):
    with pytest.raises(ValueError, match=r"expected one of en, zh-TW, zh-CN") as err:
        i18n.set_language(wrong)
    assert repr(wrong) in str(err.value)
    assert i18n.get_language() == "en"


def test_posref_lang_chooses_the_language_at_each_message(monkeypatch):
    assert i18n._(HINT) == HINT
    monkeypatch.setenv(i18n.ENV, "zh-TW")
    assert i18n.get_language() == "zh-TW"
    assert i18n._(HINT) == "提示：{hint}"
    monkeypatch.setenv(i18n.ENV, "zh_CN")
    assert i18n._(HINT) == "提示：{hint}"  # the same characters in both scripts
    assert i18n._("your cell") == "你的单元格"
    monkeypatch.setenv(i18n.ENV, "")
    assert i18n.get_language() == "en"


def test_set_language_wins_over_posref_lang_until_reset(monkeypatch):
    monkeypatch.setenv(i18n.ENV, "zh-TW")
    i18n.set_language("en")
    assert i18n._("your cell") == "your cell"
    i18n.set_language(None)
    assert i18n._("your cell") == "你的儲存格"


def test_speaking_sets_a_language_for_a_block_only(monkeypatch):
    monkeypatch.setenv(i18n.ENV, "zh-TW")
    with i18n.speaking("zh-CN"):
        assert i18n._("your cell") == "你的单元格"
        with i18n.speaking("en"):
            assert i18n._("your cell") == "your cell"
        assert i18n.get_language() == "zh-CN"
    assert i18n._("your cell") == "你的儲存格"  # POSREF_LANG's again: none was chosen before
    i18n.set_language("en")
    with pytest.raises(RuntimeError), i18n.speaking("zh-TW"):
        raise RuntimeError
    assert i18n.get_language() == "en"


def test_an_unknown_posref_lang_warns_once_and_speaks_english(monkeypatch):
    monkeypatch.setenv(i18n.ENV, "klingon-1")
    with pytest.warns(UserWarning, match=r"POSREF_LANG='klingon-1' is not a language posref speaks.*zh-TW"):
        assert i18n.get_language() == "en"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert i18n._("your cell") == "your cell"  # no second warning


def test_a_message_without_a_translation_stays_english():
    i18n.set_language("zh-TW")
    assert i18n._("a sentence no catalog holds") == "a sentence no catalog holds"


def test_only_translated_entries_count(tmp_path, monkeypatch):
    """A fuzzy entry (its English changed since it was translated) says the English text, as gettext does."""
    po = polib.POFile()
    po.append(polib.POEntry(msgid="kept", msgstr="保留"))
    po.append(polib.POEntry(msgid="changed", msgstr="舊的翻譯", flags=["fuzzy"]))
    po.append(polib.POEntry(msgid="new", msgstr=""))
    (tmp_path / "zh_TW").mkdir()
    po.save(str(tmp_path / "zh_TW" / "posref.po"))
    monkeypatch.setattr(i18n, "LOCALE_DIR", tmp_path)
    i18n.translations.cache_clear()
    try:
        i18n.set_language("zh-TW")
        assert [i18n._(m) for m in ("kept", "changed", "new")] == ["保留", "changed", "new"]
    finally:
        i18n.translations.cache_clear()


def test_catalogs_ship_inside_the_package():
    for language in i18n.LANGUAGES[1:]:
        path = i18n.catalog_path(language)
        assert path.is_file() and path.parent.parent == i18n.LOCALE_DIR
        assert path.parts[-3:] == ("locale", language.replace("-", "_"), "posref.po")


def _exercise_not_done(name: str, err: BaseException) -> str:
    from posref.notebook import ExerciseNotDone, uses

    with pytest.raises(ExerciseNotDone) as done:
        with uses(name):
            raise err
    return str(done.value)


@pytest.mark.parametrize(
    "name, zh_tw",
    [
        ("Exercise 3 (t5_bucket)", "請先完成練習 3 (t5_bucket)：這個儲存格要用到它的結果"),
        (
            "Exercises 1 and 2 (alibi_slopes, alibi_bias)",
            "請先完成練習 1 和 2 (alibi_slopes, alibi_bias)：這個",
        ),
        ("Exercises 1 to 7", "請先完成練習 1 到 7：這個儲存格"),
        (  # a free-text name: a space between the Chinese and the English word that meet
            "pasting your NoPEHandler from notebook 06",
            "請先完成 pasting your NoPEHandler from notebook 06：這個",
        ),
    ],
)
def test_exercise_not_done_speaks_the_students_language(name, zh_tw):
    i18n.set_language("zh-TW")
    said = _exercise_not_done(name, NotImplementedError())
    assert said.startswith(zh_tw) and said.endswith("（它的預留位置程式碼仍會引發 NotImplementedError）"), (
        said
    )
    i18n.set_language("en")
    assert _exercise_not_done(name, NotImplementedError()) == (
        f"finish {name} first: this cell uses its result (its stub still raises NotImplementedError)"
    )


@pytest.mark.parametrize(
    "language, said",
    [
        ("en", "finish pasting your NoPEHandler from notebook 06 first: this cell uses its result"),
        ("zh-TW", "請先完成 pasting your NoPEHandler from notebook 06：這個儲存格要用到它的結果"),
        ("zh-CN", "请先完成 pasting your NoPEHandler from notebook 06：这个单元格要用到它的结果"),
    ],
)
def test_a_free_text_exercise_is_spaced_from_the_chinese_it_meets(language, said):
    i18n.set_language(language)
    assert _exercise_not_done("pasting your NoPEHandler from notebook 06", NameError("x")).startswith(said)
    assert _exercise_not_done("Exercise 2", NotImplementedError()).startswith(
        {"en": "finish Exercise 2 first", "zh-TW": "請先完成練習 2：", "zh-CN": "请先完成练习 2："}[language]
    )


@pytest.mark.parametrize(
    "message, fields, said",
    [
        ("請先完成{x}：", {"x": "pasting"}, "請先完成 pasting："),  # Chinese, then a Latin letter
        ("{x}必須是正整數", {"x": "n_heads"}, "n_heads 必須是正整數"),  # the other way round
        ("第{n}列", {"n": 3}, "第 3 列"),  # digits too
        ("請先完成{x}：", {"x": "練習 3"}, "請先完成練習 3："),  # Chinese meeting Chinese: no space
        ("請先完成 {x}", {"x": "pasting"}, "請先完成 pasting"),  # a space already there: not doubled
        ("（{x!r}）", {"x": "a"}, "（'a'）"),  # full-width punctuation: no space
        ("finish {x} first", {"x": "練習"}, "finish 練習 first"),  # English: str.format's
        ("{x:.2f}元{{y}}", {"x": 1.5}, "1.50 元{y}"),  # conversions, specs, escaped braces
    ],
)
def test_fill_spaces_chinese_from_latin_only_where_a_field_meets_the_message(message, fields, said):
    assert i18n.fill(message, **fields) == said


def test_a_core_input_error_speaks_the_students_language():
    from posref import alibi_slopes

    i18n.set_language("zh-CN")
    with pytest.raises(ValueError, match=r"^n_heads 必须是正整数（int），但传入的是 0$"):
        alibi_slopes(0)


def test_what_the_grading_child_did_speaks_the_students_language():
    from posref.grading.child.remote import ChildFailed

    failed = ChildFailed("x")
    i18n.set_language("zh-TW")
    assert failed.reported_as == "沒有回傳任何東西：x"
    i18n.set_language("en")
    assert failed.reported_as == "gave nothing back: x"
