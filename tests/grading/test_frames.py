"""Where a student's code raised, as a failed check shows it (``CheckFailed._render_traceback_``, ``frames.shown``):
in the edition's words from posref's catalog, never Python's English ``File "...", line 3, in attention`` nor a path
of the machine (issue 38.11); and the tolerance formula of a values failure in the edition's words.

The student's code is compiled as cells are: a notebook's (an ``ipykernel_`` file, "your cell") and the score of
record child's (``<cell N>``, its source in ``linecache``), so each frame's line of code is shown too.
"""

from __future__ import annotations

import linecache
import re
import textwrap
from pathlib import Path

import polib
import pytest
import torch

from posref import grading, i18n
from posref.grading import CheckFailed
from posref.grading.difference import default_tolerance, difference

# a student's attention, which raises on its line 3 (a softmax over a dimension the scores do not have)
ANSWER = textwrap.dedent(
    """\
    def attention(q, k, v, causal=False):
        scores = q @ k.transpose(-2, -1)
        weights = scores.softmax(dim=7)
        return weights @ v
    """
)
# the test cell that calls the check, on its line 2
CALL = textwrap.dedent(
    """\
    try:
        check_attention(attention)
    except CheckFailed as err:
        failed = err
    """
)
# a student's attention that calls itself 40 times on its line 3, then raises on its line 4
RECURSIVE = textwrap.dedent(
    """\
    def attention(q, k, v, causal=False, depth=0):
        if depth < 40:
            return attention(q, k, v, causal, depth + 1)
        raise ValueError("too deep")
    """
)


def _cells(kind: str, tmp_path, monkeypatch, answer: str = ANSWER) -> tuple[CheckFailed, str]:
    """Run ``answer`` and ``CALL`` as two cells of ``kind`` ("kernel": files of ipykernel's; "child": ``<cell 3>``
    and ``<cell 4>``) -> (the failure the check raised, the cells' place as the catalog's English says it)."""
    sources = {"kernel": [tmp_path / "ipykernel_4242" / "1.py", tmp_path / "ipykernel_4242" / "2.py"],
               "child": ["<cell 3>", "<cell 4>"]}[kind]  # fmt: skip
    namespace = {"check_attention": grading.check_attention, "CheckFailed": CheckFailed}
    for name, source in zip(sources, (answer, CALL), strict=True):
        if isinstance(name, Path):
            name.parent.mkdir(exist_ok=True)
            name.write_text(source, encoding="utf-8")
        else:
            monkeypatch.setitem(linecache.cache, name, (len(source), None, source.splitlines(True), name))
        exec(compile(source, str(name), "exec"), namespace)
    return namespace["failed"], ("your cell" if kind == "kernel" else "cell {number}")


def _said(language: str, english: str, **fields: object) -> str:
    """``english`` as ``language``'s catalog file says it (read here, apart from ``i18n``), filled in."""
    if language != "en":
        (entry,) = [e for e in polib.pofile(str(i18n.catalog_path(language))) if e.msgid == english]
        english = entry.msgstr
    return english.format(**fields)


def _rendered(failed: CheckFailed, language: str) -> list[str]:
    with i18n.speaking(language):
        return failed._render_traceback_()


@pytest.mark.parametrize("kind", ["kernel", "child"])
@pytest.mark.parametrize("language", i18n.LANGUAGES)
def test_each_frame_is_placed_in_the_editions_words(language, kind, tmp_path, monkeypatch):
    with i18n.speaking(language):
        failed, place = _cells(kind, tmp_path, monkeypatch)
    lines = _rendered(failed, language)
    where = _said(language, place, number=3 if kind == "child" else None)
    call = _said(language, place, number=4 if kind == "child" else None)
    locator = "line {line} of {place}, in {function}"
    header = _said(language, "Your code, where it was called (posref's own frames left out):")
    frames = lines[lines.index(header) :]
    # the student's line that raised, where it raised; then the test cell's call
    raised = frames.index("  " + _said(language, locator, line=3, place=where, function="attention"))
    assert frames[raised + 1] == "    weights = scores.softmax(dim=7)", frames
    called = frames.index("  " + _said(language, locator, line=2, place=call, function="<module>"))
    assert frames[called + 1] == "    check_attention(attention)", frames
    assert raised < called
    # the same lines, written out as each edition says them
    pinned = {
        "en": "line 3 of {place}, in attention",
        "zh-TW": "{place}，第 3 行，在 attention 中",
        "zh-CN": "{place}，第 3 行，在 attention 中",
    }[language]
    assert frames[raised] == "  " + pinned.format(place=where)
    text = "\n".join(lines)
    assert "File" not in text and not re.search(r", line \d", text), text
    assert str(tmp_path) not in text and "ipykernel_4242" not in text, text
    # and the message's own locator of where the student's function raised agrees with the frames'
    assert _said(language, " (line {line} of {place}: `{code}`)", line=3, place=where,
                 code="weights = scores.softmax(dim=7)") in text  # fmt: skip


@pytest.mark.parametrize("language", i18n.LANGUAGES)
def test_a_recursion_shows_its_frame_once_with_how_many_times(language, tmp_path, monkeypatch):
    with i18n.speaking(language):
        failed, place = _cells("child", tmp_path, monkeypatch, RECURSIVE)
    lines = _rendered(failed, language)
    where = _said(language, place, number=3)
    locator = "line {line} of {place}, in {function}"
    again = "  " + _said(language, locator, line=3, place=where, function="attention")
    assert lines.count(again) == 1, lines
    i = lines.index(again)
    assert lines[i + 1] == "    return attention(q, k, v, causal, depth + 1)"
    # after the frame's code (and Python's marks under the call), the count of the 40 calls from line 3 (depth 0 to
    # 39), then the line that raised (depth 40)
    after = [line for line in lines[i + 2 :] if not line.startswith("    ")]
    assert after[0] == "  " + _said(language, "[the frame above, {count} times in a row]", count=40), lines
    assert after[1] == "  " + _said(language, locator, line=4, place=where, function="attention")


def test_a_frame_twice_in_a_row_is_shown_twice(tmp_path, monkeypatch):
    with i18n.speaking("en"):
        failed, _place = _cells("child", tmp_path, monkeypatch, RECURSIVE.replace("depth < 40", "depth < 2"))
    lines = _rendered(failed, "en")
    assert lines.count("  line 3 of cell 3, in attention") == 2  # depth 0 and 1
    assert not any("times in a row" in line for line in lines)


# the tolerance of a values failure, |got - expected| <= atol + rtol * |expected|, in each edition's words: "got" and
# "expected" are words a student reads, not symbols; a Chinese edition says them as the glossary says "got" for what
# a function returned (實際/实际) and as its messages say "expected" (預期/预期), the words of the lines below the
# formula; the English edition's are its own "expected ..." and "got ..." lines
FORMULA = {
    "en": "|got - expected| <= {atol} + {rtol} * |expected|",
    "zh-TW": "|實際值 - 預期值| <= {atol} + {rtol} * |預期值|",
    "zh-CN": "|实际值 - 预期值| <= {atol} + {rtol} * |预期值|",
}


@pytest.mark.parametrize("language", i18n.LANGUAGES[1:])
def test_every_message_with_the_tolerance_says_it_in_the_editions_words(language):
    po = polib.pofile(str(i18n.catalog_path(language)))
    with_it = [e for e in po if FORMULA["en"] in e.msgid]
    assert len(with_it) >= 3  # the values failure, the dtype's precision, a lower dtype's rounding
    for e in with_it:
        words = re.sub(r"\{[^{}]*\}", " ", e.msgstr)  # a {field} is not a word the student reads
        assert FORMULA[language] in e.msgstr and not re.search(r"\b(got|expected)\b", words), e.msgstr


# a values failure, the same computed in float16 (its values on float16's grid: "did a step run in float16?"),
# and float16 values returned for float32 (they agree to float16's precision): each says the tolerance
THIRDS = torch.arange(1, 7, dtype=torch.float32) / 3
TOLERANCES = {
    "values": (THIRDS, THIRDS + torch.tensor([0, 0, 0.5, 0, 0, 0]), {}, 1),
    "rounding": (THIRDS, THIRDS.half().float(), {}, 2),
    "precision": (THIRDS, THIRDS.half(), {"match_dtype": False}, 1),
}


@pytest.mark.parametrize("failure", TOLERANCES)
@pytest.mark.parametrize("language", i18n.LANGUAGES)
def test_a_failure_writes_its_tolerance_in_the_editions_words(language, failure):
    expected, got, options, times = TOLERANCES[failure]
    with i18n.speaking(language):
        message = difference(expected, got, **options)
    assert message is not None
    # the formula with its numbers filled in: float32's tolerance, and float16's for its rounding
    filled = [FORMULA[language].format(atol=f"{a:.6g}", rtol=f"{r:.6g}")
              for a, r in (default_tolerance(torch.float32), default_tolerance(torch.float16))]  # fmt: skip
    assert sum(message.count(f) for f in filled) == times, message
    if language != "en":
        assert not re.search(r"\b(got|expected)\b", message), message
