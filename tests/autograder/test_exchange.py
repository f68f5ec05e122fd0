"""Hand-in on a JupyterHub course: nbgrader's exchange, with a local exchange folder.

The instructor releases 01_order to the exchange with the course configuration; a student (their own folder and
HOME, plain nbgrader without the course's configuration, as on a hub) lists, fetches, does the work and submits;
the instructor collects and autogrades it. The browser side of the same (the Assignment List) uses these
commands' server extension.
"""

from __future__ import annotations

import csv
import getpass
import os
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.course import CONFIG, REPO

pytestmark = pytest.mark.slow


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{' '.join(args)}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return done.stdout + done.stderr


def test_release_fetch_submit_collect_grade_through_a_local_exchange(tmp_path):
    exchange, course, student = tmp_path / "exchange", tmp_path / "course", tmp_path / "student"
    for folder in (exchange, student):
        folder.mkdir()
    exchange.chmod(0o777)  # shared by the instructor and every student
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    instructor_env = {**os.environ, "PATH": path, "POSREF_COURSE_DIR": str(course), "POSREF_FAST": "1",
                      "POSREF_EXCHANGE_DIR": str(exchange), "POSREF_RELEASE_DIR": str(tmp_path / "release"),
                      "PYTHONPATH": str(REPO)}  # fmt: skip
    student_env = {**os.environ, "PATH": path, "HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO)}
    nbgrader = [sys.executable, "-m", "nbgrader"]
    on_hub = [f"--Exchange.root={exchange}", "--CourseDirectory.course_id=posref"]  # what the hub configures

    _run([sys.executable, "-m", "autograder", "release", "01_order"], REPO, instructor_env)
    _run(
        [*nbgrader, "release_assignment", "01_order", f"--JupyterApp.config_file={CONFIG}"],
        REPO,
        instructor_env,
    )

    assert "01_order" in _run([*nbgrader, "list", *on_hub], student, student_env)
    _run([*nbgrader, "fetch_assignment", "01_order", *on_hub], student, student_env)
    fetched = student / "01_order" / "01_order.ipynb"
    assert "not done yet" in fetched.read_text()  # the released stubs
    fetched.write_bytes((REPO / "solutions" / "01_order" / "01_order.ipynb").read_bytes())  # the work, done
    _run([*nbgrader, "submit", "01_order", *on_hub], student, student_env)

    _run([*nbgrader, "collect", "01_order", f"--JupyterApp.config_file={CONFIG}"], REPO, instructor_env)
    me = getpass.getuser()
    assert (course / "submitted" / me / "01_order" / "01_order.ipynb").is_file()
    _run([sys.executable, "-m", "autograder", "autograde", "01_order", "--student", me, "--workers", "1"], REPO,
         instructor_env)  # fmt: skip
    csv_path = tmp_path / "grades.csv"
    _run(
        [sys.executable, "-m", "autograder", "export", "01_order", "--csv", str(csv_path)],
        REPO,
        instructor_env,
    )
    with open(csv_path, newline="") as f:
        [row] = [r for r in csv.DictReader(f) if r["student"] == me]
    assert row["status"] == "graded" and row["score"] == row["max_score"], row  # every autograded point
    # the time nbgrader's exchange wrote (timestamp.txt) reaches the CSV
    assert row["submitted"].endswith(" UTC") and row["late_penalty"] == "", row
