"""Shared test helpers: one assertion helper that reports the largest error, and device parametrisation."""

from __future__ import annotations

import pytest
import torch

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def assert_close(
    actual: torch.Tensor, expected: torch.Tensor, *, atol: float, rtol: float = 0.0, what: str = ""
) -> None:
    """Assert ``|actual - expected| <= atol + rtol * |expected|`` elementwise, reporting the worst element."""
    assert actual.shape == expected.shape, f"{what}: shape {tuple(actual.shape)} != {tuple(expected.shape)}"
    a, e = actual.detach().double().cpu(), expected.detach().double().cpu()
    err = (a - e).abs()
    bound = atol + rtol * e.abs()
    if not bool((err <= bound).all()):
        idx = tuple(int(i) for i in torch.nonzero(err > bound)[0])
        raise AssertionError(
            f"{what}: max abs error {err.max().item():.3e}; first failure at {idx}: "
            f"got {a[idx].item():.8g}, expected {e[idx].item():.8g} (atol={atol}, rtol={rtol})"
        )


@pytest.fixture(params=DEVICES)
def device(request: pytest.FixtureRequest) -> str:
    return request.param
