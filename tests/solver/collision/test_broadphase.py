"""Broad phase against the all-pairs definition: every pair of overlapping boxes, each once, sorted."""
import numpy as np
import pytest

from quadric_solver.collision.broadphase import find_pairs, update_pairs
from quadric_solver.math3d import PARALLEL_CHUNKS
from quadric_solver.state import new_workspace


def brute_force_pairs(position, half_extent, dynamic):
    """Every pair (i < j) with a dynamic member whose boxes overlap on all three axes (closed intervals)."""
    position, half_extent, dynamic = np.asarray(position), np.asarray(half_extent), np.asarray(dynamic)
    overlap = np.all(np.abs(position[:, None, :] - position[None, :, :])
                     <= half_extent[:, None, :] + half_extent[None, :, :], axis=2)
    overlap &= dynamic[:, None] | dynamic[None, :]
    i, j = np.nonzero(np.triu(overlap, k=1))
    return set(zip(i.tolist(), j.tolist()))


def random_boxes(rng, n, box_side):
    """Mixed sizes (a factor 10) so cells are much larger than most boxes, some exactly on cell edges."""
    position = rng.uniform(-0.5 * box_side, 0.5 * box_side, size=(n, 3))
    half_extent = rng.uniform(0.005, 0.05, size=(n, 3))
    position[: n // 10] = np.round(position[: n // 10] / 0.1) * 0.1  # on grid lines of a 0.1 cell
    dynamic = rng.random(n) < 0.9
    return position, half_extent, dynamic


def pairs_of(position, half_extent, dynamic, ws, chunks, buckets=None):
    """find_pairs with the workspace's buffers; ``buckets`` shrinks the hash table to force collisions."""
    bucket_start, bucket_fill = ws.bucket_start, ws.bucket_fill
    if buckets is not None:
        bucket_start, bucket_fill = np.zeros(buckets + 1, dtype=np.int64), np.zeros(buckets, dtype=np.int64)
    return find_pairs(position, half_extent, dynamic, bucket_start, ws.bucket_body, ws.bucket_key, ws.bucket_box,
                      bucket_fill, ws.pair_a, ws.pair_b, chunks)


def listed_pairs(ws, count):
    a, b = ws.pair_a[:count], ws.pair_b[:count]
    return list(zip(a.tolist(), b.tolist()))


@pytest.mark.parametrize("chunks, buckets", [(1, None), (3, None), (8, None), (3, 1), (2, 4)])
def test_find_pairs_matches_all_pairs_sorted_and_unique(chunks, buckets):
    """buckets=1 puts every cell in one bucket: neighbouring cells must still give each pair once."""
    rng = np.random.default_rng(7)
    for trial in range(20):
        n = int(rng.integers(2, 400))
        position, half_extent, dynamic = random_boxes(rng, n, box_side=float(rng.uniform(0.2, 1.5)))
        ws = new_workspace(n, 64 * n, 8, 6, 1)
        count = pairs_of(position, half_extent, dynamic, ws, chunks, buckets)
        pairs = listed_pairs(ws, count)
        assert pairs == sorted(pairs), "pairs must come out sorted by (a, b)"
        assert len(set(pairs)) == len(pairs), "no pair twice"
        assert set(pairs) == brute_force_pairs(position, half_extent, dynamic), f"trial {trial}"


@pytest.mark.parametrize("chunks", [1, 2])
def test_find_pairs_reports_a_full_buffer(chunks):
    position = np.zeros((5, 3))
    half_extent = np.full((5, 3), 0.1)
    ws = new_workspace(5, 3, 8, 6, 1)  # 10 pairs overlap, room for 3
    assert pairs_of(position, half_extent, np.ones(5, dtype=np.bool_), ws, chunks) == -1


def test_reused_pair_list_holds_every_overlap_while_bodies_stay_within_the_skin():
    """Move bodies by random steps; whenever the list is reused it must still cover all overlaps."""
    rng = np.random.default_rng(11)
    n, skin = 300, 0.01
    position, half_extent, dynamic = random_boxes(rng, n, box_side=0.8)
    ws = new_workspace(n, 64 * n, 8, 6, 1)
    reused = rebuilt = 0
    for step in range(60):
        before = ws.pair_origin.copy()
        count = update_pairs(position, half_extent, dynamic, skin, ws, PARALLEL_CHUNKS)
        if np.array_equal(before, ws.pair_origin):
            reused += 1
        else:
            rebuilt += 1
        assert brute_force_pairs(position, half_extent, dynamic) <= set(listed_pairs(ws, count)), f"step {step}"
        position += rng.normal(scale=0.0015, size=position.shape)   # a few steps fit in the skin
        half_extent *= rng.uniform(0.995, 1.005, size=half_extent.shape)  # boxes of turning bodies change
    assert reused > 0 and rebuilt > 1  # both paths were exercised


def test_list_updated_around_moved_bodies_holds_exactly_the_built_box_pairs():
    """A few bodies move per step (the list is updated around them, not rebuilt): after every update the
    list is exactly the sorted pairs whose built boxes overlap, so it covers every current overlap."""
    rng = np.random.default_rng(12)
    n, skin = 400, 0.01
    position, half_extent, dynamic = random_boxes(rng, n, box_side=0.8)
    ws = new_workspace(n, 64 * n, 8, 6, 1)
    updated = 0
    for step in range(40):
        before = ws.pair_origin.copy()
        count = update_pairs(position, half_extent, dynamic, skin, ws, PARALLEL_CHUNKS)
        changed = np.any(before != ws.pair_origin, axis=1).sum()
        updated += 0 < changed < n
        pairs = listed_pairs(ws, count)
        assert pairs == sorted(pairs) and len(set(pairs)) == len(pairs), f"step {step}"
        assert set(pairs) == brute_force_pairs(ws.pair_origin, ws.pair_extent, dynamic), f"step {step}"
        assert brute_force_pairs(position, half_extent, dynamic) <= set(pairs), f"step {step}"
        # a body and its nearest neighbours move, so moved bodies also pair with each other
        centre = int(rng.integers(n))
        mover = np.argsort(np.linalg.norm(position - position[centre], axis=1))[: int(rng.integers(1, 8))]
        position[mover] += rng.normal(scale=0.02, size=(len(mover), 3))  # beyond the skin
        half_extent[mover[:1]] *= 0.3  # a box that shrinks is rebuilt too
    assert updated > 30  # the partial path ran, not full rebuilds


def test_witnesses_travel_with_their_pairs_through_updates_and_rebuilds():
    """The narrow phase keeps a witness per pair: a pair listed again keeps its own, a new pair starts with none."""
    rng = np.random.default_rng(13)
    n, skin = 300, 0.01
    position, half_extent, dynamic = random_boxes(rng, n, box_side=0.8)
    ws = new_workspace(n, 64 * n, 8, 6, 1)
    count = update_pairs(position, half_extent, dynamic, skin, ws, PARALLEL_CHUNKS)
    partial = full = 0
    for step in range(40):
        # a witness that names its pair, as the narrow phase would leave one
        before = {}
        for p, (a, b) in enumerate(listed_pairs(ws, count)):
            ws.pair_witness[p] = (a, b, step + 1)
            before[(a, b)] = (a, b, step + 1)
        if step % 4 == 3:
            position += rng.normal(scale=0.01, size=position.shape)  # most bodies leave their boxes: a rebuild
        else:
            mover = rng.choice(n, size=int(rng.integers(1, 6)), replace=False)
            position[mover] += rng.normal(scale=0.02, size=(len(mover), 3))
        origin = ws.pair_origin.copy()
        count = update_pairs(position, half_extent, dynamic, skin, ws, PARALLEL_CHUNKS)
        moved = np.any(origin != ws.pair_origin, axis=1).sum()
        full += moved == n
        partial += 0 < moved < n
        for p, pair in enumerate(listed_pairs(ws, count)):
            expected = before.get(pair, (0.0, 0.0, 0.0))
            assert tuple(ws.pair_witness[p]) == expected, f"step {step}, pair {pair}"
    assert full >= 8 and partial >= 20  # both paths carried witnesses
