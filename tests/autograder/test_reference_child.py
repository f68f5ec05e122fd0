"""The speed checks' reference child is the grader's, and so are its failures (issue 25, item 6).

It lives as long as the worker, under a CPU limit per process (600 s) that nothing resets: after a few thousand
speed checks in one long-lived worker (a Dask worker grading a large class) the limit ended it in the middle of a
check, and the correct student being graded lost the speed point ("could not compare", status graded); ended
while it started, the student lost the cell ("could not run the answer cells"). Now it is started afresh before
it has used half its limit, a check whose reference child fails is run again with a new one, a start that fails
is tried again, and a reference that cannot be had makes the notebook "could not grade" with the reason.

The faults are injected into a Dask worker running in this process (``LocalCluster(processes=False)``), graded
through the instructor's commands: the reference child killed by ``SIGXCPU`` (what its CPU limit sends) in the
middle of a check or while it starts, and a clock of consumed CPU that charges each of its timed rounds as much
as a few hundred real checks would, enforced as the kernel enforces the limit.
"""

from __future__ import annotations

import csv
import json
import os
import signal

import pytest
from course_helpers import hand_in, in_process_cluster, needs_bwrap, plain_child, run_command
from nbgrader.api import Gradebook

from autograder.demo.submissions import PE, ROPE
from autograder.grading import record
from autograder.sandbox import sandbox
from autograder.sandbox.sandbox import Limits, Sandbox
from posref.grading.child.processes import cpu_seconds
from posref.grading.child.remote import Child

pytestmark = [needs_bwrap, pytest.mark.xdist_group("sandbox")]  # the group: see tests/conftest.py
CORRECT = {"sinusoidal_pe": PE, "apply_rope": ROPE}
XCPU = "killed by signal 24 (CPU time limit)"


@pytest.fixture(scope="module")
def in_process_worker(tmp_path_factory):
    """A Dask scheduler and one worker thread in this process: the faults injected here reach its grading."""
    with in_process_cluster(tmp_path_factory.mktemp("dask")) as address:
        yield address


@pytest.fixture
def no_reference_yet():
    """The worker's reference children closed before the test (each test starts from a worker without one)."""
    while record._REFERENCE_CHILDREN:
        record._REFERENCE_CHILDREN.popitem()[1].close()
    yield


def _grade(course, scheduler: str, *students: str, failed: int = 0, listed: int = 0) -> dict[str, dict]:
    """``autograde`` each of ``students`` in turn (every student at once when none is named), then ``export``:
    student -> their row of the CSV. ``failed``, ``listed``: the exit status expected of ``autograde`` (1: a
    notebook could not be graded) and of ``export`` (1: the CSV holds one that could not be)."""
    for student in students or [None]:
        only = ["--student", student] if student else []
        graded = run_command("autograde", "positions", "--scheduler", scheduler, *only)
        assert graded.returncode == failed, graded.stderr
    exported = run_command("export", "positions")
    assert exported.returncode == listed, exported.stderr
    with open(course / "positions-grades.csv") as f:
        return {row["student"]: row for row in csv.DictReader(f)}


def _record(course, student: str) -> dict:
    (notebook,) = json.loads((course / "records" / "positions" / f"{student}.json").read_text())["notebooks"]
    return notebook


def _score(row: dict) -> tuple[str, float | None]:
    return row["status"], float(row["score"]) if row["score"] else None


def _out_of_cpu(child: Child) -> None:
    """What the CPU limit does to the child: ``SIGXCPU`` to its Python (not to bubblewrap's processes around it)."""
    for pid in child.processes():
        try:
            with open(f"/proc/{pid}/comm") as f:
                python = f.read().startswith("python")
        except OSError:
            continue
        if python:
            os.kill(pid, signal.SIGXCPU)


def _reference_rounds(monkeypatch, before_round) -> None:
    """``before_round(child, n)`` runs before the ``n``-th timed round (from 1) of any reference child."""
    real, count = Child.run_chain, [0]

    def run_chain(self, *args, **kwargs):
        if self in record._REFERENCE_CHILDREN.values():
            count[0] += 1
            before_round(self, count[0])
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Child, "run_chain", run_chain)


def test_cpu_seconds_is_what_a_process_used_and_worn_is_half_its_limit(tmp_path):
    burn = "import time\ndef burn(s):\n    while time.process_time() < s:\n        pass\n    return time.process_time()\n"
    with plain_child(burn, cwd=str(tmp_path)) as child:
        before = cpu_seconds(child.processes())
        used = child.call("burn", (before + 0.6,), {})
        after = cpu_seconds(child.processes())
        assert after >= used - 0.02  # /proc counts in clock ticks (0.01 s)
        assert Sandbox(limits=Limits(cpu_seconds=1)).worn(child.processes())
        assert not Sandbox().worn(child.processes())
    assert cpu_seconds([child.process.pid]) == 0.0  # gone


def test_a_reference_killed_by_its_cpu_limit_mid_check_is_started_again_and_the_student_keeps_the_point(
    released_demo, in_process_worker, no_reference_yet, tmp_path, monkeypatch
):
    course = hand_in(
        released_demo, tmp_path / "course", monkeypatch, {"alice": CORRECT, "classmate": CORRECT}
    )
    killed = []

    def kill_in_the_first_check(child, n):
        if n == 4:  # warm-up and calibration done: the check is well under way
            _out_of_cpu(child)
            killed.append(child)

    _reference_rounds(monkeypatch, kill_in_the_first_check)
    rows = _grade(course, in_process_worker, "alice", "classmate")
    assert killed and {s: _score(r) for s, r in rows.items()} == {
        "alice": ("graded", 6.0),
        "classmate": ("graded", 6.0),
    }
    (problem,) = _record(course, "alice")["problems"]
    assert problem.startswith("the grader's reference process failed during check_apply_rope_speed")
    assert XCPU in problem and problem.endswith("it was started again and the check run again")
    assert _record(course, "classmate")["problems"] == []


def test_a_reference_killed_while_it_starts_is_started_again(
    released_demo, in_process_worker, no_reference_yet, tmp_path, monkeypatch
):
    course = hand_in(released_demo, tmp_path / "course", monkeypatch, {"alice": CORRECT})
    real, starts = record._Children._start, []

    def first_start_dies(self, cells, deadline, files=(), **options):
        if options.get("fork") is False:  # the reference child (the students' are forks)
            starts.append(cells)
            if len(starts) == 1:  # dies as its CPU limit would end it, before its imports are done
                cells = [(0, "import os, signal\nos.kill(os.getpid(), signal.SIGXCPU)")]
        return real(self, cells, deadline, files, **options)

    monkeypatch.setattr(record._Children, "_start", first_start_dies)
    rows = _grade(course, in_process_worker, "alice")
    assert len(starts) == 2 and _score(rows["alice"]) == ("graded", 6.0)


def test_a_reference_that_cannot_be_had_makes_could_not_grade_and_the_next_student_is_graded(
    released_demo, in_process_worker, no_reference_yet, tmp_path, monkeypatch
):
    course = hand_in(
        released_demo, tmp_path / "course", monkeypatch, {"alice": CORRECT, "classmate": CORRECT}
    )
    real = record._Children._start

    def reference_dies(self, cells, deadline, files=(), **options):
        if options.get("fork") is False:
            cells = [(0, "import os, signal\nos.kill(os.getpid(), signal.SIGXCPU)")]
        return real(self, cells, deadline, files, **options)

    with monkeypatch.context() as broken:
        broken.setattr(record._Children, "_start", reference_dies)
        _grade(course, in_process_worker, "alice", failed=1, listed=1)
    rows = _grade(course, in_process_worker, "classmate", listed=1)  # alice's row is still in the CSV
    assert _score(rows["alice"]) == ("could not grade", None)
    assert rows["alice"]["reason"] == (
        "grader error while checking test_apply_rope_speed: GraderFailed: the grader's reference process could not "
        f"start (3 attempts): the grading process was {XCPU} while running cell 0"
    )
    assert _score(rows["classmate"]) == ("graded", 6.0)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        assert gb.find_submission("positions", "alice").needs_manual_grade
        assert gb.find_submission("positions", "classmate").score == 6.0


def test_a_worker_grading_thousands_of_speed_checks_keeps_its_reference_child(
    released_demo, in_process_worker, no_reference_yet, tmp_path, monkeypatch
):
    """A check costs the reference child about 0.1 s of CPU (measured on the 2-core machine): its 600 s ran out
    after some 5,000 checks. Here each of its timed rounds is charged 20 s more (a student's grading, 5-14 rounds,
    100-280 s: some 1,000 real checks' worth for the five), and a child whose charged CPU passes its limit is sent
    SIGXCPU, as the kernel would send it: five students graded in a row take it past the limit (35 rounds with the
    rounds of issue 26, 700 s), and it must never get there. (At 8 s a round, the rounds of issue 26 reached only
    280 s for the five: no renewal was ever needed, and this test failed for that reason.)"""
    students = [f"s{i}" for i in range(5)]
    course = hand_in(released_demo, tmp_path / "course", monkeypatch, dict.fromkeys(students, CORRECT))
    limit, charged, seen = Limits().cpu_seconds, {}, []
    real_cpu = sandbox.cpu_seconds

    def charged_cpu(pids) -> float:
        pids = set(pids)
        return real_cpu(pids) + max((c for pid, c in charged.items() if pid in pids), default=0.0)

    def charge(child, n):
        if child not in seen:
            seen.append(child)
        charged[child.process.pid] = charged.get(child.process.pid, 0.0) + 20.0
        if charged_cpu(child.processes()) > limit:
            _out_of_cpu(child)

    monkeypatch.setattr(sandbox, "cpu_seconds", charged_cpu)
    _reference_rounds(monkeypatch, charge)
    rows = _grade(course, in_process_worker)  # one run, one student after another
    assert {s: _score(r) for s, r in rows.items()} == dict.fromkeys(students, ("graded", 6.0))
    assert [_record(course, s)["problems"] for s in students] == [[]] * 5  # never killed, never run again
    assert len(seen) >= 2  # started afresh on the way


def _uids(child: Child) -> set[int]:
    uids = set()
    for pid in child.processes():
        with open(f"/proc/{pid}/status") as f:
            uids |= {int(line.split()[1]) for line in f if line.startswith("Uid:")}
    return uids


@pytest.mark.skipif(os.geteuid() != 0, reason="as another user every child runs as that user")
def test_the_reference_child_shares_no_uid_with_a_students_child(tmp_path, no_reference_yet):
    """What a uid holds is counted per uid: its processes and threads (64), its keys, inotify instances and queue
    bytes. The reference child ran as the students' uid, so a student holding all of them could starve it (a
    thread it needed, a start after a renewal): it runs as a uid of its own."""
    box = Sandbox()
    children = record._Children([(0, "x = 1")], box, box.scratch(tmp_path), [], timeout=60, budget=300)
    try:
        student = children.get()
        reference = children.reference_fn("posref:apply_rope").child
        assert _uids(student) - {0} == {box.uid}  # bubblewrap's own processes are root's
        assert _uids(reference) - {0} == {box.uid + sandbox.REFERENCE_UID_OFFSET}
    finally:
        children.close()
