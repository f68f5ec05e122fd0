"""The messages of a notebook's markdown and of its code cells, and what a translation must keep
(autograder/editions/notebook.py)."""

from __future__ import annotations

import ast

import nbformat

from autograder.editions.notebook import (
    code_messages,
    edition_tag,
    is_translated_code,
    markdown_messages,
    protected_parts,
    split_blocks,
    translate_code,
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


CODE = '''# the loss at each position  (a comment)
import torch  # noqa: F401
LABELS = {"rope": "RoPE (no scaling)"}  # a key and a value: code reads them


def spread(x):
    """Largest spread of x."""
    return x.max() - x.min()


name = "per_position"
fig_title = "kept in a variable"
print(f"{name:12s}: spread {spread(torch.arange(3.0)):.3g} over 3 values", LABELS["rope"])
ax.set_xlabel("position")
ax.plot([1], label="one sample")
ax.legend(loc="upper left")
print("not " "joined")
'''


def test_code_messages_are_comments_docstrings_and_the_strings_a_student_reads():
    assert list(code_messages(CODE)) == [
        "# the loss at each position  (a comment)",
        "# a key and a value: code reads them",
        '"""Largest spread of x."""',
        'f"{name:12s}: spread {spread(torch.arange(3.0)):.3g} over 3 values"',
        '"position"',
        '"one sample"',
        '"not " "joined"',
    ]


def test_translating_code_changes_its_messages_and_nothing_else():
    said = {m: m.replace("position", "位置").replace("# ", "# 中文 ") for m in code_messages(CODE)}
    out = translate_code(CODE, lambda m: said[m])
    assert "# 中文 the loss at each 位置" in out and 'ax.set_xlabel("位置")' in out
    assert "# noqa: F401" in out and '"upper left"' in out and '"kept in a variable"' in out

    def strings_out(node):  # the tree with every string literal the same: what the code does
        return ast.dump(ast.parse(node)).replace("位置", "position")

    assert strings_out(out) == ast.dump(ast.parse(CODE))
    assert translate_code("def broken(:\n    # a comment", str.upper) == "def broken(:\n    # a comment"


def test_graded_cells_are_never_translated_and_answer_cells_are():
    cell = nbformat.v4.new_code_cell("print('a sentence')  # a comment")
    assert is_translated_code(cell)
    for flags in ({"grade": True, "locked": True}, {"locked": True}, {"grade": True, "solution": True}):
        cell.metadata["nbgrader"] = {"grade_id": "x", **flags}
        assert not is_translated_code(cell)
    cell.metadata["nbgrader"] = {"grade_id": "x", "solution": True}  # an answer: the student's to write
    assert is_translated_code(cell)
    assert not is_translated_code(nbformat.v4.new_markdown_cell("text"))


SAID = '''from posref.notebook import shown, uses

errors = {shown("no mask"): [], "causal mask": []}
print("fast mode:", "on (POSREF_FAST=1)" if FAST else "off")
print("Chinese in figures:", cjk_font() or "no CJK font here")
ax.set_title(" ".join(words) + ": attention weights")
with uses("Exercise 2 (its per-pair form)"):
    names = [shown(f"key {w}") for w in words]


def answer(x):
    """What the student writes."""
    ### BEGIN SOLUTION
    if x < 0:
        raise IndexError(f"position {x} has no row")  # the model answer's message
    ### END SOLUTION
    raise NotImplementedError("not done yet")
'''


def test_marked_sentences_the_branches_of_what_is_shown_and_raised_messages_are_messages():
    """What a student reads though the code keeps it (``shown``), names an exercise with (``uses``), picks
    (``if``/``or``), joins (``+``) or raises; not nbgrader's markers, not a key left unmarked."""
    assert list(code_messages(SAID)) == [
        '"no mask"',
        '"fast mode:"',
        '"on (POSREF_FAST=1)"',
        '"off"',
        '"Chinese in figures:"',
        '"no CJK font here"',
        '": attention weights"',
        '"Exercise 2 (its per-pair form)"',
        'f"key {w}"',
        '"""What the student writes."""',
        'f"position {x} has no row"',
        "# the model answer's message",
        '"not done yet"',
    ]


def test_a_notebooks_first_cell_names_the_edition_it_is_in():
    english = (
        'import posref.notebook\n\nposref.notebook.use_edition("en")  # this notebook\'s language\nx = "en"\n'
    )
    assert edition_tag(english, "zh-TW") == english.replace('use_edition("en")', 'use_edition("zh-TW")')
    assert edition_tag("use_edition('en')", "zh-CN") == "use_edition('en')"  # only the source's spelling
    assert edition_tag("print('no call')", "zh-CN") == "print('no call')"
    assert edition_tag("def broken(:", "zh-CN") == "def broken(:"


def test_a_code_translation_keeps_its_literal_kind_fields_and_numbers():
    english = 'f"{name:12s}: loss {loss:.3f} at T = 64"'
    assert translation_problems(english, 'f"{name:12s}：在 T = 64 時 loss 為 {loss:.3f}"') == []
    assert translation_problems(english, 'f"{name:12s}: loss {loss:.4f} at T = 64"') == [
        "its fields [\"f'{loss:.4f}'\", \"f'{name:12s}'\"] are not the English's "
        "[\"f'{loss:.3f}'\", \"f'{name:12s}'\"]"
    ]
    assert translation_problems(english, '"{name:12s}: loss {loss:.3f} at T = 64"')[0].startswith(
        "not a JoinedStr"
    )
    assert translation_problems(english, 'f"{name:12s}: loss {loss:.3f} at T = 64')[0].startswith(
        "not a JoinedStr"
    )
    assert translation_problems(english, 'f"{name:12s}：loss {loss:.3f}"') == ["missing '64'"]
    assert translation_problems('"position"', '"位置"') == []
    two_lines = 'f"{a:.3f} and "\n        f"{b:.1e} done"'
    assert translation_problems(two_lines, 'f"{a:.3f} 和 "\n        f"{b:.1e} 完成"') == []
    assert translation_problems(two_lines, 'f"{a:.3f} 和 "\n        f"{b:.2e} 完成"')[0].startswith(
        "its fields"
    )
    assert translation_problems("# a comment", "# 註解") == []
    assert translation_problems("# a comment", "註解")[0].startswith("a comment's translation")
    assert translation_problems("# a comment", "# 註解\nx = 1")[0].startswith("a comment's translation")
