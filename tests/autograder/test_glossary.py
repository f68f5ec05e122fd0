"""One glossary, followed by every catalog of an edition: the notebooks' (locale/<edition>/*.po) and posref's own
(posref/locale/<edition>/posref.po: its checkers, errors, explorers and the inspector), issue 38.7-8.

- A glossary term is said one way in an edition: where an English message names the term, its translation uses none
  of the other ways the glossary lists for that edition (``zh-TW avoid``, ``zh-CN avoid``: a Latin word is matched
  whole and case as written, so zh-CN's ``Key`` passes and ``key`` does not).
- One English message has one translation in an edition, in whichever notebook it stands (the rules for answers, the
  fast-mode comment).
- zh-CN writes the lecture's example tokens as the code prints them (貓, 魚: the lecture's Traditional characters),
  wherever the English names them.
- No space is left between two Chinese characters, except beside the lecture's own tokens, which the English
  writes apart (貓 吃 魚 嗎) or quotes (在 你打我 中).

Code spans, formulas, tags, link targets and a code literal's ``{fields}`` are not read.
"""

from __future__ import annotations

import csv
import re
from collections import defaultdict
from pathlib import Path

import polib
import pytest

from autograder.editions.notebook import EDITIONS, PROTECTED

REPO = Path(__file__).resolve().parents[2]
GLOSSARY = REPO / "locale" / "glossary.csv"
HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_FIELD = re.compile(r"\{[^{}\n]*\}")


def _catalogs(edition: str) -> list[Path]:
    folder = EDITIONS[edition]
    return [
        *sorted((REPO / "locale" / folder).glob("*.po")),
        REPO / "posref" / "locale" / folder / "posref.po",
    ]


def _entries(edition: str) -> list[tuple[str, polib.POEntry]]:
    return [
        (path.stem, e)
        for path in _catalogs(edition)
        for e in polib.pofile(str(path), wrapwidth=0)
        if e.msgstr and not e.obsolete
    ]


def _text(translation: str) -> str:
    """A translation without what it keeps as the English has it (code, formulas, tags, links, fields)."""
    return _FIELD.sub(" ", PROTECTED.sub(" ", translation))


def _rows() -> list[dict[str, str]]:
    with open(GLOSSARY, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def _english_terms(row: dict[str, str]) -> list[str]:
    """The English a message names the row's term by: ``query / key / value`` -> each word; ``(...)`` says which
    sense and is not part of it."""
    return [t.strip() for t in re.sub(r"\s*\(.*?\)", "", row["en"]).split(" / ") if t.strip()]


def _says(text: str, variant: str) -> bool:
    if re.search(f"[{HAN}]", variant):
        return variant in text
    return re.search(rf"(?<![\w'\-]){re.escape(variant)}(?![\w'\-])", text) is not None


def test_the_glossary_lists_each_editions_term_and_what_it_avoids():
    rows = _rows()
    assert {"en", "zh-TW", "zh-CN", "zh-TW avoid", "zh-CN avoid"} <= set(rows[0])
    for row in rows:
        for edition in EDITIONS:
            for variant in filter(None, (v.strip() for v in row[f"{edition} avoid"].split(";"))):
                assert not _says(row[edition], variant), (
                    f"{row['en']}: {edition} avoids its own term {variant!r}"
                )


@pytest.mark.parametrize("edition", list(EDITIONS))
def test_a_glossary_term_is_said_one_way_in_an_edition(edition):
    entries = _entries(edition)
    found = []
    for row in _rows():
        avoided = [v.strip() for v in row[f"{edition} avoid"].split(";") if v.strip()]
        if not avoided:
            continue
        named = re.compile(
            "|".join(rf"(?<![\w-]){re.escape(t)}s?(?![\w-])" for t in _english_terms(row)), re.IGNORECASE
        )
        for catalog, e in entries:
            if named.search(_FIELD.sub(" ", PROTECTED.sub(" ", e.msgid))):
                said = [v for v in avoided if _says(_text(e.msgstr), v)]
                if said:
                    found.append(
                        f"{catalog}: {row['en']} said {said} (the glossary: {row[edition]!r}) in {e.msgstr[:90]!r}"
                    )
    assert not found, f"{len(found)} translations:\n" + "\n".join(found)


@pytest.mark.parametrize("edition", list(EDITIONS))
def test_one_english_message_has_one_translation_in_an_edition(edition):
    said: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for catalog, e in _entries(edition):
        said[e.msgid][e.msgstr].add(catalog)
    split = {m: dict(t) for m, t in said.items() if len(t) > 1}
    assert not split, "\n".join(f"{m[:80]!r}: {t}" for m, t in split.items())


def test_zh_cn_writes_the_lectures_tokens_as_the_code_prints_them():
    mixed = [
        f"{catalog}: {e.msgstr[:100]!r}"
        for catalog, e in _entries("zh-CN")
        if re.search("[貓魚]", e.msgid) and re.search("[猫鱼]", e.msgstr)
    ]
    assert not mixed, "\n".join(mixed)


@pytest.mark.parametrize("edition", list(EDITIONS))
def test_no_space_is_left_between_two_chinese_characters(edition):
    found = []
    for catalog, e in _entries(edition):
        tokens = re.findall(f"[{HAN}]+", e.msgid)  # the lecture's, which the English writes
        for m in re.finditer(rf"([{HAN}]+) ([{HAN}]+)", _text(e.msgstr)):
            if not any(m.group(1).endswith(t) or m.group(2).startswith(t) for t in tokens):
                found.append(f"{catalog}: {m.group(0)!r} in {e.msgstr[:80]!r}")
    assert not found, "\n".join(found)
