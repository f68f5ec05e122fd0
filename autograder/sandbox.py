"""The sandbox that runs student code: bubblewrap, resource limits, and an unprivileged user.

A child sees a minimal root: the system directories and the Python environment read-only, posref and its
``data/`` (the corpus and checkpoints that notebooks 06-08 read) read-only at ``/opt/posref``, a private
size-limited ``/tmp``, and one writable scratch folder (a private copy of the student's submission folder, without
notebooks) as its working directory. It has no network, its own PID
namespace (everything it forks dies with it), and limits on CPU seconds, address space, processes and file
size. When the grader runs as root it drops to a per-worker unprivileged uid first (as root the process
limit is not enforced).

Without bubblewrap (``bwrap`` not installed, or user namespaces disabled) the child still runs with the
resource limits, but without filesystem or network isolation; ``Sandbox.mode`` says so and every report
quotes it.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from autograder.course import REPO

POSREF_IN_SANDBOX = "/opt/posref"


@dataclass(frozen=True)
class Limits:
    cpu_seconds: int = 600
    address_space: int = 4 * 2**30
    processes: int = 64
    file_size: int = 64 * 2**20
    tmp_size: int = 128 * 2**20


def _bwrap_works() -> str | None:
    """None if bubblewrap can start a sandbox here, else the reason it cannot."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed: apt-get install -y bubblewrap"
    probe = subprocess.run(
        ["bwrap", "--unshare-all", "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink",
         "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "/usr/bin/true"],
        capture_output=True, text=True,
    )  # fmt: skip
    if probe.returncode:
        return f"bubblewrap cannot create a sandbox here: {probe.stderr.strip()[:200]}"
    return None


class Sandbox:
    """Builds the command, environment and limits for one child. ``uid``: the unprivileged user (when root)."""

    def __init__(self, *, uid: int = 61000, limits: Limits = Limits()) -> None:
        self.limits = limits
        self.uid = uid if os.geteuid() == 0 else None
        self.problem = _bwrap_works()
        self.mode = (
            "bubblewrap" if self.problem is None else f"degraded (resource limits only): {self.problem}"
        )
        if self.uid is not None and self.problem is not None:
            # without bubblewrap the Python environment may not be readable by another user: stay as we are
            self.uid = None

    def scratch(self, submission_dir: Path | None, base: Path) -> Path:
        """A private writable copy of the submission folder (notebooks left out, links kept as links), as
        ``<private dir>/work``; the private directory (root-only when root) also holds the child's log."""
        base.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix="scratch-", dir=os.path.realpath(base))) / "work"
        if submission_dir is not None and submission_dir.is_dir():
            shutil.copytree(submission_dir, work, symlinks=True, ignore=shutil.ignore_patterns("*.ipynb"))
        else:
            work.mkdir()
        if self.uid is not None:
            for root, dirs, files in os.walk(work):
                for name in [root, *(os.path.join(root, n) for n in dirs + files)]:
                    os.lchown(name, self.uid, self.uid)
        return work

    def python_command(self, work: Path) -> tuple[list[str], str, list[str]]:
        """(command prefix ending in python, working directory, extra sys.path entries) for a child.

        As root, bubblewrap starts as root (it can then read a Python under root's home) and the command inside
        it drops to the unprivileged uid with ``setpriv`` before Python starts; as another user, bubblewrap
        makes its own user namespace."""
        python = sys.executable
        drop = (
            [
                "setpriv",
                f"--reuid={self.uid}",
                f"--regid={self.uid}",
                "--clear-groups",
                "--inh-caps=-all",
                "--",
            ]
            if self.uid is not None
            else []
        )
        if self.problem is not None:
            return [*drop, python, "-I"], str(work), [str(REPO)]
        binds = ["--ro-bind", "/usr", "/usr"]
        for name in ("bin", "lib", "lib64", "sbin"):
            if os.path.islink(f"/{name}"):
                binds += ["--symlink", os.readlink(f"/{name}"), f"/{name}"]
        made: set[str] = set()
        for path in sorted({sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(python))}):
            if not path.startswith("/usr"):
                # parents that bubblewrap would create are root-only (0700): make them traversable first
                for parent in reversed(Path(path).parents):
                    if str(parent) != "/" and str(parent) not in made:
                        binds += ["--perms", "0755", "--dir", str(parent)]
                        made.add(str(parent))
                binds += ["--ro-bind", path, path]
        for path in ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime"):
            if os.path.exists(path):
                binds += ["--ro-bind", path, path]
        namespaces = (
            ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
            if self.uid is not None
            else ["--unshare-all"]
        )
        bwrap = [
            "bwrap", *namespaces, "--die-with-parent", "--new-session",
            # the private /tmp first: mounted after the binds it would hide a Python environment under /tmp
            "--proc", "/proc", "--dev", "/dev",
            "--size", str(self.limits.tmp_size), "--tmpfs", "/tmp",
            "--size", str(self.limits.tmp_size), "--tmpfs", "/dev/shm",
            *binds,
            "--perms", "0755", "--dir", "/opt", "--perms", "0755", "--dir", POSREF_IN_SANDBOX,
            "--ro-bind", str(REPO / "posref"), f"{POSREF_IN_SANDBOX}/posref",
            "--ro-bind", str(REPO / "data"), f"{POSREF_IN_SANDBOX}/data",  # corpus and checkpoints (06-08)
            "--bind", str(work), "/scratch", "--chdir", "/scratch",
            "--", *drop, python, "-I",
        ]  # fmt: skip
        return bwrap, str(work), [POSREF_IN_SANDBOX]

    def env(self) -> dict[str, str]:
        return {
            "PATH": "/usr/bin:/bin",
            "HOME": "/tmp",
            "LANG": "C.UTF-8",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "MPLBACKEND": "Agg",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
            "POSREF_GRADING": "1",
            "POSREF_FAST": os.environ.get("POSREF_FAST", "1"),
        }

    def set_limits(self) -> None:
        """Run in the forked child before exec: the limits then hold for everything it starts."""
        lim = self.limits
        resource.setrlimit(resource.RLIMIT_CPU, (lim.cpu_seconds, lim.cpu_seconds + 5))
        resource.setrlimit(resource.RLIMIT_AS, (lim.address_space, lim.address_space))
        resource.setrlimit(resource.RLIMIT_NPROC, (lim.processes, lim.processes))
        resource.setrlimit(resource.RLIMIT_FSIZE, (lim.file_size, lim.file_size))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
