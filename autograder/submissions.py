"""``python -m autograder import``: a class's submissions, from a folder, an archive or a course site's download,
into the course folder, each with nbgrader's ``timestamp.txt`` (late work: ``late.py``).

Also ``fingerprint``: what a submission folder holds, so that a record tells the submission it graded.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import struct
import sys
import tarfile
import tempfile
import time
import zipfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

from autograder import late, lms
from autograder.course import assignments, course_dir, require_assignment, source_dir


def _folders(folder: Path) -> list[Path]:
    """Subfolders, without hidden ones and the ``__MACOSX`` folder a Mac adds to every zip it makes."""
    return sorted(p for p in folder.iterdir() if p.is_dir() and p.name[:1] != "." and p.name != "__MACOSX")


def _zip_time(info: zipfile.ZipInfo) -> float:
    """An entry's modification time (seconds since the epoch): the extended-timestamp field's (UTC, written by
    Info-ZIP, macOS, 7-Zip) where it has one, else the DOS time, which is the local time of whoever made the
    zip, read as this machine's local time."""
    extra = info.extra
    while len(extra) >= 4:
        tag, size = struct.unpack("<HH", extra[:4])
        if tag == 0x5455 and size >= 5 and extra[4] & 1:
            return float(struct.unpack("<I", extra[5:9])[0])
        extra = extra[4 + size :]
    return time.mktime((*info.date_time, 0, 0, -1))


def _unpack(path: Path, into: str) -> None:
    """A zip or tar archive into ``into``, each file with its entry's time (Python's zipfile sets none)."""
    try:
        if zipfile.is_zipfile(path):  # zipfile drops absolute paths and ".." and makes no links
            with zipfile.ZipFile(path) as archive:
                for info in archive.infolist():
                    target = Path(archive.extract(info, into))
                    if not info.is_dir():
                        os.utime(target, (_zip_time(info),) * 2)
        elif tarfile.is_tarfile(path):  # tar: no absolute paths, links out, devices; times kept
            with tarfile.open(path) as archive:
                archive.extractall(into, filter="data")
        else:
            raise SystemExit(f"cannot unpack {path}: it is not a zip or tar archive (.zip, .tar, .tar.gz)")
    except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError, struct.error) as err:
        raise SystemExit(f"cannot unpack {path}: {err}") from err


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


def _submission_time(folder: Path, late_flag: bool | None, assignment: str, given: datetime | None):
    """When a submission came in and how that is known: ``given`` (--timestamp), its own ``timestamp.txt``
    (nbgrader's exchange), Canvas's LATE flag, or the latest time of its files."""
    if given is not None:
        return given, "--timestamp"
    existing = late.read_timestamp(folder)
    if existing is not None:
        return existing, "its timestamp.txt"
    if late_flag is not None:  # Canvas: entry times are the download's
        due = late.due_date(assignment)
        if not late_flag or due is None:
            return (
                None,
                "Canvas: on time" if not late_flag else "Canvas: LATE, but the course has no due date",
            )
        return due + timedelta(seconds=1), "Canvas: LATE (time not in the download: 1 s after the due date)"
    times = [p.stat().st_mtime for p in folder.rglob("*") if p.is_file()]
    return (datetime.fromtimestamp(max(times), timezone.utc), "file times") if times else (None, "no files")


def import_submissions(
    path: Path,
    assignment: str | None = None,
    *,
    timestamp: datetime | None = None,
    roster: Path | None = None,
) -> list[str]:
    """Copy ``PATH/<student>/<assignment>/*`` (or ``PATH/<student>/*`` with ``--assignment``), or a Canvas or
    Moodle "download all submissions" archive (``lms.py``), into the course, each submission with nbgrader's
    ``timestamp.txt``.

    ``PATH`` is a folder or an archive, possibly with the class inside one more folder. A student folder holds a
    folder named after an assignment of the course (with ``assignment``: that folder, or the notebooks
    themselves); a student's earlier submission of an assignment is replaced. The time recorded is
    ``timestamp``, else the submission's own ``timestamp.txt``, else Canvas's LATE flag, else the latest time of
    its files (the archive's entry times). ``roster``: a course site's students to ids (``lms.read_roster``).
    Returns the students imported."""
    if assignment is not None:
        require_assignment(assignment)
    if not path.exists():
        raise SystemExit(f"nothing to import: {path} does not exist")
    wanted = [assignment] if assignment else assignments()

    def is_student(folder: Path) -> bool:
        return any((folder / a).is_dir() for a in wanted) or (
            assignment is not None and any(folder.glob("*.ipynb"))
        )

    with tempfile.TemporaryDirectory() as tmp:
        root = path
        if path.is_file():
            _unpack(path, tmp)
            root = Path(tmp)
        # the class may sit in one folder of its own (an archive of the folder rather than of its contents)
        while (
            len(_folders(root)) == 1 and not is_student(_folders(root)[0]) and not any(root.glob("*.ipynb"))
            and not lms.read_layout(root)
        ):  # fmt: skip
            root = _folders(root)[0]
        entries, flags = lms.read_layout(root), {}
        if entries:  # a course site's download: rearranged as a class of one assignment
            assignment = _assignment_of(entries, assignment)
            require_assignment(assignment)
            wanted = [assignment]
            ids, made = lms.student_ids(entries, lms.read_roster(roster))
            expected = {p.name for p in (source_dir() / assignment).glob("*.ipynb")}
            root = Path(tmp) / "rearranged"
            lms.rearrange(entries, ids, assignment, expected, root)
            flags = {ids[i]: e.late for i, e in enumerate(entries)}
            for line in made:
                print(f"{entries[0].lms}: no roster entry for {line} (the name as id)", file=sys.stderr)
        students = [d for d in _folders(root) if is_student(d)]
        if not students:
            layout = (
                f"<student>/{assignment}/*.ipynb or <student>/*.ipynb"
                if assignment
                else f"<student>/<assignment>/*.ipynb, <assignment> one of {', '.join(wanted) or 'none'}"
            )
            found = ", ".join(p.name for p in sorted(root.iterdir())[:8]) or "nothing"
            raise SystemExit(
                f"no student folders in {path}: expected {layout}, or a Canvas or Moodle download (found: {found})"
            )
        skipped = [d.name for d in _folders(root) if not is_student(d)]
        if skipped:
            what = f"no {assignment} folder or notebook" if assignment else "no assignment folder"
            print(f"skipped, {what} inside: {', '.join(skipped)}", file=sys.stderr)
        by_case: dict[str, list[str]] = {}
        for student_dir in students:
            by_case.setdefault(student_dir.name.casefold(), []).append(student_dir.name)
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
                target = course_dir() / "submitted" / student_dir.name / a
                when, how = _submission_time(source, flags.get(student_dir.name), a, timestamp)
                _copy_submission(source, target)
                if when is not None:
                    late.write_timestamp(target, when)
                _say_when(student_dir.name, a, when, how)
        for names in by_case.values():
            if len(names) > 1:
                print(
                    f"warning: {' and '.join(names)} differ only in case: two students here, but one folder on a "
                    "case-insensitive file system (macOS, Windows); check they are not the same student",
                    file=sys.stderr,
                )
    return [d.name for d in students]


def _say_when(student: str, assignment: str, when: datetime | None, how: str) -> None:
    """A line for each submission that is late (or whose lateness cannot be known), on stderr."""
    due = late.due_date(assignment)
    hours = late.seconds_late(when, due) / 3600
    if hours > 0:
        print(f"{student}/{assignment}: late by {hours:.1f} h (submitted {when:%Y-%m-%d %H:%M} UTC, {how}; due "
              f"{due:%Y-%m-%d %H:%M} UTC)", file=sys.stderr)  # fmt: skip
    if "1 s after" in how or "no due date" in how:
        print(f"{student}/{assignment}: {how}; write the time the course site shows into "
              f"submitted/{student}/{assignment}/{late.TIMESTAMP}, then grade that student again", file=sys.stderr)  # fmt: skip


def _copy_submission(source: Path, target: Path) -> None:
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, symlinks=True)


def fingerprint(folder: Path) -> str:
    """What a submission folder holds (its files' names and contents): export tells from it a submission
    imported again after it was graded."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()):
        digest.update(f"{path.relative_to(folder)}\0{path.stat().st_size}\0".encode())
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


MAX_SUBMISSION = 256 * 2**20  # bytes of one student's submission of one assignment sent to a grading worker


def read_submission(folder: Path, limit: int = MAX_SUBMISSION) -> dict[str, bytes]:
    """The files of a submission folder (path relative to it -> bytes), what a grading worker is sent: regular
    files only (a link would point outside the worker's copy), at most ``limit`` bytes in all."""
    files, total = {}, 0
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()):
        total += path.stat().st_size
        if total > limit:
            raise ValueError(
                f"the submission holds more than {limit / 2**20:g} MiB, more than a grading worker is sent: "
                "remove what the notebooks do not need from it"
            )
        files[path.relative_to(folder).as_posix()] = path.read_bytes()
    return files
