"""A seccomp filter that refuses the system calls through which a child could take memory that no resource
limit counts: ``memfd_create`` and ``memfd_secret`` (anonymous files) and ``shmget`` (System V shared memory).

``RLIMIT_AS`` bounds what a process maps, but the pages of an anonymous file or a shared-memory segment stay
allocated after they are unmapped, so a loop of create / fill / unmap takes memory without limit. With these
calls refused (``EPERM``, which Python raises as ``PermissionError``) and every tmpfs of the sandbox
size-limited, what a child holds is bounded by its processes' address spaces even where no memory cgroup can be
had (see ``autograder/cgroup.py``). The filter is installed in the forked child before exec (``set_limits``),
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
    "x86_64": (0xC000003E, {"shmget": 29, "memfd_create": 319, "memfd_secret": 447}),
    "aarch64": (0xC00000B7, {"shmget": 194, "memfd_create": 279, "memfd_secret": 447}),
}
DENIED = ("memfd_create", "memfd_secret", "shmget")

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
