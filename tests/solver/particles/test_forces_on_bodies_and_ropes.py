"""Force objects on rigid bodies (at the centre of mass, N per body) and ropes (per metre of rope).

References: the discrete update the solver documents (v <- (v + h F / m) / (1 + h c / m) each substep, then
x <- x + h v), and its closed-form limits: free flight under a constant force, exponential decay and terminal
velocity under drag, a harmonic pull's period, and a rope in a uniform crosswind hanging straight at
tan(theta) = w / (mu g).
These compile the body and rope kernels (minutes on a cold cache).
"""
import math

import numpy as np
import pytest

import quadric_solver as solver

H = 1.0 / 240.0


def ball(scene, position=(0.0, 0.0, 1.0), velocity=(0.0, 0.0, 0.0), **kwargs):
    return scene.add_ellipsoid((0.1, 0.1, 0.1), position=position, velocity=velocity, density=500.0, **kwargs)


def mass_of(sim, body):
    return float(sim.model.mass[body])


def test_wind_pushes_a_body_at_its_centre_as_a_constant_force():
    scene = solver.Scene(gravity=(0.0, 0.0, 0.0))
    body = ball(scene)
    scene.add_force(solver.Wind(direction=(1.0, 0.0, 0.0), strength=3.0))
    sim = solver.Simulation(scene, dt=H)
    m = mass_of(sim, body)
    n = 120
    sim.step(n)
    # v_k = k h F / m; x_n = x_0 + h sum_k v_k = x_0 + h^2 F / m n (n + 1) / 2 (symplectic Euler)
    np.testing.assert_allclose(sim.state.linear_velocity[body], [n * H * 3.0 / m, 0.0, 0.0], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(sim.state.position[body], [H * H * 3.0 / m * n * (n + 1) / 2, 0.0, 1.0], rtol=1e-10,
                               atol=1e-14)
    # and the continuous answer F t^2 / 2m, to within the scheme's h F t / 2m
    t = n * H
    assert abs(sim.state.position[body][0] - 3.0 * t * t / (2 * m)) <= 1.0001 * H * 3.0 * t / (2 * m)
    assert np.all(sim.state.angular_velocity[body] == 0.0)  # a force at the centre of mass never turns it


def test_drag_slows_a_body_geometrically_and_by_exp_minus_c_t_over_m():
    scene = solver.Scene(gravity=(0.0, 0.0, 0.0))
    body = ball(scene, velocity=(2.0, -1.0, 0.5))
    scene.add_force(solver.Drag(0.8))
    sim = solver.Simulation(scene, dt=H)
    m = mass_of(sim, body)
    n = 480
    sim.step(n)
    a = H * 0.8 / m
    exact_discrete = np.array([2.0, -1.0, 0.5]) / (1.0 + a) ** n
    np.testing.assert_allclose(sim.state.linear_velocity[body], exact_discrete, rtol=1e-11)
    # (1 + a)^-n = exp(-n a + n a^2 / 2 - ...): within n a^2 of the continuous decay
    continuous = np.array([2.0, -1.0, 0.5]) * math.exp(-0.8 * n * H / m)
    np.testing.assert_allclose(sim.state.linear_velocity[body], continuous, rtol=n * a * a)


def test_a_falling_body_with_drag_reaches_the_terminal_velocity_m_g_over_c():
    scene = solver.Scene()
    body = ball(scene, position=(0.0, 0.0, 100.0))
    scene.add_force(solver.Drag(20.0))
    sim = solver.Simulation(scene, dt=H)
    m = mass_of(sim, body)
    sim.step(int(60 * m / 20.0 / H))  # 60 time constants m / c
    np.testing.assert_allclose(sim.state.linear_velocity[body], [0.0, 0.0, -m * 9.81 / 20.0], rtol=1e-9, atol=1e-12)


def test_a_harmonic_attractor_swings_a_body_with_period_two_pi_sqrt_m_over_k():
    scene = solver.Scene(gravity=(0.0, 0.0, 0.0))
    body = ball(scene, position=(0.3, 0.0, 1.0))
    k = 40.0
    scene.add_force(solver.Attractor(point=(0.0, 0.0, 1.0), strength=k, falloff=-1.0))
    sim = solver.Simulation(scene, dt=H)
    omega = math.sqrt(k / mass_of(sim, body))
    period = 2.0 * math.pi / omega
    steps = round(period / H)
    xs = []
    for _ in range(steps):
        sim.step()
        xs.append(sim.state.position[body][0])
    t = H * np.arange(1, steps + 1)
    # symplectic Euler keeps the amplitude within omega h / 2 and runs fast by (omega h)^2 / 24 in phase
    bound = 0.3 * (omega * H + omega * t[-1] * (omega * H) ** 2 / 24.0 + omega * abs(steps * H - period))
    assert np.max(np.abs(np.array(xs) - 0.3 * np.cos(omega * t))) < bound
    assert bound < 0.03  # the check is tight: a tenth of the amplitude would be a wrong period


def test_forces_skip_fixed_and_kinematic_bodies_and_those_not_named():
    scene = solver.Scene(gravity=(0.0, 0.0, 0.0))
    named = ball(scene, position=(0.0, 0.0, 1.0))
    unnamed = ball(scene, position=(1.0, 0.0, 1.0))
    fixed = ball(scene, position=(2.0, 0.0, 1.0), fixed=True)
    kinematic = ball(scene, position=(3.0, 0.0, 1.0), kinematic=True)
    scene.add_force(solver.Wind(direction=(0.0, 1.0, 0.0), strength=2.0, bodies=[named, fixed, kinematic]))
    sim = solver.Simulation(scene, dt=H)
    sim.step(10)
    assert sim.state.linear_velocity[named][1] > 0.0
    for body in (unnamed, fixed, kinematic):
        assert np.all(sim.state.linear_velocity[body] == 0.0), body
        assert np.all(sim.state.position[body] == [float(body), 0.0, 1.0]), body


def test_a_force_that_acts_on_no_body_leaves_a_pile_bit_for_bit_unchanged():
    def pile(with_force):
        scene = solver.Scene()
        scene.add_plane()
        for k in range(4):
            scene.add_ellipsoid((0.05, 0.04, 0.03), position=(0.02 * k, 0.0, 0.05 + 0.1 * k))
        if with_force:
            scene.add_force(solver.Wind(direction=(1.0, 0.0, 0.0), strength=5.0, bodies=(), ropes=()))
        return solver.Simulation(scene).run(frames=10)

    np.testing.assert_array_equal(pile(True).body_poses, pile(False).body_poses)


def rope_points(n, length=1.0, height=2.0):
    return np.column_stack([np.linspace(0.0, length, n), np.zeros(n), np.full(n, height)])


def test_a_free_rope_in_wind_accelerates_at_w_over_mu_whatever_its_node_count():
    """Forces on ropes are per metre, so a rope's motion does not depend on how finely it is cut."""
    radius, density, w = 0.01, 1100.0, 0.2
    mu = density * math.pi * radius ** 2
    n_steps = 60
    for nodes in (5, 17):
        scene = solver.Scene(gravity=(0.0, 0.0, 0.0))
        scene.add_rope(rope_points(nodes), radius=radius, density=density)
        scene.add_force(solver.Wind(direction=(0.0, 1.0, 0.0), strength=w))
        sim = solver.Simulation(scene, dt=H)
        sim.step(n_steps)
        velocity = sim.state.rope_state.node_velocity
        # every node accelerates at w / mu: the rope translates without bending or stretching
        np.testing.assert_allclose(velocity[:, 1], n_steps * H * w / mu, rtol=1e-9)
        np.testing.assert_allclose(velocity[:, [0, 2]], 0.0, atol=1e-9 * n_steps * H * w / mu)


def test_a_falling_rope_with_drag_reaches_mu_g_over_c():
    radius, density, c = 0.01, 1100.0, 0.5  # c in N s/m per metre of rope
    mu = density * math.pi * radius ** 2
    scene = solver.Scene()
    scene.add_rope(rope_points(9, height=50.0), radius=radius, density=density)
    scene.add_force(solver.Drag(c))
    sim = solver.Simulation(scene, dt=H)
    sim.step(int(40 * mu / c / H))  # 40 time constants mu / c
    np.testing.assert_allclose(sim.state.rope_state.node_velocity[:, 2], -mu * 9.81 / c, rtol=1e-9)


def test_a_pinned_rope_in_a_crosswind_hangs_straight_at_atan_w_over_mu_g():
    radius, density, w = 0.005, 1100.0, 0.5
    mu = density * math.pi * radius ** 2
    n = 11
    points = np.column_stack([np.zeros(n), np.zeros(n), np.linspace(2.0, 1.0, n)])  # hanging straight down
    scene = solver.Scene()
    scene.add_rope(points, radius=radius, density=density, pinned=(0,), damping=4.0, young_modulus=1e4)
    scene.add_force(solver.Wind(direction=(1.0, 0.0, 0.0), strength=w))
    sim = solver.Simulation(scene, dt=H)
    sim.step(240 * 6)
    nodes = sim.state.rope_nodes(0)
    expected = math.atan2(w, mu * 9.81)
    # every segment lies at the same angle from the vertical: a uniform load gives a straight rope
    d = np.diff(nodes, axis=0)
    angles = np.arctan2(d[:, 0], -d[:, 2])
    np.testing.assert_allclose(angles, expected, atol=2e-3)
    assert 0.5 < expected < 1.2  # a real deflection (about 43 degrees), not a hanging rope


@pytest.mark.parametrize("field, value, message", [
    ("bodies", [5], "names body 5, which does not exist"),
    ("bodies", [-1], "bodies"),
    ("ropes", [0], "names rope 0, which does not exist"),
    ("bodies", ["a"], "bodies"),
])
def test_bad_body_and_rope_selections_name_the_field(field, value, message):
    scene = solver.Scene()
    ball(scene)
    ball(scene, position=(1.0, 0.0, 1.0))
    with pytest.raises(ValueError, match=message) as error:
        scene.add_force(solver.Wind(direction=(1.0, 0.0, 0.0), strength=1.0, **{field: value}))
    assert field in str(error.value)


def test_forces_on_bodies_and_ropes_survive_a_scene_file(tmp_path):
    scene = solver.Scene()
    ball(scene)
    scene.add_rope(rope_points(4))
    scene.add_force(solver.Wind(direction=(1.0, 0.0, 0.0), strength=1.0, bodies=[0], ropes=()))
    scene.add_force(solver.Drag(0.3, ropes=[0]))
    path = tmp_path / "scene.json"
    scene.save(path)
    loaded = solver.Scene.load(path)
    assert loaded.forces == scene.forces
    assert loaded.content_hash() == scene.content_hash()
    assert loaded.forces[0]["bodies"] == [0] and loaded.forces[0]["ropes"] == []
