"""What a child can leave in the kernel: nothing that the next student's child finds, nothing left after the run.

Found by a hostile class (issue 25, item 4): a child made 2,000 System V message queues (32 MB of kernel memory
outside every limit, held until the worker ended) and put a key in its user's keyring; the next student's child,
forked from the same fork server (so in the same IPC namespace, as the same uid), read both, and the key was still
readable by the worker's uid on the host after the run. A child now tries every per-user and per-namespace kernel
object it can make (System V queues, semaphores and shared memory, a POSIX message queue, keys in its user and
session keyrings, a named session keyring), an abstract unix socket held by a process of its own session, and
files in every writable folder; the next child looks for all of it.
"""

from __future__ import annotations

import csv
import ctypes
import platform
import re
from pathlib import Path

import pytest
from course_helpers import hand_in, in_process_cluster, needs_bwrap, plain_child, run_command
from nbgrader.api import Gradebook

from autograder.demo.submissions import PE, ROPE
from autograder.grading import worker
from autograder.grading.record import _Children
from autograder.sandbox import seccomp
from autograder.sandbox.sandbox import Limits, Sandbox
from posref.grading.child.remote import Child

pytestmark = pytest.mark.xdist_group("sandbox")  # children as Sandbox()'s default uid: see tests/conftest.py

# what a child runs to leave things behind (``leave``) and to find them (``find``): one name for all of it
KERNEL_OBJECTS = r'''
import ctypes, os, platform, socket, time
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
# add_key, keyctl, mq_open (the kernel's numbers: libc has no wrapper for the first two)
_ADD_KEY, _KEYCTL, _MQ_OPEN = {"x86_64": (248, 250, 240), "aarch64": (217, 219, 180)}[platform.machine()]
NAME = b"posref-leak"


def _made(result):
    return "made" if result >= 0 else os.strerror(ctypes.get_errno())


def leave(process=True):
    """Everything a child may leave behind, with what became of each attempt: [(what, "made" or the error)];
    ``process``: also a process of a session of its own holding an abstract socket (only in a sandbox: on the host
    nothing would end it)."""
    done = {}
    queues = 0
    while queues < 2000 and _libc.msgget(0x7005 + queues, 0o1666) >= 0:  # IPC_CREAT | 0666
        queues += 1
    done["message queues"] = f"{queues} made" if queues else os.strerror(ctypes.get_errno())
    done["semaphores"] = _made(_libc.semget(0x7005, 4, 0o1666))
    done["shared memory"] = _made(_libc.shmget(0x7005, 4096, 0o1666))
    done["POSIX message queue"] = _made(_libc.syscall(_MQ_OPEN, NAME, os.O_CREAT | os.O_RDWR, 0o666, None))
    done["user key"] = _made(_libc.syscall(_ADD_KEY, b"user", NAME, b"42", 2, -4))  # KEY_SPEC_USER_KEYRING
    done["session key"] = _made(_libc.syscall(_ADD_KEY, b"user", NAME, b"42", 2, -3))  # KEY_SPEC_SESSION_KEYRING
    done["named session keyring"] = _made(_libc.syscall(_KEYCTL, 1, NAME))  # KEYCTL_JOIN_SESSION_KEYRING
    if process:
        holder = socket.socket(socket.AF_UNIX)
        holder.bind(b"\0" + NAME)
        holder.listen()
        if os.fork() == 0:  # a process of a session of its own keeps the abstract socket
            os.setsid()
            time.sleep(600)
            os._exit(0)
        holder.close()
    for folder in (".", "/tmp", "/dev/shm"):
        try:
            with open(f"{folder}/posref-leak", "w") as f:
                f.write("42")
        except OSError as err:
            done[folder] = err.strerror
    return list(done.items())


def find():
    """What of ``leave()``'s this process can see."""
    found = []
    for table in ("msg", "sem", "shm"):
        rows = open(f"/proc/sysvipc/{table}").read().splitlines()[1:]
        if rows:
            found.append(f"{len(rows)} System V {table} object(s)")
    if _libc.syscall(_MQ_OPEN, NAME, os.O_RDONLY, 0, None) >= 0:
        found.append("the POSIX message queue")
    keys = [line for line in open("/proc/keys").read().splitlines() if NAME.decode() in line]
    if keys:
        found.append(f"{len(keys)} key(s) or keyring(s)")
    try:
        socket.socket(socket.AF_UNIX).connect(b"\0" + NAME)
        found.append("the abstract socket")
    except OSError:
        pass
    found += [f"{folder}/posref-leak" for folder in (".", "/tmp", "/dev/shm") if os.path.lexists(f"{folder}/posref-leak")]
    return found
'''

ATTACKER = (
    PE
    + KERNEL_OBJECTS
    + "\nLEFT = leave()\n"
    + "def sinusoidal_pe(n_positions, dim, base=10000.0):\n    raise RuntimeError(f'left {LEFT}')\n"
)
SPY = (
    PE
    + KERNEL_OBJECTS
    + "\nFOUND = find()\n"
    + "if FOUND:\n    def sinusoidal_pe(n_positions, dim, base=10000.0):\n        raise RuntimeError(f'found {FOUND}')\n"
)
REFUSED = "Operation not permitted"
KERNEL = (
    "semaphores",
    "shared memory",
    "POSIX message queue",
    "user key",
    "session key",
    "named session keyring",
)


def _clean_up() -> str:
    """A cell that removes what ``leave()`` made where nothing refused it (the user's keyring outlives the
    sandbox)."""
    return (
        KERNEL_OBJECTS
        + "\n_libc.syscall(_KEYCTL, 7, -4)\n"  # KEYCTL_CLEAR the user keyring
        + "for row in open('/proc/sysvipc/msg').read().splitlines()[1:]:\n"
        + "    _libc.msgctl(int(row.split()[1]), 0, None)\n"  # IPC_RMID
    )


def _host_keys() -> dict[int, int]:
    """uid -> the keys it holds on the host (``/proc/key-users``: every uid's, for root)."""
    counts = {}
    for line in Path("/proc/key-users").read_text().splitlines():
        uid, rest = line.split(":", 1)
        counts[int(uid)] = int(rest.split()[0])
    return counts


def _host_ipc_owners() -> set[int]:
    """The uids owning a System V object in the host's IPC namespace."""
    owners = set()
    for table in ("msg", "sem", "shm"):
        rows = Path(f"/proc/sysvipc/{table}").read_text().splitlines()
        column = rows[0].split().index("uid")
        owners |= {int(row.split()[column]) for row in rows[1:]}
    return owners


@needs_bwrap
def test_without_the_refused_calls_the_next_child_finds_what_the_last_one_left(tmp_path, monkeypatch):
    """The attack as it was found, the filter back as it was (memfd and System V shared memory refused only): the
    spy's ``find`` sees the queues and keys of the child before it. What makes the test below able to fail."""
    monkeypatch.setattr(seccomp, "DENIED", ("memfd_create", "memfd_secret", "shmget"))
    # limits of their own: another fork server than the other tests' (whose filter is the whole one)
    sandbox = Sandbox(limits=Limits(cpu_seconds=Limits().cpu_seconds - 2))
    scratch = sandbox.scratch(tmp_path)

    def run(code: str, name: str):
        children = _Children([(0, code)], sandbox, scratch, [], timeout=60, budget=300)
        try:
            return children.get().call(name, (), {})
        finally:
            children.close()

    try:
        left = dict(run(KERNEL_OBJECTS, "leave"))
        assert left["message queues"] == "2000 made" and left["user key"] == "made", left
        found = run(KERNEL_OBJECTS, "find")
        assert "2000 System V msg object(s)" in found and any("key" in f for f in found), found
        # the processes and the files were already cleared between children
        assert "the abstract socket" not in found and not [f for f in found if f.endswith("posref-leak")]
    finally:
        run(_clean_up() + "\ndef done():\n    return 1\n", "done")
        sandbox.fork_server().close()


@pytest.fixture(scope="module")
def in_process_worker(tmp_path_factory):
    """A Dask scheduler and one worker thread in this process: every student is graded by the same worker, so by
    children of the same fork server, one after the other."""
    with in_process_cluster(tmp_path_factory.mktemp("dask")) as address:
        yield address


@needs_bwrap
def test_a_child_leaves_nothing_for_the_next_student_nor_on_the_host(
    released_demo, in_process_worker, tmp_path, monkeypatch
):
    course = hand_in(released_demo, tmp_path / "course", monkeypatch, {
        "attacker": {"sinusoidal_pe": ATTACKER, "apply_rope": ROPE},
        "spy": {"sinusoidal_pe": SPY, "apply_rope": ROPE},
        "classmate": {"sinusoidal_pe": PE, "apply_rope": ROPE},
    })  # fmt: skip
    keys_before = _host_keys()
    for student in ("attacker", "spy", "classmate"):  # in this order, by the same worker
        assert (
            run_command(
                "autograde", "positions", "--scheduler", in_process_worker, "--student", student
            ).returncode
            == 0
        )
    assert run_command("export", "positions").returncode == 0
    with open(course / "positions-grades.csv") as f:
        rows = {row["student"]: row for row in csv.DictReader(f)}
    assert {s: (rows[s]["status"], float(rows[s]["score"])) for s in rows} == {
        "attacker": ("graded", 4.0),  # its sinusoidal_pe raises on purpose, with what became of each attempt
        "spy": ("graded", 6.0),  # it finds nothing: its own sinusoidal_pe is correct
        "classmate": ("graded", 6.0),
    }
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        assert gb.find_submission("positions", "classmate").score == 6.0
    record = (course / "records" / "positions" / "attacker.json").read_text()
    for what in ("message queues", *KERNEL):
        assert re.search(rf"\('{what}', '{REFUSED}'\)", record), (what, record)
    # nothing on the host either: no key, no System V object of the uids this worker graded as (its students' and
    # its reference child's; every other grading process has uids of its own, a parallel test's included)
    keys_after = _host_keys()
    box = worker._sandbox()  # the in-process worker's
    graders = {box.uid, box.for_reference.uid}
    assert {uid: n for uid, n in keys_after.items() if uid in graders and n > keys_before.get(uid, 0)} == {}
    assert not _host_ipc_owners() & set(graders)


def test_the_refused_calls_fail_in_a_child_without_the_sandbox_too(tmp_path):
    """Without bubblewrap the child runs on the host itself: the filter is what stops it there."""
    if Sandbox().seccomp_problem is not None:
        pytest.skip(Sandbox().seccomp_problem)
    with plain_child(KERNEL_OBJECTS, cwd=str(tmp_path), preexec_fn=Sandbox().set_limits) as child:
        left = dict(child.call("leave", (False,), {}))
    assert {what: left[what] for what in ("message queues", *KERNEL)} == dict.fromkeys(
        ("message queues", *KERNEL), REFUSED
    )


def test_a_child_does_not_possess_the_graders_session_keyring(tmp_path):
    """``/proc/keys`` lists every key a process possesses, keyctl refused or not: a child used to inherit the
    grader's session keyring, and so saw the names of its keys."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    add_key, keyctl = {"x86_64": (248, 250), "aarch64": (217, 219)}[platform.machine()]
    assert libc.syscall(keyctl, 1, None) >= 0  # this test's process joins a new session keyring first
    key = libc.syscall(add_key, b"user", b"posref-grader-secret", b"x", 1, -3)
    assert key >= 0
    sandbox = Sandbox()
    command, cwd, path = sandbox.python_command(sandbox.scratch(tmp_path))
    code = "def keys():\n    return open('/proc/keys').read()\n"
    child = Child(
        command, [(0, code)], env=sandbox.env(), cwd=cwd, python_path=path, preexec_fn=sandbox.set_limits
    )
    try:
        seen = child.call("keys", (), {})
    finally:
        child.close()
        libc.syscall(keyctl, 3, ctypes.c_long(key))  # KEYCTL_REVOKE
    assert "posref-grader-secret" not in seen
