"""A run leaves nothing behind (issue 35.4). The instructor's commands, as typed, with the system's temporary folder
(``TMPDIR``) an empty folder of the test's own, leave it empty: as root in tests/autograder/test_exchange.py (release,
collect, import, autograde, feedback, export), as an ordinary user in tests/autograder/test_ordinary_users.py. Each
grading worker left an empty ``posref-worker-*`` folder (31 after an afternoon's grading), the local Dask cluster its
``dask-scratch-space`` with two lock files, and a grader running as root a lock file per worker process: here, the
cluster's folder and root's hold on a uid, each on its own."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from autograder.grading import worker
from autograder.grading.cluster import LoopbackCluster


def _left_in(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.slow
def test_a_loopback_cluster_removes_its_folder_when_it_stops():
    with LoopbackCluster(workers=1) as cluster:
        assert (cluster.folder / "scheduler.json").exists()
    assert not cluster.folder.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="only root's grading processes claim a uid")
def test_a_grading_process_holds_its_uid_by_a_lock_outside_the_temporary_folder(tmp_path, monkeypatch):
    """Root's worker processes each take a uid of their own; the lock files that held them stayed in the temporary
    folder. The locks are now on files in a folder of root's under /run (tests/autograder/test_worker_uids.py
    holds the claims themselves): nothing is left in the temporary folder."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(worker, "_UID_HELD", None)
    uid = worker._free_uid()
    os.close(worker._UID_HELD)
    assert worker.UID_BASE < uid < worker.UID_BASE + worker.MAX_UIDS
    assert _left_in(tmp_path) == []
