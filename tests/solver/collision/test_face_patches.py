"""Two faces that touch: each point of the patch at its own depth below the other face, whichever body is A.

Reference: the tilted box's corners in numpy, their heights above the level face's plane; and a box coming to
rest on a slope, flat on it.
"""
import numpy as np
import pytest

import quadric_solver as solver
from quadric_solver.collision.patches import PATCH, new_patch_scratch, pair_patch
from quadric_solver.math3d import quat_to_matrix_np

REACH = 0.002  # m
DEPTH = 0.001  # m: how far the tilted box's top edge presses into the level box
TILT = np.radians(20.0)
TILTED, LEVEL = (0.02, 0.03, 0.01), (0.05, 0.05, 0.01)  # half extents, m


def _box_params(half_extents):
    scene = solver.Scene(gravity=(0.0, 0.0, 0.0))
    scene.add_body(solver.Box(half_extents), position=(0.0, 0.0, 0.0))
    shapes = solver.Simulation(scene)._shapes
    return shapes.kind[0], shapes.params[0], shapes.hull_vertices, shapes.hull_faces


@pytest.mark.parametrize("tilted_is_a", [True, False])
def test_a_tilted_box_pressing_its_edge_into_a_level_face_is_held_at_that_edge(tilted_is_a):
    """The tilted box below (A) or above (B) presses its edge 1 mm into the level box's face: the patch is that
    edge's two corners at 1 mm, and no point away from them. Measuring every point against the tilted face's
    highest corner put four points, all at 1 mm, at the corners of the tilted face's outline."""
    rotation = quat_to_matrix_np(np.array([np.cos(TILT / 2), np.sin(TILT / 2), 0.0, 0.0]))  # about x
    corners = np.array([[sx * TILTED[0], sy * TILTED[1], TILTED[2]] for sx in (1, -1) for sy in (1, -1)])
    world = corners @ rotation.T
    high = world[:, 2].max()
    # the level box's bottom face 1 mm below the tilted box's top edge
    level_centre = np.array([0.0, 0.0, high - DEPTH + LEVEL[2]])
    kind_t, params_t, hull_vertices, hull_faces = _box_params(TILTED)
    kind_l, params_l, _, _ = _box_params(LEVEL)
    kinds = np.array([kind_t, kind_l]) if tilted_is_a else np.array([kind_l, kind_t])
    params = np.stack([params_t, params_l]) if tilted_is_a else np.stack([params_l, params_t])
    positions = np.stack([np.zeros(3), level_centre])
    rotations = np.stack([rotation, np.eye(3)])
    n = np.array([0.0, 0.0, 1.0])
    expected = world[world[:, 2] > high - 1e-12]  # the top edge's two corners
    # each point lies half way between the surfaces: half the depth inside the tilted box from its corner
    inward = -0.5 * DEPTH * n
    if not tilted_is_a:
        # the whole pair mirrored through the origin (boxes are symmetric about their centres): the level box
        # below is A, the tilted one above is B, and its lowest edge presses down into A; n still points up
        positions = -positions[::-1]
        rotations = rotations[::-1]
        expected, inward = -expected, -inward
    out = np.zeros((PATCH, 4))
    count = pair_patch(kinds, params, hull_vertices, hull_faces, positions, rotations, n[0], n[1], n[2], REACH,
                       new_patch_scratch(), out)
    points, depths = out[:count, :3], out[:count, 3]
    assert count == 2, out[:count]
    assert depths == pytest.approx([DEPTH, DEPTH], abs=1e-12)
    for corner in expected:
        nearest = np.linalg.norm(points - (corner + inward), axis=1).min()
        assert nearest < 1e-12, (corner, points)


@pytest.mark.parametrize("slab_first", [True, False])
def test_a_box_dropped_level_onto_a_slope_settles_flat_on_it(slab_first):
    """A cube released level just above a fixed 20-degree slab, over its face near the high edge, tips onto the
    face and rests there (friction 0.8 > tan 20 degrees): flat on the slope, its centre a half extent above
    the slope's plane, whichever of the two is listed first. It stood level on the edge when listed first."""
    scene = solver.Scene()
    turn = (np.cos(TILT / 2), np.sin(TILT / 2), 0.0, 0.0)
    material = solver.Material(friction=0.8)
    top = 1.0 + 0.5 * np.sin(TILT) + 0.1 * np.cos(TILT)  # the slab's high edge
    added = {}
    for what in (("slab", "cube") if slab_first else ("cube", "slab")):
        if what == "slab":
            added[what] = scene.add_body(solver.Box((0.5, 0.5, 0.1)), position=(0.0, 0.0, 1.0), orientation=turn,
                                         fixed=True, material=material)
        else:
            added[what] = scene.add_body(solver.Box((0.1, 0.1, 0.1)), density=500.0, material=material,
                                         position=(0.0, 0.5 * np.cos(TILT) - 0.15, top + 0.102))
    sim = solver.Simulation(scene, dt=1 / 240)
    sim.step(480)
    cube = added["cube"]
    slope = np.array([0.0, -np.sin(TILT), np.cos(TILT)])  # the slab's top face normal
    axes = quat_to_matrix_np(np.asarray(sim.state.orientation[cube]))
    off_flat = np.degrees(np.arccos(min(1.0, np.abs(axes.T @ slope).max())))
    assert off_flat < 0.05, off_flat
    face_centre = np.array([0.0, 0.0, 1.0]) + 0.1 * slope
    height = (np.asarray(sim.state.position[cube]) - face_centre) @ slope
    assert height == pytest.approx(0.1, abs=2e-4)  # within the contact slop of resting
    assert np.linalg.norm(sim.state.linear_velocity[cube]) < 1e-3
