"""A rod clamped at one end sags under its own weight: tip sag q L^4 / (8 E I), less a geometric term.

    .venv/bin/python -m examples.cantilever        # writes out/examples/cantilever.png

A stiff cable (E = 2 GPa, G = E / 2.8, r 5 mm, L 1 m, 1200 kg/m^3) clamped horizontal at one end settles
for 5 s at dt = 1/240 s, in 10, 20 and 40 segments. The small-deflection sag is q L^4 / (8 E I); the rod is
inextensible, so the exact (elastica) sag is smaller by a term of relative size c eps^2, eps = q L^3 / (E I)
(cantilever_sag_theory). The discretisation error falls as 1/N^2. tests/solver/ropes/test_rope_physics.py
asserts on what run() returns.
"""
import math

import numpy as np
from numpy.polynomial import Polynomial

from examples.plotting import pyplot, save
from quadric_solver.ropes.model import build_ropes, run_ropes

G = 9.81
STIFF = dict(radius=0.005, density=1200.0, young_modulus=2e9, shear_modulus=2e9 / 2.8, damping=10.0)
SEGMENTS = (10, 20, 40)


def cantilever_sag_theory(length, radius, density, young_modulus):
    """Tip sag of a clamped inextensible rod under its own weight: (small-deflection sag, exact sag, eps).

    Leading order q L^4 / (8 E I); the rod is inextensible, so the exact (elastica) sag is smaller by a
    geometric term of relative size c eps^2, eps = q L^3 / (E I). c follows from the perturbation series of
    E I theta'' = -q (L - s) cos(theta), theta(0) = 0, theta'(L) = 0, in units L = 1:
    theta = eps th1 + eps^3 th3, th1'' = -(1 - s), th3'' = (1 - s) th1^2 / 2, y = int sin(theta).
    """
    q = density * math.pi * radius ** 2 * G
    bending = young_modulus * math.pi * radius ** 4 / 4.0
    eps = q * length ** 3 / bending
    s = Polynomial([0.0, 1.0])
    one_minus_s = 1.0 - s
    th1 = (1.0 - one_minus_s ** 3) / 6.0
    th3_rate = (one_minus_s * th1 ** 2 / 2.0).integ(lbnd=1.0)  # th3'(1) = 0
    th3 = th3_rate.integ(lbnd=0.0)                                # th3(0) = 0
    linear = th1.integ(lbnd=0.0)(1.0)                             # = 1/8
    third = (th3 - th1 ** 3 / 6.0).integ(lbnd=0.0)(1.0)           # sin(t) = t - t^3/6
    assert math.isclose(linear, 1.0 / 8.0, rel_tol=1e-12)
    sag_linear = q * length ** 4 / (8.0 * bending)
    return sag_linear, sag_linear * (1.0 + third / linear * eps ** 2), eps


def settled_cantilever(n_segments, dt, length=1.0, seconds=5.0, **params):
    """Clamp a straight rod of n_segments at node 0 and let it settle: its nodes, tip sag, largest relative
    segment length error of any substep and the fastest node speed at the end."""
    points = np.column_stack([np.linspace(0.0, length, n_segments + 1), np.zeros((n_segments + 1, 2))])
    model, state = build_ropes([dict(points=points, clamped=(0,), **params)])
    _, _, worst = run_ropes(model, state, dt, int(round(seconds / dt)))
    return dict(nodes=state.node_position.copy(), sag=-state.node_position[-1, 2], worst_length_error=worst,
                max_speed=np.max(np.abs(state.node_velocity)))


def run(segments=SEGMENTS, dt=1.0 / 240.0, seconds=5.0, length=1.0, params=STIFF):
    """The settled rod at each segment count beside the closed-form tip sags (``sag_linear``, ``sag_exact``).

    ``sags``, ``worst_length_error``, ``max_speed`` and ``nodes`` are dicts by segment count.
    """
    sag_linear, sag_exact, eps = cantilever_sag_theory(length, params["radius"], params["density"],
                                                       params["young_modulus"])
    rods = {n: settled_cantilever(n, dt, length=length, seconds=seconds, **params) for n in segments}
    return dict(length=length, dt=dt, sag_linear=sag_linear, sag_exact=sag_exact, eps=eps,
                sags={n: rod["sag"] for n, rod in rods.items()},
                worst_length_error={n: rod["worst_length_error"] for n, rod in rods.items()},
                max_speed={n: rod["max_speed"] for n, rod in rods.items()},
                nodes={n: rod["nodes"] for n, rod in rods.items()})


def main():
    plt = pyplot()
    result = run()
    length, sag_linear, sag_exact = result["length"], result["sag_linear"], result["sag_exact"]
    figure, (shape, errors) = plt.subplots(1, 2, figsize=(11, 4.5))
    s = np.linspace(0.0, length, 200) / length
    shape.plot(s * length, -sag_linear * s ** 2 * (6.0 - 4.0 * s + s ** 2) / 3.0, color="black", linewidth=1,
               label="theory, small deflection: q x² (6L² - 4Lx + x²) / 24EI")
    shape.axhline(-sag_exact, color="grey", linestyle="--", linewidth=1, label="theory, exact (elastica) tip sag")
    for n, nodes in result["nodes"].items():
        shape.plot(nodes[:, 0], nodes[:, 2], "o-", markersize=3, linewidth=1, label=f"simulated, {n} segments")
    shape.set_xlabel("x [m]")
    shape.set_ylabel("z [m]")
    shape.set_title(f"Cantilever under its own weight (eps = qL³/EI = {result['eps']:.2f})")
    shape.set_ylim(-2.0 * sag_linear, 0.1 * sag_linear)  # room for the legend below the rod
    shape.legend(fontsize="small", loc="lower left")
    counts = np.array(sorted(result["sags"]))
    relative = np.array([abs(result["sags"][n] / sag_exact - 1.0) for n in counts])
    errors.loglog(counts, relative, "o-", label="simulated |sag / exact sag - 1|")
    errors.loglog(counts, relative[0] * (counts[0] / counts) ** 2, "k--", linewidth=1, label="1/N² (theory's order)")
    errors.minorticks_off()
    errors.set_xticks(counts, [str(n) for n in counts])
    errors.set_xlabel("segments N")
    errors.set_ylabel("relative tip sag error")
    errors.set_title("Discretisation error")
    errors.legend(fontsize="small")
    path = save(figure, "cantilever")
    finest = counts[-1]
    print(f"cantilever: tip sag {1000 * result['sags'][finest]:.3f} mm at N = {finest}, exact {1000 * sag_exact:.3f} mm "
          f"({100 * relative[-1]:.3f}%; the test allows 2%), small-deflection {1000 * sag_linear:.3f} mm; plot {path}")


if __name__ == "__main__":
    main()
