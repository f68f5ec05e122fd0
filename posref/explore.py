"""The explore edition: the course's notebooks with every exercise solved, for a self-learner who wants to read
them, run them to the end and move their explorers (``posref explore``, ``make explore``).

In a released notebook the explorers of 02-08 come after graded exercises, so Run All stops above them at the
first unfinished one. An explore notebook is the release of the edition (``notebooks/`` or
``editions/<tag>/notebooks/``) with each answer cell nbgrader restores (a code cell marked as a solution) holding
the course's solution instead (``solutions/`` or ``editions/<tag>/solutions/``, its ``### BEGIN SOLUTION`` and
``### END SOLUTION`` lines dropped), every nbgrader mark removed (nothing here is graded), and a note after the
title that says what this copy is. The checks stay (they pass), and so do the questions answered in words: their
cells still ask the reader to write an answer. The start page is the release's, with the same note.

Nothing is written into the checkout: ``explore_files`` makes the notebooks in memory, and ``posref explore``
brings them into a folder of the reader's own (``explore/``, ``explore-<tag>/``, which git ignores) by the rules
of ``posref.workfolder``, so a reader's edits survive a new version of the course as a student's do. An explore
notebook counts as the course's own (replaced by a new version while the reader has not changed it) when both of
its sources are git's committed files.
"""

from __future__ import annotations

import json
from pathlib import Path

from posref import workfolder
from posref.i18n import _

SOLUTION_MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")
NOTE_ID = "explore-edition"


def solved_source(solution: str) -> str:
    """A solution cell's source without nbgrader's solution markers (each on a line of its own)."""
    return "\n".join(line for line in solution.split("\n") if line.strip() not in SOLUTION_MARKERS)


def note_cell() -> dict:
    """The markdown cell that tells the reader what an explore notebook is, in the language posref speaks now."""
    text = _(
        "**Explore edition.** Every exercise in this copy is already solved with the course's own solution, so **Run → Run All Cells** runs to the end and every explorer works. To do the exercises yourself, open the course with `make lab`: your work is in a folder of its own."
    )
    return {"cell_type": "markdown", "id": NOTE_ID, "metadata": {}, "source": text}


def explore_notebook(release: dict, solution: dict | None, name: str) -> dict:
    """The explore notebook of ``release`` (a notebook's JSON), its answer cells taken from ``solution`` (the
    source of the same release, cell for cell; None for a page without exercises, the start page); ``name``
    for the error of a release made from another source."""
    cells = [dict(cell) for cell in release["cells"]]
    if solution is not None:
        if len(solution["cells"]) != len(cells):
            raise ValueError(
                _(
                    "{name}: its release has {released} cells and its solution {solved}: release it again (python -m autograder release)"
                ).format(name=name, released=len(cells), solved=len(solution["cells"]))
            )
        for i, (cell, source) in enumerate(zip(cells, solution["cells"], strict=True)):
            grading = cell.get("metadata", {}).get("nbgrader", {})
            if cell["cell_type"] == "code" and grading.get("solution") and not grading.get("grade"):
                if source.get("metadata", {}).get("nbgrader", {}).get("grade_id") != grading.get("grade_id"):
                    raise ValueError(
                        _(
                            "{name}: cell {i} of its release is not the same exercise as in its solution: release it again (python -m autograder release)"
                        ).format(name=name, i=i)
                    )
                cell["source"] = solved_source(workfolder.source_text(source["source"]))
    for cell in cells:
        cell["metadata"] = {k: v for k, v in cell.get("metadata", {}).items() if k != "nbgrader"}
    cells.insert(1 if cells else 0, note_cell())
    return {**release, "cells": cells}


def explore_files(releases: Path, solutions: Path) -> tuple[dict[str, bytes], set[str]]:
    """The explore edition of the releases ``releases`` and their sources ``solutions``: (a path relative to the
    edition -> the explore notebook's bytes, or the release's own bytes for a file that is not a notebook; the
    paths whose sources are all git's committed files)."""
    releases, solutions = Path(releases), Path(solutions)
    if not releases.is_dir() or not solutions.is_dir():
        missing = releases if not releases.is_dir() else solutions
        raise FileNotFoundError(_("no folder {path} to make the explore edition from").format(path=missing))
    sources = {rel: (releases / rel).read_bytes() for rel in workfolder.release_files(releases)}
    solved = {rel: (solutions / rel).read_bytes() for rel in sources if (solutions / rel).is_file()}
    committed = workfolder.committed_files(releases, sources)
    committed &= workfolder.committed_files(solutions, solved) | (sources.keys() - solved.keys())
    files = {}
    for rel, data in sources.items():
        if not rel.endswith(".ipynb"):
            files[rel] = data
            continue
        solution = json.loads(solved[rel]) if rel in solved else None
        nb = explore_notebook(json.loads(data), solution, rel)
        files[rel] = (json.dumps(nb, indent=1, ensure_ascii=False) + "\n").encode()
    return files, committed
