"""Relative position biases added to attention scores: ALiBi and T5's bucketed bias.

ALiBi (Press et al. 2022, arXiv 2108.12409): head ``h`` adds ``-s_h * |m - n|`` to the score of query ``m``
and key ``n``. For ``n`` heads, a power of two, ``s_h = 2**(-8h/n)``, ``h = 1..n``; otherwise the slopes of
the largest power of two ``c < n`` followed by every other slope of ``2c`` (the paper's code).

T5 (Raffel et al. 2020, arXiv 1910.10683): ``relative_position = key_position - query_position`` is mapped to
one of ``num_buckets`` buckets, exact for small distances and logarithmic up to ``max_distance``; each
bucket has a learned scalar per head.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from posref._checks import (
    check_float,
    check_float_dtype,
    check_integer_positions,
    check_positive_int,
    check_same_device,
    check_tensor,
)
from posref.i18n import _


def _power_of_two_slopes(n: int) -> list[float]:
    return [2.0 ** (-8.0 * h / n) for h in range(1, n + 1)]


def alibi_slopes(
    n_heads: int, *, device: torch.device | str | None = None, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """ALiBi's per-head slopes -> ``(n_heads,)``, largest first.

    8 heads: ``1/2, 1/4, ..., 1/256``. 12 heads: ``2**-1 .. 2**-8`` then ``2**-0.5, 2**-1.5, 2**-2.5, 2**-3.5``.
    """
    check_positive_int("n_heads", n_heads)
    check_float_dtype("dtype", dtype)  # integer slopes would all be 0
    c = 2 ** int(math.floor(math.log2(n_heads)))
    slopes = _power_of_two_slopes(c)
    if c < n_heads:
        slopes += _power_of_two_slopes(2 * c)[0::2][: n_heads - c]
    return torch.tensor(slopes, device=device, dtype=dtype)


def _as_positions(name: str, positions: torch.Tensor | int, device: torch.device | None) -> torch.Tensor:
    if isinstance(positions, int) and not isinstance(positions, bool):
        if positions < 0:
            raise ValueError(
                _("{name} as a length (meaning arange(length)) must be >= 0, got {positions}").format(
                    name=name, positions=positions
                )
            )
        return torch.arange(positions, device=device)
    check_tensor(name, positions)
    check_integer_positions(name, positions)
    if positions.ndim != 1:
        raise ValueError(
            _("{name} must be 1-D (one position per token), got shape {positions_shape}").format(
                name=name, positions_shape=tuple(positions.shape)
            )
        )
    return positions


def alibi_bias(
    slopes: torch.Tensor, q_positions: torch.Tensor | int, k_positions: torch.Tensor | int
) -> torch.Tensor:
    """The symmetric ALiBi bias ``-s_h * |m - n|`` -> ``(n_heads, Tq, Tk)`` in ``slopes.dtype``.

    ``q_positions``/``k_positions`` are 1-D integer tensors (or a length, meaning ``arange(length)``). Under a
    causal mask this equals the paper's ``-m (i - j)`` (its slope ``m``, query ``i``, key ``j``); it is also valid without one.
    """
    check_tensor("slopes", slopes)
    check_float("slopes", slopes)
    if slopes.ndim != 1:
        raise ValueError(
            _("slopes must be 1-D (one per head), got shape {slopes_shape}").format(
                slopes_shape=tuple(slopes.shape)
            )
        )
    q = _as_positions("q_positions", q_positions, slopes.device)
    k = _as_positions("k_positions", k_positions, slopes.device)
    check_same_device(slopes=slopes, q_positions=q, k_positions=k)
    distance = (q[:, None] - k[None, :]).abs().to(slopes.dtype)  # (Tq, Tk)
    return -slopes[:, None, None] * distance


def t5_relative_position_bucket(
    relative_position: torch.Tensor,
    *,
    bidirectional: bool = True,
    num_buckets: int = 32,
    max_distance: int = 128,
) -> torch.Tensor:
    """Map ``relative_position = key_position - query_position`` to a bucket in ``[0, num_buckets)``.

    Bidirectional: half the buckets for keys before the query, half (offset by ``num_buckets // 2``) for keys
    after it. Unidirectional (decoder): keys after the query fall in bucket 0 with distance 0. Within each half
    of size ``nb``, distances ``n < nb // 2`` get their own bucket; larger ones share buckets spaced
    logarithmically up to ``max_distance``; every ``n`` beyond that is clipped to the last bucket ``nb - 1``.
    Same convention and arithmetic (float32 log, truncation) as T5 and the transformers library.
    """
    check_tensor("relative_position", relative_position)
    check_integer_positions("relative_position", relative_position)
    check_positive_int("num_buckets", num_buckets)
    check_positive_int("max_distance", max_distance)
    rel = relative_position.long()
    buckets = torch.zeros_like(rel)
    given = num_buckets
    if bidirectional:
        num_buckets //= 2  # per direction
        buckets = buckets + (rel > 0).long() * num_buckets
        n = rel.abs()
    else:
        n = (-rel).clamp(min=0)
    max_exact = num_buckets // 2
    if max_exact < 1:
        if bidirectional:
            message = _(
                "num_buckets must be >= 4 (bidirectional: at least one exact and one log bucket per direction), "
                "got {given}"
            )
        else:
            message = _("num_buckets must be >= 2 (at least one exact and one log bucket), got {given}")
        raise ValueError(message.format(given=given))
    if max_distance <= max_exact:
        if bidirectional:
            message = _(
                "max_distance must exceed the {max_exact} exactly bucketed distances (num_buckets={given}, "
                "bidirectional), got max_distance={max_distance}"
            )
        else:
            message = _(
                "max_distance must exceed the {max_exact} exactly bucketed distances (num_buckets={given}), "
                "got max_distance={max_distance}"
            )
        raise ValueError(message.format(max_exact=max_exact, given=given, max_distance=max_distance))
    is_small = n < max_exact
    # log-spaced buckets for max_exact <= n < max_distance; clipped to the last bucket beyond
    log_ratio = torch.log(n.float().clamp(min=1) / max_exact) / math.log(max_distance / max_exact)
    large = max_exact + (log_ratio * (num_buckets - max_exact)).long()
    large = large.clamp(max=num_buckets - 1)
    return buckets + torch.where(is_small, n, large)


class T5RelativeBias(nn.Module):
    """T5's learned relative bias: a scalar per (bucket, head) -> ``(n_heads, Tq, Tk)``.

    ``forward(q_positions, k_positions)`` takes 1-D integer tensors or lengths. The bucket of a pair is
    ``t5_relative_position_bucket(k - q)``.
    """

    def __init__(
        self,
        n_heads: int,
        *,
        bidirectional: bool,
        num_buckets: int = 32,
        max_distance: int = 128,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        self.n_heads = check_positive_int("n_heads", n_heads)
        self.bidirectional = bool(bidirectional)
        self.num_buckets = num_buckets
        self.max_distance = max_distance
        self.embedding = nn.Embedding(num_buckets, n_heads, device=device, dtype=dtype)

    def forward(self, q_positions: torch.Tensor | int, k_positions: torch.Tensor | int) -> torch.Tensor:
        device = self.embedding.weight.device
        q = _as_positions("q_positions", q_positions, device)
        k = _as_positions("k_positions", k_positions, device)
        check_same_device(weights=self.embedding.weight, q_positions=q, k_positions=k)
        buckets = t5_relative_position_bucket(
            k[None, :] - q[:, None],
            bidirectional=self.bidirectional,
            num_buckets=self.num_buckets,
            max_distance=self.max_distance,
        )  # (Tq, Tk)
        return self.embedding(buckets).permute(2, 0, 1)  # (Tq, Tk, H) -> (H, Tq, Tk)

    def extra_repr(self) -> str:
        return (
            f"n_heads={self.n_heads}, bidirectional={self.bidirectional}, "
            f"num_buckets={self.num_buckets}, max_distance={self.max_distance}"
        )
