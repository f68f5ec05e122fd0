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
an abstract Unix socket named after it (``_free_uid``: the kernel releases the name when the process ends,
however it ends, and nothing is written), so that every worker process of root's on a machine has its own, however
they were started; its speed checks' reference child runs as that uid + 1000. A worker of an ordinary user takes
none: its children run as that user.
"""

from __future__ import annotations

import os
import socket
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

_SANDBOX: Sandbox | None = None
_UID_HELD: socket.socket | None = None  # the socket that holds this process's uid, open until it exits


def _free_uid() -> int:
    """An unprivileged uid that no other grading process on this machine holds. A process holds its uid by binding
    the abstract Unix socket ``posref-grader-uid-<uid>``: a name in the kernel, never a file (nothing to leave in
    the temporary folder, nothing another user could make first), released when the process ends, however it
    ends. Another process's name is refused (``EADDRINUSE``): the next uid is tried."""
    global _UID_HELD
    for k in range(1, MAX_UIDS):
        held = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # not inherited by the children (PEP 446)
        try:
            held.bind(f"\0posref-grader-uid-{UID_BASE + k}")
        except OSError:
            held.close()
            continue
        _UID_HELD = held
        return UID_BASE + k
    raise RuntimeError(f"{MAX_UIDS - 1} grading processes already run on this machine: no uid is free")


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
