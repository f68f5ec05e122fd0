"""Which text a figure shows for the lecture's Chinese examples: the characters where a CJK font exists, pinyin
otherwise; and which font draws a Chinese edition's figures. The one place that decides it (notebooks call
``sentence_text`` and, through ``posref.notebook.use_edition``, ``use_language_font``; ``cjk_font`` says what was
found).

A font counts when matplotlib can use it and it has a glyph for every character asked about (a font named
"CJK" that lacks them would draw boxes). matplotlib knows the fonts of its cache (``fontManager.ttflist``); a font
installed after the cache was built (``make fonts`` after a first run) is found through fontconfig's ``fc-list``
and added. Each language has its order of families (``FONT_ORDER``): a zh-CN figure takes a Simplified Chinese
face first (Noto Sans CJK SC: mainland glyph forms), a zh-TW one a Traditional Chinese face (TC); the English
notebooks draw the lecture's Traditional example sentences, in the zh-TW order.

In English the font found goes last in ``rcParams["font.family"]``: matplotlib draws Latin text as before and
takes the missing CJK glyphs from it (font fallback, matplotlib >= 3.6). In a Chinese edition it goes first: its
Latin letters are made to sit beside its characters, and mathtext, which takes the text around a formula
(``"上界 $\\frac{1}{r}$"``) from the first family only, then draws that text's characters too.
"""

from __future__ import annotations

import shutil
import subprocess
import warnings
from collections.abc import Iterable

import matplotlib
from matplotlib import font_manager
from matplotlib.ft2font import FT2Font

from posref.i18n import _, get_language

__all__ = ["LECTURE_CHARACTERS", "cjk_font", "sentence_text", "use_language_font"]

# every character of the lecture's example sentences (你打我, 我打你, 貓吃魚嗎, 貓吃了魚)
LECTURE_CHARACTERS = "你打我貓吃魚嗎了"
# each language's families, in order: the faces of its own script first (a Traditional face draws 貓 with Taiwan's
# forms, a Simplified one 骨, 角, 述 with the mainland's); any other font that has every glyph comes after them
_TRADITIONAL = ("Noto Sans CJK TC", "Noto Sans CJK HK", "Source Han Sans TC", "Microsoft JhengHei", "PingFang TC",
                "Heiti TC")  # fmt: skip
_SIMPLIFIED = ("Noto Sans CJK SC", "Source Han Sans SC", "Microsoft YaHei", "PingFang SC", "Heiti SC")
_OTHERS = (
    "Noto Sans CJK JP",
    "Noto Sans CJK KR",
    "WenQuanYi Zen Hei",
    "WenQuanYi Micro Hei",
    "Droid Sans Fallback",
)
FONT_ORDER = {
    "en": _TRADITIONAL + _SIMPLIFIED + _OTHERS,
    "zh-TW": _TRADITIONAL + _SIMPLIFIED + _OTHERS,
    "zh-CN": _SIMPLIFIED + _TRADITIONAL + _OTHERS,
}
_MARKERS = (
    "CJK",
    "Han ",
    "Hei",
    "Ming",
    "Song",
    "Kai",
    "PingFang",
    "WenQuanYi",
    "Droid Sans Fallback",
    "AR PL",
)


def _has_glyphs(path: str, text: str) -> bool:
    try:
        face = FT2Font(path)
    except (OSError, RuntimeError, ValueError):  # unreadable or not a font
        return False
    return all(face.get_char_index(ord(ch)) for ch in text if not ch.isspace())


def _order() -> tuple[str, ...]:
    """The families preferred in the language posref speaks now (``FONT_ORDER``)."""
    return FONT_ORDER.get(get_language(), FONT_ORDER["en"])


def _fontconfig_files() -> list[str]:
    """Font files fontconfig lists for Chinese (``fc-list :lang=zh``); none where fc-list is missing."""
    fc_list = shutil.which("fc-list")
    if fc_list is None:
        return []
    try:
        listed = subprocess.run(
            [fc_list, ":lang=zh", "--format=%{file}\\n"], capture_output=True, text=True, timeout=20
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    return sorted({line.strip() for line in listed.stdout.splitlines() if line.strip()})


def cjk_font(
    fonts: Iterable[font_manager.FontEntry] | None = None, *, text: str = LECTURE_CHARACTERS
) -> str | None:
    """The family name of a font that draws every character of ``text``, or ``None`` when there is none.

    ``fonts``: the font entries to look at (default: matplotlib's, then fontconfig's Chinese fonts when
    matplotlib's cache has none). The families of the language posref speaks (``FONT_ORDER``) come first.
    """
    if not isinstance(text, str) or not text.strip():
        raise ValueError(
            _("text must be a non-empty string of the characters to draw, got {text!r}").format(text=text)
        )
    listed = list(font_manager.fontManager.ttflist if fonts is None else fonts)
    order = _order()
    candidates = sorted(
        (e for e in listed if e.name in order or any(m in e.name for m in _MARKERS)),
        key=lambda e: (order.index(e.name) if e.name in order else len(order), e.name),
    )
    for entry in candidates:
        if _has_glyphs(entry.fname, text):
            return entry.name
    if fonts is None:  # a font installed after matplotlib built its cache: add what fontconfig lists
        known = {e.fname for e in listed}
        added = [path for path in _fontconfig_files() if path not in known and _has_glyphs(path, text)]
        for path in added:
            font_manager.fontManager.addfont(path)
        if added:
            return cjk_font(font_manager.fontManager.ttflist[len(listed) :], text=text)
    return None


def _use_in_figures(
    name: str, fonts: Iterable[font_manager.FontEntry] | None, *, first: bool = False
) -> None:
    """Make ``name`` one of matplotlib's families (added to its font list if it was not there): the last, a
    fallback for the glyphs the others lack, or with ``first`` the first (see the module's docstring)."""
    if fonts is not None and name not in {e.name for e in font_manager.fontManager.ttflist}:
        for entry in fonts:
            if entry.name == name:
                font_manager.fontManager.addfont(entry.fname)
    families = list(matplotlib.rcParams["font.family"])
    if first and families[:1] != [name]:
        matplotlib.rcParams["font.family"] = [name, *(f for f in families if f != name)]
    elif name not in families:
        matplotlib.rcParams["font.family"] = [*families, name]


def sentence_text(chinese: str, pinyin: str, *, fonts: Iterable[font_manager.FontEntry] | None = None) -> str:
    """What a figure writes for a Chinese example: ``chinese`` where a font draws it (which then becomes
    matplotlib's fallback family unless it is one of its families already, see the module's docstring), else
    ``pinyin``.

    E.g. ``sentence_text("你打我", "ni da wo")``. Call it before making the figure: text that exists already (the
    ticks of axes made earlier) keeps the font families it was made with. ``fonts`` as in ``cjk_font`` (tests
    pass their own list).
    """
    for name, value in (("chinese", chinese), ("pinyin", pinyin)):
        if not isinstance(value, str) or not value.strip():
            raise ValueError(
                _("{name} must be a non-empty string, got {value!r}").format(name=name, value=value)
            )
    fonts = None if fonts is None else list(fonts)
    name = cjk_font(fonts, text=chinese)
    if name is None:
        return pinyin
    _use_in_figures(name, fonts)
    return chinese


# characters the figures of each edition write in their labels (position, frequency, rotation, loss, key, bias)
LANGUAGE_CHARACTERS = {"zh-TW": "位置頻率旋轉損失鍵偏置", "zh-CN": "位置频率旋转损失键偏置"}
_warned: set[str] = set()
_found: dict[
    str, str | None
] = {}  # language -> the font found among matplotlib's and fontconfig's (searched once)


def use_language_font(fonts: Iterable[font_manager.FontEntry] | None = None) -> str | None:
    """Before a figure is made: in zh-TW or zh-CN (``posref.i18n``), make a font that draws the edition's
    characters, in the edition's order (``FONT_ORDER``), matplotlib's first family, and return its name; None in
    English. Where no font has them, warn once (the labels would be boxes) and return None. ``fonts`` as in
    ``cjk_font``."""
    language = get_language()
    if language not in LANGUAGE_CHARACTERS:
        return None
    if fonts is not None:
        fonts = list(fonts)
        name = cjk_font(fonts, text=LANGUAGE_CHARACTERS[language])
    else:  # a slider redraws a figure: the search (font files opened, fontconfig run) is done once
        if language not in _found:
            _found[language] = cjk_font(text=LANGUAGE_CHARACTERS[language])
        name = _found[language]
    if name is None:
        if language not in _warned:
            _warned.add(language)
            warnings.warn(
                _(
                    "no font draws Chinese characters, so the figures' labels show boxes: install one (make fonts)"
                ),
                stacklevel=2,
            )
        return None
    _use_in_figures(name, fonts, first=True)
    return name
