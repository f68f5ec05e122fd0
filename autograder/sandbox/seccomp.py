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
        },
    ),
}
DENIED = (
    "memfd_create", "memfd_secret", "shmget", "msgget", "semget", "mq_open", "add_key", "request_key", "keyctl"
)  # fmt: skip

_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
_KILL_PROCESS, _ALLOW, _ERRNO = 0x80000000, 0x7FFF0000, 0x00050000
_X32_BIT = 0x40000000
_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2


def _instruction(code: int, jump_true: int, jump_false: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jump_true, jump_false, k)


def program(machine: str | None = None) -> bytes | None:
    """The filter for ``machine`` (default: this one) as packed ``struct sock_filter``s; None where unknown."""
    known = _ARCHITECTURES.get(machine or platform.machine())
    if known is None:
        return None
    arch, numbers = known
    denied = [numbers[name] for name in DENIED]
    # seccomp_data: nr at offset 0, arch at offset 4; jumps count instructions after the current one
    code = [
        _instruction(_LD_W_ABS, 0, 0, 4),
        _instruction(_JEQ_K, 1, 0, arch),
        _instruction(_RET_K, 0, 0, _KILL_PROCESS),
        _instruction(_LD_W_ABS, 0, 0, 0),
        _instruction(_JGE_K, len(denied) + 2, 0, _X32_BIT),
    ]
    for i, number in enumerate(denied):
        code.append(_instruction(_JEQ_K, len(denied) - i, 0, number))
    code.append(_instruction(_RET_K, 0, 0, _ALLOW))
    code.append(_instruction(_RET_K, 0, 0, _ERRNO | errno.EPERM))
    code.append(_instruction(_RET_K, 0, 0, _KILL_PROCESS))
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


def install() -> None:
    """Install the filter in this process (and so in everything it starts). Raises OSError where it cannot."""
    code = program()
    if code is None:
        raise OSError(f"no seccomp filter for this architecture ({platform.machine()})")
    libc = ctypes.CDLL(None, use_errno=True)
    buffer = ctypes.create_string_buffer(code, len(code))
    fprog = _SockFprog(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")
