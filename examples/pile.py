"""A thousand ellipsoids dropped into a box: every overlap stays under 1% of the smallest semi-axis, and the
pile comes to rest.

    .venv/bin/python -m examples.pile        # writes out/examples/pile.png (about a minute or two)

Semi-axes uniform in [0.02, 0.05] m, random orientations, released from a grid up to 1.3 m high (impacts at
about 4 m/s) above an open box just wide enough; 2 s at dt = 1/240 s. There is no closed form for a pile; what
is checked are the bounds: the deepest overlap of any contact at any substep, the drop included, against 1% of
the smallest semi-axis, and the kinetic energy at the end against 1e-3 of the potential energy of the pile's
mass lowered by 0.1 m. tests/solver/test_bodies_and_piles.py asserts on what run() returns; the other tests
drop smaller piles of build_pile.
"""
import math

import numpy as np

import quadric_solver as solver
from examples.plotting import pyplot, save

G = 9.81


def build_pile(n, seed=0):
    """n ellipsoids (semi-axes in [0.02, 0.05] m) on a grid above an open box just wide enough."""
    rng = np.random.default_rng(seed)
    scene = solver.Scene(gravity=(0, 0, -G))
    material = solver.Material(friction=0.5)
    per_side = int(math.ceil(math.sqrt(n / 4)))
    spacing = 0.105
    half = 0.5 * per_side * spacing
    scene.add_box_container(center=(0, 0, 0.5), half_extents=(half, half, 0.5), material=material)
    for k in range(n):
        ix, iy, iz = k % per_side, (k // per_side) % per_side, k // (per_side * per_side)
        q = rng.normal(size=4)
        scene.add_ellipsoid(rng.uniform(0.02, 0.05, 3),
                            position=((ix + 0.5) * spacing - half, (iy + 0.5) * spacing - half, 0.06 + iz * spacing),
                            orientation=q / np.linalg.norm(q), material=material)
    return scene


def run(n=1000, seconds=2.0, dt=1 / 240, seed=0):
    """Drop the pile: the deepest overlap and the kinetic energy after every step beside their bounds.

    ``deepest`` and ``kinetic_energy`` are per step (at ``times``); ``overlap_bound`` is 1% of the
    ``smallest`` semi-axis, ``rest_bound`` the settled kinetic energy; ``lowest`` is the lowest centre
    and ``widest`` the largest |x| or |y| of any centre at the end, against the box's ``half_width``.
    """
    scene = build_pile(n, seed)
    smallest = min(min(b["semi_axes"]) for b in scene.bodies)
    sim = solver.Simulation(scene, dt=dt)
    deepest = np.empty(int(round(seconds / dt)))
    kinetic_energy = np.empty(deepest.size)
    for k in range(deepest.size):
        sim.step()
        deepest[k] = sim.stats["max_penetration"]
        kinetic_energy[k] = sim.stats["kinetic_energy"]
    mass = sim.model.mass.sum()
    return dict(n=n, times=dt * np.arange(1, deepest.size + 1), deepest=deepest, kinetic_energy=kinetic_energy,
                smallest=smallest, overlap_bound=0.01 * smallest, rest_bound=1e-3 * mass * G * 0.1,
                lowest=sim.state.position[:, 2].min(), widest=np.abs(sim.state.position[:, :2]).max(),
                half_width=scene.boxes[0]["half_extents"][0])


def main():
    plt = pyplot()
    result = run()
    times = result["times"]
    figure, (overlap, energy) = plt.subplots(2, 1, figsize=(8, 7), sharex=True)
    overlap.plot(times, 1000 * result["deepest"], label="simulated: deepest overlap of any contact")
    overlap.axhline(1000 * result["overlap_bound"], color="black", linestyle="--", linewidth=1,
                    label="bound: 1% of the smallest semi-axis")
    overlap.set_ylabel("overlap [mm]")
    overlap.set_title(f"Pile of {result['n']} ellipsoids dropped into a box")
    overlap.legend(fontsize="small", loc="center right")
    energy.semilogy(times, np.maximum(result["kinetic_energy"], 1e-12), label="simulated kinetic energy")
    energy.axhline(result["rest_bound"], color="black", linestyle="--", linewidth=1,
                   label="at rest: 1e-3 of m g (0.1 m)")
    energy.set_xlabel("time [s]")
    energy.set_ylabel("kinetic energy [J]")
    energy.legend(fontsize="small", loc="lower left")
    path = save(figure, "pile")
    print(f"pile: deepest overlap {100 * result['deepest'].max() / result['smallest']:.2f}% of the smallest "
          f"semi-axis (bound 1%), kinetic energy at {times[-1]:.1f} s {result['kinetic_energy'][-1]:.2e} J "
          f"(at rest below {result['rest_bound']:.2e} J); plot {path}")


if __name__ == "__main__":
    main()
