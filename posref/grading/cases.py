"""Drawing test cases: a few fixed, readable ones for the visible tests, many random ones at grading time.

Hidden cases are drawn from a seed taken from ``os.urandom`` when the check runs, so knowing the (public)
test source does not tell anyone which inputs will be used. The seed is quoted in a failure message so that
a failing case can be reproduced with ``Draw(hidden=True, seed=...)`` (or a whole check, with ``hidden_seed``).

Random draws alone miss a class of cases now and then (all of 16 shifts ``k >= 0`` one draw in 20), so each checker
draws its classes on purpose (``Draw.cover``: every sign, direction, layout, dtype... at least once) and randomizes
within them.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

import torch

from posref.absolute import sinusoidal_pe
from posref.attention import scaled_dot_product_attention
from posref.i18n import N_, _

T = TypeVar("T")

VISIBLE_SEED = 0
_HIDDEN_SEED: ContextVar[int | None] = ContextVar("hidden_seed", default=None)


@contextmanager
def hidden_seed(seed: int) -> Iterator[None]:
    """Hidden cases drawn in the block come from ``seed`` instead of ``os.urandom``: a whole check reproduced (the
    seed its failure message quotes), or a test made deterministic."""
    token = _HIDDEN_SEED.set(seed)
    try:
        yield
    finally:
        _HIDDEN_SEED.reset(token)


def resolve_device(device: torch.device | str | None) -> torch.device:
    """The device to test on: the one given, else CUDA when present, else the CPU."""
    if device is not None:
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Draw:
    """Random choices for one check. Tensors are drawn on the CPU (same numbers on every device) and moved."""

    def __init__(
        self, *, hidden: bool, device: torch.device | str | None = None, seed: int | None = None
    ) -> None:
        self.hidden = hidden
        if seed is None and hidden:
            seed = _HIDDEN_SEED.get()
        if seed is None:
            seed = int.from_bytes(os.urandom(6), "little") if hidden else VISIBLE_SEED
        self.seed = seed
        self.device = resolve_device(device)
        self._rng = random.Random(seed)
        self._gen = torch.Generator().manual_seed(seed)

    @property
    def quoted_seed(self) -> int | None:
        """The seed a failure message quotes: the drawn one for hidden cases (to reproduce a failure with
        ``Draw(hidden=True, seed=...)``), None for the visible ones (fixed and readable in the test itself)."""
        return self.seed if self.hidden else None

    @property
    def tensor_generator(self) -> torch.Generator:
        """The CPU generator behind ``randn`` and ``permutation``, for draws this class has no method for
        (e.g. ``torch.randint(..., generator=draw.tensor_generator)``); move the result to ``draw.device``."""
        return self._gen

    def n(self, visible: int, hidden: int) -> int:
        """How many cases to draw in this mode."""
        return hidden if self.hidden else visible

    def int(self, low: int, high: int) -> int:
        """A uniform integer in ``[low, high]``."""
        return self._rng.randint(low, high)

    def even(self, low: int, high: int) -> int:
        """A uniform even integer in ``[low, high]``."""
        return 2 * self._rng.randint((low + 1) // 2, high // 2)

    def choice(self, options: Sequence[T]) -> T:
        return self._rng.choice(list(options))

    def cover(self, n: int, **axes: Sequence) -> list[dict]:
        """``n`` cases' choices, one option of each axis per case, in which every option of every axis appears:
        each axis's options once each, then random ones, shuffled (so where each option falls, and which options
        meet, are drawn too). E.g. ``cover(30, layout=("half", "interleaved"), dtype=(f32, f16, bf16))``."""
        longest = max((len(options) for options in axes.values()), default=0)
        if n < longest:
            raise ValueError(
                f"cover needs at least {longest} cases for an axis of {longest} options, got {n}"
            )
        columns = {}
        for name, options in axes.items():
            column = list(options) + [self.choice(options) for _ in range(n - len(options))]
            self._rng.shuffle(column)
            columns[name] = column
        return [{name: column[i] for name, column in columns.items()} for i in range(n)]

    def uniform(self, low: float, high: float) -> float:
        return self._rng.uniform(low, high)

    def randn(self, *shape: int, dtype: torch.dtype = torch.float32, scale: float = 1.0) -> torch.Tensor:
        x = torch.randn(*shape, generator=self._gen, dtype=torch.float64) * scale
        return x.to(device=self.device, dtype=dtype)

    def permutation(self, n: int) -> torch.Tensor:
        """A random permutation of ``range(n)`` that is not the identity (when ``n > 1``)."""
        while True:
            perm = torch.randperm(n, generator=self._gen)
            if n < 2 or not torch.equal(perm, torch.arange(n)):
                return perm.to(self.device)

    def positions(self, length: int, *, max_start: int = 0) -> torch.Tensor:
        """``start .. start + length - 1`` (long) with a random start in ``[0, max_start]`` (a KV-cache offset)."""
        start = self.int(0, max_start) if max_start else 0
        return torch.arange(start, start + length, device=self.device)


class Probe:
    """A small function of a sequence ``x`` ``(..., T, d)`` -> ``(..., T, d)`` for equivariance tests.

    ``kind``: ``"mlp"`` (row-wise, equivariant), ``"attention"`` (self-attention without positions,
    equivariant), ``"causal"`` (causal self-attention, not equivariant), ``"positions"`` (``x + PE``, not
    equivariant). The weights travel with it so that the same probe can be rebuilt in another process.
    """

    KINDS = ("mlp", "attention", "causal", "positions")
    # each kind as a message says it (the kind is code; its name is said in the student's language)
    NAMES = {
        "mlp": N_("mlp"),
        "attention": N_("attention"),
        "causal": N_("causal"),
        "positions": N_("positions"),
    }

    def __init__(self, kind: str, weight: torch.Tensor) -> None:
        if kind not in self.KINDS:
            raise ValueError(f"unknown probe kind {kind!r}; expected one of {self.KINDS}")
        self.kind, self.weight = kind, weight

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        w = self.weight.to(x.dtype)
        if self.kind == "mlp":
            return torch.tanh(x @ w) @ w.T
        if self.kind == "positions":
            return x + sinusoidal_pe(x.shape[-2], x.shape[-1], device=x.device, dtype=x.dtype)
        q, k, v = x @ w, x @ w.T, x
        return scaled_dot_product_attention(q, k, v, causal=self.kind == "causal")

    def describe(self) -> str:
        name = _(self.NAMES[self.kind])
        if self.kind in ("mlp", "attention"):
            return _("<{kind} function of x, equivariant>").format(kind=name)
        return _("<{kind} function of x, not equivariant>").format(kind=name)

    def to_wire(self) -> dict:
        return {"__probe__": self.kind, "weight": self.weight}
