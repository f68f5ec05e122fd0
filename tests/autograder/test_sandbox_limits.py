"""What a child cannot take from anyone else: memory (memfd, shared memory, tmpfs, plain allocations in several
processes), the disk (its working folder is a bounded tmpfs, cleaned without recursion), and a grading of its
own 0 as "could not grade" (replies are plain data only; the checker tripping over the child's data is a failed
check)."""

from __future__ import annotations

import errno
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.course import REPO
from autograder.demo.submissions import PE
from autograder.grading.record import _Children, _run_check
from autograder.sandbox import seccomp
from autograder.sandbox.cgroup import CpuGroups, MemoryGroups, _remove
from autograder.sandbox.sandbox import Limits, Sandbox
from posref.grading.child.remote import Child, ChildFailed
from posref.grading.child.scratch import remove_tree
from posref.grading.report import StudentError

pytestmark = pytest.mark.xdist_group("sandbox")  # children as Sandbox()'s default uid: see tests/conftest.py

SANDBOX = Sandbox()
needs_bwrap = pytest.mark.skipif(SANDBOX.problem is not None, reason=f"no sandbox: {SANDBOX.problem}")
needs_cgroup = pytest.mark.skipif(
    SANDBOX.memory.problem is not None, reason=f"no memory cgroup: {SANDBOX.memory.problem}"
)
needs_seccomp = pytest.mark.skipif(SANDBOX.seccomp_problem is not None, reason=str(SANDBOX.seccomp_problem))

MiB = 2**20

EATERS = """
import mmap, os, subprocess, sys
def memfd(mib):
    fd = os.memfd_create("eat")
    for _ in range(mib):
        os.write(fd, b"x" * 2**20)
    return "took it"
def shm(mib):  # System V shared memory: stays allocated after it is detached
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.shmget(0, mib * 2**20, 0o1600) < 0:
        raise PermissionError(ctypes.get_errno(), "shmget refused")
    return "took it"
def tmpfs(path, mib):  # in files of 16 MiB, each under the file-size limit
    for i in range(mib):
        with open(f"{path}{i // 16}", "ab") as f:
            f.write(b"x" * 2**20)
    return "took it"
def processes(n, mib):  # each process below the address-space limit, all of them together above the memory
    code = f"b = bytearray({mib} * 2**20)\\nfor i in range(0, len(b), 4096): b[i] = 1\\nimport time; time.sleep(30)"
    kids = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(n)]
    codes = [k.wait() for k in kids]
    if any(codes):
        raise MemoryError(f"exit codes {codes}")
    return "took it"
def fine():
    return 1.0
"""


def _child(sandbox: Sandbox, tmp_path: Path, code: str, **options) -> tuple[Child, object]:
    groups = sandbox.groups()
    command, cwd, path = sandbox.python_command(sandbox.scratch(tmp_path))
    child = Child(command, [(0, code)], env=sandbox.env(), cwd=cwd, python_path=path, call_timeout=60,
                  preexec_fn=lambda: sandbox.set_limits(groups), on_close=groups.remove, **options)  # fmt: skip
    return child, groups.memory


@needs_seccomp
def test_memfd_and_system_v_shared_memory_are_refused_and_the_child_goes_on(tmp_path):
    """Pages of a memfd or a shm segment are not mapped memory: a loop of create / fill / unmap took 1.5 GiB
    under a 1 GiB address-space limit. Refused, they cost the call that tried, nothing else."""
    child, _ = _child(SANDBOX, tmp_path, EATERS)
    try:
        with pytest.raises(StudentError, match="PermissionError"):
            child.call("memfd", (64,), {})
        with pytest.raises(StudentError, match="PermissionError.*shmget refused"):
            child.call("shm", (64,), {})
        assert child.call("fine", (), {}) == 1.0
    finally:
        child.close()


def _verdict(code: bytes, arch: int, nr: int, flags: int = 0) -> int:
    """What the classic BPF program ``code`` returns for system call ``nr`` of architecture ``arch`` with first
    argument ``flags``: a small interpreter of the five instructions it uses (load a word of seccomp_data, jump if
    equal, if greater or equal, if any bit is set, return), independent of how ``seccomp.program`` builds them."""
    data, pc, acc = {0: nr, 4: arch, 16: flags & 0xFFFFFFFF, 20: flags >> 32}, 0, 0
    while True:
        op, jt, jf, k = struct.unpack_from("=HBBI", code, 8 * pc)
        if op == 0x20:
            acc = data[k]
        elif op in (0x15, 0x35, 0x45):
            taken = acc == k if op == 0x15 else acc >= k if op == 0x35 else bool(acc & k)
            pc += jt if taken else jf
        elif op == 0x06:
            return k
        pc += 1


# the kernel's numbers (asm/unistd_64.h; asm-generic/unistd.h for aarch64) of the calls the filter refuses; then
# of those it refuses when it refuses user namespaces: setns, clone3 (ENOSYS), clone and unshare (CLONE_NEWUSER)
REFUSED = {
    "x86_64": (0xC000003E, {29, 64, 68, 240, 248, 249, 250, 319, 447}),
    "aarch64": (0xC00000B7, {194, 190, 186, 180, 217, 218, 219, 279, 447}),
}
USERNS = {"x86_64": (308, 435, 56, 272), "aarch64": (268, 435, 220, 97)}
EPERM, ENOSYS, ALLOW, KILL = 0x00050000 | errno.EPERM, 0x00050000 | errno.ENOSYS, 0x7FFF0000, 0x80000000


@pytest.mark.parametrize("machine", sorted(REFUSED))
def test_the_seccomp_program_refuses_exactly_its_calls_and_kills_other_abis(machine):
    arch, numbers = REFUSED[machine]
    code = seccomp.program(machine)
    assert {nr for nr in range(512) if _verdict(code, arch, nr) == EPERM} == numbers
    assert {_verdict(code, arch, nr) for nr in range(512)} == {EPERM, ALLOW}
    assert _verdict(code, arch, 0x40000000 | 248) == KILL  # x32's add_key
    assert _verdict(code, 0x40000003, 286) == KILL  # i386's add_key
    assert seccomp.program("sparc") is None


NEWUSER, OTHER_FLAGS = (
    0x10000000,
    (0, 17, 0x01000000 | 0x00200000 | 0x00100000 | 17, 0x7FFFFFFF & ~0x10000000),
)


@pytest.mark.parametrize("machine", sorted(REFUSED))
def test_the_seccomp_program_refuses_user_namespaces_where_asked_and_nothing_else_more(machine):
    """``userns``: setns refused, clone3 ENOSYS (glibc then clones), clone and unshare refused with CLONE_NEWUSER
    among any other flags and allowed without it (fork's, a thread's, the namespaces bubblewrap makes as root)."""
    arch, numbers = REFUSED[machine]
    setns, clone3, *flagged = USERNS[machine]
    code = seccomp.program(machine, userns=True)
    for flags in (0, *OTHER_FLAGS, NEWUSER):
        verdicts = {nr: _verdict(code, arch, nr, flags) for nr in range(512)}
        refused_here = {nr for nr, v in verdicts.items() if v == EPERM}
        with_flag = set(flagged) if flags & NEWUSER else set()
        assert refused_here == numbers | {setns} | with_flag, (flags, refused_here)
        assert {nr for nr, v in verdicts.items() if v == ENOSYS} == {clone3}
        assert set(verdicts.values()) == {EPERM, ENOSYS, ALLOW}
    for flags in (NEWUSER | 17, NEWUSER | 0x20000000 | 0x40000000, 0xFFFFFFFF, NEWUSER | 1 << 40):
        assert all(_verdict(code, arch, nr, flags) == EPERM for nr in flagged), hex(flags)
    assert _verdict(code, arch, 0x40000000 | flagged[0], NEWUSER) == KILL  # x32's, whatever the call
    assert _verdict(code, 0x40000003, 120, NEWUSER) == KILL  # i386's clone


@needs_bwrap
@needs_cgroup
@pytest.mark.parametrize(
    "call, args",
    [
        ("tmpfs", ("/dev/shm/eat", 100)),  # the tmpfs mounts are size-limited, and their pages are memory too
        ("tmpfs", ("/scratch/eat", 200)),
        ("processes", (4, 200)),  # 800 MiB over four processes, each far under the address-space limit
    ],
)
def test_a_memory_cgroup_bounds_all_of_a_childs_memory_and_the_grader_goes_on(tmp_path, call, args):
    sandbox = Sandbox(limits=Limits(memory=320 * MiB, tmp_size=256 * MiB))
    child, group = _child(sandbox, tmp_path, EATERS)
    try:
        try:
            child.call(call, args, {})
        except StudentError as refused:  # /dev/shm is not the child's to write to as root; a process killed
            assert "PermissionError" in str(refused) or "exit codes" in str(refused)
        else:
            pytest.fail(f"{call}{args} took its memory")
    except ChildFailed as killed:
        assert "killed by signal 9" in killed.reason
        assert group.peak <= 320 * MiB
    finally:
        child.close()
    assert not group.path.exists()  # removed with the child
    again, _ = _child(sandbox, tmp_path, EATERS)
    try:
        assert again.call("fine", (), {}) == 1.0
    finally:
        again.close()


@needs_bwrap
def test_the_working_folder_is_a_bounded_tmpfs_that_never_reaches_the_grader_disk(tmp_path):
    """One cell wrote 2.8 GB on the course's disk (the working folder had only a per-file limit)."""
    sandbox = Sandbox(limits=Limits(scratch_size=32 * MiB))
    work = sandbox.scratch(tmp_path)
    child, _ = _child(sandbox, tmp_path, EATERS)
    try:
        for name in ("a", "b", "c"):  # each file under the 64 MiB file-size limit, together over the folder's
            try:
                child.call("tmpfs", (f"/scratch/{name}", 20), {})
            except StudentError as full:
                assert "No space left on device" in str(full)
                break
        else:
            pytest.fail("the working folder took 60 MiB")
        assert child.call("fine", (), {}) == 1.0
    finally:
        child.close()
    assert [p for p in work.parent.parent.rglob("*") if p.is_file() and p.stat().st_size > MiB] == []


def test_a_tree_of_3000_nested_folders_is_removed_without_recursion(tmp_path):
    """shutil.rmtree raised RecursionError here on Python 3.11 (ignore_errors does not catch it): the submission
    became "could not grade" and its folder stayed on the disk."""
    top = tmp_path / "scratch-x"
    top.mkdir()
    fd = os.open(top, os.O_RDONLY)
    try:
        for _ in range(3000):  # as a cell makes them (os.makedirs would recurse too)
            os.mkdir("d", dir_fd=fd)
            fd, parent = os.open("d", os.O_RDONLY, dir_fd=fd), fd
            os.close(parent)
        Path(f"/proc/self/fd/{fd}/f").write_text("x")
    finally:
        os.close(fd)
    outside = tmp_path / "keep.txt"
    outside.write_text("not the child's")
    (top / "link").symlink_to(outside)
    locked = top / "locked"
    (locked / "inner").mkdir(parents=True)
    locked.chmod(0)
    remove_tree(top)
    assert not top.exists() and outside.read_text() == "not the child's"


REPLIES = """
import torch
import posref.grading.child.serve as child_end
child_end.plain = lambda value: value  # a child that sends what it likes
def parameter():
    p = torch.nn.Parameter(torch.zeros(4, 8))
    p.detach = "not a method"
    return p
def attributes():
    t = torch.zeros(4, 8)
    t.detach = "not a method"
    return t
def grad():
    return torch.zeros(4, 8, requires_grad=True)
"""


def test_replies_are_plain_tensors_only():
    """A result returned as an nn.Parameter whose detach was replaced passed the protocol's checks and made the
    comparison raise: a wrong answer became "could not grade"."""
    child = Child([sys.executable, "-I"], [(0, REPLIES)], python_path=[str(REPO)])
    try:
        for name, expected in [
            ("parameter", "a Parameter \\(a tensor subclass"),
            ("attributes", "a tensor carrying attributes \\(detach\\)"),
            ("grad", "a tensor that requires grad"),
        ]:
            with pytest.raises(StudentError, match=expected):
                child.call(name, (), {})
    finally:
        child.close()


def test_a_check_that_trips_over_the_childs_data_is_that_checks_failure(tmp_path, monkeypatch):
    import posref.grading as checkers

    def tripping(fn, **kwargs):
        fn(4, 8).no_such_attribute  # noqa: B018  (a checker meeting a value it did not foresee)

    monkeypatch.setattr(checkers, "check_sinusoidal_pe", tripping)
    # an answer of its own: posref's, imported, now earns nothing under the rules (posref.grading.watch)
    children = _Children([(0, "import torch\n" + PE)], SANDBOX, SANDBOX.scratch(tmp_path), [],
                         timeout=30, budget=120)  # fmt: skip
    try:
        verdict = _run_check(children, "check_sinusoidal_pe", "sinusoidal_pe")
    finally:
        children.close()
    assert str(verdict.cause) == "unreadable"
    assert verdict.message == (
        "sinusoidal_pe returned something the check could not compare "
        "(AttributeError: 'Tensor' object has no attribute 'no_such_attribute')"
    )


def test_the_sandbox_says_what_bounds_memory_and_what_a_timed_round_is_charged_here():
    mode = SANDBOX.mode
    if SANDBOX.memory.problem is None:
        assert "; memory: a memory cgroup of 4 GiB per child;" in mode
    else:
        assert f"(no memory cgroup: {SANDBOX.memory.problem})" in mode and "per process" in mode
    if SANDBOX.cpu.problem is None:
        assert mode.endswith(f"; CPU of a timed round: each child's cgroup ({SANDBOX.cpu.base})")
    else:
        assert mode.endswith(
            f"reaped ones included (closed by the sandbox's PID namespace; no CPU cgroup: {SANDBOX.cpu.problem})"
        )


def test_a_cgroup_beside_a_mounts_root_is_not_taken_for_one_under_it(monkeypatch):
    """The grader's cgroup is /foobar/x; a cgroup2 mount's root is /foo, a folder beside it whose name begins the
    same. Its path is not under that mount: the next one, of the whole hierarchy, has it. Before, a comparison of
    strings took it for one under /foo and Path.relative_to raised ValueError, out of Sandbox() and every grading."""
    from autograder.sandbox import cgroup

    texts = {
        "/proc/self/cgroup": "0::/foobar/x\n",
        "/proc/self/mountinfo": "30 25 0:26 /foo /sys/fs/cgroup rw,relatime - cgroup2 cgroup2 rw\n"
        "31 25 0:26 / /mnt/all rw,relatime - cgroup2 cgroup2 rw\n",
    }
    read = Path.read_text
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: texts.get(str(self)) or read(self, *a, **k))
    assert cgroup._own_group(None) == Path("/mnt/all/foobar/x")


@needs_cgroup
def test_a_childs_memory_group_is_removed_when_its_cpu_group_cannot_be_made(monkeypatch):
    """Sandbox.groups makes the memory group, then the CPU group: where the second could not be made (a cgroup
    hierarchy's limit on groups, a folder whose rights changed), the first stayed in the hierarchy for as long as the
    grader lived, one more each child."""
    sandbox, made = Sandbox(), []
    make = sandbox.memory.make
    monkeypatch.setattr(sandbox.memory, "make", lambda: made.append(make()) or made[-1])

    def refused():
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(sandbox.cpu, "make", refused)
    with pytest.raises(OSError, match="No space left"):
        sandbox.groups()
    assert made and not made[0].path.exists()


HOLDER = """
import fcntl, os, subprocess, sys, time
group = sys.argv[1]
os.mkdir(group)
held = os.open(group, os.O_RDONLY | os.O_DIRECTORY)
fcntl.flock(held, fcntl.LOCK_EX)
inside = subprocess.Popen(["sleep", "600"])
with open(os.path.join(group, "cgroup.procs"), "w") as procs:
    procs.write(str(inside.pid))
print(inside.pid, flush=True)
time.sleep(600)
"""


@needs_cgroup
@pytest.mark.parametrize("groups", ["memory", "cpu"])
def test_a_graders_sweep_spares_a_group_another_living_grader_holds_and_takes_a_killed_ones(groups):
    """Another grader, in a PID namespace of its own, shares this grader's base cgroup: the process number in its
    group's name means nothing here (none such lives here). Before, a grader starting up took any group whose
    number was not a living process here for a killed grader's, and removed it with the child in it, in the middle
    of the other's grading. Now a group is held by a lock its grader keeps; once that grader is killed, the next
    sweep removes its group and what is still in it."""
    sweep = {"memory": lambda: MemoryGroups(2**30), "cpu": CpuGroups}[groups]  # each sweeps as it starts
    base = getattr(SANDBOX, groups).base
    if base is None:
        pytest.skip(f"no {groups} cgroup here: {getattr(SANDBOX, groups).problem}")
    number = next(n for n in range(4_000_000, 4_100_000) if not Path(f"/proc/{n}").exists())
    group = base / f"posref-child-{number}-0"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(group)], stdout=subprocess.PIPE, text=True)
    try:
        inside = Path(f"/proc/{holder.stdout.readline().strip()}/stat")
        sweep()
        assert group.is_dir() and inside.exists(), "a living grader's group was swept"
        holder.kill()
        holder.wait()
        sweep()
        assert not group.exists()  # removed only once nothing ran in it
        assert not inside.exists() or inside.read_text().split()[2] == "Z"
    finally:
        holder.kill()
        holder.wait()
        if group.exists():
            _remove(group)


def test_a_group_swept_before_its_grader_opens_it_is_made_again(tmp_path, monkeypatch):
    """Graders start together (a local cluster's workers each probe and sweep as they start): another's sweep can
    find a group between this grader's mkdir and its open, take it as nobody's and remove it. The claim then
    failed with FileNotFoundError, which a grader starting up reported as "cannot make a memory cgroup" and graded
    without one; now it makes another group, held. (Any folder stands for the base: the claim and the sweep are
    mkdir, open, flock and rmdir.)"""
    from autograder.sandbox import cgroup

    opened = cgroup._open
    swept = []

    def another_graders_sweep_first(path):
        if not swept:
            swept.append(path)
            cgroup._sweep(tmp_path)  # the fresh group is not held yet: this sweep removes it
        return opened(path)

    monkeypatch.setattr(cgroup, "_open", another_graders_sweep_first)
    path, held = cgroup._claim(tmp_path)
    try:
        assert swept and not swept[0].exists() and path != swept[0] and path.is_dir()
        assert list(tmp_path.iterdir()) == [path]
        cgroup._sweep(tmp_path)  # held: spared
        assert path.is_dir()
    finally:
        os.close(held)


def test_a_group_removed_twice_closes_its_lock_once(tmp_path):
    """The second ``remove`` (a caller's cleanup after an error path already removed it) closed the descriptor
    number again, by then perhaps a file another part of the grader had opened."""
    from autograder.sandbox import cgroup

    group = cgroup._Group(tmp_path)
    assert group.remove()
    other = os.open(tmp_path, os.O_RDONLY)  # the kernel gives the lowest free number: the lock's, just closed
    try:
        assert group.remove()
        os.fstat(other)  # still open
    finally:
        os.close(other)
