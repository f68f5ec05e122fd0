"""What ``import`` could not take, kept in the course folder so that ``export`` gives each such student a row.

``<course>/refusals/<assignment>.json`` (the course's own file, written by import alone) holds, for each student or
site user whose latest import of the assignment was refused, why and when::

    {"version": 1, "refused": {"smithjane": {"student": "smithjane", "site_user": "Canvas 111",
                                             "name": "smithjane (Canvas 111)", "reason": "...", "when": "2026-..."}}}

The key is the student id where import got that far (a file over the size bound, a damaged entry, a link), else the
site user (``site_users.key``: a conflict with the record of site users or the roster came before an id), else the
name as the download or the folder gave it. A later import that takes the student (or that site user) clears the
entry; an earlier submission the refused one was meant to replace stays in ``submitted/``, and export says both.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from autograder.intake.versioned import VersionedFile, locked

FOLDER = "refusals"
VERSION = 1


@dataclass(frozen=True)
class Refusal:
    """One refused import: ``student`` (the course's id; None where import decided none), ``site_user`` (the
    record of site users' key; None outside a course site's download), ``name`` (as import named it), why."""

    student: str | None
    site_user: str | None
    name: str
    reason: str

    @property
    def key(self) -> str:
        return self.student or self.site_user or self.name


def _path(course: Path, assignment: str) -> Path:
    return course / FOLDER / f"{assignment}.json"


FIELDS = {
    "student": (str, type(None)),
    "site_user": (str, type(None)),
    "name": str,
    "reason": str,
    "when": str,
}
REFUSALS = VersionedFile(
    what="the course's record of refused imports",
    field="refused",
    version=VERSION,
    entry_ok=lambda entry: (
        isinstance(entry, dict) and all(isinstance(entry.get(f), t) for f, t in FIELDS.items())
    ),
    expected=f"entries of {', '.join(FIELDS)}",
    remedy="fix it, or remove it and import again",
)


def read(course: Path, assignment: str) -> dict[str, dict]:
    """The assignment's refusals (key -> student, site_user, name, reason, when); ValueError, saying what is wrong,
    for a file that is not one."""
    return REFUSALS.read(_path(course, assignment))


def update(
    course: Path, assignment: str, refused: list[Refusal], imported: list[tuple[str, str | None]]
) -> None:
    """After an import of ``assignment``: the entries of the students it took (``imported``: student id and site
    user key, None outside a site's download) cleared, and ``refused`` added, each replacing an earlier one of
    the same key. Holds a lock on the course's refusals while it reads and writes."""
    path = _path(course, assignment)
    if not refused and not path.exists():  # nothing refused, now or before: no file to keep
        return
    with locked(path):
        entries = read(course, assignment)
        taken = {key for pair in imported for key in pair if key is not None}
        entries = {k: e for k, e in entries.items() if not taken & {k, e["student"], e["site_user"]}}
        when = datetime.now(timezone.utc).isoformat(timespec="seconds")
        REFUSALS.write(path, entries | {r.key: {**asdict(r), "when": when} for r in refused})
