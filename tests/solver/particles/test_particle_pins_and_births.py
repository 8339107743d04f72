"""Pinned particles that follow a pin track (Scene.set_pin_track) and particles born over time and dying
(add_particles' birth_times and lifetimes), against closed forms, through the public API."""
import math
import re

import numpy as np
import pytest

import quadric_solver as solver

G = 9.81
EPS = np.finfo(float).eps
INTEGRATORS = ("symplectic_euler", "euler", "midpoint", "rk4", "implicit_euler")


def turn(axis, angle):
    """The unit quaternion (w, x, y, z) turning by angle about axis, and its rotation matrix."""
    axis = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    q = np.concatenate([[math.cos(angle / 2)], math.sin(angle / 2) * axis])
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return q, np.eye(3) + math.sin(angle) * k + (1 - math.cos(angle)) * k @ k


def sheet(columns, rows, spacing, corner):
    """A vertical quad grid in the xz plane (vertex r * columns + c at corner + (c, 0, -r) spacing) and its edges."""
    vertices = [np.add(corner, (c * spacing, 0.0, -r * spacing)) for r in range(rows) for c in range(columns)]
    edges = [(r * columns + c, r * columns + c + 1) for r in range(rows) for c in range(columns - 1)]
    edges += [(r * columns + c, (r + 1) * columns + c) for r in range(rows - 1) for c in range(columns)]
    return np.array(vertices), edges


# ------------------------------------------------------------------------------------------------ pin tracks

@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_pinned_particles_follow_a_moving_and_turning_track_at_every_frame(integrator):
    """A flag's two pinned corners ride a track of three keys that moves and turns about one fixed axis by more
    than slerp's 3.6 degrees between keys: slerp then turns by an angle linear in time, so pin p is at
    x(t) + R(phi(t)) R(phi_0)^T (p_0 - x_0) exactly, x and phi linear between keys, held after the last. Only
    rounding separates them: a few ulps of the metre-sized positions."""
    axis = (0.3, -0.2, 1.0)
    times = [0.0, 0.5, 1.0]
    places = np.array([[0.0, 0.0, 1.5], [0.6, 0.2, 1.8], [0.9, -0.4, 1.2]])
    angles = [0.3, 1.5, 2.4]
    vertices, edges = sheet(4, 3, 0.1, (0.0, 0.0, 1.6))
    scene = solver.Scene()
    pins = [0, 4]  # the left column's two top vertices
    flag = scene.add_mass_spring(vertices, edges, mass=0.2, stiffness=300.0, damping=0.2, pinned=pins, name="Flag")
    scene.set_pin_track(flag, times, [[*x, *turn(axis, a)[0]] for x, a in zip(places, angles)])
    fps, frames = 24, 36  # 1.46 s: past the last key
    recording = solver.Simulation(scene, integrator=integrator).run(frames=frames, fps=fps, substeps=10)
    local = (vertices[pins] - places[0]) @ turn(axis, angles[0])[1]  # rows: R(phi_0)^T (p_0 - x_0)
    for frame in range(frames):
        t = min(frame / fps, times[-1])
        k = min(int(np.searchsorted(times, t, side="right")) - 1, len(times) - 2)
        s = (t - times[k]) / (times[k + 1] - times[k])
        centre = places[k] + s * (places[k + 1] - places[k])
        rotation = turn(axis, angles[k] + s * (angles[k + 1] - angles[k]))[1]
        expected = centre + local @ rotation.T
        np.testing.assert_allclose(recording.particles(flag)[frame, pins], expected, rtol=0, atol=64 * EPS * 4.0,
                                   err_msg=f"frame {frame}")
    free = recording.particles(flag)[:, [3, 11]]
    assert np.linalg.norm(free[-1] - free[0], axis=1).min() > 0.5  # the cloth went along


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_a_chain_hanging_from_a_pin_moving_at_constant_velocity_swings_as_in_the_comoving_frame(integrator):
    """Galilean invariance: springs and their damping see only differences of positions and velocities, so a
    swinging chain (with bending) whose pin moves at a constant velocity V, started moving at V, is the chain of
    a fixed pin carried along by V t. Between the two runs only rounding differs: at most a few ulps of the
    positions (|V| t < 3 m) per step over the 480 steps (the implicit step's conjugate gradients run the same
    iterations on numbers that differ by as little)."""
    velocity = np.array([1.5, -0.5, 0.3])
    vertices = np.array([[0.0, 0.0, 1.0], [0.08, 0.0, 0.94], [0.16, 0.0, 0.88], [0.24, 0.0, 0.82]])
    edges = [(0, 1), (1, 2), (2, 3)]
    runs = []
    for moving in (False, True):
        scene = solver.Scene()
        chain = scene.add_mass_spring(vertices, edges, mass=0.3, stiffness=40.0, damping=0.5, bending=2.0,
                                      pinned=[0], velocities=np.tile(velocity if moving else np.zeros(3), (4, 1)))
        if moving:
            scene.set_pin_track(chain, [0.0, 10.0], [[*vertices[0], 1, 0, 0, 0],
                                                     [*(vertices[0] + 10.0 * velocity), 1, 0, 0, 0]])
        runs.append(solver.Simulation(scene, integrator=integrator).run(frames=48, fps=24, substeps=10)
                    .particles(chain))
    still, carried = runs
    t = np.arange(48)[:, None, None] / 24.0
    assert np.abs(still[:, 3] - still[0, 3]).max() > 0.05  # it swings
    np.testing.assert_allclose(carried - velocity * t, still, rtol=0, atol=480 * 8 * EPS * 3.0)


@pytest.mark.parametrize("integrator", ["implicit_euler", "symplectic_euler"])
def test_a_bob_hanging_from_a_pin_accelerating_upwards_stretches_its_spring_by_m_g_plus_a_over_k(integrator):
    """A mass m on a spring of stiffness k and damping c, hung from a pin that rises at a constant acceleration
    a (an elevator): once the start's bounce has died out (as exp(-c t / 2m) or faster) the spring holds
    m (g + a), so it is stretched by m (g + a) / k. Linearised backward Euler's steady state is exactly that
    balance (the pin's velocity over each step enters through df/dx v0 and the damping, and their parts cancel):
    rounding is left, a few ulps of the positions (150 m up after 10 s). Symplectic Euler sees the pin a step
    ahead of the bob in the damping: c a h less, so it stretches up to c a h / k less."""
    m, k, c, a, h, steps = 0.1, 100.0, 0.5, 3.0, 1.0 / 240.0, 2400
    scene = solver.Scene(gravity=(0.0, 0.0, -G))
    bob = scene.add_mass_spring([[0.0, 0.0, 1.0], [0.0, 0.0, 0.5]], [(0, 1)], mass=[1.0, m], stiffness=k, damping=c,
                                pinned=[0])
    times = h * np.arange(steps + 2)  # a key at every step: the track is a t^2 / 2 where the steps begin
    scene.set_pin_track(bob, times, [[0.0, 0.0, 1.0 + 0.5 * a * t * t, 1.0, 0.0, 0.0, 0.0] for t in times])
    sim = solver.Simulation(scene, dt=h, integrator=integrator)
    sim.step(steps)
    x = sim.state.particle_positions(bob)
    # the pin is on its track at the simulation's clock, a sum of steps: rounded by up to an ulp of it per step
    np.testing.assert_allclose(x[0], [0.0, 0.0, 1.0 + 0.5 * a * (steps * h) ** 2], rtol=2 * steps * EPS)
    np.testing.assert_array_equal(x[:, :2], 0.0)
    stretch = (x[0, 2] - x[1, 2]) - 0.5
    expected = m * (G + a) / k
    rounding = 64 * EPS * x[0, 2]
    settling = m * a / k * (1.0 - h * c / m) ** (steps / 2)  # the start's bounce, 2e-11 of it left
    lag = 0.0 if integrator == "implicit_euler" else c * a * h / k
    assert expected - lag - settling - rounding <= stretch <= expected + settling + rounding, stretch - expected


@pytest.mark.parametrize("group, times, poses, message", [
    (3, [0.0], [[0, 0, 0, 1, 0, 0, 0]], "set_pin_track: group 3 is out of range: expected a group index from 0 to 1"),
    (1, [0.0], [[0, 0, 0, 1, 0, 0, 0]], "particles 'Dust' (group 1): track needs pinned particles to move; the "
                                        "group has none"),
    (0, [], np.zeros((0, 7)), "mass-spring 'Flag' (group 0): track.times must hold at least one time, got none"),
    (0, [0.0, 0.0], [[0, 0, 0, 1, 0, 0, 0]] * 2, "mass-spring 'Flag' (group 0): track.times must be strictly "
                                                 "increasing"),
    (0, [0.0, 1.0], [[0, 0, 0, 1, 0, 0, 0]], "mass-spring 'Flag' (group 0): track.poses must be 2 poses "
                                             "(x, y, z, w, qx, qy, qz)"),
    (0, [0.0], [[0, 0, 0, 2, 0, 0, 0]], "mass-spring 'Flag' (group 0): track.poses orientations must be unit "
                                        "quaternions"),
    (0, [0.0], [[0, math.nan, 0, 1, 0, 0, 0]], "mass-spring 'Flag' (group 0): track.poses contains NaN"),
])
def test_bad_pin_tracks_name_the_group_and_the_field(group, times, poses, message):
    scene = solver.Scene()
    scene.add_mass_spring([[0, 0, 1], [0.1, 0, 1]], [(0, 1)], mass=0.1, stiffness=10.0, damping=0.0, pinned=[0],
                          name="Flag")
    scene.add_particles([[0, 0, 1]], name="Dust")
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        scene.set_pin_track(group, times, poses)
    assert all("track" not in spec for spec in scene.particles)


# ----------------------------------------------------------------------------------------- births and deaths

def test_a_particle_born_at_its_birth_time_stays_put_before_and_falls_freely_after():
    """Before t_b it is exactly where it is born; from t_b on x = x_b + v (t - t_b) and
    z = z_b + v_z (t - t_b) - g (t - t_b)^2 / 2. The birth falls between steps and the particle starts where it
    would have been (its free fall carried over the part of the step it missed), so what is left is symplectic
    Euler's lead of g h (t - t_b) / 2 in z, and rounding. A particle born at 0 is the same as one without a
    birth time."""
    births = [0.0, 0.3, 0.51234]
    start = np.array([[0.0, 0.0, 2.0], [1.0, 0.0, 3.0], [2.0, 0.5, 4.0]])
    velocity = np.array([[0.1, 0.0, 0.0], [0.5, 0.0, 2.0], [-0.4, 0.3, 1.0]])
    scene = solver.Scene(gravity=(0.0, 0.0, -G))
    group = scene.add_particles(start, velocities=velocity, birth_times=births, name="Sparks")
    fps, substeps = 24, 10
    h = 1.0 / (fps * substeps)
    recording = solver.Simulation(scene).run(frames=30, fps=fps, substeps=substeps)
    path = recording.particles(group)
    plain = solver.Scene(gravity=(0.0, 0.0, -G))
    plain.add_particles(start[:1], velocities=velocity[:1])
    np.testing.assert_array_equal(path[:, 0], solver.Simulation(plain).run(30, fps, substeps).particles(0)[:, 0])
    for k in (1, 2):
        t = np.arange(30) / fps
        waiting = t < births[k]
        assert waiting.sum() >= 7
        np.testing.assert_array_equal(path[waiting, k], np.broadcast_to(start[k], (waiting.sum(), 3)))
        tau = t[~waiting] - births[k]
        free = start[k] + velocity[k] * tau[:, None] - 0.5 * G * np.outer(tau ** 2, [0.0, 0.0, 1.0])
        np.testing.assert_allclose(path[~waiting, k, :2], free[:, :2], rtol=0, atol=1e-12)
        lead = path[~waiting, k, 2] - free[:, 2]
        assert np.all(np.abs(lead) <= 0.5 * G * h * tau + 1e-12), (k, lead)


def test_a_particle_dies_where_its_lifetime_ends_and_stays_there():
    """Born at 0.2 s for 0.5 s: it falls until the first step that starts at or after 0.7 s (by the
    simulation's clock, a sum of steps: a step late at most), then stays where it stopped: between
    z_b - g (0.5 s)^2 / 2 and that a step later with symplectic Euler's lead of g h t / 2."""
    scene = solver.Scene(gravity=(0.0, 0.0, -G))
    group = scene.add_particles([[0.0, 0.0, 5.0]], birth_times=[0.2], lifetimes=0.5)
    fps, substeps = 24, 10
    h = 1.0 / (fps * substeps)
    path = solver.Simulation(scene).run(frames=36, fps=fps, substeps=substeps).particles(group)[:, 0, 2]
    dead = np.arange(36) / fps >= 0.7 + h
    np.testing.assert_array_equal(path[dead], path[-1])
    latest = 0.5 + h  # it may stop a step late, where rounding of the clock puts a step just before 0.7 s
    assert 5.0 - 0.5 * G * latest * (latest + h) - 1e-12 <= path[-1] <= 5.0 - 0.5 * G * 0.5 ** 2
    assert np.all(np.diff(path[~dead][5:]) < 0.0)  # falling until then


def test_unborn_and_dead_particles_neither_touch_nor_push():
    """Colliding particles of radius 0.05 on a floor. One falls straight through the place of one not born yet,
    and through one that died resting on the floor: it falls freely (x and y untouched) and lands on the floor,
    and neither of the others moves. Once born, the waiting one falls onto the first and rests on it."""
    r = 0.05
    scene = solver.Scene(gravity=(0.0, 0.0, -G))
    scene.add_plane()
    start = [[0.0, 0.0, 1.0], [0.0, 0.0, 0.5], [0.3, 0.0, r], [0.3, 0.0, 0.8]]
    group = scene.add_particles(start, radius=r, particle_collisions=True, birth_times=[0.0, 1.0, 0.0, 0.0],
                                lifetimes=[100.0, 100.0, 0.1, 100.0])
    fps = 24
    path = solver.Simulation(scene).run(frames=60, fps=fps, substeps=10).particles(group)
    t = np.arange(60) / fps
    waiting = t < 1.0
    np.testing.assert_array_equal(path[waiting, 1], np.broadcast_to(start[1], (waiting.sum(), 3)))
    np.testing.assert_array_equal(path[:, 2], np.broadcast_to(start[2], (60, 3)))  # died before it was reached
    for k in (0, 3):
        assert np.all(path[:, k, :2] == path[0, k, :2])
        assert path[-1, k, 2] == pytest.approx(r, abs=1e-12)  # through the others, onto the floor
    assert path[-1, 1, 2] > path[-1, 0, 2] + 1.5 * r  # born, it landed on the first


@pytest.mark.parametrize("change, message", [
    (dict(birth_times=[0.0, -1.0, 0.0]), "birth_times must be >= 0, got birth_times[1] = -1"),
    (dict(birth_times=[0.0, 1.0]), "birth_times must be 3 times in s (one per particle)"),
    (dict(birth_times=[0.0, math.nan, 1.0]), "birth_times contains NaN or infinity"),
    (dict(birth_times=0.5), "birth_times must be 3 times in s (one per particle)"),
    (dict(lifetimes=0.0), "lifetimes must be positive and finite, got 0.0"),
    (dict(lifetimes=[1.0, 0.0, 1.0]), "lifetimes must be positive, got lifetimes[1] = 0"),
    (dict(lifetimes=[1.0, 2.0]), "lifetimes must be one number or 3 times in s (one per particle)"),
    (dict(birth_times=[0.0, 1.0, 2.0], pinned=[0]), "birth_times cannot be given for a group with pinned particles"),
])
def test_bad_birth_times_and_lifetimes_name_the_group_and_the_field(change, message):
    scene = solver.Scene()
    with pytest.raises(ValueError, match="^" + re.escape(f"particles 'Sparks' (group 0): {message}")):
        scene.add_particles(**{"positions": [[0, 0, 0], [1, 0, 0], [2, 0, 0]], "name": "Sparks", **change})


# ------------------------------------------------------------------------------------------------------ files

def test_pin_tracks_birth_times_and_lifetimes_keep_through_scene_files(tmp_path):
    """Saved and loaded, the scene is the same (its content hash too) and runs the same; a scene without them
    writes no key for them, so scenes from before keep their hash."""
    scene = solver.Scene()
    flag = scene.add_mass_spring([[0, 0, 1], [0.1, 0, 1], [0.2, 0, 1]], [(0, 1), (1, 2)], mass=0.1, stiffness=50.0,
                                 damping=0.1, pinned=[0], name="Flag")
    scene.set_pin_track(flag, [0.0, 0.5], [[0, 0, 1, 1, 0, 0, 0], [0.5, 0, 1.2, *turn((0, 0, 1), 1.0)[0]]])
    scene.add_particles([[0, 0, 2], [0, 0, 3]], birth_times=[0.1, 0.2], lifetimes=[0.3, 5.0], name="Sparks")
    path = tmp_path / "scene.json"
    scene.save(path)
    loaded = solver.Scene.load(path)
    assert loaded.to_dict() == scene.to_dict()
    assert loaded.content_hash() == scene.content_hash()
    first, again = (solver.Simulation(s).run(frames=20) for s in (scene, loaded))
    for group in range(2):
        np.testing.assert_array_equal(first.particles(group), again.particles(group))
    plain = solver.Scene()
    plain.add_particles([[0, 0, 2]])
    plain.add_mass_spring([[0, 0, 1], [0.1, 0, 1]], [(0, 1)], mass=0.1, stiffness=50.0, damping=0.1, pinned=[0])
    assert all(not {"track", "birth_times", "lifetimes"} & set(spec) for spec in plain.to_dict()["particles"])


def test_a_bad_pin_track_in_a_file_names_the_json_path(tmp_path):
    scene = solver.Scene()
    flag = scene.add_mass_spring([[0, 0, 1], [0.1, 0, 1]], [(0, 1)], mass=0.1, stiffness=50.0, damping=0.1,
                                 pinned=[0])
    scene.set_pin_track(flag, [0.0, 0.5], [[0, 0, 1, 1, 0, 0, 0]] * 2)
    document = scene.to_dict()
    document["particles"][0]["track"]["times"] = [0.5, 0.0]
    path = tmp_path / "bad.json"
    path.write_text(__import__("json").dumps(document))
    with pytest.raises(solver.SceneFileError,
                       match="^" + re.escape(f"{path}: particles[0].track.times must be strictly increasing")):
        solver.Scene.load(path)
