"""The Dask cluster that grades: a local one on this machine, the instructor's (``--scheduler ADDRESS``), or a
loopback one of separate processes on 127.0.0.1 (for the tests and the benchmark).

One code path: ``autograde`` always talks to a ``distributed.Client``. Without ``--scheduler`` the client
starts a ``LocalCluster`` of worker processes (spawned, one thread each: one student at a time per worker).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from contextlib import contextmanager
from pathlib import Path

from autograder.course import REPO
from autograder.sandbox.sandbox import TRUSTED

CONNECT_TIMEOUT = 30.0  # seconds to reach a scheduler


@contextmanager
def dask_client(scheduler: str | None, workers: int, *, trusted: bool = False):
    """A ``distributed.Client`` on the scheduler at ``scheduler``, or on a local cluster of ``workers`` worker
    processes started for the block and stopped after it; ``trusted``: the local workers grade a class whose code
    is trusted (``sandbox.TRUSTED`` set in their environment alone; a remote scheduler's workers have their own).

    The local cluster is this user's alone, though 127.0.0.1 is every user's of the machine: its connections are
    TLS with a key and certificate made for the run, in memory (``security=True``), which the scheduler and workers
    require of whoever connects (without it, another user connected and ran code in the workers as the grader:
    the course folder, the gradebook); no page of the scheduler or a worker is served (the task names hold student
    ids); its scratch is a folder of the run's own, removed after it (not ``$TMPDIR/dask-scratch-space``, which
    outlived every run and belonged to whoever graded first)."""
    import dask
    from distributed import Client, LocalCluster

    if scheduler is None:
        # the scheduler's page server moves off port 8787 when another user's cluster holds it, and Dask asked
        # whoever grades whether "you already have a cluster running"
        warnings.filterwarnings("ignore", message="Port 8787 is already in use", category=UserWarning)
        own = {
            "distributed.scheduler.http.routes": [],
            "distributed.worker.http.routes": [],
        }
        with (
            # the scheduler's and workers' scratch: a folder of this run's own (0700), removed after it, not Dask's
            # default $TMPDIR/dask-scratch-space, which outlived every run and belonged to whoever graded first
            tempfile.TemporaryDirectory(prefix="posref-dask-") as scratch,
            dask.config.set({**own, "temporary-directory": scratch}),
            LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1", scheduler_port=0,
                dashboard_address=None, silence_logs=logging.ERROR, security=True,
                env={TRUSTED: "1"} if trusted else {},
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
    named ``w{i}``. ``stop()`` (or the end of a ``with`` block) ends them all.

    As ``dask_client``'s local cluster, it is this user's alone: TLS with a key made for it, in its private folder
    (as files: the processes are started as commands), set in Dask's configuration of this process (its clients)
    and of each process it starts, and its scratch in that folder."""

    def __init__(self, workers: int = 2, *, start_timeout: float = 120.0) -> None:
        import dask
        from distributed.security import Security

        self.folder = Path(tempfile.mkdtemp(prefix="posref-dask-"))
        made = Security.temporary()  # one self-signed certificate, its own authority, for every role
        cert, key = self.folder / "cert.pem", self.folder / "key.pem"
        cert.write_text(made.tls_ca_file)
        key.write_text(made.tls_scheduler_key)
        tls = {"distributed.comm.require-encryption": True, "distributed.comm.tls.ca-file": str(cert)}
        for role in ("scheduler", "worker", "client"):
            tls |= {
                f"distributed.comm.tls.{role}.cert": str(cert),
                f"distributed.comm.tls.{role}.key": str(key),
            }
        self._tls = dask.config.set(tls)
        self.env = dict(
            os.environ,
            DASK_TEMPORARY_DIRECTORY=str(self.folder),
            **{
                "DASK_" + name.upper().replace(".", "__").replace("-", "_"): str(v) for name, v in tls.items()
            },
        )
        file = self.folder / "scheduler.json"
        self.scheduler = subprocess.Popen(
            [*_python("distributed.cli.dask_scheduler"), "--host", "127.0.0.1", "--port", "0", "--protocol", "tls",
             "--no-dashboard", "--scheduler-file", str(file)],
            cwd=REPO, env=self.env, stdout=subprocess.DEVNULL,
            stderr=open(self.folder / "scheduler.log", "w"),  # noqa: SIM115
        )  # fmt: skip
        self.workers: dict[str, subprocess.Popen] = {}
        deadline = time.monotonic() + start_timeout
        while not file.exists() or not file.read_text().strip():
            if self.scheduler.poll() is not None or time.monotonic() > deadline:
                log = (self.folder / "scheduler.log").read_text()
                self.stop()
                raise RuntimeError(f"the Dask scheduler did not start: {log}")
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
        if self._tls is not None:
            self._tls.__exit__(None, None, None)
            self._tls = None
        # its key, logs and scratch: nothing of it outlives the cluster
        shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> LoopbackCluster:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
