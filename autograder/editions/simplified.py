"""The zh-CN catalogs made from the zh-TW ones: the glossary's zh-CN terms (locale/glossary.csv) where the zh-TW text
has the zh-TW term, then OpenCC's Taiwan-to-mainland conversion (config ``tw2sp``: characters and phrases, e.g.
程式碼 -> 代码, 記憶體 -> 内存) for the rest. The glossary goes first because OpenCC is wrong for some of the course's
words (儲存格 -> 保存格, not 单元格; 序列 -> 串行; 投影片 -> 投视频) and leaves Taiwan's words for others (實作, 預設).

What a translation keeps exactly (formulas, code spans, tags, link targets: ``editions.protected_parts``) and the
Chinese the English text itself holds (the lecture's example sentences, e.g. 貓吃魚嗎, which the code cells print as
they are in every edition) are not converted.

A zh-CN entry says where it came from in an extracted comment, ``#. tw2sp: zh_TW <hash> -> <hash>`` (hashes of the
zh-TW text it was made from and of the conversion made). A reviewer who has read an entry marks it with the
translator comment ``# reviewed``; an entry that is reviewed, or whose text is not the conversion it was made as (a
reviewer edited it), is never converted again: when its zh-TW text (or its English) changes it becomes ``fuzzy``,
its text kept, the new conversion in a comment beside it, until the reviewer removes the flag. Every other entry is
the conversion of the zh-TW text as it is now (none while that is untranslated or fuzzy).
"""

from __future__ import annotations

import csv
import hashlib
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import polib

from autograder.editions.catalogs import LOCALE_DIR
from autograder.editions.notebook import PROTECTED, string_literal

GLOSSARY = LOCALE_DIR / "glossary.csv"
OPENCC_CONFIG = "tw2sp"
REVIEWED = "reviewed"
_STAMP = re.compile(r"^tw2sp: zh_TW ([0-9a-f]{8}) -> ([0-9a-f]{8})$", re.MULTILINE)
_HAN = r"[\u3400-\u9fff\uf900-\ufaff]"
_CJK = re.compile(_HAN + "+")
_CHINESE = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uf900-\ufaff\uff00-\uffef]")  # characters and punctuation
_LATIN = re.compile(r"[A-Za-z]")
_QUOTES = str.maketrans("「」『』〈〉", "“”‘’《》")
_MASK = 0xF0000  # private-use code points stand for the parts kept as they are while OpenCC converts


@cache
def _opencc():
    import opencc  # a maintainer's tool (the dev extra): building editions never needs it

    return opencc.OpenCC(OPENCC_CONFIG)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:8]


@cache
def glossary_terms(path: Path = GLOSSARY) -> dict[str, str]:
    """The glossary's zh-TW term -> its zh-CN term, for every term of two characters or more (a row giving
    alternatives, ``秒針 / 時針``, gives each pair when both columns give as many). A term whose two columns are the
    same (序列, 向量) is there to keep OpenCC from changing it (序列 -> 串行, 向量 -> 矢量)."""
    terms = {}
    with open(path, encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            tw, cn = row["zh-TW"].strip(), row["zh-CN"].strip()
            pairs = [(tw, cn)]
            if tw.count(" / ") == cn.count(" / ") > 0:
                pairs += list(zip(tw.split(" / "), cn.split(" / "), strict=True))
            terms.update((a, b) for a, b in pairs if len(a) > 1 and b and (_CJK.search(a) or a != b))
    return terms


@cache
def _term_pattern() -> re.Pattern:
    """One alternation of the glossary's zh-TW terms, longest first (a Latin term only as a whole word), with the
    space on either side of it, which goes where a Chinese term then meets Chinese (decoder 的 -> 解码器的)."""
    terms = sorted(glossary_terms(), key=len, reverse=True)
    parts = [rf"(?<![\w-]){re.escape(t)}(?![\w-])" if _LATIN.search(t) else re.escape(t) for t in terms]
    return re.compile(rf"(?P<before> ?)(?P<term>{'|'.join(parts)})(?P<after> (?={_CHINESE.pattern}))?")


def _chinese(char: str) -> bool:
    return bool(_CHINESE.fullmatch(char))


def convert(zh_tw: str, english: str) -> str:
    """zh-TW text (the translation of ``english``) in zh-CN: the glossary's terms put in first (OpenCC never sees
    them), OpenCC ``tw2sp`` for the rest, and mainland quotation marks (「」 -> “”, 『』 -> ‘’, 〈〉 -> 《》); the protected
    parts, the ``{fields}`` of a string literal of code, and the Chinese of ``english`` where it stands alone (the
    lecture's example tokens, printed as they are by the code), as they are."""
    kept: list[str] = []

    def hold(text: str) -> str:
        kept.append(text)
        return chr(_MASK + len(kept) - 1)

    def term(m: re.Match) -> str:
        cn = glossary_terms()[m.group("term")]
        before, after = m.group("before"), m.group("after") or ""
        if before and _chinese(cn[0]) and m.start() > 0 and _chinese(m.string[m.start() - 1]):
            before = ""
        if after and _chinese(cn[-1]):
            after = ""
        return before + hold(cn) + after

    # the English's Chinese where it stands alone in the translation (「嗎」, {貓, 吃}), not inside a word (會不同嗎)
    examples = sorted(set(_CJK.findall(english)), key=len, reverse=True)
    alone = rf"(?<!{_HAN})(?:{'|'.join(map(re.escape, examples))})(?!{_HAN})"
    holding = PROTECTED.pattern + ("|" + alone if examples else "")
    if string_literal(english) is not None:  # a string literal of code: its {fields} are code
        holding += r"|\{[^{}\n]*\}"
    text = re.sub(holding, lambda m: hold(m.group(0)), zh_tw, flags=re.DOTALL)
    text = _opencc().convert(_term_pattern().sub(term, text)).translate(_QUOTES)
    return re.sub(f"[{chr(_MASK)}-{chr(_MASK + 0xFFFD)}]", lambda m: kept[ord(m.group(0)) - _MASK], text)


def _stamp(source: str, made: str) -> str:
    return f"tw2sp: zh_TW {_digest(source)} -> {_digest(made)}"


def _protected(entry: polib.POEntry | None) -> bool:
    """Whether a zh-CN entry is a person's: marked reviewed, or edited since it was converted."""
    if entry is None or not entry.msgstr:
        return False
    if REVIEWED in entry.tcomment.split("\n"):
        return True
    stamp = _STAMP.search(entry.comment)
    return stamp is None or stamp.group(2) != _digest(entry.msgstr)


@dataclass
class Conversion:
    """What ``simplified`` did to one zh-CN catalog: entries converted, entries to review again (msgid), entries
    kept as a reviewer left them."""

    converted: int = 0
    review: list[str] = field(default_factory=list)
    kept: int = 0


def simplified(zh_tw: polib.POFile, old: polib.POFile | None) -> tuple[polib.POFile, Conversion]:
    """The zh-CN catalog of the zh-TW catalog ``zh_tw``, keeping the reviewed and edited entries of ``old`` (the zh-CN
    catalog as it was, or None) as the module docstring says -> (catalog, what was done)."""
    new = polib.POFile(wrapwidth=0)
    new.metadata = {**zh_tw.metadata, "Language": "zh_CN"}
    before = {e.msgid: e for e in (old or [])}
    done = Conversion()
    for tw in zh_tw:
        was = before.get(tw.msgid) or (before.get(tw.previous_msgid) if tw.previous_msgid else None)
        if tw.obsolete:  # kept only where a person's text would be lost
            if _protected(was):
                new.append(
                    polib.POEntry(msgid=was.msgid, msgstr=was.msgstr, tcomment=was.tcomment, obsolete=True)
                )
            continue
        source = tw.msgstr if tw.msgstr and not tw.fuzzy else ""
        made = convert(source, tw.msgid) if source else ""
        entry = polib.POEntry(msgid=tw.msgid, msgstr=made, occurrences=list(tw.occurrences))
        if made:
            entry.comment = _stamp(source, made)
        if _protected(was):
            entry.msgstr, entry.tcomment, entry.flags = was.msgstr, was.tcomment, list(was.flags)
            stamp = _STAMP.search(was.comment)
            unchanged = (
                was.msgid == tw.msgid and stamp is not None and stamp.group(1) == _digest(source) and source
            )
            if unchanged:
                entry.comment = was.comment
                done.kept += 1
            else:
                entry.flags = ["fuzzy"]
                entry.previous_msgid = was.msgid if was.msgid != tw.msgid else was.previous_msgid
                what = "the zh-TW text changed" if source else "the zh-TW text is being redone"
                entry.comment = _stamp(source, made) + f"\n{what}; converted again: {made or '(nothing yet)'}"
                done.review.append(tw.msgid)
        elif made:
            done.converted += 1
        new.append(entry)
    return new, done
