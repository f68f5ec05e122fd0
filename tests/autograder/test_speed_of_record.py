"""The speed check of the score of record: the classic slow solutions of every timed function fail it and the
vectorised ones pass (the implementations its budget was calibrated on), timed through the sandboxed children
exactly as ``grade_notebook`` times them (on a loaded machine too: the budget sits far from both kinds, and the
chained rounds keep the transport out of the ratio); slow solutions that
cheat earn nothing for speed, correct alternatives earn everything; a student's processes are stopped while the
reference is timed."""

from __future__ import annotations

import io
import math
import os
import time
from pathlib import Path

import pytest
import torch

from autograder.grading.record import _Children, _run_check, _timed_against_reference
from autograder.sandbox.sandbox import Sandbox
from posref.grading import CheckFailed
from posref.grading.cases import Draw
from posref.grading.child.remote import RemoteFunction
from posref.grading.speed import lab, timing
from posref.grading.speed.links import weights_at
from posref.grading.speed.timing import Chain, seal

pytestmark = pytest.mark.xdist_group("sandbox")  # children as Sandbox()'s default uid: see tests/conftest.py

HERE = Path(__file__).resolve().parent
IMPLS = [HERE.parent / "grading" / "student_impls_speed.py", HERE.parent / "grading" / "student_impls.py"]
ANSWERS = [*IMPLS, HERE / "speed_submissions.py"]


def _children_running(answers, tmp_path_factory):
    sandbox = Sandbox()
    scratch = sandbox.scratch(tmp_path_factory.mktemp("speed"))
    program = [(i, path.read_text()) for i, path in enumerate(answers)]
    return _Children(program, sandbox, scratch, [], timeout=120, budget=3600)


@pytest.fixture(scope="module")
def children(tmp_path_factory):
    """One child running ``tests/grading/student_impls.py`` and ``speed_submissions.py`` as its answer cells (the
    reference's child comes with it)."""
    kids = _children_running(ANSWERS, tmp_path_factory)
    yield kids
    kids.close()


@pytest.fixture(scope="module")
def shortcuts(tmp_path_factory):
    """A child of its own for ``speed_shortcuts.py`` and ``cpu_hiding.py``: ``speed_submissions.py`` leaves processes
    that burn the CPU whenever its function is idle, and a child is charged the CPU time of all its processes."""
    kids = _children_running([*IMPLS, HERE / "speed_shortcuts.py", HERE / "cpu_hiding.py"], tmp_path_factory)
    yield kids
    kids.close()


# slow solutions that no shape separates from the sane ones (their budget's ``measured`` says so): not in the battery
NOT_SEPARABLE = {("alibi_handler", "loop over queries")}


def _calibrated():
    """Every implementation the budgets were calibrated on (``posref.bench_budgets.CALIBRATED``), as ``(function, its speed
    checker, its name in the child, its label, "sane" or "slow")``: what the budgets' table lists."""
    from autograder import calibrate
    from posref import bench_budgets

    battery = []
    for function in bench_budgets.CALIBRATED:
        check, checker, _constant, impls = calibrate.speed_check(function)
        for i, (label, (kind, _fn)) in enumerate(bench_budgets.calibration_impls(function).items()):
            if (function, label) not in NOT_SEPARABLE:
                battery.append((check.name, checker, calibrate.child_name(impls, i), label, kind))
    return battery


CALIBRATED = _calibrated()


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory):
    """One child running the calibration's implementations (``autograder.calibrate.program``)."""
    from autograder import calibrate
    from posref import bench_budgets

    sandbox = Sandbox()
    scratch = sandbox.scratch(tmp_path_factory.mktemp("calibrated"))
    kids = _Children(
        calibrate.program(bench_budgets.CALIBRATED), sandbox, scratch, [], timeout=120, budget=3600
    )
    yield kids
    kids.close()


@pytest.mark.slow
@pytest.mark.parametrize(("function", "checker", "name", "label", "kind"), CALIBRATED,
                         ids=[f"{b[0]}: {b[3]}" for b in CALIBRATED])  # fmt: skip
def test_every_sane_solution_earns_its_speed_point_through_the_score_of_record_and_no_classic_slow_one_does(
    calibrated, function, checker, name, label, kind
):
    # the budgets' table, through the score of record: each budget sits 2x above the worst sane median and 3x below
    # the best slow one (budgets.propose_budget), so a verdict does not turn on a loaded machine's noise. Timed as
    # _run_check times it, without the rules' watch: the handlers' implementations subclass posref's handlers, which
    # 06's rules forbid in an answer (a speed verdict is what is tested here)
    try:
        _timed_against_reference(calibrated, checker, RemoteFunction(calibrated.get(), name), checked=True)
        message = ""
    except CheckFailed as failure:
        message = str(failure)
    if kind == "sane":
        assert message == "", f"{function} ({label}): {message}"
    else:
        assert message.startswith(f"{function} is too slow:"), f"{function} ({label}): {message}"


# (function, what it does, correctness message, speed message): "" is a pass, else how the message starts
BATTERY = [
    ("apply_rope_einsum", "a 2x2 rotation per pair with einsum", "", ""),
    ("apply_rope_float64_inside", "computes in float64, returns float32", "", ""),
    ("apply_rope_remembers", "a loop over positions that remembers answers by a fingerprint", "", "apply_rope is too slow"),
    ("apply_rope_then_uninitialised", "right for 6 calls of a shape, then torch.empty_like", "", "apply_rope gave a wrong result while being timed"),
    ("apply_rope_skips_chains", "a loop that returns its input when it is its own last output (too slow where its first call fills a round, wrong where it does not)", "", ("apply_rope gave a wrong result while being timed", "apply_rope is too slow")),
    ("apply_rope_claims_calls", "a loop; its child's protocol claims every call after making one", "", "apply_rope gave a wrong result while being timed"),
    ("apply_rope_burns_when_idle", "a loop; 4 processes burn the CPU whenever it is idle", "", "apply_rope is too slow"),
]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(("name", "does", "correct", "speed"), BATTERY, ids=[b[0] for b in BATTERY])
def test_each_submission_of_the_battery_earns_what_it_deserves(children, name, does, correct, speed):
    for check, expected in (("check_apply_rope", correct), ("check_apply_rope_speed", speed)):
        message = _run_check(children, check, name).message
        assert message.startswith(expected) and bool(message) == bool(expected), f"{name} ({does}): {message}"


# issue 26.1: (function, its correctness checker, its speed checker, what it does, the speed message, "" a pass).
# A shortcut that still calls its slow loop in every round is either over budget or wrong, by how much of a round
# its honest calls fill: no point either way.
NO_POINT = ("gave a wrong result while being timed", "is too slow")
ROUNDS_BATTERY = [
    ("ppl_last_calls", "check_per_position_loss", "check_per_position_loss_speed", "a loop over positions only near a round's end, the last output otherwise", NO_POINT),
    ("causal_mean_last_calls", "check_causal_mean", "check_causal_mean_speed", "a loop over positions only near a round's end, a copy of its input otherwise (the red team's 51x)", NO_POINT),
    ("causal_mean_every_other", "check_causal_mean", "check_causal_mean_speed", "a loop over positions every other call, the previous output between", NO_POINT),
    ("apply_rope_one_fixed_map", "check_apply_rope", "check_apply_rope_speed", "the first call's dense matrices for every call (the red team's 82x, a round as one map)", "apply_rope gave a wrong result while being timed"),
    ("apply_rope_many_threads", "check_apply_rope", "check_apply_rope_speed", "a dense matrix per position with torch.set_num_threads(16)", "apply_rope is too slow"),
]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "correct", "speed", "does", "expected"), ROUNDS_BATTERY, ids=[b[0] for b in ROUNDS_BATTERY]
)
def test_no_shortcut_through_a_round_earns_a_speed_point(shortcuts, name, correct, speed, does, expected):
    verdict = _run_check(shortcuts, correct, name).message
    assert verdict == "", f"{name} ({does}) is correct: only its speed is in question; {verdict}"
    message = _run_check(shortcuts, speed, name, checked=True).message
    fails = expected == NO_POINT and message.split(" ", 1)[-1].startswith(NO_POINT)
    assert fails or (message.startswith(expected) and bool(message) == bool(expected)), (
        f"{name} ({does}): {message}"
    )


THREADS = """
import threading, time
import torch

def burn_in_threads(v):
    # correct, and each call spends 3 x 20 ms of CPU in three threads at once (each thread's own clock)
    def spin():
        start = time.thread_time()
        while time.thread_time() - start < 0.02:
            pass
    threads = [threading.Thread(target=spin) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return v.cumsum(-2) / torch.arange(1, v.shape[-2] + 1)[:, None]
"""


@pytest.mark.slow
def test_threads_cannot_buy_speed_the_child_is_pinned_to_one_cpu_and_charged_its_cpu_time(tmp_path):
    sandbox = Sandbox()
    kids = _Children([(0, THREADS)], sandbox, sandbox.scratch(tmp_path), [], timeout=60, budget=120)
    child = kids.get()
    try:
        chain = seal(lab.causal_mean_chain(Draw(hidden=True, device="cpu"), (1, 2, 16, 4)))
        seconds, calls, _, _ = child.run_chain("burn_in_threads", chain, 4, math.inf)
        # three threads' 60 ms of CPU per call are charged in full, however many CPUs the machine has: a lower bound
        # that no load can break (a stall only adds time)
        assert calls == 4 and seconds >= 4 * 3 * 0.02
        cpus = {frozenset(os.sched_getaffinity(pid)) for pid in child.processes()}
        assert len(cpus) == 1 and len(next(iter(cpus))) == 1, f"not pinned to one CPU: {cpus}"
    finally:
        kids.close()


# issue 37.4: the slow loop computing in another process of the child, ended and reaped as the round ends: every one is
# charged the CPU it spends there
CPU_HIDING = [
    ("apply_rope_helper_reaped_by_the_last_call", "a helper process a thread keeps ready between rounds, killed and reaped by the call that finds the round over (the red team's 71-108x)"),
    ("apply_rope_relay_of_helpers", "helpers that fork their successor and end when a round is over, reaped by the sandbox's first process"),
]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(("name", "does"), CPU_HIDING, ids=[c[0] for c in CPU_HIDING])
def test_cpu_spent_in_another_process_of_the_child_is_charged_living_or_reaped(shortcuts, name, does):
    assert _run_check(shortcuts, "check_apply_rope", name).message == "", (
        f"{name} is correct: only its speed is in question"
    )
    verdict = _run_check(shortcuts, "check_apply_rope_speed", name, checked=True)
    message = verdict.message
    print(
        f"{name}: {message.splitlines()[0] if message else 'earned the speed point'}"
    )  # the ratio, for the record
    assert message.startswith("apply_rope is too slow"), f"{name} ({does}): {message}"
    assert str(verdict.cause) == "slow"


PROCESSES = """
import os, time
import torch

def _spin():
    start = time.process_time()
    while time.process_time() - start < 0.02:
        pass

def _mean(v):
    return v.cumsum(-2) / torch.arange(1, v.shape[-2] + 1)[:, None]

def burn_in_a_reaped_process(v):
    # correct, and each call spends 20 ms of CPU in a process it forks and reaps
    pid = os.fork()
    if pid == 0:
        _spin()
        os._exit(0)
    os.waitpid(pid, 0)
    return _mean(v)

def burn_in_an_orphan(v):
    # correct, and each call spends 20 ms of CPU in a grandchild, orphaned before it starts, that says when it is done
    done, said = os.pipe()
    if os.fork() == 0:
        if os.fork() == 0:
            _spin()
            os.write(said, b"!")
        os._exit(0)
    os.wait()
    os.read(done, 1)
    os.close(done), os.close(said)
    return _mean(v)
"""


@pytest.mark.parametrize("accounting", ["its cgroup", "its process tree"])
@pytest.mark.parametrize("name", ["burn_in_a_reaped_process", "burn_in_an_orphan"])
def test_a_round_is_charged_the_cpu_of_processes_that_ended_within_it(
    tmp_path, monkeypatch, name, accounting
):
    # a lower bound that no load can break (a stall only adds time): 4 calls, each 20 ms of CPU in another process;
    # charged through the child's CPU cgroup, and where there is none (an instructor's account) its process tree's
    sandbox = Sandbox()
    if accounting == "its process tree":
        monkeypatch.setattr(sandbox.cpu, "base", None)
    elif sandbox.cpu.problem is not None:
        pytest.skip(f"no CPU cgroup here: {sandbox.cpu.problem}")
    kids = _Children([(0, PROCESSES)], sandbox, sandbox.scratch(tmp_path), [], timeout=60, budget=120)
    child = kids.get()
    try:
        assert (child._cpu_clock is None) == (accounting == "its process tree")
        chain = seal(lab.causal_mean_chain(Draw(hidden=True, device="cpu"), (1, 2, 16, 4)))
        seconds, calls, _, _ = child.run_chain(name, chain, 4, math.inf)
        assert calls == 4 and seconds >= 4 * 0.02, seconds
    finally:
        kids.close()


def test_a_round_ends_measured_with_the_child_stopped_before_it_can_know_the_round_is_over(
    shortcuts, monkeypatch
):
    # the child learns that a round is over from the stop byte: by then the round has been measured, every process
    # of the child stopped, so nothing it does once it knows (reap a helper) changes what it is charged
    from posref.grading.child import rounds

    child, requests, readings = shortcuts.get(), [], []
    measure, lay_out = child.cpu_seconds, rounds.lay_out
    monkeypatch.setattr(rounds, "lay_out", lambda *a: (laid := lay_out(*a), requests.append(laid[0]))[0])

    def reading():
        stop = os.pread(child._shared, 1, requests[-1]["stop"])
        readings.append(({_state(pid) for pid in child.processes()}, stop))
        return measure()

    monkeypatch.setattr(child, "cpu_seconds", reading)
    chain = seal(lab.causal_mean_chain(Draw(hidden=True, device="cpu"), (1, 2, 16, 4)))
    seconds, calls, _, _ = child.run_chain("cm_cumsum", chain, timing.MAX_CALLS, 0.01)
    (_, ended) = readings  # the reading before the round starts, and the one that ends it
    assert ended == ({"T"}, b"\0") and calls >= 1 and seconds > 0, readings


def test_a_timed_request_tells_the_child_no_call_count(shortcuts, monkeypatch):
    # the red team's loop learned from the request how many calls were left; now the child learns only a bound that
    # is the same for every round, and the grader ends a round by a byte in the shared buffer when its time is up
    from posref.grading.child import framing

    sent = []
    child = shortcuts.get()
    monkeypatch.setattr(
        child, "_send_frame", lambda frame, send=child._send_frame: (sent.append(frame), send(frame))[1]
    )
    for _ in range(2):
        chain = seal(lab.causal_mean_chain(Draw(hidden=True, device="cpu"), (1, 2, 16, 4)))
        child.run_chain("cm_cumsum", chain, timing.MAX_CALLS, 0.01)
    requests = [torch.load(io.BytesIO(frame[framing.HEADER.size :]), weights_only=True) for frame in sent]
    assert [r["max_calls"] for r in requests] == [timing.MAX_CALLS] * 2
    assert not {"calls", "stop_after"} & set().union(*requests)


SPAWNS = """
import os, threading, time
def _wait():
    while True:
        time.sleep(0.01)
threading.Thread(target=_wait, daemon=True).start()
_started, _start = os.pipe()
for _ in range(2):
    if os.fork() == 0:  # a child, and a grandchild orphaned at once in a session of its own
        if os.fork() == 0:
            os.setsid()
            os.write(_start, b"!")
            _wait()
        _wait()
for _ in range(2):  # both grandchildren run in their sessions (a sleep: too short on a loaded machine)
    os.read(_started, 1)
"""


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def test_every_process_a_child_started_is_stopped_while_frozen_and_runs_again_after(tmp_path):
    sandbox = Sandbox()
    kids = _Children([(0, SPAWNS)], sandbox, sandbox.scratch(tmp_path), [], timeout=60, budget=120)
    child = kids.get()
    try:
        pids = child.processes()
        assert len(pids) >= 5, (
            pids
        )  # the child's Python (and bubblewrap's), 2 children, 2 orphaned grandchildren
        with child.frozen():
            assert {_state(pid) for pid in pids} == {"T"}
        assert "T" not in {_state(pid) for pid in pids}
    finally:
        pids = child.processes()
        kids.close()
        for pid in pids:  # without the sandbox, a process in a session of its own outlives the kill
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass


def test_a_rounds_inputs_reach_the_shared_buffer_only_once_the_grader_clock_runs(tmp_path):
    sandbox = Sandbox()
    program = [(0, "def double(y):\n    return y * 2\n")]
    kids = _Children(program, sandbox, sandbox.scratch(tmp_path), [], timeout=60, budget=120)
    child = kids.get()
    chain = seal(Chain(torch.randn(1000)))
    seen = []

    def clock():  # the buffer as it is each time the grader reads its clock
        seen.append(os.pread(child._shared, chain.start.nbytes, 0))
        return time.perf_counter()

    try:
        seconds, calls, output, sums = child.run_chain("double", chain, 3, math.inf, clock=clock)
    finally:
        kids.close()
    start = chain.start.numpy().tobytes()
    assert len(seen) == 2 and seen[0] != start and seen[1] == start
    assert calls == 3 and torch.equal(output, chain.start * 8) and seconds > 0
    # the child sums a float32 output in float32 (links.checksum): its rounding is measured against the sum of
    # |y_i w_i|, not the result, which a draw may cancel to near 0 (allclose's rtol failed about one draw in 120:
    # the 16:20 run's 0.18 of terms of ~10). Over 2000 draws the right checksum was within 3e-8 of that sum, a
    # wrong call's or output's at least 6e-6 away: 1e-6 tells them apart whatever the draw
    y, w = (chain.start * 8).double(), weights_at(chain.weights.double(), chain.offsets, 2, 1000)
    assert sums.shape == (3,) and abs(float(sums[2]) - float(y @ w)) <= 1e-6 * float(y.abs() @ w.abs())


WRONG_FOR_PARTIAL_ROTARY = """
def apply_rope(x, cos, sin, layout="half"):
    # fast, and right whenever every dim is rotated (the speed check's inputs); wrong under partial rotary
    d = x.shape[-1] // 2
    c, s = torch.cat((cos, cos), -1).to(x.dtype), torch.cat((sin, sin), -1).to(x.dtype)
    if layout == "half":
        rotated = torch.cat((-x[..., d:], x[..., :d]), -1)
    else:
        c, s = cos.repeat_interleave(2, -1).to(x.dtype), sin.repeat_interleave(2, -1).to(x.dtype)
        rotated = torch.stack((-x[..., 1::2], x[..., 0::2]), -1).flatten(-2)
    return x * c + rotated * s
"""


@pytest.mark.slow
def test_a_speed_point_needs_the_functions_correctness_check_and_says_so_in_one_line(tmp_path):
    # issue 26.5: 10 speed cells (13 points) went to functions that failed their correctness cell on other inputs
    import json

    import nbformat

    from autograder.course import REPO
    from autograder.grading.record import grade_notebook

    source = REPO / "autograder" / "demo" / "source" / "positions" / "positions.ipynb"
    submitted = nbformat.read(source, as_version=4)
    answer = next(
        c
        for c in submitted.cells
        if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "apply_rope"
    )
    answer.source = WRONG_FOR_PARTIAL_ROTARY
    path = tmp_path / "alice" / source.name
    path.parent.mkdir()
    path.write_text(json.dumps(nbformat.from_dict(submitted)))
    record = grade_notebook(source, path, sandbox=Sandbox(), scratch_base=tmp_path / "scratch")
    cells = {c.grade_id: c for c in record.cells}
    assert cells["test_apply_rope"].score == 0 and cells["test_apply_rope"].message.startswith(
        "apply_rope fails"
    )
    assert cells["test_apply_rope_speed"].score == 0
    assert cells["test_apply_rope_speed"].message == "not timed: apply_rope fails its correctness check above"


def test_in_the_kernel_a_speed_check_runs_the_hidden_correctness_cases_before_timing():
    # the notebook's own speed cell: visible cases may pass, the hidden ones decide, and nothing is timed
    from posref.grading import CheckFailed, check_apply_rope_speed

    namespace = {"torch": torch}
    exec(WRONG_FOR_PARTIAL_ROTARY, namespace)
    with pytest.raises(
        CheckFailed, match="^not timed: apply_rope fails its correctness check on the hidden cases"
    ):
        check_apply_rope_speed(namespace["apply_rope"], device="cpu")
