"""posref.explorers.fonts: a figure writes the lecture's Chinese where a font draws it, pinyin otherwise.

Both ways by faking the font list; the positive cases need a real CJK font (``make test`` installs Noto CJK) and
skip without one. Whether a font "draws" the text is checked independently of the module: matplotlib warns
"Glyph ... missing from font(s)" for a character it cannot draw.
"""

from __future__ import annotations

import logging
import warnings

import matplotlib
import pytest
from matplotlib import font_manager
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from posref import i18n
from posref.explorers import fonts
from posref.explorers.fonts import LECTURE_CHARACTERS, cjk_font, sentence_text


def _real_cjk_entry() -> font_manager.FontEntry:
    for entry in font_manager.fontManager.ttflist:
        if "CJK" in entry.name and fonts._has_glyphs(entry.fname, LECTURE_CHARACTERS):
            return entry
    pytest.skip("no CJK font here (Debian/Ubuntu: apt-get install fonts-noto-cjk; `make fonts`)")


def _missing_glyphs(text: str) -> list[str]:
    """The warnings matplotlib gives while drawing ``text`` with the current rcParams: a missing glyph of plain
    text (a warning) or of a formula's text (mathtext logs it)."""
    fig = Figure(figsize=(2, 1))
    fig.text(0.1, 0.5, text)
    logged = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: logged.append(record.getMessage())
    logging.getLogger("matplotlib").addHandler(handler)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            FigureCanvasAgg(fig).draw()
    finally:
        logging.getLogger("matplotlib").removeHandler(handler)
    said = [str(w.message) for w in caught] + logged
    return [m for m in said if "missing from font" in m or "does not have a glyph" in m]


def test_no_cjk_font_gives_pinyin_and_leaves_matplotlib_alone() -> None:
    dejavu = font_manager.FontEntry(fname=font_manager.findfont("DejaVu Sans"), name="Noto Sans CJK TC")
    with matplotlib.rc_context():
        before = list(matplotlib.rcParams["font.family"])
        assert sentence_text("你打我", "ni da wo", fonts=[]) == "ni da wo"
        # named like a CJK font but without its glyphs: the glyphs decide, not the name
        assert cjk_font([dejavu]) is None
        assert sentence_text("你打我", "ni da wo", fonts=[dejavu]) == "ni da wo"
        assert list(matplotlib.rcParams["font.family"]) == before


def test_a_cjk_font_gives_the_characters_and_figures_draw_them() -> None:
    entry = _real_cjk_entry()
    latin = font_manager.FontEntry(fname=font_manager.findfont("DejaVu Sans"), name="DejaVu Sans")
    with matplotlib.rc_context({"font.family": ["sans-serif"]}):
        assert _missing_glyphs("你打我"), (
            "DejaVu alone should lack the glyphs: the check below would prove nothing"
        )
        assert cjk_font([latin, entry]) == entry.name
        assert sentence_text("我打你", "wo da ni", fonts=[latin, entry]) == "我打你"
        assert list(matplotlib.rcParams["font.family"]) == ["sans-serif", entry.name]
        assert _missing_glyphs("我打你 貓吃魚嗎") == []
        sentence_text("你打我", "ni da wo", fonts=[entry])  # asked again: the family is not added twice
        assert list(matplotlib.rcParams["font.family"]) == ["sans-serif", entry.name]


def test_a_font_installed_after_matplotlibs_cache_is_found_through_fontconfig(monkeypatch) -> None:
    entry = _real_cjk_entry()
    if entry.fname not in fonts._fontconfig_files():
        pytest.skip("fontconfig does not list the CJK font matplotlib has")
    # matplotlib's cache as if built before the font was installed
    stale = [e for e in font_manager.fontManager.ttflist if not fonts._has_glyphs(e.fname, "你")]
    monkeypatch.setattr(font_manager.fontManager, "ttflist", stale)
    found = cjk_font()
    assert found is not None and fonts._has_glyphs(font_manager.findfont(found), LECTURE_CHARACTERS)


@pytest.mark.parametrize(
    ("language", "first"),
    [("en", "Noto Sans CJK TC"), ("zh-TW", "Noto Sans CJK TC"), ("zh-CN", "Noto Sans CJK SC")],
)
def test_each_language_prefers_the_faces_of_its_own_script(language, first) -> None:
    """A Simplified Chinese face for zh-CN (mainland glyph forms), a Traditional one for zh-TW and for the
    lecture's Traditional examples in English; another font with every glyph after them."""
    entry = _real_cjk_entry()
    faces = [
        font_manager.FontEntry(fname=entry.fname, name=name)
        for name in ("Some CJK Font", *fonts.FONT_ORDER[language][::-1])
    ]
    with i18n.speaking(language):
        assert cjk_font(faces) == first
        assert cjk_font(faces[:1]) == "Some CJK Font"


def test_a_chinese_editions_font_comes_first_and_draws_a_formulas_words() -> None:
    """zh-CN's figures: Noto Sans CJK SC, the first family (matplotlib's mathtext takes the words around a formula
    from the first family only: as the fallback family, 上界 beside $\\frac{1}{r}$ drew boxes)."""
    entry = next((e for e in font_manager.fontManager.ttflist if e.name == "Noto Sans CJK SC"), None)
    if entry is None or not fonts._has_glyphs(entry.fname, fonts.LANGUAGE_CHARACTERS["zh-CN"]):
        pytest.skip("no Noto Sans CJK SC here (Debian/Ubuntu: apt-get install fonts-noto-cjk; `make fonts`)")
    with matplotlib.rc_context({"font.family": ["sans-serif"]}), i18n.speaking("zh-CN"):
        assert fonts.use_language_font() == "Noto Sans CJK SC"
        assert list(matplotlib.rcParams["font.family"]) == ["Noto Sans CJK SC", "sans-serif"]
        assert _missing_glyphs(r"RoFormer 上界的因子 $\frac{1}{r}\sum_j |S_j|$, 距离 −3") == []


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: sentence_text("", "ni"), "chinese must be a non-empty string"),
        (lambda: sentence_text("你", None), "pinyin must be a non-empty string"),
        (lambda: cjk_font([], text=" "), "text must be a non-empty string"),
    ],
)
def test_bad_input_is_a_clear_error(call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()
