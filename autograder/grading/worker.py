"""What a grading worker runs: the score of record of one student's submission, from the bytes it is sent.

A worker (a process of a Dask cluster: local, or on other machines through ``--scheduler``) gets the source
notebooks of one assignment and the files of one student's submission, grades each notebook in its own
bubblewrap sandboxes (``record.grade_notebook``) and returns the records as plain data. It never sees the
course folder (no gradebook, no other student, no records) and writes nothing but a temporary folder of its own
for each student (the submission's files, the children's scratch), removed when that student is graded, and made
in the Dask worker's own folder (``_worker_folder``), so that a worker killed in the middle of a student leaves
it there, where it goes with the cluster, and not in the machine's temporary folder; the instructor's process
writes the gradebook, the records and the notebooks.

A worker process keeps one ``Sandbox`` for its whole life (its fork server and speed checks' reference child live as
long as the process, in no folder of the host's) with its own unprivileged uid when root: 62001, 62002, … held by
a lock on a file named after it in a folder only root may enter (``_free_uid``: the kernel releases the lock when
the process ends, however it ends; nothing is written in the temporary folder), so that every worker process of
root's on a machine has its own, however they were started, and no other user can take one first; its speed
checks' reference child runs as that uid + 1000. A worker of an ordinary user takes none: its children run as that
user.
"""

from __future__ import annotations

import fcntl
import os
import socket
import stat
import tempfile
import time
from pathlib import Path, PurePosixPath

import torch

from autograder.grading.record import Record, grade_notebook
from autograder.sandbox.sandbox import Sandbox
from posref.grading.child.plain_data import student_text

# apart from 61000 (a Sandbox made without a uid: tests, the notebooks' checks) and from 61001, 61002, … (the
# uids of earlier versions, one per worker number: a fork bomb graded by one of them filled that uid's process
# limit, and a child of ours with the same uid could not start, "exited with code 126 while starting")
UID_BASE = 62000
MAX_UIDS = 1000

# the folder of the uid claims: root's, 0700, outside the temporary folder (a tmpfs emptied at boot; the empty lock
# files, one per uid ever held, stay there)
UID_FOLDER = Path("/run/posref-grader-uids")

_SANDBOX: Sandbox | None = None
_UID_HELD: int | None = None  # the descriptor whose lock holds this process's uid, open until it exits


def _free_uid() -> int:
    """An unprivileged uid that no other grading process on this machine holds. A process holds its uid by an
    exclusive ``flock`` on the file ``UID_FOLDER/<uid>``: a lock belongs to the open file, so the kernel releases it
    when the process ends, however it ends (SIGKILL included), and the descriptor is not inherited by the programs
    it starts (PEP 446). Another process's lock is refused (``EWOULDBLOCK``): the next uid is tried. Only root can
    make, open or lock a file in the folder (``_uid_folder``: root's, mode 0700), so no other user can take a uid
    first or make a grader skip one (abstract Unix socket names, which held the uids before, are open to every
    user: one who bound them all stopped root's grading)."""
    global _UID_HELD
    folder = _uid_folder()
    try:
        for uid in range(UID_BASE + 1, UID_BASE + MAX_UIDS):
            held = os.open(
                str(uid), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=folder
            )
            try:
                fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(held)
                continue
            _UID_HELD = held
            return uid
    finally:
        os.close(folder)
    raise RuntimeError(f"{MAX_UIDS - 1} grading processes already run on this machine: no uid is free")


def _uid_folder() -> int:
    """A descriptor of ``UID_FOLDER``, made (root's, 0700) if it is missing; a clear error if it is a symlink, not a
    folder, or not root's with mode 0700: a folder another user could write would let them hold the uids."""
    made = True
    try:
        os.mkdir(UID_FOLDER, 0o700)
    except FileExistsError:
        made = False
    except OSError as err:
        raise RuntimeError(
            f"cannot make {UID_FOLDER}, the folder where root's grading processes claim their uids ({err}): "
            "make it, owned by root with mode 0700"
        ) from err
    try:
        folder = os.open(UID_FOLDER, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as err:
        raise RuntimeError(
            f"{UID_FOLDER}, where root's grading processes claim their uids, must be a folder, not a symlink or a "
            f"file ({err}): remove it (it is made again)"
        ) from err
    if made:
        os.fchmod(folder, 0o700)  # the bits of the owner's that a umask took away
    found = os.fstat(folder)
    if found.st_uid != 0 or stat.S_IMODE(found.st_mode) != 0o700:
        os.close(folder)
        raise RuntimeError(
            f"{UID_FOLDER}, where root's grading processes claim their uids, must be root's with mode 0700, not "
            f"uid {found.st_uid}'s with mode {stat.S_IMODE(found.st_mode):04o}: another user could hold the uids; "
            f"remove it (it is made again) or give it to root with mode 0700"
        )
    return folder


def _sandbox() -> Sandbox:
    """This process's sandbox, made on first use."""
    global _SANDBOX
    if _SANDBOX is None:
        _SANDBOX = Sandbox(uid=_free_uid()) if os.geteuid() == 0 else Sandbox()
    return _SANDBOX


def _safe_path(root: Path, name: str) -> Path:
    """``root / name`` for a relative path that stays inside ``root``, else a clear error."""
    parts = PurePosixPath(name).parts
    if not parts or PurePosixPath(name).is_absolute() or ".." in parts:
        raise ValueError(f"a submitted file's path must be relative and stay in the submission, not {name!r}")
    return root.joinpath(*parts)


def _worker_folder() -> str | None:
    """The folder of the Dask worker this task runs in (``local_directory``): the local cluster's and the loopback
    cluster's are inside a folder of the run's own, removed when the cluster stops; a ``dask worker`` of another
    machine removes its own when it closes, and a dead worker's is removed by the next worker started there. None
    outside a worker (the system's temporary folder)."""
    from distributed import get_worker

    try:
        return get_worker().local_directory
    except ValueError:  # not in a worker's task
        return None


def score_student(
    sources: dict[str, bytes], files: dict[str, bytes], cell_timeout: float, notebook_timeout: float
) -> dict:
    """The score of record of each source notebook (``sources``: file name -> bytes) for one submission
    (``files``: path relative to the submission folder -> bytes). Returns ``{"notebooks": [record, ...],
    "seconds": ..., "worker": host}``, each record ``Record.to_json()``, in the order of the notebooks' names.
    ``cell_timeout``: seconds for each answer cell and call; ``notebook_timeout``: for one notebook in all."""
    started = time.perf_counter()
    # the grader's own work (reference computations, comparisons) on one thread: a machine runs a worker per
    # core, and a second thread each made torch's small operations several times slower under that load
    torch.set_num_threads(1)
    sandbox = _sandbox()
    with tempfile.TemporaryDirectory(prefix="posref-submission-", dir=_worker_folder()) as tmp:
        source_dir, submission, scratch_base = (
            Path(tmp) / "source",
            Path(tmp) / "submission",
            Path(tmp) / "scratch",
        )
        for root, contents in ((source_dir, sources), (submission, files)):
            root.mkdir()
            for name, data in contents.items():
                path = _safe_path(root, name)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
        records = []
        for name in sorted(sources):
            try:
                record = grade_notebook(
                    source_dir / name, submission / name, sandbox=sandbox, scratch_base=scratch_base,
                    timeout=cell_timeout, budget=notebook_timeout,
                )  # fmt: skip
            except Exception as err:  # the grader's own fault: this notebook goes to a person, never scored
                reason = f"grader error: {type(err).__name__}: {student_text(str(err))}"
                record = Record(notebook=name, status="could not grade", reason=reason, sandbox=sandbox.mode)
            records.append(record.to_json())
    return {"notebooks": records, "seconds": time.perf_counter() - started, "worker": socket.gethostname()}
