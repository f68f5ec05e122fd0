"""Releasing an assignment to nbgrader's exchange in every edition (a JupyterHub course; see
``posref_jupyter/exchange.py`` for the layout and for the student's side).

``ReleaseEditions`` is ``c.ExchangeFactory.release_assignment`` in ``autograder/nbgrader_config.py``: what
``nbgrader release_assignment NAME`` and the formgrader's Release button run. It releases the English release to
``<exchange>/<course>/outbound/NAME/`` as nbgrader does, and each edition's beside it, in
``<exchange>/<course>/editions/<tag>/NAME/``: the English release's files, each notebook replaced by the edition's
(``editions/<tag>/notebooks/NAME/``, or ``$POSREF_EDITIONS_DIR``; ``python -m autograder release NAME --lang <tag>``
makes it). An edition is released only when it is graded as the English release is (the same notebooks, and in each
the same graded cells, grade ids, points and tests, in the same order): a student of any edition then hands in
what one gradebook grades. Where one differs (an edition not rebuilt after the English changed), nothing is
released and the error says which and how to rebuild it; where one is missing, its students get the English release
and a warning says so. Releasing again (``--force``) replaces every edition's release with the English one's.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from stat import S_ISGID, S_IWGRP

import nbformat
from nbgrader.exchange.default.release_assignment import ExchangeReleaseAssignment

from autograder.editions.catalogs import editions_dir
from autograder.editions.notebook import EDITIONS
from posref_jupyter.exchange import EDITIONS_FOLDER, edition_release

FILES, FOLDERS = 0o644, 0o755  # as nbgrader's outbound: everyone reads, the instructor writes


def graded_cells(path: Path) -> list[tuple]:
    """What grading reads of notebook ``path``: each nbgrader cell's grade id, type, flags and points in order, and
    the source of its tests (autograded code cells)."""
    out = []
    for cell in nbformat.read(path, as_version=4).cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta:
            tests = cell.source if meta.get("grade") and not meta.get("solution") else None
            out.append((meta.get("grade_id"), cell.cell_type, meta.get("grade"), meta.get("solution"),
                        meta.get("locked"), meta.get("points"), tests))  # fmt: skip
    return out


def notebooks_in(folder: Path) -> list[Path]:
    """The notebooks of release folder ``folder``, relative to it, less those in hidden folders (checkpoints)."""
    found = (p.relative_to(folder) for p in folder.rglob("*.ipynb"))
    return sorted(p for p in found if not any(part.startswith(".") for part in p.parts))


def edition_problem(english: Path, edition: Path) -> str | None:
    """Why the release folder ``edition`` is not graded as the English release ``english`` is; None when it is."""
    notebooks, theirs = notebooks_in(english), notebooks_in(edition)
    if notebooks != theirs:
        return f"its notebooks are {[str(p) for p in theirs]}, the English release's {[str(p) for p in notebooks]}"
    for name in notebooks:
        if graded_cells(english / name) != graded_cells(edition / name):
            return f"{name} differs from the English one in its graded cells (grade ids, points or tests)"
    return None


class ReleaseEditions(ExchangeReleaseAssignment):
    """nbgrader's release of the English release, and of each edition's beside it (see the module docstring)."""

    def editions_to_release(self) -> dict[str, Path]:
        """tag -> the edition's release folder of the assignment, for each edition that has one; refused (nothing
        released) where one is not graded as the English release is."""
        assignment, found = self.coursedir.assignment_id, {}
        for tag in EDITIONS:
            folder = editions_dir() / tag / "notebooks" / assignment
            if not folder.is_dir():
                self.log.warning(
                    "%s has no %s edition in %s: its %s students fetch the English release (`python -m autograder "
                    "release %s --lang %s` makes it)", assignment, tag, folder.parent, tag, assignment, tag
                )  # fmt: skip
                continue
            problem = edition_problem(Path(self.src_path), folder)
            if problem is not None:
                self.fail(
                    f"the {tag} edition of {assignment} ({folder}) is not graded as its English release: {problem}. "
                    f"Rebuild it after the English release: `python -m autograder release {assignment} --lang {tag}`"
                )
            found[tag] = folder
        return found

    def copy_files(self):
        found = self.editions_to_release()
        super().copy_files()
        shared = (S_ISGID | S_IWGRP) if self.coursedir.groupshared else 0
        assignment = self.coursedir.assignment_id
        self.ensure_directory(str(Path(self.course_path) / EDITIONS_FOLDER), FOLDERS | shared)
        for tag in EDITIONS:
            dest = edition_release(self.course_path, tag, assignment)
            if dest.exists():
                shutil.rmtree(dest)  # the English release was replaced (--force): no edition stays as it was
            if tag not in found:
                continue
            self.ensure_directory(str(dest.parent), FOLDERS | shared)
            self.do_copy(self.src_path, str(dest))
            for notebook in notebooks_in(Path(self.src_path)):
                shutil.copyfile(found[tag] / notebook, dest / notebook)
            self.set_perms(str(dest), fileperms=FILES | (S_IWGRP if shared else 0), dirperms=FOLDERS | shared)
            self.log.info("Released the %s edition as: %s %s", tag, self.coursedir.course_id, assignment)
