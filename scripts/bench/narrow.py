"""Narrow phase per path: nanoseconds per touching pair on one thread, on the pairs of a real pile.

Run from the repository root:

    .venv/bin/python -m scripts.bench.narrow                       # 1,000 bodies, pairs of step 240
    .venv/bin/python -m scripts.bench.narrow --shape box --n 300 --step 120

Each family drops the shapes benchmark's scene (scripts/bench/shapes.py, same seed; ellipsoids with the boxes'
half extents as semi-axes) for --step steps, takes the pairs that touch and their normals, steps once more, and
then times, in compiled loops over those pairs with the bodies' new poses, what the driver runs on a pair that
touched last substep, warm-started from its normal there:

- ellipsoids: the exact path (Newton on the width gap, narrowphase.minimise_width_gap_supports);
- boxes: the separating-axis test (box_box.py), whatever the method;
- superellipsoids: Newton on the normal, and the method's search where Newton does not settle
  (smooth_contact.py);
- hulls: GJK, then the method (EPA, MPR or SGJK) where they overlap (convex_distance.py).

Then the patch at the answer's normal (patches.pair_patch), except for ellipsoid pairs, whose one point comes
with their distance.
One JSON line per family and method: ns per pair for the distance and for distance and patch together, and
how often the method's answer was deeper than EPA's (a method that overstates nothing agrees with it).
The loops compile in every run (about a minute; not cached, so that they never hold stale copies of
the solver's kernels); the simulations load the solver's cached kernels.

With --stages it times instead every candidate pair of the next substep (box, superellipsoid and hull
drops), grouped by the stage of the pair loop that settles it, each group on a pair list of its own through
the driver's own pair loop (collision/driver.py, `_collide_pair_range`) on one thread: cheap rejections
that cost more than their test show up there (docs/numba.md, non-inlined calls).
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np
from numba import njit

import quadric_solver as solver
from scripts.bench import shapes as shapes_bench
from scripts.bench.pile import DT, threading_layer_record
from quadric_solver.collision import driver, patches
from quadric_solver.collision.convex_distance import PENETRATION
from quadric_solver.collision.narrowphase import boxes_overlap, minimise_width_gap_supports, sym_at
from quadric_solver.step import PAIRS, broad_phase, forces

FAMILIES = ("ellipsoid", "box", "superellipsoid", "hull")
# the stage of the pair loop that settles a candidate pair, in the loop's order
STAGES = ("bounding spheres apart", "touched last substep, carried", "touched last substep, measured, touching",
          "touched last substep, apart", "oriented boxes apart", "apart, found by the narrow phase", "new contact")
REPEATS = 5  # timed passes over the pairs; the fastest is reported


@njit
def _shape_pairs(pair_a, pair_b, normals, kind, params, hull_vertices, hull_faces, position, rotation, reach,
                 penetration, with_patch, gaps):
    """Distance (and patch) of each pair from its normal, as the driver runs a pair that touched; gaps into
    ``gaps``; a checksum, so that nothing is optimised away."""
    k2, p2, x2, r2 = driver.pair_pose_scratch()
    search = driver.new_search_scratch()
    scratch = patches.new_patch_scratch()
    out = np.empty((patches.PATCH, 4))
    total = 0.0
    for q in range(pair_a.shape[0]):
        i, j = pair_a[q], pair_b[q]
        driver.load_pair_pose(kind, params, position, rotation, i, j, k2, p2, x2, r2)
        gap, nx, ny, nz = driver.shape_pair_distance(k2, p2, hull_vertices, x2, r2, normals[q, 0], normals[q, 1],
                                                     normals[q, 2], penetration, True, search)
        gaps[q] = gap
        total += gap
        if with_patch:
            total += patches.pair_patch(k2, p2, hull_vertices, hull_faces, x2, r2, nx, ny, nz, reach[i] + reach[j],
                                        scratch, out)
    return total


@njit
def _ellipsoid_pairs(pair_a, pair_b, normals, shape, position, gaps):
    """The exact path of two ellipsoids from each pair's normal; gaps into ``gaps``; a checksum."""
    total = 0.0
    for q in range(pair_a.shape[0]):
        i, j = pair_a[q], pair_b[q]
        depth, _, _, _, _, _, _, _, _, _ = minimise_width_gap_supports(
            sym_at(shape, i), sym_at(shape, j), position[j, 0] - position[i, 0], position[j, 1] - position[i, 1],
            position[j, 2] - position[i, 2], normals[q, 0], normals[q, 1], normals[q, 2])
        gaps[q] = -depth
        total += depth
    return total


def touching_pairs(family: str, n: int, seed: int, step: int, penetration: str):
    """The simulation one step after ``step`` and the pairs that touched at ``step`` with their normals then."""
    scene = shapes_bench.make_scene(n, seed, family)
    sim = solver.Simulation(shapes_bench.our_scene(scene), dt=DT, penetration=penetration)
    sim.step(step)
    pairs = driver._pair_arrays(sim._ws)
    count = int(sim._ws.counters[PAIRS])
    touching = np.nonzero(pairs[3][:count] != -np.inf)[0]
    pair_a, pair_b = pairs[0][touching].copy(), pairs[1][touching].copy()
    normals = np.ascontiguousarray(pairs[4][touching])
    sim.step(1)
    return sim, pair_a, pair_b, normals


def measure(family: str, n: int, seed: int, step: int, methods) -> list[dict]:
    sim, pair_a, pair_b, normals = touching_pairs(family, n, seed, step, "epa")
    bodies, ws, body_shapes = sim._bodies, sim._ws, sim._shapes
    gaps = np.empty(len(pair_a))

    def best_of(call):
        call()  # compile or load, and warm the caches
        fastest = np.inf
        for _ in range(REPEATS):
            start = time.perf_counter()
            call()
            fastest = min(fastest, time.perf_counter() - start)
        return 1e9 * fastest / max(1, len(pair_a))

    results = []
    if family == "ellipsoid":
        ns = best_of(lambda: _ellipsoid_pairs(pair_a, pair_b, normals, ws.shape, bodies.position, gaps))
        return [dict(family=family, method="exact", n=n, step=step, pairs=len(pair_a), distance_ns_per_pair=ns)]
    reference = None
    for method in methods:
        code = PENETRATION.index(method)

        def run(with_patch, code=code):
            return _shape_pairs(pair_a, pair_b, normals, body_shapes.kind, body_shapes.params,
                               body_shapes.hull_vertices, body_shapes.hull_faces, bodies.position, ws.rotation,
                               ws.reach, code, with_patch, gaps)

        distance = best_of(lambda: run(False))
        answer = gaps.copy()
        if reference is None:
            reference = answer  # EPA's, the first method
        size = float(np.abs(body_shapes.size).max())
        deeper = int((answer < reference - 1e-9 * size).sum())
        results.append(dict(family=family, method=method, n=n, step=step, pairs=len(pair_a),
                            distance_ns_per_pair=distance, with_patch_ns_per_pair=best_of(lambda: run(True)),
                            deeper_than_epa=deeper))
        if family == "box":
            break  # two boxes always take the separating-axis test
    return results


@njit
def _boxes_apart(rotation, size, reach, pair_a, pair_b, position, out):
    """out[q]: whether pair q's oriented boxes, grown by the reaches, are apart (the driver's pre-test)."""
    for q in range(pair_a.shape[0]):
        i, j = pair_a[q], pair_b[q]
        ra, rb = reach[i], reach[j]
        out[q] = not boxes_overlap(rotation, i, j, position[j, 0] - position[i, 0], position[j, 1] - position[i, 1],
                                   position[j, 2] - position[i, 2],
                                   (size[i, 0] + ra, size[i, 1] + ra, size[i, 2] + ra),
                                   (size[j, 0] + rb, size[j, 1] + rb, size[j, 2] + rb))


def stage_costs(family: str, n: int, seed: int, step: int) -> list[dict]:
    """ns per candidate pair of the next substep's pair loop, by the stage that settles it (STAGES)."""
    sim, _, _, _ = touching_pairs(family, n, seed, step, "epa")
    model, bodies, ws, settings, shapes = sim.model, sim._bodies, sim._ws, sim.settings, sim._kernel_shapes
    forces(model, bodies, ws, settings, DT, sim._targets)  # the substep's reaches, then its candidate pairs
    broad_phase(model, bodies, ws, settings, DT)
    count = int(ws.counters[PAIRS])
    stride = model.n_bodies + model.static_material.shape[0]
    pairs = driver._pair_arrays(ws)
    pair_a, pair_b, witness = pairs[0][:count].copy(), pairs[1][:count].copy(), pairs[2][:count].copy()
    cache_key = bodies.cache_key[:bodies.cache_count[0]].copy()
    inputs = (stride, bodies.position, ws.rotation, ws.shape, ws.reach, model.semi_axes, model.bounding_radius,
              cache_key, bodies.cache_normal)
    offset = bodies.position[pair_b] - bodies.position[pair_a]
    extent = model.bounding_radius[pair_a] + model.bounding_radius[pair_b] + ws.reach[pair_a] + ws.reach[pair_b]
    spheres_apart = (offset * offset).sum(axis=1) > extent * extent
    keys = (pair_a * stride + pair_b) * patches.PATCH
    found = np.minimum(np.searchsorted(cache_key, keys), max(0, len(cache_key) - 1))
    touched = ((cache_key[found] >= keys) & (cache_key[found] < keys + patches.PATCH) if len(cache_key)
               else np.zeros(count, dtype=np.bool_))
    boxes_apart = np.zeros(count, dtype=np.bool_)
    _boxes_apart(ws.rotation, shapes.size, ws.reach, pair_a, pair_b, bodies.position, boxes_apart)

    def own_list(chosen):
        """A pair list of the chosen pairs, with their witnesses as they were."""
        m = len(chosen)
        return (pair_a[chosen], pair_b[chosen], witness[chosen], np.empty(m), np.empty((m, 3)), np.empty((m, 3)),
                np.empty((m,) + pairs[6].shape[1:]), np.empty(m, dtype=pairs[7].dtype))

    def own_carried(chosen):
        """The carried contacts' arrays for a pair list of the chosen pairs (collision/carried_contacts.py)."""
        held = bodies.cache_local
        return np.full(len(chosen), -2, dtype=np.int64), held, np.empty((0, held.shape[1]))

    velocity = (ws.start_linear, ws.start_angular)
    everything, every_source = own_list(np.arange(count)), own_carried(np.arange(count))
    driver._collide_pair_range(*inputs, everything, 0, count, shapes, every_source, velocity, DT)  # the outcomes
    contact = everything[3] != -np.inf
    carried = every_source[0] >= 0
    groups = (spheres_apart, ~spheres_apart & touched & contact & carried,
              ~spheres_apart & touched & contact & ~carried, ~spheres_apart & touched & ~contact,
              ~spheres_apart & ~touched & boxes_apart, ~spheres_apart & ~touched & ~boxes_apart & ~contact,
              ~spheres_apart & ~touched & ~boxes_apart & contact)

    def fastest(chosen):
        best = np.inf
        for _ in range(REPEATS + 1):  # the first pass loads the code and warms the caches
            own, source = own_list(chosen), own_carried(chosen)
            start = time.perf_counter()
            driver._collide_pair_range(*inputs, own, 0, len(chosen), shapes, source, velocity, DT)
            best = min(best, time.perf_counter() - start)
        return best

    call = fastest(np.arange(0))  # the call itself (its scratch is allocated per call), taken off each group's
    results = []
    for stage, group in zip(STAGES, groups):
        chosen = np.flatnonzero(group)
        seconds = max(0.0, fastest(chosen) - call)
        results.append(dict(family=family, n=n, step=step, stage=stage, pairs=len(chosen),
                            ns_per_pair=1e9 * seconds / len(chosen) if len(chosen) else None,
                            ms_per_substep=1e3 * seconds))
    return results


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shape", default=",".join(FAMILIES), help=f"comma list of {', '.join(FAMILIES)}")
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--step", type=int, default=240, help="the step whose touching pairs are timed")
    parser.add_argument("--penetration", default="epa,mpr,sgjk", help="comma list; epa first (the reference)")
    parser.add_argument("--stages", action="store_true",
                        help="time every candidate pair by the stage that settles it instead (not ellipsoids)")
    args = parser.parse_args(argv)
    methods = args.penetration.split(",")
    if methods[0] != "epa":
        parser.error("--penetration must start with epa: the other methods are compared with it")
    for family in args.shape.split(","):
        if family not in FAMILIES:
            parser.error(f"unknown shape {family!r}; they are {', '.join(FAMILIES)}")
        if args.stages and family == "ellipsoid":
            continue  # ellipsoid pairs take their own path, without the shapes' stages
        results = (stage_costs(family, args.n, args.seed, args.step) if args.stages
                   else measure(family, args.n, args.seed, args.step, methods))
        for result in results:
            print(json.dumps(dict(result, threading_layer=threading_layer_record())), flush=True)


if __name__ == "__main__":
    main()
