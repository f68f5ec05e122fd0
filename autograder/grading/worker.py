"""What a grading worker runs: the score of record of one student's submission, from the bytes it is sent.

A worker (a process of a Dask cluster: local, or on other machines through ``--scheduler``) gets the source
notebooks of one assignment and the files of one student's submission, grades each notebook in its own
bubblewrap sandboxes (``record.grade_notebook``) and returns the records as plain data. It never sees the
course folder (no gradebook, no other student, no records) and writes nothing but its own temporary folder,
removed after each student; the instructor's process writes the gradebook, the records and the notebooks.

A worker process keeps one ``Sandbox`` with its own unprivileged uid (when root: 62001, 62002, … taken with a
lock file in root's own private temporary folder, ``course.private_folder``, so that every worker process of root's
on a machine has its own, however they were started; its speed checks' reference child runs as that uid + 1000;
a worker of an ordinary user takes none: its children run as that user) and one scratch folder for its whole life
(the sandbox's per-worker state, reference children included, lives as long as the process).
"""

from __future__ import annotations

import fcntl
import os
import socket
import tempfile
import time
from pathlib import Path, PurePosixPath

import torch

from autograder.course import private_folder
from autograder.grading.record import Record, grade_notebook
from autograder.sandbox.sandbox import Sandbox
from posref.grading.child.plain_data import student_text

# apart from 61000 (a Sandbox made without a uid: tests, the notebooks' checks) and from 61001, 61002, … (the
# uids of earlier versions, one per worker number: a fork bomb graded by one of them filled that uid's process
# limit, and a child of ours with the same uid could not start, "exited with code 126 while starting")
UID_BASE = 62000
MAX_UIDS = 1000

_SANDBOX: tuple[Sandbox, Path] | None = None
_UID_LOCK = None  # the open lock file of this process's uid, held until it exits


def _free_uid() -> int:
    """An unprivileged uid that no other grading process on this machine holds (a lock file per uid)."""
    global _UID_LOCK
    folder = private_folder("grader-uids")  # a folder in /tmp that anyone made first could block or trap root
    for k in range(1, MAX_UIDS):
        lock = open(folder / f"{k}.lock", "w")  # noqa: SIM115 (held open for the life of the process)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            continue
        _UID_LOCK = lock
        return UID_BASE + k
    raise RuntimeError(f"{MAX_UIDS - 1} grading processes already run on this machine: no uid is free")


def _sandbox() -> tuple[Sandbox, Path]:
    """This process's sandbox and scratch folder, made on first use."""
    global _SANDBOX
    if _SANDBOX is None:
        sandbox = Sandbox(uid=_free_uid()) if os.geteuid() == 0 else Sandbox()
        _SANDBOX = sandbox, Path(tempfile.mkdtemp(prefix="posref-worker-"))
    return _SANDBOX


def _safe_path(root: Path, name: str) -> Path:
    """``root / name`` for a relative path that stays inside ``root``, else a clear error."""
    parts = PurePosixPath(name).parts
    if not parts or PurePosixPath(name).is_absolute() or ".." in parts:
        raise ValueError(f"a submitted file's path must be relative and stay in the submission, not {name!r}")
    return root.joinpath(*parts)


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
    sandbox, scratch_base = _sandbox()
    with tempfile.TemporaryDirectory(prefix="posref-submission-") as tmp:
        source_dir, submission = Path(tmp) / "source", Path(tmp) / "submission"
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
            except (
                Exception
            ) as err:  # a fault of the grader's own: this notebook goes to a person, never scored
                reason = f"grader error: {type(err).__name__}: {student_text(str(err))}"
                record = Record(notebook=name, status="could not grade", reason=reason, sandbox=sandbox.mode)
            records.append(record.to_json())
    return {"notebooks": records, "seconds": time.perf_counter() - started, "worker": socket.gethostname()}
