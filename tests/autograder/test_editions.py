"""The message split of a notebook's markdown and what a translation must keep (autograder/editions.py)."""

from __future__ import annotations

from autograder.editions import (
    markdown_messages,
    protected_parts,
    split_blocks,
    translate_markdown,
    translation_problems,
)

TEXT = """# Title

A paragraph
over two lines.


```python
x = 1

y = 2
```

$$
a = b

c = d
$$

$x$, `y`

The end."""


def test_blocks_are_runs_of_lines_and_fences_and_display_formulas_never_split():
    pieces = split_blocks(TEXT)
    assert "".join(b + s for b, s in pieces) == TEXT
    assert [b for b, _ in pieces] == [
        "# Title",
        "A paragraph\nover two lines.",
        "```python\nx = 1\n\ny = 2\n```",
        "$$\na = b\n\nc = d\n$$",
        "$x$, `y`",
        "The end.",
    ]
    # a fence and a formula, and a block with no word outside its formula and code span, are not messages
    assert list(markdown_messages(TEXT)) == ["# Title", "A paragraph\nover two lines.", "The end."]


def test_translating_replaces_message_blocks_only():
    out = translate_markdown(TEXT, lambda block: f"<{block}>")
    assert out == TEXT.replace("# Title", "<# Title>").replace(
        "A paragraph\nover two lines.", "<A paragraph\nover two lines.>"
    ).replace("The end.", "<The end.>")


def test_a_formula_or_code_span_across_a_line_break_is_kept_whole():
    """A block holds no blank line, but an inline formula or a code span may cross a line break (04_rope's question
    1, 00_start's `sudo apt-get install<NL>fonts-noto-cjk`): it is one protected part, not two halves pairing with
    the next dollar or backtick."""
    english = (
        "Show that $R(\\alpha) =\nR(\\beta)$ holds, then run `sudo apt-get install\nfonts-noto-cjk` and $x$."
    )
    assert protected_parts(english) == sorted(
        ["$R(\\alpha) =\nR(\\beta)$", "`sudo apt-get install\nfonts-noto-cjk`", "$x$"]
    )
    good = "證明 $R(\\alpha) =\nR(\\beta)$ 成立，再執行 `sudo apt-get install\nfonts-noto-cjk` 與 $x$。"
    assert translation_problems(english, good) == []
    joined = "證明 $R(\\alpha) = R(\\beta)$ 成立，再執行 `sudo apt-get install\nfonts-noto-cjk` 與 $x$。"
    assert translation_problems(english, joined) == [
        "missing '$R(\\\\alpha) =\\nR(\\\\beta)$'",
        "not in the English: '$R(\\\\alpha) = R(\\\\beta)$'",
    ]


def test_a_translation_keeps_numbers_links_and_tags():
    english = "See [the paper](https://arxiv.org/abs/2104.09864) <b>now</b>: 3 heads, 0.5 each."
    assert (
        translation_problems(
            english, "見[論文](https://arxiv.org/abs/2104.09864) <b>現在</b>：3 個 head，各 0.5。"
        )
        == []
    )
    assert translation_problems(english, "見[論文](https://arxiv.org) <b>現在</b>：三個 head，各 0.5。") == [
        "missing '3'",
        "missing 'https://arxiv.org/abs/2104.09864'",
        "not in the English: 'https://arxiv.org'",
    ]
