"""A seccomp filter that refuses the system calls through which a child could take memory that no resource
limit counts, or leave something in the kernel that outlives it:

- ``memfd_create`` and ``memfd_secret`` (anonymous files) and ``shmget`` (System V shared memory): ``RLIMIT_AS``
  bounds what a process maps, but the pages of an anonymous file or a shared-memory segment stay allocated after
  they are unmapped, so a loop of create / fill / unmap takes memory without limit;
- ``msgget``, ``semget`` (System V message queues and semaphores) and ``mq_open`` (POSIX message queues): they
  live in the IPC namespace until removed, not with the process that made them. Every child forked from one
  worker's fork server shares that server's namespace, so a queue made by one student's child was read by the
  next student's, and 2,000 of them held 32 MB of kernel memory outside every limit until the worker ended;
- ``add_key``, ``request_key`` and ``keyctl`` (the kernel's keyrings): a user's keyring belongs to the uid, not
  to a process or a namespace the sandbox makes (as root the child runs as the worker's uid on the host), so a key
  added by one child was read by the next and stayed readable by that uid on the host after the run; and no
  namespace bounds the keys a uid may hold.

Where the child is not inside a user namespace of bubblewrap's own making (the grader is root, so bubblewrap makes
none and the child drops to an unprivileged uid; or there is no bubblewrap), the filter also refuses making a user
namespace (``userns``): ``unshare`` and ``clone`` with ``CLONE_NEWUSER`` and entering one (``setns``); ``clone3``,
whose flags sit in memory a filter cannot read, answers ``ENOSYS``, on which glibc makes its threads and processes
with ``clone`` instead (Docker's default profile does the same). In a new user namespace the child is root again,
with the kernel's code for namespaces' root (mounts, netfilter, ...) open to it, the way sandbox escapes have gone.
An ordinary user's bubblewrap makes the child's user namespace itself, after this filter is in place: there its
``--disable-userns`` forbids the child another.

Nothing a notebook of this course does needs them (Python's ``multiprocessing`` and torch share memory through
files in ``/dev/shm``, which is a size-limited tmpfs emptied between children). Refused (``EPERM``, which Python
raises as ``PermissionError``), what a child holds is bounded by its processes' address spaces even where no memory
cgroup can be had (see ``autograder/sandbox/cgroup.py``), and nothing of it is left when its processes end. The filter
is installed in the forked child before exec (``set_limits``),
so it holds for everything the child starts; a call from another architecture's ABI (x32, i386) kills the
process, since it could reach these calls under other numbers.

The program is classic BPF as ``seccomp(2)`` describes it, installed with ``prctl(PR_SET_SECCOMP,
SECCOMP_MODE_FILTER)`` after ``PR_SET_NO_NEW_PRIVS``.
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct

# (audit architecture, {name: number}) of the architectures the filter knows
_ARCHITECTURES = {
    "x86_64": (
        0xC000003E,
        {
            "shmget": 29,
            "semget": 64,
            "msgget": 68,
            "mq_open": 240,
            "add_key": 248,
            "request_key": 249,
            "keyctl": 250,
            "memfd_create": 319,
            "memfd_secret": 447,
            "clone": 56,
            "unshare": 272,
            "setns": 308,
            "clone3": 435,
        },
    ),
    "aarch64": (
        0xC00000B7,
        {
            "mq_open": 180,
            "msgget": 186,
            "semget": 190,
            "shmget": 194,
            "add_key": 217,
            "request_key": 218,
            "keyctl": 219,
            "memfd_create": 279,
            "memfd_secret": 447,
            "unshare": 97,
            "clone": 220,
            "setns": 268,
            "clone3": 435,
        },
    ),
}
DENIED = (
    "memfd_create", "memfd_secret", "shmget", "msgget", "semget", "mq_open", "add_key", "request_key", "keyctl"
)  # fmt: skip

_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_KILL_PROCESS, _ALLOW, _ERRNO = 0x80000000, 0x7FFF0000, 0x00050000
_X32_BIT = 0x40000000
CLONE_NEWUSER = 0x10000000
_ARG0 = 16  # seccomp_data: nr at offset 0, arch at 4, the first argument's low word at 16 (little-endian)
_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2


def _instruction(code: int, jump_true: int, jump_false: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jump_true, jump_false, k)


def program(machine: str | None = None, userns: bool = False) -> bytes | None:
    """The filter for ``machine`` (default: this one) as packed ``struct sock_filter``s; None where unknown.
    ``userns``: also refuse making or entering a user namespace (see above)."""
    known = _ARCHITECTURES.get(machine or platform.machine())
    if known is None:
        return None
    arch, numbers = known
    denied = [numbers[name] for name in DENIED] + ([numbers["setns"]] if userns else [])
    flagged = [numbers["clone"], numbers["unshare"]] if userns else []  # refused with CLONE_NEWUSER
    no_such = [numbers["clone3"]] if userns else []  # ENOSYS
    # seccomp_data: nr at offset 0, arch at offset 4; jumps count instructions after the current one, to the
    # returns at the end (ALLOW, EPERM, ENOSYS, KILL) and the flags' test after them
    checks = [(nr, "eperm") for nr in denied] + [(nr, "enosys") for nr in no_such]
    checks += [(nr, "flags") for nr in flagged]
    code = [
        _instruction(_LD_W_ABS, 0, 0, 4),
        _instruction(_JEQ_K, 1, 0, arch),
        _instruction(_RET_K, 0, 0, _KILL_PROCESS),
        _instruction(_LD_W_ABS, 0, 0, 0),
        _instruction(_JGE_K, len(checks) + 3, 0, _X32_BIT),  # to KILL
    ]
    targets = {"eperm": 1, "enosys": 2, "flags": 4}  # after ALLOW: EPERM, ENOSYS, KILL, the flags' test
    for i, (number, verdict) in enumerate(checks):
        code.append(_instruction(_JEQ_K, len(checks) - i - 1 + targets[verdict], 0, number))
    code.append(_instruction(_RET_K, 0, 0, _ALLOW))
    code.append(_instruction(_RET_K, 0, 0, _ERRNO | errno.EPERM))
    code.append(_instruction(_RET_K, 0, 0, _ERRNO | errno.ENOSYS))
    code.append(_instruction(_RET_K, 0, 0, _KILL_PROCESS))
    if flagged:
        code.append(_instruction(_LD_W_ABS, 0, 0, _ARG0))
        code.append(_instruction(_JSET_K, 0, 1, CLONE_NEWUSER))
        code.append(_instruction(_RET_K, 0, 0, _ERRNO | errno.EPERM))
        code.append(_instruction(_RET_K, 0, 0, _ALLOW))
    return b"".join(code)


_KEYCTL_JOIN_SESSION_KEYRING = 1


def new_session_keyring() -> None:
    """Give this process (and what it starts) a new, empty session keyring instead of the one it inherited: a child
    would otherwise possess the grader's session keyring, and ``/proc/keys`` lists the keys a process possesses
    (their names), keyctl or not. Run before ``install`` (which refuses keyctl); a kernel without keyrings is
    left as it is."""
    known = _ARCHITECTURES.get(platform.machine())
    if known is not None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall(ctypes.c_long(known[1]["keyctl"]), ctypes.c_long(_KEYCTL_JOIN_SESSION_KEYRING), None)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install(userns: bool = False) -> None:
    """Install the filter in this process (and so in everything it starts); ``userns``: refusing user namespaces
    too. Raises OSError where it cannot."""
    code = program(userns=userns)
    if code is None:
        raise OSError(f"no seccomp filter for this architecture ({platform.machine()})")
    libc = ctypes.CDLL(None, use_errno=True)
    buffer = ctypes.create_string_buffer(code, len(code))
    fprog = _SockFprog(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")
