"""Hand-in on a JupyterHub course: nbgrader's exchange, with a local exchange folder.

The instructor releases 01_order to the exchange with the course configuration; a student (their own folder and
HOME, plain nbgrader without the course's configuration, as on a hub) lists, fetches, does the work and submits;
the instructor collects it, imports a classmate's untouched release beside it, grades both, writes their feedback
and exports the grades, with the system's temporary folder (``TMPDIR``) an empty folder of the test's own, which
they must leave empty (issue 35.4, as root: tests/autograder/test_ordinary_users.py runs the same commands as an
ordinary user; each grading worker left an empty ``posref-worker-*`` folder, the local Dask cluster its
``dask-scratch-space``, a grader running as root a lock file per worker process). The browser side of the same (the Assignment List) uses these
commands' server extension; tests/autograder/test_hub.py runs it all on a real JupyterHub with Unix users. As root,
the second test puts into the exchange what other users could (submissions owned by ``nobody`` and ``daemon``,
chowned as root) and collects with the course's owner check (autograder/intake/exchange.py).
"""

from __future__ import annotations

import csv
import getpass
import os
import pwd
import shutil
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest

from autograder.course import CONFIG, REPO

pytestmark = pytest.mark.slow


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{' '.join(args)}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return done.stdout + done.stderr


def _left_in(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_release_fetch_submit_collect_grade_through_a_local_exchange(tmp_path):
    exchange, course, student = tmp_path / "exchange", tmp_path / "course", tmp_path / "student"
    temporary = tmp_path / "tmp"  # the instructor's TMPDIR: left empty by every command (issue 35.4)
    for folder in (exchange, student, temporary):
        folder.mkdir()
    exchange.chmod(0o777)  # shared by the instructor and every student
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    instructor_env = {**os.environ, "PATH": path, "POSREF_COURSE_DIR": str(course), "POSREF_FAST": "1",
                      "POSREF_EXCHANGE_DIR": str(exchange), "POSREF_RELEASE_DIR": str(tmp_path / "release"),
                      "PYTHONPATH": str(REPO), "TMPDIR": str(temporary)}  # fmt: skip
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
    classmate = tmp_path / "class" / "classmate"  # handed in by hand, imported: the untouched release
    classmate.mkdir(parents=True)
    shutil.copy(tmp_path / "release" / "01_order" / "01_order.ipynb", classmate)
    autograder = [sys.executable, "-m", "autograder"]
    _run([*autograder, "import", str(classmate.parent), "--assignment", "01_order"], REPO, instructor_env)
    _run([*autograder, "autograde", "01_order", "--student", me, "--student", "classmate", "--workers", "1"], REPO,
         instructor_env)  # fmt: skip
    _run([*autograder, "feedback", "01_order"], REPO, instructor_env)
    assert (course / "feedback" / "classmate" / "01_order" / "01_order.html").is_file()
    csv_path = tmp_path / "grades.csv"
    _run(
        [sys.executable, "-m", "autograder", "export", "01_order", "--csv", str(csv_path)],
        REPO,
        instructor_env,
    )
    with open(csv_path, newline="") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    row = rows[me]
    assert row["status"] == "graded" and row["score"] == row["max_score"], row  # every autograded point
    # the time nbgrader's exchange wrote (timestamp.txt) reaches the CSV
    assert row["submitted"].endswith(" UTC") and row["late_penalty"] == "", row
    other = rows["classmate"]
    assert other["status"] == "graded" and float(other["score"]) == 0, other  # the untouched release
    assert _left_in(temporary) == []  # the instructor's commands left nothing in the temporary folder


def _inbound_copy(submitted: Path, inbound: Path, name: str, owner: str) -> Path:
    """``submitted`` copied into the exchange's inbound as ``name``, everything owned by the Unix user ``owner``."""
    folder = inbound / name
    shutil.copytree(submitted, folder)
    user = pwd.getpwnam(owner)
    for path in [folder, *folder.rglob("*")]:
        os.chown(path, user.pw_uid, user.pw_gid, follow_symlinks=False)
    return folder


@pytest.mark.skipif(
    os.geteuid() != 0, reason="needs root: submissions of other Unix users are made with chown"
)
def test_collect_takes_each_students_own_latest_submission_only(released_01_order, tmp_path):
    """Into the inbound: a submission of ``nobody`` claiming to be root's, a link named as root's to a folder of
    root's, one of ``daemon``'s holding a file of ``nobody``'s, and ``nobody``'s own two, the older named with a
    time far in the future and the newer with a time that is no time (nbgrader's collect stopped on it). Collected:
    root's own and nobody's newer, each with the kernel's time; every other refused, named with its owner, in the
    course's record of refused imports and the export."""
    exchange, course = tmp_path / "exchange", tmp_path / "course"
    exchange.mkdir(mode=0o777)
    shutil.copytree(released_01_order, course)  # released as the first test releases it
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    env = {**os.environ, "PATH": path, "POSREF_COURSE_DIR": str(course), "POSREF_EXCHANGE_DIR": str(exchange),
           "POSREF_RELEASE_DIR": str(course / "release"), "PYTHONPATH": str(REPO)}  # fmt: skip
    config = f"--JupyterApp.config_file={CONFIG}"
    _run([sys.executable, "-m", "nbgrader", "release_assignment", "01_order", config], REPO, env)
    inbound = exchange / "posref" / "inbound"
    work = tmp_path / "work" / "01_order"
    shutil.copytree(course / "release" / "01_order", work)
    (work / "notes.txt").write_text("mine")
    me = getpass.getuser()
    _inbound_copy(work, inbound, f"{me}+01_order+2026-10-01 10:00:00.000000 UTC+aaaa", me)
    _inbound_copy(work, inbound, f"{me}+01_order+2026-10-01 11:00:00.000000 UTC+bbbb", "nobody")
    (inbound / f"{me}+01_order+2026-10-01 12:00:00.000000 UTC+cccc").symlink_to(
        work.parent, target_is_directory=True
    )
    mixed = _inbound_copy(work, inbound, "daemon+01_order+2026-10-01 10:00:00.000000 UTC+dddd", "daemon")
    os.chown(mixed / "notes.txt", pwd.getpwnam("nobody").pw_uid, -1)
    _inbound_copy(work, inbound, "nobody+01_order+2099-01-01 00:00:00.000000 UTC+eeee", "nobody")
    newer = _inbound_copy(work, inbound, "nobody+01_order+no time at all+ffff", "nobody")
    (newer / "notes.txt").write_text("newer")

    out = _run([sys.executable, "-m", "nbgrader", "collect", "01_order", config], REPO, env)
    submitted = course / "submitted"
    assert sorted(p.name for p in submitted.iterdir()) == sorted([me, "nobody"]), out
    assert (submitted / "nobody" / "01_order" / "notes.txt").read_text() == "newer"
    stamp = (submitted / "nobody" / "01_order" / "timestamp.txt").read_text()
    assert stamp.startswith(str(date.today().year)) and "2099" not in stamp, stamp  # the kernel's time
    assert "handed in as 'root' by the Unix user 'nobody'" in out.replace(me, "root"), out
    assert "could not collect daemon (daemon+01_order" in out and "holds files of other users (nobody)" in out
    assert "is a link in the exchange" in out, out

    csv_path = tmp_path / "grades.csv"
    _run([sys.executable, "-m", "autograder", "export", "01_order", "--csv", str(csv_path)], REPO, env)
    with open(csv_path, newline="") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    forged = rows[f"{me} (handed in by nobody)"]
    assert forged["status"] == "could not import" and "by the Unix user 'nobody'" in forged["reason"], forged
    assert rows["daemon"]["status"] == "could not import", rows["daemon"]
    assert rows[me]["status"] == rows["nobody"]["status"] == "not graded", rows
