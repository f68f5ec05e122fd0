"""The editions' notebooks, made from the English source and the catalogs, beside the English ones:

    editions/<tag>/solutions/00_start.ipynb, editions/<tag>/solutions/<name>/<name>.ipynb    (nbgrader's source)
    editions/<tag>/notebooks/00_start.ipynb, editions/<tag>/notebooks/<name>/<name>.ipynb    (the release)

with ``<tag>`` one of ``editions.EDITIONS`` (``zh-TW``, ``zh-CN``) and every file named as in English, so a
submitted ``01_order.ipynb`` is the same assignment, grade ids and points whatever its edition. The solutions are
the English ones translated (``editions.edition_notebook``); the release is what nbgrader's ``generate_assignment``
makes of them, as for ``notebooks/``, except that it never touches the gradebook (the one gradebook holds the
English source: the graded cells, which nbgrader restores, are the same in every edition) and that a written
answer's stub (``ClearSolutions.text_stub``) and an answer cell's stub of code (``ClearSolutions.code_stub``: its
comment and the message every check echoes first) are in the edition's language. The start page is released as
``start_page.py`` releases the English one.

``python -m autograder editions build`` writes them all; ``python -m autograder release NAME --lang zh-TW``
one assignment of one edition (after the English release, which enters it in the gradebook).
"""

from __future__ import annotations

from pathlib import Path

import nbformat

from autograder.course import config, tools_on_path
from autograder.editions.catalogs import (
    EDITIONS_DIR,
    LOCALE_DIR,
    SOURCE_DIR,
    catalog_path,
    read_catalog,
    source_notebooks,
)
from autograder.editions.notebook import CODE_STUB, EDITIONS, TEXT_STUB, edition_notebook


def translations(edition: str, name: str, locale_dir: Path = LOCALE_DIR) -> dict[str, str]:
    """msgid -> msgstr of the finished entries (translated, not fuzzy) of notebook ``name``'s catalog for
    ``edition``; empty where it has no catalog."""
    path = catalog_path(EDITIONS[edition], name, locale_dir)
    if not path.is_file():
        return {}
    return {e.msgid: e.msgstr for e in read_catalog(path) if e.msgstr and not e.fuzzy and not e.obsolete}


def _write(nb, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target)
    return target


def write_solutions(
    edition: str,
    names: list[str] | None = None,
    *,
    source_dir: Path = SOURCE_DIR,
    locale_dir: Path = LOCALE_DIR,
    out: Path = EDITIONS_DIR,
) -> list[Path]:
    """``out/<edition>/solutions/...`` for the notebooks ``names`` (all, by default) -> the files written."""
    written = []
    for name, source in source_notebooks(source_dir).items():
        if names is None or name in names:
            nb = edition_notebook(
                nbformat.read(source, as_version=4), translations(edition, name, locale_dir), edition
            )
            written.append(_write(nb, out / edition / "solutions" / source.relative_to(source_dir)))
    return written


def release(edition: str, assignments: list[str], *, out: Path = EDITIONS_DIR) -> list[Path]:
    """nbgrader's ``generate_assignment`` of each of ``assignments`` from ``out/<edition>/solutions`` into
    ``out/<edition>/notebooks``, without the gradebook, and the edition's start page -> the files written."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.converters import GenerateAssignment
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.preprocessors import SaveCells

    from autograder.release.start_page import (
        release_start_page,  # imports posref: only where a release is made
    )

    source, target = out / edition / "solutions", out / edition / "notebooks"
    settings = config()
    settings.CourseDirectory.source_directory = str(source)
    settings.CourseDirectory.release_directory = str(target)
    settings.GenerateAssignment.no_database = True
    settings.GenerateAssignment.preprocessors = [
        step for step in GenerateAssignment.class_traits()["preprocessors"].default() if step is not SaveCells
    ]
    settings.ClearSolutions.text_stub = TEXT_STUB[edition]
    settings.ClearSolutions.code_stub = {"python": CODE_STUB[edition]}
    api = NbGraderAPI(coursedir=CourseDirectory(config=settings), config=settings)
    written = []
    for assignment in assignments:
        with tools_on_path():
            result = api.generate_assignment(assignment, force=True, create=False)
        if not result["success"]:
            raise SystemExit(
                f"nbgrader could not release {assignment} ({edition}):\n{result.get('error', '')}"
            )
        written += sorted(p for p in (target / assignment).rglob("*") if p.is_file())
    start = release_start_page(source, target)
    return written + ([start] if start is not None else [])


def build(
    editions: list[str] | None = None,
    *,
    source_dir: Path = SOURCE_DIR,
    locale_dir: Path = LOCALE_DIR,
    out: Path = EDITIONS_DIR,
) -> list[Path]:
    """Every notebook of every edition (or of ``editions``): solutions, then releases -> the files written."""
    written = []
    assignments = sorted(p.parent.name for p in source_dir.glob("*/*.ipynb"))
    for edition in editions or list(EDITIONS):
        written += write_solutions(edition, source_dir=source_dir, locale_dir=locale_dir, out=out)
        written += release(edition, assignments, out=out)
    return written
