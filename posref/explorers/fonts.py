"""Which text a figure shows for the lecture's Chinese examples: the characters where a CJK font exists, pinyin
otherwise. The one place that decides it (notebooks call ``sentence_text``; ``cjk_font`` says what was found).

A font counts when matplotlib can use it and it has a glyph for every character asked about (a font named
"CJK" that lacks them would draw boxes). matplotlib knows the fonts of its cache (``fontManager.ttflist``); a font
installed after the cache was built (``make fonts`` after a first run) is found through fontconfig's ``fc-list``
and added. Choosing the characters also puts that font last in ``rcParams["font.family"]``: matplotlib then
draws Latin text as before and takes the missing CJK glyphs from it (font fallback, matplotlib >= 3.6).
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
# the families preferred, in order (traditional characters first: 貓, 魚, 嗎); any other font that has every glyph
# comes after them
PREFERRED = (
    "Noto Sans CJK TC",
    "Noto Sans CJK HK",
    "Noto Sans CJK SC",
    "Noto Sans CJK JP",
    "Noto Sans CJK KR",
    "Source Han Sans TC",
    "Source Han Sans SC",
    "Microsoft JhengHei",
    "Microsoft YaHei",
    "PingFang TC",
    "PingFang SC",
    "Heiti TC",
    "WenQuanYi Zen Hei",
    "WenQuanYi Micro Hei",
    "Droid Sans Fallback",
)
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


def _rank(entry: font_manager.FontEntry) -> tuple[int, str]:
    return (PREFERRED.index(entry.name) if entry.name in PREFERRED else len(PREFERRED), entry.name)


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
    matplotlib's cache has none). The preferred families (``PREFERRED``) come first.
    """
    if not isinstance(text, str) or not text.strip():
        raise ValueError(
            _("text must be a non-empty string of the characters to draw, got {text!r}").format(text=text)
        )
    listed = list(font_manager.fontManager.ttflist if fonts is None else fonts)
    candidates = sorted(
        (e for e in listed if e.name in PREFERRED or any(m in e.name for m in _MARKERS)), key=_rank
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


def _use_in_figures(name: str, fonts: Iterable[font_manager.FontEntry] | None) -> None:
    """Make ``name`` matplotlib's last fallback family (added to its font list if it was not there)."""
    if fonts is not None and name not in {e.name for e in font_manager.fontManager.ttflist}:
        for entry in fonts:
            if entry.name == name:
                font_manager.fontManager.addfont(entry.fname)
    families = list(matplotlib.rcParams["font.family"])
    if name not in families:
        matplotlib.rcParams["font.family"] = [*families, name]


def sentence_text(chinese: str, pinyin: str, *, fonts: Iterable[font_manager.FontEntry] | None = None) -> str:
    """What a figure writes for a Chinese example: ``chinese`` where a font draws it (which then becomes
    matplotlib's fallback family, see the module's docstring), else ``pinyin``.

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
    """Before an explorer makes its figure: in zh-TW or zh-CN (``posref.i18n``), make a font that draws the
    edition's characters matplotlib's fallback family, and return its name; None in English. Where no font has
    them, warn once (the labels would be boxes) and return None. ``fonts`` as in ``cjk_font``."""
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
    _use_in_figures(name, fonts)
    return name
