"""The sandbox: what a child sees, what it may write, the limits it runs under."""

from __future__ import annotations

import os

import pytest
from course_helpers import needs_bwrap

from autograder.sandbox import Sandbox
from posref.grading.remote import Child, ChildFailed


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
