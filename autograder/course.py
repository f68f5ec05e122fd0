"""Where the course lives and how nbgrader is called: every path and setting the autograder's steps share.

Everything is read when called, never at import: ``POSREF_COURSE_DIR`` (the course folder, default
``~/posref-course``: submissions, gradebook, feedback, records, CSV), ``POSREF_SOURCE_DIR`` (the source
directory, default ``solutions``) and ``POSREF_RELEASE_DIR`` (read by ``nbgrader_config.py``) may change
between calls (the demo and the benchmark point them at their own course); ``POSREF_GROUPSHARED=1`` shares the
course with its other graders, a Unix group (``groupshared``). Importing this module changes nothing in the
process environment.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import unicodedata
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CONFIG = REPO / "autograder" / "nbgrader_config.py"
# seconds for grading one notebook of one student, answer cells and checks together (record.grade_notebook)
NOTEBOOK_TIMEOUT = 600.0


def course_dir() -> Path:
    """The course folder (``$POSREF_COURSE_DIR``, default ``~/posref-course``), created on first use
    (``open_course_folder``)."""
    path = Path(os.environ.get("POSREF_COURSE_DIR", Path.home() / "posref-course")).expanduser().resolve()
    open_course_folder(path)
    return path


def groupshared() -> bool:
    """Whether the course is shared with its other graders (``POSREF_GROUPSHARED=1``): nbgrader's
    ``CourseDirectory.groupshared``, which ``nbgrader_config.py`` sets from the same variable."""
    return os.environ.get("POSREF_GROUPSHARED") == "1"


def open_course_folder(path: Path) -> None:
    """The course folder ``path`` made if it is missing, and this process's files in it given the modes nbgrader's
    permissions settings intend. By default the folder is made 0750 (the owner's group may read, nobody else: it
    holds every student's work and grades). With ``groupshared()``, as nbgrader's ``groupshared``: the folder is
    2770 (the group may write; the set-group-ID bit gives every file and folder made inside the folder's group)
    and this process's umask lets the group write what it makes (nbgrader itself writes its notebooks 664), so
    that another grader of the group can grade, write feedback and export after this one."""
    shared = groupshared()
    if shared:
        mask = os.umask(0)
        os.umask(mask & ~0o070)
    if not path.is_dir():
        path.mkdir(parents=True, exist_ok=True)
        os.chmod(path, 0o2770 if shared else 0o750)
    elif shared:
        share_with_group(path, 0o2770)


def share_with_group(path: Path, bits: int) -> None:
    """``path`` given the mode bits ``bits`` too, where it lacks them and is this user's own (another grader's
    file is theirs to open up)."""
    info = path.stat()
    if info.st_mode & bits != bits and info.st_uid == os.geteuid():
        os.chmod(path, stat.S_IMODE(info.st_mode) | bits)


def take_modes(root: Path) -> None:
    """``root`` and everything in it given the modes of what this process makes in the course (0666 for a file,
    0777 for a folder, less the umask; a folder set-group-ID in a course ``groupshared``), in place of the modes it
    was copied with: a student's files decide nothing of who may read or change them in the course."""
    mask = os.umask(0)
    os.umask(mask)
    folder_mode = (0o777 & ~mask) | (stat.S_ISGID if groupshared() else 0)
    os.chmod(root, folder_mode)
    for folder, folders, files in os.walk(root):
        for name, mode in [*((n, folder_mode) for n in folders), *((n, 0o666 & ~mask) for n in files)]:
            path = os.path.join(folder, name)
            if not os.path.islink(path):  # a link's mode is no one's (import refuses links anyway)
                os.chmod(path, mode)


def replace_file(path: Path, data: bytes) -> None:
    """``path`` holds ``data``, written beside it and renamed over it, so that a reader never sees half a file.
    The file keeps the mode it had (nbgrader makes an autograded notebook read-only, 0444: rewriting it in
    place failed for every user but root); a new file gets the umask's. Needs write access to the folder only."""
    new = path.with_name(f".{path.name}.{os.getpid()}.new")
    try:
        fd = os.open(new, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        if path.exists():
            os.chmod(new, stat.S_IMODE(path.stat().st_mode))
        os.replace(new, path)
    finally:
        new.unlink(missing_ok=True)


# A student id is a folder name under submitted/, autograded/ and feedback/, a gradebook key, a CSV field and a word
# on nbgrader's command line (where + and * are refused and the id is a glob): letters and digits of any script,
# then also . _ - @, in Unicode's NFKC form (no full-width "／", no look-alike of another id by composition),
# nothing invisible (no right-to-left override, no zero-width space), at most 64 characters.
STUDENT_ID = re.compile(r"[^\W_][\w.@-]{0,63}")


def student_id_problem(student: str) -> str | None:
    """None for a valid student id, else what is wrong with it (for a message)."""
    if not isinstance(student, str) or not STUDENT_ID.fullmatch(student):
        return (
            f"{student!r} is not a student id: an id is 1-64 letters or digits, then also . _ - @ (no spaces, "
            "slashes or other signs, no leading . or -)"
        )
    if unicodedata.normalize("NFKC", student) != student:
        return f"{student!r} is not a student id: it is not in Unicode's NFKC form (write it as {unicodedata.normalize('NFKC', student)!r})"
    return None


def printable(text: str) -> str:
    """``text`` as a terminal may show it: every character that is not printable (an escape sequence, a byte that
    is not UTF-8, a right-to-left override) as ``?``."""
    return "".join(c if c.isprintable() else "?" for c in text)


def submission_dir(student: str, assignment: str) -> Path:
    """``submitted/<student>/<assignment>`` in the course, for a valid id only (ValueError otherwise); it never
    leaves the course's ``submitted/`` folder."""
    problem = student_id_problem(student)
    if problem is not None:
        raise ValueError(problem)
    submitted = course_dir() / "submitted"
    folder = submitted / student / assignment
    if (
        folder.parent.is_symlink()
        or folder.is_symlink()
        or submitted.resolve() not in folder.resolve().parents
    ):
        raise ValueError(f"submitted/{student}/{assignment} leads outside the course's submitted/ folder")
    return folder


def report_path(assignment: str, kind: str, suffix: str) -> Path:
    """``<course>/reports/<assignment>-<kind>.<suffix>``: what ``stats`` and ``similar`` write (``kind``), and where
    the instructor's lab finds their pages; the folder made on first use."""
    folder = course_dir() / "reports"
    folder.mkdir(exist_ok=True)
    return folder / f"{assignment}-{kind}.{suffix}"


def source_dir() -> Path:
    """nbgrader's source directory: ``solutions/``, or ``$POSREF_SOURCE_DIR`` relative to the repository."""
    return REPO / os.environ.get("POSREF_SOURCE_DIR", "solutions")


def gradebook_url() -> str:
    """The SQLite gradebook of the course; several grading processes wait up to 30 s for its lock."""
    return f"sqlite:///{course_dir() / 'gradebook.db'}?timeout=30"


def tool_path() -> str:
    """``PATH`` with this Python environment's scripts first: nbgrader runs ``alembic`` from ``PATH`` when it
    creates a gradebook, and the environment need not be activated."""
    return os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])


@contextmanager
def tools_on_path():
    """``PATH`` is ``tool_path()`` inside the block (for nbgrader's in-process API), as it was after it."""
    saved = os.environ.get("PATH")
    os.environ["PATH"] = tool_path()
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("PATH", None)
        else:
            os.environ["PATH"] = saved


def has_gradebook() -> bool:
    """Whether the course has a gradebook yet: where it has none, nothing can be read from it, and asking
    ``gradebook()`` would make one (nbgrader runs alembic: seconds)."""
    return (course_dir() / "gradebook.db").exists()


@contextmanager
def gradebook():
    """nbgrader's ``Gradebook`` of the course, created if it does not exist yet."""
    from nbgrader.api import Gradebook

    with tools_on_path():
        book = Gradebook(gradebook_url())
    if groupshared():  # SQLite makes the file 0644 whatever the umask: the group's graders write it too
        share_with_group(course_dir() / "gradebook.db", 0o060)
    with book:
        yield book


def nbgrader(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    """``nbgrader ARGS`` with the course configuration, from the repository root; a failure ends the command
    with nbgrader's own output unless ``check=False``."""
    command = [sys.executable, "-m", "nbgrader", *args, f"--JupyterApp.config_file={CONFIG}"]
    env = dict(os.environ, PATH=tool_path())
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, env=env)
    if check and result.returncode:
        raise SystemExit(f"nbgrader {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result


def config():
    """The course's nbgrader configuration (``nbgrader_config.py``), read now."""
    from traitlets.config.loader import PyFileConfigLoader

    return PyFileConfigLoader(str(CONFIG)).load_config()


def assignments() -> list[str]:
    """The assignments of the course: folders of the source directory (``solutions/``) that hold a notebook."""
    return sorted({p.parent.name for p in source_dir().glob("*/*.ipynb")})


def require_assignment(assignment: str) -> None:
    """A clear stop for a name that is not an assignment of the source directory."""
    if not any((source_dir() / assignment).glob("*.ipynb")):
        known = ", ".join(assignments()) or "none"
        raise SystemExit(f"no assignment {assignment!r} in {source_dir()} (the assignments: {known})")


def released_assignments() -> set[str]:
    """The assignments released in this course: in the gradebook with their notebooks and test cells, which
    ``release`` puts there (none without a gradebook)."""
    if not has_gradebook():
        return set()
    with gradebook() as gb:
        return {a.name for a in gb.assignments if a.notebooks}


def require_released(assignment: str) -> None:
    """Grading needs the assignment's notebooks and test cells in the gradebook, which ``release`` puts there."""
    require_assignment(assignment)
    if assignment not in released_assignments():
        raise SystemExit(
            f"{assignment} is not released in the course at {course_dir()}: "
            f"run `python -m autograder release {assignment}` first"
        )


def release_dir() -> Path:
    """nbgrader's release directory: ``notebooks/``, or ``$POSREF_RELEASE_DIR`` relative to the repository."""
    return REPO / os.environ.get("POSREF_RELEASE_DIR", "notebooks")
