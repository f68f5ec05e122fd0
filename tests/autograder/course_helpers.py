"""What the autograder's tests share: the sandbox marker, an unsandboxed child, a Dask cluster in the test's process,
a gradebook without alembic, and a class of the demo assignment handing in submissions of a test's own."""

from __future__ import annotations

import csv
import io
import re
import shutil
import sys
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import demo_environment
from nbgrader.api import Gradebook

from autograder.course import REPO
from autograder.sandbox.sandbox import Sandbox
from posref.grading.child.remote import Child

needs_bwrap = pytest.mark.skipif(
    Sandbox().problem is not None, reason=f"sandbox unavailable: {Sandbox().problem}"
)

# A child without the sandbox (quick to start): what these tests need is the protocol, not the isolation.
PLAIN_PYTHON = [sys.executable, "-I"]


@contextmanager
def plain_child(code: str, **options):
    """A child without the sandbox, running ``code`` as its one answer cell; closed afterwards."""
    child = Child(PLAIN_PYTHON, [(0, code)], python_path=[str(REPO)], **options)
    try:
        yield child
    finally:
        child.close()


@contextmanager
def in_process_cluster(scratch: Path):
    """A Dask scheduler and one worker thread in this process (what a test injects here reaches the worker's
    task), its scratch in ``scratch`` (not ``$TMPDIR/dask-scratch-space``, which outlives the test): the scheduler's
    address."""
    import dask
    from distributed import LocalCluster

    with (
        dask.config.set({"temporary-directory": str(scratch)}),
        LocalCluster(n_workers=1, processes=False, threads_per_worker=1, dashboard_address=None) as cluster,
    ):
        yield cluster.scheduler_address


FIND_PIPE = """
import fcntl, os
import posref.grading.child.framing as framing
import posref.grading.child.serve as child_end
def pipe_to_grader():
    for fd in range(3, 64):
        try:
            if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY:
                return fd
        except OSError:
            pass
"""


def run_command(*args: str) -> SimpleNamespace:
    """``python -m autograder ARGS`` as the instructor types it (``cli.main``, in this process: a Python start and
    nbgrader's imports cost seconds each), with its exit status, stdout and stderr as the terminal shows them."""
    from autograder import cli

    out, err, status = io.StringIO(), io.StringIO(), 0
    with redirect_stdout(out), redirect_stderr(err):
        try:
            cli.main(list(args))
        except SystemExit as exit:  # Python prints a message given to SystemExit and exits with 1
            status = exit.code if isinstance(exit.code, int) or exit.code is None else 1
            if isinstance(exit.code, str):
                print(exit.code, file=sys.stderr)
    return SimpleNamespace(returncode=status or 0, stdout=out.getvalue(), stderr=err.getvalue())


def hand_in(released: Path, course: Path, monkeypatch, answers: dict[str, dict[str, str]]) -> Path:
    """A copy of the released demo course at ``course``, where each student of ``answers`` (id -> the code of
    their answer cells by grade id) has handed in the demo notebook, imported by the course's own import; the
    course's environment is set for the test."""
    from autograder.demo.build import write_submissions
    from autograder.intake.submissions import import_submissions

    shutil.copytree(released, course)
    demo_environment(monkeypatch, course)
    examples = {student: (cells, {}, None, "") for student, cells in answers.items()}
    handed = course.parent / f"{course.name}-handed-in"
    write_submissions(course / "release" / "positions" / "positions.ipynb", handed, examples=examples)
    import_submissions(handed, "positions")
    return course


def gradebook_copy(course: Path, empty: Path) -> Gradebook:
    """The course's gradebook, a copy of ``empty`` (the ``empty_gradebook`` fixture) if it has none yet."""
    if not (course / "gradebook.db").exists():
        course.mkdir(parents=True, exist_ok=True)
        shutil.copy(empty, course / "gradebook.db")
    return Gradebook(f"sqlite:///{course / 'gradebook.db'}")


FORMULA_START = re.compile(r"""[\s"]*[=+\-@\uff1d\uff0b\uff0d\uff20]""")


def assert_safe_csv(path: Path) -> list[list[str]]:
    """The CSV at ``path`` opens in Python's csv with its default field limit, every field fits a spreadsheet cell
    and is quoted, and no cell that a separator of any common locale could start, quotes read or not, begins like
    a formula. Returns its rows."""
    with open(path, newline="") as f:
        text = f.read()
    rows = list(csv.reader(io.StringIO(text)))
    assert rows and all(len(row) == len(rows[0]) for row in rows)
    assert max(len(field) for row in rows for field in row) <= 32_767
    again = io.StringIO()
    csv.writer(again, quoting=csv.QUOTE_ALL).writerows(rows)
    assert again.getvalue() == text  # every field quoted
    for separator in [",", ";", "\t", "|"]:
        for row in csv.reader(io.StringIO(text), delimiter=separator):
            assert not [cell for cell in row if FORMULA_START.match(cell)], separator
        for line in re.split("[\r\n]", text):  # a reader that ignores quotes
            assert not [cell for cell in line.split(separator) if FORMULA_START.match(cell)], separator
    return rows


def grade_with_answers(tmp_path: Path, notebook: str, answers: dict[str, str], *, student: str = "alice"):
    """The score of record (``grade_notebook``) of ``solutions/<notebook>``'s solution with the answer cells named
    in ``answers`` (grade id -> source) replaced, as a submission of ``student``."""
    import nbformat

    from autograder.grading.record import grade_notebook

    source = next((REPO / "solutions").glob(f"{notebook}*/*.ipynb"))
    nb = nbformat.read(source, as_version=4)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell.source = answers.pop(grade_id)
    assert not answers, f"no answer cells {sorted(answers)} in {source.name}"
    submitted = tmp_path / student / source.name
    submitted.parent.mkdir(parents=True)
    nbformat.write(nb, submitted)
    return grade_notebook(source, submitted, sandbox=Sandbox(), scratch_base=tmp_path / f"scratch-{student}")


def full_marks(
    source: Path = REPO / "autograder" / "demo" / "source" / "positions" / "positions.ipynb",
) -> dict:
    """A grading worker's reply (``worker.score_student``) in which every test cell of ``source`` passed: what
    ``grade.record_student`` takes, without running a notebook."""
    import nbformat

    from autograder.grading.record import CellResult, Record

    cells = [
        CellResult(c.metadata.nbgrader["grade_id"], float(c.metadata.nbgrader["points"]), 0.0)
        for c in nbformat.read(source, as_version=4).cells
        if c.metadata.get("nbgrader", {}).get("grade") and not c.metadata.nbgrader.get("solution")
    ]
    for cell in cells:
        cell.score, cell.message = cell.points, "passed"
    record = Record(source.name, "graded", cells=cells, sandbox="bubblewrap").to_json()
    return {"notebooks": [record], "seconds": 1.0, "worker": "here"}
