"""The speed check of the score of record: classic slow ``apply_rope`` solutions fail it and vectorised ones pass,
timed through the sandboxed children exactly as ``grade_notebook`` times them (on a loaded machine too: the
budget sits far from both kinds, and the chained rounds keep the transport out of the ratio); slow solutions that
cheat earn nothing for speed, correct alternatives earn everything; a student's processes are stopped while the
reference is timed."""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

import pytest
import torch

from autograder.record import _Children, _run_check
from autograder.sandbox import Sandbox
from posref.grading.speed.timing import Chain

HERE = Path(__file__).resolve().parent
ANSWERS = [
    HERE.parent / "grading" / "student_impls_speed.py",
    HERE.parent / "grading" / "student_impls.py",
    HERE / "speed_submissions.py",
]


@pytest.fixture(scope="module")
def children(tmp_path_factory):
    """One child running ``tests/grading/student_impls.py`` and ``speed_submissions.py`` as its answer cells (the
    reference's child comes with it)."""
    sandbox = Sandbox()
    scratch = sandbox.scratch(tmp_path_factory.mktemp("speed"))
    program = [(i, path.read_text()) for i, path in enumerate(ANSWERS)]
    kids = _Children(program, sandbox, scratch, [], timeout=120, budget=3600)
    yield kids
    kids.close()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["apply_rope_position_loop", "apply_rope_matrix_per_position"])
def test_a_classic_slow_solution_fails_the_speed_check_of_record(children, name):
    assert _run_check(children, "check_apply_rope", name) == "", "it is correct: only its speed is wrong"
    message = _run_check(children, "check_apply_rope_speed", name)
    assert message.startswith("apply_rope is too slow:"), message


@pytest.mark.slow
@pytest.mark.parametrize("name", ["apply_rope_rotate_half", "apply_rope_complex"])
def test_a_vectorised_solution_passes_the_speed_check_of_record(children, name):
    assert _run_check(children, "check_apply_rope_speed", name) == ""


@pytest.mark.slow
@pytest.mark.parametrize("name", ["ppl_loop_positions", "ppl_loop_pairs"])
def test_per_position_loss_looping_over_positions_fails_the_speed_check_of_record(children, name):
    # the timed rounds are linked (logits rescaled by the previous losses): the output is not the input's shape
    assert _run_check(children, "check_per_position_loss", name) == "", (
        "it is correct: only its speed is wrong"
    )
    message = _run_check(children, "check_per_position_loss_speed", name)
    assert message.startswith("per_position_loss is too slow:"), message


@pytest.mark.slow
@pytest.mark.parametrize("name", ["ppl_log_softmax", "ppl_one_hot"])
def test_a_vectorised_per_position_loss_passes_the_speed_check_of_record(children, name):
    assert _run_check(children, "check_per_position_loss_speed", name) == ""


@pytest.mark.slow
@pytest.mark.parametrize("name", ["attention_loops", "attention_head_query_loops"])
def test_attention_looping_over_queries_fails_the_speed_check_of_record(children, name):
    assert _run_check(children, "check_attention", name) == "", "it is correct: only its speed is wrong"
    message = _run_check(children, "check_scaled_dot_product_attention_speed", name)
    assert message.startswith("attention is too slow:"), message


@pytest.mark.slow
@pytest.mark.parametrize("name", ["attention_matmul", "attention_float64_inside"])
def test_vectorised_attention_passes_the_speed_check_of_record(children, name):
    assert _run_check(children, "check_scaled_dot_product_attention_speed", name) == ""


# (function, what it does, correctness message, speed message): "" is a pass, else how the message starts
BATTERY = [
    ("apply_rope_einsum", "a 2x2 rotation per pair with einsum", "", ""),
    ("apply_rope_float64_inside", "computes in float64, returns float32", "", ""),
    ("apply_rope_remembers", "a loop over positions that remembers answers by a fingerprint", "", "apply_rope is too slow"),
    ("apply_rope_then_uninitialised", "right for 6 calls of a shape, then torch.empty_like", "", "apply_rope gave a wrong result while being timed"),
    ("apply_rope_skips_chains", "a loop that returns its input when it is its own last output", "", "apply_rope gave a wrong result while being timed"),
    ("apply_rope_claims_calls", "a loop; its child's protocol claims every call after making one", "", "apply_rope gave a wrong result while being timed"),
    ("apply_rope_burns_when_idle", "a loop; 4 processes burn the CPU whenever it is idle", "", "apply_rope is too slow"),
]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(("name", "does", "correct", "speed"), BATTERY, ids=[b[0] for b in BATTERY])
def test_each_submission_of_the_battery_earns_what_it_deserves(children, name, does, correct, speed):
    for check, expected in (("check_apply_rope", correct), ("check_apply_rope_speed", speed)):
        message = _run_check(children, check, name)
        assert message.startswith(expected) and bool(message) == bool(expected), f"{name} ({does}): {message}"


SPAWNS = """
import os, threading, time
def _wait():
    while True:
        time.sleep(0.01)
threading.Thread(target=_wait, daemon=True).start()
for _ in range(2):
    if os.fork() == 0:  # a child, and a grandchild orphaned at once in a session of its own
        if os.fork() == 0:
            os.setsid()
            _wait()
        _wait()
time.sleep(0.5)
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
    chain = Chain(torch.randn(1000))
    seen = []

    def clock():  # the buffer as it is each time the grader reads its clock
        seen.append(os.pread(child._shared, chain.start.nbytes, 0))
        return time.perf_counter()

    try:
        seconds, calls, output = child.run_chain("double", chain, 3, math.inf, clock=clock)
    finally:
        kids.close()
    start = chain.start.numpy().tobytes()
    assert len(seen) == 2 and seen[0] != start and seen[1] == start
    assert calls == 3 and torch.equal(output, chain.start * 8) and seconds > 0
