"""Input checks shared by the core: each raises an error that names what was wrong and what was expected."""

from __future__ import annotations

import math
import numbers

import torch

from posref.i18n import _


def check_tensor(name: str, value: object) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise TypeError(
            _("{name} must be a torch.Tensor, got {kind}").format(name=name, kind=type(value).__name__)
        )
    return value


def check_positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(_("{name} must be a positive int, got {value}").format(name=name, value=repr(value)))
    return value


def check_nonnegative_int(name: str, value: object, *, means: str = "") -> int:
    """An int >= 0 (an offset, a count that may be zero); ``means`` says what it is, in the message."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        if means:
            raise ValueError(
                _("{name} must be an int >= 0 ({means}), got {value}").format(
                    name=name, means=means, value=repr(value)
                )
            )
        raise ValueError(_("{name} must be an int >= 0, got {value}").format(name=name, value=repr(value)))
    return int(value)


def check_seed(name: str, value: object, *, means: str = "") -> int:
    """A seed for ``torch.Generator.manual_seed`` / ``random.Random``: an int in ``[0, 2**64)``."""
    seed = check_nonnegative_int(name, value, means=means)
    if seed >= 2**64:
        raise ValueError(
            _("{name} must be below 2**64 (a torch generator's seed), got {seed}").format(
                name=name, seed=seed
            )
        )
    return seed


def check_even(name: str, value: int) -> int:
    check_positive_int(name, value)
    if value % 2:
        raise ValueError(
            _("{name} must be even (dimensions are rotated or encoded in pairs), got {value}").format(
                name=name, value=value
            )
        )
    return value


def check_base(name: str, value: object) -> float:
    """A frequency base (``rope_theta``, the sinusoid's 10000): a finite number > 1."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not math.isfinite(value)
        or not value > 1.0
    ):
        raise ValueError(
            _("{name} must be a finite number > 1 (e.g. 10000.0), got {value}").format(
                name=name, value=repr(value)
            )
        )
    return float(value)


def broadcasts_to(shape: torch.Size, target: torch.Size) -> bool:
    """Whether a tensor of ``shape`` broadcasts to ``target`` without enlarging it: no more dims, and each of its
    dims (aligned from the right) 1 or equal to ``target``'s. Plain integer comparisons: ``torch.broadcast_shapes``
    costs about 0.2 ms a call here, as much as a whole ``apply_rope`` of (1, 8, 256, 64)."""
    if len(shape) > len(target):
        return False
    return all(a == 1 or a == b for a, b in zip(reversed(shape), reversed(target), strict=False))


def check_same_device(**tensors: torch.Tensor) -> None:
    devices = {name: t.device for name, t in tensors.items()}
    if len(set(devices.values())) > 1:
        on = _("{name} on {device}")
        listed = ", ".join(on.format(name=name, device=dev) for name, dev in devices.items())
        raise ValueError(_("tensors must be on one device, got {listed}").format(listed=listed))


def check_float(name: str, t: torch.Tensor) -> None:
    if not t.is_floating_point():
        raise TypeError(
            _("{name} must be a floating-point tensor, got dtype {dtype}").format(name=name, dtype=t.dtype)
        )


def check_float_dtype(name: str, dtype: torch.dtype) -> torch.dtype:
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(
            _("{name} must be a floating-point torch.dtype (e.g. torch.float32), got {dtype}").format(
                name=name, dtype=repr(dtype)
            )
        )
    return dtype


def check_integer_positions(name: str, t: torch.Tensor) -> None:
    if t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
        raise TypeError(
            _("{name} must hold integer positions (e.g. torch.long), got dtype {dtype}").format(
                name=name, dtype=t.dtype
            )
        )


def check_choice(name: str, value: object, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValueError(
            _("unknown {name} {value}; expected one of {choices}").format(
                name=name, value=repr(value), choices=", ".join(map(repr, choices))
            )
        )
    return value  # type: ignore[return-value]
