"""Builds the example submissions from the released demo notebook (see submissions.py)."""

from __future__ import annotations

from pathlib import Path

import nbformat

from autograder.demo.submissions import SUBMISSIONS


def write_submissions(
    released: Path, target: Path, names: list[str] | None = None, examples: dict | None = None
) -> dict[str, str]:
    """``target/<name>/positions.ipynb`` (+ extra files) for each example of ``examples`` (default: the demo's
    ``SUBMISSIONS``, in their form: name -> (answers by grade id, files, score, why)); returns name -> expected
    score."""
    expected = {}
    for name, (answers, files, score, why) in (SUBMISSIONS if examples is None else examples).items():
        if names is not None and name not in names:
            continue
        nb = nbformat.read(released, as_version=4)
        for cell in nb.cells:
            grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
            if grade_id in answers:
                cell.source = answers[grade_id]
        folder = target / name
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / released.name)
        for filename, text in files.items():
            (folder / filename).write_text(text)
        expected[name] = f"{'-' if score is None else f'{score:g}'}: {why}"
    return expected
