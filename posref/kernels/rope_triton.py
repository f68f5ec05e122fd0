"""One-pass RoPE as a hand-written Triton kernel (the default on CUDA; the same arithmetic as ``apply_rope``).

Each program takes a block of ``BLOCK_T`` positions of one sequence, reads that tile of ``cos``/``sin`` once
(they are shared by the heads) and rotates it for a group of heads in turn: each element of ``x`` is read once,
rotated in float32 and written once in ``x``'s dtype. Bytes moved are those of a copy of ``x`` plus the small
tables, so the kernel is bound by memory bandwidth (measured against a device copy by
``python -m posref.bench --device cuda``).

* half layout: pair ``i`` is ``(i, i + r)``, two contiguous loads;
* interleaved: pair ``i`` is ``(2i, 2i + 1)``: one contiguous load of ``2r`` values split into even and odd
  lanes (``tl.split``), joined back after the rotation, so loads and stores stay contiguous;
* dims ``2r .. D`` (partial rotary) are copied through in the same pass;
* ``apply_rope_qk_triton`` rotates queries and keys in one launch (the first programs take q, the rest k).

The backward of a rotation by ``theta`` is the rotation by ``-theta``: the same kernel with ``sin`` negated.
Inputs are validated by ``posref.apply_rope`` before they reach here. With ``TRITON_INTERPRET=1`` set
before this module is imported, Triton's interpreter runs the kernel on CPU tensors (how CI tests it).
"""

from __future__ import annotations

import os

import torch
import triton
import triton.language as tl

from posref.i18n import _
from posref.kernels import TRITON_DTYPES

INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"


@triton.jit
def _load_table(ptr, b, h, t, i, stride_b, stride_h, stride_t, stride_r, mask):
    """A ``(BLOCK_T, BLOCK_R)`` tile of cos or sin, in float32."""
    offsets = b * stride_b + h * stride_h + t[:, None] * stride_t + i[None, :] * stride_r
    return tl.load(ptr + offsets, mask=mask, other=0.0).to(tl.float32)


@triton.jit
def _rotate_heads(
    pid,
    x_ptr,
    out_ptr,
    cos_ptr,
    sin_ptr,
    H,
    T,
    R,
    D,
    n_tblocks,
    n_hgroups,
    heads_per_program,
    sxb,
    sxh,
    sxt,
    sxd,
    scb,
    sch,
    sct,
    scr,
    ssb,
    ssh,
    sst,
    ssr,
    INTERLEAVED: tl.constexpr,
    INVERSE: tl.constexpr,
    TABLES_PER_HEAD: tl.constexpr,
    BLOCK_T: tl.constexpr,
    BLOCK_R: tl.constexpr,
    BLOCK_P: tl.constexpr,
):
    """Program ``pid`` of one tensor -> (batch b, group of heads, block of positions t); loops over its heads."""
    rest = pid // n_tblocks
    b = (rest // n_hgroups).to(tl.int64)
    h0 = ((rest % n_hgroups) * heads_per_program).to(tl.int64)
    t = ((pid % n_tblocks) * BLOCK_T + tl.arange(0, BLOCK_T)).to(tl.int64)
    i = tl.arange(0, BLOCK_R)
    t_ok = t < T
    mask = t_ok[:, None] & (i < R)[None, :]
    if not TABLES_PER_HEAD:  # cos/sin shared by the heads (the usual case): read the tile once
        c = _load_table(cos_ptr, b, h0, t, i, scb, sch, sct, scr, mask)
        s = _load_table(sin_ptr, b, h0, t, i, ssb, ssh, sst, ssr, mask)
        if INVERSE:
            s = -s
    for k in range(0, heads_per_program):
        h = h0 + k  # heads_per_program divides H: every h is a head
        if TABLES_PER_HEAD:
            c = _load_table(cos_ptr, b, h, t, i, scb, sch, sct, scr, mask)
            s = _load_table(sin_ptr, b, h, t, i, ssb, ssh, sst, ssr, mask)
            if INVERSE:
                s = -s
        x_row = x_ptr + b * sxb + h * sxh + t[:, None] * sxt  # (BLOCK_T, 1) pointers
        out_row = out_ptr + ((b * H + h) * T + t[:, None]) * D  # the output is contiguous
        if INTERLEAVED:
            j = tl.arange(0, 2 * BLOCK_R)
            pair_mask = t_ok[:, None] & (j < 2 * R)[None, :]
            xx = tl.load(x_row + j[None, :] * sxd, mask=pair_mask, other=0.0).to(tl.float32)
            a, bb = tl.split(tl.reshape(xx, (BLOCK_T, BLOCK_R, 2)))
            y = tl.reshape(tl.join(a * c - bb * s, bb * c + a * s), (BLOCK_T, 2 * BLOCK_R))
            tl.store(out_row + j[None, :], y.to(out_ptr.dtype.element_ty), mask=pair_mask)
        else:
            a = tl.load(x_row + i[None, :] * sxd, mask=mask, other=0.0).to(tl.float32)
            bb = tl.load(x_row + (i[None, :] + R) * sxd, mask=mask, other=0.0).to(tl.float32)
            tl.store(out_row + i[None, :], (a * c - bb * s).to(out_ptr.dtype.element_ty), mask=mask)
            tl.store(out_row + i[None, :] + R, (bb * c + a * s).to(out_ptr.dtype.element_ty), mask=mask)
        if BLOCK_P > 0:  # partial rotary: dims 2R .. D pass through unchanged
            p = 2 * R + tl.arange(0, BLOCK_P)
            pass_mask = t_ok[:, None] & (p < D)[None, :]
            v = tl.load(x_row + p[None, :] * sxd, mask=pass_mask, other=0.0)
            tl.store(out_row + p[None, :], v, mask=pass_mask)


@triton.jit
def _rope_kernel(
    q_ptr,
    q_out_ptr,
    k_ptr,
    k_out_ptr,
    cos_ptr,
    sin_ptr,
    n_q_programs,
    T,
    R,
    D,
    n_tblocks,
    q_heads,
    q_hgroups,
    q_heads_per_program,
    sqb,
    sqh,
    sqt,
    sqd,
    k_heads,
    k_hgroups,
    k_heads_per_program,
    skb,
    skh,
    skt,
    skd,
    scb,
    sch,
    sct,
    scr,
    ssb,
    ssh,
    sst,
    ssr,
    INTERLEAVED: tl.constexpr,
    INVERSE: tl.constexpr,
    TABLES_PER_HEAD: tl.constexpr,
    BLOCK_T: tl.constexpr,
    BLOCK_R: tl.constexpr,
    BLOCK_P: tl.constexpr,
):
    # the first n_q_programs programs rotate q, the rest k (for one tensor alone there is no rest)
    pid = tl.program_id(0)
    if pid < n_q_programs:
        _rotate_heads(
            pid, q_ptr, q_out_ptr, cos_ptr, sin_ptr, q_heads, T, R, D, n_tblocks, q_hgroups, q_heads_per_program,
            sqb, sqh, sqt, sqd, scb, sch, sct, scr, ssb, ssh, sst, ssr,
            INTERLEAVED, INVERSE, TABLES_PER_HEAD, BLOCK_T, BLOCK_R, BLOCK_P,
        )  # fmt: skip
    else:
        _rotate_heads(
            pid - n_q_programs, k_ptr, k_out_ptr, cos_ptr, sin_ptr, k_heads, T, R, D, n_tblocks, k_hgroups,
            k_heads_per_program, skb, skh, skt, skd, scb, sch, sct, scr, ssb, ssh, sst, ssr,
            INTERLEAVED, INVERSE, TABLES_PER_HEAD, BLOCK_T, BLOCK_R, BLOCK_P,
        )  # fmt: skip


def _as_4d(t: torch.Tensor) -> torch.Tensor:
    """``(..., T, last)`` -> ``(B, H, T, last)``: a view up to 4 dims; more leading dims are flattened."""
    if t.ndim <= 4:
        return t.reshape((1,) * (4 - t.ndim) + tuple(t.shape))
    return t.reshape(-1, *t.shape[-3:])


MIN_PROGRAMS = 1024  # enough programs to fill an H100/H200 (132 SMs) several times over


def _heads_per_program(batch: int, heads: int, n_tblocks: int) -> int:
    """The largest divisor of ``heads`` that still leaves ``MIN_PROGRAMS`` programs (1 if none does)."""
    fitting = (
        d for d in range(1, heads + 1) if heads % d == 0 and batch * (heads // d) * n_tblocks >= MIN_PROGRAMS
    )
    return max(fitting, default=1)


def _rotate(
    xs: tuple[torch.Tensor, ...],
    cos: torch.Tensor,
    sin: torch.Tensor,
    interleaved: bool,
    inverse: bool,
    heads_per_program: int | None = None,
    block_t: int | None = None,
    num_warps: int = 4,
) -> tuple[torch.Tensor, ...]:
    """Rotate one tensor, or q and k (equal but for the number of heads, dim -3), in one launch."""
    r = cos.shape[-1]
    x4s = [_as_4d(x) for x in xs]
    cos4 = _as_4d(cos.expand(*xs[0].shape[:-1], r))
    sin4 = _as_4d(sin.expand(*xs[0].shape[:-1], r))
    outs = tuple(torch.empty(x.shape, dtype=x.dtype, device=x.device) for x in xs)
    batch, _, seq, dim = x4s[0].shape
    if batch * seq == 0:
        return outs
    # blocks of at least 2 (masks cover the excess): a one-element tl.arange is legal but rarely exercised
    block_r = max(2, triton.next_power_of_2(r))
    if block_t is None:  # tiles of about 2048 values of x
        block_t = max(2, min(64, 2048 // (2 * block_r), triton.next_power_of_2(seq)))
    block_p = max(2, triton.next_power_of_2(dim - 2 * r)) if dim > 2 * r else 0
    n_tblocks = triton.cdiv(seq, block_t)
    per_tensor = []  # (heads, groups of heads, heads per program, strides) for q, then k
    for x4 in x4s:
        heads = x4.shape[1]
        hpp = heads_per_program or _heads_per_program(batch, heads, n_tblocks)
        per_tensor.append((heads, heads // hpp, hpp, *x4.stride()))
    (q4, q_out), (k4, k_out) = (x4s[0], outs[0]), (x4s[-1], outs[-1])  # one tensor: k is q, never reached
    n_q_programs = batch * per_tensor[0][1] * n_tblocks
    n_programs = sum(batch * groups * n_tblocks for _, groups, *_ in per_tensor)
    tables_per_head = any(p[2] > 1 for p in per_tensor) and (cos4.stride(1) != 0 or sin4.stride(1) != 0)
    if n_programs:
        _rope_kernel[(n_programs,)](
            q4, q_out, k4, k_out, cos4, sin4, n_q_programs, seq, r, dim, n_tblocks,
            *per_tensor[0], *per_tensor[-1], *cos4.stride(), *sin4.stride(),
            INTERLEAVED=interleaved, INVERSE=inverse, TABLES_PER_HEAD=tables_per_head,
            BLOCK_T=block_t, BLOCK_R=block_r, BLOCK_P=block_p, num_warps=num_warps,
        )  # fmt: skip
    return outs


class _RotateFunction(torch.autograd.Function):
    """Rotation of one or two tensors; its backward is the inverse rotation of the incoming gradients."""

    @staticmethod
    def forward(ctx, cos, sin, interleaved, tuning, *xs):  # noqa: ANN001, ANN205 (autograd's signature)
        ctx.save_for_backward(cos, sin)
        ctx.interleaved, ctx.tuning = interleaved, tuning
        return _rotate(xs, cos, sin, interleaved, False, **tuning)

    @staticmethod
    def backward(ctx, *grads):  # noqa: ANN001, ANN205
        cos, sin = ctx.saved_tensors
        given = tuple(g for g in grads if g is not None)  # an output that reached no loss has no gradient
        rotated = iter(_rotate(given, cos, sin, ctx.interleaved, True, **ctx.tuning) if given else ())
        return None, None, None, None, *(None if g is None else next(rotated) for g in grads)


def _check(
    xs: tuple[torch.Tensor, ...],
    cos: torch.Tensor,
    sin: torch.Tensor,
    heads_per_program: int | None,
    block_t: int | None,
    num_warps: int,
) -> dict[str, int | None]:
    for x in xs:
        if x.dtype not in TRITON_DTYPES:
            raise TypeError(
                _("the Triton RoPE kernel takes x in {dtypes}, got {dtype}").format(
                    dtypes=[str(d) for d in TRITON_DTYPES], dtype=x.dtype
                )
            )
        if not (x.is_cuda or INTERPRETED):
            raise ValueError(
                _(
                    "the Triton RoPE kernel needs CUDA tensors, x is on {device} (set TRITON_INTERPRET=1 before import to run it on CPU in Triton's interpreter)"
                ).format(device=x.device)
            )
    if cos.requires_grad or sin.requires_grad:
        raise ValueError(
            _("the Triton RoPE kernel does not differentiate cos/sin; use apply_rope(..., fused=False)")
        )
    knobs = {"heads_per_program": heads_per_program, "block_t": block_t, "num_warps": num_warps}
    for name, value in knobs.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ValueError(_("{name} must be an int >= 1, got {value!r}").format(name=name, value=value))
    for x in xs:
        heads = x.shape[-3] if x.ndim >= 3 else 1
        if heads_per_program is not None and heads % heads_per_program:
            raise ValueError(
                _(
                    "heads_per_program must divide the number of heads {heads}, got {heads_per_program}"
                ).format(heads=heads, heads_per_program=heads_per_program)
            )
    for name in ("block_t", "num_warps"):
        if knobs[name] is not None and knobs[name] & (knobs[name] - 1):
            raise ValueError(
                _("{name} must be a power of two, got {value}").format(name=name, value=knobs[name])
            )
    return knobs


def apply_rope_triton(
    x: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    *,
    layout: str = "half",
    heads_per_program: int | None = None,
    block_t: int | None = None,
    num_warps: int = 4,
) -> torch.Tensor:
    """Triton ``apply_rope``: ``x`` ``(..., T, D)`` float32/float16/bfloat16 on CUDA, ``cos``/``sin`` ``(T, r)``
    or with as many dims as ``x`` -> a new ``(..., T, D)`` tensor in ``x.dtype`` (rotated in float32).

    Differentiable in ``x`` (not in ``cos``/``sin``: ``apply_rope`` keeps those on the eager path).
    ``heads_per_program``: heads each program rotates with one read of its cos/sin tile, a divisor of the
    number of heads ``x.shape[-3]`` (default: the largest that still leaves ``MIN_PROGRAMS`` programs); a
    tuning knob, the result does not depend on it; so are ``block_t`` (positions per program, a power of two;
    default: tiles of about 2048 values) and ``num_warps``. ``python -m posref.bench --device cuda`` times a few.
    """
    knobs = _check((x,), cos, sin, heads_per_program, block_t, num_warps)
    return _RotateFunction.apply(cos, sin, layout == "interleaved", knobs, x)[0]


def apply_rope_qk_triton(
    q: torch.Tensor,
    k: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    *,
    layout: str = "half",
    heads_per_program: int | None = None,
    block_t: int | None = None,
    num_warps: int = 4,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Queries ``(..., Hq, T, D)`` and keys ``(..., Hk, T, D)`` rotated in one launch -> ``(q_rot, k_rot)``.

    ``q`` and ``k`` must be equal in shape but for the number of heads (grouped-query attention has fewer key
    heads); the options are those of ``apply_rope_triton`` (``heads_per_program`` must divide both).
    """
    if q.ndim != k.ndim or q.ndim < 3 or q.shape[:-3] != k.shape[:-3] or q.shape[-2:] != k.shape[-2:]:
        raise ValueError(
            _(
                "q and k must be (..., heads, T, D) and equal but for their heads, got {q_shape} and {k_shape}"
            ).format(q_shape=tuple(q.shape), k_shape=tuple(k.shape))
        )
    knobs = _check((q, k), cos, sin, heads_per_program, block_t, num_warps)
    return _RotateFunction.apply(cos, sin, layout == "interleaved", knobs, q, k)
