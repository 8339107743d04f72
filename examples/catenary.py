"""A rope hanging between two pins settles on the catenary z = a cosh(x / a) - a cosh(span / 2a).

    .venv/bin/python -m examples.catenary        # writes out/examples/catenary.png

A 1 m rope (40 segments, r 5 mm, nearly no bending stiffness) pinned at both ends 0.8 m apart is drawn
as a circular arc of its length and left to settle for 8 s at dt = 1/240 s. The continuum catenary's
a solves length = 2 a sinh(span / 2a); the rope's lumped node weights and straight links put its exact
equilibrium O(1/N^2) away from it, and discrete_catenary_sag computes that equilibrium's sag exactly.
tests/solver/ropes/test_rope_physics.py asserts on what run() returns.
"""
import math

import numpy as np

from examples.plotting import pyplot, save
from quadric_solver.ropes.model import build_ropes, run_ropes


def catenary_parameter(length, span):
    """a with length = 2 a sinh(span / 2a), by bisection."""
    lo, hi = span / 20.0, 1e3 * span
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if 2 * mid * math.sinh(span / (2 * mid)) > length:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def discrete_catenary_sag(n_segments, length, span):
    """Mid-span sag of N equal rigid links with equal lumped node weights (exact discrete equilibrium):
    the vertical force drops by one node weight per node, so tan(theta_k) = (k + 1/2 - N/2) w / H."""
    seg = length / n_segments
    slope_index = np.arange(n_segments) + 0.5 - n_segments / 2.0
    lo, hi = 1e-6, 1e6  # horizontal tension in units of the node weight
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        reach = np.sum(seg * np.cos(np.arctan(slope_index / mid)))
        if reach > span:
            hi = mid
        else:
            lo = mid
    angles = np.arctan(slope_index / math.sqrt(lo * hi))
    return -np.min(np.concatenate([[0.0], np.cumsum(seg * np.sin(angles))]))


def run(length=1.0, span=0.8, n=40, dt=1.0 / 240.0, seconds=8.0):
    """Settle the rope: its nodes beside the catenary through them, the sags and how well it settled.

    ``x``, ``y``, ``z``: the nodes at the end, ``z_theory``: the catenary at x; ``sag_theory``: the
    catenary's mid-span sag, ``discrete_sag``: the exact equilibrium of n links; ``worst_length_error``:
    the largest relative segment length error of any substep; ``max_speed``: the fastest node at the end.
    """
    # drawn as a circular arc of the right length (sin(alpha)/alpha = span/length), then left to settle
    lo, hi = 1e-6, math.pi
    for _ in range(100):
        alpha = 0.5 * (lo + hi)
        lo, hi = (alpha, hi) if math.sin(alpha) / alpha > span / length else (lo, alpha)
    radius_arc = length / (2 * alpha)
    angles = np.linspace(-alpha, alpha, n + 1)
    points = np.column_stack([radius_arc * np.sin(angles), np.zeros(n + 1),
                              radius_arc * (math.cos(alpha) - np.cos(angles))])
    model, state = build_ropes([dict(points=points, radius=0.005, density=1200.0, young_modulus=1e3,
                                     shear_modulus=1e3, damping=4.0, pinned=(0, n))])
    _, _, worst = run_ropes(model, state, dt, int(seconds / dt))
    a = catenary_parameter(length, span)
    x, z = state.node_position[:, 0], state.node_position[:, 2]
    return dict(length=length, span=span, n=n, start=points, x=x, y=state.node_position[:, 1], z=z,
                z_theory=a * np.cosh(x / a) - a * math.cosh(span / (2 * a)), a=a,
                sag_theory=a * math.cosh(span / (2 * a)) - a, discrete_sag=discrete_catenary_sag(n, length, span),
                worst_length_error=worst, max_speed=np.max(np.abs(state.node_velocity)))


def main():
    plt = pyplot()
    result = run()
    a, span = result["a"], result["span"]
    dense = np.linspace(-0.5 * span, 0.5 * span, 400)
    figure, axes = plt.subplots(figsize=(8, 4.5))
    axes.plot(result["start"][:, 0], result["start"][:, 2], color="grey", linestyle=":", label="start (circular arc)")
    axes.plot(dense, a * np.cosh(dense / a) - a * math.cosh(span / (2 * a)), color="black", linewidth=1,
              label=f"theory: catenary, a = {a:.4f} m")
    axes.plot(result["x"], result["z"], "o", markersize=4, label=f"simulated: {result['n']} segments, settled")
    axes.set_aspect("equal")
    axes.set_xlabel("x [m]")
    axes.set_ylabel("z [m]")
    axes.set_title(f"Rope of length {result['length']} m between pins {span} m apart")
    axes.legend(fontsize="small", loc="upper center")
    path = save(figure, "catenary")
    worst = np.max(np.abs(result["z"] - result["z_theory"]))
    bound = abs(result["discrete_sag"] - result["sag_theory"]) + 1e-5 * result["length"]
    print(f"catenary: nodes within {1000 * worst:.3f} mm of the catenary (the test allows {1000 * bound:.3f} mm), "
          f"sag {1000 * result['sag_theory']:.2f} mm; plot {path}")


if __name__ == "__main__":
    main()
