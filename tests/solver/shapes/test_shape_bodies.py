"""Bodies of every shape in the simulation: rest, friction, rolling, stacking, momentum, files.

Each compares with a closed form or a conservation law. All scenes hold a body other than an
ellipsoid, so they share one compiled specialisation of the substep loop.
"""
import math

import numpy as np
import pytest

import quadric_solver as solver
from quadric_solver.math3d import quat_to_matrix_np
from quadric_solver.validate import FieldError
from tests.helpers import axis_angle

G = 9.81


def _tilted_gravity(theta):
    """Gravity of a slope of angle theta, seen from the slope: down it along +x, into it along -z."""
    return (G * math.sin(theta), 0.0, -G * math.cos(theta))


def test_the_default_cube_rests_flat_on_the_default_plane_without_creep():
    scene = solver.Scene()
    scene.add_plane()
    scene.add_body(solver.Box((1.0, 1.0, 1.0)), position=(0.0, 0.0, 1.0), name="Cube")
    sim = solver.Simulation(scene)
    sim.run(frames=24, fps=24)
    settled = sim.state.position[0].copy(), sim.state.orientation[0].copy()
    assert sim.stats["contacts"] == 4  # one patch: the four corners of the bottom face
    sim.run(frames=48, fps=24)
    position, orientation = sim.state.position[0], sim.state.orientation[0]
    # it stays where it settled: no drift, no turn (a rocking or creeping box moves by far more)
    np.testing.assert_allclose(position, settled[0], atol=1e-9)
    np.testing.assert_allclose(orientation, settled[1], atol=1e-9)
    # flat on the floor: overlap at most the slop (0.2% of the half size), bottom face level
    assert 1.0 - 0.002 <= position[2] <= 1.0 + 1e-9
    assert quat_to_matrix_np(orientation)[2, 2] > math.cos(1e-4)


@pytest.mark.parametrize("theta_deg", [20.0, 35.0])
def test_a_box_holds_below_its_friction_angle_and_slides_at_the_coulomb_rate_above(theta_deg):
    mu = 0.5
    theta = math.radians(theta_deg)
    material = solver.Material(friction=mu)
    scene = solver.Scene(gravity=_tilted_gravity(theta))
    scene.add_plane(material=material)
    half = 0.1
    scene.add_body(solver.Box((half, half, half)), position=(0.0, 0.0, half), material=material)
    sim = solver.Simulation(scene)
    sim.run(frames=6, fps=60)  # settle onto the slope
    x0, v0, t0 = sim.state.position[0, 0], sim.state.linear_velocity[0, 0], sim.time
    sim.run(frames=30, fps=60)
    x1, v1 = sim.state.position[0, 0], sim.state.linear_velocity[0, 0]
    duration = sim.time - t0
    expected = G * (math.sin(theta) - mu * math.cos(theta))
    if expected <= 0.0:
        # static friction holds: sliding at even a hundredth of g would move it 12 mm in half a second
        assert abs(x1 - x0) < 1e-4 and abs(v1) < 1e-4
    else:
        assert (v1 - v0) / duration == pytest.approx(expected, rel=0.01)
    # it slides flat: no tipping (friction 0.5 is below the cube's tipping ratio of 1)
    assert quat_to_matrix_np(sim.state.orientation[0])[2, 2] > math.cos(math.radians(0.5))


def test_a_solid_cylinder_rolls_down_a_slope_at_two_thirds_g_sin_theta():
    theta = math.radians(15.0)
    material = solver.Material(friction=0.5)  # above tan(theta) / 3: rolling without slipping
    scene = solver.Scene(gravity=_tilted_gravity(theta))
    scene.add_plane(material=material)
    radius = 0.1
    # axis along y: lying on its side, free to roll along x
    scene.add_body(solver.Cylinder(radius, 0.15), position=(0.0, 0.0, radius),
                   orientation=axis_angle((1, 0, 0), math.pi / 2), material=material)
    sim = solver.Simulation(scene)
    sim.run(frames=3, fps=60)
    v0, t0 = sim.state.linear_velocity[0, 0], sim.time
    sim.run(frames=30, fps=60)
    acceleration = (sim.state.linear_velocity[0, 0] - v0) / (sim.time - t0)
    assert acceleration == pytest.approx(2.0 / 3.0 * G * math.sin(theta), rel=0.02)
    # rolling: the contact point is at rest, v = w r
    assert sim.state.angular_velocity[0, 1] * radius == pytest.approx(sim.state.linear_velocity[0, 0], rel=0.01)


def test_a_tower_of_boxes_stands():
    scene = solver.Scene()
    wood = solver.Material(friction=0.6)
    scene.add_plane(material=wood)
    half = (0.1, 0.05, 0.05)
    for k in range(6):
        scene.add_body(solver.Box(half), position=(0.0, 0.0, half[2] * (2 * k + 1)), material=wood)
    sim = solver.Simulation(scene)
    sim.run(frames=144, fps=48)
    position = sim.state.position
    # it stands: every box within 1 mm (2% of its half width) of where it was stacked, each on the one below
    # (a toppling tower moves by its height; the slow creep of an unsettled stack by more than this)
    assert np.abs(position[:, :2]).max() < 1e-3
    np.testing.assert_allclose(position[:, 2], half[2] * (2 * np.arange(6) + 1), atol=6 * 0.002 * half[2])
    assert np.all(np.diff(position[:, 2]) > 2 * half[2] * 0.99)
    # nothing falls: a 2 kg box toppling from this tower has about 0.1 J of kinetic energy. (The tower does not
    # come fully to rest: it keeps a slight rocking, about 1e-5 J, as docs/shapes.md says.)
    assert sim.stats["kinetic_energy"] < 1e-3


@pytest.mark.parametrize("shape, height", [
    (solver.Superellipsoid((0.06, 0.05, 0.04), (0.4, 0.4)), 0.04),
    (solver.Capsule(0.03, 0.05), 0.03),   # lying on its side
    (solver.Cylinder(0.05, 0.02), 0.02),  # standing on its cap
])
def test_shapes_rest_at_the_height_of_their_support(shape, height):
    scene = solver.Scene()
    scene.add_plane(material=solver.Material(friction=0.6, rolling_friction=0.001))
    q = axis_angle((1, 0, 0), math.pi / 2) if isinstance(shape, solver.Capsule) else (1.0, 0.0, 0.0, 0.0)
    index = scene.add_body(shape, position=(0.0, 0.0, height + 0.01), orientation=q,
                           material=solver.Material(friction=0.6, rolling_friction=0.001))
    sim = solver.Simulation(scene)
    sim.run(frames=48, fps=48)
    assert sim.state.position[index, 2] == pytest.approx(height, abs=0.002 * height + 1e-9)
    assert sim.stats["kinetic_energy"] < 1e-8
    # the mass is the closed-form volume times the density
    assert sim.model.mass[index] == pytest.approx(1000.0 * shape.mass_properties(1.0).volume, rel=1e-12)


def test_a_hull_body_rests_like_the_box_it_spans_and_reports_its_frame():
    # the corners of a 0.2 x 0.1 x 0.06 box, given turned and away from the origin of their frame
    corners = np.array([[x, y, z] for x in (-0.1, 0.1) for y in (-0.05, 0.05) for z in (-0.03, 0.03)])
    turn = axis_angle((0, 0, 1), 0.3)
    points = corners @ quat_to_matrix_np(turn).T + [0.5, -0.2, 0.1]
    scene = solver.Scene()
    scene.add_plane()
    index = scene.add_body(solver.ConvexHull(points), position=(0.0, 0.0, 0.0))
    sim = solver.Simulation(scene, overlap_tolerance=None)
    assert sim.model.mass[index] == pytest.approx(1000.0 * 0.2 * 0.1 * 0.06, rel=1e-12)
    sim.run(frames=48, fps=48)
    assert sim.state.position[index, 2] == pytest.approx(0.03, abs=0.002 * 0.03)
    # the shape frame's world pose: body pose times the offset puts the points back where they rest
    offset, offset_q = scene.shape_offset(index)
    body_rotation = quat_to_matrix_np(sim.state.orientation[index])
    frame_position = sim.state.position[index] + body_rotation @ np.array(offset)
    frame_rotation = body_rotation @ quat_to_matrix_np(offset_q)
    world = points @ frame_rotation.T + frame_position
    assert world[:, 2].min() == pytest.approx(0.0, abs=0.002 * 0.03)
    assert world[:, 2].max() == pytest.approx(0.06, abs=0.002 * 0.03)


def test_free_collisions_of_shapes_conserve_momentum():
    scene = solver.Scene(gravity=(0.0, 0.0, 0.0))
    bouncy = solver.Material(friction=0.4, restitution=0.5)
    shapes = [solver.Box((0.1, 0.06, 0.04)), solver.Cylinder(0.05, 0.08), solver.Capsule(0.04, 0.06),
              solver.Superellipsoid((0.07, 0.05, 0.05), (0.3, 0.6))]
    rng = np.random.default_rng(7)
    for k, shape in enumerate(shapes):
        angle = 2.0 * math.pi * k / len(shapes)
        direction = np.array([math.cos(angle), math.sin(angle), 0.1 * (k - 1.5)])
        q = rng.normal(size=4)
        scene.add_body(shape, position=0.4 * direction, orientation=q / np.linalg.norm(q),
                       velocity=-1.5 * direction + rng.normal(scale=0.1, size=3),
                       angular_velocity=rng.normal(scale=2.0, size=3), material=bouncy)
    sim = solver.Simulation(scene)
    mass = sim.model.mass[:, None]
    before = sim.state.linear_velocity.copy()
    momentum = (mass * before).sum(axis=0)
    sim.run(frames=40, fps=80)
    after = sim.state.linear_velocity
    # they met: collisions changed the velocities by a good part of the approach speed
    assert np.abs(after - before).max() > 0.5
    scale = float(mass.sum()) * float(np.abs(before).max())
    np.testing.assert_allclose((mass * after).sum(axis=0), momentum, atol=1e-12 * scale)


def test_every_shape_round_trips_through_a_scene_file(tmp_path):
    scene = solver.Scene()
    shapes = [solver.Ellipsoid((0.1, 0.2, 0.3)), solver.Superellipsoid((0.1, 0.2, 0.3), (0.3, 1.5)),
              solver.Box((0.1, 0.2, 0.3)), solver.Cylinder(0.1, 0.2), solver.Capsule(0.1, 0.2),
              solver.ConvexHull(np.random.default_rng(3).normal(size=(30, 3)) + 2.0)]
    for k, shape in enumerate(shapes):
        scene.add_body(shape, position=(k, 0.0, 1.0), orientation=axis_angle((1, 1, 0), 0.2 * k), name=f"b{k}")
    path = tmp_path / "scene.json"
    scene.save(path)
    loaded = solver.Scene.load(path)
    assert loaded.content_hash() == scene.content_hash()
    assert [loaded.body_shape(k) for k in range(len(shapes))] == [scene.body_shape(k) for k in range(len(shapes))]
    assert loaded.shape_offset(5) == scene.shape_offset(5)


def test_shapes_that_cannot_simulate_yet_are_refused_by_name():
    scene = solver.Scene()
    scene.add_body(solver.Box((0.1, 0.1, 0.1)), position=(0, 0, 1), name="Crate")
    scene.add_tube((0, 0, 0), (0, 0, 1), 0.5, 2.0)
    with pytest.raises(FieldError, match=r"body 0 \('Crate'\) \(box\): shape cannot share a scene with tube"):
        solver.Simulation(scene)
    with pytest.raises(FieldError, match=r"body 1: shape must be a shape .* got 'box'"):
        scene.add_body("box")
    with pytest.raises(FieldError, match=r"box 'B' \(body 1\): density must be positive"):
        scene.add_body(solver.Box((1, 1, 1)), density=-1.0, name="B")


def test_fixed_and_kinematic_bodies_of_any_shape_are_obstacles():
    scene = solver.Scene()
    scene.add_plane()
    # a box dropped onto a fixed cylinder standing on its cap rests on the cap
    scene.add_body(solver.Cylinder(0.2, 0.1), position=(0.0, 0.0, 0.1), fixed=True)
    box = scene.add_body(solver.Box((0.05, 0.05, 0.05)), position=(0.02, -0.03, 0.3))
    # a kinematic capsule lying along y sweeps along x at 0.5 m/s into a ball on the floor
    pusher = scene.add_body(solver.Capsule(0.05, 0.2), position=(1.0, 0.0, 0.05),
                            orientation=axis_angle((1, 0, 0), math.pi / 2), kinematic=True)
    q = axis_angle((1, 0, 0), math.pi / 2)
    scene.set_kinematic_track(pusher, [0.0, 2.0], [[1.0, 0.0, 0.05, *q], [2.0, 0.0, 0.05, *q]])
    ball = scene.add_ellipsoid((0.05, 0.05, 0.05), position=(1.3, 0.0, 0.05))
    sim = solver.Simulation(scene)
    sim.run(frames=73, fps=48)  # 1.5 s: the capsule reaches the ball after 0.4 s
    assert sim.state.position[box, 2] == pytest.approx(0.2 + 0.05, abs=0.002 * 0.05)
    assert np.abs(sim.state.position[box, :2] - (0.02, -0.03)).max() < 1e-3
    # the ball is pushed ahead of the capsule: never closer than the two radii, less the slop
    gap = sim.state.position[ball, 0] - sim.state.position[pusher, 0]
    assert sim.state.position[pusher, 0] == pytest.approx(1.75, abs=1e-9)
    assert gap >= 0.1 - 0.002 * 0.05
    assert sim.state.position[ball, 0] > 1.3 + 0.5
