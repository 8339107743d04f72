"""A sphere thrown sliding along a floor starts rolling at t = 2 v0 / (7 mu g), at 5/7 of its speed.

    .venv/bin/python -m examples.slide_to_roll        # writes out/examples/slide_to_roll.png

Sliding friction mu m g slows the centre, v = v0 - mu g t, and spins the sphere up, r w = 5/2 mu g t,
until the two meet: then it rolls without slipping at 5/7 v0. A sphere of radius 5 cm, no spin at the
start, substep h = 1/2400 s. tests/solver/contact/test_contact_mechanics.py asserts on what run() returns.
"""
import math

import numpy as np

import quadric_solver as solver
from examples.plotting import pyplot, save

G = 9.81
H = 1.0 / (240 * 10)  # the substep: 240 frames a second, 10 substeps a frame


def run(v0, friction, floor_friction=None, radius=0.05, h=H):
    """Throw the sphere at ``v0`` and step it for twice the closed-form time to rolling.

    Returns that time (``t_roll``) beside the first time the contact point's slip fell below 1e-6 v0
    (``rolling_since``, None if it never did), the final speed beside 5/7 v0, and the centre's speed and the
    rim speed r w after every step (at ``times``). Sphere and floor frictions combine by geometric mean
    (solver.Material); ``friction`` in the result is the combined one.
    """
    scene = solver.Scene(gravity=(0.0, 0.0, -G))
    material = solver.Material(friction=friction)
    scene.add_plane(material=material if floor_friction is None else solver.Material(friction=floor_friction))
    scene.add_ellipsoid((radius,) * 3, position=(0, 0, radius), velocity=(v0, 0, 0), material=material)
    if floor_friction is not None:
        friction = math.sqrt(friction * floor_friction)
    sim = solver.Simulation(scene, dt=h)
    t_roll = 2.0 * v0 / (7.0 * friction * G)
    rolling_since = None
    speeds, rim_speeds = [], []
    for step in range(int(2.0 * t_roll / h)):
        sim.step()
        speeds.append(sim.state.linear_velocity[0, 0])
        rim_speeds.append(radius * sim.state.angular_velocity[0, 1])
        slip = speeds[-1] - rim_speeds[-1]
        if rolling_since is None and abs(slip) < 1e-6 * v0:
            rolling_since = (step + 1) * h
    return dict(v0=v0, friction=friction, h=h, t_roll=t_roll, rolling_since=rolling_since,
                final_speed=sim.state.linear_velocity[0, 0], expected_final_speed=5.0 * v0 / 7.0,
                times=h * np.arange(1, len(speeds) + 1), speeds=np.array(speeds), rim_speeds=np.array(rim_speeds))


def main():
    plt = pyplot()
    result = run(2.0, 0.2)
    v0, mu, t_roll = result["v0"], result["friction"], result["t_roll"]
    times = result["times"]
    figure, axes = plt.subplots(figsize=(8, 4.5))
    axes.plot(times, result["speeds"], linewidth=5, alpha=0.5, label="simulated centre speed v")
    axes.plot(times, result["rim_speeds"], linewidth=5, alpha=0.5, label="simulated rim speed r w")
    axes.plot(times, np.where(times < t_roll, v0 - mu * G * times, 5.0 / 7.0 * v0), "k--", linewidth=1,
              label="theory v = v0 - mu g t, then 5/7 v0")
    axes.plot(times, np.where(times < t_roll, 2.5 * mu * G * times, 5.0 / 7.0 * v0), "k:", linewidth=1,
              label="theory r w = 5/2 mu g t, then 5/7 v0")
    axes.axvline(t_roll, color="grey", linewidth=1, label=f"t = 2 v0 / (7 mu g) = {t_roll:.4f} s")
    axes.set_xlabel("time [s]")
    axes.set_ylabel("speed [m/s]")
    axes.set_title(f"Sliding to rolling: v0 = {v0} m/s, friction {mu}")
    axes.legend(fontsize="small", loc="center right")
    path = save(figure, "slide_to_roll")
    late = (result["rolling_since"] - t_roll) / result["h"]
    print(f"slide_to_roll: rolls {late:+.3f} substeps from 2 v0 / (7 mu g) = {t_roll:.4f} s (the test allows 1.5), "
          f"then at {result['final_speed'] / v0:.5f} v0 (theory 5/7 = {5 / 7:.5f}); plot {path}")


if __name__ == "__main__":
    main()
