"""What posref says to a student, in the student's language: English (the source), zh-TW or zh-CN.

A message is written in English where it is said, wrapped in ``_``: ``_("expected shape {shape}").format(shape=s)``
(never an f-string inside ``_``: the English text is the key a translation is found by, so it must be the same
text every time). A message kept in a module-level constant is marked with ``N_`` (which returns it unchanged) and
passed through ``_`` where it is shown, so that it is said in the language of that moment, not of the import.

The translations are gettext catalogs shipped inside the package, ``posref/locale/zh_TW/posref.po`` and
``posref/locale/zh_CN/posref.po``, read with polib when a language first needs them. The ``.po`` files are the one
source: there is no compiled ``.mo`` to keep in step, and an editable install reads what a translator just saved.
Only translated entries count: an untranslated or fuzzy one says the English text (the tests forbid both).

The language, first that applies:
* ``set_language("zh-TW")``: the score of record sets the language of the edition a student handed in;
* the environment variable ``POSREF_LANG`` (``zh-TW``), read at each message, so that a kernel started with it
  speaks its edition's language (an unknown value warns once and stays English);
* English.
A language is written ``zh-TW`` or ``zh_TW``, in any case.
"""

from __future__ import annotations

import os
import re
import string
import unicodedata
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

LANGUAGES = ("en", "zh-TW", "zh-CN")
ENV = "POSREF_LANG"
LOCALE_DIR = Path(__file__).resolve().parent / "locale"
DOMAIN = "posref"

# a Chinese character (CJK ideographs) meeting a Latin letter or a digit, which Chinese typography spaces apart
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z0-9]")

_chosen: str | None = None
_warned: set[str] = set()


def _known(lang: str) -> str | None:
    """The canonical spelling in ``LANGUAGES`` of ``lang`` (``zh_tw`` -> ``zh-TW``), or None for another language."""
    wanted = lang.strip().replace("_", "-").lower()
    return next((known for known in LANGUAGES if known.lower() == wanted), None)


def set_language(lang: str | None) -> None:
    """Speak ``lang`` (one of ``LANGUAGES``) from now on; ``None`` goes back to ``POSREF_LANG`` or English.

    Raises ValueError for a language posref has no catalog for, naming the ones it has."""
    global _chosen
    if lang is None:
        _chosen = None
        return
    known = _known(lang) if isinstance(lang, str) else None
    if known is None:
        raise ValueError(f"posref speaks no language {lang!r}: expected one of {', '.join(LANGUAGES)}")
    _chosen = known


@contextmanager
def speaking(lang: str) -> Iterator[None]:
    """``set_language(lang)`` inside the block, and the language chosen before it (or none) again after it."""
    global _chosen
    before = _chosen
    set_language(lang)
    try:
        yield
    finally:
        _chosen = before


def get_language() -> str:
    """The language posref speaks now: ``set_language``'s, else ``POSREF_LANG``'s, else ``"en"``."""
    if _chosen is not None:
        return _chosen
    value = os.environ.get(ENV, "").strip()
    if not value:
        return "en"
    known = _known(value)
    if known is None:
        if value not in _warned:
            _warned.add(value)
            warnings.warn(
                f"{ENV}={value!r} is not a language posref speaks (expected one of {', '.join(LANGUAGES)}); "
                "posref speaks English",
                stacklevel=2,
            )
        return "en"
    return known


def catalog_path(lang: str) -> Path:
    """``posref/locale/zh_TW/posref.po`` for ``zh-TW``."""
    return LOCALE_DIR / lang.replace("-", "_") / f"{DOMAIN}.po"


@cache
def translations(lang: str) -> dict[str, str]:
    """msgid -> msgstr of the translated entries of ``lang``'s catalog (empty for English)."""
    if lang == "en":
        return {}
    import polib  # only when a language other than English is spoken

    return {entry.msgid: entry.msgstr for entry in polib.pofile(str(catalog_path(lang))).translated_entries()}


def _(message: str) -> str:
    """``message`` (English) in the language spoken now; itself where it has no translation."""
    return translations(get_language()).get(message, message)


def msgid(text: str) -> str:
    """The English message (its key in the catalogs, the same in every edition) that ``_`` said as ``text`` in the
    language spoken now; ``text`` itself where it is English or no translation says it (translations are one to
    one: the catalogs' tests hold it)."""
    return _keys(get_language()).get(text, text)


@cache
def _keys(lang: str) -> dict[str, str]:
    return {said: key for key, said in translations(lang).items()}


def N_(message: str) -> str:
    """Mark ``message`` for the catalogs without translating it now (a constant, translated where it is shown)."""
    return message


def fill(message: str, **fields: object) -> str:
    """``message.format(**fields)``, with a space put where a field's text meets the message's text and one side
    is a Chinese character, the other a Latin letter or a digit: ``請先完成{exercise}：`` with ``pasting your
    NoPEHandler`` says ``請先完成 pasting your NoPEHandler：``, with ``練習 3`` ``請先完成練習 3：``. An English
    message, whose words are spaced already, is ``str.format``'s."""
    pieces = []
    for literal, name, spec, conversion in string.Formatter().parse(message):
        pieces.append(literal)
        if name is not None:
            field = "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
            pieces.append(field.format(**fields))
    text = ""
    for piece in filter(None, pieces):
        if text and (
            (_HAN.fullmatch(text[-1]) and _LATIN.fullmatch(piece[0]))
            or (_LATIN.fullmatch(text[-1]) and _HAN.fullmatch(piece[0]))
        ):
            text += " "
        text += piece
    return text


def display_width(text: str) -> int:
    """The columns ``text`` takes in a terminal: two for a wide or full-width character (a Chinese character, a
    full-width colon or parenthesis: ``unicodedata.east_asian_width`` W or F), one for any other."""
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)
