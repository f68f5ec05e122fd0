"""Position handling as one choice: how a Transformer is told where each token is.

Each method touches attention in at most one of three places, and ``PositionHandler`` has one hook for each
(the identity by default):

* ``embed(x, positions)``: add a vector to each token embedding (``learned``, ``sinusoidal``);
* ``rotate(q, k, positions)``: rotate queries and keys (``rope``, with any scaling);
* ``bias(q_positions, k_positions)``: add an ``(H, Tq, Tk)`` bias to the scores (``alibi``, ``t5``).

``nope`` uses none of them: no explicit position signal at all, order is recovered only through the causal
mask (Kazemnejad et al. 2023, arXiv 2305.19466). It is a method like the others, not a missing argument.

Shapes: ``x`` is ``(B, T, d_model)``; ``q``, ``k`` are ``(B, H, T, head_dim)``; positions are 1-D ``(T,)``.

A handler of your own (notebooks 06 and 08) subclasses ``PositionHandler`` and overrides the hooks its method
needs; the contract of each hook:

* ``embed(x, positions)`` -> ``(B, T, d_model)``, called once on the token embeddings before the first block;
* ``rotate(q, k, positions)`` -> ``(q, k)`` of the same shapes, called in every layer on the queries and keys of
  the tokens at ``positions`` (the values are never given to it: a position method does not touch them);
* ``bias(q_positions, k_positions)`` -> an ``(H, Tq, Tk)`` tensor added to the scores of every layer, or None.

Positions are integer tensors and need not start at 0: at a KV-cache step the new queries sit at positions after
the cached keys. ``TinyDecoder`` calls the handler it holds in ``model.positions``, so ``model.positions =
handler`` puts a handler of your own in a model, and ``handler_attention`` runs one attention layer through a
handler (what the checkers of notebooks 06 and 08 compare).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from posref._checks import check_choice, check_integer_positions, check_positive_int, check_tensor
from posref.absolute import LearnedPositionalEmbedding, sinusoidal_pe
from posref.attention import scaled_dot_product_attention
from posref.i18n import _
from posref.relative import T5RelativeBias, alibi_bias, alibi_slopes
from posref.rope import RotaryEmbedding

POSITION_METHODS = ("learned", "sinusoidal", "alibi", "t5", "rope", "nope")


class PositionHandler(nn.Module):
    """Base class: every hook is the identity. Subclasses override the one their method uses."""

    name = "base"

    def embed(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        return x

    def rotate(
        self, q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        return q, k

    def bias(self, q_positions: torch.Tensor, k_positions: torch.Tensor) -> torch.Tensor | None:
        return None


class NoPE(PositionHandler):
    """No positional encoding (arXiv 2305.19466): all three hooks are the identity."""

    name = "nope"


class LearnedPositions(PositionHandler):
    """Learned absolute table added to the token embeddings; positions past ``max_positions`` are an error."""

    name = "learned"

    def __init__(self, max_positions: int, d_model: int) -> None:
        super().__init__()
        self.table = LearnedPositionalEmbedding(max_positions, d_model)

    def embed(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        return x + self.table(positions).to(x.dtype)


class SinusoidalPositions(PositionHandler):
    """Fixed sinusoidal table (Vaswani et al. 2017) added to the token embeddings; defined at every position."""

    name = "sinusoidal"

    def __init__(self, d_model: int, *, base: float = 10000.0) -> None:
        super().__init__()
        self.d_model, self.base = d_model, base

    def embed(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        check_tensor("positions", positions)
        check_integer_positions("positions", positions)
        low, high = torch.aminmax(positions)
        if int(low) < 0:  # a negative index would silently read a row from the end of the table
            raise ValueError(_("sinusoidal positions must be >= 0, got {low}").format(low=int(low)))
        n = int(high) + 1
        table = sinusoidal_pe(n, self.d_model, base=self.base, device=x.device, dtype=x.dtype)
        return x + table[positions]


class ALiBiPositions(PositionHandler):
    """ALiBi (arXiv 2108.12409): a fixed linear distance penalty per head, added to the scores."""

    name = "alibi"

    def __init__(self, n_heads: int) -> None:
        super().__init__()
        self.register_buffer("slopes", alibi_slopes(n_heads), persistent=False)

    def bias(self, q_positions: torch.Tensor, k_positions: torch.Tensor) -> torch.Tensor:
        return alibi_bias(self.slopes, q_positions, k_positions)


class T5Positions(PositionHandler):
    """T5's learned bucketed relative bias (arXiv 1910.10683), unidirectional for a decoder."""

    name = "t5"

    def __init__(self, n_heads: int, *, num_buckets: int = 32, max_distance: int = 128) -> None:
        super().__init__()
        self.relative = T5RelativeBias(
            n_heads, bidirectional=False, num_buckets=num_buckets, max_distance=max_distance
        )

    def bias(self, q_positions: torch.Tensor, k_positions: torch.Tensor) -> torch.Tensor:
        return self.relative(q_positions, k_positions)


class RoPEPositions(PositionHandler):
    """RoPE (arXiv 2104.09864) on queries and keys, with any scaling of ``posref.scaling``."""

    name = "rope"

    def __init__(
        self,
        head_dim: int,
        *,
        base: float = 10000.0,
        scaling: Mapping[str, Any] | None = None,
        layout: str = "half",
    ) -> None:
        super().__init__()
        self.rotary = RotaryEmbedding(head_dim, base=base, scaling=scaling, layout=layout)

    def rotate(
        self, q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        return self.rotary(q, k, positions=positions)


def make_position_handler(
    method: str,
    *,
    d_model: int,
    n_heads: int,
    max_positions: int | None = None,
    rope_base: float = 10000.0,
    rope_scaling: Mapping[str, Any] | None = None,
    rope_layout: str = "half",
    t5_num_buckets: int = 32,
    t5_max_distance: int = 128,
) -> PositionHandler:
    """Build the handler for ``method``, one of ``POSITION_METHODS``.

    ``max_positions`` is required for ``learned`` (the table's length); ``rope_*`` apply to ``rope`` only and
    ``t5_*`` to ``t5`` only.
    """
    check_choice("position method", method, POSITION_METHODS)
    check_positive_int("d_model", d_model)
    check_positive_int("n_heads", n_heads)
    if d_model % n_heads:
        raise ValueError(
            _("d_model ({d_model}) must be divisible by n_heads ({n_heads})").format(
                d_model=d_model, n_heads=n_heads
            )
        )
    if method == "learned":
        if max_positions is None:
            raise ValueError(_("the 'learned' method needs max_positions (the length of its table)"))
        return LearnedPositions(max_positions, d_model)
    if method == "sinusoidal":
        return SinusoidalPositions(d_model)
    if method == "alibi":
        return ALiBiPositions(n_heads)
    if method == "t5":
        return T5Positions(n_heads, num_buckets=t5_num_buckets, max_distance=t5_max_distance)
    if method == "rope":
        return RoPEPositions(d_model // n_heads, base=rope_base, scaling=rope_scaling, layout=rope_layout)
    return NoPE()


def handler_attention(
    handler: PositionHandler,
    x: torch.Tensor,
    w_qkv: torch.Tensor,
    n_heads: int,
    *,
    start: int = 0,
    n_new: int | None = None,
) -> torch.Tensor:
    """One causal attention layer of the ``TinyDecoder`` seen through ``handler`` -> ``(B, H, n_new, D)``.

    ``x`` is ``(B, T, C)``, the tokens at positions ``start .. start + T - 1``; ``w_qkv`` is ``(3C, C)``, the
    query, key and value projections stacked as in ``CausalSelfAttention``. The last ``n_new`` tokens (all by
    default) are the queries and every token is a key, as at a KV-cache step: queries and keys go through
    ``handler.rotate`` separately, each with its own positions, and ``handler.bias`` gets both position lists.
    Returns the per-head outputs ``softmax(q k^T / sqrt(D) + bias) v`` under the causal mask.
    """
    B, T, C = x.shape
    n_new = T if n_new is None else n_new
    if not 1 <= n_new <= T:
        raise ValueError(_("n_new must be in [1, T] = [1, {T}], got {n_new}").format(T=T, n_new=n_new))
    positions = torch.arange(start, start + T, device=x.device)
    q_positions = positions[T - n_new :]
    h = handler.embed(x, positions)
    # (B, T, 3C) -> (3, B, H, T, D)
    q, k, v = (h @ w_qkv.T).view(B, T, 3, n_heads, C // n_heads).permute(2, 0, 3, 1, 4)
    q = q[:, :, T - n_new :]
    q = handler.rotate(q, q, q_positions)[0]
    k = handler.rotate(k, k, positions)[1]
    bias = handler.bias(q_positions, positions)
    return scaled_dot_product_attention(q, k, v, causal=True, bias=bias)
