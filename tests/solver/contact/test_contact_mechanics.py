"""Single-contact mechanics against closed-form rigid-body results.

Tolerances: with one smooth contact the solver's constraints are satisfied to
round-off after warm starting, so the remaining errors are the substep
(h = 1/2400 s here: an event can be late by one substep, and an impact speed
is off by at most g h) and the contact point sitting at half the resting
overlap (about 0.2% of the radius at most). Each tolerance below says which
of these it covers. The closed-form cases are also runnable examples (examples/): these tests
assert on what their run() returns.
"""
import math

import numpy as np
import pytest

import quadric_solver as solver
from examples import incline, rebound, slide_to_roll
from examples.rebound import drop_ball, rebound_apex_error

G = 9.81
FPS, SUBSTEPS = 240, 10
H = 1.0 / (FPS * SUBSTEPS)


# The last two put a sphere of one friction on a plane of another: they combine by geometric mean (solver.Material),
# sqrt(0.4 * 0.1) = sqrt(0.05 * 0.8) = 0.2. At 40 degrees that slides (tan 40 = 0.84 > 3.5 * 0.2) where the mean
# 0.25 or the larger 0.4 would roll; at 20 degrees it rolls (0.36 < 0.7) where the smaller 0.05 would slide.
@pytest.mark.parametrize("angle_deg, friction, plane_friction", [
    (20.0, 0.3, 0.3), (35.0, 0.25, 0.25), (10.0, 0.05, 0.05), (40.0, 0.1, 0.1), (40.0, 0.4, 0.1), (20.0, 0.05, 0.8)])
def test_sphere_on_incline_rolls_or_slides(angle_deg, friction, plane_friction):
    result = incline.run(angle_deg, friction, plane_friction, duration=0.5)
    # semi-implicit Euler reproduces v = a t exactly for constant a; 0.5% covers the lever-arm offset
    assert result["acceleration"] == pytest.approx(result["expected_acceleration"], rel=5e-3)
    # slip speed of the contact point: zero when rolling, g t (sin - 3.5 mu cos) when sliding
    assert result["slip"] == pytest.approx(result["expected_slip"], abs=5e-3 * result["speed"])
    # it never leaves the plane or sinks into it
    assert np.all(np.abs(result["heights"] - 0.1) < 0.002 * 0.1)


# the last: a sphere of friction 0.4 on a floor of 0.1 slides with their geometric mean, 0.2 (solver.Material); the
# mean 0.25 would roll 20% sooner, 58 ms or 140 substeps
@pytest.mark.parametrize("v0, friction, floor_friction", [(2.0, 0.2, 0.2), (1.0, 0.5, 0.5), (2.0, 0.4, 0.1)])
def test_sliding_sphere_starts_rolling_at_two_sevenths(v0, friction, floor_friction):
    result = slide_to_roll.run(v0, friction, floor_friction, radius=0.05, h=H)
    assert result["rolling_since"] is not None
    # the transition happens within one substep of the closed form
    assert abs(result["rolling_since"] - result["t_roll"]) <= 1.5 * H
    assert result["final_speed"] == pytest.approx(result["expected_final_speed"], rel=1e-3)


@pytest.mark.parametrize("phase", [k / 6 for k in range(6)])
def test_rebound_height_does_not_depend_on_where_in_a_substep_the_ball_lands(phase):
    # The drop is lengthened by a fraction of one substep's travel at impact, so the ball meets the floor at a
    # different moment within the substep each time. A contact still apart when it bounces must not start its
    # rebound from there: that put the apex up to (1 + e) v h too high (+2.2% here, +20% at h = 1/240 s).
    restitution = 0.3
    impact_speed = math.sqrt(2 * G * 1.0)
    drop = 1.0 + phase * impact_speed * H
    _, _, apex, _ = drop_ball(restitution, drop, H, seconds=1.0)
    # what is left is first order in h
    assert apex == pytest.approx(restitution ** 2 * drop, rel=rebound_apex_error(restitution, impact_speed, H))


@pytest.mark.parametrize("restitution, floor_restitution", [(0.6, 0.3), (0.3, 0.6)])
def test_restitutions_of_ball_and_floor_combine_by_maximum(restitution, floor_restitution):
    # solver.Material: restitution combines by maximum, so the ball rebounds to max(e1, e2)^2 h whichever of the
    # two is the ball's (the smaller one would give 0.09 h instead of 0.36 h); the bound is the first-order one
    # of the test above at this h, 0.8%
    drop = 1.0
    _, _, apex, _ = drop_ball(restitution, drop, H, seconds=1.0, floor_restitution=floor_restitution)
    combined = max(restitution, floor_restitution)
    error = rebound_apex_error(combined, math.sqrt(2 * G * drop), H)
    assert apex == pytest.approx(combined ** 2 * drop, rel=error)


def test_a_fast_spinning_ball_rebounds_to_e_squared_h():
    # Frictionless, so the spin stays and only the normal impulse acts. A bounce from a gap is split in two only
    # where turning barely changes the contact point's normal velocity within the substep: here the carried point
    # turns 0.4 rad a substep and gains about w^2 r h = 2 m/s of normal velocity, and a late half aimed at that
    # point did not lift the ball at all (apex 0). So this is the plain bounce: it may start up to one
    # substep's travel early, (1 + e) v h higher, plus the first-order terms of the test above.
    restitution, drop, h = 0.5, 1.0, 1 / 240
    _, energies, apex, sim = drop_ball(restitution, drop, h, seconds=1.2, friction=0.0, spin=100.0)
    impact_speed = math.sqrt(2 * G * drop)
    first_order = rebound_apex_error(restitution, impact_speed, h)
    expected = restitution ** 2 * drop
    assert expected * (1 - first_order) <= apex <= expected * (1 + first_order) + (1 + restitution) * impact_speed * h
    assert np.all(np.diff(energies) <= 1e-9 * energies[0])
    assert sim.state.angular_velocity[0, 1] == pytest.approx(100.0, rel=1e-12)


def test_a_frictionless_bounce_loses_at_most_one_minus_e_squared_of_the_kinetic_energy():
    # A normal impulse taking a contact point from approach v to rebound e v removes (1 - e^2) M v^2 / 2, with M
    # the effective mass at the point; M v^2 / 2 is at most the whole kinetic energy, so no substep may lose more
    # than (1 - e^2) of the kinetic energy it starts its contacts with (after gravity's kick), plus the
    # semi-implicit step's own m g^2 h^2 / 2. Tumbling ellipsoids hit off centre and spin up a hundredfold.
    # Nor may the total ever exceed its start: such impulses only take energy away, and free flight loses that
    # m g^2 h^2 / 2 a step (1.7e-4 of the total here) while the rotation, a second-order midpoint step keeping L
    # exactly, errs by (|w| h)^3 of the rotational energy a step: at the start spins (|w| h < 0.04) under 1e-6
    # of the total, the rotational energy being under 1% of it. What is left is round-off: 1e-9 of the total,
    # as in the drop tests below (fastmath's reassociation costs a few ulps a step).
    restitution, h = 0.9, 1 / 240
    rng = np.random.default_rng(5)
    for _ in range(24):
        scene = solver.Scene(gravity=(0.0, 0.0, -G))
        material = solver.Material(friction=0.0, restitution=restitution)
        scene.add_plane(material=material)
        q = rng.normal(size=4)
        scene.add_ellipsoid(rng.uniform(0.02, 0.08, 3), position=(0, 0, 0.5), orientation=q / np.linalg.norm(q),
                            angular_velocity=rng.normal(size=3) * 3, material=material)
        sim = solver.Simulation(scene, dt=h)
        mass = sim.model.mass[0]
        energy = start = sim.stats["kinetic_energy"] + mass * G * sim.state.position[0, 2]
        for _ in range(int(0.6 / h)):
            kinetic = sim.stats["kinetic_energy"]
            kicked = kinetic - mass * G * h * sim.state.linear_velocity[0, 2] + 0.5 * mass * (G * h) ** 2
            sim.step()
            new_energy = sim.stats["kinetic_energy"] + mass * G * sim.state.position[0, 2]
            loss_bound = (1 - restitution ** 2) * kicked + 0.5 * mass * (G * h) ** 2
            assert energy - new_energy <= loss_bound * (1 + 1e-9)
            assert new_energy <= start * (1 + 1e-9)
            energy = new_energy


@pytest.mark.parametrize("restitution", [0.3, 0.6, 0.9])
def test_rebound_height_is_e_squared_h(restitution):
    result = rebound.run(restitution, drop=1.0, h=H, seconds=1.6)
    # impact speed is off by at most g h (relative 2 g h / v ~ 0.2% in height); 1% covers it
    assert result["apex"] == pytest.approx(result["expected_apex"], rel=1e-2)
    # total energy never rises (round-off allowance only)
    energies = result["energies"]
    assert np.all(np.diff(energies) <= 1e-9 * energies[0])


# ball and floor with different arms combine by maximum (solver.Material), whichever of the two is the ball's
@pytest.mark.parametrize("arm, floor_arm", [(0.002, 0.002), (0.002, 0.0005), (0.0005, 0.002)])
def test_rolling_resistance_decelerates_at_five_sevenths_g_arm_over_radius(arm, floor_arm):
    radius, v0 = 0.1, 1.0
    scene = solver.Scene(gravity=(0.0, 0.0, -G))
    material = solver.Material(friction=0.8, rolling_friction=arm)
    scene.add_plane(material=solver.Material(friction=0.8, rolling_friction=floor_arm))
    scene.add_ellipsoid((radius,) * 3, position=(0, 0, radius), velocity=(v0, 0, 0),
                        angular_velocity=(0, v0 / radius, 0), material=material)
    sim = solver.Simulation(scene, dt=H)
    duration = 1.0
    sim.step(int(duration / H))
    deceleration = (v0 - sim.state.linear_velocity[0, 0]) / duration
    expected = 5.0 / 7.0 * G * max(arm, floor_arm) / radius  # documented in solver.Material
    assert deceleration == pytest.approx(expected, rel=5e-3)
    # still rolling without slip
    slip = sim.state.linear_velocity[0, 0] - radius * sim.state.angular_velocity[0, 1]
    assert abs(slip) < 1e-4 * v0


# ball and floor with different arms combine by maximum (solver.Material), whichever of the two is the ball's
@pytest.mark.parametrize("arm, floor_arm", [(0.001, 0.001), (0.001, 0.00025), (0.00025, 0.001)])
def test_spinning_friction_decays_spin_linearly(arm, floor_arm):
    radius, spin0 = 0.1, 20.0
    scene = solver.Scene(gravity=(0.0, 0.0, -G))
    material = solver.Material(friction=0.5, spinning_friction=arm)
    scene.add_plane(material=solver.Material(friction=0.5, spinning_friction=floor_arm))
    scene.add_ellipsoid((radius,) * 3, position=(0, 0, radius), angular_velocity=(0, 0, spin0), material=material)
    sim = solver.Simulation(scene, dt=H)
    mass = sim.model.mass[0]
    inertia = 0.4 * mass * radius ** 2
    rate = max(arm, floor_arm) * mass * G / inertia  # torque mu_s N over I
    duration = 0.5 * spin0 / rate
    sim.step(int(round(duration / H)))
    assert sim.state.angular_velocity[0, 2] == pytest.approx(spin0 - rate * duration, rel=5e-3)
    sim.step(int(round(duration / H)) + 200)
    assert abs(sim.state.angular_velocity[0, 2]) < 1e-6 * spin0  # stops, never reverses


def test_tumbling_ellipsoid_does_not_sink_into_the_floor():
    """An egg spun end over end on a frictionless floor: its long axis swings into the floor every half turn.

    The contact row sees the first-order motion of the contact point; the
    second-order swing of the surface (up to (a_max^2 - a_min^2) / a_min (w h)^2 / 2,
    1.8% of the small semi-axis per 1/240 s step at 20 rad/s) has to be predicted or the body
    sinks in. Bound: the pile's 1% of the smallest semi-axis. Energy may grow
    only by lifting the body out of such an overlap, m g times 1% of it.
    """
    semi_axes = (0.05, 0.02, 0.02)
    scene = solver.Scene(gravity=(0.0, 0.0, -G))
    material = solver.Material(friction=0.0)
    scene.add_plane(material=material)
    scene.add_ellipsoid(semi_axes, position=(0.0, 0.0, semi_axes[2]), angular_velocity=(0.0, 20.0, 0.0),
                        material=material)
    sim = solver.Simulation(scene, dt=1.0 / 240.0)
    mass = float(sim.model.mass[0])

    def energy():
        return float(sim.stats["kinetic_energy"]) + mass * G * float(sim.state.position[0, 2])

    start = energy()
    deepest = 0.0
    for _ in range(240):
        sim.step()
        deepest = max(deepest, sim.stats["max_penetration"])
    assert deepest < 0.01 * min(semi_axes)
    assert energy() <= start + mass * G * 0.01 * min(semi_axes)
