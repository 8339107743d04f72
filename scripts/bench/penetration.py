"""Penetration methods on shallow overlaps: EPA, MPR and SGJK against each other, per call.

Run from the repository root:

    .venv/bin/python -m scripts.bench.penetration            # 400 pairs
    .venv/bin/python -m scripts.bench.penetration --pairs 2000 --depth 0.002

Pairs of boxes, (0.4, 0.4) superellipsoids, cylinders, capsules and ellipsoids (sizes 0.1 to 0.3 m), in random
orientations, placed touching along a random direction and then pressed together by up to --depth metres.
Each method starts from the exact normal turned by about --warm radians, as a warm start from the last
substep would be. Reported per method: microseconds per compiled call (from Python, so a few microseconds of
call overhead are included) and how much deeper than EPA's depth it answers (EPA's is the smallest).
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=400)
    parser.add_argument("--depth", type=float, default=0.01, help="largest press, m (default 0.01)")
    parser.add_argument("--warm", type=float, default=0.05, help="warm-start error, about radians (default 0.05)")
    parser.add_argument("--repeat", type=int, default=20, help="calls timed per pair and method")
    parser.add_argument("--seed", type=int, default=2)
    args = parser.parse_args(argv)

    import quadric_solver as solver
    from quadric_solver.collision.convex_distance import EPA, MPR, PENETRATION, SGJK, contact_distance
    from quadric_solver.math3d import quat_to_matrix
    from quadric_solver.shapes import encode_shapes

    rng = np.random.default_rng(args.seed)
    shapes = [solver.Box((0.3, 0.2, 0.1)), solver.Superellipsoid((0.2, 0.15, 0.1), (0.4, 0.4)),
              solver.Cylinder(0.1, 0.2), solver.Capsule(0.08, 0.15), solver.Ellipsoid((0.2, 0.1, 0.1))]
    methods = (EPA, MPR, SGJK)
    seconds = dict.fromkeys(methods, 0.0)
    deeper = {m: [] for m in methods}
    done = 0
    while done < args.pairs:
        kinds, params, hull = encode_shapes([shapes[rng.integers(len(shapes))] for _ in range(2)])
        direction = rng.normal(size=3)
        direction /= np.linalg.norm(direction)
        rotations = np.empty((2, 3, 3))
        for r in range(2):
            q = rng.normal(size=4)
            quat_to_matrix(q / np.linalg.norm(q), rotations[r])
        positions = np.zeros((2, 3))
        positions[1] = direction
        gap = contact_distance(kinds, params, hull, positions, rotations, *direction, EPA)[0]
        positions[1] = direction * (1.0 - gap - rng.uniform(0.0, args.depth))
        exact = contact_distance(kinds, params, hull, positions, rotations, *direction, EPA)
        if exact[0] >= 0.0:
            continue
        done += 1
        warm = np.array(exact[1:]) + args.warm * rng.normal(size=3)
        for m in methods:
            start = time.perf_counter()
            for _ in range(args.repeat):
                result = contact_distance(kinds, params, hull, positions, rotations, *warm, m)
            seconds[m] += (time.perf_counter() - start) / args.repeat
            deeper[m].append(exact[0] - result[0])
    for m in methods:
        d = np.array(deeper[m])
        print(json.dumps(dict(case="penetration", penetration=PENETRATION[m], pairs=done, max_press_m=args.depth,
                              warm=args.warm, us_per_call=seconds[m] / done * 1e6,
                              deeper_median_m=float(np.median(d)), deeper_max_m=float(d.max()),
                              shallower_max_m=float(-d.min()), share_off_by_1um=float(np.mean(np.abs(d) > 1e-6)))),
              flush=True)


if __name__ == "__main__":
    main()
