"""Cost of a bumpy ellipsoid pair's contacts (collision/bumpy_contact.py); one JSON line per bump count.

Run from the repository root:

    .venv/bin/python -m scripts.bench.bumpy                 # 200 pairs, 0, 4 and 8 bumps a shape
    .venv/bin/python -m scripts.bench.bumpy --pairs 50 --bumps 8

Each pair: two pebbles (semi-axes uniform in [0.02, 0.05] m, bumps with heights in [-0.25, 0.35] and angular
radii in [0.3, 0.9] rad), turned at random and overlapping by 0.5% of B's smallest semi-axis along the normal
solver.distance finds, as a resting pile's pairs do. Mean microseconds per pair on one thread, warm:
  us_search       every seed (no hint, reach unlimited): solver.distance's kernel, without the query's seed
                  from sampled surfaces (numpy)
  us_hinted       the normal given as a hint and a reach of 2 mm, as a simulation's pair that touched last
                  substep would call it
  us_hint_only    the hint and the centres' line alone (no bump seeds)
  us_warm         the contacts of a hinted call as the only seeds (their directions), with B moved 0.1 mm along
                  the normal and turned 1 mrad: a resting pair's next substep, were the simulation to keep each
                  contact's directions
  contacts_*      mean contacts found per pair
With 0 bumps the pairs are plain ellipsoids, and the simulation's path for smooth convex pairs (Newton on the
normal, smooth_contact.py, warm from the same normal, as for superellipsoids) is timed beside it: us_smooth_path.
The simulation's own ellipsoid path (the width gap) is cheaper still (scripts/bench/narrow.py). Every time
includes the call from Python (about 1 us).
"""
import argparse
import json
import time

import numpy as np

import quadric_solver as solver
from quadric_solver.collision.bumpy_contact import MAX_CONTACTS, OUT_COLUMNS, bumpy_contacts
from quadric_solver.collision.convex_distance import EPA
from quadric_solver.collision.smooth_contact import smooth_contact_distance
from quadric_solver.math3d import quat_to_matrix_np
from quadric_solver.shapes import encode_shapes
from scripts.bench.pile import threading_layer_record


NO_SEEDS = np.zeros((0, 6))


def pebble(rng, bumps):
    return solver.BumpyEllipsoid(rng.uniform(0.02, 0.05, 3), [(rng.normal(size=3), rng.uniform(-0.25, 0.35),
                                                                rng.uniform(0.3, 0.9)) for _ in range(bumps)])


def random_turn(rng):
    q = rng.normal(size=4)
    return q / np.linalg.norm(q)


def pairs(rng, count, bumps):
    """(rows, bump rows, positions, rotations, normal, ellipsoid shapes) per overlapping pair."""
    made = []
    for _ in range(count):
        a, b = pebble(rng, bumps), pebble(rng, bumps)
        pose_a = (np.zeros(3), random_turn(rng))
        direction = rng.normal(size=3)
        direction /= np.linalg.norm(direction)
        turn = random_turn(rng)
        far = solver.distance(a, pose_a, b, (direction * 0.3, turn))
        position_b = direction * 0.3 - far.normal * (far.distance + 0.005 * min(b.semi_axes))
        rows = np.array([[*a.semi_axes, 0, bumps], [*b.semi_axes, bumps, bumps]], dtype=np.float64)
        rows_of_bumps = np.ascontiguousarray(np.concatenate([a.bump_rows(), b.bump_rows()]))
        positions = np.array([pose_a[0], position_b])
        rotations = np.array([quat_to_matrix_np(pose_a[1]), quat_to_matrix_np(turn)])
        made.append((rows, rows_of_bumps, positions, rotations, far.normal.copy(),
                     (solver.Ellipsoid(a.semi_axes), solver.Ellipsoid(b.semi_axes))))
    return made


def mean_us(run, cases, repeats=3):
    """The fastest of ``repeats`` passes, in microseconds per case, and the last pass's total."""
    best, total = np.inf, 0
    for _ in range(repeats):
        start = time.perf_counter()
        total = sum(run(case) for case in cases)
        best = min(best, time.perf_counter() - start)
    return best / len(cases) * 1e6, total


def measure(count, bumps, seed):
    cases = pairs(np.random.default_rng(seed), count, bumps)
    out = np.empty((MAX_CONTACTS, OUT_COLUMNS))
    zero = np.zeros(3)
    row = dict(bumps=bumps, pairs=count)
    for name, reach, hinted, seeded in (("search", np.inf, False, True), ("hinted", 0.002, True, True),
                                        ("hint_only", -np.inf, True, False)):
        def run(case):
            rows, rows_of_bumps, positions, rotations, normal, _ = case
            return bumpy_contacts(rows, rows_of_bumps, positions, rotations, normal if hinted else zero,
                                  reach if seeded else -1e300, NO_SEEDS, out)
        run(cases[0])  # compiles
        row[f"us_{name}"], found = mean_us(run, cases)
        row[f"contacts_{name}"] = round(found / count, 3)
    # warm: last call's contacts as seeds (directions u, v from their points), after B moved 0.1 mm and turned
    # 1 mrad, as a resting pair's next substep would call it (no bump seeds)
    warm = []
    c, s = np.cos(1e-3), np.sin(1e-3)
    turn = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    for rows, rows_of_bumps, positions, rotations, normal, shapes in cases:
        found = bumpy_contacts(rows, rows_of_bumps, positions, rotations, normal, 0.002, NO_SEEDS, out)
        seeds = np.empty((found, 6))
        for k in range(found):
            for side, column in ((0, 4), (1, 7)):
                local = (out[k, column:column + 3] - positions[side]) @ rotations[side]
                seeds[k, 3 * side:3 * side + 3] = local / np.linalg.norm(local)
        moved = positions.copy()
        moved[1] += 1e-4 * normal
        turned = rotations.copy()
        turned[1] = turn @ rotations[1]
        warm.append((rows, rows_of_bumps, moved, turned, seeds))

    def run_warm(case):
        rows, rows_of_bumps, positions, rotations, seeds = case
        return bumpy_contacts(rows, rows_of_bumps, positions, rotations, zero, -1e300, seeds, out)

    row["us_warm"], found = mean_us(run_warm, warm)
    row["contacts_warm"] = round(found / count, 3)
    if bumps == 0:  # the simulation's path for smooth convex pairs, from the same normal, as a peer
        encoded = [(encode_shapes(case[5]), case) for case in cases]

        def smooth(item):
            (kinds, params, hull_vertices), (_, _, positions, rotations, normal, _) = item
            smooth_contact_distance(kinds, params, hull_vertices, positions, rotations, normal[0], normal[1],
                                    normal[2], EPA, True)
            return 1

        smooth(encoded[0])
        row["us_smooth_path"] = mean_us(smooth, encoded)[0]
    order = ("bumps", "pairs", "us_warm", "us_hinted", "us_hint_only", "us_search", "us_smooth_path", "contacts_warm",
             "contacts_hinted", "contacts_hint_only")
    keys = [key for key in order if key in row] + [key for key in row if key not in order]
    return {key: round(row[key], 2) if isinstance(row[key], float) else row[key] for key in keys}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--bumps", type=int, nargs="+", default=[0, 4, 8])
    parser.add_argument("--seed", type=int, default=2)
    args = parser.parse_args()
    for bumps in args.bumps:
        print(json.dumps(dict(**measure(args.pairs, bumps, args.seed), threading=threading_layer_record())),
              flush=True)


if __name__ == "__main__":
    main()
