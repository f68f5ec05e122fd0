"""``draw_angle_arcs``, ``unseen_share`` and ``draw_neighbour_angles``: the relative angles of one RoPE pair
(notebooks 06 and 07)."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from posref.explorers import draw_angle_arcs, draw_neighbour_angles, unseen_share  # noqa: E402

TURN = 2 * math.pi


@pytest.mark.parametrize(
    ("angle", "seen", "share"),
    [
        (1.0, 2.0, 0.0),  # inside the sector
        (3.0, 2.0, 1.0 / TURN),  # one radian past it
        (10.0, 2.0, 1.0 - 2.0 / TURN),  # wraps: everything outside the sector is reached
        (10.0, 7.0, 0.0),  # training went round the whole circle
        (2.0, 2.0, 0.0),
    ],
)
def test_unseen_share_is_the_part_of_the_circle_outside_the_training_sector(angle, seen, share):
    assert unseen_share(angle, seen) == pytest.approx(share, abs=1e-12)


def test_unseen_share_of_the_slowest_pair_of_the_base_50_head():
    # pair 7 of a head of dimension 16, base 50, trained at 64: an independent count by hand, one distance at a time
    theta = 50.0 ** (-14 / 16)
    seen = [math.fmod(d * theta, TURN) for d in range(64)]
    at_2l = [math.fmod(d * theta, TURN) for d in range(128)]
    outside = [a for a in at_2l if a > max(seen)]
    assert unseen_share(127 * theta, 63 * theta) == pytest.approx((max(outside) - max(seen)) / TURN, abs=1e-9)


@pytest.mark.parametrize(("angle", "seen"), [(-1.0, 1.0), (1.0, float("nan")), (float("inf"), 1.0)])
def test_unseen_share_refuses_angles_that_are_not_finite_and_non_negative(angle, seen):
    with pytest.raises(ValueError, match="finite and >= 0"):
        unseen_share(angle, seen)


def test_each_arc_ends_at_its_angle_and_the_sector_spans_what_training_met():
    fig = plt.figure()
    ax = fig.add_subplot(projection="polar")
    draw_angle_arcs(ax, {"2L": 4.0, "4L": 9.0}, seen=2.0)
    arcs = [line for line in ax.get_lines() if line.get_label() in ("2L", "4L")]
    assert [line.get_xdata()[-1] for line in arcs] == pytest.approx([4.0, 9.0])
    assert [line.get_xdata()[0] for line in arcs] == [0.0, 0.0]
    radius = arcs[1].get_ydata()
    assert np.all(np.diff(radius) >= 0) and radius[-1] - radius[0] == pytest.approx(0.06 * 9.0 / TURN)
    (sector,) = ax.collections
    angles = sector.get_paths()[0].vertices[:, 0]
    assert angles.min() == pytest.approx(0.0) and angles.max() == pytest.approx(2.0)
    plt.close(fig)


def test_a_sector_past_a_full_turn_shades_the_whole_circle_once():
    fig = plt.figure()
    ax = fig.add_subplot(projection="polar")
    draw_angle_arcs(ax, {"L": 20.0}, seen=20.0)
    angles = ax.collections[0].get_paths()[0].vertices[:, 0]
    assert angles.max() == pytest.approx(TURN)
    plt.close(fig)


@pytest.mark.parametrize(("arcs", "seen"), [({}, 1.0), ({"a": -1.0}, 1.0), ({"a": 1.0}, float("inf"))])
def test_draw_angle_arcs_refuses_bad_arcs(arcs, seen):
    fig = plt.figure()
    with pytest.raises(ValueError, match="arcs is empty|finite angle"):
        draw_angle_arcs(fig.add_subplot(projection="polar"), arcs, seen)
    plt.close(fig)


def test_the_legend_is_drawn_only_when_asked():
    fig = plt.figure()
    with_legend, without = (
        fig.add_subplot(1, 2, 1, projection="polar"),
        fig.add_subplot(1, 2, 2, projection="polar"),
    )
    draw_angle_arcs(with_legend, {"2L": 4.0}, seen=2.0)
    draw_angle_arcs(without, {"2L": 4.0}, seen=2.0, legend=False)
    assert with_legend.get_legend() is not None and without.get_legend() is None
    assert [t.get_text() for t in with_legend.get_legend().get_texts()] == ["met in training", "2L"]
    plt.close(fig)


def test_every_scaling_method_has_its_own_look_and_plain_rope_is_not_longrope():
    from posref.explorers import SCALING_STYLES, scaling_style

    looks = {name: tuple(scaling_style(name).values()) for name in SCALING_STYLES}
    twins = {"Dynamic NTK", "Dynamic NTK (factor 1)"}  # one method under two names
    distinct = {look for name, look in looks.items() if name not in twins} | {looks["Dynamic NTK"]}
    assert len(distinct) == len(looks) - 1
    plain, longrope = looks["RoPE (no scaling)"], looks["LongRoPE (searched for 4L)"]
    assert plain[0] != longrope[0] and plain[2] != longrope[2]  # colour and marker both differ (issue 29.5)
    with pytest.raises(KeyError, match="no style for 'NTK'"):
        scaling_style("NTK")


def test_neighbour_angles_put_the_spokes_where_training_did_and_each_method_s_dots_at_its_step():
    fig = plt.figure()
    ax = fig.add_subplot(projection="polar")
    draw_neighbour_angles(ax, {"RoPE": 1.0, "PI": 0.25}, seen_step=1.0, n=3)
    lines = ax.get_lines()
    spokes = [line for line in lines if line.get_linestyle() == "--" and len(line.get_xdata()) == 2]
    assert sorted(line.get_xdata()[0] for line in spokes) == pytest.approx([1.0, 2.0, 3.0])
    dots = [line for line in lines if line.get_marker() == "o"]
    assert [list(line.get_xdata()) for line in dots] == [
        pytest.approx([1.0, 2.0, 3.0]),
        pytest.approx([0.25, 0.5, 0.75]),
    ]
    rings = [line for line in lines if line.get_label() in ("RoPE", "PI")]
    assert [line.get_xdata()[-1] for line in rings] == pytest.approx(
        [3.0, 0.75]
    )  # each joined from 0 to its n-th key
    assert [line.get_ydata()[0] for line in rings] == pytest.approx([0.45, 0.65])  # one ring per method
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "keys 1 to 3 back, where training put them",
        "RoPE",
        "PI",
    ]
    plt.close(fig)


@pytest.mark.parametrize(
    ("steps", "seen", "n", "match"),
    [
        ({}, 1.0, 3, "steps is empty"),
        ({"a": 0.0}, 1.0, 3, "> 0"),
        ({"a": 1.0}, float("nan"), 3, "> 0"),
        ({"a": 1.0}, 1.0, 0, "positive int"),
    ],
)
def test_draw_neighbour_angles_refuses_bad_steps(steps, seen, n, match):
    fig = plt.figure()
    with pytest.raises(ValueError, match=match):
        draw_neighbour_angles(fig.add_subplot(projection="polar"), steps, seen, n=n)
    plt.close(fig)
