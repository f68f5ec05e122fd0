"""posref._checks: the shared argument checks accept what they promise and name what was wrong otherwise."""

import numpy as np
import pytest
import torch

from posref._checks import broadcasts_to, check_nonnegative_int, check_seed


@pytest.mark.parametrize("value", [0, 7, np.int64(3)])
def test_nonnegative_int_accepts_zero_and_integers_and_returns_an_int(value):
    assert check_nonnegative_int("offset", value) == int(value)
    assert type(check_nonnegative_int("offset", value)) is int


@pytest.mark.parametrize("value", [-1, True, 1.0, "3", None])
def test_nonnegative_int_names_the_argument_and_its_meaning(value):
    with pytest.raises(
        ValueError, match=r"^q_offset must be an int >= 0 \(the key position of query 0\), got "
    ):
        check_nonnegative_int("q_offset", value, means="the key position of query 0")
    with pytest.raises(ValueError, match=r"^offset must be an int >= 0, got "):
        check_nonnegative_int("offset", value)


def test_a_seed_is_what_a_torch_generator_takes():
    assert check_seed("seed", 2**64 - 1) == 2**64 - 1
    with pytest.raises(ValueError, match="seed must be below 2\\*\\*64"):
        check_seed("seed", 2**64)
    with pytest.raises(ValueError, match=r"seed must be an int >= 0 \(it picks the windows\), got -1"):
        check_seed("seed", -1, means="it picks the windows")


def test_broadcasts_to_agrees_with_torchs_expand_on_every_small_shape_pair():
    # expand succeeds exactly when a tensor broadcasts to the target without enlarging it
    sizes = [(), (1,), (3,), (2,), (1, 3), (2, 3), (3, 1), (2, 1, 3), (1, 2, 3), (4, 2, 3)]
    for shape in sizes:
        for target in sizes:
            try:
                torch.empty(shape).expand(target)
                expected = True
            except RuntimeError:
                expected = False
            assert broadcasts_to(torch.Size(shape), torch.Size(target)) is expected, (shape, target)
