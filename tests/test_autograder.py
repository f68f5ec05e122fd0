"""The score of record and the instructor's workflow, through the real grading path.

The hostile submissions of ``autograder/demo/submissions.py`` (patching posref, the checkers, torch.testing, the
clock, the import system and the traceback display; a shadow posref.py; writing to the gradebook; reading
other students' files; an infinite loop that swallows KeyboardInterrupt; os._exit; a memory bomb; a fork bomb;
a corrupted notebook) are graded with correct ones by ``python -m autograder``'s own functions, in parallel.
"""

from __future__ import annotations

import csv
import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import cli
from autograder.demo.submissions import SUBMISSIONS
from autograder.record import checker_calls
from autograder.sandbox import Sandbox
from posref.grading.remote import Child, ChildFailed

needs_bwrap = pytest.mark.skipif(
    Sandbox().problem is not None, reason=f"sandbox unavailable: {Sandbox().problem}"
)


def test_checker_calls_are_read_from_the_test_cell_source():
    source = (
        "check_apply_rope(apply_rope)\n### BEGIN HIDDEN TESTS\ncheck_apply_rope(apply_rope, hidden=True)\n"
    )
    source += "posref.grading.check_sinusoidal_pe(pe)\nprint(check_unknown_thing(x))\n%timeit f()\n"
    assert checker_calls(source) == [("check_apply_rope", "apply_rope"), ("check_sinusoidal_pe", "pe")]


@needs_bwrap
def test_the_sandbox_has_no_network_no_other_files_and_writes_only_to_scratch(tmp_path):
    secret = tmp_path / "course" / "gradebook.db"
    secret.parent.mkdir()
    secret.write_text("grades")
    sandbox = Sandbox()
    work = sandbox.scratch(None, tmp_path / "scratch")
    probe = f"""
import os, socket
found = []
try:
    socket.create_connection(("1.1.1.1", 53), timeout=2)
    found.append("network")
except OSError:
    pass
for path in [{str(secret)!r}, "/root/.bashrc", "/etc/passwd"]:
    try:
        open(path).read()
        found.append("read " + path)
    except OSError:
        pass
for path in ["/usr/evil", "/opt/posref/posref/evil.py", {str(tmp_path / "evil")!r}]:
    try:
        open(path, "w").write("x")
        found.append("wrote " + path)
    except OSError:
        pass
open("allowed.txt", "w").write("scratch is writable")
def report():
    return ", ".join(found) or "nothing"
"""
    command, cwd, path = sandbox.python_command(work)
    child = Child(
        command, [(0, probe)], env=sandbox.env(), cwd=cwd, python_path=path, preexec_fn=sandbox.set_limits
    )
    try:
        assert child.call("report", (), {}) == "nothing"
    finally:
        child.close()
    assert (work / "allowed.txt").read_text() == "scratch is writable"
    assert not (tmp_path / "evil").exists()


def test_a_child_that_dies_is_reported_with_the_cell_that_killed_it(tmp_path):
    sandbox = Sandbox()
    work = sandbox.scratch(None, tmp_path)
    command, cwd, path = sandbox.python_command(work)
    with pytest.raises(ChildFailed, match="exited with code 3 while running cell 7") as failure:
        Child(
            command,
            [(5, "x = 1"), (7, "import os; os._exit(3)")],
            env=sandbox.env(),
            cwd=cwd,
            python_path=path,
        )
    assert failure.value.cell == 7


@pytest.fixture(scope="module")
def demo_course(tmp_path_factory):
    course = tmp_path_factory.mktemp("course")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("POSREF_COURSE_DIR", str(course))
        rows = cli.demo(workers=2, cell_timeout=20.0)
        yield course, {row["student"]: row for row in rows}


@pytest.mark.slow
@needs_bwrap
@pytest.mark.parametrize("name", sorted(SUBMISSIONS))
def test_each_submission_gets_exactly_its_own_score(demo_course, name):
    _, rows = demo_course
    expected = SUBMISSIONS[name][2]
    row = rows[name]
    if expected is None:
        assert row["status"] == "could not grade" and row["score"] == "" and row["reason"]
    else:
        assert row["status"] == "graded", row
        assert float(row["score"]) == expected, row


@pytest.mark.slow
@needs_bwrap
def test_the_gradebook_holds_the_score_of_record_and_survives_a_student_writing_to_it(demo_course):
    from nbgrader.api import Gradebook

    course, rows = demo_course
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for name, row in rows.items():
            submission = gb.find_submission("positions", name)
            if row["status"] == "graded":
                assert submission.score == float(row["score"]), name
            else:
                assert submission.needs_manual_grade, name


@pytest.mark.slow
@needs_bwrap
def test_export_and_feedback(demo_course):
    course, rows = demo_course
    with open(course / "positions-grades.csv") as f:
        written = list(csv.DictReader(f))
    assert {r["student"] for r in written} == set(SUBMISSIONS)
    assert {r["status"] for r in written} == {"graded", "could not grade"}
    page = (course / "feedback" / "partial" / "positions" / "positions.html").read_text()
    text = html.unescape(re.sub(r"<[^>]+>", "", page.split("</style>")[-1]))  # what a student reads
    assert "Score of record" in text and "wrong pairing layout" in text
    assert "check_apply_rope(apply_rope)" in text  # the visible test is shown ...
    assert "hidden=True" not in text and "BEGIN HIDDEN TESTS" not in text  # ... the hidden one is not
    assert "Traceback (most recent call last)" not in text
    record = json.loads((course / "records" / "positions" / "loop.json").read_text())
    assert any("no answer within" in p for p in record["notebooks"][0]["problems"])


@pytest.mark.slow
@needs_bwrap
def test_import_from_an_archive(tmp_path, monkeypatch):
    monkeypatch.setenv("POSREF_COURSE_DIR", str(tmp_path / "course"))
    (tmp_path / "in" / "alice").mkdir(parents=True)
    (tmp_path / "in" / "alice" / "positions.ipynb").write_text("{}")
    archive = shutil.make_archive(str(tmp_path / "subs"), "zip", tmp_path / "in")
    assert cli.import_submissions(tmp_path / "subs.zip", "positions") == ["alice"]
    assert (tmp_path / "course" / "submitted" / "alice" / "positions" / "positions.ipynb").exists()
    assert archive.endswith(".zip")


@pytest.mark.parametrize("launcher", ["console script", "python -m nbgrader"])
def test_plain_nbgrader_autograde_is_refused_unless_allowed(tmp_path, launcher):
    """Typed by hand, `nbgrader autograde` would grade unsandboxed over the score of record: the config refuses it."""
    from autograder.cli import CONFIG, REPO

    if launcher == "console script":  # what `nbgrader ...` runs: the environment's bin/nbgrader
        script = Path(sys.executable).parent / "nbgrader"
        if not script.is_file():
            pytest.skip(f"no nbgrader console script beside {sys.executable}")
        command = [str(script)]
    else:
        command = [sys.executable, "-m", "nbgrader"]
    env = {k: v for k, v in os.environ.items() if k != "POSREF_ALLOW_PLAIN_AUTOGRADE"}
    env["POSREF_COURSE_DIR"] = str(tmp_path / "course")
    args = ["autograde", "01_order", f"--JupyterApp.config_file={CONFIG}"]
    refused = subprocess.run(
        [*command, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert refused.returncode != 0
    assert "python -m autograder autograde" in refused.stderr, refused.stderr[-2000:]
    # allowed knowingly, nbgrader itself runs (and finds nothing submitted in the empty course)
    env["POSREF_ALLOW_PLAIN_AUTOGRADE"] = "1"
    allowed = subprocess.run(
        [*command, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert "python -m autograder autograde" not in allowed.stderr, allowed.stderr[-2000:]
    # other nbgrader commands are untouched
    env.pop("POSREF_ALLOW_PLAIN_AUTOGRADE")
    listed = subprocess.run(
        [*command, "db", "student", "list", f"--JupyterApp.config_file={CONFIG}"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert listed.returncode == 0, listed.stderr[-2000:]
