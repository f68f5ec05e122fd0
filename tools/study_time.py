"""How long a student spends on each notebook of ``solutions/``: an estimate from what the notebook asks, per part.

Usage (in a checkout)::

    python tools/study_time.py                       # a table: one row per notebook, minutes per part
    python tools/study_time.py --runs RUNS.json      # with measured run times ({"06_length": 404.0, ...}, seconds)
    python tools/study_time.py --ref main            # the notebooks as git holds them at a commit or branch
    python tools/study_time.py --set words_per_minute=200 --set minutes_per_answer_line=1   # other rates

The method (each rate is a choice, named in ``RATES`` so that anyone can change it with ``--set`` and see the
effect):

* **Reading**: the words of every markdown cell a student reads (the instructor's model answers excluded), outside
  math and code blocks, at ``words_per_minute`` (120: the pace of technical text read for understanding, half of
  ordinary reading), an inline formula read as ``words_per_formula`` words, plus ``display_math_minutes`` for each
  displayed formula.
* **Code read and run**: each line of a code cell the student runs but does not write (not an answer, not a
  check), at ``seconds_per_code_line``: skimmed, not studied.
* **Graded answers**: per answer cell, ``answer_base_minutes`` (read the statement, run the check, read its
  message) plus ``minutes_per_answer_line`` for each line of the solution (no blank or comment lines), the lines
  of a solution a student pastes from an earlier notebook (the same block, word for word) counted at
  ``pasted_block_minutes`` a block instead.
* **Written answers**: per hand-graded question, ``question_base_minutes`` plus ``minutes_per_point`` per point
  (points measure how much a question asks).
* **Explorers**: ``explorer_minutes`` for each interactive explorer a cell displays.
* **Running**: the seconds the notebook takes top to bottom at its defaults on one CPU thread, measured
  (``--runs``; ``tests/notebooks/test_quoted_numbers.py`` reports them), counted once.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[1]
RATES = {
    "words_per_minute": 120.0,
    "display_math_minutes": 1.0,
    "words_per_formula": 3.0,
    "seconds_per_code_line": 3.0,
    "answer_base_minutes": 6.0,
    "minutes_per_answer_line": 2.0,
    "pasted_block_minutes": 2.0,
    "question_base_minutes": 3.0,
    "minutes_per_point": 5.0,
    "explorer_minutes": 3.0,
}

_DISPLAY = re.compile(r"\$\$.*?\$\$", re.S)
_INLINE = re.compile(r"\$[^$]*\$")
_FENCED = re.compile(r"```.*?```", re.S)
_WORD = re.compile(r"[A-Za-z0-9][\w'’\-]*")
_SOLUTION = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", re.S)
_EXPLORER = re.compile(r"\b\w+_explorer\(")


def notebooks(ref: str | None) -> dict[str, nbformat.NotebookNode]:
    """``{name: notebook}`` of every assignment in ``solutions/``, from the working tree or from git ``ref``."""
    found = {}
    for path in sorted((REPO / "solutions").glob("*/*.ipynb")):
        relative = path.relative_to(REPO).as_posix()
        text = (
            path.read_text()
            if ref is None
            else subprocess.run(
                ["git", "show", f"{ref}:{relative}"], cwd=REPO, capture_output=True, text=True, check=True
            ).stdout
        )
        found[path.stem] = nbformat.reads(text, as_version=4)
    return found


def prose_words(markdown: str) -> int:
    """Words a reader reads in ``markdown``: math and fenced code left out."""
    text = _FENCED.sub(" ", _INLINE.sub(" ", _DISPLAY.sub(" ", markdown)))
    return len(_WORD.findall(text))


def code_lines(block: str) -> list[str]:
    """The lines of ``block`` that hold code (no blank or comment lines), stripped."""
    return [line.strip() for line in block.splitlines() if line.strip() and not line.strip().startswith("#")]


def estimate(
    nb: nbformat.NotebookNode, earlier_lines: set[str], rates: dict[str, float] = RATES
) -> dict[str, float]:
    """Minutes per part for one notebook (running excluded) and its words; ``earlier_lines`` holds the code lines of
    the answer cells of the notebooks before it (a student pastes a whole cell, signature included), and this
    notebook's are added to it."""
    parts = dict.fromkeys(("words", "reading", "code", "answers", "questions", "explorers"), 0.0)
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "markdown":
            if meta.get("solution"):  # a hand-graded answer: the student writes it
                parts["questions"] += rates["question_base_minutes"] + rates["minutes_per_point"] * meta.get(
                    "points", 0
                )
                continue
            words = prose_words(cell.source)
            formulas = len(_INLINE.findall(_DISPLAY.sub(" ", cell.source)))
            parts["words"] += words
            parts["reading"] += (words + rates["words_per_formula"] * formulas) / rates["words_per_minute"]
            parts["reading"] += rates["display_math_minutes"] * len(_DISPLAY.findall(cell.source))
        elif meta.get("solution"):
            blocks = [code_lines(b) for b in _SOLUTION.findall(cell.source)]
            pasted = [b for b in blocks if set(b) <= earlier_lines]
            parts["answers"] += (
                rates["answer_base_minutes"]
                + rates["minutes_per_answer_line"] * sum(len(b) for b in blocks if b not in pasted)
                + rates["pasted_block_minutes"] * len(pasted)
            )
        elif not meta.get("grade"):
            parts["code"] += rates["seconds_per_code_line"] * len(code_lines(cell.source)) / 60
            parts["explorers"] += rates["explorer_minutes"] * len(_EXPLORER.findall(cell.source))
    earlier_lines.update(
        line
        for cell in nb.cells
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution")
        for line in code_lines(cell.source)
    )
    return parts


def rate(text: str) -> tuple[str, float]:
    """``"name=value"`` (a key of ``RATES``, a positive number) -> ``(name, value)``."""
    name, _, value = text.partition("=")
    if name not in RATES:
        raise argparse.ArgumentTypeError(f"unknown rate {name!r}; expected one of {', '.join(RATES)}")
    try:
        number = float(value)
    except ValueError:
        number = 0.0
    if not number > 0:
        raise argparse.ArgumentTypeError(f"{name} must be a positive number, got {value!r}")
    return name, number


def table(
    books: dict[str, nbformat.NotebookNode], runs: dict[str, float], rates: dict[str, float]
) -> list[str]:
    """The printed table: one row per notebook, then the total in minutes and hours."""
    columns = ("reading", "code", "answers", "questions", "explorers", "running")
    lines = [f"{'notebook':18s}{'words':>7s}" + "".join(f"{c:>11s}" for c in columns) + f"{'total':>9s}"]
    earlier: set[str] = set()
    totals = dict.fromkeys(("words", *columns, "total"), 0.0)
    for name, nb in books.items():
        parts = estimate(nb, earlier, rates)
        parts["running"] = runs.get(name, 0.0) / 60
        parts["total"] = sum(parts[c] for c in columns)
        for key in totals:
            totals[key] += parts[key]
        lines.append(
            f"{name:18s}{parts['words']:7.0f}"
            + "".join(f"{parts[c]:11.0f}" for c in columns)
            + f"{parts['total']:9.0f}"
        )
    lines.append(
        f"{'all (minutes)':18s}{totals['words']:7.0f}"
        + "".join(f"{totals[c]:11.0f}" for c in columns)
        + f"{totals['total']:9.0f}  = {totals['total'] / 60:.1f} hours"
    )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ref", help="a git commit or branch: its notebooks instead of the working tree's")
    parser.add_argument("--runs", type=Path, help="JSON {notebook: seconds at defaults}")
    parser.add_argument(
        "--set", type=rate, action="append", default=[], metavar="NAME=VALUE", help="another rate"
    )
    args = parser.parse_args()
    runs = json.loads(args.runs.read_text()) if args.runs else {}
    print("\n".join(table(notebooks(args.ref), runs, {**RATES, **dict(args.set)})))


if __name__ == "__main__":
    main()
