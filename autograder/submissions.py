"""``python -m autograder import``: a class's submissions, from a folder or an archive, into the course folder.

Also ``fingerprint``: what a submission folder holds, so that a record tells the submission it graded.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

from autograder.course import assignments, course_dir, require_assignment


def _folders(folder: Path) -> list[Path]:
    """Subfolders, without hidden ones and the ``__MACOSX`` folder a Mac adds to every zip it makes."""
    return sorted(p for p in folder.iterdir() if p.is_dir() and p.name[:1] != "." and p.name != "__MACOSX")


def import_submissions(path: Path, assignment: str | None = None) -> list[str]:
    """Copy ``PATH/<student>/<assignment>/*`` (or ``PATH/<student>/*`` with ``--assignment``) into the course.

    ``PATH`` is a folder or an archive, possibly with the class inside one more folder. A student folder holds a
    folder named after an assignment of the course (with ``assignment``: that folder, or the notebooks
    themselves); a student's earlier submission of an assignment is replaced. Returns the students imported."""
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
            try:
                if zipfile.is_zipfile(path):  # zipfile drops absolute paths and ".." and makes no links
                    shutil.unpack_archive(path, tmp, format="zip")
                elif tarfile.is_tarfile(path):  # tar: no absolute paths, links out, devices
                    with tarfile.open(path) as archive:
                        archive.extractall(tmp, filter="data")
                else:
                    raise SystemExit(
                        f"cannot unpack {path}: it is not a zip or tar archive (.zip, .tar, .tar.gz)"
                    )
            except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError) as err:
                raise SystemExit(f"cannot unpack {path}: {err}") from err
            root = Path(tmp)
        # the class may sit in one folder of its own (an archive of the folder rather than of its contents)
        while (
            len(_folders(root)) == 1 and not is_student(_folders(root)[0]) and not any(root.glob("*.ipynb"))
        ):
            root = _folders(root)[0]
        students = [d for d in _folders(root) if is_student(d)]
        if not students:
            layout = (
                f"<student>/{assignment}/*.ipynb or <student>/*.ipynb"
                if assignment
                else f"<student>/<assignment>/*.ipynb, <assignment> one of {', '.join(wanted) or 'none'}"
            )
            found = ", ".join(p.name for p in sorted(root.iterdir())[:8]) or "nothing"
            raise SystemExit(f"no student folders in {path}: expected {layout} (found: {found})")
        skipped = [d.name for d in _folders(root) if not is_student(d)]
        if skipped:
            what = f"no {assignment} folder or notebook" if assignment else "no assignment folder"
            print(f"skipped, {what} inside: {', '.join(skipped)}", file=sys.stderr)
        by_case: dict[str, list[str]] = {}
        for student_dir in students:
            by_case.setdefault(student_dir.name.casefold(), []).append(student_dir.name)
            for a in wanted:
                if (student_dir / a).is_dir():
                    _copy_submission(student_dir / a, course_dir() / "submitted" / student_dir.name / a)
                elif a == assignment:
                    _copy_submission(student_dir, course_dir() / "submitted" / student_dir.name / a)
        for names in by_case.values():
            if len(names) > 1:
                print(
                    f"warning: {' and '.join(names)} differ only in case: two students here, but one folder on a "
                    "case-insensitive file system (macOS, Windows); check they are not the same student",
                    file=sys.stderr,
                )
    return [d.name for d in students]


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
