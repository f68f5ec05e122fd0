"""One student's submission of one assignment (``submitted/<student>/<assignment>/``): what it may hold, and its
facts, read once for grading.

``check_submission`` refuses a folder that is not a submission (links, names that are not UTF-8, too deep, too
many files, too large): ``import`` before it copies one in, grading before it sends one out. ``Submission.read``
reads the facts that grading takes, once, from one reading of the folder: its files (what a grading worker is
sent), their fingerprint (what the record keeps, and what ``export`` compares with the folder it finds), the
hand-in time (nbgrader's ``timestamp.txt``) and the student's due date it is counted against (the assignment's,
and the student's extension: ``extensions.py``). The steps after it (the
worker, the stand-in page, the late penalty, the record) take that value and never read the folder again.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from types import MappingProxyType

from autograder.course import course_dir, submission_dir
from autograder.intake import extensions, late
from autograder.intake.unpack import MAX_DEPTH

# bytes of one student's submission of one assignment (import, and what a grading worker is sent)
MAX_SUBMISSION = 32 * 2**20
MAX_FILES = 1000  # files and folders in one submission
METADATA = (late.TIMESTAMP,)  # what the course writes into a submission folder: never taken from a student


class Refused(Exception):
    """One student's submission is not imported or not graded: the message says why, in words."""


def check_submission(source: Path, expected: set[str], damaged: dict[Path, str] | None = None) -> None:
    """Refused unless ``source`` holds only folders and regular files, named in UTF-8, at most ``MAX_DEPTH``
    deep, ``MAX_FILES`` of them, ``MAX_SUBMISSION`` bytes in all, none damaged in the archive, and each notebook
    of the assignment (``expected``) it holds is a file."""
    count, total = 0, 0
    for folder, subfolders, files in os.walk(source):
        depth = len(Path(folder).relative_to(source).parts)
        for name in subfolders + files:
            path = Path(folder) / name
            where = f"{path.relative_to(source)}".encode("utf-8", "backslashreplace").decode()
            try:
                name.encode("utf-8")
            except UnicodeEncodeError:
                raise Refused(f"a file name that is not UTF-8 ({where!r}): rename it") from None
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                raise Refused(f"{where!r} is a link: send the file itself")
            if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                raise Refused(f"{where!r} is not a file or folder")
            if damaged and path in damaged:
                raise Refused(f"{where!r} could not be unpacked from the archive: {damaged[path]}")
            count, total = count + 1, total + (path.lstat().st_size if stat.S_ISREG(mode) else 0)
            if depth >= MAX_DEPTH or count > MAX_FILES:
                raise Refused(f"it holds more than {MAX_FILES} files or folders more than {MAX_DEPTH} deep")
            if total > MAX_SUBMISSION:
                raise Refused(
                    f"it holds more than {MAX_SUBMISSION / 2**20:g} MiB (a submission may hold that much): ask for "
                    "the notebooks without large outputs (Edit > Clear Outputs of All Cells, then save)"
                )
    for name in expected:
        if (source / name).exists() and not (source / name).is_file():
            raise Refused(
                f"{name!r} is not a notebook file but {'a folder' if (source / name).is_dir() else 'something else'}"
            )


def _files(folder: Path) -> list[Path]:
    """The regular files under ``folder`` (links neither followed nor listed), sorted by their names' bytes."""
    return sorted(
        (p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()), key=lambda p: os.fsencode(p)
    )


def _digest(files: Iterable[tuple[bytes, int, Iterable[bytes]]]) -> str:
    """sha256 over each file's (name as bytes, size, contents), in the order given (by the names' bytes)."""
    digest = hashlib.sha256()
    for name, size, blocks in files:
        digest.update(name + f"\0{size}\0".encode())
        for block in blocks:
            digest.update(block)
    return digest.hexdigest()


def _blocks(path: Path) -> Iterable[bytes]:
    with open(path, "rb") as f:
        yield from iter(lambda: f.read(1 << 20), b"")


def fingerprint(folder: Path) -> str:
    """What a submission folder holds now (its files' names, as bytes, and contents), read a block at a time:
    export tells from it a submission imported again after it was graded. OSError for a file that cannot be
    read. The same digest as ``Submission.fingerprint`` for the same files."""
    return _digest(
        (os.fsencode(path.relative_to(folder)), path.stat().st_size, _blocks(path)) for path in _files(folder)
    )


@dataclass(frozen=True)
class Submission:
    """One student's submission of one assignment as grading takes it, read once (``Submission.read``).

    ``files``: path relative to the submission folder -> bytes, what a grading worker is sent (and the notebook
    that a stand-in page shows); ``fingerprint``: their digest (``fingerprint``), kept in the record;
    ``submitted``: the hand-in time (UTC), None where the folder has no ``timestamp.txt``; ``extension``: the
    student's extension of the assignment (None: none); ``due``: the student's due date (UTC), the assignment's with
    that extension, None where the assignment has none; ``seconds_late``: from the one to the other (0: on time, or
    either not known)."""

    student: str
    assignment: str
    files: Mapping[str, bytes]
    fingerprint: str
    submitted: datetime | None
    extension: timedelta | None
    due: datetime | None
    seconds_late: float

    @classmethod
    def read(cls, student: str, assignment: str, notebooks: set[str], due: datetime | None) -> Submission:
        """``submitted/<student>/<assignment>/`` read once, checked as ``check_submission`` checks it
        (``notebooks``: the assignment's notebook names; ``due``: the assignment's due date, the student's
        extension added here): Refused, or ValueError for a ``timestamp.txt`` that is
        no time or files beyond ``MAX_SUBMISSION`` bytes, saying what to do; OSError where it cannot be read."""
        folder = submission_dir(student, assignment)
        check_submission(folder, notebooks)  # a regular file, if any, so in ``files``
        files, total = {}, 0
        for path in _files(folder):  # regular files only: a link would point outside the worker's copy
            data = path.read_bytes()
            total += len(data)
            if total > MAX_SUBMISSION:
                raise ValueError(
                    f"the submission holds more than {MAX_SUBMISSION / 2**20:g} MiB, more than a grading worker "
                    "is sent: remove what the notebooks do not need from it"
                )
            files[path.relative_to(folder).as_posix()] = data
        stamp = files.get(late.TIMESTAMP)
        submitted = None if stamp is None else late.timestamp_in(folder, stamp)
        digest = _digest((name.encode(), len(data), [data]) for name, data in files.items())
        extended = extensions.extension(course_dir(), assignment, student)
        theirs = extensions.due_for(due, extended)
        seconds = late.seconds_late(submitted, theirs)
        return cls(student, assignment, MappingProxyType(files), digest, submitted, extended, theirs, seconds)
