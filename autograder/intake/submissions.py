"""``python -m autograder import``: a class's submissions, from a folder, an archive or a course site's download,
into the course folder, each with nbgrader's ``timestamp.txt`` (late work: ``late.py``).

Each student is imported on their own: a submission that cannot be taken (an id that is not one or that two
students would share, a link, a file name that is not UTF-8, a folder where the notebook should be, a damaged
archive entry, more than ``MAX_SUBMISSION`` bytes) is that student's "could not import", with the reason, and
their earlier submission stays as it was; everyone else is imported. The time of a submission comes from evidence
the student does not control: ``--timestamp``, Canvas's LATE flag, the archive's entry times (a course site's
stored copies), never a file the student uploaded: one named like the course's own (``timestamp.txt``) is left
out, and the instructor told. What a submission may hold is ``submission.py``'s.
"""

from __future__ import annotations

import functools
import shutil
import sys
import tempfile
import uuid
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from autograder.course import (
    assignments,
    course_dir,
    require_assignment,
    source_dir,
    student_id_problem,
    submission_dir,
    take_modes,
)
from autograder.intake import late, lms, refusals, site_users
from autograder.intake.refusals import Refusal
from autograder.intake.submission import METADATA, Refused, check_submission
from autograder.intake.unpack import unpack


def _folders(folder: Path) -> list[Path]:
    """Subfolders, without hidden ones and the ``__MACOSX`` folder a Mac adds to every zip it makes."""
    return sorted(
        p for p in folder.iterdir()
        if p.is_dir() and p.name[:1] != "." and p.name != "__MACOSX"
    )  # fmt: skip


def _assignment_of(entries: list[lms.Entry], assignment: str | None) -> str:
    """The assignment of a course site's download (one assignment each): ``assignment``, else the one whose
    notebook the students uploaded."""
    if assignment is not None:
        return assignment
    names = {lms.notebook_name(Path(n).name, {n}) for e in entries for _, n in e.files}
    by_notebook = {p.name: p.parent.name for p in source_dir().glob("*/*.ipynb")}
    found = sorted(
        {by_notebook[n] for n in names for n in [lms.notebook_name(n, set(by_notebook))] if n in by_notebook}
    )
    if len(found) != 1:
        what = ", ".join(found) if found else "none of the course's notebooks"
        raise SystemExit(f"a {entries[0].lms} download is of one assignment: its files hold {what}; "
                         "name it with --assignment")  # fmt: skip
    return found[0]


def _submission_time(folder: Path, late_flag: bool | None, due: datetime | None, given: datetime | None):
    """When a submission came in and how that is known: ``given`` (--timestamp), Canvas's LATE flag (against the
    assignment's due date ``due``), or the latest time of its files (a course site's stored copies, an archive's
    entry times). Never a file of the submission itself (the student wrote it)."""
    if given is not None:
        return given, "--timestamp"
    if late_flag is not None:  # Canvas: entry times are the download's
        if not late_flag or due is None:
            return (
                None,
                "Canvas: on time" if not late_flag else "Canvas: LATE, but the course has no due date",
            )
        return due + timedelta(seconds=1), "Canvas: LATE (time not in the download: 1 s after the due date)"
    times = [p.lstat().st_mtime for p in folder.rglob("*") if p.is_file() and p.name not in METADATA]
    return (datetime.fromtimestamp(max(times), timezone.utc), "file times") if times else (None, "no files")


def _import_one(source: Path, student: str, assignment: str, when: datetime | None) -> list[str]:
    """``source`` copied into the course as ``student``'s submission of ``assignment`` (replacing an earlier one
    only once the copy is complete), with ``timestamp.txt`` when ``when`` is known. Returns what of it was left
    out (files named like the course's own)."""
    try:
        target = submission_dir(student, assignment)
    except ValueError as err:
        raise Refused(str(err)) from None
    staging = target.parent.parent / f".import-{uuid.uuid4().hex}"  # in submitted/: never taken for a student
    left_out = [name for name in METADATA if (source / name).exists() or (source / name).is_symlink()]
    try:
        shutil.copytree(
            source, staging, ignore=lambda folder, names: METADATA if Path(folder) == source else ()
        )
        take_modes(staging)  # copytree kept the student's modes (and took the folder's set-group-ID bit)
        if when is not None:
            late.write_timestamp(staging, when)
        if target.exists():
            shutil.rmtree(target)
        target.parent.mkdir(exist_ok=True)
        staging.rename(target)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return left_out


@dataclass
class Imported:
    """What an import did: the students imported, and each one it could not import (label -> why; by assignment,
    as the course's record of refused imports keeps them: ``refusals``)."""

    imported: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)
    refusals: dict[str, list[Refusal]] = field(default_factory=dict)


def shown(name: str) -> str:
    """A name from a submission as a terminal or a message may show it: itself when plainly printable, else its
    Python repr (escapes for a byte that is not UTF-8, an invisible or a control character)."""
    return name if name.isprintable() and name.encode("utf-8", "replace").decode() == name else repr(name)


def import_submissions(
    path: Path,
    assignment: str | None = None,
    *,
    timestamp: datetime | None = None,
    roster: Path | None = None,
) -> Imported:
    """Copy ``PATH/<student>/<assignment>/*`` (or ``PATH/<student>/*`` with ``--assignment``), or a Canvas or
    Moodle "download all submissions" archive (``lms.py``), into the course, each submission with nbgrader's
    ``timestamp.txt``.

    ``PATH`` is a folder or an archive (``unpack.py``), possibly with the class inside one more folder. A student
    folder holds a folder named after an assignment of the course (with ``assignment``: that folder, or the
    notebooks themselves); a student's earlier submission of an assignment is replaced. The time recorded is
    ``timestamp``, else Canvas's LATE flag, else the latest time of its files (the archive's entry times).
    ``roster``: a course site's students to ids (``lms.read_roster``). Each student is imported or refused on
    their own (see the module docstring); every folder or entry not imported is named on stderr."""
    if assignment is not None:
        require_assignment(assignment)
    if not path.exists():
        raise SystemExit(f"nothing to import: {path} does not exist")
    wanted = [assignment] if assignment else assignments()
    out = Imported()
    taken: dict[str, list[tuple[str, str | None]]] = {}  # assignment -> (student, site user) imported
    due_date = functools.cache(late.due_date)  # each assignment's, read once per import

    def is_student(folder: Path) -> bool:
        return any((folder / a).is_dir() for a in wanted) or (
            assignment is not None and any(folder.glob("*.ipynb"))
        )

    with tempfile.TemporaryDirectory() as tmp, ExitStack() as held:
        root, damaged = path, {}
        if path.is_file():
            unpacked = unpack(path, Path(tmp) / "unpacked")
            for name, why in unpacked.left_out.items():
                print(f"left out of {path.name}: {shown(name)}: {why}", file=sys.stderr)
            root, damaged = Path(tmp) / "unpacked", unpacked.damaged
            root.mkdir(exist_ok=True)
        # the class may sit in one folder of its own (an archive of the folder rather than of its contents)
        while (
            len(_folders(root)) == 1 and not is_student(_folders(root)[0]) and not any(root.glob("*.ipynb"))
            and not lms.read_layout(root)
        ):  # fmt: skip
            root = _folders(root)[0]
        entries, flags, users = lms.read_layout(root), {}, {}
        if entries:  # a course site's download: rearranged as a class of one assignment
            assignment = _assignment_of(entries, assignment)
            require_assignment(assignment)
            wanted = [assignment]
            known = held.enter_context(site_users.held(course_dir()))
            ids, refused, said = lms.student_ids(entries, lms.read_roster(roster), known, assignment)
            expected = {p.name for p in (source_dir() / assignment).glob("*.ipynb")}
            for i in ids:
                broken = [damaged[f] for f, _ in entries[i].files if f in damaged]
                if broken:
                    refused[i] = f"a file could not be unpacked from the archive: {broken[0]}"
            chosen, ids = ids, {i: s for i, s in ids.items() if i not in refused}
            root = Path(tmp) / "rearranged"
            root.mkdir()
            refused |= lms.rearrange(entries, ids, assignment, expected, root)
            flags = {ids[i]: e.late for i, e in enumerate(entries) if i in ids}
            users = {ids[i]: entries[i] for i in ids if i not in refused}
            for i, why in refused.items():
                label = f"{entries[i].name} ({entries[i].lms} {entries[i].user})"
                out.refused[label] = why
                user = site_users.key(entries[i].lms, entries[i].user, assignment)
                out.refusals.setdefault(assignment, []).append(Refusal(chosen.get(i), user, label, why))
            for line in said:
                print(line, file=sys.stderr)
        students = [d for d in _folders(root) if is_student(d)]
        if not students and not out.refused:
            layout = (
                f"<student>/{assignment}/*.ipynb or <student>/*.ipynb"
                if assignment
                else f"<student>/<assignment>/*.ipynb, <assignment> one of {', '.join(wanted) or 'none'}"
            )
            found = ", ".join(shown(p.name) for p in sorted(root.iterdir())[:8]) or "nothing"
            raise SystemExit(
                f"no student folders in {path}: expected {layout}, or a Canvas or Moodle download (found: {found})"
            )
        skipped = [shown(d.name) for d in _folders(root) if not is_student(d)]
        if skipped:
            what = f"no {assignment} folder or notebook" if assignment else "no assignment folder"
            print(f"skipped, {what} inside: {', '.join(skipped)}", file=sys.stderr)
        for student_dir in students:
            student = student_dir.name
            for a in wanted:
                source = (
                    student_dir / a
                    if (student_dir / a).is_dir()
                    else student_dir
                    if a == assignment
                    else None
                )
                if source is None:
                    continue
                expected = {p.name for p in (source_dir() / a).glob("*.ipynb")}
                user = users.get(student)  # a site user's key in the record of site users, from this download
                key = None if user is None else site_users.key(user.lms, user.user, a)
                try:
                    if student_dir.is_symlink() or source.is_symlink():
                        raise Refused("its folder is a link: send the folder itself")
                    check_submission(source, expected, damaged)
                    when, how = _submission_time(source, flags.get(student), due_date(a), timestamp)
                    for name in _import_one(source, student, a, when):
                        print(f"{shown(student)}/{a}: its own {name} was left out (the course records the time: "
                              f"{how})", file=sys.stderr)  # fmt: skip
                except (Refused, OSError) as err:
                    label, why = (
                        f"{shown(student)}/{a}",
                        str(err) if isinstance(err, Refused) else f"{type(err).__name__}: {err}",
                    )
                    out.refused[label] = why
                    valid = student_id_problem(student) is None
                    out.refusals.setdefault(a, []).append(
                        Refusal(student if valid else None, key, shown(student), why)
                    )
                    continue
                _say_when(student, a, when, due_date(a), how)
                if key is not None:  # a site user: the same student id in every later import
                    known.remember(key, user.name, student, a)
                taken.setdefault(a, []).append((student, key))
                if student not in out.imported:
                    out.imported.append(student)
        for a in sorted({*taken, *out.refusals}):  # for export: a row for each refused student
            try:
                refusals.update(course_dir(), a, out.refusals.get(a, []), taken.get(a, []))
            except ValueError as err:
                print(f"warning: {err}", file=sys.stderr)
        by_case: dict[str, list[str]] = {}
        for student in out.imported:
            by_case.setdefault(student.casefold(), []).append(student)
        for names in by_case.values():
            if len(names) > 1:
                print(
                    f"warning: {' and '.join(names)} differ only in case: two students here, but one folder on a "
                    "case-insensitive file system (macOS, Windows); check they are not the same student",
                    file=sys.stderr,
                )
    for label, why in out.refused.items():
        print(
            f"could not import {label}: {why}; nothing of it imported (an earlier submission stays)",
            file=sys.stderr,
        )
    return out


def _say_when(student: str, assignment: str, when: datetime | None, due: datetime | None, how: str) -> None:
    """A line for each submission that is late (or whose lateness cannot be known), on stderr."""
    hours = late.seconds_late(when, due) / 3600
    if hours > 0:
        print(f"{student}/{assignment}: late by {hours:.1f} h (submitted {when:%Y-%m-%d %H:%M} UTC, {how}; due "
              f"{due:%Y-%m-%d %H:%M} UTC)", file=sys.stderr)  # fmt: skip
    if "1 s after" in how or "no due date" in how:
        print(f"{student}/{assignment}: {how}; write the time the course site shows into "
              f"submitted/{student}/{assignment}/{late.TIMESTAMP}, then grade that student again", file=sys.stderr)  # fmt: skip
