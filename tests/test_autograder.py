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
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch

from autograder import cli
from autograder.demo.submissions import SUBMISSIONS
from autograder.record import _Children, _run_check, checker_calls, grade_notebook
from autograder.sandbox import Sandbox
from posref.grading.remote import MAX_TEXT, BudgetSpent, Child, ChildFailed, RemoteFunction, StudentError

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


def test_answer_cells_are_matched_by_grade_id_and_broken_metadata_is_ignored():
    """A submission's nbgrader metadata is the student's to edit: a string or null there, or an unhashable
    grade id, used to crash grade_notebook (the whole notebook went to manual grading)."""
    import nbformat

    from autograder.record import _program

    source = nbformat.read(cli.REPO / "autograder/demo/source/positions/positions.ipynb", as_version=4)
    submitted = nbformat.from_dict(json.loads(nbformat.writes(source)))
    submitted.cells[2].source, submitted.cells[4].source = "pe = 1", "rope = 1"
    submitted.cells[2].metadata["nbgrader"] = "not a dict"
    submitted.cells[4].metadata["nbgrader"]["grade_id"] = ["apply_rope"]
    submitted.cells.append(nbformat.v4.new_code_cell("extra = 1", metadata={"nbgrader": None}))
    program, tests = _program(source, submitted)
    assert dict(program) == {1: source.cells[1].source, 2: "", 4: ""}
    assert [t.metadata.nbgrader.grade_id for t in tests] == [
        "test_sinusoidal_pe", "test_apply_rope", "test_apply_rope_speed"
    ]  # fmt: skip


# A child without the sandbox (quick to start): what these tests need is the protocol, not the isolation.
PLAIN_PYTHON = [sys.executable, "-I"]


@contextmanager
def plain_child(code: str, **options):
    """A child without the sandbox, running ``code`` as its one answer cell; closed afterwards."""
    child = Child(PLAIN_PYTHON, [(0, code)], python_path=[str(cli.REPO)], **options)
    try:
        yield child
    finally:
        child.close()


FIND_PIPE = """
import fcntl, os
import posref.grading.remote as remote
def pipe_to_grader():
    for fd in range(3, 64):
        try:
            if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY:
                return fd
        except OSError:
            pass
"""


def test_results_and_messages_the_grader_must_not_trust_fail_that_call_only():
    """Student code can replace the child's own conversion (``remote._plain``) and send anything ``torch.save``
    writes. Each result below used to reach the checkers: a list of shared references whose repr has 2**45
    items (the grader hung building it), a sparse or nested tensor or an integer too big for a float (the
    comparison raised in the grader), a compressed frame (a zip bomb); an error message of a megabyte with
    terminal escapes went into the record, the CSV and the instructor's terminal."""
    code = (
        FIND_PIPE
        + """
import io, zipfile, torch
def raw(value, real=remote._plain):  # what a patched child sends: these as they are, the rest as usual
    sparse_or_nested = isinstance(value, torch.Tensor) and (value.is_nested or value.layout != torch.strided)
    return value if isinstance(value, (list, int)) or sparse_or_nested else real(value)
remote._plain = raw
def shared():
    a = [1.0]
    for _ in range(45):
        a = [a, a]
    return a
def sparse():
    return torch.ones(3, 4).to_sparse()
def nested():
    return torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])
def huge():
    return 10**400
def wide():
    return [0.0] * (remote.MAX_ITEMS + 1)
def meta():
    return torch.empty(3, device="meta")
def fine():
    import numpy
    return (torch.ones(2), 3, numpy.float64(0.5), "text", None, [True])
def shout():
    raise ValueError("\x1b[2J\x1b]0;owned\x07" + "A" * 10**6)
def bomb():
    buf = io.BytesIO()
    torch.save({"ok": torch.zeros(10**6)}, buf)
    entries, out = zipfile.ZipFile(io.BytesIO(buf.getvalue())), io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for info in entries.infolist():
            z.writestr(info.filename, entries.read(info.filename), compress_type=zipfile.ZIP_DEFLATED)
    data = out.getvalue()
    os.write(pipe_to_grader(), remote._HEADER.pack(len(data)) + data)
    import time; time.sleep(60)
"""
    )
    with plain_child(code, call_timeout=30) as child:
        started = time.monotonic()
        for name, expected in [
            ("shared", "more than 10000 items"),
            ("sparse", "layout torch.sparse_coo"),
            ("nested", "nested tensor"),
            ("huge", "does not fit in 64 bits"),
            ("wide", "more than 10000 items"),
            ("meta", "meta device"),
        ]:
            with pytest.raises(StudentError, match=expected):
                child.call(name, (), {})
        assert time.monotonic() - started < 10
        assert child.call("fine", (), {})[1:] == (3, 0.5, "text", None, [True])
        with pytest.raises(StudentError) as raised:
            child.call("shout", (), {})
        message = str(raised.value)
        assert len(message) < MAX_TEXT + 100 and "\x1b" not in message and "\x07" not in message
        assert message.endswith(" [...]")  # the reader is told the text was cut
        with pytest.raises(ChildFailed, match="compressed"):
            child.call("bomb", (), {})


def test_a_frame_announced_larger_than_max_frame_is_refused_before_it_is_read():
    # the grader would otherwise wait for (and buffer) whatever length the child's header claims
    code = FIND_PIPE + (
        "import time\n"
        "def giant():\n"
        "    os.write(pipe_to_grader(), remote._HEADER.pack(remote.MAX_FRAME + 1))\n"
        "    time.sleep(60)\n"
    )
    with plain_child(code, call_timeout=30) as child:
        started = time.monotonic()
        with pytest.raises(ChildFailed, match=r"sent \d+ bytes \(more than"):
            child.call("giant", (), {})
        assert time.monotonic() - started < 10 and not child.alive


def test_a_function_that_changes_its_input_in_place_is_seen_doing_so_through_the_child():
    """The child works on copies of the grader's tensors: an in-place change used to stay there, so a function
    that overwrote its input passed the score of record while failing the same check in the notebook."""
    from posref import grading

    code = FIND_PIPE + (
        "import torch, posref\n"
        "def apply_rope(x, cos, sin, layout='half'):\n"
        "    return x.copy_(posref.apply_rope(x, cos, sin, layout=layout))\n"
        "def reshapes(x):\n"
        "    return x.unsqueeze_(0)\n"
        "def lies(x):\n"
        "    os.write(pipe_to_grader(), remote._encode({'ok': 1.0, 'changed': {7: torch.ones(1)}}))\n"
    )
    with plain_child(code, call_timeout=30) as child:
        with pytest.raises(grading.CheckFailed, match="the output is right, but the call changed argument 1"):
            grading.check_apply_rope(RemoteFunction(child, "apply_rope"), hidden=True, device="cpu")
        x = torch.zeros(3)
        with pytest.raises(StudentError, match="changed the shape or dtype of argument 1 in place") as raised:
            child.call("reshapes", (x,), {})
        assert raised.value.reported_as.startswith("changed") and torch.equal(x, torch.zeros(3))
        with pytest.raises(StudentError, match="arguments the grader never sent"):
            child.call("lies", (x,), {})


def test_a_malformed_ready_message_from_the_last_cell_is_refused():
    # a cell can write to the grader's pipe: a "ready" of its own must hold names and cell errors of the right types
    fake = (
        FIND_PIPE
        + "os.write(pipe_to_grader(), remote._encode({'event': 'ready', 'names': [], 'errors': {0: 5}}))\n"
    )
    with pytest.raises(ChildFailed, match="malformed message"):
        Child(PLAIN_PYTHON, [(0, fake)], python_path=[str(cli.REPO)])


@needs_bwrap
def test_the_sandbox_sets_every_limit_drops_root_and_mounts_the_code_read_only(tmp_path):
    # the fork bomb, memory bomb and others of the demo course exercise these only in the slow tests
    sandbox = Sandbox()
    work = sandbox.scratch(None, tmp_path)
    probe = """
import os, resource, sys
def limits():
    names = ("RLIMIT_CPU", "RLIMIT_AS", "RLIMIT_NPROC", "RLIMIT_FSIZE", "RLIMIT_CORE")
    got = [resource.getrlimit(getattr(resource, n))[0] for n in names]
    got += [os.statvfs(p).f_blocks * os.statvfs(p).f_frsize for p in ("/tmp", "/dev/shm")] + [os.getuid()]
    # read-only mounts, not just files the unprivileged uid cannot write (as another user it owns them)
    return got + [bool(os.statvfs(p).f_flag & os.ST_RDONLY) for p in ("/usr", sys.prefix, "/opt/posref/posref",
                                                                     "/opt/posref/data")]
"""
    command, cwd, path = sandbox.python_command(work)
    child = Child(
        command, [(0, probe)], env=sandbox.env(), cwd=cwd, python_path=path, preexec_fn=sandbox.set_limits
    )
    try:
        got = child.call("limits", (), {})
    finally:
        child.close()
    rlimits, (tmp, shm, uid), read_only = got[:5], got[5:8], got[8:]
    lim = sandbox.limits
    assert rlimits == [lim.cpu_seconds, lim.address_space, lim.processes, lim.file_size, 0]
    assert tmp == shm == lim.tmp_size
    assert uid != 0 if os.geteuid() == 0 else uid == os.getuid()
    assert read_only == [True] * 4


def test_the_scratch_folder_is_a_copy_of_the_submission_without_its_notebooks(tmp_path):
    submission = tmp_path / "submission"
    submission.mkdir()
    (submission / "01_order.ipynb").write_text("{}")
    (submission / "notes.txt").write_text("mine")
    work = Sandbox().scratch(submission, tmp_path / "scratch")
    assert sorted(p.name for p in work.iterdir()) == ["notes.txt"]
    (work / "notes.txt").write_text("changed")
    assert (submission / "notes.txt").read_text() == "mine"


def test_a_child_that_cannot_start_leaves_no_pipe_or_process_behind():
    # a grading worker goes through hundreds of students: each failed start used to keep two pipes open
    def open_fds():
        return len(os.listdir("/proc/self/fd"))

    before = open_fds()
    for _ in range(3):
        with pytest.raises(ChildFailed, match="code 3 while starting"):
            Child(["sh", "-c", "exit 3"], [(0, "x = 1")])
        with pytest.raises(FileNotFoundError):
            Child(["/nonexistent/python"], [(0, "x = 1")])
    assert open_fds() == before


def test_a_slow_start_has_its_own_time_not_a_cells():
    """Starting Python and importing torch in the sandbox took more than the demo's 15 s cell timeout on a loaded
    machine, and a child that fails while starting leaves the whole notebook "could not grade"."""
    slow_python = ["sh", "-c", 'sleep 2; exec "$0" "$@"', *PLAIN_PYTHON]
    child = Child(slow_python, [(0, "x = 1")], python_path=[str(cli.REPO)], cell_timeout=1, start_timeout=30)
    child.close()
    with pytest.raises(ChildFailed, match=r"no answer within 1 s \(a slow start\) while starting"):
        Child(slow_python, [(0, "x = 1")], python_path=[str(cli.REPO)], cell_timeout=30, start_timeout=1)


def test_announcements_faked_by_a_cell_neither_restart_its_clock_nor_blame_another_cell():
    """A cell that writes "cell 0 starts" to the grader's pipe every 0.2 s used to restart cell 0's timeout each
    time (forever, had it kept going: here 8 s under a 6 s timeout); now the announcement out of order fails
    that cell at once."""
    code = (
        FIND_PIPE
        + """
import time
for _ in range(40):
    os.write(pipe_to_grader(), remote._encode({"event": "cell", "index": 0}))
    time.sleep(0.2)
"""
    )
    started = time.monotonic()
    with pytest.raises(ChildFailed, match="out of order while running cell 0") as failure:
        Child(PLAIN_PYTHON, [(0, code), (1, "x = 1")], python_path=[str(cli.REPO)], cell_timeout=6)
    assert failure.value.cell == 0
    assert time.monotonic() - started < 6


def test_the_notebook_budget_bounds_all_calls_together(tmp_path):
    """Each call of a function that sleeps 1 s is within its timeout (10 s), but a notebook's calls share one
    budget: 33 cases of such a function used to take 33 s per check (and 60 s a case at the default timeout)."""
    code = "import time\ndef slow():\n    time.sleep(1)\n    return 1.0\n"
    with plain_child(code, call_timeout=10) as child:
        child.deadline = time.monotonic() + 2.5
        started = time.monotonic()
        with pytest.raises(BudgetSpent):
            for _ in range(10):
                assert child.call("slow", (), {}) == 1.0
        assert time.monotonic() - started < 3.5
    children = _Children([], Sandbox(), tmp_path, [], timeout=10, budget=0)
    assert _run_check(children, "check_sinusoidal_pe", "sinusoidal_pe") == (
        "not checked: the time for grading this notebook (0 s) ran out"
    )


@needs_bwrap
def test_a_grader_fault_in_one_check_is_could_not_grade_and_a_raise_while_timed_fails_the_check(
    tmp_path, monkeypatch
):
    """An exception that is not a failed check (a fault of the grader's, or a student value it did not foresee)
    used to escape grade_notebook, so the student's whole record was lost and the gradebook kept what nbgrader
    wrote; a student's function that raised while being timed (outside the checker's cases) did the same."""
    import posref.grading as checkers

    source = cli.REPO / "autograder" / "demo" / "source" / "positions" / "positions.ipynb"
    submitted = tmp_path / "alice" / source.name
    submitted.parent.mkdir()
    shutil.copy(source, submitted)

    def broken_checker(fn, **kwargs):
        raise TypeError("a bug of the grader")

    def timed(fn, **kwargs):  # as a speed check does: calls outside first_difference
        fn("not", "a tensor")

    monkeypatch.setattr(checkers, "check_sinusoidal_pe", broken_checker)
    monkeypatch.setattr(checkers, "check_apply_rope_speed", timed)
    record = grade_notebook(source, submitted, sandbox=Sandbox(), scratch_base=tmp_path / "scratch")
    assert record.status == "could not grade" and record.score is None
    assert "grader error while checking test_sinusoidal_pe: TypeError: a bug of the grader" in record.reason
    speed = {c.grade_id: c for c in record.cells}["test_apply_rope_speed"]
    assert speed.message.startswith("apply_rope raised") and speed.score == 0


def test_export_keeps_formulas_out_of_spreadsheets_and_escapes_out_of_the_terminal(
    tmp_path, monkeypatch, capsys, empty_gradebook
):
    monkeypatch.setenv("POSREF_COURSE_DIR", str(tmp_path))
    _gradebook(tmp_path, empty_gradebook).close()
    records = tmp_path / "records" / "01_order"
    records.mkdir(parents=True)
    nb = {"notebook": "a1.ipynb", "score": 1.0, "max_score": 2.0, "status": "graded", "reason": "",
          "problems": ["cell 2 raised \x1b[2Jfake"]}  # fmt: skip
    for student in ['=HYPERLINK("http://x","y")', "@SUM(A1)", "bob"]:
        (records / f"{len(student)}.json").write_text(json.dumps({"student": student, "notebooks": [nb]}))
    cli.print_table(cli.export("01_order", tmp_path / "new folder" / "out.csv"))  # a folder made for it
    with open(tmp_path / "new folder" / "out.csv") as f:
        students = sorted(row["student"] for row in csv.DictReader(f))
    assert students == ['\'=HYPERLINK("http://x","y")', "'@SUM(A1)", "bob"]
    assert "\x1b" not in capsys.readouterr().out


def test_feedback_pages_sanitise_what_the_student_wrote_and_keep_the_instructors_cells(tmp_path, monkeypatch):
    """A student's markdown cell with `<script>` or `onerror=` went verbatim into the feedback page (nbgrader's
    feedback template ignores HTMLExporter.sanitize_html)."""
    import nbformat
    from traitlets.config.loader import PyFileConfigLoader

    monkeypatch.setenv("POSREF_COURSE_DIR", str(tmp_path))
    config = PyFileConfigLoader(str(cli.CONFIG)).load_config()
    [sanitise] = [
        p
        for p in config.GenerateFeedback.preprocessors
        if getattr(p, "__name__", "") == "StudentCellsSanitized"
    ]
    locked = {"nbgrader": {"grade_id": "intro", "locked": True}}
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("Positions $i < j$ <b>matter</b>", metadata=locked),
        nbformat.v4.new_markdown_cell("mine <script>alert(1)</script><img src=x onerror=alert(2)>"),
        nbformat.v4.new_markdown_cell("<script>x()</script>", metadata={"nbgrader": {"locked": True}}),
    ])  # fmt: skip
    nb, _ = sanitise(config=config)(nb, {})
    assert nb.cells[0].source == "Positions $i < j$ <b>matter</b>"
    assert "<script" not in nb.cells[1].source and "<img" not in nb.cells[1].source
    assert "<script" not in nb.cells[2].source  # locked but not a cell of the source notebook


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
        assert row["status"] == "graded", f"{name}: {row['status']}: {row['reason']}"
        assert float(row["score"]) == expected, f"{name}: {row['score']}: {row['reason']}"


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
def test_until_the_score_of_record_is_written_the_gradebook_holds_no_score(demo_course, monkeypatch):
    """nbgrader's autograde (notebook not executed) gave every test cell without error output its full points,
    and they stayed in the gradebook when grading stopped before the score of record was written."""
    from nbgrader.api import Gradebook

    course, _ = demo_course
    monkeypatch.setenv("POSREF_COURSE_DIR", str(course))
    monkeypatch.setenv("POSREF_SOURCE_DIR", "autograder/demo/source")
    monkeypatch.setenv("POSREF_RELEASE_DIR", str(course / "release"))
    monkeypatch.setattr(cli, "_API", None)
    try:
        assert cli._nbgrader_api().autograde("positions", "different", force=True, create=True)["success"]
    finally:
        cli._API = None
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        grades = gb.find_submission_notebook("positions", "positions", "different").grades
        assert grades and all(g.auto_score is None and g.needs_manual_grade for g in grades)


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


def _archive(tmp_path: Path, files: list[str], fmt: str = "zip") -> Path:
    """An archive of empty notebooks (and other files) at these paths."""
    folder = tmp_path / "archive-content"
    shutil.rmtree(folder, ignore_errors=True)
    for name in files:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("{}")
    return Path(shutil.make_archive(str(tmp_path / "subs"), fmt, folder))


def _submitted(course: Path) -> list[str]:
    return sorted(str(p.relative_to(course / "submitted")) for p in (course / "submitted").rglob("*.ipynb"))


def test_import_finds_the_class_however_the_archive_is_laid_out(tmp_path, monkeypatch, capsys):
    """An archive of one student (a late submission) was read as a class whose student is the assignment folder:
    `submitted/02_absolute/02_absolute/...`, or nothing imported with 'imported: 02_absolute'."""
    course = tmp_path / "course"
    monkeypatch.setenv("POSREF_COURSE_DIR", str(course))
    nb = "02_absolute/02_absolute.ipynb"
    for files, assignment in [
        ([f"carol/{nb}"], None),  # one student
        ([f"carol/{nb}"], "02_absolute"),
        (["carol/02_absolute.ipynb"], "02_absolute"),  # with --assignment: in the student folder
        ([f"class/carol/{nb}", "class/notes/todo.ipynb", f"__MACOSX/class/carol/{nb}"], None),  # a Mac's zip
    ]:
        shutil.rmtree(course, ignore_errors=True)
        assert cli.import_submissions(_archive(tmp_path, files), assignment) == ["carol"], files
        assert _submitted(course) == [f"carol/{nb}"], files
    assert "skipped, no assignment folder inside: notes" in capsys.readouterr().err
    # both of a student's assignments at once; a student id twice, in different case, is pointed out
    files = [f"alice/{nb}", "alice/04_rope/04_rope.ipynb", f"Alice/{nb}", f"bob/{nb}"]
    assert cli.import_submissions(_archive(tmp_path, files, "gztar")) == ["Alice", "alice", "bob"]
    assert _submitted(course) == [
        f"Alice/{nb}", f"alice/{nb}", "alice/04_rope/04_rope.ipynb", f"bob/{nb}", f"carol/{nb}"
    ]  # fmt: skip
    assert "Alice and alice differ only in case" in capsys.readouterr().err
    # a re-submission replaces the earlier one, files and all
    (course / "submitted" / "bob" / "02_absolute" / "old.txt").write_text("")
    cli.import_submissions(_archive(tmp_path, [f"bob/{nb}"]))
    assert not (course / "submitted" / "bob" / "02_absolute" / "old.txt").exists()


@pytest.mark.parametrize(
    "what, message",
    [
        ("flat", "no student folders in"),  # notebooks with no student folder
        ("not an archive", "cannot unpack"),
        ("missing", "does not exist"),
        ("misspelt assignment", "no assignment '02_absolut'"),
    ],
)
def test_import_says_what_is_wrong_with_what_it_was_given(tmp_path, monkeypatch, what, message):
    monkeypatch.setenv("POSREF_COURSE_DIR", str(tmp_path / "course"))
    path, assignment = _archive(tmp_path, ["02_absolute.ipynb"]), None
    if what == "not an archive":
        path = path.with_suffix(".rar")
        path.write_bytes(b"Rar!")
    elif what == "missing":
        path = tmp_path / "nothing.zip"
    elif what == "misspelt assignment":
        assignment = "02_absolut"
    with pytest.raises(SystemExit, match=re.escape(message)):
        cli.import_submissions(path, assignment)
    assert not (tmp_path / "course" / "submitted").exists()


@pytest.fixture(scope="module")
def empty_gradebook(tmp_path_factory) -> Path:
    """An empty nbgrader gradebook, made once: nbgrader takes seconds to make one (it runs alembic)."""
    from nbgrader.api import Gradebook

    path = tmp_path_factory.mktemp("gradebook") / "gradebook.db"
    with Gradebook(f"sqlite:///{path}"):
        pass
    return path


def _gradebook(course: Path, empty: Path):
    from nbgrader.api import Gradebook

    if not (course / "gradebook.db").exists():
        course.mkdir(parents=True, exist_ok=True)
        shutil.copy(empty, course / "gradebook.db")
    return Gradebook(f"sqlite:///{course / 'gradebook.db'}")


def test_release_and_autograde_refuse_a_wrong_name_an_unreleased_assignment_and_a_missing_student(
    tmp_path, monkeypatch, empty_gradebook, capsys
):
    """A misspelt assignment graded nobody without a word, and `release` added the misspelt name to the gradebook;
    before release nbgrader could not take the submissions and the scores went to the record only; a misspelt
    --student was graded as a phantom student 'could not grade' (a record, a CSV row); with nothing imported the
    grader failed with a traceback."""
    course = tmp_path / "course"
    monkeypatch.setenv("POSREF_COURSE_DIR", str(course))
    with pytest.raises(SystemExit, match="no assignment '02_absolut' in .*02_absolute, 03_relative"):
        cli.release("02_absolut")
    with pytest.raises(SystemExit, match="no assignment '02_absolut'"):
        cli.autograde("02_absolut")
    with pytest.raises(
        SystemExit
    ):  # ProcessPoolExecutor's "max_workers must be greater than 0", with a traceback
        cli.main(["autograde", "02_absolute", "--workers", "0"])
    assert "a number of workers is a whole number from 1, not '0'" in capsys.readouterr().err
    _gradebook(course, empty_gradebook).close()
    with pytest.raises(SystemExit, match=re.escape("run `python -m autograder release 02_absolute` first")):
        cli.autograde("02_absolute")
    with _gradebook(
        course, empty_gradebook
    ) as gb:  # what release leaves in the gradebook (without nbgrader's seconds)
        gb.add_assignment("02_absolute")
        gb.add_notebook("02_absolute", "02_absolute")
    with pytest.raises(SystemExit, match="no submissions of 02_absolute in .*import them first"):
        cli.autograde("02_absolute")
    (course / "submitted" / "alice" / "02_absolute").mkdir(parents=True)
    with pytest.raises(SystemExit, match=r"no submission of 02_absolute for Alice \(submitted: alice\)"):
        cli.autograde("02_absolute", students=["Alice"])
    assert not (course / "records").exists()


def test_a_student_whose_grading_failed_is_recorded_so_not_left_with_the_previous_record(
    tmp_path, monkeypatch, empty_gradebook
):
    """A worker that failed (a gradebook locked too long, a worker killed) left no record: export then showed the
    student's previous score, or no row at all."""
    from concurrent.futures import ThreadPoolExecutor

    course = tmp_path / "course"
    monkeypatch.setenv("POSREF_COURSE_DIR", str(course))
    with _gradebook(course, empty_gradebook) as gb:
        gb.add_assignment("02_absolute")
        gb.add_notebook("02_absolute", "02_absolute")
    (course / "submitted" / "alice" / "02_absolute").mkdir(parents=True)
    earlier = course / "records" / "02_absolute" / "alice.json"
    earlier.parent.mkdir(parents=True)
    earlier.write_text(
        json.dumps({"student": "alice", "assignment": "02_absolute", "notebooks": [{"score": 6}]})
    )

    def fails(*args):
        raise RuntimeError("the worker died")

    monkeypatch.setattr(cli, "grade_student", fails)
    monkeypatch.setattr(cli, "ProcessPoolExecutor", lambda max_workers, **_: ThreadPoolExecutor(max_workers))
    (result,) = cli.autograde("02_absolute", workers=1)
    assert result["error"] == "RuntimeError('the worker died')"
    assert json.loads(earlier.read_text()) == result


def test_export_has_a_row_for_every_student_and_no_score_for_a_submission_graded_before_it_changed(
    tmp_path, monkeypatch, empty_gradebook
):
    """A student who did not submit, or whose submission was imported but not graded, had no row at all; one
    imported again after grading kept the score of the submission it replaced; a misspelt assignment wrote an
    empty CSV."""
    course = tmp_path / "course"
    monkeypatch.setenv("POSREF_COURSE_DIR", str(course))
    with pytest.raises(SystemExit, match="no assignment '02_absolut'"):
        cli.export("02_absolut")
    with _gradebook(course, empty_gradebook) as gb:
        gb.add_student("dave")  # on the roster, submitted nothing
    records = course / "records" / "02_absolute"
    records.mkdir(parents=True)
    cells = [{"grade_id": "t", "points": 6.0, "score": 6.0, "message": "passed"}]
    graded = {"notebook": "02_absolute.ipynb", "status": "graded", "reason": "", "cells": cells, "problems": [],
              "sandbox": "bubblewrap", "score": 6.0, "max_score": 6.0}  # fmt: skip
    for student in ("alice", "bob", "carol"):
        folder = course / "submitted" / student / "02_absolute"
        folder.mkdir(parents=True)
        (folder / "02_absolute.ipynb").write_text("{}")
        if student != "carol":  # carol: imported, not graded yet
            record = {"student": student, "assignment": "02_absolute", "submission": cli.fingerprint(folder),
                      "notebooks": [graded]}  # fmt: skip
            (records / f"{student}.json").write_text(json.dumps(record))
    (course / "submitted" / "bob" / "02_absolute" / "02_absolute.ipynb").write_text('{"cells": []}')  # again
    crashed = {
        "student": "erin",
        "assignment": "02_absolute",
        "error": "BrokenProcessPool()",
        "notebooks": [],
    }
    (records / "erin.json").write_text(json.dumps(crashed))
    rows = {row["student"]: row for row in cli.export("02_absolute")}
    assert sorted(rows) == ["alice", "bob", "carol", "dave", "erin"]
    assert (rows["alice"]["score"], rows["alice"]["status"]) == ("6", "graded")
    for student, status, reason in [
        ("bob", "not graded", "imported again after it was graded"),
        ("carol", "not graded", "imported, not autograded yet"),
        ("dave", "not submitted", ""),
        ("erin", "could not grade", "grader error: BrokenProcessPool()"),
    ]:
        assert rows[student]["score"] == "" and rows[student]["status"] == status, rows[student]
        assert rows[student]["reason"].startswith(reason), rows[student]
    assert rows["dave"]["max_score"] == "6" and rows["dave"]["notebook"] == "02_absolute.ipynb"


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

    class NbgraderFails:
        def autograde(self, *args, **kwargs):
            return {"success": False}

    def not_graded(*args, **kwargs):
        raise AssertionError("the sandbox must not start for a missing notebook")

    monkeypatch.setattr(cli, "_API", NbgraderFails())
    monkeypatch.setattr(Sandbox, "scratch", not_graded)
    out = cli.grade_student("02_absolute", "grace", cell_timeout=1)
    assert not old_page.exists()
    (nb,) = out["notebooks"]
    assert nb["status"] == "could not grade" and nb["score"] is None
    assert nb["reason"] == (
        "no 02_absolute.ipynb in the submission (it holds 02_absolute (1).ipynb: rename it, then grade this "
        "student again)"
    )
    assert out["submission"] == cli.fingerprint(submission)
    assert json.loads((course / "records" / "02_absolute" / "grace.json").read_text()) == out


FORMGRADER_AUTOGRADE = """
import json, shutil, sys
from pathlib import Path
from nbgrader.apps import NbGraderAPI
from nbgrader.coursedir import CourseDirectory
from traitlets.config.loader import PyFileConfigLoader
config = PyFileConfigLoader(sys.argv[1]).load_config()
api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
assert api.generate_assignment("01_order", force=True)["success"]
submitted = Path(sys.argv[2]) / "submitted" / "alice" / "01_order"
shutil.copytree(Path("notebooks") / "01_order", submitted)
result = api.autograde("01_order", "alice", force=True, create=True)
print(json.dumps({"success": result["success"], "text": result.get("error", "") + result.get("log", "")}))
"""


@pytest.mark.slow
def test_the_formgraders_autograde_button_is_refused_unless_allowed(tmp_path):
    """The formgrader's button calls nbgrader's API, not its command line: its Execute step refuses to run
    submissions unsandboxed; allowed knowingly, nbgrader grades as usual."""
    from autograder.cli import CONFIG, REPO

    env = {k: v for k, v in os.environ.items() if k != "POSREF_ALLOW_PLAIN_AUTOGRADE"}
    env.update(POSREF_COURSE_DIR=str(tmp_path / "course"), POSREF_RELEASE_DIR=str(tmp_path / "release"))
    for allowed in (False, True):
        if allowed:
            env["POSREF_ALLOW_PLAIN_AUTOGRADE"] = "1"
        ran = subprocess.run(
            [sys.executable, "-c", FORMGRADER_AUTOGRADE, str(CONFIG), str(tmp_path / "course")],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert ran.returncode == 0, ran.stderr[-3000:]
        result = json.loads(ran.stdout.strip().splitlines()[-1])
        assert result["success"] is allowed, result["text"][-3000:]
        assert ("python -m autograder autograde" in result["text"]) is not allowed, result["text"][-3000:]
        shutil.rmtree(tmp_path / "course")


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


@pytest.mark.filterwarnings("ignore:Object of type <Submitted")  # nbgrader's own session bookkeeping
def test_write_scores_leaves_a_notebook_that_could_not_be_graded_without_a_score(
    tmp_path, monkeypatch, empty_gradebook
):
    from autograder.gradebook import write_scores
    from autograder.record import CellResult, Record

    course = tmp_path / "course"
    monkeypatch.setenv("POSREF_COURSE_DIR", str(course))
    with _gradebook(course, empty_gradebook) as gb:
        gb.add_assignment("a")
        gb.add_notebook("nb", "a")
        gb.add_grade_cell("cell1", "nb", "a", max_score=2, cell_type="code")
        gb.add_student("s")
        gb.add_submission("a", "s")

    def grade():
        with _gradebook(course, empty_gradebook) as gb:
            (g,) = gb.find_submission_notebook("nb", "a", "s").grades
            return g.auto_score, g.needs_manual_grade

    cells = [CellResult("cell1", 2.0, 0.0)]
    write_scores("a", "s", "nb", Record("nb", "could not grade", "broken", cells), tmp_path / "none.ipynb")
    assert grade() == (None, True)  # never a silent 0
    cells = [CellResult("cell1", 2.0, 2.0)]
    write_scores("a", "s", "nb", Record("nb", "graded", cells=cells), tmp_path / "none.ipynb")
    assert grade() == (2.0, False)


def test_a_cell_that_kills_the_child_is_left_out_and_the_rest_still_runs(tmp_path):
    sandbox = Sandbox()
    problems = []
    program = [(0, "x = 1"), (1, "import os; os._exit(3)"), (2, "def f():\n    return float(x)")]
    children = _Children(program, sandbox, sandbox.scratch(None, tmp_path), problems, timeout=30, budget=120)
    try:
        child = children.get()
        assert "f" in child.names and RemoteFunction(child, "f")() == 1.0
    finally:
        children.close()
    assert problems == ["cell 1 was left out: the grading process exited with code 3 while running cell 1"]


def test_the_notebook_budget_bounds_the_answer_cells_too(tmp_path):
    sandbox = Sandbox()
    program = [(0, "while True:\n    pass")]
    children = _Children(program, sandbox, sandbox.scratch(None, tmp_path), [], timeout=30, budget=4)
    started = time.monotonic()
    try:
        with pytest.raises(BudgetSpent):
            children.get()
    finally:
        children.close()
    assert time.monotonic() - started < 15


def test_a_check_of_a_function_the_answer_cells_do_not_define_says_so(tmp_path):
    sandbox = Sandbox()
    children = _Children([(0, "x = 1")], sandbox, sandbox.scratch(None, tmp_path), [], timeout=30, budget=120)
    try:
        message = _run_check(children, "check_sinusoidal_pe", "sinusoidal_pe")
    finally:
        children.close()
    assert (
        message == "sinusoidal_pe is not defined: the cell that defines it did not run or does not define it"
    )


def test_checks_run_hidden_and_speed_checks_against_a_reference_in_a_child_like_the_students(
    tmp_path, monkeypatch
):
    # visible cases are public (a submission could hard-code them); a speed check timed against posref in the
    # grader's own process would make the student's function pay the pipe on every call
    import posref.grading as checkers

    seen = {}
    for name in ("check_sinusoidal_pe", "check_apply_rope_speed"):
        monkeypatch.setattr(checkers, name, lambda fn, name=name, **kw: seen.setdefault(name, (fn, kw)))
    sandbox = Sandbox()
    program = [(0, "from posref import apply_rope, sinusoidal_pe")]
    children = _Children(program, sandbox, sandbox.scratch(None, tmp_path), [], timeout=30, budget=120)
    try:
        assert _run_check(children, "check_sinusoidal_pe", "sinusoidal_pe") == ""
        assert seen["check_sinusoidal_pe"][1] == {"hidden": True, "device": "cpu"}
        assert _run_check(children, "check_apply_rope_speed", "apply_rope") == ""
        student, kwargs = seen["check_apply_rope_speed"]
        reference = kwargs["reference"]
        assert isinstance(reference, RemoteFunction) and reference.__name__ == "apply_rope"
        assert student.child is children.student and reference.child is not children.student
    finally:
        children.close()
