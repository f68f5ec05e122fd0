"""Relative angles on a circle: what one RoPE pair met in training, and what a longer input shows it (06, 07).

A score between a query at ``m`` and a key at ``n`` sees pair ``i`` only through the relative angle
``(m - n) * theta_i`` (RoFormer, arXiv 2104.09864). Trained on ``L`` tokens, the pair met the angles of distances
``0 .. L-1``: the sector ``[0, (L-1) theta_i]``, the whole circle once that passes a full turn. A longer input reaches
``[0, (T-1) theta_i]``; a scaling method (notebook 07) changes ``theta_i`` so that this arc falls back inside the
sector (slides 45-47: angles beyond what training saw, positions squeezed back into range).

The fastest pair fails the other way: it went round the circle many times in training, so no angle is new to
it, but a method that slows it (PI) puts neighbouring tokens closer together in angle than training ever did
(``draw_neighbour_angles``).
"""

from __future__ import annotations

import math

import numpy as np

from posref.i18n import _

__all__ = ["draw_angle_arcs", "draw_neighbour_angles", "unseen_share"]

TURN = 2 * math.pi


def unseen_share(angle: float, seen: float) -> float:
    """Share of the circle that the arc ``[0, angle]`` (radians) reaches outside the sector ``[0, seen]``: 0 when
    the arc stays inside or when ``seen`` is a full turn or more, at most ``1 - seen / 2 pi``."""
    if not (math.isfinite(angle) and math.isfinite(seen)) or angle < 0 or seen < 0:
        raise ValueError(
            _("angle and seen must be finite and >= 0 (radians), got angle={angle!r}, seen={seen!r}").format(
                angle=angle, seen=seen
            )
        )
    return max(0.0, min(angle, TURN) - min(seen, TURN)) / TURN


def draw_angle_arcs(
    ax, arcs: dict[str, float], seen: float, *, styles: dict[str, dict] | None = None, legend: bool = True
) -> None:
    """Draw on polar axes ``ax`` the sector seen in training, ``[0, seen]`` radians (shaded grey; all of the circle
    from a full turn on), and each arc of ``arcs`` (label -> largest angle, radians) from 0 to its angle.

    Arc ``k`` starts at radius ``0.45 + 0.2 k`` and moves out by 0.06 per turn, so an arc that wraps past a full
    turn shows as a spiral whose turns can be counted; a dot marks its end. ``styles``: matplotlib keywords per
    label (colour, line style), else the default colour cycle. ``legend``: a legend below the axes (a figure of
    several such axes can draw one legend for all from the first axes' handles instead).
    """
    if not arcs:
        raise ValueError(_("arcs is empty: expected at least one label -> largest angle (radians)"))
    for label, angle in {"seen": seen, **arcs}.items():
        if not math.isfinite(angle) or angle < 0:
            raise ValueError(
                _("{label}: expected a finite angle >= 0 in radians, got {angle!r}").format(
                    label=label, angle=angle
                )
            )
    sector = np.linspace(0.0, min(seen, TURN), 200)
    ax.fill_between(sector, 0.0, 0.45 + 0.2 * len(arcs), color="0.85", label=_("met in training"))
    for k, (label, angle) in enumerate(arcs.items()):
        phi = np.linspace(0.0, angle, max(2, int(100 * angle)))
        radius = 0.45 + 0.2 * k + 0.06 * phi / TURN
        style = {"lw": 2, **(styles or {}).get(label, {})}
        (line,) = ax.plot(phi, radius, label=label, **style)
        ax.plot(phi[-1:], radius[-1:], "o", color=line.get_color(), ms=5)
    ax.set_ylim(0.0, 0.55 + 0.2 * len(arcs))
    ax.set_yticks([])
    ax.set_xticks(np.arange(0, TURN, TURN / 4), ["0", "π/2", "π", "3π/2"])
    if legend:
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.08), fontsize=8, frameon=False)


def draw_neighbour_angles(
    ax,
    steps: dict[str, float],
    seen_step: float,
    *,
    n: int = 3,
    styles: dict[str, dict] | None = None,
    legend: bool = True,
) -> None:
    """Draw on polar axes ``ax`` where one pair puts the keys ``1 .. n`` positions back: grey spokes at
    ``d * seen_step`` (what training taught it, ``seen_step`` = the pair's angle per position in training) and, for
    each label of ``steps`` (label -> angle per position after scaling, radians), dots at ``d * step`` on a ring
    of its own (the radii of ``draw_angle_arcs``), joined from 0. Dots closer together than the spokes: the
    method squeezed neighbouring tokens together in angle.
    """
    if not steps:
        raise ValueError(_("steps is empty: expected at least one label -> angle per position (radians)"))
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(_("n must be a positive int (the distances drawn), got {n!r}").format(n=n))
    for label, step in {"seen": seen_step, **steps}.items():
        if not math.isfinite(step) or step <= 0:
            raise ValueError(
                _("{label}: expected a finite angle per position > 0 in radians, got {step!r}").format(
                    label=label, step=step
                )
            )
    outer = 0.55 + 0.2 * len(steps)
    distances = np.arange(1, n + 1)
    for d in distances:
        ax.plot([d * seen_step] * 2, [0.0, outer], color="0.6", lw=1, ls="--")
        ax.annotate(str(d), (d * seen_step, outer), color="0.4", fontsize=7, ha="center", va="center")
    ax.plot(
        [], [], color="0.6", lw=1, ls="--", label=_("keys 1 to {n} back, where training put them").format(n=n)
    )
    for k, (label, step) in enumerate(steps.items()):
        radius = 0.45 + 0.2 * k
        style = {"lw": 2, **(styles or {}).get(label, {})}
        (line,) = ax.plot(np.linspace(0.0, n * step, 50), np.full(50, radius), label=label, **style)
        ax.plot(distances * step, np.full(n, radius), "o", color=line.get_color(), ms=5)
    ax.set_ylim(0.0, outer + 0.05)
    ax.set_yticks([])
    ax.set_xticks(np.arange(0, TURN, TURN / 4), ["0", "π/2", "π", "3π/2"])
    if legend:
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.08), fontsize=8, frameon=False)
