"""Two segments' patch (capsules or cylinders side by side): the ends of their common stretch, each at its own
depth, where the segments stay within the reach of each other seen along the normal; one point where they cross.

Reference: the closed-form geometry of two capsules lying along x on a horizontal plane, one above the other.
"""
import math

import numpy as np
import pytest

import quadric_solver as solver
from quadric_solver.collision.patches import PATCH, new_patch_scratch, pair_patch
from quadric_solver.math3d import quat_to_matrix
from quadric_solver.shapes import encode_shapes

RADIUS, REACH = 0.05, 0.01


def lying_along_x(yaw):
    """The rotation of a capsule (axis z) laid along x, then turned by yaw about z."""
    lay = np.array([math.cos(math.pi / 4), 0.0, math.sin(math.pi / 4), 0.0])
    turn = np.array([math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)])
    w1, x1, y1, z1 = turn
    w2, x2, y2, z2 = lay
    q = np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                  w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])
    rotation = np.empty((3, 3))
    quat_to_matrix(q, rotation)
    return rotation


def patch(half_a, half_b, shift, gap, yaw_b=0.0):
    """Capsule A (half height half_a) at the origin and B above it, its centre shifted by `shift` along x and
    `gap` apart (surface to surface), both lying along x; B turned by yaw_b."""
    kinds, params, hull = encode_shapes([solver.Capsule(RADIUS, half_a), solver.Capsule(RADIUS, half_b)])
    positions = np.array([[0.0, 0.0, 0.0], [shift, 0.0, 2 * RADIUS + gap]])
    rotations = np.stack([lying_along_x(0.0), lying_along_x(yaw_b)])
    out = np.zeros((PATCH, 4))
    count = pair_patch(kinds, params, hull, np.zeros((0, 3), dtype=np.int64), positions, rotations, 0.0, 0.0, 1.0,
                       REACH, new_patch_scratch(), out)
    return out[:count]


@pytest.mark.parametrize("shift, gap", [(0.0, -0.002), (0.05, -0.001), (-0.12, 0.004)])
def test_parallel_capsules_touch_at_both_ends_of_their_common_stretch(shift, gap):
    points = patch(0.2, 0.3, shift, gap)
    assert len(points) == 2
    lo, hi = max(-0.2, shift - 0.3), min(0.2, shift + 0.3)
    np.testing.assert_allclose(sorted(points[:, 0]), [lo, hi], atol=1e-12)
    np.testing.assert_allclose(points[:, 1], 0.0, atol=1e-12)
    np.testing.assert_allclose(points[:, 2], RADIUS + 0.5 * gap, atol=1e-12)  # half way between the surfaces
    np.testing.assert_allclose(points[:, 3], -gap, atol=1e-12)  # the overlap, positive when pressed


def test_crossing_capsules_touch_in_one_point():
    points = patch(0.2, 0.3, 0.0, -0.002, yaw_b=math.pi / 2)
    assert len(points) == 1
    np.testing.assert_allclose(points[0], [0.0, 0.0, RADIUS - 0.001, 0.002], atol=1e-12)


def test_a_slight_turn_keeps_two_points_while_the_ends_stay_within_the_reach():
    # at the far end of the 0.4 m common stretch B's axis is 0.2 tan(yaw) off A's, seen from above
    within, beyond = math.atan(0.5 * REACH / 0.2), math.atan(2.0 * REACH / 0.2)
    assert len(patch(0.2, 0.3, 0.0, -0.001, yaw_b=within)) == 2
    assert len(patch(0.2, 0.3, 0.0, -0.001, yaw_b=beyond)) == 1
