"""Particles against rigid bodies, two-way: resting on a body's surface at the particle's radius, Coulomb sliding on
a body, momentum exchanged with a free body as the closed forms say, kinematic bodies as moving obstacles.

These compile the body kernels as well (minutes on a cold cache).
"""

import numpy as np
import pytest

import quadric_solver as solver
from quadric_solver.math3d import quat_to_matrix_np

G = 9.81
FPS, SUBSTEPS = 24, 10
H = 1.0 / (FPS * SUBSTEPS)


def _ellipsoid_distance(p, semi_axes, centre):
    """Distance from p (outside) to an axis-aligned ellipsoid, by dense sampling refined by Newton on the
    nearest-point conditions: independent of the solver's bisection."""
    a = np.asarray(semi_axes, dtype=float)
    q = np.asarray(p, dtype=float) - centre
    u, v = np.meshgrid(np.linspace(0, 2 * np.pi, 721), np.linspace(0, np.pi, 361))
    surface = np.stack([a[0] * np.cos(u) * np.sin(v), a[1] * np.sin(u) * np.sin(v), a[2] * np.cos(v)], -1)
    k = np.argmin(((surface - q) ** 2).sum(-1))
    x = surface.reshape(-1, 3)[k]
    t = float((q - x) @ (x / a ** 2)) / float(np.sum((x / a ** 2) ** 2))  # q = x + t x / a^2 at the nearest point
    for _ in range(60):  # Newton on sum (a_i q_i / (t + a_i^2))^2 = 1 from the sampled start
        r = a * q / (t + a ** 2)
        f = r @ r - 1.0
        t -= f / (-2.0 * np.sum(r * r / (t + a ** 2)))
    x = a ** 2 * q / (t + a ** 2)
    return float(np.linalg.norm(q - x))


def _drop(body, radius=0.05, at=(0.0, 0.0), height=0.1, friction=1.0, seconds=2.0, floor=False):
    """A particle let go ``height`` above the top of ``body`` (a callable adding it), run for ``seconds``."""
    scene = solver.Scene(gravity=(0.0, 0.0, -G))
    if floor:
        scene.add_plane(material=solver.Material(friction=friction))
    top = body(scene)
    group = scene.add_particles([[at[0], at[1], top + radius + height]], radius=radius,
                                material=solver.Material(friction=friction))
    sim = solver.Simulation(scene)
    recording = sim.run(frames=round(seconds * FPS), fps=FPS, substeps=SUBSTEPS)
    return sim, recording, group


def test_a_particle_with_a_radius_rests_on_a_fixed_box_at_its_radius():
    """Projected out along the face normal each substep: it rests at exactly r above the top face, at rest."""
    sim, recording, group = _drop(lambda scene: (scene.add_body(solver.Box((0.3, 0.3, 0.1)), fixed=True), 0.1)[1],
                                  at=(0.1, -0.05))
    z = recording.particles(group)[-FPS:, 0, 2]
    np.testing.assert_allclose(z, 0.1 + 0.05, rtol=0, atol=1e-12)
    assert np.all(sim.state.particle_velocities(group) == 0.0)
    np.testing.assert_allclose(recording.particles(group)[-1, 0, :2], (0.1, -0.05), rtol=0, atol=1e-12)


def test_a_particle_with_a_radius_rests_on_a_fixed_ellipsoid_at_its_radius():
    """Off the top, where the surface slopes by about 17 degrees, less than the friction angle (45): static
    friction holds it. Its distance from the surface, found in the test by sampling and Newton, is r to within the
    reference's Newton (1e-12 of the size). Each substep gravity moves it by d = g h^2 and the projection and
    friction's move-back return it along the surface's normal and tangent at the moved point, which leaves it off
    by at most d^2 / R (R >= c^2 / a + r, the smallest curvature radius of the surface it rests on): that bounds
    its creep over a second."""
    semi_axes, centre = (0.3, 0.2, 0.15), np.array([0.0, 0.0, 0.0])
    sim, recording, group = _drop(lambda scene: (scene.add_ellipsoid(semi_axes, fixed=True), 0.15)[1],
                                  at=(0.12, 0.05))
    final = recording.particles(group)[-1, 0]
    assert _ellipsoid_distance(final, semi_axes, centre) == pytest.approx(0.05, abs=1e-10)
    assert np.linalg.norm(sim.state.particle_velocities(group)) < 1e-15  # stopped, to the normal's rounding
    creep = np.linalg.norm(recording.particles(group)[-1, 0] - recording.particles(group)[-FPS - 1, 0])
    assert creep <= FPS * SUBSTEPS * (G * H * H) ** 2 / (0.15 ** 2 / 0.3 + 0.05)


def test_a_particle_rests_on_a_dynamic_body_resting_on_the_floor_and_weighs_on_it():
    """The box carries the particle: the particle stays r above the box's top face (measured in the box's frame, as
    it tilts by the off-centre load), does not move relative to it, and the box does not sink into the floor
    beyond the solver's slop."""
    half = np.array([0.2, 0.2, 0.05])
    box = {}

    def body(scene):
        box["index"] = scene.add_body(solver.Box(tuple(half)), position=(0.0, 0.0, half[2]), mass=1.0,
                                      material=solver.Material(friction=1.0))
        return 2 * half[2]

    sim, recording, group = _drop(body, at=(0.1, 0.05), floor=True, seconds=2.0)
    b = box["index"]
    for frame in range(-FPS, 0):
        pose = recording.body_poses[frame, b]
        local = quat_to_matrix_np(pose[3:]).T @ (recording.particles(group)[frame, 0] - pose[:3])
        assert local[2] - half[2] == pytest.approx(0.05, abs=1e-12)
        assert np.all(np.abs(local[:2]) < half[:2])
    # at rest: over the last second the grain and the box move by less than the slop (their velocities at the end
    # of a substep hold the grain's last impulse, about g h, which the box's floor contacts take out next substep)
    path = recording.particles(group)[-FPS - 1:, 0]
    assert np.linalg.norm(path - path[-1], axis=1).max() < sim.settings.slop
    poses = recording.body_poses[-FPS - 1:, b, :3]
    assert np.linalg.norm(poses - poses[-1], axis=1).max() < sim.settings.slop
    corners = np.array([[sx, sy, -1.0] for sx in (-1, 1) for sy in (-1, 1)]) * half
    lowest = (quat_to_matrix_np(sim.state.orientation[b]) @ corners.T)[2].min() + sim.state.position[b, 2]
    assert lowest > -sim.settings.slop - 1e-9


def test_a_particle_sliding_on_a_fixed_box_stops_after_v0_squared_over_2_mu_g():
    """As on a plane (test_particle_contacts.py): within v0 h, at r above the top face, stopped, not creeping."""
    mu, v0, radius = 0.4, 2.0, 0.05
    scene = solver.Scene(gravity=(0.0, 0.0, -G))
    scene.add_body(solver.Box((2.0, 0.5, 0.1)), position=(1.5, 0.0, -0.1), fixed=True,
                   material=solver.Material(friction=mu))
    group = scene.add_particles([[0.0, 0.0, radius]], velocities=[[v0, 0.0, 0.0]], radius=radius,
                                material=solver.Material(friction=mu))
    sim = solver.Simulation(scene)
    path = sim.run(frames=48, fps=FPS, substeps=SUBSTEPS).particles(group)[:, 0]
    assert path[-1, 0] == pytest.approx(v0 ** 2 / (2.0 * mu * G), abs=v0 * H)
    assert np.all(np.abs(path[:, 2] - radius) < 1e-12)
    assert np.all(sim.state.particle_velocities(group) == 0.0)


def _free_box_and_particle(particle_at, velocity, mass=0.5, restitution=1.0, friction=0.0, radius=0.05):
    """No gravity: a free box of 2 kg at the origin and one particle; returns (sim, group)."""
    scene = solver.Scene(gravity=(0.0, 0.0, 0.0))
    scene.add_body(solver.Box((0.2, 0.15, 0.1)), mass=2.0,
                   material=solver.Material(friction=friction, restitution=restitution))
    group = scene.add_particles([particle_at], velocities=[velocity], mass=mass, radius=radius,
                                material=solver.Material(friction=friction, restitution=restitution))
    return solver.Simulation(scene), group


def _momenta(sim, group, mass=0.5, box_mass=2.0, half=(0.2, 0.15, 0.1)):
    """Total linear momentum, and angular momentum about the origin (the box's own I_world w included)."""
    state = sim.state
    x, v = state.particle_positions(group)[0], state.particle_velocities(group)[0]
    X, V, w = state.position[0], state.linear_velocity[0], state.angular_velocity[0]
    hx, hy, hz = half
    inertia = box_mass / 3.0 * np.diag([hy * hy + hz * hz, hx * hx + hz * hz, hx * hx + hy * hy])
    R = quat_to_matrix_np(state.orientation[0])
    linear = mass * v + box_mass * V
    angular = mass * np.cross(x, v) + box_mass * np.cross(X, V) + R @ inertia @ R.T @ w
    return linear, angular


def test_a_head_on_elastic_hit_on_a_free_body_follows_the_1d_collision_formula():
    """e = 1, no friction, through the centre: v' = (m - M)/(m + M) v, V' = 2 m / (m + M) v, no spin."""
    m, M, v = 0.5, 2.0, 3.0
    sim, group = _free_box_and_particle([0.0, 0.0, 0.4], [0.0, 0.0, -v])
    sim.run(frames=12, fps=FPS, substeps=SUBSTEPS)
    np.testing.assert_allclose(sim.state.particle_velocities(group)[0], [0, 0, -(m - M) / (m + M) * v], atol=1e-12)
    np.testing.assert_allclose(sim.state.linear_velocity[0], [0, 0, -2 * m / (m + M) * v], atol=1e-12)
    np.testing.assert_allclose(sim.state.angular_velocity[0], 0.0, atol=1e-12)


def test_an_off_centre_hit_conserves_linear_and_angular_momentum():
    """Along the top face's normal, 0.12 m off the centre: the box spins up, and momentum and angular momentum
    about the origin are those of the start to rounding (the impulse acts along the particle's path, so the
    particle's projection out of the box moves it along its velocity and changes neither)."""
    sim, group = _free_box_and_particle([0.12, 0.05, 0.4], [0.0, 0.0, -3.0])
    linear0, angular0 = _momenta(sim, group)
    sim.run(frames=12, fps=FPS, substeps=SUBSTEPS)
    linear, angular = _momenta(sim, group)
    assert np.linalg.norm(sim.state.angular_velocity[0]) > 1.0  # it did hit off centre
    np.testing.assert_allclose(linear, linear0, rtol=0, atol=1e-13)
    np.testing.assert_allclose(angular, angular0, rtol=0, atol=1e-13)


def test_an_oblique_hit_with_friction_conserves_linear_momentum():
    """Friction and a slanted path: linear momentum still to rounding (equal and opposite impulses). The angular
    momentum about the origin changes by no more than the projection's m |depth x v'| (depth <= |v| h, |v'| <= |v|)
    plus the friction's torque about the grain's centre, which a point particle cannot take up as spin: r J_t with
    J_t <= mu J_n <= mu (1 + e) m |v|."""
    sim, group = _free_box_and_particle([-0.1, 0.05, 0.3], [2.0, 0.5, -3.0], restitution=0.3, friction=0.6)
    linear0, angular0 = _momenta(sim, group)
    sim.run(frames=12, fps=FPS, substeps=SUBSTEPS)
    linear, angular = _momenta(sim, group)
    assert np.linalg.norm(sim.state.linear_velocity[0]) > 0.1
    np.testing.assert_allclose(linear, linear0, rtol=0, atol=1e-13)
    speed = np.linalg.norm([2.0, 0.5, -3.0])
    m, r, mu, e = 0.5, 0.05, 0.6, 0.3
    assert np.linalg.norm(angular - angular0) <= m * speed * H * speed + r * mu * (1 + e) * m * speed


def test_a_kinematic_body_bats_a_particle_away_at_twice_its_speed():
    """A kinematic box at 1 m/s hits a particle at rest, e = 1, no gravity: an infinitely heavy body returns the
    particle at 2 V (the elastic formula with M -> infinity); the box is not slowed."""
    V = 1.0
    scene = solver.Scene(gravity=(0.0, 0.0, 0.0))
    bat = scene.add_body(solver.Box((0.1, 0.1, 0.1)), position=(-0.3, 0.0, 0.0), kinematic=True,
                         material=solver.Material(restitution=1.0, friction=0.0))
    scene.set_kinematic_track(bat, [0.0, 2.0], [[-0.3, 0, 0, 1, 0, 0, 0], [-0.3 + 2 * V, 0, 0, 1, 0, 0, 0]])
    group = scene.add_particles([[0.0, 0.0, 0.0]], radius=0.02, material=solver.Material(restitution=1.0))
    sim = solver.Simulation(scene)
    sim.run(frames=12, fps=FPS, substeps=SUBSTEPS)
    np.testing.assert_allclose(sim.state.particle_velocities(group)[0], [2 * V, 0, 0], atol=1e-9)
    np.testing.assert_allclose(sim.state.linear_velocity[bat], [V, 0, 0], atol=1e-9)


@pytest.mark.parametrize("shape", [solver.Cylinder(0.15, 0.1), solver.Capsule(0.1, 0.1),
                                   solver.Superellipsoid((0.15, 0.15, 0.1), (0.5, 0.5)),
                                   solver.ConvexHull([[x, y, z] for x in (-.15, .15) for y in (-.15, .15)
                                                      for z in (-.1, .1)])])
def test_particles_rest_on_every_shape_family(shape):
    """Dropped on the top of a fixed body of each other family: they rest at r above its highest point (the top
    is flat, or for the capsule and superellipsoid the pole, which the particle falls straight onto), to the
    distance query's accuracy: exact for the closed forms and the hull (GJK ends exactly on polytopes), within
    convex_distance.CURVED_TOLERANCE of the size (1e-7 x 0.35 m) for the superellipsoid."""
    top = {"Cylinder": 0.1, "Capsule": 0.2, "Superellipsoid": 0.1, "ConvexHull": 0.1}[type(shape).__name__]
    sim, recording, group = _drop(lambda scene: (scene.add_body(shape, fixed=True), top)[1], seconds=1.0)
    final = recording.particles(group)[-1, 0]
    assert final[2] - top == pytest.approx(0.05, abs=1e-12 if type(shape).__name__ != "Superellipsoid" else 3.5e-8)
    assert np.linalg.norm(sim.state.particle_velocities(group)[0]) < G * H


def test_many_particles_on_many_bodies_stay_out_of_them():
    """A rain of 400 particles on a 5 x 5 grid of fixed ellipsoids and boxes of different sizes (the broad phase's
    grid with bodies over several cells): after a second none is nearer than r to a body, by the box's distance in
    closed form and the ellipsoid's by the test's own sampling and Newton."""
    radius = 0.01
    scene = solver.Scene(gravity=(0.0, 0.0, -G))
    scene.add_plane()
    rng = np.random.default_rng(5)
    bodies = []
    for i in range(5):
        for j in range(5):
            centre = np.array([0.3 * i, 0.3 * j, 0.1])
            size = rng.uniform(0.05, 0.1, 3)
            if (i + j) % 2:
                scene.add_ellipsoid(tuple(size), position=tuple(centre), fixed=True)
            else:
                scene.add_body(solver.Box(tuple(size)), position=tuple(centre), fixed=True)
            bodies.append(((i + j) % 2 == 1, centre, size))
    group = scene.add_particles(rng.uniform((-0.1, -0.1, 0.4), (1.3, 1.3, 0.8), (400, 3)), radius=radius)
    sim = solver.Simulation(scene)
    sim.run(frames=24, fps=FPS, substeps=SUBSTEPS)
    x = sim.state.particle_positions(group)
    near = 0
    for ellipsoid, centre, size in bodies:
        local = x - centre
        if not ellipsoid:
            out = np.maximum(np.abs(local) - size, 0.0)
            distance = np.where(np.any(out > 0, axis=1), np.linalg.norm(out, axis=1),
                                (np.abs(local) - size).max(axis=1))
            assert distance.min() >= radius - 1e-12
            near += np.count_nonzero(distance < 2 * radius)
        else:
            assert np.all(np.sum((local / size) ** 2, axis=1) > 1.0)  # outside, so the reference applies
            for p in x[np.sum((local / (size + 2 * radius)) ** 2, axis=1) < 1.0]:
                assert _ellipsoid_distance(p, size, centre) >= radius - 1e-10
                near += 1
    assert near > 20 and sim.stats["particle_contacts"] > 0
