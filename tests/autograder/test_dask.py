"""Grading on a Dask cluster of real processes on 127.0.0.1: a scheduler and workers started as `dask scheduler`
and `dask worker` would be on other machines (autograder.grading.cluster.LoopbackCluster), no mocks.

A small class of the demo's submissions is graded locally and over the cluster with one worker killed in the
middle of a student: every score and message is the same (up to the numbers a check draws at random: its seed,
shapes and counts). A scheduler that goes away ends the run with a message; the records finished before are
kept, and the next run grades only the rest.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import threading
import time

import pytest
from conftest import demo_environment
from distributed import Client

from autograder.demo.build import write_submissions
from autograder.grading.cluster import LoopbackCluster
from autograder.grading.grade import autograde
from autograder.intake.submissions import import_submissions

pytestmark = pytest.mark.slow
CELL_TIMEOUT = 20.0


def _class(released_demo, tmp_path, monkeypatch, students: dict[str, str]):
    """A copy of the released demo course with ``students`` (id -> the demo submission they hand in) imported."""
    course = tmp_path / "course"
    shutil.copytree(released_demo, course)
    demo_environment(monkeypatch, course)
    examples = tmp_path / "examples"
    write_submissions(
        course / "release" / "positions" / "positions.ipynb", examples, sorted(set(students.values()))
    )
    for student, example in students.items():
        shutil.copytree(examples / example, tmp_path / "class" / student)
    import_submissions(tmp_path / "class", "positions")
    return course


def _read(result: dict) -> list:
    """What a student reads in a record: statuses, scores, reasons, problems and each cell's message, with
    every number masked (a hidden check draws its cases, and quotes their seed and shapes, at random)."""

    def mask(text: str) -> str:
        return re.sub(r"-?\d+(\.\d+)?(e[-+]?\d+)?", "#", text)

    return [
        (nb["notebook"], nb["status"], nb["score"], mask(nb["reason"]), [mask(p) for p in nb["problems"]],
         [(c["grade_id"], c["score"], mask(c["message"])) for c in nb["cells"]])
        for nb in result["notebooks"]
    ]  # fmt: skip


def _kill_when_busy(cluster: LoopbackCluster, name: str, spare: str, killed: list) -> None:
    """Kill worker ``name`` a second into a student other than ``spare`` (whose grading takes less than that)."""
    with Client(cluster.address, timeout=30) as client:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            names = {addr: w["name"] for addr, w in client.scheduler_info()["workers"].items()}
            busy = [k for addr, keys in client.processing().items() if names.get(addr) == name for k in keys]
            busy = [k for k in busy if f"-{spare}-" not in str(k)]
            if busy:
                time.sleep(1.0)
                cluster.kill_worker(name)
                killed.extend(busy)
                return
            time.sleep(0.2)


def test_a_class_graded_over_dask_gets_what_a_local_run_gives_although_a_worker_dies(
    released_demo, tmp_path, monkeypatch
):
    students = {"ann": "correct", "ben": "partial", "cat": "exit", "dan": "corrupt"}
    course = _class(released_demo, tmp_path, monkeypatch, students)
    temporary = tmp_path / "tmp"  # the system's temporary folder of this test and of every process it starts
    temporary.mkdir()
    monkeypatch.setenv("TMPDIR", str(temporary))
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    local = {r["student"]: r for r in autograde("positions", workers=2, cell_timeout=CELL_TIMEOUT)}
    assert sorted(local) == sorted(students)
    assert [local[s]["notebooks"][0]["score"] for s in sorted(students)] == [6.0, 2.0, 4.0, None]
    with LoopbackCluster(workers=2) as cluster:
        killed: list = []
        killer = threading.Thread(target=_kill_when_busy, args=(cluster, "w1", "dan", killed))
        killer.start()
        try:
            remote = autograde(
                "positions", scheduler=cluster.address, cell_timeout=CELL_TIMEOUT, regrade=True
            )
        finally:
            killer.join()
    assert killed, "worker w1 was never seen grading a student: nothing was killed"
    remote = {r["student"]: r for r in remote}
    assert sorted(remote) == sorted(students)  # none dropped, the killed worker's student regraded elsewhere
    for student in students:
        assert "error" not in remote[student], remote[student]
        assert _read(remote[student]) == _read(local[student]), student
    records = course / "records" / "positions"
    assert sorted(p.stem for p in records.glob("*.json")) == sorted(students)
    # the killed worker's student folder went with the cluster's (it stayed in the temporary folder: issue 35.4)
    assert sorted(p.name for p in temporary.iterdir()) == []


def test_a_scheduler_that_goes_away_ends_the_run_and_the_next_run_grades_the_rest(
    released_demo, tmp_path, monkeypatch
):
    course = _class(released_demo, tmp_path, monkeypatch, {"a": "partial", "b": "exit", "c": "correct"})
    records = course / "records" / "positions"
    with LoopbackCluster(workers=1) as cluster:

        def stop_after_the_first_record():
            deadline = time.monotonic() + 300
            while not list(records.glob("*.json")) and time.monotonic() < deadline:
                time.sleep(0.1)
            cluster.stop_scheduler()

        stopper = threading.Thread(target=stop_after_the_first_record)
        stopper.start()
        gone = r"went away \(or cancelled the work\): (\d) of 3 student\(s\) sent there graded and recorded"
        try:
            with pytest.raises(SystemExit, match=gone) as stopped:
                autograde("positions", scheduler=cluster.address, cell_timeout=CELL_TIMEOUT)
        finally:
            stopper.join()
    kept = {p.stem: p.read_text() for p in records.glob("*.json")}
    assert 1 <= len(kept) < 3 and len(kept) == int(re.search(gone, str(stopped.value)).group(1))
    with LoopbackCluster(workers=1) as cluster:
        again = autograde("positions", scheduler=cluster.address, cell_timeout=CELL_TIMEOUT)
    assert sorted(r["student"] for r in again) == sorted(
        set("abc") - set(kept)
    )  # the rest, and only the rest
    assert {s: (records / f"{s}.json").read_text() for s in kept} == kept  # kept as they were
    scores = {"a": 2.0, "b": 4.0, "c": 6.0}
    assert all(r["notebooks"][0]["score"] == scores[r["student"]] for r in again)
