"""One-pass RoPE through ``torch.compile``: the same arithmetic as ``posref.apply_rope``, fused.

The eager path runs several kernels (a multiply and an accumulate per half), each a pass over memory. Compiled,
the rotation is one loop that reads ``x`` once and writes the output once, so it approaches the cost of a copy
(measured by ``python -m posref.bench``). Inputs are validated by ``apply_rope`` before they reach here.

``apply_rope(..., fused="compile")`` selects it; on CUDA the default is the hand-written Triton kernel of
``posref.kernels.rope_triton``, with this compiled version as the fallback (no Triton, float64, or gradients for
cos/sin). The rotation runs in the dtype of the tables it is given: float32, or float64 for a float64 ``x``.
"""

from __future__ import annotations

import functools

import torch


def _half(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    r = cos.shape[-1]
    xf = x.to(cos.dtype)
    x1, x2 = xf[..., :r], xf[..., r : 2 * r]
    parts = [x1 * cos - x2 * sin, x2 * cos + x1 * sin]
    if 2 * r < x.shape[-1]:  # partial rotary: the rest passes through (no empty piece when all dims rotate)
        parts.append(xf[..., 2 * r :])
    return torch.cat(parts, dim=-1).to(x.dtype)


def _interleaved(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    r = cos.shape[-1]
    xf = x.to(cos.dtype)
    pairs = xf[..., : 2 * r].unflatten(-1, (r, 2))  # (..., T, r, 2)
    a, b = pairs[..., 0], pairs[..., 1]
    rotated = torch.stack((a * cos - b * sin, b * cos + a * sin), dim=-1).flatten(-2)
    if 2 * r < x.shape[-1]:  # partial rotary: the rest passes through
        rotated = torch.cat((rotated, xf[..., 2 * r :]), dim=-1)
    return rotated.to(x.dtype)


@functools.cache
def _compiled(layout: str):
    return torch.compile(_half if layout == "half" else _interleaved, dynamic=None)


def apply_rope_compiled(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, *, layout: str = "half"
) -> torch.Tensor:
    """Compiled ``apply_rope``: ``x`` ``(..., T, D)``, ``cos``/``sin`` ``(T, r)`` or broadcastable -> ``(..., T, D)``
    in ``x.dtype``, rotated in the wider of float32 and ``x.dtype`` (as the eager path: float64 stays float64)."""
    compute = torch.promote_types(x.dtype, torch.float32)
    return _compiled(layout)(x, cos.to(compute), sin.to(compute))
