"""The Dask cluster that grades: a local one on this machine, the instructor's (``--scheduler ADDRESS``), or a
loopback one of separate processes on 127.0.0.1 (for the tests and the benchmark).

One code path: ``autograde`` always talks to a ``distributed.Client``. Without ``--scheduler`` the client
starts a ``LocalCluster`` of worker processes (spawned, one thread each: one student at a time per worker).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from autograder.course import REPO, private_folder

CONNECT_TIMEOUT = 30.0  # seconds to reach a scheduler


@contextmanager
def dask_client(scheduler: str | None, workers: int):
    """A ``distributed.Client`` on the scheduler at ``scheduler``, or on a local cluster of ``workers`` worker
    processes started for the block and stopped after it."""
    import dask
    from distributed import Client, LocalCluster

    if scheduler is None:
        with (
            # the scheduler's and workers' scratch: not Dask's default $TMPDIR/dask-scratch-space, which belongs
            # to whoever graded first on this machine
            dask.config.set({"temporary-directory": str(private_folder("dask"))}),
            LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1", scheduler_port=0,
                dashboard_address=None, silence_logs=logging.ERROR,
            ) as cluster,
            Client(cluster) as client,
        ):  # fmt: skip
            yield client
        return
    try:
        client = Client(scheduler, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError) as err:
        raise SystemExit(f"cannot reach the Dask scheduler at {scheduler}: {err}") from err
    with client:
        yield client


def _python(module: str) -> list[str]:
    return [sys.executable, "-m", module]


class LoopbackCluster:
    """A Dask scheduler and ``workers`` workers, each a separate process (no nanny: a killed worker stays dead),
    on 127.0.0.1, as ``dask scheduler`` and ``dask worker`` would run them on other machines. Worker ``i`` is
    named ``w{i}``. ``stop()`` (or the end of a ``with`` block) ends them all."""

    def __init__(self, workers: int = 2, *, start_timeout: float = 120.0) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="posref-dask-"))
        # Dask's scratch in this private folder, not in $TMPDIR/dask-scratch-space (whoever graded first owns it)
        self.env = dict(os.environ, DASK_TEMPORARY_DIRECTORY=str(self.folder))
        file = self.folder / "scheduler.json"
        self.scheduler = subprocess.Popen(
            [*_python("distributed.cli.dask_scheduler"), "--host", "127.0.0.1", "--port", "0",
             "--no-dashboard", "--scheduler-file", str(file)],
            cwd=REPO, env=self.env, stdout=subprocess.DEVNULL,
            stderr=open(self.folder / "scheduler.log", "w"),  # noqa: SIM115
        )  # fmt: skip
        self.workers: dict[str, subprocess.Popen] = {}
        deadline = time.monotonic() + start_timeout
        while not file.exists() or not file.read_text().strip():
            if self.scheduler.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(
                    f"the Dask scheduler did not start: {(self.folder / 'scheduler.log').read_text()}"
                )
            time.sleep(0.1)
        self.address = json.loads(file.read_text())["address"]
        for i in range(1, workers + 1):
            self.add_worker(f"w{i}")
        self.wait_for_workers(workers, start_timeout)

    def add_worker(self, name: str) -> None:
        """One more worker process, run from the repository root as a worker machine would run it."""
        self.workers[name] = subprocess.Popen(
            [*_python("distributed.cli.dask_worker"), self.address, "--name", name, "--nthreads", "1",
             "--no-nanny", "--no-dashboard"],
            cwd=REPO, env=self.env, stdout=subprocess.DEVNULL,
            stderr=open(self.folder / f"{name}.log", "w"),  # noqa: SIM115
        )  # fmt: skip

    def wait_for_workers(self, n: int, timeout: float) -> None:
        from distributed import Client

        with Client(self.address, timeout=CONNECT_TIMEOUT) as client:
            client.wait_for_workers(n, timeout=timeout)

    def kill_worker(self, name: str) -> None:
        """SIGKILL: the worker dies at once, in the middle of whatever it was grading."""
        self.workers[name].send_signal(signal.SIGKILL)
        self.workers[name].wait()

    def stop_scheduler(self) -> None:
        self.scheduler.kill()
        self.scheduler.wait()

    def stop(self) -> None:
        for process in [*self.workers.values(), self.scheduler]:
            if process.poll() is None:
                process.kill()
                process.wait()

    def __enter__(self) -> LoopbackCluster:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
