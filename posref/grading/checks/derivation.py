"""Checker for notebook 04's derivation of RoPE (Su et al. 2021, arXiv 2104.09864, section 3.2; Su's blog
derives it the same way): a position map ``x -> R_m x`` whose scores ``<R_m q, R_n k>`` depend on the positions
only through ``n - m`` satisfies ``R_m^T R_n = R_{n-m}``, so with ``R_0 = I`` every ``R_m`` keeps lengths and
``R_m = R_1^m`` for every integer ``m``: the whole family is the powers of one step, a rotation by ``theta``, and
``R_m`` turns by ``m theta``. The student writes that family from the step."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from posref.grading.cases import Draw
from posref.grading.report import Case, first_difference
from posref.grading.rules import enforce_rules
from posref.i18n import _


def rotation(angles: torch.Tensor) -> torch.Tensor:
    """``(P,)`` angles -> ``(P, 2, 2)`` matrices ``[[cos, -sin], [sin, cos]]`` (counter-clockwise, as 04's section 1)."""
    c, s = angles.cos(), angles.sin()
    return torch.stack((torch.stack((c, -s), -1), torch.stack((s, c), -1)), -2)


def step_angle(step: torch.Tensor) -> torch.Tensor:
    """The angle ``theta`` in ``(-pi, pi]`` of a ``(2, 2)`` rotation ``step``: its first column is (cos, sin)."""
    return torch.atan2(step[1, 0], step[0, 0])


def rotations_from_step(step: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """``R_p = step^p`` for each position: ``(2, 2)`` rotation, ``(P,)`` integers of any sign -> ``(P, 2, 2)`` in
    ``step``'s dtype (a rotation by ``p theta``; negative ``p`` turn back, ``R_{-p} = R_p^T``)."""
    return rotation(positions.to(step.dtype) * step_angle(step))


def _step(draw: Draw, theta: float) -> torch.Tensor:
    return rotation(torch.tensor([theta], dtype=torch.float64))[0].to(draw.device)


def _positions(draw: Draw, values: list[int]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.int64, device=draw.device)


def _hidden_cases(draw: Draw) -> list[Case]:
    """Every class on every draw: a step past a quarter turn, a slow step (RoPE's last pairs turn by 1e-4 per
    position and less), a step near half a turn (where the angle's sign flips), negative positions, position 0,
    positions in the thousands; then random ones."""
    thetas = [draw.uniform(1.6, 3.0), draw.uniform(1e-5, 1e-3), math.pi - draw.uniform(1e-6, 1e-3)]
    thetas += [draw.choice((-1, 1)) * draw.uniform(1e-4, math.pi) for _ in range(9)]
    cases = []
    for i, theta in enumerate(thetas):
        span = (5, 100, 5000)[i % 3]
        values = [0, -draw.int(1, span), draw.int(1, span)]
        values += [draw.int(-span, span) for _ in range(draw.int(0, 20))]
        order = draw.permutation(len(values)).tolist()
        cases.append(Case((_step(draw, theta), _positions(draw, [values[j] for j in order]))))
    return cases


def _mistakes() -> dict[str, Callable[..., torch.Tensor]]:
    def absolute(step, positions):
        return rotations_from_step(step, positions.abs())

    def transposed(step, positions):
        return rotations_from_step(step.T, positions)

    def from_one(step, positions):
        return rotations_from_step(step, positions + 1)

    def scaled(step, positions):
        return positions.to(step.dtype)[:, None, None] * step

    def float32_angles(step, positions):
        return rotation(positions.float() * step_angle(step).float()).to(step.dtype)

    return {
        _("a negative position turns back: R_{-p} = R_p^T = (step^T)^p, not R_{|p|}"): absolute,
        _(
            "your matrices turn the other way: step's angle is atan2(step[1, 0], step[0, 0]) (its first column is "
            "(cos, sin)), and R_p = step^p is a rotation by p times that angle"
        ): transposed,
        _("R_0 must be the identity (position 0 does not turn): R_p = step^p, not step^(p + 1)"): from_one,
        _(
            "R_p is step multiplied by itself p times (a matrix power: R_{m+n} = R_m R_n), not p times step"
        ): scaled,
        _(
            "the angles p * theta were formed in float32: at positions in the thousands they are off by 1e-3 radians "
            "and more; work in step's dtype, float64"
        ): float32_angles,
    }


@enforce_rules
def check_rotations_from_step(fn: Callable[..., torch.Tensor], *, hidden: bool = False, device=None) -> None:
    """``fn(step, positions)`` -> ``(P, 2, 2)``: ``R_p = step^p`` for a ``(2, 2)`` float64 rotation ``step`` and
    1-D int64 ``positions`` of any sign, in float64 (tolerance: float64 rounding of angles up to ~2e4 radians)."""
    draw = Draw(hidden=hidden, device=device)
    if hidden:
        cases = _hidden_cases(draw)
    else:
        cases = [
            Case((_step(draw, 0.5), _positions(draw, [0, 1, 2, 3]))),
            Case((_step(draw, 2.0), _positions(draw, [-2, -1, 0, 1, 5]))),
            Case((_step(draw, 0.0137), _positions(draw, [1234, -2999, 0]))),  # a slow pair, far positions
        ]
    first_difference(
        "rotations_from_step", fn, rotations_from_step, cases, mistakes=_mistakes(), seed=draw.quoted_seed
    )
