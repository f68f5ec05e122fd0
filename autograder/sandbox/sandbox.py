"""The sandbox that runs student code: bubblewrap, resource limits, and an unprivileged user.

A child sees a minimal root: the system directories and the Python environment read-only, posref and the
course's ``data/`` (the corpus and checkpoints that notebooks 06-08 read) read-only under ``/opt/posref``, a private
size-limited ``/tmp`` and ``/dev/shm``, and as its working directory ``/scratch``, a size-limited tmpfs into
which the child itself writes the student's submission folder (without notebooks) before any student code runs
(``submission_files``): nothing a child writes reaches the course's disk, and it all vanishes with the child.
It has no network, a PID namespace of the sandbox's own (nothing it forks outlives it), and limits on CPU
seconds, address space, processes and file size. Children are forks of one such sandboxed process per worker
that imported torch once (``fork_server``, see ``posref/grading/child/forkserver.py``). A child's memory as a whole
(memfd and tmpfs included) is bounded by a memory cgroup per child where the grader can make one
(``cgroup.py``); everywhere, a seccomp filter (``seccomp.py``) refuses memfd and System V shared memory, the memory
that no per-process limit counts, and what would outlive the child in the kernel: System V message queues and
semaphores, POSIX message queues (all of them kept by the IPC namespace, which every fork of one server shares) and
keys (a uid's keyring is the uid's, on the host too). A child makes no user namespace (in one it is root again): as
root, or without bubblewrap, the filter refuses it; as an ordinary user, bubblewrap's ``--disable-userns`` does. A
child starts with a session keyring of its own, empty (not the grader's). The sandbox's root and ``/dev`` are
read-only; ``/proc/1/cmdline`` and ``/proc/self/mountinfo`` name the host's folders of what is bound read-only,
which gives a child nothing it does not have. The grader's own long-lived children (the fork server, the speed
checks' reference) are started afresh before their CPU limit, per process and never reset, can end them
(``RENEW_AFTER``). When the grader runs as root it drops to a per-worker unprivileged uid first (as root the process
limit is not enforced).

Without bubblewrap (``bwrap`` not installed, or user namespaces disabled) no student code runs: a child would run
with the grader's own privileges (as root, or as the instructor), where it can find the course folder through its
ancestors (their environment, their working directory) and rewrite a classmate's submission. ``Sandbox.refusal``
says so with the fix, every notebook is "could not grade" with it, and ``autograde`` stops before grading anyone.
Only for a class whose code the instructor trusts (``TRUSTED``, ``autograde --trusted-class``) does a child run
without bubblewrap, with the resource limits, a scrubbed environment and a private working directory, and, when the
grader is root, as the unprivileged uid where that uid can run the Python environment; ``Sandbox.mode`` says so and
every report quotes it.
"""

from __future__ import annotations

import atexit
import functools
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from autograder.course import REPO
from autograder.sandbox import seccomp
from autograder.sandbox.cgroup import ChildGroups, CpuGroups, MemoryGroups
from posref._data import DATA_DIR
from posref.grading.child.forkserver import ForkServer, ServerGone
from posref.grading.child.processes import cpu_seconds

POSREF_IN_SANDBOX = "/opt/posref"
# what the course notebooks' first cells import (and their explorers), imported once by each worker's fork server
# instead of once per notebook (0.7-1.4 s of each child's first cell on the loaded 2-core machine): a fork starts
# with them loaded, copies of a server that never ran student code
PRELOAD = (
    "matplotlib.pyplot",
    "posref",
    "posref.notebook",
    "posref.explorers",
    "posref.inspector",
    "posref.lab.checkpoints",
    "posref.lab.evaluate",
    "posref.lab.model",
    "posref.lab.tasks",
    "posref.lab.train",
    "posref.longrope_search",
    "posref.scaling",
)
MAX_ENTRIES = 10_000  # files, folders and links of a submission folder given to the child
# a process of the grader's own that lives as long as the worker (the fork server, the reference child) is started
# afresh before the next use once it has used this share of its CPU limit: the limit, per process and never reset,
# would otherwise end it in the middle of a student's check after a few thousand of them
RENEW_AFTER = 0.5
# as root, the speed checks' reference child runs as the students' uid + this: what a uid holds is counted per uid
# (processes and threads against one process limit, keys, inotify instances), and the grader's reference shares
# none of it with a student's child
REFERENCE_UID_OFFSET = 1000
MAX_DEPTH = 64


@dataclass(frozen=True)
class Limits:
    cpu_seconds: int = 600
    address_space: int = 4 * 2**30
    processes: int = 64
    file_size: int = 64 * 2**20
    tmp_size: int = 128 * 2**20
    memory: int = 4 * 2**30  # all of a child's memory, where a memory cgroup can be had
    scratch_size: int = 256 * 2**20  # the working directory (a tmpfs), the submission's files included


@functools.cache
def _bwrap_disables_userns() -> bool:
    """Whether this bubblewrap can keep a sandbox from making user namespaces (``--disable-userns``)."""
    return "--disable-userns" in subprocess.run(["bwrap", "--help"], capture_output=True, text=True).stdout


TRUSTED = "POSREF_TRUSTED_CLASS"
"""An environment variable: ``1`` lets a class be graded without bubblewrap (``Sandbox.refusal``), the instructor
saying that the students' code is trusted (``autograde --trusted-class`` sets it for its workers)."""


def trusted_class() -> bool:
    return os.environ.get(TRUSTED) == "1"


def _fix(problem: str) -> str:
    """How to have bubblewrap here, for a ``_bwrap_works`` problem."""
    if "not installed" in problem:
        return "install bubblewrap (sh autograder/setup_sandbox.sh, or apt-get install bubblewrap)"
    return (
        "let bubblewrap make its namespaces: allow unprivileged user namespaces (sysctl "
        "kernel.unprivileged_userns_clone=1 where that setting exists, kernel.apparmor_restrict_unprivileged_userns=0 "
        "on Ubuntu), or, in a container, run it with user namespaces allowed (see the autograder README)"
    )


@functools.cache
def _can_run_as(uid: int) -> bool:
    """Whether ``uid`` can run this Python environment and import posref (without bubblewrap, as root)."""
    probe = subprocess.run(
        ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all", "--", sys.executable, "-I", "-c",
         f"import sys; sys.path[:0] = [{str(REPO)!r}]; import posref.grading"],
        capture_output=True, cwd="/", env={"PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    return probe.returncode == 0


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


_FORK_SERVERS: dict[tuple, ForkServer] = {}


@atexit.register
def _close_fork_servers() -> None:
    for server in _FORK_SERVERS.values():
        server.close()


@functools.cache
def _seccomp_works() -> str | None:
    """None if the seccomp filter can be installed in a child here, else why not."""
    try:
        subprocess.run(["true"], preexec_fn=seccomp.install, check=True)
    except (OSError, subprocess.SubprocessError) as err:
        return f"the seccomp filter cannot be installed here ({err})"
    return None


class Sandbox:
    """Builds the command, environment and limits for one child. ``uid``: the unprivileged user (when root)."""

    def __init__(self, *, uid: int = 61000, limits: Limits = Limits(), trusted: bool | None = None) -> None:
        self.limits = limits
        self.uid = uid if os.geteuid() == 0 else None
        self.problem = _bwrap_works()
        self.trusted = trusted_class() if trusted is None else trusted
        self.memory, self.cpu = MemoryGroups(limits.memory), CpuGroups()
        self.seccomp_problem = _seccomp_works()
        if self.problem is not None and self.uid is not None and not (self.trusted and _can_run_as(self.uid)):
            self.uid = None  # no student code runs, or a trusted class's runs as the grader
        as_who = (
            ""
            if self.problem is None
            else f", as uid {self.uid}"
            if self.uid is not None
            else ", as the grader"
        )
        self.mode = (
            "bubblewrap"
            if self.problem is None
            else f"degraded (resource limits only, a class trusted with {TRUSTED}=1{as_who}): {self.problem}"
        ) + f"; memory: {self.memory_bound}; CPU of a timed round: {self.cpu_accounting}"

    @property
    def refusal(self) -> str | None:
        """Why no student code may run here, with the fix; None where it may (bubblewrap, or a trusted class)."""
        if self.problem is None or self.trusted:
            return None
        who = "root" if os.geteuid() == 0 else "the instructor's own user"
        return (
            f"nothing was run: the grading sandbox cannot start here ({self.problem}), and without it the "
            f"students' code would run as {who}, with the grader's privileges (it could find the course folder "
            f"and change other students' submissions). Fix: {_fix(self.problem)}; then grade again. Only for a "
            f"class whose code you trust: autograde --trusted-class (or {TRUSTED}=1 in the graders' environment) "
            "runs it with resource limits only"
        )

    @property
    def memory_bound(self) -> str:
        """What bounds a child's memory here, in words (quoted in every record)."""
        if self.memory.problem is None:
            return f"a memory cgroup of {self.limits.memory / 2**30:g} GiB per child"
        bound = (
            f"{self.limits.address_space / 2**30:g} GiB of address space per process, at most "
            f"{self.limits.processes} processes"
        )
        refused = "memfd and System V shared memory refused" if self.seccomp_problem is None else ""
        return f"{bound}; {refused or self.seccomp_problem} (no memory cgroup: {self.memory.problem})"

    @property
    def cpu_accounting(self) -> str:
        """What a timed round is charged here, in words (quoted in every record)."""
        if self.cpu.problem is None:
            return f"each child's cgroup ({self.cpu.base})"
        closed = (
            "closed by the sandbox's PID namespace"
            if self.problem is None
            else "not closed without bubblewrap"
        )
        return f"each child's processes, reaped ones included ({closed}; no CPU cgroup: {self.cpu.problem})"

    def groups(self) -> ChildGroups:
        """Fresh cgroups for one child (``cgroup.py``): its memory's and its CPU time's, where the machine has them;
        none left behind where the second cannot be made."""
        memory = self.memory.make()
        try:
            return ChildGroups(memory, self.cpu.make())
        except BaseException:
            if memory is not None:
                memory.remove()
            raise

    def scratch(self, base: Path) -> Path:
        """``<private dir>/work``: the private directory (root-only when root) holds the child's log; ``work`` is
        the working directory of a child without bubblewrap (with it, the child works in its own tmpfs)."""
        base.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix="scratch-", dir=os.path.realpath(base))) / "work"
        work.mkdir()
        if self.uid is not None:
            os.lchown(work, self.uid, self.uid)
        return work

    def python_command(self, work: Path) -> tuple[list[str], str, list[str]]:
        """(command prefix ending in python, working directory, extra sys.path entries) for a child.

        As root, bubblewrap starts as root (it can then read a Python under root's home) and the command inside
        it drops to the unprivileged uid with ``setpriv`` before Python starts; as another user, bubblewrap
        makes its own user namespace, and the process limit is set inside it (``prlimit``: see ``set_limits``)."""
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
        if self.uid is None:
            drop = ["prlimit", f"--nproc={self.limits.processes}", "--"]
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
            # an ordinary user's sandbox is a user namespace: the child may not make more of them (their kernel
            # code is what escapes have gone through), where this bubblewrap can say so (0.8.0 on)
            else [
                "--unshare-all",
                "--unshare-user",
                *(["--disable-userns"] if _bwrap_disables_userns() else []),
            ]
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
            "--ro-bind", str(DATA_DIR), f"{POSREF_IN_SANDBOX}/data",
            "--perms", "1777", "--size", str(self.limits.scratch_size), "--tmpfs", "/scratch", "--chdir", "/scratch",
            # the sandbox's root and /dev are tmpfs without a size limit, and the child's own when bubblewrap made
            # its user namespace (an instructor's account): read-only, no memory is taken through them
            "--remount-ro", "/", "--remount-ro", "/dev",
            "--", *drop, python, "-I",
        ]  # fmt: skip
        return bwrap, str(work), [POSREF_IN_SANDBOX]

    def fork_server(self) -> ForkServer | None:
        """This worker's fork server for children of this sandbox (started on first use, again if it ended or
        has used ``RENEW_AFTER`` of its CPU limit: it is never in use between children), or None without
        bubblewrap (the server needs a PID namespace of its own) or where it cannot start."""
        if self.problem is not None:
            return None
        key = (self.uid, self.limits)
        server = _FORK_SERVERS.get(key)
        if server is not None and server.alive and not self.worn([server.pid]):
            return server
        if server is not None:
            server.close()
        command, _, python_path = self.python_command(Path("/"))  # with bubblewrap: no folder of the host's
        try:
            server = _FORK_SERVERS[key] = ForkServer(
                command,
                "/scratch",
                env=self.env(),
                cwd="/",
                python_path=python_path,
                preexec_fn=self.set_limits,
                preload=PRELOAD,
            )
        except (ServerGone, OSError):
            _FORK_SERVERS.pop(key, None)
            return None
        return server

    @functools.cached_property
    def for_reference(self) -> Sandbox:
        """The sandbox of the speed checks' reference child: this one, as another unprivileged uid when root
        (``REFERENCE_UID_OFFSET``), so that no student's processes count against its process limit."""
        if self.uid is None:
            return self
        return Sandbox(uid=self.uid + REFERENCE_UID_OFFSET, limits=self.limits, trusted=self.trusted)

    def worn(self, pids: Iterable[int]) -> bool:
        """Whether a long-lived process of the grader's own (``pids``: its processes) has used ``RENEW_AFTER`` of its
        CPU limit, and so is to be started afresh before it is used again."""
        return cpu_seconds(pids) > RENEW_AFTER * self.limits.cpu_seconds

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

    def set_limits(self, groups: ChildGroups | None = None) -> None:
        """Run in the forked child before exec: the limits then hold for everything it starts."""
        if groups is not None:
            groups.join()
        lim = self.limits
        resource.setrlimit(resource.RLIMIT_CPU, (lim.cpu_seconds, lim.cpu_seconds + 5))
        resource.setrlimit(resource.RLIMIT_AS, (lim.address_space, lim.address_space))
        if self.uid is not None or self.problem is not None:
            # As an ordinary user with bubblewrap, prlimit sets it inside the sandbox's user namespace instead: set
            # here, it held bubblewrap to the instructor's own processes and threads on the whole machine, and an
            # instructor with more than 64 of them (a browser, JupyterLab) could start no sandbox ("Creating new
            # namespace failed: Resource temporarily unavailable"). Inside, it counts the sandbox's processes only.
            resource.setrlimit(resource.RLIMIT_NPROC, (lim.processes, lim.processes))
        resource.setrlimit(resource.RLIMIT_FSIZE, (lim.file_size, lim.file_size))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        seccomp.new_session_keyring()
        if self.seccomp_problem is None:
            # no user namespace for the child, where bubblewrap is not to make one (``seccomp.py``)
            seccomp.install(userns=self.uid is not None or self.problem is not None)


def submission_files(folder: Path | None, limit: int) -> tuple[list[tuple[str, str, Any]], str]:
    """The submission folder's content for the child to write into its working directory, notebooks left out:
    ``([(kind, relative path, data), ...], note)`` with kind ``"dir"``, ``"file"`` (data: a uint8 tensor) or
    ``"link"`` (data: the link's target, kept as it is: a link to the gradebook points nowhere in the sandbox).
    Walked without recursion; past ``limit`` bytes, ``MAX_ENTRIES`` entries or ``MAX_DEPTH`` levels the rest is
    left out and ``note`` says so ('' when nothing was)."""
    entries: list[tuple[str, str, Any]] = []
    if folder is None or not folder.is_dir():
        return entries, ""
    size, note = 0, ""
    stack = [("", 0)]
    while stack and not note:
        relative, depth = stack.pop()
        try:
            children = sorted(os.scandir(folder / relative), key=lambda e: e.name)
        except OSError:
            continue
        for entry in children:
            path = os.path.join(relative, entry.name)
            if len(entries) >= MAX_ENTRIES:
                note = f"more than {MAX_ENTRIES} files and folders"
                break
            if entry.is_symlink():
                entries.append(("link", path, os.readlink(entry.path)))
            elif entry.is_dir():
                if depth + 1 >= MAX_DEPTH:
                    note = f"folders nested more than {MAX_DEPTH} deep"
                    break
                entries.append(("dir", path, None))
                stack.append((path, depth + 1))
            elif entry.is_file() and not entry.name.endswith(".ipynb"):
                size += entry.stat().st_size
                if size > limit:
                    note = f"more than {limit / 2**20:g} MiB of files besides the notebooks"
                    break
                data = Path(entry.path).read_bytes()
                entries.append(("file", path, torch.frombuffer(bytearray(data), dtype=torch.uint8)))
    if note:
        note = f"the submission folder holds {note}: the rest of it was not given to the answer cells"
    return entries, note
