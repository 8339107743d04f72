"""Particles beside bodies and ropes they do not reach (in a box container of their own): each runs as it would
alone. Particles that touch bodies are in test_particle_bodies.py.

These compile the body and rope kernels as well (minutes on a cold cache), unlike the other particle tests.
"""
import numpy as np
import pytest

import quadric_solver as solver

AWAY = 3.0  # the particles' box container stands this far along x from the bodies'


def scene_of(bodies: bool, ropes: bool, particles: bool):
    scene = solver.Scene()
    scene.add_plane(material=solver.Material(friction=0.4, restitution=0.3))
    scene.add_box_container((0.0, 0.0, 0.3), (0.4, 0.4, 0.3))
    scene.add_box_container((AWAY, 0.0, 0.3), (0.4, 0.4, 0.3))  # the particles' own
    if bodies:
        for k in range(3):
            scene.add_ellipsoid((0.05, 0.04, 0.03), position=(0.1 * k - 0.1, 0.0, 0.2 + 0.12 * k), name=f"E{k}")
    if ropes:
        scene.add_rope(np.column_stack([np.linspace(-0.2, 0.2, 9), np.full(9, 0.2), np.full(9, 0.5)]), pinned=(0,),
                       name="Cord")
    if particles:
        rng = np.random.default_rng(7)
        scene.add_particles(rng.uniform(-0.3, 0.3, size=(50, 3)) + (AWAY, 0.0, 0.5), radius=0.01,
                            velocities=rng.normal(size=(50, 3)), name="Sparks",
                            material=solver.Material(restitution=0.5))
        scene.add_mass_spring([[AWAY, -0.2, 0.4], [AWAY + 0.1, -0.2, 0.4], [AWAY + 0.2, -0.2, 0.4]], [(0, 1), (1, 2)],
                              mass=0.1, stiffness=100.0, damping=0.1, pinned=[0], name="Chain")
        scene.add_force(solver.Turbulence(0.5, size=0.2, bodies=(), ropes=()))  # on the particles alone
    return scene


@pytest.mark.parametrize("ropes", [False, True])
def test_particles_beside_bodies_and_ropes_run_as_they_would_alone(ropes):
    both = solver.Simulation(scene_of(True, ropes, True))
    mixed = both.run(frames=12)
    without = solver.Simulation(scene_of(True, ropes, False)).run(frames=12)
    alone = solver.Simulation(scene_of(False, False, True)).run(frames=12)
    # the same kernels in another compiled loop may round differently in the last bits (fastmath: docs/numba.md)
    np.testing.assert_allclose(mixed.body_poses, without.body_poses, rtol=0.0, atol=1e-12)
    if ropes:
        np.testing.assert_allclose(mixed.rope_nodes(0), without.rope_nodes(0), rtol=0.0, atol=1e-12)
    for group in range(2):
        np.testing.assert_allclose(mixed.particles(group), alone.particles(group), rtol=0.0, atol=1e-12)
    assert mixed.stats["phase_seconds"][:, mixed.phases.index("particles")].sum() > 0.0
    assert both.stats["particle_contacts"] >= 0 and both.state.particle_positions(1).shape == (3, 3)
