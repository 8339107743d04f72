"""Accuracy and speed of solver.distance per shape-family pair; prints one JSON line per pair of families.

Run from the repository root:

    .venv/bin/python -m scripts.bench.distance                 # 200 random pairs per family pair
    .venv/bin/python -m scripts.bench.distance --pairs 50 --families ellipsoid box

Pairs are drawn as in tests/solver/shapes/test_distance_reference.py (about half overlapping) and
compared with its numpy reference (tests/solver/shapes/distance_reference.py). Per family pair:
  deficit      max over pairs of (reference - solver) / size, where size is the sum of the two
               shapes' reaches; positive means the solver's signed distance is below the reference's
               (the solver's answer is g at its normal, a lower bound of the truth, so a negative
               deficit means the reference's search fell short)
  consistency  max |solver distance - g(solver normal)| / size, g evaluated by the reference
  on_surface   max relative surface residual of the witness points
  across       max |(point_b - point_a) - distance * normal| / size (the points' mismatch across the normal)
  us_kernel    mean microseconds per compiled call (signed_distance), warm
  us_query     mean microseconds per solver.distance call (validation and encoding included)
  us_contact, contact_deficit
               the same for the simulation's path (collision/driver.py): contact_distance (the GJK/EPA
               search alone), or for two boxes the separating-axis test (collision/box_box.py), whose
               deficit where boxes are apart is its known shortfall at vertex-vertex and vertex-edge pairs
  us_smooth, smooth_deficit
               ellipsoids and superellipsoids only: the simulation's path for them, the optimisation on the
               normal (collision/smooth_contact.py), from the centre line as for a pair new this substep
               (overlaps then fall back to the search and are polished); us_smooth_warm from the reference's
               normal turned by 0.03 rad, as from last substep's normal
"""
import argparse
import json
import time

import numpy as np

import quadric_solver as solver
from quadric_solver.collision.box_box import box_box_distance
from quadric_solver.collision.convex_distance import EPA, contact_distance, signed_distance
from quadric_solver.collision.smooth_contact import smooth_contact_distance
from quadric_solver.shapes.support import BOX
from quadric_solver.math3d import quat_to_matrix_np
from quadric_solver.shapes import encode_shapes
from tests.solver.shapes import distance_reference as reference


def measure(family_a, family_b, count, seed):
    rng = np.random.default_rng(seed)
    shapes_a, (positions_a, orientations_a), shapes_b, (positions_b, orientations_b) = reference.random_pairs(
        rng, family_a, family_b, count)
    a = reference.Posed(shapes_a, positions_a, orientations_a)
    b = reference.Posed(shapes_b, positions_b, orientations_b)
    results = []
    start = time.perf_counter()
    for p in range(count):
        results.append(solver.distance(shapes_a[p], (positions_a[p], orientations_a[p]),
                                       shapes_b[p], (positions_b[p], orientations_b[p])))
    query = (time.perf_counter() - start) / count
    arrays = [(encode_shapes([shapes_a[p], shapes_b[p]]), np.stack([positions_a[p], positions_b[p]]),
               np.stack([quat_to_matrix_np(orientations_a[p]), quat_to_matrix_np(orientations_b[p])]),
               positions_b[p] - positions_a[p]) for p in range(count)]
    out = np.empty(10)
    start = time.perf_counter()
    for (kinds, params, hull_vertices), positions, rotations, hint in arrays:
        signed_distance(kinds, params, hull_vertices, positions, rotations, hint[0], hint[1], hint[2], out)
    kernel = (time.perf_counter() - start) / count
    contact = np.empty(count)
    (kinds, params, hull_vertices), positions, rotations, hint = arrays[0]
    contact_distance(kinds, params, hull_vertices, positions, rotations, *hint, EPA)  # compiled before the clock
    box_box_distance(params[0, :3], positions[0], rotations[0], params[1, :3], positions[1], rotations[1])
    start = time.perf_counter()
    for p, ((kinds, params, hull_vertices), positions, rotations, hint) in enumerate(arrays):
        if kinds[0] == BOX and kinds[1] == BOX:
            contact[p] = box_box_distance(params[0, :3], positions[0], rotations[0], params[1, :3], positions[1],
                                          rotations[1])[0]
        else:
            contact[p] = contact_distance(kinds, params, hull_vertices, positions, rotations, *hint, EPA)[0]
    contact_seconds = (time.perf_counter() - start) / count
    smooth = family_a in SMOOTH and family_b in SMOOTH
    if smooth:
        smooth_gap, smooth_seconds = _time_smooth(arrays, [hint / np.linalg.norm(hint) for *_, hint in arrays], False)
    distance = np.array([r.distance for r in results])
    normal = np.array([r.normal for r in results])
    size = np.array([reference.reach(x) + reference.reach(y) for x, y in zip(shapes_a, shapes_b)])
    best, best_normal = reference.signed_distance(a, b, seed)
    at_normal = reference.gaps(a, b, normal[:, None, :])[:, 0]
    point_a, point_b = np.array([r.point_a for r in results]), np.array([r.point_b for r in results])
    residual = np.maximum(np.abs(a.surface_residual(point_a)), np.abs(b.surface_residual(point_b)))
    across = np.linalg.norm(point_b - point_a - distance[:, None] * normal, axis=1) / size
    return dict(families=f"{family_a}-{family_b}", pairs=count, overlapping=int(np.sum(best < 0)),
                deficit=float(np.max((best - distance) / size)),
                consistency=float(np.max(np.abs(distance - at_normal) / size)),
                on_surface=float(np.max(residual)), across=float(np.max(across)),
                us_kernel=round(kernel * 1e6, 1), us_query=round(query * 1e6, 1),
                us_contact=round(contact_seconds * 1e6, 2),
                contact_deficit=float(np.max((best - contact) / size)),
                contact_deficit_overlapping=float(np.max(((best - contact) / size)[best < 0], initial=0.0)),
                **(_smooth_report(arrays, best, best_normal, size, smooth_gap, smooth_seconds, seed) if smooth else {}))


SMOOTH = ("ellipsoid", "superellipsoid")


def _time_smooth(arrays, starts, touching):
    """smooth_contact_distance over the pairs from the given unit start normals: (gaps, seconds per pair)."""
    (kinds, params, hull_vertices), positions, rotations, _ = arrays[0]
    smooth_contact_distance(kinds, params, hull_vertices, positions, rotations, *starts[0], EPA, touching)
    gaps = np.empty(len(arrays))
    start = time.perf_counter()
    for p, ((kinds, params, hull_vertices), positions, rotations, _) in enumerate(arrays):
        gaps[p] = smooth_contact_distance(kinds, params, hull_vertices, positions, rotations, *starts[p], EPA,
                                          touching)[0]
    return gaps, (time.perf_counter() - start) / len(arrays)


def _smooth_report(arrays, best, best_normal, size, gaps, seconds, seed):
    rng = np.random.default_rng(seed)
    warm = best_normal + 0.03 * rng.normal(size=best_normal.shape)
    warm_gaps, warm_seconds = _time_smooth(arrays, list(warm / np.linalg.norm(warm, axis=1, keepdims=True)), True)
    return dict(us_smooth=round(seconds * 1e6, 2), smooth_deficit=float(np.max((best - gaps) / size)),
                us_smooth_warm=round(warm_seconds * 1e6, 2),
                smooth_warm_deficit=float(np.max((best - warm_gaps) / size)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--families", nargs="+", default=list(reference.FAMILIES), choices=reference.FAMILIES)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    for i, family_a in enumerate(args.families):
        for family_b in args.families[i:]:
            print(json.dumps(measure(family_a, family_b, args.pairs, args.seed)), flush=True)


if __name__ == "__main__":
    main()
