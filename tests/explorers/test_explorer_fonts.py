"""posref.explorers.fonts: a figure writes the lecture's Chinese where a font draws it, pinyin otherwise.

Both ways by faking the font list; the positive cases need a real CJK font (``make test`` installs Noto CJK) and
skip without one. Whether a font "draws" the text is checked independently of the module: matplotlib warns
"Glyph ... missing from font(s)" for a character it cannot draw.
"""

from __future__ import annotations

import warnings

import matplotlib
import pytest
from matplotlib import font_manager
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from posref.explorers import fonts
from posref.explorers.fonts import LECTURE_CHARACTERS, cjk_font, sentence_text


def _real_cjk_entry() -> font_manager.FontEntry:
    for entry in font_manager.fontManager.ttflist:
        if "CJK" in entry.name and fonts._has_glyphs(entry.fname, LECTURE_CHARACTERS):
            return entry
    pytest.skip("no CJK font here (Debian/Ubuntu: apt-get install fonts-noto-cjk; `make fonts`)")


def _missing_glyphs(text: str) -> list[str]:
    """The warnings matplotlib gives while drawing ``text`` with the current rcParams."""
    fig = Figure(figsize=(2, 1))
    fig.text(0.1, 0.5, text)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        FigureCanvasAgg(fig).draw()
    return [str(w.message) for w in caught if "missing from font" in str(w.message)]


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


def test_the_preferred_family_comes_first() -> None:
    entry = _real_cjk_entry()
    other = font_manager.FontEntry(fname=entry.fname, name="Some CJK Font")
    preferred = font_manager.FontEntry(fname=entry.fname, name="Noto Sans CJK TC")
    assert cjk_font([other, preferred]) == "Noto Sans CJK TC"


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
