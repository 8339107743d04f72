"""A box container's floor and walls hold a body pressed into its corner.

A body whose deepest point has been pushed a little past a side wall still lies on the floor: the floor
must hold that point. Reference: the body's lowest vertex, from its pose and its vertices (numpy).
"""
import numpy as np
import pytest

import quadric_solver as solver
from quadric_solver.math3d import quat_to_matrix_np

HALF = 0.5        # m, the container's half width
PAST_WALL = 3e-4  # m, how far the lowest vertex starts beyond the -x wall
SUNK = 5e-4       # m, how far it starts below the floor (the start check refuses 5% of its size)


def lowest_vertex(sim, body):
    """World position of the body's lowest vertex."""
    points = np.array(sim.scene.bodies[body]["points"])
    world = points @ quat_to_matrix_np(sim.state.orientation[body]).T + sim.state.position[body]
    return world[np.argmin(world[:, 2])]


@pytest.mark.parametrize("wall", ["-x", "+y"])
def test_a_point_pushed_past_a_side_wall_still_rests_on_the_floor(wall):
    """A spike (a tetrahedron, apex down) starts 0.5 mm into the floor with its apex 0.3 mm into a side wall,
    without friction. The floor must push it out: after 30 steps the apex is above -0.2 mm. Before the walls
    held points past their edges, the floor dropped the apex's contact (the apex is not over the floor's
    rectangle) and the spike fell through."""
    # apex at the origin, the rest of the spike inside the box (+x of the apex for the -x wall)
    spike = np.array([[0.0, 0.0, 0.0], [0.02, 0.0, 0.06], [0.06, 0.03, 0.06], [0.06, -0.03, 0.06]])
    apex = np.array([-HALF - PAST_WALL, 0.0, -SUNK])
    if wall == "+y":
        spike = spike[:, [1, 0, 2]] * np.array([1.0, -1.0, 1.0])
        apex = np.array([0.0, HALF + PAST_WALL, -SUNK])
    scene = solver.Scene(gravity=(0.0, 0.0, -9.81))
    slick = solver.Material(friction=0.0)
    scene.add_box_container(center=(0.0, 0.0, 0.5), half_extents=(HALF, HALF, 0.5), material=slick)
    scene.add_body(solver.ConvexHull(spike), position=tuple(apex), density=1000.0, material=slick)
    sim = solver.Simulation(scene, dt=1.0 / 240.0)
    start = lowest_vertex(sim, 0)
    assert start == pytest.approx(apex, abs=1e-9)
    sim.step(30)
    end = lowest_vertex(sim, 0)
    assert end[2] > -2e-4, end
    # and the side wall pushed it back in
    inside = -HALF - end[0] if wall == "-x" else end[1] - HALF
    assert inside < 2e-4, end
