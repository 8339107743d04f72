"""The narrow phase's pair witnesses: a filter that must never drop a contact."""
import numpy as np

import solver
from examples.pile import build_pile
from solver.step import PAIRS


def test_pair_witnesses_only_reject_pairs_that_could_not_touch():
    """The narrow phase skips a pair when the width gap along its last separating direction (its witness)
    already exceeds the reach. That bound is exact, so the contacts must be bit for bit the ones found
    with no witnesses at all: checked while a pile falls and collides, and once it rests."""
    from solver.collision.driver import collide

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
        count = collide(sim.model, sim._bodies, ws, n_pairs, False)
        with_witnesses = [getattr(ws, f)[:count].copy() for f in fields]
        ws.pair_witness[:] = 0.0
        assert collide(sim.model, sim._bodies, ws, n_pairs, False) == count
        for name, found in zip(fields, with_witnesses):
            np.testing.assert_array_equal(getattr(ws, name)[:count], found, err_msg=f"{name} after {steps} steps")
        assert proven_apart.sum() > 0.1 * n_pairs  # the filter had work to do
