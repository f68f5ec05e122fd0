"""What the autograder's tests share: the sandbox marker, an unsandboxed child, a gradebook without alembic."""

from __future__ import annotations

import shutil
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

from autograder.course import REPO
from autograder.sandbox import Sandbox
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


FIND_PIPE = """
import fcntl, os
import posref.grading.child.remote as remote
def pipe_to_grader():
    for fd in range(3, 64):
        try:
            if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY:
                return fd
        except OSError:
            pass
"""


def gradebook_copy(course: Path, empty: Path) -> Gradebook:
    """The course's gradebook, a copy of ``empty`` (the ``empty_gradebook`` fixture) if it has none yet."""
    if not (course / "gradebook.db").exists():
        course.mkdir(parents=True, exist_ok=True)
        shutil.copy(empty, course / "gradebook.db")
    return Gradebook(f"sqlite:///{course / 'gradebook.db'}")
