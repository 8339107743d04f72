"""A patch lists its points by angle about their centroid, so a resting patch keeps its order (and each point its
warm-started impulse) from substep to substep.

Reference: numpy's arctan2 of each point about the centroid, seen along the normal.
"""
import numpy as np
import pytest

from quadric_solver.collision.patches import PATCH, _pseudo_angle, new_patch_scratch, pair_patch
from quadric_solver.math3d import quat_to_matrix_np
from tests.solver.collision.test_face_patches import _box_params


def test_the_pseudo_angle_orders_directions_as_their_angle_does():
    rng = np.random.default_rng(4)
    angles = np.concatenate([rng.uniform(-np.pi, np.pi, 4000), np.radians([-135.0, -90.0, -45.0, 0.0, 45.0, 90.0,
                                                                          135.0, 180.0])])
    lengths = rng.uniform(1e-3, 10.0, angles.size)
    x, y = lengths * np.cos(angles), lengths * np.sin(angles)
    y[angles == np.pi] = 0.0  # the negative x axis: atan2 gives pi there
    pseudo = np.array([_pseudo_angle(a, b) for a, b in zip(x, y)])
    assert np.array_equal(np.argsort(pseudo, kind="stable"), np.argsort(np.arctan2(y, x), kind="stable"))
    assert pseudo.min() > -2.0 and pseudo.max() <= 2.0


def _patch_of_box_on_box(turn):
    """The patch of a small box (B) resting 0.5 mm deep on a large one's top face (A), B turned by ``turn`` radians
    about the normal and tilted slightly, so its four corners have four depths."""
    small, large = (0.02, 0.03, 0.01), (0.1, 0.1, 0.01)
    kind_s, params_s, hull_vertices, hull_faces = _box_params(small)
    kind_l, params_l, _, _ = _box_params(large)
    half = 0.5 * turn
    tilt = np.radians(0.5)
    twist = quat_to_matrix_np(np.array([np.cos(half), 0.0, 0.0, np.sin(half)]))
    axis = np.array([0.8, 0.6, 0.0])  # not along an edge: four corners at four heights
    lean = quat_to_matrix_np(np.concatenate([[np.cos(tilt / 2)], np.sin(tilt / 2) * axis]))
    rotations = np.stack([np.eye(3), twist @ lean])
    positions = np.array([[0.0, 0.0, 0.0], [0.003, -0.002, large[2] + small[2] - 0.0005]])
    out = np.zeros((PATCH, 4))
    count = pair_patch(np.array([kind_l, kind_s]), np.stack([params_l, params_s]), hull_vertices, hull_faces,
                       positions, rotations, 0.0, 0.0, 1.0, 0.002, new_patch_scratch(), out)
    return out[:count]


@pytest.mark.parametrize("turn_degrees", [0.0, 30.0, 100.0, 179.0, 181.0, -60.0])
def test_a_patch_lists_its_points_by_angle_about_their_centroid(turn_degrees):
    patch = _patch_of_box_on_box(np.radians(turn_degrees))
    assert len(patch) == 4
    assert len(set(np.round(patch[:, 3], 9))) == 4  # four depths: each point is told apart by its own
    offsets = patch[:, :2] - patch[:, :2].mean(axis=0)
    angles = np.arctan2(offsets[:, 1], offsets[:, 0])
    # counter-clockwise about the normal from where the sequence starts: one step down at most, on wrapping
    steps = np.diff(np.concatenate([angles, angles[:1]]))
    assert (steps < 0.0).sum() == 1, angles


def test_a_slightly_turned_resting_patch_keeps_its_order():
    """The same box turned by a tenth of a degree: every listed point is the same corner as before, the nearest."""
    before, after = _patch_of_box_on_box(np.radians(20.0)), _patch_of_box_on_box(np.radians(20.1))
    for k in range(4):
        nearest = np.argmin(np.linalg.norm(after[:, :2] - before[k, :2], axis=1))
        assert nearest == k
        assert after[k, 3] == pytest.approx(before[k, 3], abs=2e-5)
