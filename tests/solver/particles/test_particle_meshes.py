"""Particles against mesh colliders: resting on a two-triangle floor at the radius, poured into a bowl and kept
inside, passing a one-sided floor from behind, sliding over a seam without a bump."""
import numpy as np
import pytest

import quadric_solver as solver
from tests.solver.shapes.test_mesh_colliders import bowl, grid

G = 9.81
FPS, SUBSTEPS = 24, 10
H = 1.0 / (FPS * SUBSTEPS)


def test_a_particle_falling_onto_a_two_triangle_floor_rests_at_its_radius():
    """Onto the diagonal's seam and onto each triangle's face: exactly r above the floor, stopped."""
    vertices, triangles = grid(1, 1, -1.0, 1.0, -1.0, 1.0, z=0.2)
    scene = solver.Scene(gravity=(0.0, 0.0, -G))
    scene.add_mesh_collider(vertices, triangles, name="Floor")
    group = scene.add_particles([[0.0, 0.0, 0.6], [0.5, -0.3, 0.5], [-0.4, 0.6, 0.7]], radius=0.05)
    sim = solver.Simulation(scene)
    recording = sim.run(frames=36, fps=FPS, substeps=SUBSTEPS)
    final = recording.particles(group)[-1]
    np.testing.assert_allclose(final[:, 2], 0.25, rtol=0, atol=1e-12)
    np.testing.assert_allclose(final[:, :2], [[0.0, 0.0], [0.5, -0.3], [-0.4, 0.6]], rtol=0, atol=1e-12)
    assert np.all(sim.state.particle_velocities(group) == 0.0)
    assert sim.stats["particle_contacts"] == 3


def test_a_particle_passes_a_one_sided_floor_from_behind_and_lands_on_it():
    """Thrown up through the floor from below (v0 = 4 m/s, 1 m below it), it passes; it then falls back onto the
    front and rests there at its radius. A particle of radius 0 behaves the same."""
    vertices, triangles = grid(2, 2, -1.0, 1.0, -1.0, 1.0)
    scene = solver.Scene(gravity=(0.0, 0.0, -G))
    scene.add_mesh_collider(vertices, triangles)
    group = scene.add_particles([[0.1, 0.2, -0.5], [-0.3, 0.1, -0.5]], velocities=[[0, 0, 4.0], [0, 0, 4.0]],
                                radius=0.0)
    fat = scene.add_particles([[0.4, -0.2, -0.5]], velocities=[[0, 0, 4.0]], radius=0.03)
    sim = solver.Simulation(scene)
    recording = sim.run(frames=72, fps=FPS, substeps=SUBSTEPS)
    z = recording.particles(group)[:, :, 2]
    assert z.max() > 0.3  # it went through: v0^2 / 2g - 0.5 = 0.32 m above the floor
    np.testing.assert_allclose(z[-1], 0.0, rtol=0, atol=1e-12)
    assert recording.particles(fat)[-1, 0, 2] == pytest.approx(0.03, abs=1e-12)


def test_particles_poured_into_a_mesh_bowl_stay_inside():
    """200 colliding grains dropped into a hemispherical bowl of radius 0.3 settle inside it: each within the
    sphere of radius R - r about its centre (the facets lie inside the sphere, their corners on it) and below the
    rim, and those at the bottom touch it: the bottom's facets sag below the sphere by at most
    R (1 - cos(pi / 24)), their corners pi / 24 from the bottom pole."""
    R, r = 0.3, 0.01
    vertices, triangles = bowl(R, rings=12, segments=24, centre=(0.0, 0.0, R))
    scene = solver.Scene(gravity=(0.0, 0.0, -G))
    scene.add_mesh_collider(vertices, triangles, material=solver.Material(friction=0.5), name="Bowl")
    rng = np.random.default_rng(11)
    drop = rng.uniform((-0.1, -0.1, 0.35), (0.1, 0.1, 0.6), (200, 3))
    group = scene.add_particles(drop, radius=r, particle_collisions=True, material=solver.Material(friction=0.5))
    sim = solver.Simulation(scene)
    sim.run(frames=48, fps=FPS, substeps=SUBSTEPS)
    x = sim.state.particle_positions(group)
    from_centre = np.linalg.norm(x - (0.0, 0.0, R), axis=1)
    sag = R * (1.0 - np.cos(np.pi / 24))
    assert from_centre.max() <= R - r + 1e-9
    assert np.all(x[:, 2] < R)
    assert from_centre.max() > R - r - sag - 1e-9  # the outer grains touch the facets
    assert np.linalg.norm(sim.state.particle_velocities(group), axis=1).max() < 0.5


def test_a_particle_slides_over_a_finely_cut_floor_as_over_a_plane():
    """A 10 x 10 grid of triangles: the seams are inactive, so the slide stops at v0^2 / (2 mu g) within v0 h,
    as on a plane, never lifted or sunk."""
    mu, v0, radius = 0.4, 2.0, 0.05
    vertices, triangles = grid(10, 10, -1.0, 2.0, -1.0, 1.0)
    scene = solver.Scene(gravity=(0.0, 0.0, -G))
    scene.add_mesh_collider(vertices, triangles, material=solver.Material(friction=mu))
    group = scene.add_particles([[-0.9, 0.013, radius]], velocities=[[v0, 0.3 * v0, 0.0]], radius=radius,
                                material=solver.Material(friction=mu))
    sim = solver.Simulation(scene)
    path = sim.run(frames=48, fps=FPS, substeps=SUBSTEPS).particles(group)[:, 0]
    travelled = np.linalg.norm(path[-1, :2] - path[0, :2])
    speed = v0 * np.hypot(1.0, 0.3)
    assert travelled == pytest.approx(speed ** 2 / (2.0 * mu * G), abs=speed * H)
    assert np.all(np.abs(path[:, 2] - radius) < 1e-12)
