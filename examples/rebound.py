"""A ball dropped from a height h rebounds to e^2 h, e being the restitution.

    .venv/bin/python -m examples.rebound        # writes out/examples/rebound.png

A ball of radius 5 cm (friction 0.5) falls 1 m onto a plane of the same material at the substep
h = 1/2400 s. Its rebound apex is e^2 times the drop, up to terms first order in the substep
(rebound_apex_error). tests/solver/contact/test_contact_mechanics.py asserts on what run() returns.
"""
import math

import numpy as np

import quadric_solver as solver
from examples.plotting import pyplot, save

G = 9.81
H = 1.0 / (240 * 10)  # the substep: 240 frames a second, 10 substeps a frame
RESTITUTIONS = (0.3, 0.6, 0.9)


def drop_ball(restitution, drop, h, seconds, friction=0.5, spin=0.0, radius=0.05, floor_restitution=None):
    """A ball of the given radius dropped from ``drop`` above a plane, spinning at ``spin`` rad/s about y.

    The floor has the ball's material, or the ball's friction and ``floor_restitution`` where that is given.

    Returns the heights of its bottom and the total energies (kinetic plus potential) after each step, and the
    apex of the first rebound (the highest height after the lowest one of the first 0.6 s).
    """
    scene = solver.Scene(gravity=(0.0, 0.0, -G))
    material = solver.Material(friction=friction, restitution=restitution)
    floor_material = material if floor_restitution is None else solver.Material(friction=friction,
                                                                                restitution=floor_restitution)
    scene.add_plane(material=floor_material)
    scene.add_ellipsoid((radius,) * 3, position=(0, 0, radius + drop), angular_velocity=(0.0, spin, 0.0),
                        material=material)
    sim = solver.Simulation(scene, dt=h)
    mass = sim.model.mass[0]
    heights, energies = [], []
    for _ in range(int(seconds / h)):
        sim.step()
        heights.append(sim.state.position[0, 2] - radius)
        energies.append(sim.stats["kinetic_energy"] + mass * G * sim.state.position[0, 2])
    heights = np.array(heights)
    impact = int(np.argmin(heights[: int(0.6 / h)]))
    return heights, np.array(energies), heights[impact:].max(), sim


def rebound_apex_error(restitution, impact_speed, h):
    """Relative error of a rebound apex that is first order in the substep h, each term relative to the height.

    The speed the rebound has at the end of the substep it starts in (the approach predicted over the whole
    substep, and gravity over all of it: at most (1 + e) g h too fast, 2 (1 + e) g h / (e v)), the semi-implicit
    apex (g h / (e v) low) and the impact speed (2 g h / v).
    """
    v_up = restitution * impact_speed
    return 2 * (1 + restitution) * G * h / v_up + G * h / v_up + 2 * G * h / impact_speed


def run(restitution, drop=1.0, h=H, seconds=1.6):
    """Drop the ball once: the simulated apex of its first rebound beside the closed form e^2 drop.

    Also the heights of its bottom and the total energies after each step (at ``times``), and the first-order
    error bound of the apex at this substep.
    """
    heights, energies, apex, _ = drop_ball(restitution, drop, h, seconds)
    return dict(restitution=restitution, drop=drop, h=h, times=h * np.arange(1, len(heights) + 1),
                heights=heights, energies=energies, apex=apex, expected_apex=restitution ** 2 * drop,
                first_order_error=rebound_apex_error(restitution, math.sqrt(2 * G * drop), h))


def main():
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(8, 4.5))
    ratios = []
    for restitution in RESTITUTIONS:
        result = run(restitution)
        ratios.append(result["apex"] / result["expected_apex"])
        drawn = axes.plot(result["times"], result["heights"], label=f"simulated, e = {restitution}")
        axes.axhline(result["expected_apex"], color=drawn[0].get_color(), linestyle="--", linewidth=1,
                     label=f"theory e² h = {result['expected_apex']:.2f} m")
    axes.set_xlabel("time [s]")
    axes.set_ylabel("height of the ball's bottom [m]")
    axes.set_title(f"Rebound from a 1 m drop, substep {H * 1000:.3f} ms")
    axes.legend(fontsize="small", ncol=2, loc="upper right")
    path = save(figure, "rebound")
    ratios = ", ".join(f"{ratio:.4f}" for ratio in ratios)
    print(f"rebound: apex / (e^2 h) = {ratios} for e = {RESTITUTIONS} (the test allows 1%); plot {path}")


if __name__ == "__main__":
    main()
