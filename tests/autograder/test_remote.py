"""The protocol between the grader and a child (posref/grading/child/remote.py): what the grader refuses to trust.

The children here run without the sandbox (quick to start): what these tests need is the protocol."""

from __future__ import annotations

import linecache
import os

import pytest
import torch
from course_helpers import FIND_PIPE, PLAIN_PYTHON, plain_child

from autograder.course import REPO
from posref.grading import CheckFailed
from posref.grading.child.plain_data import MAX_TEXT
from posref.grading.child.remote import Child, ChildFailed, RemoteFunction
from posref.grading.report import StudentError


def test_results_and_messages_the_grader_must_not_trust_fail_that_call_only():
    """Student code can replace the child's own conversion (``child_end.plain``) and send anything ``torch.save``
    writes. Each result below used to reach the checkers: a list of shared references whose repr has 2**45
    items (the grader hung building it), a sparse or nested tensor or an integer too big for a float (the
    comparison raised in the grader), a compressed frame (a zip bomb); an error message of a megabyte with
    terminal escapes went into the record, the CSV and the instructor's terminal."""
    code = (
        FIND_PIPE
        + """
import io, zipfile, torch
def raw(value, real=child_end.plain):  # what a patched child sends: these as they are, the rest as usual
    sparse_or_nested = isinstance(value, torch.Tensor) and (value.is_nested or value.layout != torch.strided)
    return value if isinstance(value, (list, int)) or sparse_or_nested else real(value)
child_end.plain = raw
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
    from posref.grading.child.plain_data import MAX_ITEMS
    return [0.0] * (MAX_ITEMS + 1)
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
    os.write(pipe_to_grader(), framing.HEADER.pack(len(data)) + data)
    import time; time.sleep(600)
"""
    )
    # each reply below is refused as soon as it is read; waiting for the child instead would take 120 s a call
    with plain_child(code, call_timeout=120) as child:
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
        "    os.write(pipe_to_grader(), framing.HEADER.pack(framing.MAX_FRAME + 1))\n"
        "    time.sleep(600)\n"
    )
    # refused at the header: reading the announced bytes would wait for the call's timeout (120 s)
    with plain_child(code, call_timeout=120) as child:
        with pytest.raises(ChildFailed, match=r"sent \d+ bytes \(more than"):
            child.call("giant", (), {})
        assert not child.alive


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
        "    os.write(pipe_to_grader(), framing.encode({'ok': 1.0, 'changed': {7: torch.ones(1)}}))\n"
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
        + "os.write(pipe_to_grader(), framing.encode({'event': 'ready', 'names': [], 'errors': {0: 5}}))\n"
    )
    with pytest.raises(ChildFailed, match="malformed message"):
        Child(PLAIN_PYTHON, [(0, fake)], python_path=[str(REPO)])


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
    child = Child(slow_python, [(0, "x = 1")], python_path=[str(REPO)], cell_timeout=1, start_timeout=180)
    child.close()
    with pytest.raises(ChildFailed, match=r"no answer within 1 s \(a slow start\) while starting"):
        Child(slow_python, [(0, "x = 1")], python_path=[str(REPO)], cell_timeout=30, start_timeout=1)


def test_announcements_faked_by_a_cell_neither_restart_its_clock_nor_blame_another_cell():
    """A cell that writes "cell 0 starts" to the grader's pipe every 0.2 s used to restart cell 0's timeout each
    time (forever, had it kept going: here 8 s under a 6 s timeout); now the announcement out of order fails
    that cell at once."""
    code = (
        FIND_PIPE
        + """
import time
for _ in range(1200):
    os.write(pipe_to_grader(), framing.encode({"event": "cell", "index": 0}))
    time.sleep(0.2)
"""
    )
    with pytest.raises(ChildFailed, match="out of order while running cell 0") as failure:
        Child(PLAIN_PYTHON, [(0, code), (1, "x = 1")], python_path=[str(REPO)], cell_timeout=120)
    assert failure.value.cell == 0


BUG_IN_TORCH = """import torch
import torch.nn.functional as F
def alibi_bias(slopes, q_positions, k_positions):
    distance = (q_positions[:, None] - k_positions[None, :]).abs()
    return -slopes[:, None, None] * F.softmax(distance.to(slopes.dtype), dim=3)
"""


def test_a_failure_raised_inside_torch_names_the_students_line_and_no_path_of_the_grader():
    """A shape error raised inside torch read "(line 2142 of <grader's venv>/site-packages/torch/nn/
    functional.py)" in the score of record; the student's own line is what they can act on."""
    from posref.grading import check_alibi_bias

    def refused(message: str) -> None:
        for path in ("site-packages", "functional.py", "remote.py", "posref/", "/tmp/", str(REPO)):
            assert path not in message, (path, message)

    # the feedback layer: the cell as IPython compiles it (a file of the kernel's, its source in linecache)
    cell = "/tmp/ipykernel_4242/3141592653.py"
    linecache.cache[cell] = (len(BUG_IN_TORCH), None, BUG_IN_TORCH.splitlines(keepends=True), cell)
    namespace: dict = {}
    exec(compile(BUG_IN_TORCH, cell, "exec"), namespace)
    line = "line 5 of {}: `return -slopes[:, None, None] * F.softmax(distance.to(slopes.dtype), dim=3)`"
    with pytest.raises(CheckFailed) as failed:
        check_alibi_bias(namespace["alibi_bias"])
    assert "IndexError: Dimension out of range" in str(failed.value)
    assert line.format("your cell") in str(failed.value)
    refused(str(failed.value))
    # the score of record: the same cell, run as the source notebook's cell 7 in the child
    child = Child(PLAIN_PYTHON, [(7, BUG_IN_TORCH)], python_path=[str(REPO)], call_timeout=60)
    try:
        with pytest.raises(CheckFailed) as failed:
            check_alibi_bias(RemoteFunction(child, "alibi_bias"), hidden=True)
    finally:
        child.close()
    assert "IndexError: Dimension out of range" in str(failed.value)
    assert line.format("cell 7") in str(failed.value)
    refused(str(failed.value))


def test_what_a_child_reports_about_its_cells_is_bounded_and_only_for_cells_it_was_sent():
    """A child's "ready" message said 30,000 cells that do not exist raised a 2,000-character error each: a 60 MB
    record and CSV field. Errors for cells the child was never sent are not kept (only counted), names beyond
    ``MAX_NAMES`` or longer than ``MAX_NAME`` are not names the grader asks for, and an error is cut to MAX_TEXT."""
    from posref.grading.child.remote import MAX_NAME, MAX_NAMES

    code = """
import posref.grading.child.framing as framing
real = framing.encode
def loud(message):
    if isinstance(message, dict) and message.get("event") == "ready":
        errors = {i: "E" * 2000 for i in range(1, 30_001)} | {-5: "negative", 10**9: "far"} | message["errors"]
        names = message["names"] + ["n" * (MAX_NAME + 1)] + [f"f{i}" for i in range(MAX_NAMES + 10)]
        message = {**message, "errors": errors, "names": names}
    return real(message)
from posref.grading.child.remote import MAX_NAME, MAX_NAMES
framing.encode = loud
def double(x):
    return 2 * x
raise ValueError("A" * 10**6)
"""
    with plain_child(code) as child:
        assert set(child.cell_errors) == {0}  # the one cell it ran
        assert (
            child.cell_errors[0].startswith("ValueError: AAA") and len(child.cell_errors[0]) <= MAX_TEXT + 10
        )
        assert child.refused_errors == 30_002
        assert len(child.names) <= MAX_NAMES and all(len(n) <= MAX_NAME for n in child.names)
        assert "double" in child.names
        assert RemoteFunction(child, "double")(torch.ones(2)).tolist() == [2.0, 2.0]  # it still answers
