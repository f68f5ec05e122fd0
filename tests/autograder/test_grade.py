"""`python -m autograder autograde` (autograder/grading/grade.py): the instructor's side of grading on a Dask
cluster.

These tests run the cluster in this process (``LocalCluster(processes=False)``), so that a worker's task can be
replaced by a stand-in; tests/autograder/test_dask.py runs real scheduler and worker processes.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
from course_helpers import gradebook_copy, in_process_cluster

from autograder.grading import grade, worker
from autograder.intake import late
from autograder.intake.submission import Submission, fingerprint
from autograder.sandbox.sandbox import Sandbox


class NbgraderFails:
    """nbgrader's API as it answers a submission it cannot take (quick: no gradebook, no notebook written)."""

    def autograde(self, *args, **kwargs):
        return {"success": False}


@pytest.fixture(scope="module")
def threads_cluster(tmp_path_factory):
    """A scheduler and one worker thread in this process: a test's stand-in for the worker's task reaches it."""
    with in_process_cluster(tmp_path_factory.mktemp("dask")) as address:
        yield address


def _course(tmp_path, monkeypatch, empty_gradebook, students=("alice",)):
    course = tmp_path / "course"
    monkeypatch.setenv("POSREF_COURSE_DIR", str(course))
    with gradebook_copy(course, empty_gradebook) as gb:
        gb.add_assignment("02_absolute")
        gb.add_notebook("02_absolute", "02_absolute")
    for student in students:
        folder = course / "submitted" / student / "02_absolute"
        folder.mkdir(parents=True)
        (folder / "02_absolute.ipynb").write_text("{}")
    return course


def test_a_student_whose_grading_failed_is_recorded_so_not_left_with_the_previous_record(
    tmp_path, monkeypatch, empty_gradebook, threads_cluster
):
    """A worker that failed (a gradebook locked too long, a worker killed) left no record: export then showed the
    student's previous score, or no row at all."""
    course = _course(tmp_path, monkeypatch, empty_gradebook)
    earlier = course / "records" / "02_absolute" / "alice.json"
    earlier.parent.mkdir(parents=True)
    earlier.write_text(
        json.dumps({"student": "alice", "assignment": "02_absolute", "notebooks": [{"score": 6}]})
    )

    def fails(*args):
        raise RuntimeError("the worker died")

    monkeypatch.setattr(grade, "score_student", fails)
    (result,) = grade.autograde("02_absolute", scheduler=threads_cluster)
    assert result["error"] == "RuntimeError('the worker died')"
    assert json.loads(earlier.read_text()) == result


def test_a_run_grades_only_what_is_new_or_changed_unless_told_otherwise(
    tmp_path, monkeypatch, empty_gradebook, threads_cluster, capsys
):
    course = _course(tmp_path, monkeypatch, empty_gradebook, students=("alice", "bob"))

    def scores(sources, files, cell_timeout, notebook_timeout):
        record = {"notebook": "02_absolute.ipynb", "status": "graded", "reason": "", "cells": [], "problems": [],
                  "sandbox": "bubblewrap", "score": 0.0, "max_score": 0.0}  # fmt: skip
        return {"notebooks": [record], "seconds": 0.0, "worker": "here"}

    def run(**options) -> list[str]:
        """The students graded (the task ran for them and their record was written)."""
        return [r["student"] for r in grade.autograde("02_absolute", scheduler=threads_cluster, **options)]

    monkeypatch.setattr(grade, "score_student", scores)
    monkeypatch.setattr(grade, "_nbgrader_api", NbgraderFails)
    for student in ("alice", "bob"):
        (course / "submitted" / student / "02_absolute" / "02_absolute.ipynb").write_text(
            json.dumps({"who": student})
        )
    assert run() == ["alice", "bob"]
    assert run() == []
    assert "2 student(s) graded already, submission and notebooks unchanged" in capsys.readouterr().err
    (course / "submitted" / "bob" / "02_absolute" / "notes.txt").write_text("a file more")  # imported again
    assert run() == ["bob"]
    assert run(students=["alice"]) == ["alice"]  # asked for by name
    assert run(regrade=True) == ["alice", "bob"]
    record = course / "records" / "02_absolute" / "alice.json"
    record.write_text(record.read_text().replace('"graded"', '"could not grade"'))
    assert run() == ["alice"]  # not graded in full: graded again
    sources = grade.sources_of("02_absolute")
    monkeypatch.setattr(grade, "sources_of", lambda a: {k: v + b" " for k, v in sources.items()})
    assert run() == ["alice", "bob"]  # the instructor changed the notebook


def test_grading_a_student_again_removes_the_feedback_page_of_the_submission_it_replaces(
    tmp_path, monkeypatch
):
    """nbgrader cannot take a re-submission whose notebook was renamed: generate_feedback then left the page of the
    earlier submission (6/10) beside a record that says 'could not grade'."""
    course = tmp_path / "course"
    monkeypatch.setenv("POSREF_COURSE_DIR", str(course))
    submission = course / "submitted" / "grace" / "02_absolute"
    submission.mkdir(parents=True)
    (submission / "02_absolute (1).ipynb").write_text("{}")
    old_page = course / "feedback" / "grace" / "02_absolute" / "02_absolute.html"
    old_page.parent.mkdir(parents=True)
    old_page.write_text("Score: 6.0 / 10.0")

    def not_graded(*args, **kwargs):
        raise AssertionError("the sandbox must not start for a missing notebook")

    monkeypatch.setattr(grade, "_nbgrader_api", NbgraderFails)
    monkeypatch.setattr(Sandbox, "scratch", not_graded)
    files = {"02_absolute (1).ipynb": b"{}"}
    scored = worker.score_student(grade.sources_of("02_absolute"), files, cell_timeout=1, notebook_timeout=60)
    out = grade.record_student(Submission.read("grace", "02_absolute", set(), None), "source", scored)
    assert not old_page.exists()
    (nb,) = out["notebooks"]
    assert nb["status"] == "could not grade" and nb["score"] is None
    assert nb["reason"] == (
        "no 02_absolute.ipynb in the submission (it holds 02_absolute (1).ipynb: rename it, then grade this "
        "student again)"
    )
    assert out["submission"] == fingerprint(submission)
    assert json.loads((course / "records" / "02_absolute" / "grace.json").read_text()) == out


def test_one_students_folder_never_stops_the_run(
    tmp_path, monkeypatch, empty_gradebook, threads_cluster, capsys
):
    """A file name that is not UTF-8 in a graded student's folder made the fingerprint of every submission, computed
    before anyone was graded, raise UnicodeEncodeError: nobody was graded. Each such folder (as nbgrader's exchange
    may leave one) is now that student's "could not grade", with the reason; nbgrader failing on one student is
    that student's too."""
    course = _course(
        tmp_path, monkeypatch, empty_gradebook, students=("alice", "bob", "carol", "dan", "erin")
    )

    def scores(sources, files, cell_timeout, notebook_timeout):
        record = {"notebook": "02_absolute.ipynb", "status": "graded", "reason": "", "cells": [], "problems": [],
                  "sandbox": "bubblewrap", "score": 0.0, "max_score": 0.0}  # fmt: skip
        return {"notebooks": [record], "seconds": 0.0, "worker": "here"}

    class NbgraderFailsOnDan(NbgraderFails):
        def autograde(self, assignment, student, **kwargs):
            if student == "dan":
                raise RuntimeError("nbgrader's own failure")
            return super().autograde()

    monkeypatch.setattr(grade, "score_student", scores)
    monkeypatch.setattr(grade, "_nbgrader_api", NbgraderFailsOnDan)
    first = {r["student"]: r for r in grade.autograde("02_absolute", scheduler=threads_cluster)}
    assert 'could not be recorded: RuntimeError("nbgrader\'s own failure")' in first["dan"]["error"]
    folder = course / "submitted"
    (Path(os.fsdecode(os.fsencode(folder / "bob" / "02_absolute") + b"/\xff.txt"))).write_text("x")
    (folder / "carol" / "02_absolute" / "timestamp.txt").write_bytes(b"\xff")
    (folder / "erin" / "02_absolute" / "02_absolute.ipynb").unlink()
    (folder / "erin" / "02_absolute" / "02_absolute.ipynb").mkdir()
    results = {r["student"]: r for r in grade.autograde("02_absolute", scheduler=threads_cluster)}
    assert sorted(results) == ["bob", "carol", "dan", "erin"]  # alice's record is up to date
    assert "a file name that is not UTF-8" in results["bob"]["error"]
    assert "timestamp.txt cannot be read as a time" in results["carol"]["error"]
    assert "'02_absolute.ipynb' is not a notebook file but a folder" in results["erin"]["error"]
    assert grade.print_summary("02_absolute", list(results.values())) == 1
    out = capsys.readouterr()
    assert (
        "graded 0 student(s), could not grade 4" in out.out and "could not grade bob: a file name" in out.err
    )
    assert json.loads((course / "records" / "02_absolute" / "alice.json").read_text())["notebooks"]


_OPENED: list[str] | None = (
    None  # the files opened while a test records them (an audit hook cannot be removed)
)


def _record_opens(event: str, args: tuple) -> None:
    if _OPENED is not None and event == "open" and isinstance(args[0], str | bytes | os.PathLike):
        _OPENED.append(os.fsdecode(args[0]))


sys.addaudithook(_record_opens)


def test_a_run_reads_each_submission_once(tmp_path, monkeypatch, empty_gradebook, threads_cluster):
    """The submission's facts are read once, into one value that the later steps take. Before, a run read each
    file of a submission two or three times (up_to_date's fingerprint unless --regrade or --student, the worker's
    copy, the record's fingerprint) and its timestamp.txt twice more (a check, then the late penalty's own
    reading): here 8 opens of 3 files."""
    global _OPENED
    course = _course(tmp_path, monkeypatch, empty_gradebook)
    folder = course / "submitted" / "alice" / "02_absolute"
    late.write_timestamp(folder, datetime(2026, 10, 6, tzinfo=timezone.utc))
    (folder / "notes.txt").write_text("a file more")

    def scores(sources, files, cell_timeout, notebook_timeout):  # says what it was sent (a copy runs it)
        sent = json.dumps({name: data.decode() for name, data in files.items()})
        record = {"notebook": "02_absolute.ipynb", "status": "graded", "reason": sent, "cells": [],
                  "problems": [], "sandbox": "bubblewrap", "score": 0.0, "max_score": 0.0}  # fmt: skip
        return {"notebooks": [record], "seconds": 0.0, "worker": "here"}

    monkeypatch.setattr(grade, "score_student", scores)
    monkeypatch.setattr(grade, "_nbgrader_api", NbgraderFails)
    _OPENED = []
    try:
        (result,) = grade.autograde("02_absolute", scheduler=threads_cluster, regrade=True)
    finally:
        opened, _OPENED = _OPENED, None
    files = sorted(str(p) for p in folder.iterdir())
    assert sorted(p for p in opened if p.startswith(str(course / "submitted"))) == files  # each once
    sent = json.loads(result["notebooks"][0]["reason"])
    assert sent == {p.name: p.read_text() for p in folder.iterdir()}
    assert result["submission"] == fingerprint(folder) and result["submitted"] == "2026-10-06T00:00:00+00:00"


def test_a_trusted_call_trusts_its_own_workers_only_and_the_next_call_is_not_trusted(
    tmp_path, monkeypatch, empty_gradebook, threads_cluster
):
    """autograde(trusted=True) set POSREF_TRUSTED_CLASS in the instructor's process for good: every later grading
    in it (a worker in this process, the next local cluster's workers) skipped the sandbox's refusal. Now a
    call's trust reaches its own local workers' environment alone."""
    from autograder.sandbox.sandbox import TRUSTED, trusted_class

    _course(tmp_path, monkeypatch, empty_gradebook)
    monkeypatch.delenv(TRUSTED, raising=False)

    def stand_in(*args):  # the worker's task (pickled: it says what it saw in its error)
        raise RuntimeError(f"trusted: {trusted_class()}")

    monkeypatch.setattr(grade, "score_student", stand_in)
    (result,) = grade.autograde("02_absolute", scheduler=threads_cluster, trusted=True)
    assert result["error"] == "RuntimeError('trusted: False')" and TRUSTED not in os.environ
    (result,) = grade.autograde("02_absolute", scheduler=threads_cluster, regrade=True)
    assert result["error"] == "RuntimeError('trusted: False')"
    from autograder.grading.cluster import dask_client

    for trusted in (True, False):
        with dask_client(None, 1, trusted=trusted) as client:
            assert list(client.run(trusted_class).values()) == [trusted]
    assert TRUSTED not in os.environ
