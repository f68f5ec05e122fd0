"""A run leaves nothing behind (issue 35.4): the instructor's commands, as typed, with the system's temporary folder
(``TMPDIR``) an empty folder of the test's own, leave it empty. Each grading worker left an empty
``posref-worker-*`` folder (31 after an afternoon's grading), the local Dask cluster its ``dask-scratch-space``
with two lock files, and a grader running as root a lock file per worker process."""

from __future__ import annotations

import csv
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from autograder.course import REPO
from autograder.demo.build import write_submissions
from autograder.demo.submissions import SUBMISSIONS
from autograder.grading import worker
from autograder.grading.cluster import LoopbackCluster


def _left_in(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.slow
def test_release_import_autograde_feedback_and_export_leave_the_temporary_folder_empty(tmp_path):
    temporary, course = tmp_path / "tmp", tmp_path / "course"
    temporary.mkdir()
    env = dict(
        os.environ,
        TMPDIR=str(temporary),
        POSREF_COURSE_DIR=str(course),
        POSREF_SOURCE_DIR="autograder/demo/source",
        POSREF_RELEASE_DIR=str(course / "release"),
    )

    def run(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "autograder", *args], cwd=REPO, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, (
            f"autograder {' '.join(args)}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        )
        return done.stdout

    run("release", "positions")
    names = ["correct", "partial"]
    write_submissions(course / "release" / "positions" / "positions.ipynb", tmp_path / "class", names=names)
    run("import", str(tmp_path / "class"), "--assignment", "positions")
    run("autograde", "positions", "--workers", "1")
    run("feedback", "positions")
    run("export", "positions", "--csv", str(tmp_path / "grades.csv"))
    with open(tmp_path / "grades.csv", newline="") as f:
        scores = {row["student"]: (row["status"], row["score"]) for row in csv.DictReader(f)}
    assert scores == {name: ("graded", f"{SUBMISSIONS[name][2]:g}") for name in names}  # it did grade
    assert _left_in(temporary) == []


@pytest.mark.slow
def test_a_loopback_cluster_removes_its_folder_when_it_stops():
    with LoopbackCluster(workers=1) as cluster:
        assert (cluster.folder / "scheduler.json").exists()
    assert not cluster.folder.exists()


def test_a_grading_process_holds_its_uid_by_a_name_in_the_kernel_not_a_file(tmp_path, monkeypatch):
    """Root's worker processes each take a uid of their own; the lock files that held them stayed in the temporary
    folder. An abstract socket's name is held as long as its socket is open, and is nothing on disk."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(worker, "_UID_HELD", None)
    first = worker._free_uid()
    held = worker._UID_HELD  # this process's: a second grading process must get another uid
    second = worker._free_uid()
    assert worker.UID_BASE < first != second < worker.UID_BASE + worker.MAX_UIDS
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as other, pytest.raises(OSError):
        other.bind(f"\0posref-grader-uid-{first}")  # taken while its holder lives
    held.close()
    worker._UID_HELD.close()
    assert _left_in(tmp_path) == []
