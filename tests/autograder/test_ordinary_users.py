"""The instructor's commands as ordinary users (issue 34): instructors are not root, and on a JupyterHub every
grader is a user of one machine.

When the suite runs as root (CI), the module creates two users with ``useradd`` (and a group they share), removes
them afterwards, and runs the README's commands as each of them (``setpriv``), each in a copy of this checkout of
their own (the working tree's files), with this checkout's environment, and one temporary folder that both share as
they share ``/tmp``. A Python under root's home (pyenv, as on the course's CI) is unreadable to another user: the
commands then run in a mount namespace where only that Python's folder is shown under it (bubblewrap, as root);
nothing else differs. As an ordinary user, the module runs the commands as that user, and the tests that need a
second user skip.

One small correct submission of 01_order (its solution) is graded, in a course released once.
"""

from __future__ import annotations

import csv
import grp
import json
import os
import pwd
import secrets
import shutil
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import python_shown_to

from autograder.course import REPO
from autograder.sandbox.sandbox import Limits

pytestmark = pytest.mark.slow
ASSIGNMENT = "01_order"
STUDENT = "alice"
COMMAND_TIMEOUT = 900  # seconds: a hang guard for one command, never a measure


@dataclass
class Grader:
    name: str
    uid: int
    gid: int  # the user's own group
    home: Path  # holds the checkout copy (posref/), the class to import and the course folders

    @property
    def checkout(self) -> Path:
        return self.home / "posref"


@dataclass
class Machine:
    """The graders of one machine and the temporary folder every user of it shares (its ``/tmp``)."""

    graders: list[Grader]
    base: Path  # a folder every grader may enter
    common_tmp: Path
    group: str | None
    prefix: list[str]  # what makes this environment's Python readable to another user (empty when it is)
    sandbox: str = ""  # the sandbox an ordinary user gets here (``Sandbox.mode``)
    # a command -> the names it left in ``common_tmp`` (``new_in_tmp``), filled as the fixtures run them
    left: dict[str, list[str]] = field(default_factory=dict)

    def new_in_tmp(self, before: set[str]) -> list[str]:
        """What is in the shared temporary folder now that was not in ``before`` (names)."""
        return sorted(set(os.listdir(self.common_tmp)) - before)

    def run(self, grader: Grader, *args: str, course: Path, env: dict[str, str] | None = None):
        """``python -m autograder ARGS`` (``python ARGS`` when ARGS start with ``-m`` or ``-c``) as ``grader``, in
        their checkout, with their course folder: the completed process, stdout and stderr as text."""
        return self.popen(grader, *args, course=course, env=env).finished()

    def popen(self, grader: Grader, *args: str, course: Path, env: dict[str, str] | None = None) -> Command:
        command = [sys.executable, *(args if args[0] in ("-m", "-c") else ("-m", "autograder", *args))]
        if os.geteuid() == 0:
            drop = ["setpriv", f"--reuid={grader.uid}", f"--regid={grader.gid}", "--init-groups", "--"]
            command = [*self.prefix, *drop, *command]
        environment = {
            "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(grader.home), "USER": grader.name,
            "LOGNAME": grader.name, "LANG": "C.UTF-8", "TMPDIR": str(self.common_tmp), "POSREF_FAST": "1",
            "POSREF_COURSE_DIR": str(course), **(env or {}),
        }  # fmt: skip
        process = subprocess.Popen(
            command,
            cwd=grader.checkout,
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        return Command(process, " ".join(args), grader.name)


@dataclass
class Command:
    """A command started as ``who``; ``finished()`` waits for it: its exit status, stdout and stderr."""

    process: subprocess.Popen
    what: str
    who: str

    def finished(self) -> subprocess.CompletedProcess:
        out, err = self.process.communicate(timeout=COMMAND_TIMEOUT)
        return subprocess.CompletedProcess(self.what, self.process.returncode, out, err)


def _copy_checkout(target: Path) -> None:
    """The working tree's files (tracked, and untracked ones git does not ignore) into ``target``: what a clone of
    this checkout, with its changes, holds."""
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        check=True, capture_output=True,
    ).stdout.decode()  # fmt: skip
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file() and not source.is_symlink():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


def _chown_tree(path: Path, uid: int, gid: int) -> None:
    os.chown(path, uid, gid)
    for entry in path.rglob("*"):
        os.chown(entry, uid, gid, follow_symlinks=False)


def _make_user(name: str, home: Path, group: str) -> Grader:
    subprocess.run(["useradd", "--create-home", "--home-dir", str(home), "--groups", group, name], check=True)
    user = pwd.getpwnam(name)
    return Grader(name, user.pw_uid, user.pw_gid, home)


@pytest.fixture(scope="module")
def machine():
    """Two ordinary users with a group of their own (as root), or this user alone; the shared temporary folder."""
    if shutil.which("git") is None:
        pytest.skip("no git: the checkout copy lists the working tree's files with git")
    base = Path(tempfile.mkdtemp(prefix="posref-users-"))  # pytest's tmp_path is private to root
    base.chmod(0o755)
    common = base / "tmp"
    common.mkdir(mode=0o1777)
    common.chmod(0o1777)
    tag, made, group = secrets.token_hex(3), [], None
    try:
        if os.geteuid() == 0:
            if not all(
                shutil.which(tool) for tool in ("useradd", "userdel", "groupadd", "groupdel", "setpriv")
            ):
                pytest.skip(
                    "running as root without useradd, groupadd or setpriv: no ordinary user to grade as"
                )
            group = f"posref-g{tag}"
            subprocess.run(["groupadd", group], check=True)
            for letter in "ab":
                made.append(_make_user(f"posref-{letter}{tag}", base / f"{letter}{tag}", group))
            prefix = python_shown_to(made[0].uid)
            if prefix is None:
                pytest.skip(
                    f"{sys.executable} cannot be run by another user here, and bubblewrap cannot show it"
                )
        else:
            me = pwd.getpwuid(os.geteuid())
            made.append(Grader(me.pw_name, me.pw_uid, me.pw_gid, base / "me"))
            made[0].home.mkdir()
            prefix = []
        for grader in made:
            _copy_checkout(grader.checkout)
            student = grader.home / "class" / STUDENT / ASSIGNMENT
            student.mkdir(parents=True)
            shutil.copy(REPO / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", student)
            if os.geteuid() == 0:
                _chown_tree(grader.home, grader.uid, grader.gid)
        found = Machine(made, base, common, group, prefix)
        mode = found.run(
            made[0],
            "-c",
            "from autograder.sandbox.sandbox import Sandbox; print(Sandbox().mode)",
            course=base,
        )
        assert mode.returncode == 0, mode.stderr
        found.sandbox = mode.stdout.strip()
        yield found
    finally:
        if os.geteuid() == 0:
            for grader in made:
                subprocess.run(["userdel", "--force", "--remove", grader.name], capture_output=True)
            if group is not None:
                subprocess.run(["groupdel", group], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


def _second(machine: Machine) -> Grader:
    if len(machine.graders) < 2:
        pytest.skip(
            "not root: a second user to grade beside this one needs root to create it (CI runs as root)"
        )
    return machine.graders[1]


@pytest.fixture(scope="module")
def released(machine) -> Path:
    """A course with 01_order released by the first grader (``release``), copied for each grading."""
    grader = machine.graders[0]
    course = grader.home / "released"
    before = set(os.listdir(machine.common_tmp))
    result = machine.run(grader, "release", ASSIGNMENT, course=course)
    assert result.returncode == 0, result.stderr
    machine.left["release"] = machine.new_in_tmp(before)
    return course


def _course_for(machine: Machine, grader: Grader, released: Path, name: str) -> Path:
    course = grader.home / name
    shutil.copytree(released, course, symlinks=True)
    if os.geteuid() == 0:
        _chown_tree(course, grader.uid, grader.gid)
    return course


def _workflow(machine: Machine, grader: Grader, course: Path) -> dict:
    """The README's import, autograde, feedback and export as ``grader``: each command's result, what each left in
    the shared temporary folder (``left``: the names new after it; others' commands running beside it add theirs),
    and the CSV's rows."""
    out = {"left": {}}
    for step, args in [
        ("import", ("import", str(grader.home / "class"))),
        ("autograde", ("autograde", ASSIGNMENT, "--workers", "1")),
        ("feedback", ("feedback", ASSIGNMENT)),
        ("export", ("export", ASSIGNMENT)),
    ]:
        before = set(os.listdir(machine.common_tmp))
        out[step] = machine.run(grader, *args, course=course)
        out["left"][step] = machine.new_in_tmp(before)
    written = course / f"{ASSIGNMENT}-grades.csv"
    out["rows"] = list(csv.DictReader(written.read_text().splitlines())) if written.exists() else []
    return out


def _assert_graded_in_full(machine: Machine, out: dict, course: Path) -> Path:
    """Every command succeeded; the correct submission has full marks in the CSV, its feedback page, and the score
    of record in the autograded notebook (returned), graded in the sandbox an ordinary user gets here."""
    for step in ("import", "autograde", "feedback", "export"):
        assert out[step].returncode == 0, f"{step}:\n{out[step].stdout}\n{out[step].stderr}"
    assert "graded 1 student(s);" in out["autograde"].stdout, out["autograde"].stderr
    (row,) = out["rows"]
    assert (row["student"], row["status"], row["reason"]) == (STUDENT, "graded", ""), row
    assert float(row["score"]) == float(row["max_score"]) > 0, row
    assert (course / "feedback" / STUDENT / ASSIGNMENT / f"{ASSIGNMENT}.html").is_file()
    autograded = course / "autograded" / STUDENT / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    assert "Score of record" in autograded.read_text()
    record = json.loads((course / "records" / ASSIGNMENT / f"{STUDENT}.json").read_text())
    assert record["notebooks"][0]["sandbox"] == machine.sandbox
    return autograded


def _assert_nothing_shared_in(common: Path) -> None:
    """What the graders left in the machine's temporary folder is each one's own: no other user may enter or
    change it."""
    for entry in common.iterdir():
        info = entry.lstat()
        assert stat.S_ISDIR(info.st_mode) and not info.st_mode & 0o077, (
            f"{entry.name} in the shared temporary folder: {stat.filemode(info.st_mode)}, uid {info.st_uid}"
        )


@pytest.fixture(scope="module")
def first(machine, released) -> tuple[Path, dict]:
    """The first grader's course and the README's commands as they ran in it."""
    grader = machine.graders[0]
    course = _course_for(machine, grader, released, "course")
    return course, _workflow(machine, grader, course)


def test_an_instructor_who_is_not_root_grades_with_the_readmes_commands(machine, first):
    course, out = first
    autograded = _assert_graded_in_full(machine, out, course)
    assert stat.S_IMODE(autograded.stat().st_mode) == 0o444  # nbgrader's mode, kept by the score's rewrite
    assert not course.stat().st_mode & 0o007, "the course folder (every student's work) is open to every user"
    _assert_nothing_shared_in(machine.common_tmp)
    # a run leaves nothing behind (issue 35.4), as an ordinary user too: each of the five commands, run alone
    assert {"release": machine.left["release"], **out["left"]} == dict.fromkeys(
        ["release", "import", "autograde", "feedback", "export"], []
    )


def test_a_second_instructor_grades_after_and_beside_the_first_on_the_same_machine(machine, released, first):
    """The second grader runs the README's commands on a course of their own right after the first grader did
    (anything the first run left in the machine's temporary folder would be there), while the first grades again:
    both grade in full, and neither leaves anything in the shared temporary folder."""
    a, b = machine.graders[0], _second(machine)
    before = set(os.listdir(machine.common_tmp))
    again = machine.popen(a, "autograde", ASSIGNMENT, "--workers", "1", "--regrade", course=first[0])
    course = _course_for(machine, b, released, "course")
    try:
        out = _workflow(machine, b, course)
    finally:
        beside = again.finished()
    _assert_graded_in_full(machine, out, course)
    assert beside.returncode == 0 and "graded 1 student(s);" in beside.stdout, (
        f"{beside.stdout}\n{beside.stderr}"
    )
    _assert_nothing_shared_in(machine.common_tmp)
    assert machine.new_in_tmp(before) == []  # both runs over: neither left anything (issue 35.4)


def test_graders_of_one_group_share_a_course(machine, released):
    """``POSREF_GROUPSHARED=1``: what one grader of the course's group writes, another reads and updates (nbgrader's
    ``groupshared``): one releases and imports, the other grades and writes feedback, the first writes feedback and
    the CSV over it, the second the CSV again; everything in the course is the group's, and the group may write it."""
    a, b = machine.graders[0], _second(machine)
    shared = machine.base / "group-course"
    course, env = shared / "course", {"POSREF_GROUPSHARED": "1"}
    shared.mkdir()
    shutil.chown(shared, a.uid, machine.group)
    shared.chmod(0o2770)
    steps = [
        (a, ("release", ASSIGNMENT)),
        (a, ("import", str(a.home / "class"))),
        (b, ("autograde", ASSIGNMENT, "--workers", "1")),
        (b, ("feedback", ASSIGNMENT)),
        (a, ("feedback", ASSIGNMENT)),
        (a, ("export", ASSIGNMENT)),
        (b, ("export", ASSIGNMENT)),
    ]
    for grader, args in steps:
        result = machine.run(grader, *args, course=course, env=env)
        assert result.returncode == 0, f"{grader.name}: {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
    with open(course / f"{ASSIGNMENT}-grades.csv", newline="") as f:
        (row,) = csv.DictReader(f)
    assert row["status"] == "graded" and float(row["score"]) == float(row["max_score"]) > 0, row
    for path in [course, *course.rglob("*")]:
        if path.is_symlink():
            continue
        mode = path.stat().st_mode
        wanted = 0o2070 if path.is_dir() else 0o060
        assert mode & wanted == wanted, f"{path.relative_to(course)}: {stat.filemode(mode)}"
        assert path.stat().st_gid == grp.getgrnam(machine.group).gr_gid, path.relative_to(course)


# a student's child in the test below: a user namespace of its own (kernel code that sandbox escapes have gone
# through), then as many processes as it can make
GREEDY_CHILD = """
import ctypes, os, time
made = ctypes.CDLL(None, use_errno=True).unshare(0x10000000) == 0  # CLONE_NEWUSER
forked = 0
try:
    while forked < 500:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        forked += 1
except OSError:
    pass
print(made, forked)
"""
# the instructor's side: 100 threads of their own beside the grader (a browser has hundreds), then that child
INSTRUCTOR = """
import subprocess, sys, threading
from pathlib import Path
from autograder.sandbox.sandbox import Sandbox, _bwrap_disables_userns
hold = threading.Event()
for _ in range(100):
    threading.Thread(target=hold.wait, daemon=True).start()
sandbox = Sandbox()
command, _, _ = sandbox.python_command(Path("/"))
child = subprocess.run([*command, "-c", sys.argv[1]], capture_output=True, text=True, env=sandbox.env(),
                       preexec_fn=sandbox.set_limits, timeout=300)
print(sandbox.mode.split(";")[0], _bwrap_disables_userns(), child.returncode, child.stdout, child.stderr[-300:])
"""


def test_an_instructor_with_many_processes_gets_the_sandbox_and_its_limits(machine):
    """An ordinary user's sandbox counts its own processes against the process limit, never the instructor's
    others (more than 64 threads: it could not start at all): the child starts, a fork bomb in it stops at the
    limit, and it cannot make a user namespace of its own (where bubblewrap can forbid it)."""
    grader = machine.graders[0]
    result = machine.run(grader, "-c", INSTRUCTOR, GREEDY_CHILD, course=grader.home / "unused")
    assert result.returncode == 0, result.stderr
    mode, disables, status, *child = result.stdout.split(maxsplit=5)
    if mode != "bubblewrap":
        pytest.skip(f"no sandbox for an ordinary user here: {result.stdout}")
    assert status == "0" and len(child) >= 2, result.stdout
    made, forked = child[:2]
    assert 0 < int(forked) < Limits().processes, result.stdout
    assert made == "False" or disables == "False", result.stdout


# another user of the machine, given the address of a grader's local Dask cluster (a port on 127.0.0.1 that anyone
# can find): connects, as TLS and as plain TCP, and runs code in the workers if it can
INTRUDER = """
import os, sys
from distributed import Client
for address in (sys.argv[1], sys.argv[1].replace("tls://", "tcp://")):
    try:
        with Client(address, timeout=20) as client:
            print("ran as", client.run(os.getuid))
    except Exception as err:
        print("refused", type(err).__name__)
"""


def test_no_other_user_can_run_code_in_a_graders_local_cluster(machine):
    """The local cluster of ``autograde`` listens on 127.0.0.1, every user's: whoever connects without the run's
    own key is refused (it was not: another user ran code in the workers, as the grader)."""
    from autograder.grading.cluster import dask_client

    with dask_client(None, 1) as client:
        address = client.scheduler.address
        result = machine.run(machine.graders[0], "-c", INTRUDER, address, course=machine.base)
        assert client.submit(sum, [1, 2]).result() == 3  # the grader's own client still works
    assert result.returncode == 0, result.stderr
    assert result.stdout.split().count("refused") == 2, result.stdout
