"""Every decimal number that a notebook's text quotes is printed by the notebook's own run at its defaults.

The model answers and the prose quote the run ("1.504 at 64-71", "2.041 against 2.270"); a changed checkpoint, a
cell that draws from a generator a checker used before it, or text edited without a rerun makes a quote drift from
what a student's run prints. This test runs each notebook listed in ``AT_DEFAULTS`` at its default sizes on the CPU
(no ``POSREF_FAST``, one thread, as the quotes were taken), with torch's generator re-seeded after every
graded cell as ``test_quoted_numbers`` does (01-05's quotes, listed cell by cell), collects every number its cells print, and fails on a
quoted number that no printed number gives when rounded to the quote's digits.

What is not a quote of the run: integers and percentages (lengths, counts, slide numbers), numbers inside math
(``$0.1 \\ln s + 1$``), links and arXiv ids, and the numbers of ``NOT_FROM_THE_RUN`` (facts from papers or model
configs), each with its reason. A derived number (a difference of two printed ones) is printed by its notebook too.
A quote is matched against every printed number, so one that drifts onto another printed value passes: the test
catches a quote that no output gives, not a quote that reads the wrong line.
"""

from __future__ import annotations

import re

import nbformat
import notebook_helpers as nh
import pytest
from test_quoted_numbers import reseeded

AT_DEFAULTS = ["06_length", "07_scaling", "07b_longrope", "08_nope"]
# quoted numbers that are not the run's, per notebook: number -> why
_NAMES = {
    "3.1": "Llama 3.1, a model's name",
    "3.2": "the YaRN paper's section 3.2",
    "3.3": "the YaRN paper's section 3.3",
    "3.5": "Phi-3.5, a model's name",
    "2.5": "InternLM2.5, a model's name",
}
NOT_FROM_THE_RUN: dict[str, dict[str, str]] = {"07_scaling": _NAMES, "07b_longrope": _NAMES}

_MATH = re.compile(r"\$\$.*?\$\$|\$[^$]*\$", re.S)
_LINKS = re.compile(r"\]\([^)]*\)|arXiv \d{4}\.\d{4,5}|https?://\S+")
_QUOTE = re.compile(r"(?<![\w.\-/])(\d+\.\d+(?:e-?\d+)?)(?![\w.])")
_PRINTED = re.compile(r"\d+\.\d+(?:e[-+]?\d+)?")


def quoted_numbers(markdown: str) -> list[str]:
    """The decimal numbers a markdown cell quotes, as written, outside math, links and arXiv ids."""
    return _QUOTE.findall(_LINKS.sub(" ", _MATH.sub(" ", markdown)))


def printed_numbers(nb) -> list[str]:
    """Every decimal number in the text outputs (streams, plain-text results) of an executed notebook."""
    found = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            text = (
                out.get("text", "")
                if out.get("output_type") == "stream"
                else out.get("data", {}).get("text/plain", "")
            )
            found += _PRINTED.findall(text)
    return found


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


@pytest.mark.slow
@pytest.mark.parametrize("name", AT_DEFAULTS)
def test_every_number_the_text_quotes_is_printed_by_the_run_at_defaults(name, tmp_path, monkeypatch):
    for key in ("POSREF_FAST", "POSREF_GRADING", "POSREF_RETRAIN"):
        monkeypatch.delenv(key, raising=False)
    # torch's generator re-seeded after every graded cell (test_quoted_numbers.reseeded): a quoted cell that read
    # what a checker drew before it would print another number
    nb = nh.execute_at_defaults(
        name, tmp_path, monkeypatch, nb=reseeded(nbformat.read(nh.source(name), as_version=4))
    )
    printed = printed_numbers(nb)
    allowed = NOT_FROM_THE_RUN.get(name, {})
    drifted = [
        (cell.get("id"), quote, "nearest printed: " + ", ".join(nearest(quote, printed)))
        for cell in nb.cells
        if cell.cell_type == "markdown"
        for quote in quoted_numbers(cell.source)
        if quote not in allowed and not is_printed(quote, printed)
    ]
    assert not drifted, (
        f"{name}: quoted numbers that its run at defaults does not print (cell id, number, what it may have become): {drifted}"
    )
