"""The course's start page: ``solutions/00_start.ipynb`` released as ``notebooks/00_start.ipynb``.

It is a page, not an assignment (nothing in it is graded or handed in), so nbgrader does not release it: the
release is the source with its outputs cleared, written whenever ``python -m autograder release`` runs, because
the page lists every assignment. ``posref lab`` opens JupyterLab on it.
"""

from __future__ import annotations

from pathlib import Path

import nbformat

from posref.launch import START_PAGE


def released_start_page(source: Path) -> nbformat.NotebookNode:
    """The start page at ``source`` as students get it: every code cell without outputs or execution count."""
    nb = nbformat.read(source, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    return nb


def release_start_page(source_dir: Path, release_dir: Path) -> Path | None:
    """Write ``release_dir/00_start.ipynb`` from ``source_dir``'s; None (nothing written) when there is none."""
    source = source_dir / START_PAGE
    if not source.is_file():
        return None
    release_dir.mkdir(parents=True, exist_ok=True)
    target = release_dir / START_PAGE
    nbformat.write(released_start_page(source), target)
    return target
