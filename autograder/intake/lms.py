"""A course site's "download all submissions" archive, as it comes, into ``<student>/<assignment>/<notebook>``.

Two layouts (of one assignment each), read from the names their code gives the files:

- Canvas: every file at the top, ``<name>_<user id>_<file id>_<file name>``, with ``_LATE`` after the name when
  Canvas counts the submission late (``smithjane_LATE_12345_67890_02_absolute.ipynb``); ``<name>`` is the
  student's sortable name squashed ("Smith, Jane" -> ``smithjane``); a file uploaded again ends ``-1``, ``-2``
  before its extension. Canvas writes each file into the zip when it is downloaded: the entry times are the
  download's, not the submission's, and only the LATE flag says anything about time.
- Moodle: a folder ``<Full Name>_<participant id>_assignsubmission_file_`` per student holding the files as
  uploaded (``Jane Smith_123456_assignsubmission_file_/02_absolute.ipynb``), or, with "download submissions
  in folders" off, the same prefix on each file (``Jane Smith_123456_assignsubmission_file_02_absolute.ipynb``).
  The participant id is Moodle's per assignment, not a user id; the entry times, taken as the submission's,
  are those of Moodle's stored copies of the files (about the upload's).

Student ids: a roster (nbgrader's student CSV, ``id,first_name,last_name,email``, and an optional ``lms_id``
column with the Canvas user id), else the students of the gradebook, matched on the Canvas user id or on the
name; a student matched by neither gets the name as id (Canvas's squashed name, Moodle's full name in lower case
with ``_`` between words), and import says so. Before all that, the course's record of site users
(``site_users.py``): a user it holds keeps the id it gives them, and a conflict with it is refused. A roster in which
two rows give one course-site id or one student id (a row copied and half edited), or two ids that look alike, is
refused whole, naming both rows. An id that looks like another student's (the roster's, the record's, or another
of the same download) is refused where the two differ in their scripts (``smithјane`` with a Cyrillic ``ј`` beside
``smithjane``: two students whose rows read the same) and flagged where they do not (``srnith`` beside ``smith``):
two ids look alike when their confusable skeletons, Unicode's UTS #39 (``lookalike.py``), are one.
"""

from __future__ import annotations

import csv
import re
import shutil
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from autograder.intake import lookalike, site_users
from autograder.intake.site_users import SiteUsers

CANVAS = re.compile(r"^(?P<name>[^_/]+?)(?P<late>_LATE)?_(?P<user>\d+)_(?P<file_id>\d+)_(?P<file>.+)$")
MOODLE_FOLDER = re.compile(r"^(?P<name>.+?)_(?P<user>\d+)_assignsubmission_(?P<plugin>[a-z]+)_$")
MOODLE_FILE = re.compile(r"^(?P<name>.+?)_(?P<user>\d+)_assignsubmission_(?P<plugin>[a-z]+)_(?P<file>.+)$")
AGAIN = re.compile(r"^(?P<stem>.+?)(-\d+| \(\d+\))$")  # Canvas's "-1" and a browser's " (1)" on a file again


@dataclass
class Entry:
    """One student's files in the download."""

    lms: str  # "Canvas" or "Moodle"
    name: str  # as the LMS wrote it
    user: str  # Canvas user id / Moodle participant id
    files: list[tuple[Path, str]] = field(default_factory=list)  # (extracted file, name as uploaded)
    late: bool | None = None  # Canvas's flag; None where the layout carries none


def _words(text: str) -> str:
    return "_".join(re.findall(r"[^\W_]+", unicodedata.normalize("NFKC", text).casefold()))


def _squashed(text: str) -> str:
    return "".join(re.findall(r"[^\W_]+", unicodedata.normalize("NFKC", text).casefold()))


def read_layout(root: Path) -> list[Entry]:
    """The students of a Canvas or Moodle download at ``root``; [] when ``root`` is laid out otherwise."""
    entries: dict[tuple[str, str], Entry] = {}
    for item in sorted(root.iterdir()):
        if item.name.startswith(".") or item.name == "__MACOSX":
            continue
        canvas = CANVAS.match(item.name) if item.is_file() else None
        folder = MOODLE_FOLDER.match(item.name) if item.is_dir() else None
        flat = MOODLE_FILE.match(item.name) if item.is_file() else None
        if folder or flat:
            match = folder or flat
            entry = entries.setdefault(
                ("Moodle", match["user"]), Entry("Moodle", match["name"], match["user"])
            )
            if match["plugin"] != "file":  # online text, comments: not a notebook
                continue
            if folder and item.is_symlink():  # refused in ``rearrange``, never followed
                entry.files.append((item, item.name))
            elif folder:
                entry.files += [
                    (p, p.relative_to(item).as_posix())
                    for p in sorted(item.rglob("*"))
                    if p.is_file() or p.is_symlink()
                ]
            else:
                entry.files.append((item, match["file"]))
        elif canvas:
            entry = entries.setdefault(
                ("Canvas", canvas["user"]), Entry("Canvas", canvas["name"], canvas["user"])
            )
            entry.files.append((item, canvas["file"]))
            entry.late = bool(entry.late) or bool(canvas["late"])
        else:
            return []  # something else at the top: not a download of either
    return list(entries.values())


def _alike(student: str, others: set[str]) -> str | None:
    """One of ``others`` (another id) that looks like ``student``, or None."""
    skeleton = lookalike.skeleton(student)
    return next((o for o in sorted(others) if o != student and lookalike.skeleton(o) == skeleton), None)


def _differs(student: str, other: str) -> str:
    """What makes ``student`` another id than ``other`` that looks the same: its letters of other scripts, named."""
    own = lookalike.scripts(other)
    strange = [c for c in dict.fromkeys(student) if lookalike.scripts(c) - own] or [
        c for c in student if c not in other
    ]
    return ", ".join(f"{c!r} U+{ord(c):04X} {unicodedata.name(c, '?')}" for c in strange[:4])


def read_roster(path: Path | None) -> list[dict]:
    """The roster's rows (nbgrader's student CSV: ``id`` required, ``first_name``, ``last_name``, ``email``,
    ``lms_id`` optional), else the gradebook's students."""
    if path is None:
        from autograder import course

        if not course.has_gradebook():
            return []
        with course.gradebook() as gb:
            return [{"id": s.id, "first_name": s.first_name or "", "last_name": s.last_name or "", "lms_id": ""}
                    for s in gb.students]  # fmt: skip
    if not path.is_file():
        raise SystemExit(
            f"no roster at {path}: give a CSV with a header line id,first_name,last_name[,lms_id]"
        )
    with open(path, newline="", encoding="utf-8-sig") as f:
        rows = list(csv.DictReader(f))
    if not rows or "id" not in rows[0]:
        raise SystemExit(
            f"the roster {path} has no 'id' column: its header must name id (the student id of the course) and "
            f"first_name, last_name (to match names) or lms_id (the Canvas user id); it has {list(rows[0]) if rows else 'no rows'}"
        )
    seen: dict[tuple[str, str], int] = {}  # (column, value) -> the line of the row that gave it first
    for line, row in enumerate(rows, start=2):  # the header is line 1
        for column in ("lms_id", "id"):
            value = (row.get(column) or "").strip()
            first = seen.setdefault((column, value), line) if value else line
            if first != line:
                raise SystemExit(
                    f"the roster {path}: lines {first} and {line} both give the {'course-site id' if column == 'lms_id' else 'student id'} "
                    f"{value!r} ({_row(rows[first - 2])}; {_row(row)}): one site user is one student; correct the "
                    "roster (a row copied and not edited?) and import again; nothing was imported"
                )
    ids = {(row.get("id") or "").strip(): line for line, row in enumerate(rows, start=2)}
    for student, line in ids.items():
        other = _alike(student, set(ids))
        if other is not None and lookalike.scripts(student) != lookalike.scripts(other) and ids[other] < line:
            raise SystemExit(
                f"the roster {path}: the student id {student!r} on line {line} looks like {other!r} on line "
                f"{ids[other]} ({_differs(student, other)}): two students whose rows read the same; correct the "
                "roster and import again; nothing was imported"
            )
    return rows


def _row(row: dict) -> str:
    return ", ".join(
        f"{k}={(v or '').strip()!r}"
        for k, v in row.items()
        if k in ("id", "first_name", "last_name", "lms_id")
    )


def student_ids(
    entries: list[Entry], roster: list[dict], known: SiteUsers | None = None, assignment: str = ""
) -> tuple[dict[int, str], dict[int, str], list[str]]:
    """entry index -> student id; entry index -> why it gets none (it is not imported); lines to tell the
    instructor (an id made from a name, a site user whose name changed).

    A site user the course's record holds (``known``, ``site_users.py``; ``assignment``: the download's) keeps
    the id it gives them. Otherwise the roster decides: the Canvas user id (``lms_id``), else the name; an entry
    matched by neither gets its name as id. Refused, naming both, so that nothing is overwritten or merged: an
    entry whose name fits more than one roster student; two entries that come to one id (two participants of one
    name); an id made from a name that a roster student other than this one already has; a user whom the record and
    the roster give different ids; a user coming to an id the record gives another site user; and an id that is
    not valid (``course.student_id_problem``)."""
    from autograder.course import student_id_problem

    known = known if known is not None else SiteUsers(Path())
    by_user = {r.get("lms_id", "").strip(): r["id"] for r in roster if r.get("lms_id", "").strip()}
    by_name: dict[str, set[str]] = {}
    for r in roster:
        first, last = r.get("first_name", "").strip(), r.get("last_name", "").strip()
        if first or last:  # Canvas: "Last, First" squashed; Moodle: "First Last"
            for key in {_squashed(last + first), _words(f"{first} {last}"), _words(f"{last} {first}")}:
                by_name.setdefault(key, set()).add(r["id"])
    roster_ids = {r["id"] for r in roster}
    ids, refused, said = {}, {}, []
    for i, entry in enumerate(entries):
        key = _squashed(entry.name) if entry.lms == "Canvas" else _words(entry.name)
        who = f"{entry.name!r} ({entry.lms} {entry.user})"
        user = site_users.key(entry.lms, entry.user, assignment)
        recorded = known.student(user)
        found = by_user.get(entry.user) if entry.lms == "Canvas" else None
        named = by_name.get(key, set())
        if recorded is not None:
            # the roster's id for this user (by lms_id, else by name) when it is not the record's
            says = found if found is not None else ", ".join(sorted(named)) if recorded not in named else ""
            if says and says != recorded:
                refused[i] = (
                    f"{who} is {recorded!r} in the course's record of site users ({known.path}), but the roster "
                    f"gives {says!r}: a student keeps one id; if {says!r} is right, change that user's student in "
                    f"the record and move their earlier submissions in submitted/ first"
                )
                continue
            if known.users[user]["name"] != entry.name:
                said.append(
                    f"{who} is {recorded!r}, as the course's record of site users says ({known.describe(user)})"
                )
            ids[i] = recorded
            continue
        if found is None and len(named) > 1:
            refused[i] = f"{who} fits more than one roster student ({', '.join(sorted(named))})"
            continue
        found = found or next(iter(named), None)
        if found is None:
            found = key or f"{entry.lms.lower()}_{entry.user}"
            if found in roster_ids:
                refused[i] = (
                    f"{who} is on no roster row, and its name as id, {found!r}, is another roster student's"
                )
                continue
            said.append(
                f"{entry.lms}: no roster entry for {entry.name} ({entry.lms} {entry.user}) -> {found} (the name as id)"
            )
        holder = known.holder(found, user)
        if holder is not None:
            refused[i] = (
                f"{who} would be {found!r}, which the course's record of site users ({known.path}) gives to "
                f"{known.describe(holder)}: two site users are never one student; give this one an id of their own "
                "in the roster (id and lms_id), or correct the record"
            )
            continue
        problem = student_id_problem(found)
        if problem is not None:
            refused[i] = f"{who}: {problem}"
            continue
        taken = roster_ids | {e["student"] for e in known.users.values()} | set(ids.values())
        other = _alike(found, taken)
        if other is not None and lookalike.scripts(found) != lookalike.scripts(other):
            refused[i] = (
                f"{who} would be {found!r}, which looks like the student id {other!r} but is another "
                f"({_differs(found, other)}): two students whose rows would read the same; if this is a student of "
                "their own, give them an id in the roster (id and lms_id)"
            )
            continue
        if other is not None:
            said.append(
                f"{who} is {found!r}, which looks like the student id {other!r}: check they are two students"
            )
        ids[i] = found
    for i, student in list(ids.items()):
        others = [j for j, s in ids.items() if s == student and j != i]
        if others:
            both = " and ".join(
                f"{entries[j].name!r} ({entries[j].lms} {entries[j].user})" for j in [i, *others]
            )
            refused[i] = f"{both} both come to the student id {student!r}"
    for i in refused:
        ids.pop(i, None)
    return ids, refused, said


def notebook_name(uploaded: str, expected: set[str]) -> str:
    """The name a notebook is graded under: as uploaded, or without Canvas's ``-1`` or a browser's `` (1)``
    when that is one of the assignment's notebooks."""
    path = Path(uploaded)
    if path.name in expected or path.suffix != ".ipynb":
        return uploaded
    again = AGAIN.match(path.stem)
    if again and f"{again['stem']}.ipynb" in expected:
        return str(path.with_name(f"{again['stem']}.ipynb"))
    return uploaded


def rearrange(
    entries: list[Entry], ids: dict[int, str], assignment: str, expected: set[str], out: Path
) -> dict[int, str]:
    """``out/<student>/<assignment>/<file>`` for every entry that has an id, file times kept (copy2). Returns entry
    index -> why it was not rearranged: two of its files would be graded under one name (which one is the work?),
    or a file name that is not one."""
    refused = {}
    for i, student in ids.items():
        entry, folder = entries[i], out / student / assignment
        targets: dict[str, str] = {}
        for source, uploaded in entry.files:
            name = notebook_name(uploaded, expected)
            if source.is_symlink():
                refused[i] = f"{uploaded!r} is a link: send the file itself"
            elif any(part in ("", ".", "..") for part in name.split("/")):
                refused[i] = f"it holds a file named {uploaded!r}"
            elif name in targets:
                refused[i] = f"{targets[name]!r} and {uploaded!r} would both be graded as {name!r}"
            targets[name] = uploaded
        if i in refused:
            continue
        folder.mkdir(parents=True, exist_ok=True)
        for source, uploaded in entry.files:
            target = folder / notebook_name(uploaded, expected)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return refused
