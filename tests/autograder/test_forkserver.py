"""Children forked from the worker's fork server start without Python's start or torch's import, and still start
with nothing of an earlier child's: its processes ended, its files removed, the server out of its reach, the
limits and the memory cgroup its own."""

from __future__ import annotations

import dataclasses

import pytest

from autograder.grading.record import _Children
from autograder.sandbox import sandbox as sandbox_module
from autograder.sandbox.sandbox import Sandbox
from posref.grading.child import forkserver
from posref.grading.child.remote import ChildFailed, RemoteFunction

SANDBOX = Sandbox()
pytestmark = [
    pytest.mark.skipif(SANDBOX.problem is not None, reason=f"no sandbox: {SANDBOX.problem}"),
    pytest.mark.xdist_group("sandbox"),  # see tests/conftest.py
]

LITTER = """
import os, resource, signal, subprocess, time
def litter():  # files in every writable place, a process that would outlive the child, a hidden one
    for folder in (".", "/tmp", "/dev/shm"):
        try:
            os.makedirs(f"{folder}/left/deeper")
            open(f"{folder}/left/deeper/answers.txt", "w").write("42")
        except OSError:
            pass
    sleeper = subprocess.Popen(["sleep", "600"], start_new_session=True).pid
    for _ in range(3000):  # Popen returns once exec has begun: wait until it has set up sleep's arguments
        if open(f"/proc/{sleeper}/cmdline").read().startswith("sleep"):
            break
        time.sleep(0.01)
    return sleeper
def look(sleeper):  # what is left of litter()'s files (a checkout under /tmp is bound into the sandbox's /tmp)
    files = []
    for folder in (".", "/tmp", "/dev/shm"):
        if os.path.lexists(f"{folder}/left"):
            files += [f"{folder}/left"] + [os.path.join(r, n) for r, ds, fs in os.walk(f"{folder}/left") for n in ds + fs]
    files.sort()
    try:  # "pid (comm) state ...": a zombie (ended, not yet reaped) is not running
        comm, state = open(f"/proc/{sleeper}/stat").read().rsplit(")", 1)
        running = comm.endswith("(sleep") and state.split()[0] not in "ZX"
    except OSError:
        running = False
    return files, running
def server_memory():  # the fork server is this process's parent
    try:
        open(f"/proc/{os.getppid()}/mem", "rb").read(1)
        return "read the server's memory"
    except OSError as err:
        return type(err).__name__
def limits():
    cgroup = [line for line in open("/proc/self/cgroup").read().splitlines() if ":memory:" in line]
    return resource.getrlimit(resource.RLIMIT_AS)[0], resource.getrlimit(resource.RLIMIT_NPROC)[0], cgroup
def parent():
    return open(f"/proc/{os.getppid()}/cmdline").read()
def kill_server():
    os.kill(os.getppid(), signal.SIGKILL)
    return 1.0
"""


def _children(tmp_path, files=()) -> _Children:
    return _Children(
        [(0, LITTER)], SANDBOX, SANDBOX.scratch(tmp_path), [], timeout=30, budget=120, files=files
    )


def test_a_forked_child_starts_fast_and_clean_after_one_that_littered(tmp_path):
    first = _children(tmp_path)
    try:
        child = first.get()
        sleeper = child.call("litter", (), {})
        assert child.call("look", (sleeper,), {}) == (
            ["./left", "./left/deeper", "./left/deeper/answers.txt"], True
        )  # fmt: skip
    finally:
        first.close()
    second = _children(tmp_path)
    try:
        child = second.get()
        assert "serve_forks" in child.call("parent", (), {})  # a fork of the server, not a fresh start
        assert child.call("look", (sleeper,), {}) == ([], False)
        assert child.call("server_memory", (), {}) == "PermissionError"
        address_space, processes, cgroup = child.call("limits", (), {})
        assert (address_space, processes) == (SANDBOX.limits.address_space, SANDBOX.limits.processes)
        if SANDBOX.memory.problem is None:  # its own group, not the server's
            assert len(cgroup) == 1 and "posref-child-" in cgroup[0]
    finally:
        second.close()


def test_a_child_that_kills_the_server_costs_a_restart_and_nothing_else(tmp_path):
    children = _children(tmp_path)
    try:
        try:  # the server's sandbox ends with the server, and this child with it (maybe after its reply)
            children.get().call("kill_server", (), {})
        except ChildFailed:
            pass
        children.close()
        assert RemoteFunction(children.get(), "litter")() > 0
    finally:
        children.close()


def test_a_forked_childs_exit_code_is_reported_with_its_cell(tmp_path):
    problems = []
    program = [(0, "x = 1"), (3, "import os; os._exit(3)"), (4, "def f():\n    return float(x)")]
    children = _Children(program, SANDBOX, SANDBOX.scratch(tmp_path), problems, timeout=30, budget=120)
    try:
        assert RemoteFunction(children.get(), "f")() == 1.0
    finally:
        children.close()
    assert problems == ["cell 3 was left out: the grading process exited with code 3 while running cell 3"]


@pytest.mark.timeout(300)  # without the fix, closing the child waited for ever
def test_a_child_that_stops_the_server_does_not_hang_the_grader(tmp_path, monkeypatch):
    monkeypatch.setattr(forkserver, "WAIT", 2.0)
    code = "import os, signal\ndef stop():\n    os.kill(os.getppid(), signal.SIGSTOP)\n    return 1.0\n"
    children = _Children([(0, code)], SANDBOX, SANDBOX.scratch(tmp_path), [], timeout=30, budget=120)
    try:
        assert RemoteFunction(children.get(), "stop")() == 1.0
        children.close()  # the server never reports this child's end: it is ended with its sandbox (no hang)
        assert RemoteFunction(children.get(), "stop")() == 1.0  # a new server
    finally:
        children.close()


def test_a_forked_childs_processes_include_what_it_left_to_the_sandbox(tmp_path):
    """A process whose parent ends is adopted by the sandbox's first process, which is not the fork's descendant:
    the speed check's freeze must still find it (and stop it while the reference is timed)."""
    code = (
        "import os, time\n"
        "def orphan():\n"
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(600)\n"
        "        os._exit(0)\n"
        "    os.wait()\n"
        "    time.sleep(0.5)\n"
        "    return 1.0\n"
    )
    children = _Children([(0, code)], SANDBOX, SANDBOX.scratch(tmp_path), [], timeout=30, budget=120)
    try:
        child = children.get()
        before = child.processes()
        assert child.call("orphan", (), {}) == 1.0
        (left,) = (
            child.processes() - before
        )  # in a session of its own, a child of the sandbox's first process
        assert forkserver._status(left)[0] == SANDBOX.fork_server().adopter
    finally:
        children.close()


def test_a_fork_starts_with_what_the_notebooks_import_already_imported(tmp_path, monkeypatch):
    """The server imports ``sandbox.PRELOAD`` (matplotlib, posref's lab and explorers) once; a fork finds them
    in ``sys.modules`` before any cell imports them. A name that cannot be imported is left to the child, and
    the server serves all the same."""
    monkeypatch.setattr(sandbox_module, "PRELOAD", (*sandbox_module.PRELOAD, "posref_no_such_module"))
    # a limit of its own: another key, so another fork server than the other tests' (started with this PRELOAD)
    fresh = Sandbox(limits=dataclasses.replace(SANDBOX.limits, cpu_seconds=SANDBOX.limits.cpu_seconds - 1))
    code = "import sys\ndef loaded(names):\n    return [n for n in names if n in sys.modules]\n"
    children = _Children([(0, code)], fresh, fresh.scratch(tmp_path), [], timeout=60, budget=300)
    try:
        child = children.get()
        names = [*sandbox_module.PRELOAD[:-1], "posref_no_such_module", "xml.dom.minidom"]
        assert child.call("loaded", (names,), {}) == list(sandbox_module.PRELOAD[:-1])
    finally:
        children.close()
        fresh.fork_server().close()


def test_preload_takes_module_names_only():
    with pytest.raises(ValueError, match="preload must be module names"):
        forkserver.ForkServer(["python"], "/", preload=["os; import shutil"])


def test_one_reference_child_serves_every_speed_checkers_reference(tmp_path):
    """Every speed checker's reference is in one child per worker (one start, not one per reference); each name
    in it is the reference itself, and a path outside the checkers' gets a child of its own."""
    import torch

    import posref
    from autograder.grading.record import _REFERENCE_CHILDREN, reference_paths

    assert "posref:apply_rope" in reference_paths() and len(reference_paths()) >= 2
    children = _children(tmp_path)
    try:
        rope = children.reference_fn("posref:apply_rope")
        attention = children.reference_fn("posref:scaled_dot_product_attention")
        assert rope.child is attention.child
        assert all(path.split(":")[1] in rope.child.names for path in reference_paths())
        x, (cos, sin) = (
            torch.randn(1, 4, 8),
            posref.rope_cos_sin(torch.arange(4), posref.rope_frequencies(8)[0]),
        )
        torch.testing.assert_close(rope(x, cos, sin), posref.apply_rope(x, cos, sin))
        other = children.reference_fn("posref:rope_cos_sin")
        assert other.child is not rope.child and other.child.names == ["rope_cos_sin"]
    finally:
        children.close()
        _REFERENCE_CHILDREN.pop("posref:rope_cos_sin").close()
