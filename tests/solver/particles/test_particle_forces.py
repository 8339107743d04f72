"""Force objects equal their formulas; mass-spring bodies: lumped masses, a hanging chain as springs in series.

A force is read through the public API as m (v1 - v0) / h after one explicit Euler step, which evaluates the
forces at the start state exactly: v1 = v0 + h f(x0, v0) / m, so the only error is rounding.
"""

import numpy as np
import pytest

import quadric_solver as solver
from quadric_solver.particles.groups import second_neighbours

G = 9.81
H = 1e-3


def forces_at_start(scene, group, masses=1.0):
    """The force (n, 3) on each particle of ``group`` at the start, from one Euler step without gravity."""
    sim = solver.Simulation(scene, dt=H, integrator="euler")
    before = sim.state.particle_velocities(group).copy()
    sim.step()
    return (sim.state.particle_velocities(group) - before) / H * np.reshape(masses, (-1, 1))


def still_scene():
    return solver.Scene(gravity=(0.0, 0.0, 0.0))


def test_drag_is_minus_k_v():
    rng = np.random.default_rng(0)
    velocities = rng.normal(size=(20, 3))
    scene = still_scene()
    group = scene.add_particles(rng.normal(size=(20, 3)), velocities=velocities, mass=2.0)
    scene.add_force(solver.Drag(0.7))
    np.testing.assert_allclose(forces_at_start(scene, group, 2.0), -0.7 * velocities, rtol=1e-9, atol=1e-12)


def test_wind_is_its_strength_along_its_direction_on_the_groups_it_names():
    scene = still_scene()
    calm = scene.add_particles(np.zeros((3, 3)))
    blown = scene.add_particles(np.ones((4, 3)), mass=0.5)
    scene.add_force(solver.Wind(direction=(1.0, 2.0, 2.0), strength=3.0, groups=[blown]))
    np.testing.assert_allclose(forces_at_start(scene, blown, 0.5), np.tile([1.0, 2.0, 2.0], (4, 1)), rtol=1e-9)
    assert np.all(forces_at_start(scene, calm) == 0.0)


def test_turbulent_wind_averages_to_the_steady_wind():
    """The gusts are curl noise, whose mean over space is zero: over many particles the wind is its strength."""
    rng = np.random.default_rng(1)
    scene = still_scene()
    group = scene.add_particles(rng.uniform(-20.0, 20.0, size=(4000, 3)))
    scene.add_force(solver.Wind(direction=(0.0, 1.0, 0.0), strength=2.0, turbulence=0.5, size=0.5, seed=3))
    force = forces_at_start(scene, group)
    # each particle's gust is about strength * turbulence = 1 N; the mean of 4000 of them about 1 / sqrt(4000)
    np.testing.assert_allclose(force.mean(axis=0), [0.0, 2.0, 0.0], atol=0.1)
    assert force.std(axis=0).min() > 0.2  # but it does gust


def test_attractor_pulls_with_its_falloff():
    point = np.array([0.5, -0.2, 1.0])
    positions = np.array([[2.0, 0.0, 1.0], [0.5, 1.8, 3.0], [0.52, -0.2, 1.0]])  # the last within min_distance
    scene = still_scene()
    group = scene.add_particles(positions)
    scene.add_force(solver.Attractor(point, strength=3.0, falloff=2.0, min_distance=0.1))
    offset = point - positions
    distance = np.linalg.norm(offset, axis=1, keepdims=True)
    expected = 3.0 * offset / distance * np.maximum(distance, 0.1) ** -2.0
    np.testing.assert_allclose(forces_at_start(scene, group), expected, rtol=1e-9)


def test_vortex_swirls_about_its_axis():
    positions = np.array([[1.0, 0.0, 5.0], [0.0, -2.0, 0.0], [1.0, 1.0, 1.0]])
    scene = still_scene()
    group = scene.add_particles(positions)
    scene.add_force(solver.Vortex(point=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 2.0), strength=1.5, falloff=1.0))
    radial = positions * (1.0, 1.0, 0.0)
    distance = np.linalg.norm(radial, axis=1, keepdims=True)
    expected = 1.5 * np.cross([0.0, 0.0, 1.0], radial) / distance / distance
    np.testing.assert_allclose(forces_at_start(scene, group), expected, rtol=1e-9, atol=1e-15)


def test_falloff_minus_one_grows_with_distance_a_harmonic_pull_and_a_rigid_swirl():
    """Falloff -1 (Blender's harmonic and vortex fields): f = k (p - x) and f = w a x (x - c), beyond min_distance."""
    positions = np.array([[2.0, 0.0, 1.0], [0.5, 1.8, -3.0], [-4.0, 0.3, 0.2]])
    point = np.array([0.5, -0.2, 1.0])
    scene = still_scene()
    group = scene.add_particles(positions)
    scene.add_force(solver.Attractor(point, strength=3.0, falloff=-1.0, min_distance=1e-6, groups=[group]))
    np.testing.assert_allclose(forces_at_start(scene, group), 3.0 * (point - positions), rtol=1e-9)
    scene = still_scene()
    group = scene.add_particles(positions)
    axis = np.array([1.0, 2.0, 2.0]) / 3.0
    scene.add_force(solver.Vortex(point=point, axis=3.0 * axis, strength=1.5, falloff=-1.0, min_distance=1e-6))
    np.testing.assert_allclose(forces_at_start(scene, group), 1.5 * np.cross(axis, positions - point), rtol=1e-9)


def test_springs_are_damped_hooke_springs():
    positions = np.array([[0.0, 0.0, 0.0], [0.3, 0.4, 0.0], [1.0, 1.0, 1.0]])
    velocities = np.array([[0.1, -0.2, 0.3], [-0.5, 0.0, 0.2], [0.0, 0.0, 0.0]])
    k, c, rest = 50.0, 2.0, 0.4
    scene = still_scene()
    group = scene.add_particles(positions, velocities=velocities)
    scene.add_force(solver.Springs(group, [(0, 1)], stiffness=k, damping=c, rest_lengths=[rest]))
    d = positions[0] - positions[1]
    n = d / np.linalg.norm(d)
    f = -(k * (np.linalg.norm(d) - rest) + c * n @ (velocities[0] - velocities[1])) * n
    np.testing.assert_allclose(forces_at_start(scene, group), [f, -f, [0.0, 0.0, 0.0]], rtol=1e-9, atol=1e-12)


def test_forces_add_up():
    scene = still_scene()
    group = scene.add_particles([[1.0, 0.0, 0.0]], velocities=[[0.0, 2.0, 0.0]])
    scene.add_force(solver.Drag(0.5))
    scene.add_force(solver.Wind(direction=(0.0, 0.0, 1.0), strength=1.0))
    scene.add_force(solver.Drag(0.25, groups=[group]))
    np.testing.assert_allclose(forces_at_start(scene, group), [[0.0, -1.5, 1.0]], rtol=1e-9)


def turbulence_at(points, seed, size=0.7):
    scene = still_scene()
    group = scene.add_particles(points)
    scene.add_force(solver.Turbulence(strength=1.0, size=size, seed=seed))
    return forces_at_start(scene, group)


def test_turbulence_is_smooth_divergence_free_and_set_by_its_seed():
    rng = np.random.default_rng(2)
    centres = rng.uniform(-3.0, 3.0, size=(50, 3))
    step = 1e-4
    stencil = np.concatenate([centres + step * e for e in np.vstack([np.eye(3), -np.eye(3)])])
    force = turbulence_at(stencil, seed=5).reshape(6, 50, 3)
    # central differences: the divergence of a curl is zero, up to the O(step^2) truncation of the differences
    jacobian = np.stack([(force[k] - force[k + 3]) / (2.0 * step) for k in range(3)], axis=1)  # [point, d/dk, i]
    divergence = np.einsum("pkk->p", jacobian)
    assert np.abs(divergence).max() < 1e-5 * np.abs(jacobian).max()
    # smooth: neighbours a step apart differ by about the gradient times the step
    assert np.abs(force[0] - force[3]).max() < 2.0 * step * np.abs(jacobian).max() * 1.01
    # its strength: |c| is about 1 on average
    far = rng.uniform(-30.0, 30.0, size=(4000, 3))
    assert np.linalg.norm(turbulence_at(far, seed=5), axis=1).mean() == pytest.approx(1.0, rel=0.1)
    # the same seed gives the same field; another seed another
    np.testing.assert_array_equal(turbulence_at(centres, seed=5), turbulence_at(centres, seed=5))
    assert np.abs(turbulence_at(centres, seed=6) - turbulence_at(centres, seed=5)).max() > 0.1


# ------------------------------------------------------------------------------------------ mass-spring bodies

def test_a_total_mass_is_lumped_by_incident_edge_lengths():
    """Edges 1 m and 3 m long, 4 kg in all: the ends get half of their edge's share, the middle both halves."""
    scene = still_scene()
    group = scene.add_mass_spring([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [4.0, 0.0, 0.0]], [(0, 1), (1, 2)], mass=4.0,
                                  stiffness=10.0, damping=0.0)
    scene.add_force(solver.Wind(direction=(0.0, 0.0, 1.0), strength=1.0))  # 1 N on each vertex
    sim = solver.Simulation(scene, dt=H, integrator="euler")
    sim.step()
    acceleration = sim.state.particle_velocities(group)[:, 2] / H
    np.testing.assert_allclose(1.0 / acceleration, [0.5, 2.0, 1.5], rtol=1e-12)


def test_masses_may_be_given_per_vertex():
    scene = still_scene()
    group = scene.add_mass_spring([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]], [(0, 1)], mass=[1.0, 4.0], stiffness=1.0,
                                  damping=0.0)
    scene.add_force(solver.Wind(direction=(0.0, 0.0, 1.0), strength=2.0))
    np.testing.assert_allclose(forces_at_start(scene, group, [1.0, 4.0]), [[0.0, 0.0, 2.0]] * 2, rtol=1e-12)


def hanging_chain(n, spacing, total, stiffness, bending=0.0):
    vertices = np.column_stack([np.zeros(n), np.zeros(n), 2.0 - spacing * np.arange(n)])
    scene = solver.Scene(gravity=(0.0, 0.0, -G))
    group = scene.add_mass_spring(vertices, [(i, i + 1) for i in range(n - 1)], mass=total, stiffness=stiffness,
                                  damping=5.0, bending=bending, pinned=[0], name="Chain")
    return scene, group


def test_a_hanging_chain_stretches_as_springs_in_series():
    """Spring j carries the weight of the vertices below it, g sum_{i > j} m_i, and stretches by that over k."""
    n, spacing, total, k = 6, 0.1, 0.5, 200.0
    scene, group = hanging_chain(n, spacing, total, k)
    sim = solver.Simulation(scene, dt=0.01, integrator="implicit_euler")
    sim.step(2000)  # 20 s: the chain's slowest mode, damped by the springs' dampers, has long died out
    masses = np.full(n, total / (n - 1))
    masses[[0, -1]] /= 2.0
    tension = G * np.cumsum(masses[::-1])[::-1][1:]
    expected = 2.0 - np.concatenate([[0.0], np.cumsum(spacing + tension / k)])
    z = sim.state.particle_positions(group)[:, 2]
    # the total stretch is 2 cm; the equilibrium is reached to a micrometre
    np.testing.assert_allclose(z, expected, rtol=0.0, atol=1e-6)
    assert np.abs(sim.state.particle_velocities(group)).max() < 1e-6


def test_bending_springs_join_second_neighbours():
    chain = np.array([(i, i + 1) for i in range(4)])
    np.testing.assert_array_equal(second_neighbours(5, chain), [(0, 2), (1, 3), (2, 4)])
    # a square 0-1-2-3: the diagonals
    np.testing.assert_array_equal(second_neighbours(4, np.array([(0, 1), (1, 2), (2, 3), (3, 0)])), [(0, 2), (1, 3)])
    # a triangle has none: all its vertices are first neighbours
    assert second_neighbours(3, np.array([(0, 1), (1, 2), (2, 0)])).shape == (0, 2)


def test_a_bending_spring_shares_the_load_of_a_hanging_chain():
    """Three vertices hanging from the top one (pinned): the bending spring 0-2 (stiffness kb) carries part of the
    lower vertex's weight beside the edges 0-1 and 1-2 (k). With downward displacements u1, u2 the equilibrium is
    k (u2 - u1) - k u1 + m g = 0 at vertex 1 and -k (u2 - u1) - kb u2 + m g = 0 at vertex 2."""
    k, kb, m, spacing = 100.0, 50.0, 0.3, 0.2
    scene = solver.Scene(gravity=(0.0, 0.0, -G))
    group = scene.add_mass_spring([[0.0, 0.0, 0.0], [0.0, 0.0, -spacing], [0.0, 0.0, -2.0 * spacing]],
                                  [(0, 1), (1, 2)], mass=[m, m, m], stiffness=k, damping=2.0, bending=kb,
                                  pinned=[0])
    sim = solver.Simulation(scene, dt=0.01, integrator="implicit_euler")
    sim.step(2000)
    u1, u2 = np.linalg.solve([[-2.0 * k, k], [k, -k - kb]], [-m * G, -m * G])
    z = sim.state.particle_positions(group)[:, 2]
    np.testing.assert_allclose(z, [0.0, -spacing - u1, -2.0 * spacing - u2], rtol=0.0, atol=1e-9)
