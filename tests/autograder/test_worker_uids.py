"""Root's grading processes each claim an unprivileged uid of their own (``worker._free_uid``, issue 37): a claim is a
lock that only root can take, released by the kernel when its process ends, however it ends, and no other user of
the machine can block or steal one. The claims were abstract Unix socket names before, which any user could bind
first: a student who bound all 999 stopped root's grading ("999 grading processes already run on this machine"),
one who bound some made the graders skip those uids.

Each test claims in a folder of its own (``UID_FOLDER`` set to one in the test's folder), so that the grading
processes of this machine, which claim in the real one, never change what a test gets; the claimants of other
processes are forks of the test's, which share its ``UID_FOLDER``."""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import signal
import socket
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from autograder.grading import worker

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="only root's grading processes claim a uid")

FIRST = worker.UID_BASE + 1


class Process:
    """A process forked from the test's that runs ``work(*ends)`` with ``ends``, the ends of two pipes of its own
    (what it says to the test, what the test says to it), and ends with ``os._exit``: it never returns into pytest
    and holds none of pytest's descriptors (its standard streams are /dev/null), so nothing of the test's outlives
    it. It ends when the test closes its end of the second pipe, or ends, or SIGKILLs it (``end``)."""

    def __init__(self, work: Callable[[int, int], None]) -> None:
        said, told = os.pipe(), os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            try:
                null = os.open(os.devnull, os.O_RDWR)
                for standard in (0, 1, 2):
                    os.dup2(null, standard)
                for fd in map(int, os.listdir("/proc/self/fd")):
                    if fd > 2 and fd not in (said[1], told[0]):
                        with contextlib.suppress(OSError):
                            os.close(fd)
                work(said[1], told[0])
                os.read(told[0], 1)  # until the test says so, or its end closes
            finally:
                os._exit(0)
        os.close(said[1])
        os.close(told[0])
        self.said, self.tell = os.fdopen(said[0]), told[1]

    def end(self) -> None:
        """SIGKILL it and reap it (once): a lock it held is released by the kernel, nothing else."""
        if self.pid:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            self.said.close()
            os.close(self.tell)
            self.pid = 0


class Claimant(Process):
    """Another grading process: it claims a uid (``uid``) and holds it until it ends."""

    def __init__(self) -> None:
        def claim(said: int, _told: int) -> None:
            try:
                answer = str(worker._free_uid())
            except BaseException as err:  # said to the test, which fails with it
                answer = f"{type(err).__name__}: {err}"
            os.write(said, (answer + "\n").encode())

        super().__init__(claim)
        answer = self.said.readline().strip()
        assert answer.isdigit(), f"the claimant could not claim a uid: {answer}"
        self.uid = int(answer)


@pytest.fixture
def claims(tmp_path, monkeypatch):
    """The test's own folder of claims; the claims this process took (descriptors) and the claimants are released
    at the end."""
    monkeypatch.setattr(worker, "UID_FOLDER", tmp_path / "uids")
    monkeypatch.setattr(worker, "_UID_HELD", None)
    held: list[int] = []
    claimants: list[Claimant] = []

    def here() -> int:
        uid = worker._free_uid()
        held.append(worker._UID_HELD)
        return uid

    def elsewhere() -> Claimant:
        claimants.append(Claimant())
        return claimants[-1]

    yield here, elsewhere
    for claimant in claimants:
        claimant.end()
    for descriptor in held:
        os.close(descriptor)


def test_each_process_gets_its_own_uid_and_a_killed_ones_is_free_again(claims):
    here, elsewhere = claims
    first, second = elsewhere(), elsewhere()
    assert (first.uid, second.uid, here()) == (FIRST, FIRST + 1, FIRST + 2)
    first.end()  # SIGKILL: no handler, no exit code of the process's own runs
    assert elsewhere().uid == FIRST  # released by the kernel
    assert elsewhere().uid == FIRST + 3  # the others are still held
    folder = worker.UID_FOLDER.stat()
    assert (folder.st_uid, stat.S_IMODE(folder.st_mode)) == (0, 0o700)
    files = {p.name: p.stat() for p in worker.UID_FOLDER.iterdir()}
    assert sorted(files) == [str(FIRST + k) for k in range(4)]
    assert {(f.st_uid, stat.S_IMODE(f.st_mode), stat.S_ISREG(f.st_mode)) for f in files.values()} == {
        (0, 0o600, True)
    }


def test_the_folder_is_made_roots_0700_whatever_the_umask(claims):
    here, _ = claims
    before = os.umask(0o277)  # would leave the owner r-x only
    try:
        assert here() == FIRST
    finally:
        os.umask(before)
    assert stat.S_IMODE(worker.UID_FOLDER.stat().st_mode) == 0o700
    assert here() == FIRST + 1  # the folder passes the check the next time too


class Student(Process):
    """A process of the user ``nobody`` (a student on the grader's machine) in ``tmp_path`` (its working folder,
    entered as root: the folder of claims is then one path component away, as /run/posref-grader-uids is from
    /run, which every user may enter). It runs each of ``steps`` (a function returning what it saw) when the test
    says so (``next_step``, which returns what it saw), and keeps everything it holds until it ends."""

    def __init__(self, tmp_path: Path, steps: list[Callable[[], dict]]) -> None:
        nobody = pwd.getpwnam("nobody")

        def run(said: int, told: int) -> None:
            os.chdir(tmp_path)
            os.setgroups([])
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            for step in steps:
                os.read(told, 1)
                os.write(said, (json.dumps(step()) + "\n").encode())

        super().__init__(run)

    def next_step(self) -> dict:
        os.write(self.tell, b"g")
        return json.loads(self.said.readline())


def _attempt(action) -> str:
    try:
        action()
    except OSError as err:
        return type(err).__name__
    return "done"


HELD_SOCKETS: list[socket.socket] = []  # nobody's bound names, in nobody's process only


def _bind_the_old_names() -> int:
    """Bind every abstract socket name that held a uid before; how many were bound."""
    for uid in range(FIRST, worker.UID_BASE + worker.MAX_UIDS):
        held = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            held.bind(f"\0posref-grader-uid-{uid}")
        except OSError:
            held.close()
            continue
        HELD_SOCKETS.append(held)
    return len(HELD_SOCKETS)


def test_another_user_can_neither_block_nor_steal_a_claim(claims, tmp_path):
    here, elsewhere = claims
    name = worker.UID_FOLDER.name

    def open_lock(uid: int, flags: int) -> None:
        os.close(os.open(f"{name}/{uid}", flags, 0o666))

    def before_the_folder() -> dict:
        return {
            "bound the old names": _bind_the_old_names(),
            "make the folder": _attempt(lambda: os.mkdir(name, 0o777)),
            "put a link in its place": _attempt(lambda: os.symlink("/tmp", name)),
        }

    def after_a_claim() -> dict:
        return {
            "make the next lock file": _attempt(lambda: open_lock(FIRST + 1, os.O_RDWR | os.O_CREAT)),
            "open the held lock file": _attempt(lambda: open_lock(FIRST, os.O_RDONLY)),
            "remove the held lock file": _attempt(lambda: os.unlink(f"{name}/{FIRST}")),
            "list the folder": _attempt(lambda: os.listdir(name)),
            "move the folder away": _attempt(lambda: os.rename(name, "elsewhere")),
        }

    student = Student(tmp_path, [before_the_folder, after_a_claim])
    try:
        seen = [student.next_step()]
        # the student holds the names that stopped root's grading
        assert seen[0]["bound the old names"] > 0
        assert here() == FIRST  # root's first claim makes the folder
        seen.append(student.next_step())
        assert here() == FIRST + 1 and elsewhere().uid == FIRST + 2  # none skipped, none refused
    finally:
        student.end()
    refused = "PermissionError"
    assert seen[0] == {"bound the old names": seen[0]["bound the old names"], "make the folder": refused,
                       "put a link in its place": refused}  # fmt: skip
    assert seen[1] == dict.fromkeys(
        ["make the next lock file", "open the held lock file", "remove the held lock file", "list the folder",
         "move the folder away"],
        refused,
    )  # fmt: skip
    assert sorted(p.name for p in worker.UID_FOLDER.iterdir()) == [str(FIRST), str(FIRST + 1), str(FIRST + 2)]


@pytest.mark.parametrize(
    "make, said",
    [
        (lambda p: (p.mkdir(mode=0o700), os.chown(p, pwd.getpwnam("nobody").pw_uid, -1)), "must be root's"),
        (lambda p: (p.mkdir(), p.chmod(0o755)), "must be root's with mode 0700, not uid 0's with mode 0755"),
        (lambda p: (p.mkdir(), p.chmod(0o730)), "must be root's with mode 0700, not uid 0's with mode 0730"),
        (
            lambda p: ((p.parent / "real").mkdir(mode=0o700), p.symlink_to("real")),
            "must be a folder, not a symlink",
        ),
        (lambda p: p.write_text(""), "must be a folder, not a symlink or a file"),
    ],
    ids=["another user's", "0755", "0730", "a symlink to a good folder", "a file"],
)
def test_a_folder_of_claims_that_is_not_roots_0700_is_refused(claims, make, said):
    here, _ = claims
    make(worker.UID_FOLDER)
    with pytest.raises(RuntimeError, match=said) as refused:
        here()
    assert "remove it (it is made again)" in str(refused.value)
    assert worker._UID_HELD is None
    # no lock file was made anywhere
    assert not [p for p in worker.UID_FOLDER.parent.rglob("*") if p.name.isdigit()]


def test_a_folder_of_claims_that_cannot_be_made_is_said(claims, monkeypatch, tmp_path):
    here, _ = claims
    monkeypatch.setattr(worker, "UID_FOLDER", tmp_path / "missing" / "uids")
    said = "cannot make .*missing/uids.*make it, owned by root with mode 0700"
    with pytest.raises(RuntimeError, match=said):
        here()
