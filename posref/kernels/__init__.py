"""The fast backends of ``posref.apply_rope`` and the rule that picks one (the readable eager path is the default).

* ``posref.kernels.rope_triton``: a hand-written Triton kernel (CUDA; Triton's interpreter on CPU for tests);
* ``posref.kernels.rope_compiled``: the same arithmetic compiled by ``torch.compile`` (any device);
* ``posref.kernels.flex``: ALiBi and T5 biases as FlexAttention ``score_mod``s.

This module is the leaf the backends and ``posref.rope`` share: it knows the backends' names, which of them can
run where, and which Triton failures were already seen (the failure memo), and imports nothing of the course but
``posref._checks``. ``posref.rope`` imports the backend modules themselves, when it first runs one; the backends
import this module and never ``posref.rope``.
"""

from __future__ import annotations

import functools
import importlib.util
import warnings
from collections.abc import Callable
from typing import TypeVar

import torch

from posref._checks import check_choice
from posref.i18n import _

FUSED_BACKENDS = ("triton", "compile")
TRITON_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
"""The dtypes of ``x`` the Triton kernel rotates (in float32); float64 goes to ``torch.compile``, which keeps it."""

_TRITON_FAILED: set[tuple[str, torch.dtype]] = set()
"""The failure memo: ``(device type, dtype)`` pairs for which an automatically chosen Triton kernel failed."""

Result = TypeVar("Result")


@functools.cache
def _triton_installed() -> bool:
    return importlib.util.find_spec("triton") is not None


def fused_backends(device: torch.device | str) -> tuple[str, ...]:
    """The values of ``apply_rope``'s ``fused`` that can run on ``device``'s type: on CUDA ``"triton"`` (when
    Triton is installed) and ``"compile"``; elsewhere ``"compile"``."""
    if torch.device(device).type == "cuda" and _triton_installed():
        return FUSED_BACKENDS
    return ("compile",)


def choose(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, fused: bool | str | None) -> str:
    """``"eager"``, ``"triton"`` or ``"compile"`` for ``apply_rope(x, cos, sin, fused=fused)``.

    A backend named in ``fused`` is taken as asked. ``False`` is eager, and so is ``None`` off CUDA (compiling
    costs seconds). ``True`` off CUDA is ``torch.compile``. On CUDA, ``None`` and ``True`` take Triton when it is
    installed, rotates ``x.dtype`` (``TRITON_DTYPES``), need not differentiate ``cos``/``sin`` and has not failed
    for this device type and dtype before; otherwise ``torch.compile``.
    """
    if isinstance(fused, str):
        return check_choice("fused", fused, FUSED_BACKENDS)
    if fused is not None and not isinstance(fused, bool):
        raise TypeError(
            _("fused must be None, a bool or one of {backends}, got {fused!r}").format(
                backends=FUSED_BACKENDS, fused=fused
            )
        )
    if fused is False or (fused is None and not x.is_cuda):
        return "eager"
    if not x.is_cuda:
        return "compile"
    triton_ok = (
        "triton" in fused_backends(x.device)
        and x.dtype in TRITON_DTYPES
        and not (torch.is_grad_enabled() and (cos.requires_grad or sin.requires_grad))
        and (x.device.type, x.dtype) not in _TRITON_FAILED
    )
    return "triton" if triton_ok else "compile"


def run_triton(call: Callable[[], Result], x: torch.Tensor, *, named: bool) -> Result | None:
    """``call()``, a Triton kernel on ``x``. When Triton was chosen automatically (not ``named``), a failure
    warns, enters ``x``'s device type and dtype in the failure memo (``choose`` then picks ``torch.compile``) and
    returns None, for the caller to run ``torch.compile``; a kernel asked for by name raises its error."""
    if named:
        return call()
    try:
        return call()
    except Exception as error:  # a Triton/driver mismatch must cost speed, not the student's notebook
        _TRITON_FAILED.add((x.device.type, x.dtype))
        warnings.warn(
            f"posref's Triton RoPE kernel failed ({type(error).__name__}: {error}); using torch.compile "
            f"for {x.dtype} from now on",
            RuntimeWarning,
            stacklevel=3,
        )
        return None
