"""The class pages in the instructor's lab: what ``python -m autograder stats`` and ``similar`` wrote into
``<course>/reports/``, served by ``lab_server.py`` at ``<base URL>/posref/reports/`` (a list of them, each a link)
and ``.../posref/reports/<name>``.

Only names those commands write are served (``REPORT``: ``<assignment>-stats.html``, ``...-similar.csv``, ...), only
plain files of that folder (no link followed), a CSV as a download. The pages hold students' code as escaped text
and carry their own Content-Security-Policy; the server adds its own with the ``sandbox`` directive
(``lab_server.STUDENT_FILES``), so that even a page changed by hand runs nothing in the lab's origin.
"""

from __future__ import annotations

import re
from pathlib import Path

from markupsafe import escape

from autograder import course

REPORT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}-(stats|similar)\.(html|csv)")
TYPES = {"html": "text/html; charset=utf-8", "csv": "text/csv; charset=utf-8"}
INDEX_POLICY = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"


def folder() -> Path:
    return course.course_dir() / "reports"


def listing(where: Path | None = None) -> list[str]:
    """The names of the class pages and CSVs in ``where`` (default: the course's ``reports/``), sorted."""
    where = where or folder()
    if not where.is_dir():
        return []
    return sorted(p.name for p in where.iterdir() if REPORT.fullmatch(p.name) and _plain(p))


def _plain(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()


def report(name: str, where: Path | None = None) -> tuple[bytes, str] | None:
    """The content and Content-Type of the report ``name``; None where ``name`` is not one ``stats`` or
    ``similar`` writes, or no plain file of ``where`` (default: the course's ``reports/``) has it."""
    match = REPORT.fullmatch(name)
    path = (where or folder()) / name
    if match is None or not _plain(path):
        return None
    return path.read_bytes(), TYPES[match.group(2)]


def index_page(names: list[str]) -> str:
    """The page that lists the class pages ``names``, each a relative link."""
    items = "".join(f'<li><a href="{escape(n)}">{escape(n)}</a></li>' for n in names)
    body = (
        f"<ul>{items}</ul>"
        if names
        else "<p>None yet: run <code>python -m autograder stats ASSIGNMENT</code> or <code>python -m autograder "
        "similar ASSIGNMENT</code>.</p>"
    )
    return (
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
        f'<meta http-equiv="Content-Security-Policy" content="{INDEX_POLICY}">'
        '<title>The class pages</title></head>\n<body style="font-family: system-ui, sans-serif; margin: 2em">'
        f"<h1>The class pages</h1><p>From <code>{escape(str(folder()))}</code>: what the class did "
        f"(<code>stats</code>) and which answers look alike (<code>similar</code>).</p>{body}</body></html>\n"
    )
