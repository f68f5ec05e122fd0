"""A student of a Chinese edition reads no English the course could have translated (issue 38), and no edition draws
a box for a missing glyph.

Each Chinese edition's notebooks run once, at fast settings, in one unit per edition (``student_text.student_run``:
the solution, with each exercise's released stub and its checks run before its answer, so the first failure a
student meets is read too). What is read: every output line (printed text, displayed values, the message of every
error and, of posref's failures, where each of the student's frames is: ``student_text._error_text``), every text
of every figure (titles, axes, ticks, legends, table cells) and every warning. The kernels get no ``POSREF_LANG``:
each notebook says which edition it is (its first cell), and posref speaks that language.

No line may hold an English word (``student_text.english_words``: code, formulas and the words the glossary keeps
in English are not words) unless ``ALLOWED`` says why it stays English. No missing-glyph warning may be drawn, no
cell of the solution may fail and every stub must.

The English edition runs once, at its defaults, in ``test_quoted_numbers.py``, which makes this file's checks of it
(no cell of the solution fails, every stub's checks do, no missing glyph) on that run: its code cells are the
Chinese editions' (an edition translates the text, the comments and the strings a figure draws), whose runs here
cover the fast sizes.
"""

from __future__ import annotations

import base64
import os
import re
import sys
from pathlib import Path

import pytest
import student_text as st

pytestmark = [pytest.mark.slow, pytest.mark.spread]

EDITIONS = ("zh-TW", "zh-CN")  # English: test_quoted_numbers.py
NAMES = ["00_start", *sorted(p.name for p in (st.REPO / "solutions").iterdir() if p.is_dir())]

# what stays English in a Chinese edition's run, and why: a whole line (a pattern), or a word wherever it stands
ALLOWED = [
    (r".*IndexError index out of range in self",
     "PyTorch's own IndexError, shown as torch raises it (03 asks why the bucket table cannot be indexed)"),
    (r"<Figure size \d+x\d+ with 0 Axes>", "matplotlib's repr of a figure whose cell stopped at a stub"),
    (r"'from _weakrefset import .*", "a sample of the lab's corpus, which is Python's own source code"),
]  # fmt: skip
KEPT = {
    "formula notation, units and Python's values": {"max", "min", "sin", "cos", "exp", "log", "ln", "mod", "det",
        "softmax", "dim", "Tq", "Tk", "alpha", "beta", "theta", "rad", "nat", "nats", "nan", "inf", "True", "False",
        "None"},
    "the values a student types or a config holds (code): the lab's method= names, RoPE's layout= names, LongRoPE's "
    "search starts, a config's rope_type and model_type, devices, 01's function attention (as a check names it),"
    " per_position_loss's argument, the libraries": {
        "learned", "sinusoidal", "alibi", "t5", "rope", "nope", "half", "interleaved", "pi", "ntk", "yarn",
        "longrope", "llama", "cpu", "cuda", "attention", "logits", "posref", "torch"},
    "names: the font a figure uses (00 prints it), the programming language, a model 08 reads": {"Noto", "Sans", "Python", "Gemma"},
}  # fmt: skip


def _paths(edition: str, name: str):
    root = st.REPO / "editions" / edition
    if name == "00_start":
        return root / "solutions" / "00_start.ipynb", root / "notebooks" / "00_start.ipynb"
    return root / "solutions" / name / f"{name}.ipynb", root / "notebooks" / name / f"{name}.ipynb"


# a figure of an edition to look at (docs/, with POSREF_SCREENSHOT_DIR=docs): (edition, notebook) -> (cell id,
# a text it draws, the file); 05's is RoFormer's bound, whose legend holds Chinese words and a formula
FIGURES = {
    ("zh-CN", "05_rope_analysis"): ("cell-06", "RoFormer 上界的因子 $", "zh-CN_legend_with_formula.png")
}


def _keep_figure(nb, edition: str, cell_id: str, text: str, filename: str) -> None:
    """The figure the cell ``cell_id`` of the run ``nb`` drew, which writes ``text``; saved as ``filename`` in
    ``$POSREF_SCREENSHOT_DIR`` where that is set."""
    (cell,) = [c for c in nb.cells if c.get("id") == cell_id and not c.metadata.get("posref_stub")]
    pictures = [o["data"]["image/png"] for o in cell.outputs if "image/png" in o.get("data", {})]
    assert pictures, f"{edition} {cell_id} drew no figure"
    if os.environ.get("POSREF_SCREENSHOT_DIR"):
        folder = Path(os.environ["POSREF_SCREENSHOT_DIR"])
        folder.mkdir(parents=True, exist_ok=True)
        (folder / filename).write_bytes(base64.b64decode(pictures[0]))


def english_lines(seen: list[st.Seen], edition: str) -> dict[str, list[str]]:
    """Each line of ``seen`` with English words that ``ALLOWED`` does not allow -> where it was read."""
    kept = st.kept_words(edition).union(*KEPT.values())
    out: dict[str, list[str]] = {}
    for s in seen:
        if s.kind == "warning" or st.GLYPH.search(s.text) or any(re.fullmatch(p, s.text) for p, _ in ALLOWED):
            continue
        if st.english_words(s.text, kept):
            out.setdefault(s.text, []).append(s.where)
    return out


@pytest.mark.parametrize("edition", EDITIONS)
def test_a_student_reads_the_edition_in_its_language(edition, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "POSREF_LANG"}
    env.update(PYTHONPATH=os.pathsep.join([str(st.REPO), env.get("PYTHONPATH", "")]), POSREF_FAST="1",
               POSREF_THREADS="1", PATH=os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")]))  # fmt: skip
    seen, failed, passed = [], [], []
    for name in NAMES:
        workdir = tmp_path / name
        workdir.mkdir()
        s, f, p, nb = st.student_run(st.student_notebook(*_paths(edition, name)), name, workdir, env)
        seen, failed, passed = seen + s, failed + f, passed + p
        if (edition, name) in FIGURES:
            _keep_figure(nb, edition, *FIGURES[edition, name])
    assert not failed, "cells of the solution failed:\n" + "\n".join(failed)
    assert not passed, "stubs that did not fail:\n" + "\n".join(passed)
    for (wanted, _name), (_cell, text, _file) in FIGURES.items():  # the figure kept drew what it is kept for
        assert wanted != edition or any(s.kind == "figure" and s.text.startswith(text) for s in seen), text
    glyphs = st.missing_glyphs(seen)
    assert not glyphs, "figures drew boxes:\n" + "\n".join(glyphs)
    english = english_lines(seen, edition)
    report = [f"{text}    ({', '.join(sorted(set(where)))})" for text, where in english.items()]
    assert not english, f"{len(english)} lines of English in {edition}:\n" + "\n".join(report)
