"""The narrow phase's pair witnesses: a filter that must never drop a contact."""
import numpy as np

import quadric_solver as solver
from examples.pile import build_pile
from quadric_solver.step import PAIRS


def test_pair_witnesses_only_reject_pairs_that_could_not_touch():
    """The narrow phase skips a pair when the width gap along its last separating direction (its witness)
    already exceeds the reach. That bound is exact, so the contacts must be bit for bit the ones found
    with no witnesses at all: checked while a pile falls and collides, and once it rests."""
    from quadric_solver.collision.driver import collide

    sim = solver.Simulation(build_pile(200), dt=1 / 240)
    for steps in (60, 240):  # 0.25 s (falling, first impacts), then 1.25 s
        sim.step(n=steps)
        ws, n_pairs = sim._ws, int(sim._ws.counters[PAIRS])
        witnessed = np.any(ws.pair_witness[:n_pairs] != 0.0, axis=1)
        assert witnessed.sum() > 0.3 * n_pairs  # most pairs carry one
        fields = ("contact_a", "contact_b", "contact_key", "contact_depth", "contact_normal", "contact_point")
        # pairs whose witness bound proves them out of reach: the ones the filter skips
        a, b, w = ws.pair_a[:n_pairs], ws.pair_b[:n_pairs], ws.pair_witness[:n_pairs]
        width = np.sqrt(np.einsum("pi,pij,pj->p", w, ws.shape[a], w)) + np.sqrt(np.einsum("pi,pij,pj->p", w, ws.shape[b], w))
        gap = width - np.einsum("pi,pi->p", sim._bodies.position[b] - sim._bodies.position[a], w)
        proven_apart = witnessed & (gap < -(ws.reach[a] + ws.reach[b]))
        # the shapes Simulation hands the compiled loop: the test then runs the narrow phase it compiled
        count = collide(sim.model, sim._bodies, ws, n_pairs, False, 0.0, sim._kernel_shapes, sim._kernel_meshes)
        with_witnesses = [getattr(ws, f)[:count].copy() for f in fields]
        ws.pair_witness[:] = 0.0
        assert collide(sim.model, sim._bodies, ws, n_pairs, False, 0.0, sim._kernel_shapes, sim._kernel_meshes) == count
        for name, found in zip(fields, with_witnesses):
            np.testing.assert_array_equal(getattr(ws, name)[:count], found, err_msg=f"{name} after {steps} steps")
        assert proven_apart.sum() > 0.1 * n_pairs  # the filter had work to do


def _mixed_shape_pile(n, seed):
    """n boxes, rounded boxes, cylinders and capsules, all centred on their frames, dropped into a box."""
    rng = np.random.default_rng(seed)
    scene = solver.Scene()
    scene.add_box_container(center=(0.0, 0.0, 0.3), half_extents=(0.25, 0.25, 0.3))
    shapes = []
    for k in range(n):
        size = rng.uniform(0.015, 0.03, 3)
        shape = (solver.Box(tuple(size)), solver.Superellipsoid(tuple(size), (0.4, 0.6)),
                 solver.Cylinder(size[0], size[2]), solver.Capsule(size[0], size[2]))[k % 4]
        q = rng.normal(size=4)
        position = (-0.2 + 0.1 * (k % 5), -0.2 + 0.1 * ((k // 5) % 5), 0.06 + 0.11 * (k // 25))  # spheres apart
        scene.add_body(shape, position=position, orientation=tuple(q / np.linalg.norm(q)))
        shapes.append(shape)
    return scene, shapes


def test_shape_pair_witnesses_never_drop_a_contact():
    """Pairs of other shapes are skipped when the gap along their witness (or centre line) exceeds the reach.
    That gap bounds the signed distance from below, so a pair is skipped only if it is really out of reach:
    checked against solver.distance (GJK/EPA) on every candidate pair while a mixed pile falls and rests."""
    from quadric_solver.collision.driver import collide
    from quadric_solver.forces import update_body_frames
    from quadric_solver.shapes.support import support_xyz

    scene, shapes = _mixed_shape_pile(100, seed=3)
    sim = solver.Simulation(scene, dt=1 / 240, contact_reuse=0.0)  # every pair measured: the witnesses' test
    kind, params, hull_vertices = sim._shapes.kind, sim._shapes.params, sim._shapes.hull_vertices
    tolerance = 1e-7  # m: solver.distance is exact to about 1e-6 of these shapes' sizes

    for steps in (90, 240):  # falling and colliding, then resting
        sim.step(n=steps)
        ws, n_pairs, state = sim._ws, int(sim._ws.counters[PAIRS]), sim._bodies
        update_body_frames(sim.model, state, ws, sim.settings.margin, 1 / 240, False)  # frames of these poses

        def height(i, d):  # support value of body i along the world direction d
            return d @ (state.position[i] + ws.rotation[i] @ np.array(support_xyz(kind[i], params[i], hull_vertices,
                                                                                  *(ws.rotation[i].T @ d))))

        proven_apart = 0
        for p in range(n_pairs):
            a, b, w = int(ws.pair_a[p]), int(ws.pair_b[p]), ws.pair_witness[p].copy()
            if w @ w > 0.5 and -height(a, w) - height(b, -w) > ws.reach[a] + ws.reach[b]:
                proven_apart += 1
        count = collide(sim.model, state, ws, n_pairs, False, 0.0, sim._shapes, sim._meshes)
        touching = {(int(a), int(b)) for a, b in zip(ws.contact_a[:count], ws.contact_b[:count]) if a >= 0}
        for a, b in zip(ws.pair_a[:n_pairs], ws.pair_b[:n_pairs]):
            a, b = int(a), int(b)
            reach = ws.reach[a] + ws.reach[b]
            reference = solver.distance(shapes[a], (state.position[a], state.orientation[a]),
                                        shapes[b], (state.position[b], state.orientation[b])).distance
            if reference < reach - tolerance:
                assert (a, b) in touching, f"pair {a}, {b}: distance {reference:.6g} within reach {reach:.6g}"
            elif reference > reach + tolerance:
                assert (a, b) not in touching, f"pair {a}, {b}: distance {reference:.6g} beyond reach {reach:.6g}"
        assert len(touching) > 0.1 * n_pairs and proven_apart > 0.1 * n_pairs  # both kinds of pair were there
