"""LongRoPE's evolutionary search for per-pair rescale factors (Ding et al. 2024, arXiv 2402.13753, §3.2).

LongRoPE divides pair ``i``'s frequency by its own factor ``lambda_i`` (``rope_type="longrope"``). The factors
are not derived from a formula: they are searched, scoring each candidate by the model's loss at the target
length. The search here follows the paper's Algorithm 1 at a small scale:

1. start from the closed-form methods (PI, NTK-aware, YaRN) written as per-pair factors
   (``seed_factors``), plus random mutations of them;
2. each generation, keep the ``parents`` best candidates, make children by mutation (multiply some factors by
   ``exp(N(0, mutation_scale))``) and crossover (each factor from one of two parents), and keep the best of
   parents and children;
3. optionally keep every candidate non-decreasing in ``i`` (``monotone=True``, the paper's constraint: a
   slower pair is interpolated at least as much as a faster one), by a running maximum.

The paper also searches ``n_hat`` (the first tokens left unscaled); transformers and Phi-3 do not use it,
and neither does this search. Scores are "lower is better" (the course uses a toy model's validation loss at
long length). Everything is deterministic for a given ``seed`` and objective.

Shapes: ``n`` = number of rotated pairs (``rotary_dim / 2``); factors are ``(n,)`` float64 tensors.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from posref._checks import check_positive_int
from posref.i18n import _
from posref.scaling import default_inv_freq, rope_frequencies

Objective = Callable[[torch.Tensor], float]


def seed_factors(dim: int, base: float, factor: float, original_len: int) -> dict[str, torch.Tensor]:
    """PI, NTK-aware and YaRN as per-pair factors ``lambda_i = w_i / w'_i`` -> ``{name: (dim/2,) float64}``.

    These are the paper's starting points: each closed-form method is one point of LongRoPE's search space.
    """
    plain = default_inv_freq(dim, base).double()
    methods: dict[str, Mapping[str, Any]] = {
        "pi": {"rope_type": "linear", "factor": factor},
        "ntk": {"rope_type": "ntk", "factor": factor},
        "yarn": {"rope_type": "yarn", "factor": factor, "original_max_position_embeddings": original_len},
    }
    return {
        name: plain / rope_frequencies(dim, base=base, scaling=s)[0].double() for name, s in methods.items()
    }


@dataclass(frozen=True)
class SearchResult:
    """The best factors found, their score, the best score after each generation, and the evaluation count."""

    factors: torch.Tensor
    score: float
    history: tuple[float, ...]
    evaluations: int

    def as_scaling(
        self, original_len: int, *, factor: float | None = None, short_factor: Sequence[float] | None = None
    ) -> dict[str, Any]:
        """A ``longrope`` scaling dict using the found factors for long sequences (``short_factor`` defaults
        to all ones: plain RoPE up to ``original_len``; ``factor`` to the largest found factor)."""
        long_factor = [float(v) for v in self.factors]
        return {
            "rope_type": "longrope",
            "short_factor": [1.0] * len(long_factor) if short_factor is None else list(short_factor),
            "long_factor": long_factor,
            "original_max_position_embeddings": original_len,
            "factor": max(long_factor) if factor is None else factor,
        }


def project_factors(candidate: torch.Tensor, *, low: float, high: float, monotone: bool) -> torch.Tensor:
    """Factors ``(n,)`` clamped to ``[low, high]`` and, when ``monotone``, made non-decreasing in the pair index by a
    running maximum (the paper's constraint: a slower pair is interpolated at least as much as a faster one)."""
    candidate = candidate.clamp(low, high)
    return torch.cummax(candidate, dim=0).values if monotone else candidate


def mutate_factors(
    parent: torch.Tensor, which: torch.Tensor, noise: torch.Tensor, *, low: float, high: float, monotone: bool
) -> torch.Tensor:
    """One mutation of the search -> ``(n,)``: the factors where ``which`` (``(n,)`` bool) is True multiplied by
    ``exp(noise)`` (``(n,)``, a log-normal step, so a factor stays positive and up and down are equally likely),
    the others kept, then ``project_factors``. The random draws are arguments, so one step is reproducible."""
    return project_factors(
        parent * torch.where(which, noise.exp(), torch.ones_like(noise)),
        low=low,
        high=high,
        monotone=monotone,
    )


class _Search:
    """The population and its bookkeeping (bounds, monotone projection, evaluation cache)."""

    def __init__(
        self, objective: Objective, low: float, high: float, monotone: bool, generator: torch.Generator
    ) -> None:
        self.objective, self.low, self.high, self.monotone = objective, low, high, monotone
        self.generator = generator
        self.scores: dict[tuple[float, ...], float] = {}

    def project(self, candidate: torch.Tensor) -> torch.Tensor:
        return project_factors(candidate, low=self.low, high=self.high, monotone=self.monotone)

    def score(self, candidate: torch.Tensor) -> float:
        key = tuple(candidate.tolist())
        if key not in self.scores:
            value = self.objective(candidate.clone())
            if isinstance(value, torch.Tensor):
                value = value.item()
            if not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(
                    _(
                        "the objective must return a finite number, got {value!r} for factors {factors}"
                    ).format(value=value, factors=list(key))
                )
            self.scores[key] = float(value)
        return self.scores[key]

    def mutate(self, parent: torch.Tensor, scale: float, probability: float) -> torch.Tensor:
        which = torch.rand(parent.shape, generator=self.generator, dtype=torch.float64) < probability
        if not bool(which.any()):  # change at least one factor
            which[int(torch.randint(parent.numel(), (1,), generator=self.generator))] = True
        noise = torch.randn(parent.shape, generator=self.generator, dtype=torch.float64) * scale
        return mutate_factors(parent, which, noise, low=self.low, high=self.high, monotone=self.monotone)

    def crossover(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        take_a = torch.rand(a.shape, generator=self.generator, dtype=torch.float64) < 0.5
        return self.project(torch.where(take_a, a, b))

    def pick(self, n: int) -> int:
        return int(torch.randint(n, (1,), generator=self.generator))


def longrope_search(
    objective: Objective,
    initial: Sequence[Sequence[float] | torch.Tensor] | Mapping[str, Sequence[float] | torch.Tensor],
    *,
    max_factor: float,
    min_factor: float = 1.0,
    population: int = 16,
    parents: int = 4,
    generations: int = 10,
    mutation_scale: float = 0.1,
    mutation_probability: float = 0.3,
    monotone: bool = True,
    seed: int = 0,
) -> SearchResult:
    """Evolutionary search for per-pair rescale factors minimising ``objective`` (arXiv 2402.13753, Alg. 1).

    Args:
        objective: ``(n,)`` float64 factors -> a float, lower is better (e.g. validation loss at long length
            with ``rope_type="longrope"`` using these factors). Called once per distinct candidate.
        initial: starting candidates, each ``n`` factors (a list or a dict such as ``seed_factors(...)``).
        max_factor, min_factor: every factor is kept in ``[min_factor, max_factor]`` (``min_factor >= 1``:
            LongRoPE only interpolates).
        population: candidates kept per generation; ``parents``: how many of the best breed.
        generations: rounds of mutation + crossover; ``mutation_scale``: std of the log-normal multiplier;
        mutation_probability: chance that each factor of a child is mutated.
        monotone: keep factors non-decreasing in the pair index (the paper's constraint).
        seed: seeds the search's own ``torch.Generator`` (the global RNG is not touched).
    Returns: ``SearchResult`` with the best factors (projected to the bounds and, if asked, made monotone).
    """
    if not callable(objective):
        raise TypeError(
            _("objective must be callable (factors -> score), got {kind}").format(
                kind=type(objective).__name__
            )
        )
    candidates = list(initial.values()) if isinstance(initial, Mapping) else list(initial)
    if not candidates:
        raise ValueError(_("initial must hold at least one candidate (e.g. seed_factors(...))"))
    start = [torch.as_tensor(c, dtype=torch.float64).flatten() for c in candidates]
    n = start[0].numel()
    if n == 0 or any(c.numel() != n for c in start):
        raise ValueError(
            _("initial candidates must all have the same, non-zero length; got {lengths}").format(
                lengths=[c.numel() for c in start]
            )
        )
    for i, c in enumerate(start):
        if not bool(torch.isfinite(c).all()):
            raise ValueError(
                _("initial candidate {i} holds a non-finite factor: {factors}").format(
                    i=i, factors=c.tolist()
                )
            )
    if not 1.0 <= min_factor < max_factor:
        raise ValueError(
            _(
                "need 1 <= min_factor < max_factor, got min_factor={min_factor}, max_factor={max_factor}"
            ).format(min_factor=min_factor, max_factor=max_factor)
        )
    for name, value in [("population", population), ("parents", parents), ("generations", generations)]:
        check_positive_int(name, value)
    if parents > population:
        raise ValueError(
            _("parents ({parents}) cannot exceed population ({population})").format(
                parents=parents, population=population
            )
        )
    if not (0 < mutation_scale < math.inf and 0 < mutation_probability <= 1):  # also refuses NaN
        raise ValueError(
            _(
                "need mutation_scale > 0 and 0 < mutation_probability <= 1, got {mutation_scale}, {mutation_probability}"
            ).format(mutation_scale=mutation_scale, mutation_probability=mutation_probability)
        )

    search = _Search(objective, min_factor, max_factor, monotone, torch.Generator().manual_seed(seed))
    pool = [search.project(c) for c in start]
    while len(pool) < population:  # fill up with mutations of the seeds, as the paper does
        pool.append(search.mutate(pool[search.pick(len(start))], mutation_scale, mutation_probability))
    pool = _best(search, pool, population)
    history = [search.score(pool[0])]
    for _generation in range(generations):
        breeders = pool[:parents]
        children = []
        for _child in range(population):
            a = breeders[search.pick(len(breeders))]
            if len(breeders) > 1 and bool(torch.rand((), generator=search.generator) < 0.5):
                b = breeders[search.pick(len(breeders))]
                children.append(search.crossover(a, b))
            else:
                children.append(search.mutate(a, mutation_scale, mutation_probability))
        pool = _best(search, pool + children, population)
        history.append(search.score(pool[0]))
    return SearchResult(pool[0], history[-1], tuple(history), len(search.scores))


def _best(search: _Search, pool: list[torch.Tensor], k: int) -> list[torch.Tensor]:
    """The ``k`` best distinct candidates, best first (ties keep their order: deterministic)."""
    unique: dict[tuple[float, ...], torch.Tensor] = {}
    for candidate in pool:
        unique.setdefault(tuple(candidate.tolist()), candidate)
    ranked = sorted(unique.values(), key=search.score)
    return ranked[:k]


__all__ = ["SearchResult", "longrope_search", "seed_factors"]
