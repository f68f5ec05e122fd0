"""``python -m autograder release``: one assignment as students get it.

English: nbgrader's ``generate_assignment`` (``solutions/`` -> ``notebooks/``), which also enters the assignment in the
course's gradebook, with its due date (autograde needs it there); the course's start page (``00_start.ipynb``, no
assignment) beside it. With an edition (``--lang zh-TW``): that edition's solutions and release too
(``editions.py``, ``editions/<lang>/``), outside the gradebook.
"""

from __future__ import annotations

from pathlib import Path

from autograder import course
from autograder.editions.catalogs import START_PAGE, editions_dir
from autograder.intake import late
from autograder.release import editions
from autograder.release.start_page import release_start_page
from posref import launch


def release(assignment: str) -> list[Path]:
    """``nbgrader generate_assignment`` (``solutions/`` -> ``notebooks/``), entering it in the gradebook; the
    course's start page (``00_start.ipynb``, no assignment) is released beside it. -> the files written."""
    # first: nbgrader would enter a misspelt name in the gradebook, then fail
    course.require_assignment(assignment)
    late.enter_due_date(assignment)
    course.nbgrader("generate_assignment", assignment, "--force")
    start = release_start_page(course.source_dir(), course.release_dir())
    written = sorted(p for p in (course.release_dir() / assignment).rglob("*") if p.is_file())
    return written + ([start] if start is not None else [])


def release_summary(assignment: str, written: list[Path], edition: str = "en") -> str:
    """What ``release`` did, for the terminal: the files written, the gradebook, and what it left alone: the
    students' own copies, in the work folder of each edition released (``work/``, ``work-<edition>/``)."""
    lines = [
        f"released {assignment} (entered in the gradebook {course.course_dir() / 'gradebook.db'}); wrote:"
    ]
    lines += [f"  {path}" for path in written]
    where = ["`make lab` works in the checkout's work/"]
    if edition != "en":
        folder = launch.edition(edition).work.name
        where.append(f"`make lab EDITION={edition}` in {folder}/")
    lines.append(
        f"Students' own copies are not touched: {' and '.join(where)}, and each brings a new version there at its "
        "next start, beside any notebook the student changed."
    )
    return "\n".join(lines)


def release_edition(assignment: str, edition: str) -> list[Path]:
    """The edition's solutions of ``assignment`` and the start page, and their release (``editions/<edition>/``,
    or ``$POSREF_EDITIONS_DIR``), after the English release -> the files written."""
    out = editions_dir()
    editions.write_solutions(edition, [assignment, START_PAGE], source_dir=course.source_dir(), out=out)
    return editions.release(edition, [assignment], out=out)
