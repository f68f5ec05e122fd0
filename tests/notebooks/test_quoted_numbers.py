"""Every number a notebook's text quotes from a run is what the notebook's own run prints, at its default sizes on
a CPU (one thread), whatever the graded checks before it drew from torch's global generator.

Each solution notebook runs once, at its defaults, with torch's global generator re-seeded after every graded test
cell to a state no earlier cell left: a checker may draw any amount from it (02's Q2 key once quoted a spread of
22.7 that two runs printed as 19.1 and 25.8, because the hidden check of ``LearnedPositions`` before it built a
drawn number of modules, each drawing its table), so a cell whose numbers the text quotes must seed its own draws.
That one run is also this suite's proof that each solution runs top to bottom at the sizes a student runs.

Two checks read the run:

- ``QUOTED`` (01-05): per notebook, the markdown cells that quote a run (model answers included), the code cell
  whose printed output each quotes, and the strings quoted: each string must be in the markdown cell and in that
  cell's output (a substring, so a quote may drop trailing digits: "5.587" in "+5.58706").
- the scan (every notebook): every decimal number the markdown writes, outside math, links and arXiv ids, must be
  what some printed number reads when rounded to the quote's digits, a number that ends a sentence ("by 0.886.")
  included; integers and percentages (lengths, counts, slide numbers) are not read, and ``NOT_FROM_THE_RUN`` lists
  numbers that are facts from papers or configs, or settings the text names. A quote is matched against every
  printed number, so one that drifts onto another printed value passes: the scan catches a quote that no output
  gives, not one that reads the wrong line (``QUOTED`` ties 01-05's quotes to their cell).

Differences at float32 rounding (1e-07 and below) are quoted as such, not digit by digit, and are not listed: their
digits depend on the CPU's summation order.

The run is the English edition's as ``test_edition_text.py`` reads the others' (``student_text.student_notebook``:
before each answer its released stub and the checks after it, every figure's texts and warnings recorded), so the
same run also holds the English edition's checks of that file: every check of a stub fails, no cell of the solution
does, no figure draws a box for a missing glyph (00_start, which quotes nothing, runs for those alone). The
Chinese editions run the same code cells at fast sizes there. The quotes are read from the solution's own cells
only, never a stub's or its checks'. Both tests of a notebook are one unit of work (``xdist_group``) and read one
run, made by the module-scoped fixture ``english_run``.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

import nbformat
import notebook_helpers as nh
import pytest
import student_text as st

pytestmark = pytest.mark.spread  # each notebook in any worker, beside the others (see tests/conftest.py)

ASSIGNMENTS = sorted(p.name for p in (nh.REPO / "solutions").iterdir() if p.is_dir())
NAMES = ["00_start", *ASSIGNMENTS]

# notebook -> markdown cell id -> (code cell id whose output it quotes, strings quoted)
QUOTED: dict[str, dict[str, tuple[str, tuple[str, ...]]]] = {
    "01_order": {
        "q_two_layers": ("cell-16", ("by 0.886", "by 1.53")),
    },
    "02_absolute": {
        "q_counters": ("counters", ("1023", "1.00 to 3.16", "1.05")),
        "q_decomposition": (
            "cell-21",
            ("22.7", "+0.461", "+7.236", "-3.839", "-3.077", "-4.572", "+0.964", "+1.760", "+25.587"),
        ),
        "q_find_the_bug": ("cell-13", ("1.990",)),
    },
    "03_relative": {
        "cell-00": ("cell-11", ("91", "113")),
        "cell-08": ("cell-11", ("91", "113")),
        "cell-21": ("cell-11", ("91", "113")),
        "q_alibi_not_nope": ("alibi-equivariance", ("1.22",)),
        "q_missing_clip": (
            "cell-18",
            ("0 offsets in the wrong bucket", "29", "768 offsets", "35", "bucket 17"),
        ),
    },
    "04_rope": {
        "q_keys_only": ("keys-only-run", ("5.587", "6.994", "-2.316", "4.487")),
    },
    "05_rope_analysis": {
        "q_decay": ("cell-06", ("0.805", "-0.040", "0.090", "0.088")),
        "cell-10b": ("cell-10", ("0.25", "0.19", "0.94", "0.65")),
        "q_wrong_pairs": ("cell-16", ("0.55", "0.34", "0.37")),
    },
}

# quoted numbers that are not the run's, per notebook: number -> why
_NAMES = {
    "3.1": "Llama 3.1, a model's name",
    "3.2": "the YaRN paper's section 3.2",
    "3.3": "the YaRN paper's section 3.3",
    "3.5": "Phi-3.5, a model's name",
    "2.5": "InternLM2.5, a model's name",
}
NOT_FROM_THE_RUN: dict[str, dict[str, str]] = {
    "02_absolute": {
        "0.02": "GPT-2's initial standard deviation, which the exercise asks for",
        "10000.0": "the base's default in a function's signature",
        "3.5": "Attention Is All You Need's section 3.5",
    },
    "04_rope": {"1.0": "the float16 products 4998 * 1.0, ... of the exercise's warning"},
    "05_rope_analysis": {"0.75": "p of 0.75-RoPE, a setting the text names"},
    "07_scaling": _NAMES,
    "07b_longrope": _NAMES,
}

RESEED = "import torch as _torch\n_torch.manual_seed({seed})\n_torch.randn({draws});"


def reseeded(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of ``nb`` with a cell after every graded test cell that re-seeds torch's generator (a different seed
    and number of draws each time): what a checker drawing any amount of it could leave."""
    nb = nbformat.from_dict(nb)
    cells = []
    for cell in nb.cells:
        cells.append(cell)
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade"):
            cells.append(nbformat.v4.new_code_cell(RESEED.format(seed=1000 + len(cells), draws=len(cells))))
    nb.cells = cells
    return nb


def printed(nb: nbformat.NotebookNode) -> dict[str, str]:
    """An executed notebook's printed text (streams and plain-text results) of each code cell, by cell id."""
    return {
        cell.get("id"): "".join(
            out.get("text", "")
            if out.get("output_type") == "stream"
            else out.get("data", {}).get("text/plain", "")
            for out in cell.get("outputs", [])
        )
        for cell in nb.cells
        if cell.cell_type == "code"
    }


_MATH = re.compile(r"\$\$.*?\$\$|\$[^$]*\$", re.S)
_LINKS = re.compile(r"\]\([^)]*\)|arXiv \d{4}\.\d{4,5}|https?://\S+")
# a number, not a part of one ("1.2.3", "v2.5", "arXiv-2309"); a full stop after it ends a sentence ("by 0.886.")
_QUOTE = re.compile(r"(?<![\w.\-/])(\d+\.\d+(?:e-?\d+)?)(?!\w|\.\w)")
_PRINTED = re.compile(r"\d+\.\d+(?:e[-+]?\d+)?")


def quoted_numbers(markdown: str) -> list[str]:
    """The decimal numbers a markdown cell quotes, as written, outside math, links and arXiv ids."""
    return _QUOTE.findall(_LINKS.sub(" ", _MATH.sub(" ", markdown)))


def is_printed(quote: str, printed: list[str]) -> bool:
    """True when some printed number, rounded to the quote's digits (decimals, or the mantissa's for ``7.6e-3``),
    reads as the quote."""
    if "e" in quote:
        mantissa, _ = quote.split("e")
        digits = len(mantissa.split(".")[1])
        return any(float(f"{float(p):.{digits}e}") == float(quote) for p in printed)
    digits = len(quote.split(".")[1])
    return any(f"{float(p):.{digits}f}" == quote for p in printed)


def nearest(quote: str, printed: list[str], n: int = 3) -> list[str]:
    """The ``n`` printed numbers closest in value to ``quote``: what a drifted quote most likely was."""
    return sorted(set(printed), key=lambda p: abs(float(p) - float(quote)))[:n]


def quotes(name: str):
    for text_id, (code_id, strings) in QUOTED[name].items():
        yield text_id, code_id, strings


@pytest.mark.parametrize("name", sorted(QUOTED))
def test_the_text_holds_what_it_quotes(name):
    """The table names cells that exist, and each quoted string is in the text cell (fast: no run)."""
    cells = {cell.get("id"): cell for cell in nbformat.read(nh.source(name), as_version=4).cells}
    for text_id, code_id, strings in quotes(name):
        assert cells[text_id].cell_type == "markdown" and cells[code_id].cell_type == "code", (
            text_id,
            code_id,
        )
        missing = [s for s in strings if s not in cells[text_id].source]
        assert not missing, f"{name} {text_id} no longer quotes {missing}: update QUOTED with the text"


def test_a_quote_matches_a_printed_number_rounded_to_its_digits():
    assert is_printed("0.0909", ["0.09091"]) and is_printed("1.504", ["1.504"])
    assert is_printed("1.645", ["1.504", "1.6449"])  # 1.6449 rounds to 1.645
    assert not is_printed("9.6e-7", ["9.55e-07"])  # a double rounding: 9.55e-07 reads 9.5e-07, not 9.6e-07
    assert is_printed("9.55e-7", ["9.55e-07"]) and is_printed("7.6e-3", ["7.58e-03"])
    assert not is_printed("2.041", ["2.04"])  # a quote with more digits than the run printed is not the run's


def test_quotes_are_read_outside_math_links_and_arxiv_ids():
    text = (
        "gives 1.504 at 64-71 and $0.1 \\ln s + 1$ = 1.139; see [the post](https://x.org/a/2.5) "
        "and arXiv 2309.00071, 62% of 8 pairs, 9.55e-7 apart"
    )
    assert quoted_numbers(text) == ["1.504", "1.139", "9.55e-7"]


def test_a_number_that_ends_a_sentence_is_read_and_a_version_is_not():
    text = "differs by 0.886. Then 1.1547.) and 2.5; not 1.2.3, v2.5, Fig. 3.2a or 1.5e-3x, but 7.6e-3."
    assert quoted_numbers(text) == ["0.886", "1.1547", "2.5", "7.6e-3"]
    assert quoted_numbers("ends a paragraph at 1.82.\n\nNext") == ["1.82"]


def test_every_notebook_is_scanned_and_01_to_05_tied_to_their_cells():
    assert set(QUOTED) <= set(ASSIGNMENTS) and set(NOT_FROM_THE_RUN) <= set(ASSIGNMENTS)
    assert sorted(QUOTED) == ["01_order", "02_absolute", "03_relative", "04_rope", "05_rope_analysis"]


def _drifted_from_the_table(name: str, outputs: dict[str, str]) -> list[str]:
    return [
        f"{text_id} quotes {s!r}, {code_id} printed:\n{outputs[code_id]}"
        for text_id, code_id, strings in quotes(name)
        for s in strings
        if s not in outputs[code_id]
    ]


def _drifted_from_every_output(name: str, nb: nbformat.NotebookNode, outputs: dict[str, str]) -> list[str]:
    numbers = [n for text in outputs.values() for n in _PRINTED.findall(text)]
    allowed = NOT_FROM_THE_RUN.get(name, {})
    return [
        f"{cell.get('id')} quotes {quote}; nearest printed: {', '.join(nearest(quote, numbers))}"
        for cell in nb.cells
        if cell.cell_type == "markdown"
        for quote in quoted_numbers(cell.source)
        if quote not in allowed and not is_printed(quote, numbers)
    ]


@dataclass(frozen=True)
class EnglishRun:
    """The English edition's run of one notebook at its defaults (``student_text.student_run``'s results)."""

    name: str
    nb: nbformat.NotebookNode  # every cell run: the solution's, stubs and their checks, re-seeding cells
    seen: list[st.Seen]
    failed: list[str]  # cells of the solution that failed
    passed_stubs: list[str]  # checks of a stub that did not fail

    def solution(self) -> nbformat.NotebookNode:
        """The run's notebook without the stubs and their checks: the solution's cells (and the re-seeding ones)."""
        nb = nbformat.from_dict(self.nb)
        nb.cells = [cell for cell in nb.cells if not cell.metadata.get("posref_stub")]
        return nb


def _paths(name: str):
    if name == "00_start":
        return nh.REPO / "solutions" / "00_start.ipynb", nh.REPO / "notebooks" / "00_start.ipynb"
    return nh.source(name), nh.release(name)


def _one_unit(names: list[str]) -> list:
    """``names`` as parameters whose tests, in this file, make one unit of work each (see the docstring)."""
    return [pytest.param(name, marks=pytest.mark.xdist_group(f"english-run-{name}")) for name in names]


@pytest.fixture(scope="module")
def english_run(request, tmp_path_factory) -> EnglishRun:
    """Every cell of the English solution ``request.param``, with its stubs and their checks, at the notebook's
    default sizes on the CPU (no ``POSREF_FAST``, one thread, CUDA hidden: the sizes its text quotes), torch's
    generator re-seeded after every graded cell (``reseeded``)."""
    name = request.param
    workdir = tmp_path_factory.mktemp(name)
    env = nh.notebook_env(workdir, POSREF_THREADS="1", CUDA_VISIBLE_DEVICES="")
    for key in ("POSREF_FAST", "POSREF_GRADING", "POSREF_RETRAIN", "POSREF_LANG"):
        env.pop(key, None)
    nb = reseeded(st.student_notebook(*_paths(name)))
    start = time.perf_counter()
    seen, failed, passed_stubs, nb = st.student_run(nb, name, workdir, env, timeout=1800)
    nh.report_time(f"{name} (English, with its stubs, defaults, CPU, nbclient)", time.perf_counter() - start)
    return EnglishRun(name, nb, seen, failed, passed_stubs)


@pytest.mark.slow  # each notebook at its defaults: 7-110 s of CPU (06 trains its handlers)
@pytest.mark.parametrize("english_run", _one_unit(ASSIGNMENTS), indirect=True)
def test_the_text_quotes_the_run_at_defaults(english_run):
    name = english_run.name
    assert not english_run.failed, f"{name}: cells of the solution failed at defaults:\n" + "\n".join(
        english_run.failed
    )
    nb = english_run.solution()
    outputs = printed(nb)
    drifted = _drifted_from_the_table(name, outputs) if name in QUOTED else []
    drifted += _drifted_from_every_output(name, nb, outputs)
    assert not drifted, f"{name}: quoted numbers its run at defaults does not print\n" + "\n".join(drifted)


@pytest.mark.slow
@pytest.mark.parametrize("english_run", _one_unit(NAMES), indirect=True)
def test_a_student_of_the_english_edition_meets_every_stub_and_no_missing_glyph(english_run):
    """``test_edition_text.py``'s checks of an edition, for English: no cell of the solution fails, every check of
    a released stub does, and no figure draws a box for a missing glyph."""
    assert not english_run.failed, "cells of the solution failed:\n" + "\n".join(english_run.failed)
    assert not english_run.passed_stubs, "stubs that did not fail:\n" + "\n".join(english_run.passed_stubs)
    glyphs = st.missing_glyphs(english_run.seen)
    assert not glyphs, "figures drew boxes:\n" + "\n".join(glyphs)


@pytest.mark.slow
def test_a_cell_that_reads_what_a_checker_left_is_caught(tmp_path, monkeypatch):
    """The re-seeding is what makes the test above fail for a cell that depends on a checker's draws: the same
    notebook prints another number once a graded cell's draws are replaced."""
    graded = nbformat.v4.new_code_cell("torch.randn(5);")  # a check that draws from the global generator
    graded.metadata["nbgrader"] = {"grade": True, "grade_id": "test_draws", "points": 1, "solution": False}
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("import torch\ntorch.manual_seed(0)"),
            graded,
            nbformat.v4.new_code_cell("print(f'{torch.randn(1).item():.6f}')", id="after"),
        ]
    )
    as_run = printed(nh.execute_at_defaults("01_order", tmp_path, monkeypatch, nb=nbformat.from_dict(nb)))
    again = printed(nh.execute_at_defaults("01_order", tmp_path, monkeypatch, nb=reseeded(nb)))
    assert again["after"] != as_run["after"]
