"""RoPE frequencies and the registry of scaling methods.

Every method has one signature, ``(dim, base, params, seq_len) -> (inv_freq, attention_factor)``, where ``dim``
is the rotary dimension (``int(head_dim * partial_rotary_factor)``), ``params`` the validated keys of a
``rope_scaling``-style dict (without ``rope_type``) and ``seq_len`` the current length for the methods that
depend on it. ``inv_freq`` is ``(dim/2,)`` float32; ``attention_factor`` multiplies cos and sin.

Keys follow the transformers library's names; unlike that library, an unknown or missing key is an error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from posref._checks import check_even, check_positive_int

FrequencyFn = Callable[[int, float, Mapping[str, Any], "int | None"], "tuple[torch.Tensor, float]"]


@dataclass(frozen=True)
class ScalingMethod:
    """One entry of the registry: the function, the keys it accepts, and whether it depends on ``seq_len``."""

    name: str
    fn: FrequencyFn
    required: frozenset[str]
    optional: frozenset[str]
    length_dependent: bool

    def validate(self, params: Mapping[str, Any]) -> dict[str, Any]:
        keys = set(params)
        unknown = keys - self.required - self.optional
        missing = self.required - keys
        accepted = ", ".join(sorted(self.required | self.optional)) or "(no keys)"
        if unknown:
            raise ValueError(
                f"rope_type {self.name!r} does not accept key(s) {', '.join(sorted(unknown))}; "
                f"it accepts: {accepted}"
            )
        if missing:
            raise ValueError(
                f"rope_type {self.name!r} requires key(s) {', '.join(sorted(missing))}; it accepts: {accepted}"
            )
        return dict(params)


SCALING_METHODS: dict[str, ScalingMethod] = {}


def register_scaling(
    name: str,
    *,
    required: tuple[str, ...] = (),
    optional: tuple[str, ...] = (),
    length_dependent: bool = False,
) -> Callable[[FrequencyFn], FrequencyFn]:
    """Decorator that adds a frequency function to ``SCALING_METHODS`` under ``name``."""

    def decorate(fn: FrequencyFn) -> FrequencyFn:
        if name in SCALING_METHODS:
            raise ValueError(f"scaling method {name!r} is registered twice")
        SCALING_METHODS[name] = ScalingMethod(
            name, fn, frozenset(required), frozenset(optional), length_dependent
        )
        return fn

    return decorate


def default_inv_freq(dim: int, base: float, *, device: torch.device | str | None = None) -> torch.Tensor:
    """``base**(-2i/dim)`` for ``i = 0 .. dim/2 - 1`` -> ``(dim/2,)`` float32, formed as the transformers library
    forms it (integer exponents cast to float32, then ``1 / base**(2i/dim)``), so the two agree bit for bit."""
    exponents = torch.arange(0, dim, 2, dtype=torch.int64, device=device).to(torch.float32) / dim
    return 1.0 / (base**exponents)


@register_scaling("default")
def _default(
    dim: int, base: float, params: Mapping[str, Any], seq_len: int | None
) -> tuple[torch.Tensor, float]:
    """Plain RoPE (Su et al. 2021, RoFormer, arXiv 2104.09864): ``inv_freq[i] = base**(-2i/dim)``."""
    return default_inv_freq(dim, base), 1.0


def split_scaling(scaling: Mapping[str, Any] | None) -> tuple[ScalingMethod, dict[str, Any]]:
    """Look a ``rope_scaling`` dict up in the registry -> (method, validated params without ``rope_type``)."""
    if scaling is None:
        return SCALING_METHODS["default"], {}
    if not isinstance(scaling, Mapping):
        raise TypeError(
            f"scaling must be a dict with a 'rope_type' key or None, got {type(scaling).__name__}"
        )
    if "rope_type" not in scaling:
        raise ValueError(
            f"scaling dict needs a 'rope_type' key, one of {', '.join(sorted(SCALING_METHODS))}; got keys "
            f"{sorted(scaling)}"
        )
    name = scaling["rope_type"]
    if name not in SCALING_METHODS:
        raise ValueError(f"unknown rope_type {name!r}; expected one of {', '.join(sorted(SCALING_METHODS))}")
    method = SCALING_METHODS[name]
    params = {k: v for k, v in scaling.items() if k != "rope_type"}
    return method, method.validate(params)


def rotary_dim(head_dim: int, partial_rotary_factor: float = 1.0) -> int:
    """Number of rotated dims: ``int(head_dim * partial_rotary_factor)``, which must be even."""
    check_positive_int("head_dim", head_dim)
    if not 0.0 < partial_rotary_factor <= 1.0:
        raise ValueError(f"partial_rotary_factor must be in (0, 1], got {partial_rotary_factor}")
    dim = int(head_dim * partial_rotary_factor)
    check_even(
        f"rotary dim int(head_dim * partial_rotary_factor) = int({head_dim} * {partial_rotary_factor})", dim
    )
    return dim


def rope_frequencies(
    head_dim: int,
    *,
    base: float = 10000.0,
    scaling: Mapping[str, Any] | None = None,
    seq_len: int | None = None,
    partial_rotary_factor: float = 1.0,
    device: torch.device | str | None = None,
) -> tuple[torch.Tensor, float]:
    """RoPE inverse frequencies and attention factor -> ``(inv_freq (d/2,) float32, attention_factor)``.

    ``d = int(head_dim * partial_rotary_factor)`` is the rotary dimension. ``scaling`` is a ``rope_scaling``-
    style dict (``{"rope_type": ..., <that method's keys>}``) or None for plain RoPE; ``seq_len`` is the current
    sequence length for the methods that depend on it (None = at initialisation, as the library does).
    """
    if base <= 1.0:
        raise ValueError(f"base (rope_theta) must be > 1, got {base}")
    dim = rotary_dim(head_dim, partial_rotary_factor)
    method, params = split_scaling(scaling)
    if seq_len is not None:
        check_positive_int("seq_len", seq_len)
    inv_freq, attention_factor = method.fn(dim, float(base), params, seq_len)
    return inv_freq.to(device=device, dtype=torch.float32), float(attention_factor)
