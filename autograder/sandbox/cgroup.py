"""Cgroups per child: a bound on ALL the memory a child and everything it starts hold, and the CPU time they use.

The address-space limit (``RLIMIT_AS``) is per process and counts mappings only: pages of a tmpfs file, an
anonymous file (memfd) or a shared-memory segment outlive their mapping, and 64 processes may each map the
limit. A memory cgroup counts every page charged to its processes (anonymous memory, tmpfs and page cache,
kernel memory), and its OOM killer ends the child when the limit is reached: the call or cell then fails with
"killed by signal 9", the grader goes on.

Where one can be had: the grader is root and the memory controller is mounted as cgroup v1 (this course's
machines and CI); the child's group is made under the grader's own memory cgroup, so it stays inside whatever
limits the machine already puts on the grader. Elsewhere (an instructor's account without root, a cgroup v2
machine) ``MemoryGroups.problem`` says why there is none, and the sandbox reports that memory is bounded per
process only (address space, size-limited tmpfs, and no memfd or System V shared memory: ``seccomp.py``).

A CPU group (``CpuGroups``) counts the CPU time of every process that was ever in it, living or reaped: what a timed
round is charged (``posref.grading.child.remote.Child.cpu_seconds``), which no helper process that ends with the
round can take away. It is the v1 ``cpuacct`` controller's group (``cpuacct.usage``) where the grader can make one
there (root, as on this course's machines and CI), else a group of the v2 hierarchy (``cpu.stat``'s ``usage_usec``,
kept by every v2 group) where the grader may write one (root, or a delegated subtree); elsewhere ``CpuGroups.problem``
says why, and a round is charged its process tree's CPU time, reaped processes included, instead.

Every group is held by the grader that made it: an exclusive ``flock`` on the group's directory, which the kernel
drops when that grader ends, however it ends. A grader starting up removes the groups under its base that nobody
holds (left by one that was killed) and nothing else: not a group of a grader in another PID namespace sharing the
same base, whose process number means nothing here.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import signal
import subprocess
import time
from pathlib import Path

V1_ROOT = Path("/sys/fs/cgroup/memory")
PREFIX = "posref-child-"


def _own_v1_group() -> Path | None:
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            return V1_ROOT / path.lstrip("/")
    return None


def _own_group(controller: str | None) -> Path | None:
    """This process's cgroup in the hierarchy of the v1 ``controller`` (None: the v2 hierarchy), where it is mounted
    (``/proc/self/mountinfo``: mount point, root of the mount, options)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = [line.split(" - ") for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    except OSError:
        return None
    wanted = "cgroup2" if controller is None else "cgroup"
    for line in lines:
        hierarchy, controllers, path = line.split(":", 2)
        if (controller is None) != (hierarchy == "0") or (
            controller and controller not in controllers.split(",")
        ):
            continue
        own = Path("/" + path.lstrip("/"))
        for before, after in (m for m in mounts if len(m) == 2):
            fstype, _, options = (after.split() + ["", ""])[:3]
            root, point = before.split()[3:5]
            if fstype == wanted and (controller is None or controller in options.split(",")):
                # under the mount's root as a folder, not by a name's first letters: /foobar is not under /foo
                if own.is_relative_to(root):
                    return Path(point) / own.relative_to(root)
    return None


def _pids(group: Path) -> list[int]:
    try:
        return [int(p) for p in (group / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def _remove(group: Path, patience: float = 10.0) -> bool:
    """Kill what is left in ``group`` and remove it; False if it still holds processes after ``patience`` s."""
    stop = time.monotonic() + patience
    while True:
        for pid in _pids(group):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            group.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError:
            if time.monotonic() > stop:
                return False
            time.sleep(0.02)


def _open(group: Path) -> int:
    return os.open(group, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)


def _claim(base: Path) -> tuple[Path, int]:
    """A fresh group under ``base``, held: (its path, the descriptor that holds its lock until it is closed)."""
    while True:
        # a random name: unique beside the groups of graders in other PID namespaces
        path = base / f"{PREFIX}{os.getpid()}-{secrets.token_hex(6)}"
        path.mkdir()
        try:
            fd = _open(path)
        except FileNotFoundError:  # a sweep took it between mkdir and open: make another
            continue
        fcntl.flock(fd, fcntl.LOCK_EX)
        if path.is_dir():  # else a sweep took it between open and flock: make another
            return path, fd
        os.close(fd)


def _sweep(base: Path) -> None:
    """Remove the groups under ``base`` that no living grader holds (its grader was killed)."""
    for path in base.glob(f"{PREFIX}*"):
        try:
            fd = _open(path)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue  # held: its grader lives
        try:
            _remove(path, patience=1.0)
        finally:
            os.close(fd)


def _move(procs: str, pid: int) -> None:
    """Move process ``pid`` into the group whose ``cgroup.procs`` file is ``procs`` (one write of its number)."""
    fd = os.open(procs, os.O_WRONLY)
    try:
        os.write(fd, str(pid).encode())
    finally:
        os.close(fd)


class _Group:
    """A fresh group under ``base``, held by this process until ``remove``."""

    def __init__(self, base: Path) -> None:
        self.path, self._held = _claim(base)
        self._procs = str(self.path / "cgroup.procs")

    def add(self, pid: int) -> None:
        """Move process ``pid`` into the group (what it uses from then on counts here)."""
        _move(self._procs, pid)

    def remove(self) -> bool:
        """Kill whatever is still in the group and remove it (False: some process would not go). Its lock is let go
        once: a second call closes no descriptor (by then, perhaps another file's)."""
        try:
            return _remove(self.path)
        finally:
            held, self._held = self._held, None
            if held is not None:
                os.close(held)


class MemoryGroup(_Group):
    """A fresh memory cgroup limited to ``limit`` bytes (swap included where the kernel counts it)."""

    def __init__(self, base: Path, limit: int) -> None:
        super().__init__(base)
        try:
            (self.path / "memory.limit_in_bytes").write_text(str(limit))
            if (self.path / "memory.memsw.limit_in_bytes").exists():
                (self.path / "memory.memsw.limit_in_bytes").write_text(str(limit))
        except OSError:
            self.remove()
            raise

    @property
    def peak(self) -> int:
        """The most memory the group has held, in bytes."""
        return int((self.path / "memory.max_usage_in_bytes").read_text())


class MemoryGroups:
    """Makes a ``MemoryGroup`` per child where this machine lets the grader, else says why not (``problem``)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.base, self.problem = self._find()
        if self.base is not None:
            _sweep(self.base)

    @staticmethod
    def _find() -> tuple[Path | None, str | None]:
        if os.geteuid() != 0:
            return None, "not root (a memory cgroup needs root here)"
        base = _own_v1_group()
        if base is None or not base.is_dir():
            return None, "no cgroup v1 memory controller at /sys/fs/cgroup/memory"
        try:
            MemoryGroup(base, 2**30).remove()
        except OSError as err:
            return None, f"cannot make a memory cgroup in {base}: {err.strerror or err}"
        return base, None

    def make(self) -> MemoryGroup | None:
        """A fresh group for one child, or None where there are none."""
        if self.base is None:
            return None
        return MemoryGroup(self.base, self.limit)


class CpuGroup(_Group):
    """A fresh cgroup (``cpuacct`` v1, or v2) counting the CPU time of every process ever in it (``seconds``)."""

    def __init__(self, base: Path) -> None:
        super().__init__(base)
        self._usage = self.path / ("cpuacct.usage" if (self.path / "cpuacct.usage").exists() else "cpu.stat")

    def seconds(self) -> float:
        """The CPU seconds the group's processes, living and ended, have used."""
        text = self._usage.read_text()
        if self._usage.name == "cpuacct.usage":
            return int(text) / 1e9
        return (
            int(next(line for line in text.splitlines() if line.startswith("usage_usec ")).split()[1]) / 1e6
        )


class CpuGroups:
    """Makes a ``CpuGroup`` per child where this machine lets the grader, else says why not (``problem``)."""

    def __init__(self) -> None:
        self.base, self.problem = self._find()
        if self.base is not None:
            _sweep(self.base)

    @staticmethod
    def _find() -> tuple[Path | None, str | None]:
        problems = []
        for controller, name in (("cpuacct", "the v1 cpuacct controller"), (None, "the v2 hierarchy")):
            base = _own_group(controller)
            if base is None or not base.is_dir():
                problems.append(f"{name} is not mounted")
                continue
            try:  # a group, a process moved into it and its time read: what each child's needs
                probe = CpuGroup(base)
            except OSError as err:
                problems.append(f"cannot make a CPU cgroup in {base}: {err.strerror or err}")
                continue
            try:
                subprocess.run(["true"], preexec_fn=lambda group=probe: group.add(os.getpid()), check=True)
                probe.seconds()
            except (OSError, subprocess.SubprocessError, StopIteration, ValueError) as err:
                problems.append(f"cannot count a process's CPU time in {base}: {err}")
                continue
            finally:
                probe.remove()
            return base, None
        return None, "; ".join(problems)

    def make(self) -> CpuGroup | None:
        """A fresh group for one child, or None where there are none."""
        if self.base is None:
            return None
        return CpuGroup(self.base)


class ChildGroups:
    """The groups of one child (``memory``, ``cpu``: either may be None where the machine has none): joined,
    added to and removed together."""

    def __init__(self, memory: MemoryGroup | None, cpu: CpuGroup | None) -> None:
        self.memory, self.cpu = memory, cpu

    def add(self, pid: int) -> None:
        for group in (self.memory, self.cpu):
            if group is not None:
                group.add(pid)

    def join(self) -> None:
        """Move the calling process into the groups (run in the forked child before exec)."""
        self.add(os.getpid())

    def remove(self) -> None:
        for group in (self.memory, self.cpu):
            if group is not None:
                group.remove()
