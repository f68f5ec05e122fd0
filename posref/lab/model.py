"""A tiny pre-norm decoder-only Transformer whose position handling is one argument.

``TinyDecoder(vocab_size, positions=..., ...)`` takes a position method (``"learned"``, ``"sinusoidal"``,
``"alibi"``, ``"t5"``, ``"rope"``, ``"nope"``; see ``posref.lab.positions``) and its options as a dict, e.g.
``{"method": "rope", "rope_base": 50.0, "rope_scaling": {"rope_type": "yarn", ...}}``. One handler serves
every layer and is used through its three hooks:

* ``embed``: added to the token embeddings once, before the first block (learned, sinusoidal);
* ``rotate``: applied to queries and keys in every layer (RoPE);
* ``bias``: one ``(H, T, T)`` bias shared by every layer (ALiBi; T5 shares its bias across layers too).

``with_positions(...)`` returns a copy with the same weights and another handler: test-time RoPE scaling
(same weights, another ``rope_scaling``) and DroPE (RoPE replaced by NoPE, arXiv 2512.12167) are one call.

Two options of a RoPE spec say, layer by layer, how the rotation is used, with the keys of Llama 4's and SmolLM3's
configs (notebook 08, section 7): ``no_rope_layers`` (one entry a layer, 1 for a RoPE layer, 0 for a layer with no
position signal at all) and ``attention_chunk_size`` (the RoPE layers attend only within chunks of that many
positions, ``position // size``; the layers without rotation attend over everything before them).

Shapes: ``B`` batch, ``T`` sequence, ``C`` d_model, ``H`` heads, ``D = C / H`` head dim, ``V`` vocabulary.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from posref._checks import check_integer_positions, check_positive_int, check_tensor
from posref.attention import attention_scores
from posref.i18n import _
from posref.lab.positions import PositionHandler, make_position_handler


def causal_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor | None = None
) -> torch.Tensor:
    """Causal ``softmax(q k^T / sqrt(D) + bias) v`` via PyTorch's fused kernel -> ``(B, H, T, D)``.

    ``q, k, v`` are ``(B, H, T, D)``; ``bias`` is ``(H, T, T)`` or None. The same result as the readable
    ``posref.scaled_dot_product_attention(q, k, v, causal=True, bias=bias)`` (tested), only faster.
    """
    if bias is None:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    T = q.shape[-2]
    blocked = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)  # True above the diagonal
    mask = bias.to(q.dtype).masked_fill(blocked, float("-inf"))  # (H, T, T): bias, -inf on future keys
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.out = nn.Linear(d_model, d_model, bias=False)

    def forward(
        self,
        x: torch.Tensor,
        positions: torch.Tensor,
        handler: PositionHandler,
        bias: torch.Tensor | None,
        weights: list[torch.Tensor] | None = None,
    ) -> torch.Tensor:
        B, T, C = x.shape
        # (B, T, 3C) -> (3, B, H, T, D)
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, C // self.n_heads).permute(2, 0, 3, 1, 4)
        q, k = handler.rotate(q, k, positions)
        if weights is not None:  # the attention weights themselves, (B, H, T, T), when asked for
            weights.append(attention_scores(q, k, causal=True, bias=bias).float().softmax(-1))
        y = causal_attention(q, k, v, bias)  # (B, H, T, D)
        return self.out(y.transpose(1, 2).reshape(B, T, C))


class MLP(nn.Module):
    def __init__(self, d_model: int) -> None:
        super().__init__()
        self.up = nn.Linear(d_model, 4 * d_model, bias=False)
        self.down = nn.Linear(4 * d_model, d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.gelu(self.up(x)))


class Block(nn.Module):
    """Pre-norm block: ``x + attn(norm(x))``, then ``x + mlp(norm(x))``."""

    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_heads)
        self.norm2 = nn.LayerNorm(d_model)
        self.mlp = MLP(d_model)

    def forward(
        self,
        x: torch.Tensor,
        positions: torch.Tensor,
        handler: PositionHandler,
        bias: torch.Tensor | None,
        weights: list[torch.Tensor] | None = None,
    ) -> torch.Tensor:
        x = x + self.attn(self.norm1(x), positions, handler, bias, weights)
        return x + self.mlp(self.norm2(x))


LAYER_OPTIONS = (
    "no_rope_layers",
    "attention_chunk_size",
)  # a RoPE spec's per-layer options, not the handler's
_NO_POSITIONS = PositionHandler()  # what a layer listed 0 in no_rope_layers uses: every hook the identity


def _layer_options(spec: Mapping[str, Any], n_layers: int) -> tuple[tuple[bool, ...], int | None]:
    """A spec's ``no_rope_layers`` and ``attention_chunk_size`` -> (does layer i use the handler, chunk size).

    Without them every layer uses the handler and attends over everything before it. Both are RoPE's only."""
    given = [key for key in LAYER_OPTIONS if key in spec]
    if given and spec["method"] != "rope":
        raise ValueError(
            _("{key} applies to the 'rope' method only, got method {method!r}").format(
                key=given[0], method=spec["method"]
            )
        )
    flags = spec.get("no_rope_layers")
    if flags is None:
        rotates = (True,) * n_layers
    elif (
        not isinstance(flags, list | tuple)
        or len(flags) != n_layers
        or any(flag not in (0, 1) or isinstance(flag, float) for flag in flags)
    ):
        raise ValueError(
            _(
                "no_rope_layers must hold one 1 (a RoPE layer) or 0 (no rotation) per layer, {n_layers} in all, got {flags!r}"
            ).format(n_layers=n_layers, flags=flags)
        )
    else:
        rotates = tuple(bool(flag) for flag in flags)
    chunk = spec.get("attention_chunk_size")
    if chunk is not None:
        check_positive_int("attention_chunk_size", chunk)
    return rotates, chunk


def chunk_mask(positions: torch.Tensor, size: int) -> torch.Tensor:
    """``(1, T, T)`` additive mask: 0 where query and key share a chunk (``position // size``), -inf elsewhere."""
    chunk = torch.div(positions, size, rounding_mode="floor")
    apart = chunk[:, None] != chunk[None, :]
    return torch.zeros(apart.shape, device=positions.device).masked_fill(apart, float("-inf"))[None]


def _position_spec(positions: str | Mapping[str, Any]) -> dict[str, Any]:
    """``"rope"`` or ``{"method": "rope", ...}`` -> a plain dict with a ``"method"`` key (copied)."""
    if isinstance(positions, str):
        return {"method": positions}
    if not isinstance(positions, Mapping) or "method" not in positions:
        raise TypeError(
            _(
                "positions must be a method name or a dict with a 'method' key, e.g. {{'method': 'rope', 'rope_base': 50.0}}; got {positions!r}"
            ).format(positions=positions)
        )
    return copy.deepcopy(dict(positions))


class TinyDecoder(nn.Module):
    """Token embedding, ``n_layers`` pre-norm blocks, a final LayerNorm and an untied output head.

    Args:
        vocab_size: number of tokens ``V``.
        positions: a method name or a dict ``{"method": ..., **options}``; the options are the keyword
            arguments of ``posref.make_position_handler`` (``max_positions`` for ``learned``, ``rope_base``,
            ``rope_scaling``, ``rope_layout``, ``t5_num_buckets``, ``t5_max_distance``) and, for ``rope``,
            ``no_rope_layers`` and ``attention_chunk_size`` (module docstring).
        d_model, n_layers, n_heads: width ``C``, depth and heads ``H`` (``C`` divisible by ``H``).

    ``forward(idx)`` maps ``(B, T)`` token ids to ``(B, T, V)`` logits. Token ``t`` sits at position ``t``
    unless ``positions`` (a ``(T,)`` integer tensor) says otherwise; the causal mask always follows the order
    of ``idx``.
    """

    def __init__(
        self,
        vocab_size: int,
        positions: str | Mapping[str, Any],
        *,
        d_model: int = 64,
        n_layers: int = 2,
        n_heads: int = 4,
    ) -> None:
        super().__init__()
        self.vocab_size = check_positive_int("vocab_size", vocab_size)
        self.d_model = check_positive_int("d_model", d_model)
        self.n_layers = check_positive_int("n_layers", n_layers)
        self.n_heads = check_positive_int("n_heads", n_heads)
        self.position_spec = _position_spec(positions)
        self.positions = self._make_handler(self.position_spec)
        self.tok_emb = nn.Embedding(vocab_size, d_model)
        self.blocks = nn.ModuleList(Block(d_model, n_heads) for _ in range(n_layers))
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)
        self.apply(_init_weights)

    def _make_handler(self, spec: Mapping[str, Any]) -> PositionHandler:
        """The handler of ``spec``; sets ``layer_rotates`` and ``chunk_size`` from its per-layer options."""
        self.layer_rotates, self.chunk_size = _layer_options(spec, self.n_layers)
        options = {key: value for key, value in spec.items() if key != "method" and key not in LAYER_OPTIONS}
        return make_position_handler(spec["method"], d_model=self.d_model, n_heads=self.n_heads, **options)

    def config(self) -> dict[str, Any]:
        """The constructor's arguments, JSON-friendly: ``TinyDecoder(**model.config())`` rebuilds the model."""
        return {
            "vocab_size": self.vocab_size,
            "positions": copy.deepcopy(self.position_spec),
            "d_model": self.d_model,
            "n_layers": self.n_layers,
            "n_heads": self.n_heads,
        }

    def forward(
        self,
        idx: torch.Tensor,
        positions: torch.Tensor | None = None,
        *,
        attention_weights: list[torch.Tensor] | None = None,
    ) -> torch.Tensor:
        """``(B, T)`` token ids -> ``(B, T, V)`` logits. ``attention_weights``: a list that receives each layer's
        ``(B, H, T, T)`` float32 attention weights, ``softmax(q k^T / sqrt(D) + bias)`` under the causal mask, in
        layer order (computed apart from the fused kernel, so only when a list is given)."""
        check_tensor("idx", idx)
        check_integer_positions("idx", idx)
        if idx.ndim != 2:
            raise ValueError(
                _("idx must be (batch, seq) token ids, got shape {idx_shape}").format(
                    idx_shape=tuple(idx.shape)
                )
            )
        T = idx.shape[1]
        if positions is None:
            positions = torch.arange(T, device=idx.device)
        elif positions.shape != (T,):
            raise ValueError(
                _("positions must be (T,) = ({T},), got shape {positions_shape}").format(
                    T=T, positions_shape=tuple(positions.shape)
                )
            )
        x = self.positions.embed(self.tok_emb(idx), positions)  # (B, T, C)
        bias = self.positions.bias(positions, positions)  # (H, T, T) or None, shared by every layer
        local = bias  # the bias of a layer that uses the handler: chunked when attention_chunk_size is set
        if self.chunk_size is not None:
            local = (
                chunk_mask(positions, self.chunk_size)
                if bias is None
                else bias + chunk_mask(positions, self.chunk_size)
            )
        for block, rotates in zip(self.blocks, self.layer_rotates, strict=True):
            if rotates:
                x = block(x, positions, self.positions, local, attention_weights)
            else:
                x = block(x, positions, _NO_POSITIONS, bias, attention_weights)
        return self.head(self.norm(x))  # (B, T, V)

    def with_positions(self, positions: str | Mapping[str, Any]) -> TinyDecoder:
        """A copy with every weight kept and a new position handler (this model is left unchanged).

        Position-specific parameters (a learned table, T5's bucket biases) belong to the handler: the new
        handler brings its own, freshly initialised. E.g. ``model.with_positions("nope")`` is DroPE's first
        step; ``model.with_positions({"method": "rope", "rope_base": 50.0, "rope_scaling": {...}})`` applies
        a scaling method at test time.
        """
        spec = _position_spec(positions)
        old = self.positions
        self.positions = nn.Identity()  # not deep-copied: the copy gets the new handler instead
        try:
            new = copy.deepcopy(self)
        finally:
            self.positions = old
        reference = next(self.parameters())  # the handler follows the model's device and dtype
        new.positions = new._make_handler(spec).to(device=reference.device, dtype=reference.dtype)
        new.position_spec = spec
        return new


def _init_weights(module: nn.Module) -> None:
    """GPT-2's initialisation: normal(0, 0.02) for linear and embedding weights."""
    if isinstance(module, nn.Linear | nn.Embedding):
        nn.init.normal_(module.weight, mean=0.0, std=0.02)


def build_model(
    vocab_size: int,
    positions: str | Mapping[str, Any],
    *,
    seed: int = 0,
    device: torch.device | str | None = None,
    **sizes: int,
) -> TinyDecoder:
    """``TinyDecoder(vocab_size, positions, **sizes)`` initialised from ``seed`` and moved to ``device``.

    The global random state is left as it was (the seed is applied inside ``torch.random.fork_rng``), so the
    same seed gives the same weights whatever ran before.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = TinyDecoder(vocab_size, positions, **sizes)
    return model.to(device)
