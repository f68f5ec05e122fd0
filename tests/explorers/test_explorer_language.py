"""The explorers' figures in the student's language (posref.i18n): titles, axes, legends and sliders in zh-TW or
zh-CN, drawn with a CJK font where there is one (``fonts.use_language_font``), and in English by default."""

from __future__ import annotations

import warnings

import matplotlib
import pytest
from matplotlib import font_manager
from matplotlib.backends.backend_agg import FigureCanvasAgg

from posref import i18n
from posref.explorers import fonts, rope_pair_explorer, rope_pair_figure


@pytest.fixture
def speaking():
    """``speaking("zh-TW")`` for the test's duration; posref speaks English again afterwards."""
    yield i18n.set_language
    i18n.set_language(None)


def _texts(fig) -> list[str]:
    ax, hx = fig.axes[:2]
    notes = "\n".join(t.get_text() for t in ax.texts)
    return [ax.get_title(), hx.get_xlabel(), hx.get_ylabel(), hx.get_title(), notes]


def test_a_figure_speaks_the_students_language(speaking):
    english = _texts(rope_pair_figure(2, 5, 1))
    assert english[1:4] == [
        "key position n",
        "query position m",
        "the score depends on n - m only: constant along diagonals",
    ]
    speaking("zh-TW")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a machine without a CJK font: boxes, and a warning (tested below)
        taiwan = _texts(rope_pair_figure(2, 5, 1))
    assert taiwan[0].startswith("維度 8 的第 1 對：w = base^(-2·1/8) = ")
    assert taiwan[1:4] == ["key 位置 n", "query 位置 m", "分數只依賴 n - m：沿著對角線不變"]
    assert "淡色：旋轉前的 q 和 k" in taiwan[4]
    speaking("zh-CN")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mainland = _texts(rope_pair_figure(2, 5, 1))
    assert mainland[1:4] == ["Key 位置 n", "Query 位置 m", "分数只依赖 n - m：沿着对角线不变"]


def test_an_explorers_sliders_speak_the_students_language(speaking):
    speaking("zh-TW")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        explorer = rope_pair_explorer()
    assert [explorer.controls[k].description for k in ("pair", "m", "n")] == [
        "第 i 對",
        "query 位置 m",
        "key 位置 n",
    ]


def test_without_a_cjk_font_a_chinese_figure_warns_once(speaking):
    assert fonts.use_language_font(fonts=[]) is None  # English needs none
    speaking("zh-CN")
    fonts._warned.clear()
    with pytest.warns(UserWarning, match="没有能显示中文字的字体"):
        assert fonts.use_language_font(fonts=[]) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert fonts.use_language_font(fonts=[]) is None  # once only


def test_a_cjk_font_draws_the_chinese_labels(speaking):
    entry = next(
        (
            e
            for e in font_manager.fontManager.ttflist
            if "CJK" in e.name and fonts._has_glyphs(e.fname, fonts.LANGUAGE_CHARACTERS["zh-TW"])
        ),
        None,
    )
    if entry is None:
        pytest.skip("no CJK font here (Debian/Ubuntu: apt-get install fonts-noto-cjk; `make fonts`)")
    speaking("zh-TW")
    with matplotlib.rc_context({"font.family": ["sans-serif"]}):
        assert fonts.use_language_font(fonts=[entry]) == entry.name
        assert list(matplotlib.rcParams["font.family"]) == [
            entry.name,
            "sans-serif",
        ]  # first: see fonts' docstring
        fig = rope_pair_figure(2, 5, 1)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            FigureCanvasAgg(fig).draw()
    assert not [str(w.message) for w in caught if "missing from font" in str(w.message)]


def test_the_font_is_searched_once_not_at_each_redraw(speaking, monkeypatch):
    searched = []
    monkeypatch.setattr(fonts, "cjk_font", lambda *a, **kw: searched.append(kw["text"]) or "Some CJK Font")
    monkeypatch.setattr(fonts, "_found", {})
    speaking("zh-TW")
    with matplotlib.rc_context():
        assert [fonts.use_language_font() for _ in range(3)] == ["Some CJK Font"] * 3
        assert matplotlib.rcParams["font.family"][0] == "Some CJK Font"
    assert searched == [fonts.LANGUAGE_CHARACTERS["zh-TW"]]


def test_the_scaling_figures_pair_counts_speak_the_students_language(speaking):
    """Llama 3.1's llama3 scaling keeps 29 pairs, blends 6 and interpolates 29 (test_explorer_scaling): the title's
    counts and the legend's kinds in the student's language, in English as before."""
    from posref.explorers.scaling import scaling_figure

    def said(language: str) -> tuple[str, list[str]]:
        speaking(language)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fig = scaling_figure("llama3", 8.0, head_dim=128, base=500000.0, original_len=8192)
        legend = fig.axes[1].get_legend()
        return fig.texts[0].get_text(), [t.get_text() for t in legend.get_texts()]

    title, legend = said("en")
    assert "29 kept, 6 blended, 29 interpolated (of 64 pairs)" in title
    assert {"kept: 29", "blended: 6", "interpolated: 29"} <= set(legend)
    title, legend = said("zh-TW")
    assert "29 對保持不變、6 對混合、29 對內插（共 64 對）" in title, title
    assert {"保持不變：29", "混合：6", "內插：29"} <= set(legend), legend
    title, legend = said("zh-CN")
    assert "29 对保持不变、6 对混合、29 对插值（共 64 对）" in title, title
    assert {"保持不变：29", "混合：6", "插值：29"} <= set(legend), legend


def test_a_scaling_methods_label_speaks_the_students_language_and_its_key_stays(speaking):
    """07 and 07b look their results up by the English names (the keys of SCALING_STYLES, code) and show them
    through scaling_label: what is said about a method is translated, its name is not."""
    from posref.explorers import SCALING_STYLES, scaling_label

    assert [scaling_label(n) for n in SCALING_STYLES] == list(SCALING_STYLES)  # English: the keys themselves
    speaking("zh-TW")
    assert scaling_label("RoPE (no scaling)") == "RoPE（不縮放）"
    assert scaling_label("YaRN") == "YaRN"
    speaking("zh-CN")
    assert scaling_label("Dynamic NTK (factor 1)") == "Dynamic NTK（缩放因子 1）"
    assert all(name.split(" (")[0].split(" + ")[0] in scaling_label(name) for name in SCALING_STYLES)
    with pytest.raises(KeyError, match="'RoPE（不缩放）' 没有样式"):
        scaling_label("RoPE（不缩放）")
