"""Absolute position encodings: the sinusoidal table and a learned table.

Sinusoidal PE (Vaswani et al. 2017, arXiv 1706.03762, section 3.5), original interleaved layout::

    pe[p, 2i]   = sin(p * base**(-2i/dim))
    pe[p, 2i+1] = cos(p * base**(-2i/dim))

Pair ``i = 0`` turns fastest (wavelength ``2*pi`` ~ 6.3 positions); the last pair is slowest
(wavelength ``2*pi * base**((dim-2)/dim)``, ~ 54,410 positions for ``dim = 128``). Because each pair is a
point on a circle, shifting by ``k`` positions is a fixed rotation of every pair: ``PE(p + k) = M_k PE(p)``
(``sinusoidal_shift_matrix``).
"""

from __future__ import annotations

import torch
from torch import nn

from posref._checks import (
    check_base,
    check_even,
    check_float_dtype,
    check_integer_positions,
    check_positive_int,
    check_tensor,
)
from posref.i18n import _


def sinusoidal_frequencies(
    dim: int,
    *,
    base: float = 10000.0,
    device: torch.device | str | None = None,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """Angular frequency of each pair, ``base**(-2i/dim)`` for ``i = 0 .. dim/2 - 1`` -> ``(dim/2,)``."""
    check_even("dim", dim)
    base = check_base("base", base)
    check_float_dtype("dtype", dtype)
    exponents = torch.arange(0, dim, 2, device=device, dtype=dtype) / dim
    return base ** (-exponents)


def sinusoidal_pe(
    n_positions: int,
    dim: int,
    *,
    base: float = 10000.0,
    device: torch.device | str | None = None,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """The sinusoidal table for positions ``0 .. n_positions - 1`` -> ``(n_positions, dim)``.

    Angles are formed in float32 (float64 when ``dtype`` is float64) and the table is cast to ``dtype`` at the end:
    half-precision angles would be wrong by whole radians at long positions.
    """
    check_positive_int("n_positions", n_positions)
    check_float_dtype("dtype", dtype)  # an integer table would hold only 0 and 1
    angle_dtype = torch.float64 if dtype == torch.float64 else torch.float32
    freqs = sinusoidal_frequencies(dim, base=base, device=device, dtype=angle_dtype)
    angles = torch.arange(n_positions, device=device, dtype=angle_dtype)[:, None] * freqs  # (P, dim/2)
    # (P, dim/2, 2) -> (P, dim): sin in even columns, cos in odd columns
    return torch.stack((angles.sin(), angles.cos()), dim=-1).flatten(-2).to(dtype)


def sinusoidal_shift_matrix(
    k: int | float,
    dim: int,
    *,
    base: float = 10000.0,
    device: torch.device | str | None = None,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """The ``(dim, dim)`` matrix ``M_k`` with ``PE(p + k) = M_k @ PE(p)`` for every position ``p``.

    It is block diagonal; the block of pair ``i`` (frequency ``w``) is ``[[cos kw, sin kw], [-sin kw, cos kw]]``,
    from ``sin(a + b) = sin a cos b + cos a sin b`` and ``cos(a + b) = cos a cos b - sin a sin b``.
    It does not depend on ``p``: a shift is a linear map of the encoding.
    """
    check_float_dtype("dtype", dtype)
    angles = float(k) * sinusoidal_frequencies(dim, base=base, device=device, dtype=torch.float64)
    c, s = angles.cos(), angles.sin()
    blocks = torch.stack((torch.stack((c, s), -1), torch.stack((-s, c), -1)), -2)  # (dim/2, 2, 2)
    return torch.block_diag(*blocks).to(dtype)


class LearnedPositionalEmbedding(nn.Module):
    """A learned table of ``max_positions`` vectors (GPT-2's ``wpe``, BERT's position embeddings).

    ``forward(positions)`` looks rows up: ``positions`` is an integer tensor of any shape ``S`` and the result
    is ``S + (dim,)``. A position outside ``[0, max_positions)`` has no row and raises an error: this is the
    length limit of learned absolute positions.
    """

    def __init__(
        self,
        max_positions: int,
        dim: int,
        *,
        init_std: float = 0.02,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.max_positions = check_positive_int("max_positions", max_positions)
        self.dim = check_positive_int("dim", dim)
        self.weight = nn.Parameter(torch.empty(max_positions, dim, device=device, dtype=dtype))
        nn.init.normal_(self.weight, std=init_std)

    def forward(self, positions: torch.Tensor) -> torch.Tensor:
        check_tensor("positions", positions)
        check_integer_positions("positions", positions)
        if positions.numel():
            lo, hi = int(positions.min()), int(positions.max())
            if lo < 0 or hi >= self.max_positions:
                raise IndexError(
                    _(
                        "position {position} is outside the learned table: it has rows for positions 0..{last} only (max_positions={max_positions})"
                    ).format(
                        position=hi if hi >= self.max_positions else lo,
                        last=self.max_positions - 1,
                        max_positions=self.max_positions,
                    )
                )
        return self.weight[positions]

    def extra_repr(self) -> str:
        return f"max_positions={self.max_positions}, dim={self.dim}"
