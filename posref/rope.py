"""Rotary position embedding (RoPE; Su et al. 2021, RoFormer, arXiv 2104.09864).

Each pair of dims of a query or key at position ``m`` is rotated by the angle ``m * inv_freq[i]``::

    x_a' = x_a cos(m w_i) - x_b sin(m w_i)
    x_b' = x_b cos(m w_i) + x_a sin(m w_i)

so ``<R_m q, R_n k>`` depends on ``n - m`` only. Which dims form a pair is a *layout*:

* ``"half"`` (GPT-NeoX, Llama, Mistral, Qwen; ``rotate_half``): pair ``i`` is ``(i, i + r)``;
* ``"interleaved"`` (RoFormer paper, GPT-J): pair ``i`` is ``(2i, 2i + 1)``;

where ``r = cos.shape[-1]`` is the number of rotated pairs. The layouts rotate different dims, so weights
trained with one give wrong scores under the other; ``layout_permutation`` relates them exactly.

Shapes: ``...`` leading dims (batch, heads), ``T`` sequence, ``D`` head dim, ``r`` rotated pairs (``2r <= D``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch import nn

from posref import kernels
from posref._checks import (
    broadcasts_to,
    check_choice,
    check_even,
    check_float,
    check_integer_positions,
    check_nonnegative_int,
    check_positive_int,
    check_same_device,
    check_tensor,
)
from posref.i18n import _
from posref.scaling import rope_frequencies, split_scaling

LAYOUTS = ("half", "interleaved")


def rope_cos_sin(
    positions: torch.Tensor, inv_freq: torch.Tensor, *, attention_factor: float = 1.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Cos and sin of the rotation angles ``positions * inv_freq`` -> two ``positions.shape + (r,)`` tensors.

    ``positions`` are usually integers; any sign is allowed (a negative position rotates backwards) and so are
    real-valued ones (Position Interpolation is ``positions / s``); bool and complex are errors.
    Angles are formed, and cos and sin returned, in the wider of float32 and the inputs' dtypes: float32 for
    integer, half-precision or float32 inputs (float16 angles are wrong by whole radians at long positions),
    float64 when either input is float64 (float32 angles are off by ~1e-5 rad at position 1000, which a
    float64 user would see as an error of that size in RoPE's relative property).
    ``attention_factor`` multiplies both (YaRN's and LongRoPE's temperature lives here).
    """
    check_tensor("positions", positions)
    check_tensor("inv_freq", inv_freq)
    for name, t in (("positions", positions), ("inv_freq", inv_freq)):
        if t.dtype == torch.bool or t.is_complex():
            raise TypeError(
                _("{name} must be a real (integer or float) tensor, got dtype {dtype}").format(
                    name=name, dtype=t.dtype
                )
            )
    check_same_device(positions=positions, inv_freq=inv_freq)
    if inv_freq.ndim != 1:
        raise ValueError(
            _("inv_freq must be 1-D (one frequency per pair), got shape {inv_freq_shape}").format(
                inv_freq_shape=tuple(inv_freq.shape)
            )
        )
    compute = torch.promote_types(torch.promote_types(positions.dtype, inv_freq.dtype), torch.float32)
    angles = positions.to(compute)[..., None] * inv_freq.to(compute)
    cos, sin = angles.cos(), angles.sin()
    if attention_factor != 1.0:
        cos, sin = cos * attention_factor, sin * attention_factor
    return cos, sin


def _check_rope_inputs(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> int:
    check_tensor("x", x)
    check_tensor("cos", cos)
    check_tensor("sin", sin)
    check_float("x", x)
    check_same_device(x=x, cos=cos, sin=sin)
    if cos.shape != sin.shape:
        raise ValueError(
            _("cos and sin must have the same shape, got {cos_shape} and {sin_shape}").format(
                cos_shape=tuple(cos.shape), sin_shape=tuple(sin.shape)
            )
        )
    if x.ndim < 2:
        raise ValueError(
            _("x must be (..., seq, head_dim), got shape {x_shape}").format(x_shape=tuple(x.shape))
        )
    r = cos.shape[-1]
    head_dim, seq = x.shape[-1], x.shape[-2]
    if 2 * r > head_dim:
        raise ValueError(
            _(
                "cos/sin have {r} pairs (last dim) = {dims} rotated dims, more than x's head_dim {head_dim}; expected cos.shape[-1] <= head_dim / 2"
            ).format(r=r, dims=2 * r, head_dim=head_dim)
        )
    if cos.ndim < 2 or cos.shape[-2] not in (1, seq):
        raise ValueError(
            _(
                "cos/sin must be (..., seq, pairs) with seq = {seq} (x.shape[-2]) or 1 (one position shared by every token), got shape {cos_shape}"
            ).format(seq=seq, cos_shape=tuple(cos.shape))
        )
    if cos.ndim not in (2, x.ndim):
        raise ValueError(
            _(
                "cos/sin of shape {cos_shape} are ambiguous for x of shape {x_shape}: pass (seq, pairs) or give them as many dims as x (e.g. cos[:, None] to add the head dim for per-batch positions)"
            ).format(cos_shape=tuple(cos.shape), x_shape=tuple(x.shape))
        )
    # a larger cos (more sequences) would enlarge x's shape
    if not broadcasts_to(cos.shape[:-1], x.shape[:-1]):
        raise ValueError(
            _(
                "cos/sin of shape {cos_shape} do not broadcast to x of shape {x_shape}: each leading dim of cos/sin must be 1 or equal to x's"
            ).format(cos_shape=tuple(cos.shape), x_shape=tuple(x.shape))
        )
    return r


def apply_rope(
    x: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    *,
    layout: str = "half",
    fused: bool | str | None = None,
) -> torch.Tensor:
    """Rotate the first ``2r`` dims of ``x`` in pairs; pass the other ``D - 2r`` dims through (partial rotary).

    Args:
        x: ``(..., T, D)`` queries or keys, any float dtype.
        cos, sin: ``(T, r)`` (shared by every leading dim) or with as many dims as ``x`` (e.g. ``(B, 1, T, r)``
            for per-sequence positions), from ``rope_cos_sin``; each leading dim 1 or equal to ``x``'s. A sequence
            dim of 1 instead of ``T`` is one position shared by every token.
        layout: ``"half"`` pairs ``(i, i + r)``; ``"interleaved"`` pairs ``(2i, 2i + 1)``.
        fused: run one fused pass instead of the readable eager kernels: ``"triton"`` (a hand-written kernel,
            CUDA only; ``posref.kernels.rope_triton``), ``"compile"`` (``torch.compile``;
            ``posref.kernels.rope_compiled``), ``True`` (the best of those for ``x``'s device), ``False`` (eager).
            ``None`` (default): on CUDA the Triton kernel when Triton is installed and takes ``x.dtype``, else
            ``torch.compile``; eager elsewhere (compiling costs seconds). ``posref.kernels.choose`` has the rule.
    Returns: a new ``(..., T, D)`` tensor in ``x.dtype``, rotated in the wider of float32 and ``x.dtype`` on
    every backend (half precision in float32 and rounded once, float64 in float64); ``cos``/``sin`` are taken
    in that dtype, so a float64 result is as precise as its tables (``rope_cos_sin`` of float64 frequencies).
    """
    check_choice("layout", layout, LAYOUTS)
    r = _check_rope_inputs(x, cos, sin)
    backend = kernels.choose(x, cos, sin, fused)
    if backend == "triton":
        from posref.kernels import rope_triton  # imports Triton: only when its kernel runs

        out = kernels.run_triton(
            lambda: rope_triton.apply_rope_triton(x, cos, sin, layout=layout), x, named=fused == "triton"
        )
        if out is not None:
            return out
        backend = "compile"
    if backend == "compile":
        from posref.kernels import rope_compiled  # imports torch's compiler: only when it runs

        return rope_compiled.apply_rope_compiled(x, cos, sin, layout=layout)
    compute = torch.promote_types(x.dtype, torch.float32)
    cos, sin = cos.to(compute), sin.to(compute)
    if layout == "interleaved":
        return _apply_interleaved(x, cos, sin, r, compute)
    return _apply_half(x, cos, sin, r, compute)


def apply_rope_qk(
    q: torch.Tensor,
    k: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    *,
    layout: str = "half",
    fused: bool | str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(apply_rope(q, cos, sin), apply_rope(k, cos, sin))``; on the Triton path one launch for both.

    ``q`` ``(..., Hq, T, D)`` and ``k`` ``(..., Hk, T, D)`` go through one kernel when they are equal in shape but
    for the number of heads (grouped-query attention); otherwise, and on the other backends, one call each.
    """
    one_launch = (
        all(isinstance(t, torch.Tensor) for t in (q, k, cos, sin))
        and q.ndim == k.ndim >= 3
        and q.shape[:-3] == k.shape[:-3]
        and q.shape[-2:] == k.shape[-2:]
        and {kernels.choose(q, cos, sin, fused), kernels.choose(k, cos, sin, fused)} == {"triton"}
    )
    if one_launch:  # validated here; otherwise each apply_rope call validates its own tensor (once)
        check_choice("layout", layout, LAYOUTS)
        _check_rope_inputs(q, cos, sin)
        _check_rope_inputs(k, cos, sin)
        from posref.kernels import rope_triton

        out = kernels.run_triton(
            lambda: rope_triton.apply_rope_qk_triton(q, k, cos, sin, layout=layout),
            q,
            named=fused == "triton",
        )
        if out is not None:
            return out
    return apply_rope(q, cos, sin, layout=layout, fused=fused), apply_rope(
        k, cos, sin, layout=layout, fused=fused
    )


def _apply_half(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, r: int, compute: torch.dtype
) -> torch.Tensor:
    xc = x.to(compute)
    x1, x2 = xc[..., :r], xc[..., r : 2 * r]
    # [x1, x2, rest] -> [x1 cos, x2 cos, rest]: one pass over x, the dims 2r.. that pass through times 1 (exact)
    ones = cos.new_ones(cos.shape[:-1] + (x.shape[-1] - 2 * r,))
    out = xc * torch.cat((cos, cos, ones), dim=-1)
    # then the cross terms, added in place: [x1 cos - x2 sin, x2 cos + x1 sin, rest]
    out[..., :r].addcmul_(x2, sin, value=-1.0)
    out[..., r : 2 * r].addcmul_(x1, sin)
    return out.to(x.dtype)


def _apply_interleaved(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, r: int, compute: torch.dtype
) -> torch.Tensor:
    xc = x.to(compute)
    # pair i is the complex number x_2i + i x_2i+1; its rotation by m w_i is one product with cos + i sin
    rotated = torch.view_as_real(_complex_pairs(xc, r) * torch.complex(cos, sin)).flatten(-2)
    if 2 * r < x.shape[-1]:
        rotated = torch.cat((rotated, xc[..., 2 * r :]), dim=-1)
    return rotated.to(x.dtype)


def _complex_pairs(x: torch.Tensor, r: int) -> torch.Tensor:
    """The pairs ``(2i, 2i + 1)`` of the first ``2r`` dims as complex numbers: ``(..., T, D)`` -> ``(..., T, r)``;
    a view of ``x`` where its strides allow one, else of a copy."""
    # (..., T, 2r) -> (..., T, r, 2): the last dim holds a pair, real part first
    pairs = x[..., : 2 * r].unflatten(-1, (r, 2))
    try:
        return torch.view_as_complex(pairs)
    except RuntimeError:  # an odd stride or storage offset (a sliced tensor): no complex view of it exists
        return torch.view_as_complex(pairs.contiguous())


def layout_permutation(dim: int, *, device: torch.device | str | None = None) -> torch.Tensor:
    """Indices ``[0, 2, 4, ..., 1, 3, 5, ...]`` ("evens then odds") of length ``dim``.

    For ``perm = layout_permutation(D)``: ``apply_rope(x[..., perm], c, s, layout="half")`` equals
    ``apply_rope(x, c, s, layout="interleaved")[..., perm]``. This is how checkpoints are converted between
    the two layouts (permuting the rows of the query and key projections).
    """
    check_even("dim", dim)
    return torch.cat((torch.arange(0, dim, 2, device=device), torch.arange(1, dim, 2, device=device)))


class RotaryEmbedding(nn.Module):
    """RoPE with a cos/sin cache, explicit positions or a KV-cache offset, and length-dependent scaling.

    ``forward(q, k, positions=None, offset=0)`` rotates ``(..., T, D)`` queries and keys; positions default to
    ``offset .. offset + T - 1`` (the new tokens after ``offset`` cached ones), read as a slice of the cache
    without waiting for the device. ``positions`` may be ``(T,)`` or ``(B, T)`` (one row per sequence, for
    ``(B, H, T, D)`` inputs); explicit positions cost one device sync (their largest value sizes the cache).

    The cache holds ``cos * attention_factor`` and ``sin * attention_factor`` for positions ``0 .. n - 1``; it grows
    (doubling) when a later position arrives, and is rebuilt when the frequencies change. For the
    length-dependent methods the frequencies follow the current length ``max(position) + 1``:

    * ``dynamic`` keeps the largest length seen so far and goes back to the original frequencies only once a
      sequence is shorter than ``original_max_position_embeddings`` (as the transformers library does);
    * ``longrope`` uses its long factors iff the length exceeds ``original_max_position_embeddings``, on every call.

    Trap: keys already in a KV cache were rotated with the frequencies in force when they were written; a
    later change of frequencies (dynamic NTK growing its base) does not re-rotate them, so old and new keys
    are then rotated inconsistently: the score of a new query against an old key depends on both positions,
    no longer on their distance alone (as the transformers library does; shown in tests/core/test_rotary_scaling.py).

    Casting the module (``.half()``, ``.to(torch.bfloat16)``) keeps the frequencies and cache in float32;
    ``.double()`` makes them float64, so a float64 model gets float64 angles.
    """

    def __init__(
        self,
        head_dim: int,
        *,
        base: float = 10000.0,
        scaling: Mapping[str, Any] | None = None,
        layout: str = "half",
        partial_rotary_factor: float = 1.0,
        initial_cache_len: int = 256,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        self.head_dim = check_positive_int("head_dim", head_dim)
        self.base = float(base)
        self.scaling = dict(scaling) if scaling is not None else None
        self.layout = check_choice("layout", layout, LAYOUTS)
        self.partial_rotary_factor = partial_rotary_factor
        self.method, params = split_scaling(self.scaling)
        self.original_len: int | None = params.get("original_max_position_embeddings")
        if self.method.length_dependent and self.original_len is None:
            raise ValueError(
                _("rope_type {name!r} needs original_max_position_embeddings").format(name=self.method.name)
            )
        self._freq_len: int | None = self.original_len if self.method.name == "dynamic" else None
        inv_freq, factor = self._frequencies(self._freq_len, device)
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.attention_factor = factor
        self.register_buffer("_cos", torch.empty(0, inv_freq.numel(), device=device), persistent=False)
        self.register_buffer("_sin", torch.empty(0, inv_freq.numel(), device=device), persistent=False)
        self._initial_cache_len = check_positive_int("initial_cache_len", initial_cache_len)

    def _frequencies(
        self, seq_len: int | None, device: torch.device | str | None, dtype: torch.dtype = torch.float32
    ) -> tuple[torch.Tensor, float]:
        inv_freq, factor = rope_frequencies(
            self.head_dim,
            base=self.base,
            scaling=self.scaling,
            seq_len=seq_len,
            partial_rotary_factor=self.partial_rotary_factor,
            device=device,
        )
        return inv_freq.to(dtype), factor

    def _apply(self, fn: Callable[[torch.Tensor], torch.Tensor], recurse: bool = True) -> RotaryEmbedding:
        # `.half()` / `.to(torch.bfloat16)` would round inv_freq and the cache to 8-11 bits (angles off by radians
        # at long positions): follow the device and float64, but recompute frequencies and cache in float32 else
        super()._apply(fn, recurse)
        device = self.inv_freq.device
        dtype = torch.float64 if self.inv_freq.dtype == torch.float64 else torch.float32
        self.inv_freq, self.attention_factor = self._frequencies(self._freq_len, device, dtype)
        length = self.cached_len
        self._cos = self._sin = torch.empty(0, self.inv_freq.numel(), device=device, dtype=dtype)
        if length:
            self._build_cache(length)
        return self

    @property
    def cached_len(self) -> int:
        return self._cos.shape[0]

    def _update_frequencies(self, seq_len: int) -> None:
        if not self.method.length_dependent:
            return
        if self.method.name == "dynamic":
            assert self._freq_len is not None and self.original_len is not None
            if seq_len > self._freq_len:
                new_len = seq_len
            elif seq_len < self.original_len:
                new_len = self.original_len
            else:
                new_len = self._freq_len  # hysteresis: a shorter sequence keeps the grown base
        else:
            new_len = seq_len
        if new_len == self._freq_len and self.cached_len:
            return
        inv_freq, factor = self._frequencies(new_len, self.inv_freq.device, self.inv_freq.dtype)
        self._freq_len = new_len
        if not torch.equal(inv_freq, self.inv_freq) or factor != self.attention_factor:
            self.inv_freq, self.attention_factor = inv_freq, factor
            self._build_cache(max(self.cached_len, self._initial_cache_len))

    def _build_cache(self, length: int) -> None:
        positions = torch.arange(length, device=self.inv_freq.device)
        self._cos, self._sin = rope_cos_sin(positions, self.inv_freq, attention_factor=self.attention_factor)

    def cos_sin(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Cached cos and sin for integer ``positions`` of any shape -> ``positions.shape + (r,)`` in the
        frequencies' dtype (float32; float64 after ``.double()``)."""
        check_tensor("positions", positions)
        check_integer_positions("positions", positions)
        check_same_device(positions=positions, inv_freq=self.inv_freq)
        if positions.numel() == 0:
            raise ValueError(_("positions is empty"))
        low, high = torch.aminmax(positions)  # one device sync: the cache must cover max(positions)
        if int(low) < 0:
            raise ValueError(_("positions must be >= 0, got {low}").format(low=int(low)))
        self._ensure_cached(int(high) + 1)
        return self._cos[positions], self._sin[positions]

    def _ensure_cached(self, needed: int) -> None:
        """Frequencies for length ``needed`` (length-dependent methods) and a cache covering ``0 .. needed - 1``."""
        self._update_frequencies(needed)
        if needed > self.cached_len:
            self._build_cache(max(needed, 2 * self.cached_len, self._initial_cache_len))

    def forward(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        *,
        positions: torch.Tensor | None = None,
        offset: int = 0,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Rotate queries and keys ``(..., T, D)`` at ``positions`` (default ``offset .. offset + T - 1``)."""
        self._check_x("q", q)
        self._check_x("k", k)
        if q.shape[-2] != k.shape[-2]:
            raise ValueError(
                _("q and k must have the same length, got {q_len} and {k_len}").format(
                    q_len=q.shape[-2], k_len=k.shape[-2]
                )
            )
        cos, sin = self._cos_sin_for(q, positions, offset)
        return apply_rope_qk(q, k, cos, sin, layout=self.layout)

    def rotate(
        self, x: torch.Tensor, *, positions: torch.Tensor | None = None, offset: int = 0
    ) -> torch.Tensor:
        """Rotate one tensor ``(..., T, D)`` (queries or keys alone)."""
        self._check_x("x", x)
        cos, sin = self._cos_sin_for(x, positions, offset)
        return apply_rope(x, cos, sin, layout=self.layout)

    def _check_x(self, name: str, x: torch.Tensor) -> None:
        check_tensor(name, x)
        if x.ndim < 2 or x.shape[-1] != self.head_dim:
            raise ValueError(
                _("{name} must be (..., seq, head_dim) with head_dim={head_dim}, got shape {x_shape}").format(
                    name=name, head_dim=self.head_dim, x_shape=tuple(x.shape)
                )
            )

    def _cos_sin_for(
        self, x: torch.Tensor, positions: torch.Tensor | None, offset: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        seq = x.shape[-2]
        if positions is None:
            offset = check_nonnegative_int("offset", offset)
            # contiguous positions: a slice of the cache, known on the host (no device sync, no gather)
            self._ensure_cached(offset + seq)
            return self._cos[offset : offset + seq], self._sin[offset : offset + seq]
        if offset:
            raise ValueError(_("pass either positions or offset, not both"))
        if positions.shape[-1] != seq or positions.ndim not in (1, 2):
            raise ValueError(
                _(
                    "positions must be (T,) or (B, T) with T = {seq} (x.shape[-2]), got shape {positions_shape}"
                ).format(seq=seq, positions_shape=tuple(positions.shape))
            )
        cos, sin = self.cos_sin(positions)
        if positions.ndim == 2:
            if x.ndim != 4 or x.shape[0] != positions.shape[0]:
                raise ValueError(
                    _(
                        "per-sequence positions (B, T) = {positions_shape} need x of shape (B, H, T, D), got {x_shape}"
                    ).format(positions_shape=tuple(positions.shape), x_shape=tuple(x.shape))
                )
            cos, sin = cos[:, None], sin[:, None]  # (B, T, r) -> (B, 1, T, r): shared by heads
        return cos, sin

    def extra_repr(self) -> str:
        return (
            f"head_dim={self.head_dim}, base={self.base}, rope_type={self.method.name!r}, layout={self.layout!r}, "
            f"partial_rotary_factor={self.partial_rotary_factor}"
        )
