"""Checkers for notebook 04's derivation of RoPE (Su et al. 2021, arXiv 2104.09864, section 3.2; Su's blog
derives it the same way): a position map ``x -> R_m x`` whose scores ``<R_m q, R_n k>`` depend on the positions
only through ``n - m`` satisfies ``R_m^T R_n = R_{n-m}``, so with ``R_0 = I`` every ``R_m`` keeps lengths and
``R_m = R_1^m`` for every integer ``m``: the whole family is the powers of one step. The student does both halves:
reads the step off two neighbouring positions (``step_from_two``: ``R_1 = R_m^T R_{m+1}`` wherever ``m`` is), and
writes the family from a step that is a rotation by ``theta`` (``rotations_from_step``: ``R_m`` turns by
``m theta``)."""

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


# ---------------------------------------------------------------- the step from two neighbouring positions


def step_from_two(r_m: torch.Tensor, r_n: torch.Tensor, m: int, n: int) -> torch.Tensor:
    """``R_1`` from the matrices ``R_m``, ``R_n`` (``(k, k)`` each) of a family that meets the requirement, at
    neighbouring positions (``n = m + 1`` or ``m - 1``): ``R_{n-m} = R_m^T R_n``, so ``R_1`` is the earlier
    position's matrix transposed times the later one's, wherever the two positions are."""
    return r_m.mT @ r_n if n == m + 1 else r_n.mT @ r_m


def _block_rotation(angles: torch.Tensor) -> torch.Tensor:
    """``(r,)`` angles -> the ``(2r, 2r)`` block-diagonal matrix turning pair ``(2i, 2i+1)`` by ``angles[i]``."""
    return torch.block_diag(*rotation(angles))


class _Family:
    """A family ``p -> R_p = R_1^p`` that meets the requirement: ``kind`` is ``"rotation"`` (2x2, one angle),
    ``"reflection"`` (2x2, ``R_1`` a reflection: ``R_p`` is ``R_1`` for odd ``p`` and ``I`` for even), ``"head"``
    (a RoPE head's ``(D, D)`` block rotation, one angle per pair) or ``"orthogonal"`` (any ``(k, k)`` orthogonal
    ``R_1``, determinant +1 or -1). ``R_p`` is built from the step's angles where there are angles (exact at
    positions in the thousands), by matrix powers otherwise."""

    def __init__(self, draw: Draw, kind: str, *, theta: float | None = None) -> None:
        self.kind = kind
        if kind == "rotation":
            self.angles = torch.tensor([theta], dtype=torch.float64)
            self.label = _("a rotation's powers, theta = {theta:.4g}").format(theta=theta)
        elif kind == "head":
            dim, base = draw.choice((4, 8, 16)), draw.uniform(10.0, 10000.0)
            self.angles = base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
            self.label = _("a RoPE head's rotations, {dim} x {dim}, base {base:.0f}").format(
                dim=dim, base=base
            )
        elif kind == "reflection":
            phi = draw.uniform(-math.pi, math.pi)  # the mirror's line through 0 at angle phi
            c, s = math.cos(2 * phi), math.sin(2 * phi)
            self.step = torch.tensor([[c, s], [s, -c]], dtype=torch.float64)
            self.label = _("a reflection's powers")
        else:
            k = draw.int(3, 6)
            q, r = torch.linalg.qr(draw.randn(k, k, dtype=torch.float64).cpu())
            self.step = q * torch.sign(torch.diagonal(r))  # orthogonal; its determinant is drawn too
            self.label = _("an orthogonal matrix's powers, {k} x {k}").format(k=k)
        self.device = draw.device

    def at(self, p: int) -> torch.Tensor:
        if self.kind in ("rotation", "head"):
            r = _block_rotation(p * self.angles)
        else:
            r = torch.linalg.matrix_power(self.step if p >= 0 else self.step.T, abs(p))
        return r.to(self.device)

    def case(self, m: int, n: int) -> Case:
        return Case((self.at(m), self.at(n), m, n), label=self.label)


def _two_cases(draw: Draw, kinds_and_positions: list[tuple[str, int, int]]) -> list[Case]:
    cases = []
    for kind, m, n in kinds_and_positions:
        theta = draw.choice((-1, 1)) * draw.uniform(0.3, math.pi - 0.3) if kind == "rotation" else None
        cases.append(_Family(draw, kind, theta=theta).case(m, n))
    return cases


def _hidden_two_cases(draw: Draw) -> list[Case]:
    """Every class on every draw, the 2x2 rotations first (an answer that reads an angle off a 2x2 matrix fails on
    the larger ones by raising, and the named mistakes are read on the first case that differs): the later position
    after the earlier (``n = m + 1``) and before it (``n = m - 1``), near 0 (0 included), negative, in the thousands
    (where ``n theta`` has wrapped many times); then a reflection's family, a RoPE head's and an orthogonal one's,
    each in both orders; then random ones."""

    def near() -> int:
        return draw.int(-3, 3)

    def negative() -> int:
        return -draw.int(4, 500)

    def far() -> int:
        return draw.choice((-1, 1)) * draw.int(1000, 6000)

    rotations = [(near(), +1), (negative(), -1), (far(), +1), (far(), -1)]
    rotations += [(draw.choice((near, negative, far))(), draw.choice((-1, 1))) for _ in range(draw.int(1, 4))]
    rotations.append((0, 1))  # from position 0 to 1: R_1 is the later matrix itself
    others = [(kind, near() if i % 2 else negative(), sign) for kind in ("reflection", "head", "orthogonal")
              for i, sign in enumerate((+1, -1))]  # fmt: skip
    others += [(draw.choice(("reflection", "head", "orthogonal")), draw.int(-60, 60), draw.choice((-1, 1)))
               for _ in range(draw.int(1, 4))]  # fmt: skip
    order = draw.permutation(len(rotations)).tolist()
    listed = [("rotation", *rotations[i]) for i in order] + others
    # a later position of 0 (R_1 = R_{-1}^T R_0) is left out: it is fine for a right answer, but an answer that
    # divides an angle by the later position returns nan there, which no hint can be matched against
    listed = [(kind, m + 2 if max(m, m + sign) == 0 else m, sign) for kind, m, sign in listed]
    return _two_cases(draw, [(kind, m, m + sign) for kind, m, sign in listed])


def _two_mistakes() -> dict[str, Callable[..., torch.Tensor]]:
    def transposed(r_m, r_n, m, n):
        return r_m @ r_n.mT if n == m + 1 else r_n @ r_m.mT

    def one_order(r_m, r_n, m, n):
        return r_m.mT @ r_n

    def later_only(r_m, r_n, m, n):
        return r_n if n == m + 1 else r_m

    def product(r_m, r_n, m, n):
        return r_n @ r_m

    def angle_over_position(r_m, r_n, m, n):
        later, p = (r_n, n) if n == m + 1 else (r_m, m)
        return rotation((step_angle(later) / p)[None])[0]

    def angle_difference(r_m, r_n, m, n):
        return rotation(((step_angle(r_n) - step_angle(r_m)) * (n - m))[None])[0]

    return {
        _("when n = m - 1 the later position is m: R_1 = R_n^T R_m (R_m^T R_n is R_{-1} there)"): one_order,
        _(
            "you returned R_{-1} = R_1^T: R_m^T R_n = R_{n-m}, so the transpose goes on the matrix of the earlier "
            "position (R_1 = R_m^T R_{m+1})"
        ): transposed,
        _(
            "R_{m+1} alone is R_1 only when m = 0: the step between two neighbours is R_m^T R_{m+1} wherever they are"
        ): later_only,
        _(
            "R_n R_m is R_{n+m}, not R_{n-m}: undo the earlier position with its transpose, R_m^T R_n"
        ): product,
        _(
            "reading the angle off R_n and dividing it by n loses the whole turns R_n has made: an angle is known only "
            "up to 2 pi, so at positions in the thousands it is another angle; R_m^T R_{m+1} needs no angle"
        ): angle_over_position,
        _(
            "R_1 need not be a rotation by one angle: a family that meets the requirement may have a reflection as "
            "its step, or a whole head's block of rotations; read R_1 off the two matrices with R_m^T R_n = R_{n-m}, "
            "not off an angle"
        ): angle_difference,
    }


@enforce_rules
def check_step_from_two(fn: Callable[..., torch.Tensor], *, hidden: bool = False, device=None) -> None:
    """``fn(r_m, r_n, m, n)`` -> ``R_1`` ``(k, k)`` float64, for the float64 matrices ``R_m``, ``R_n`` of a family
    that meets the requirement, at neighbouring integer positions ``m`` and ``n = m +- 1`` of any sign. The families
    are 2x2 rotations, 2x2 reflections' powers, RoPE heads' block rotations and orthogonal ``(k, k)`` matrices'
    powers: the derivation's step holds for each, whatever ``R_1`` is."""
    draw = Draw(hidden=hidden, device=device)
    if hidden:
        cases = _hidden_two_cases(draw)
    else:
        cases = [
            _Family(draw, "rotation", theta=0.5).case(2, 3),
            _Family(draw, "rotation", theta=2.0).case(4, 3),  # the later position first
            _Family(draw, "rotation", theta=-0.9).case(-3, -2),
            _Family(draw, "rotation", theta=1.1).case(1234, 1235),  # 1235 * 1.1 radians: many whole turns
            _Family(draw, "reflection").case(6, 7),
            _Family(draw, "head").case(10, 9),
            _Family(draw, "orthogonal").case(-7, -6),
        ]
    first_difference(
        "step_from_two", fn, step_from_two, cases, mistakes=_two_mistakes(), seed=draw.quoted_seed
    )
