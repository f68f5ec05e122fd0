"""zh-CN from zh-TW (autograder/editions/simplified.py): OpenCC's Taiwan-to-mainland phrases, the glossary's terms
where that conversion is wrong, what a translation keeps left alone, and a reviewer's work never converted over."""

from __future__ import annotations

import polib
import pytest

from autograder.editions import simplified
from autograder.editions.simplified import convert

pytest.importorskip("opencc", reason="opencc is in the dev extra: pip install -e '.[dev]'")


@pytest.mark.parametrize(
    ("zh_tw", "english", "zh_cn"),
    [
        # OpenCC's phrases: Taiwan's words for code, memory, information
        ("程式碼使用記憶體與資訊。", "", "代码使用内存与信息。"),
        # the glossary where OpenCC is wrong for the course (儲存格 -> 保存格, 預設 -> 预设, 投影片 -> 投视频)
        ("執行這個儲存格，用預設值，看投影片。", "", "运行这个单元格，用默认值，看幻灯片。"),
        # a Latin term of the glossary only as a whole word, and the space it had beside Chinese goes
        ("這個 decoder 的 token 與 tokens", "", "这个解码器的 Token 与 tokens"),
        # code spans, formulas, tags and link targets stay as they are, Traditional characters and all
        (
            "`儲存格` 與 $x_{資訊}$ 與 <b 類='資訊'> 與 [資訊](資訊.md)",
            "",
            "`儲存格` 与 $x_{資訊}$ 与 <b 類='資訊'> 与 [信息](資訊.md)",
        ),
        # the Chinese the English holds (the lecture's example sentence, printed as it is by the code) stays
        ("句子 **貓吃魚嗎** 的資訊", "the sentence **貓吃魚嗎**", "句子 **貓吃魚嗎** 的信息"),
        # ... where it stands alone (the token 嗎), not where it is a word of the translation (the particle 嗎)
        ("{貓, 嗎}：「嗎」會不同嗎？", "{貓, 嗎}: 嗎", "{貓, 嗎}：“嗎”会不同吗？"),
        # a Latin term never inside an identifier or a hyphenated word
        ("sinusoidal 與 sinusoidal_pe 與 cross-attention", "", "正弦余弦与 sinusoidal_pe 与 cross-attention"),
    ],
)
def test_convert(zh_tw, english, zh_cn):
    assert convert(zh_tw, english) == zh_cn


def _tw(msgid: str, msgstr: str, *, fuzzy: bool = False, previous: str | None = None) -> polib.POFile:
    po = polib.POFile(wrapwidth=0)
    entry = polib.POEntry(msgid=msgid, msgstr=msgstr, previous_msgid=previous)
    if fuzzy:
        entry.flags.append("fuzzy")
    po.append(entry)
    return po


def test_an_unreviewed_entry_follows_its_zh_tw_text():
    first, done = simplified.simplified(_tw("Run it.", "執行程式。"), None)
    assert (first[0].msgstr, first[0].fuzzy, done.converted) == ("运行程序。", False, 1)
    again, done = simplified.simplified(_tw("Run it.", "執行程式碼。"), first)
    assert (again[0].msgstr, again[0].fuzzy, done.review) == ("运行代码。", False, [])


def test_a_reviewed_entry_is_kept_and_becomes_fuzzy_when_its_zh_tw_text_changes():
    made, _ = simplified.simplified(_tw("Run it.", "執行程式。"), None)
    made[0].tcomment = simplified.REVIEWED
    made[0].msgstr = "运行程序吧。"  # the reviewer's own words
    kept, done = simplified.simplified(_tw("Run it.", "執行程式。"), made)
    assert (kept[0].msgstr, kept[0].fuzzy, done.kept) == ("运行程序吧。", False, 1)
    changed, done = simplified.simplified(_tw("Run it.", "執行程式碼。"), kept)
    entry = changed[0]
    assert (entry.msgstr, entry.fuzzy, done.review) == ("运行程序吧。", True, ["Run it."])
    assert "converted again: 运行代码。" in entry.comment
    entry.flags.remove("fuzzy")  # the reviewer's verdict
    settled, done = simplified.simplified(_tw("Run it.", "執行程式碼。"), changed)
    assert (settled[0].msgstr, settled[0].fuzzy, done.kept) == ("运行程序吧。", False, 1)


def test_an_edited_entry_without_the_mark_is_kept_too():
    made, _ = simplified.simplified(_tw("Run it.", "執行程式。"), None)
    made[0].msgstr = "跑一下程序。"
    kept, done = simplified.simplified(_tw("Run it.", "執行程式。"), made)
    assert (kept[0].msgstr, kept[0].fuzzy, done.kept) == ("跑一下程序。", False, 1)


def test_a_reviewed_entry_whose_english_changed_is_fuzzy_under_the_new_message():
    made, _ = simplified.simplified(_tw("Run it.", "執行程式。"), None)
    made[0].tcomment = simplified.REVIEWED
    # the English changed: the zh-TW entry is fuzzy, its old English beside it
    merged, done = simplified.simplified(
        _tw("Run it now.", "執行程式。", fuzzy=True, previous="Run it."), made
    )
    entry = merged[0]
    assert (entry.msgid, entry.msgstr, entry.fuzzy, entry.previous_msgid) == (
        "Run it now.", "运行程序。", True, "Run it.",
    )  # fmt: skip
    assert done.review == ["Run it now."]


def test_an_untranslated_zh_tw_entry_gives_an_untranslated_zh_cn_one():
    made, done = simplified.simplified(_tw("Run it.", ""), None)
    assert (made[0].msgstr, made[0].fuzzy, done.converted) == ("", False, 0)
