"""LongRoPE's search on synthetic objectives whose optimum is known."""

from __future__ import annotations

import pytest
import torch
from conftest import assert_close

from posref.longrope_search import longrope_search, seed_factors
from posref.scaling import default_inv_freq, rope_frequencies

N = 16
# an increasing S-shaped optimum from ~1 to ~8, none of the seeds (PI, NTK, YaRN)
TARGET = 1.0 + 7.0 * torch.sigmoid((torch.arange(N, dtype=torch.float64) - 9.0) / 1.5)


def log_error(target: torch.Tensor):
    """Mean squared log-ratio to ``target``: 0 exactly at the optimum, positive elsewhere."""

    def objective(factors: torch.Tensor) -> float:
        return float(((factors.log() - target.log()) ** 2).mean())

    return objective


SEEDS = seed_factors(2 * N, 10000.0, 8.0, 1024)


def test_seed_factors_are_the_closed_form_methods():
    assert torch.allclose(SEEDS["pi"], torch.full((N,), 8.0, dtype=torch.float64))
    # NTK-aware: lambda_i = s ** (2i / (d - 2)), from 1 to exactly s
    expected = torch.tensor([8.0 ** (2 * i / (2 * N - 2)) for i in range(N)], dtype=torch.float64)
    assert_close(SEEDS["ntk"], expected, atol=0.0, rtol=1e-5)
    # YaRN: 1 for the fastest pairs, s for the slowest
    assert SEEDS["yarn"][0] == 1.0 and float(SEEDS["yarn"][-1]) == pytest.approx(8.0, rel=1e-6)


def test_search_improves_a_known_objective():
    objective = log_error(TARGET)
    start = min(objective(s) for s in SEEDS.values())
    result = longrope_search(objective, SEEDS, max_factor=16.0, generations=40, seed=0)
    assert result.score < 0.2 * start, (start, result.history)
    assert result.score == pytest.approx(objective(result.factors))
    assert all(
        a >= b for a, b in zip(result.history, result.history[1:], strict=False)
    )  # elitist: never worse
    assert len(result.history) == 41 and result.evaluations > 41


def test_search_is_deterministic_with_a_seed_and_leaves_the_global_rng_alone():
    objective = log_error(TARGET)
    torch.manual_seed(123)
    state = torch.get_rng_state()
    a = longrope_search(objective, SEEDS, max_factor=16.0, generations=5, seed=7)
    assert torch.equal(torch.get_rng_state(), state)
    b = longrope_search(objective, SEEDS, max_factor=16.0, generations=5, seed=7)
    c = longrope_search(objective, SEEDS, max_factor=16.0, generations=5, seed=8)
    assert torch.equal(a.factors, b.factors) and a.history == b.history
    assert not torch.equal(a.factors, c.factors)


def test_monotone_constraint_holds_for_every_candidate():
    seen = []

    def objective(factors):
        seen.append(factors)
        return log_error(TARGET)(factors)

    result = longrope_search(objective, SEEDS, max_factor=10.0, min_factor=1.0, generations=5, seed=1)
    for factors in seen:
        assert bool((factors[1:] >= factors[:-1]).all())
        assert float(factors.min()) >= 1.0 and float(factors.max()) <= 10.0
    assert bool((result.factors[1:] >= result.factors[:-1]).all())


def test_monotone_off_reaches_a_non_monotone_optimum():
    bumpy = TARGET.clone()
    bumpy[3], bumpy[10] = 6.0, 1.5  # a target the monotone search cannot reach
    objective = log_error(bumpy)
    free = longrope_search(objective, SEEDS, max_factor=16.0, generations=60, monotone=False, seed=0)
    constrained = longrope_search(objective, SEEDS, max_factor=16.0, generations=60, monotone=True, seed=0)
    assert free.score < constrained.score


def test_result_plugs_into_longrope_frequencies():
    result = longrope_search(log_error(TARGET), SEEDS, max_factor=16.0, generations=3, seed=0)
    scaling = result.as_scaling(1024)
    inv_freq, attention = rope_frequencies(2 * N, scaling=scaling, seq_len=2048)
    assert_close(
        inv_freq.double(), default_inv_freq(2 * N, 10000.0).double() / result.factors, atol=0.0, rtol=1e-6
    )
    assert attention > 1.0
    assert torch.equal(
        rope_frequencies(2 * N, scaling=scaling, seq_len=1024)[0], default_inv_freq(2 * N, 10000.0)
    )


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"initial": []}, "at least one candidate"),
        ({"initial": [[1.0, 2.0], [1.0]]}, "same, non-zero length"),
        ({"max_factor": 0.5}, "1 <= min_factor < max_factor"),
        ({"parents": 20}, "cannot exceed population"),
        ({"mutation_scale": 0.0}, "mutation_scale > 0"),
        # NaN used to pass and surface later as "the objective must return a finite number ... factors [nan, ...]"
        ({"mutation_scale": float("nan")}, "mutation_scale > 0"),
        ({"initial": [[1.0, float("nan")]]}, "initial candidate 0 holds a non-finite factor"),
    ],
)
def test_bad_arguments_are_clear_errors(kwargs, match):
    args = {"initial": SEEDS, "max_factor": 16.0, **kwargs}
    with pytest.raises(ValueError, match=match):
        longrope_search(log_error(TARGET), args.pop("initial"), **args)


def test_objective_must_return_a_finite_number():
    with pytest.raises(ValueError, match="finite number"):
        longrope_search(lambda f: float("nan"), SEEDS, max_factor=16.0)


def _recorded_search(score, **kwargs):
    seen = []

    def objective(factors):
        seen.append(factors.clone())
        return score(factors)

    result = longrope_search(objective, kwargs.pop("initial"), max_factor=8.0, monotone=False, **kwargs)
    return result, seen


def test_children_come_from_the_parents_by_the_stated_operators():
    # one parent and a vanishing mutation probability: every child is the best start with exactly one factor
    # changed (the "at least one" rule); breeding from the whole pool or mutating every factor breaks this
    start = [torch.full((8,), 2.0)] + [torch.full((8,), 1.1 + 0.1 * i) for i in range(7)]
    _, seen = _recorded_search(
        lambda f: float(((f.log() - 0.7) ** 2).sum()),  # best at e**0.7 ~ 2.01: the first start is the best
        initial=start,
        population=8,
        parents=1,
        generations=1,
        mutation_probability=1e-9,
    )
    assert len(seen) > 8 and all(torch.equal(a, b) for a, b in zip(seen[:8], start, strict=True))
    for child in seen[8:]:
        assert int((child != start[0]).sum()) == 1, child
    # two parents that stay the best (score 0, anything else > 0): a crossover takes each factor from one of
    # them, so some child holds both exact values (a mutation changes one factor to neither)
    start = [torch.full((8,), 2.0), torch.full((8,), 3.0)]
    _, seen = _recorded_search(
        lambda f: min(float((f - 2).abs().sum()), float((f - 3).abs().sum())),
        initial=start,
        population=16,
        parents=2,
        generations=3,
        mutation_probability=1e-9,
    )
    assert any(bool((c == 2.0).any() and (c == 3.0).any()) for c in seen)


def test_as_scaling_defaults():
    result = longrope_search(lambda f: float(f.sum()), [[1.0, 2.0, 4.0]], max_factor=8.0, generations=1)
    scaling = result.as_scaling(100)
    assert scaling["factor"] == max(scaling["long_factor"]) == max(result.factors.tolist())
    assert scaling["short_factor"] == [1.0, 1.0, 1.0] and scaling["original_max_position_embeddings"] == 100
