"""The particle integrators against closed forms: orders of convergence, the damped oscillator, the projectile with
linear drag, symplectic Euler's bounded energy, and implicit Euler on a spring far too stiff for the step."""
import math

import numpy as np
import pytest

import quadric_solver as solver

MASS = 1.0
OMEGA = 2.0 * math.pi       # rad/s: one period per second
STIFFNESS = MASS * OMEGA ** 2
REST = 1.0                  # m, the spring's rest length
AMPLITUDE = 0.1             # m, the starting stretch


def oscillator(integrator, dt, damping=0.0, stiffness=STIFFNESS):
    """A particle on a spring along x from a pinned anchor at the origin, released at rest stretched by AMPLITUDE.

    The spring stays along x, so its force -k (x - L) - c v is exactly linear: a harmonic oscillator.
    """
    scene = solver.Scene(gravity=(0.0, 0.0, 0.0))
    group = scene.add_particles([[0.0, 0.0, 0.0], [REST + AMPLITUDE, 0.0, 0.0]], mass=MASS, pinned=[0],
                                name="Bob")
    scene.add_force(solver.Springs(group, [(0, 1)], stiffness, damping, rest_lengths=[REST]))
    return solver.Simulation(scene, dt=dt, integrator=integrator), group


def stretch(sim, group):
    return sim.state.particle_positions(group)[1, 0] - REST


def error_after_one_period(integrator, dt):
    """The distance in phase space (x, v / omega) from the exact state after one period: both the amplitude and
    the phase errors count (at the peak alone, the phase error would enter only squared)."""
    sim, group = oscillator(integrator, dt)
    sim.step(round(1.0 / dt))
    speed = sim.state.particle_velocities(group)[1, 0]
    return math.hypot(stretch(sim, group) - AMPLITUDE, speed / OMEGA)


@pytest.mark.parametrize("integrator, dt, order", [("euler", 1e-3, 1), ("midpoint", 4e-3, 2), ("rk4", 1e-2, 4)])
def test_explicit_integrators_converge_at_their_order(integrator, dt, order):
    """Halving the step divides the global error by 2^order, up to the next term of the error's expansion in h.

    That term is of relative size (omega h) times a constant of order one: at omega h <= 0.063 it moves the ratio by
    a few per cent (Euler's amplitude grows as exp(omega^2 h T / 2), which gives the ratio 2 + omega^2 h T / 2 =
    2.02 here), inside the 15% allowed.
    """
    coarse = error_after_one_period(integrator, dt)
    fine = error_after_one_period(integrator, dt / 2)
    assert fine > 1e-12  # far above rounding, so the ratio measures the method
    assert coarse / fine == pytest.approx(2.0 ** order, rel=0.15)


def test_rk4_follows_the_damped_oscillator():
    zeta = 0.1
    damping = 2.0 * zeta * math.sqrt(STIFFNESS * MASS)
    dt, seconds = 1.0 / 200.0, 2.0
    sim, group = oscillator("rk4", dt, damping=damping)
    omega_d = OMEGA * math.sqrt(1.0 - zeta ** 2)
    worst = 0.0
    for k in range(1, round(seconds / dt) + 1):
        sim.step()
        t = k * dt
        exact = AMPLITUDE * math.exp(-zeta * OMEGA * t) * (
            math.cos(omega_d * t) + zeta / math.sqrt(1.0 - zeta ** 2) * math.sin(omega_d * t))
        worst = max(worst, abs(stretch(sim, group) - exact))
    # RK4's amplification differs from exp(lambda h) by |lambda h|^5 / 120 per step, |lambda| = omega for a
    # damped oscillator: over T / h steps that is omega T (omega h)^4 / 120 of the amplitude; twice that allowed
    assert worst < 2.0 * OMEGA * seconds * (OMEGA * dt) ** 4 / 120.0 * AMPLITUDE


def test_rk4_follows_the_projectile_with_linear_drag():
    mass, drag, g = 0.2, 0.4, 9.81
    tau = mass / drag  # s
    v0 = np.array([6.0, 2.0, 8.0])
    scene = solver.Scene(gravity=(0.0, 0.0, -g))
    group = scene.add_particles([[0.0, 0.0, 0.0]], velocities=[v0], mass=mass)
    scene.add_force(solver.Drag(drag))
    dt, seconds = 0.01, 1.5
    sim = solver.Simulation(scene, dt=dt, integrator="rk4")
    sim.step(round(seconds / dt))
    terminal = np.array([0.0, 0.0, -g * tau])
    decay = math.exp(-seconds / tau)
    velocity = terminal + (v0 - terminal) * decay
    position = terminal * seconds + (v0 - terminal) * tau * (1.0 - decay)
    # RK4 on dv/dt = -(v - v_inf) / tau: (h / tau)^5 / 120 per step, (T / tau) (h / tau)^4 / 120 in all,
    # relative to the speeds (v0 - v_inf) and, times tau, the distance; twice that allowed
    bound = 2.0 * seconds / tau * (dt / tau) ** 4 / 120.0 * np.linalg.norm(v0 - terminal)
    assert np.abs(sim.state.particle_velocities(group)[0] - velocity).max() < bound
    assert np.abs(sim.state.particle_positions(group)[0] - position).max() < bound * tau


def test_symplectic_euler_keeps_the_amplitude_over_a_hundred_periods():
    """Symplectic Euler keeps a modified energy exactly, so the amplitude stays within O((omega h)^2) of the
    start for ever; explicit Euler's would have grown by exp(omega^2 h T / 2) = e^20 over the same run."""
    dt = 1.0 / 100.0
    sim, group = oscillator("symplectic_euler", dt)  # the default integrator

    def largest_stretch_over_a_period():
        largest = 0.0
        for _ in range(round(1.0 / dt)):
            sim.step()
            largest = max(largest, abs(stretch(sim, group)))
        return largest

    first = largest_stretch_over_a_period()
    sim.step(98 * round(1.0 / dt))
    last = largest_stretch_over_a_period()
    # the orbit is a fixed ellipse within (omega h)^2 / 8 of the circle; sampling its peak once a step is as fine
    assert abs(first - AMPLITUDE) < (OMEGA * dt) ** 2 / 4.0 * AMPLITUDE
    assert abs(last - first) < (OMEGA * dt) ** 2 / 4.0 * AMPLITUDE


STIFF = 1e8  # N/m on 1 kg: omega = 10^4 rad/s, omega h = 42 at h = 1/240, twenty times past explicit stability


def test_an_explicit_step_diverges_on_a_spring_far_too_stiff_for_it():
    sim, group = oscillator("symplectic_euler", 1.0 / 240.0, stiffness=STIFF)
    with pytest.raises(solver.SimulationDiverged) as error:
        sim.run(frames=24, fps=24, substeps=10)
    assert error.value.group == group and error.value.particle == 1 and error.value.body is None
    assert "particle 1 of particles 'Bob' (group 0) became non-finite" in str(error.value)
    assert error.value.recording.frames >= 1  # the finished frames are kept


def test_implicit_euler_is_stable_on_the_same_spring():
    """Backward Euler on an undamped oscillator multiplies the amplitude by 1 / sqrt(1 + (omega h)^2) per step;
    the spring is along a fixed axis, so the linearised step is the exact backward Euler step."""
    h = 1.0 / 240.0
    sim, group = oscillator("implicit_euler", h, stiffness=STIFF)
    recording = sim.run(frames=24, fps=24, substeps=10)
    stretches = np.abs(recording.particles(group)[:, 1, 0] - REST)
    decay = 1.0 / math.sqrt(1.0 + STIFF / MASS * h * h)
    bound = AMPLITUDE * decay ** (10.0 * np.arange(recording.frames))
    assert np.all(stretches <= bound * (1.0 + 1e-6) + 1e-15)
    assert np.all(np.isfinite(recording.particles(group)))
    sim, _ = oscillator("implicit_euler", h, stiffness=STIFF)
    sim.step()
    assert sim.stats["cg_iterations"] == 1  # the system is diagonal here: Jacobi-preconditioned CG is exact at once
