"""The sandbox: what a child sees, what it may write, the limits it runs under."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from course_helpers import needs_bwrap, plain_child

from autograder.course import REPO
from autograder.sandbox.sandbox import Sandbox, submission_files
from posref.grading.child.remote import Child, ChildFailed

pytestmark = pytest.mark.xdist_group("sandbox")  # children as Sandbox()'s default uid: see tests/conftest.py


@needs_bwrap
def test_the_sandbox_has_no_network_no_other_files_and_writes_only_to_scratch(tmp_path):
    secret = tmp_path / "course" / "gradebook.db"
    secret.parent.mkdir()
    secret.write_text("grades")
    sandbox = Sandbox()
    work = sandbox.scratch(tmp_path / "scratch")
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
def scratch():
    return os.getcwd(), open("allowed.txt").read()
"""
    command, cwd, path = sandbox.python_command(work)
    child = Child(
        command, [(0, probe)], env=sandbox.env(), cwd=cwd, python_path=path, preexec_fn=sandbox.set_limits
    )
    try:
        assert child.call("report", (), {}) == "nothing"
        assert child.call("scratch", (), {}) == ("/scratch", "scratch is writable")
    finally:
        child.close()
    # the working directory is the child's own tmpfs: nothing it writes reaches the grader's disk
    assert list(work.parent.rglob("allowed.txt")) == [] and not (tmp_path / "evil").exists()


HOST_NAMES = """
import os, tempfile
def names():
    # the host's names of what the sandbox shows: bubblewrap's command line (its first process is this PID
    # namespace's 1) and the root of each mount (a bind's folder as the host names it)
    named = [a for a in open("/proc/1/cmdline").read().split("\\0") if a.startswith("/")]
    named += [line.split()[3] for line in open("/proc/self/mountinfo")]
    return sorted(set(named))
def reach(path):
    # whether the path is here at all, and whether this process can make a file where it is
    if not os.path.exists(path):
        return "absent"
    try:
        with tempfile.TemporaryFile(dir=path if os.path.isdir(path) else os.path.dirname(path)):
            return "writable"
    except OSError:
        return "read-only"
"""


@needs_bwrap
def test_the_host_paths_a_child_can_read_about_give_it_nothing_it_has_not(tmp_path):
    """Not hidden: ``/proc/1/cmdline`` (bubblewrap's arguments) and ``/proc/self/mountinfo`` name the host's folders
    of the Python environment and of posref, whatever their names inside, and ``sys.prefix`` names the first anyway.
    What must hold is that a name gives nothing: each named path is absent here, or a read-only folder the child
    has anyway, or one of its own size-limited tmpfs; the checkout is not among them. (The sandbox's root and
    ``/dev`` were writable tmpfs without a size limit where bubblewrap makes the user namespace: now read-only.)"""
    sandbox = Sandbox()
    command, cwd, path = sandbox.python_command(sandbox.scratch(tmp_path))
    child = Child(command, [(0, HOST_NAMES)], env=sandbox.env(), cwd=cwd, python_path=path,
                  preexec_fn=sandbox.set_limits)  # fmt: skip
    try:
        names = child.call("names", (), {})
        reach = {name: child.call("reach", (name,), {}) for name in names}
        solutions = child.call("reach", (str(REPO / "solutions"),), {})  # the instructor's notebooks
    finally:
        child.close()
    assert str(REPO / "posref") in names  # what is not hidden (the test sees what a child sees)
    writable = {name for name, how in reach.items() if how == "writable"}
    assert writable <= {"/tmp", "/dev/shm", "/scratch"}, writable
    assert reach[str(REPO / "posref")] == "absent" and solutions == "absent"


def test_a_child_that_dies_is_reported_with_the_cell_that_killed_it(tmp_path):
    sandbox = Sandbox()
    work = sandbox.scratch(tmp_path)
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
    work = sandbox.scratch(tmp_path)
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


def test_the_child_works_on_a_copy_of_the_submission_folder_without_its_notebooks(tmp_path):
    submission = tmp_path / "submission"
    (submission / "data").mkdir(parents=True)
    (submission / "01_order.ipynb").write_text("{}")
    (submission / "data" / "old.ipynb").write_text("{}")
    (submission / "notes.txt").write_text("mine")
    (submission / "data" / "table.bin").write_bytes(bytes(range(256)))
    (submission / "gradebook.db").symlink_to(tmp_path / "course" / "gradebook.db")
    files, note = submission_files(submission, 2**20)
    assert note == ""
    code = (
        "import os\n"
        "def listing():\n"
        "    return sorted(os.path.join(r, n) for r, ds, fs in os.walk('.') for n in ds + fs)\n"
        "def read(path):\n"
        "    return open(path, 'rb').read().hex()\n"
        "def change():\n"
        "    open('notes.txt', 'w').write('changed')\n"
        "    return os.readlink('gradebook.db')\n"
    )
    (tmp_path / "work").mkdir()
    with plain_child(code, cwd=str(tmp_path / "work"), files=files) as child:
        assert child.call("listing", (), {}) == [
            "./data",
            "./data/table.bin",
            "./gradebook.db",
            "./notes.txt",
        ]
        assert bytes.fromhex(child.call("read", ("data/table.bin",), {})) == bytes(range(256))
        assert child.call("change", (), {}) == str(
            tmp_path / "course" / "gradebook.db"
        )  # a link, kept as one
    assert (submission / "notes.txt").read_text() == "mine"


def test_a_submission_folder_too_big_too_wide_or_too_deep_is_cut_with_a_note(tmp_path):
    (tmp_path / "big").mkdir()
    (tmp_path / "big" / "a.bin").write_bytes(b"x" * 1000)
    (tmp_path / "big" / "b.bin").write_bytes(b"x" * 1000)
    files, note = submission_files(tmp_path / "big", 1500)
    assert [f[1] for f in files] == ["a.bin"] and "more than 0.00143051 MiB of files" in note
    deep = tmp_path / "deep"
    (deep / "/".join(["d"] * 70)).mkdir(parents=True)
    files, note = submission_files(deep, 2**20)
    assert len(files) == 63 and "nested more than 64 deep" in note


# ---------------------------------------------------------------- without bubblewrap (issue 37.1)
# A submission that finds the course folder through its ancestors' environment and rewrites a classmate's notebook,
# graded where bubblewrap cannot start: before, it ran as the grader (root here) and did; now nothing of it runs,
# and the record says why and what to do, unless the instructor says the class is trusted.

FINDS_THE_COURSE = """
import os
import pathlib


def _course():
    pid = os.getpid()
    while pid > 1:  # an ancestor, the grader, knows the course folder: its POSREF_COURSE_DIR, or where it runs
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                for item in f.read().split(b"\\0"):
                    if item.startswith(b"POSREF_COURSE_DIR="):
                        return pathlib.Path(item.split(b"=", 1)[1].decode())
            if os.path.isdir(f"/proc/{pid}/cwd/submitted"):
                return pathlib.Path(os.readlink(f"/proc/{pid}/cwd"))
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            return None


for notebook in (_course() or pathlib.Path("/nonexistent")).glob("submitted/*/*/*.ipynb"):
    notebook.write_text("rewritten by alice")


def attention(q, k, v, causal=False):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if causal:
        scores = scores.masked_fill(torch.ones(scores.shape[-2:], dtype=torch.bool).triu(1), float("-inf"))
    return scores.softmax(-1) @ v
"""


def _no_bubblewrap(tmp_path, monkeypatch, how: str) -> None:
    """A PATH on which bubblewrap is missing (``not installed``) or cannot make its namespaces (``refused``)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "true").symlink_to("/bin/true")
    if how == "refused":
        (bin_dir / "bwrap").write_text(
            "#!/bin/sh\necho 'bwrap: No permissions to create a new namespace' >&2\nexit 1\n"
        )
        (bin_dir / "bwrap").chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))


@pytest.fixture
def classmate(tmp_path, monkeypatch):
    """bob's submitted notebook in the course folder the grader runs in (an instructor's commands run there)."""
    course = tmp_path / "course"
    bob = course / "submitted" / "bob" / "01_order" / "01_order.ipynb"
    bob.parent.mkdir(parents=True)
    bob.write_text("bob's work")
    monkeypatch.chdir(course)
    return bob


@pytest.mark.parametrize("how", ["not installed", "refused"])
def test_without_bubblewrap_no_student_code_runs_and_the_record_says_why_and_the_fix(
    tmp_path, monkeypatch, classmate, how
):
    from course_helpers import grade_with_answers

    _no_bubblewrap(tmp_path, monkeypatch, how)
    monkeypatch.delenv("POSREF_TRUSTED_CLASS", raising=False)
    record = grade_with_answers(tmp_path, "01", {"attention": FINDS_THE_COURSE})
    assert classmate.read_text() == "bob's work"
    assert record.status == "could not grade" and record.reason.startswith(
        "nothing was run: the grading sandbox cannot start here"
    ), record.reason
    fix = "install bubblewrap" if how == "not installed" else "allow unprivileged user namespaces"
    assert fix in record.reason and "autograde --trusted-class" in record.reason
    with pytest.raises(
        SystemExit, match="^autograde 01_order: nothing was run: the grading sandbox cannot start"
    ):
        from autograder.grading.grade import autograde

        autograde("01_order")  # before it reads the course: no worker is started


def test_without_bubblewrap_a_trusted_class_is_graded_and_its_records_say_so(
    tmp_path, monkeypatch, classmate
):
    from course_helpers import grade_with_answers

    _no_bubblewrap(tmp_path, monkeypatch, "not installed")
    monkeypatch.setenv("POSREF_TRUSTED_CLASS", "1")
    record = grade_with_answers(tmp_path, "01", {"attention": FINDS_THE_COURSE})
    assert record.status == "graded" and "a class trusted with POSREF_TRUSTED_CLASS=1" in record.sandbox
    if (
        os.geteuid() == 0 and ", as uid " in record.sandbox
    ):  # dropped to an unprivileged uid: root's files closed
        assert classmate.read_text() == "bob's work"


def test_a_trusted_call_that_stops_leaves_the_next_untrusted_one_refused(tmp_path, monkeypatch, classmate):
    """autograde(trusted=True) set POSREF_TRUSTED_CLASS in the instructor's process for good: after it stopped (here:
    the assignment is not released), the next call, not trusted, ran the class without the sandbox."""
    from autograder.grading.grade import autograde

    _no_bubblewrap(tmp_path, monkeypatch, "not installed")
    monkeypatch.delenv("POSREF_TRUSTED_CLASS", raising=False)
    monkeypatch.setenv("POSREF_COURSE_DIR", str(tmp_path / "course"))
    with pytest.raises(SystemExit) as trusted:
        autograde("01_order", trusted=True)
    assert "sandbox" not in str(trusted.value)  # trusted: past the sandbox's refusal, stopped by the course
    assert "POSREF_TRUSTED_CLASS" not in os.environ
    with pytest.raises(
        SystemExit, match="^autograde 01_order: nothing was run: the grading sandbox cannot start"
    ):
        autograde("01_order")


@pytest.mark.skipif(os.geteuid() != 0, reason="as root only: an ordinary user's children run as that user")
def test_a_trusted_classs_reference_child_runs_as_its_own_uid_too(tmp_path, monkeypatch):
    """Sandbox(trusted=True) without bubblewrap, where the unprivileged uid can run Python: its students' children
    run as that uid, and its speed checks' reference child as uid + 1000 (``for_reference``). The reference's sandbox
    forgot the trust it was given (it read only the environment) and ran as root, the grader."""
    from autograder.sandbox import sandbox as sandbox_module

    _no_bubblewrap(tmp_path, monkeypatch, "not installed")
    monkeypatch.delenv("POSREF_TRUSTED_CLASS", raising=False)
    monkeypatch.setattr(sandbox_module, "_can_run_as", lambda uid: True)
    box = Sandbox(uid=61000, trusted=True)
    assert box.uid == 61000 and box.refusal is None
    reference = box.for_reference
    assert (reference.uid, reference.trusted, reference.refusal) == (62000, True, None)


# A child that makes a user namespace of its own is root in it, with the kernel's code for a namespace's root open to
# it (the way sandbox escapes have gone): every way of making one, and what must keep working (threads, processes)
USER_NAMESPACES = """
import ctypes, os, struct, subprocess, threading
CLONE_NEWUSER, SIGCHLD = 0x10000000, 17
CLONE, CLONE3 = {"x86_64": (56, 435), "aarch64": (220, 435)}[os.uname().machine]
libc = ctypes.CDLL(None, use_errno=True)
def _made(pid):
    if pid == 0:  # a raw clone's child, in its new namespace: it leaves at once
        os._exit(0)
    return pid > 0 and os.waitpid(pid, 0)[1] == 0
def _clone():
    return _made(libc.syscall(ctypes.c_long(CLONE), ctypes.c_long(CLONE_NEWUSER | SIGCHLD), *[ctypes.c_long(0)] * 4))
def _clone3():
    args = struct.pack("=11Q", CLONE_NEWUSER, 0, 0, 0, SIGCHLD, 0, 0, 0, 0, 0, 0)  # struct clone_args
    return _made(libc.syscall(ctypes.c_long(CLONE3), ctypes.c_char_p(args), ctypes.c_long(len(args))))
def made():
    # unshare(2) itself refuses a process of several threads (this one: torch's) whatever the sandbox: the
    # unshare tool, one thread, calls it
    out = {"clone(2)": _clone(), "clone3(2)": _clone3()}
    for command in (["unshare", "-U", "true"], ["unshare", "-r", "true"], ["unshare", "-U", "--fork", "true"]):
        out[" ".join(command)] = subprocess.run(command, capture_output=True).returncode == 0
    result = []
    thread = threading.Thread(target=lambda: result.append(_clone()))
    thread.start()
    thread.join()
    out["clone(2) from a thread it starts"] = result == [True]
    return [len(out), [way for way, ok in out.items() if ok]]
def still_works():
    ran = []
    thread = threading.Thread(target=lambda: ran.append("a thread"))
    thread.start()
    thread.join()
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    spawned = os.posix_spawnp("true", ["true"], os.environ)  # glibc's posix_spawn tries clone3 first
    return ran + [subprocess.run(["true"]).returncode, os.waitpid(pid, 0)[1], os.waitpid(spawned, 0)[1]]
"""


# as root, the child of the test below as an ordinary user's (a uid of no one's): bubblewrap makes its user namespace
AS_AN_ORDINARY_USER = """
import json, sys, tempfile
from pathlib import Path
from autograder.sandbox.sandbox import Sandbox
from posref.grading.child.remote import Child
sandbox = Sandbox()
command, cwd, path = sandbox.python_command(sandbox.scratch(Path(tempfile.mkdtemp())))
child = Child(command, [(0, sys.argv[1])], env=sandbox.env(), cwd=cwd, python_path=path,
              preexec_fn=sandbox.set_limits, call_timeout=120)
try:
    print(json.dumps([sandbox.mode.split(";")[0], *child.call("made", (), {}), child.call("still_works", (), {})]))
finally:
    child.close()
"""


def _as_an_ordinary_user() -> list:
    """[the sandbox's mode, ways tried, ways that made a user namespace, what still works] of that child."""
    from conftest import python_shown_to

    prefix = python_shown_to(ORDINARY_UID, also=(REPO,))
    if prefix is None:
        pytest.skip("this Python cannot be shown to another user here")
    home = Path(tempfile.mkdtemp())  # pytest's own folder is root's alone
    try:
        home.chmod(0o1777)
        drop = ["setpriv", f"--reuid={ORDINARY_UID}", f"--regid={ORDINARY_UID}", "--clear-groups", "--"]
        env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "TMPDIR": str(home), "PYTHONPATH": str(REPO)}
        done = subprocess.run([*prefix, *drop, sys.executable, "-c", AS_AN_ORDINARY_USER, USER_NAMESPACES],
                              capture_output=True, text=True, env=env, cwd=home, timeout=600)  # fmt: skip
    finally:
        shutil.rmtree(home, ignore_errors=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


ORDINARY_UID = 60900
MODES = ["bubblewrap", "bubblewrap, forked", "no bubblewrap, a trusted class", "bubblewrap, an ordinary user"]


@pytest.mark.parametrize("mode", MODES)
def test_no_child_makes_a_user_namespace_in_any_mode(tmp_path, monkeypatch, mode):
    """As root, bubblewrap makes no user namespace (the child drops to an unprivileged uid instead), and nothing
    forbade the child one: each way made one (and as root without bubblewrap, in a trusted class, too). Now each way
    is refused, in a child started afresh, forked from the worker's fork server, without bubblewrap, or as an
    ordinary user (bubblewrap's user namespace, ``--disable-userns``); threads and processes still start (glibc
    makes them with clone where clone3 is refused)."""
    from autograder.sandbox.sandbox import _bwrap_disables_userns

    if mode.endswith("an ordinary user"):
        if os.geteuid() != 0:
            pytest.skip("not root: the mode 'bubblewrap' is an ordinary user's here")
        if Sandbox().problem is not None:
            pytest.skip(f"no sandbox: {Sandbox().problem}")
        sandbox_mode, tried, made, works = _as_an_ordinary_user()
        assert sandbox_mode == "bubblewrap"
        if not _bwrap_disables_userns():
            pytest.skip("an ordinary user's bubblewrap older than 0.8.0 cannot forbid a user namespace")
        assert tried == 6 and made == [], f"made a user namespace: {made}"
        assert works == ["a thread", 0, 0, 0], works
        return
    if mode.startswith("no bubblewrap"):
        _no_bubblewrap(tmp_path, monkeypatch, "not installed")
        sandbox = Sandbox(trusted=True)
    else:
        sandbox = Sandbox()
        if sandbox.problem is not None:
            pytest.skip(f"no sandbox: {sandbox.problem}")
        if sandbox.uid is None and not _bwrap_disables_userns():
            pytest.skip("an ordinary user's bubblewrap older than 0.8.0 cannot forbid a user namespace")
    if sandbox.seccomp_problem is not None and (sandbox.uid is not None or sandbox.problem is not None):
        pytest.skip(sandbox.seccomp_problem)
    command, cwd, path = sandbox.python_command(sandbox.scratch(tmp_path / "scratch"))
    server = sandbox.fork_server() if mode == "bubblewrap, forked" else None
    assert (server is not None) == (mode == "bubblewrap, forked")
    child = Child(command, [(0, USER_NAMESPACES)], env=sandbox.env(), cwd=cwd, python_path=path,
                  preexec_fn=sandbox.set_limits, call_timeout=120,
                  launch=server.fork if server is not None else None)  # fmt: skip
    try:
        tried, made = child.call("made", (), {})
        works = child.call("still_works", (), {})
    finally:
        child.close()
    assert tried == 6 and made == [], f"made a user namespace: {made}"
    assert works == ["a thread", 0, 0, 0], works
