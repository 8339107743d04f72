"""Broad phase: a uniform hashed grid over world AABBs, O(n) for bounded density.

Cells are at least as large as the largest body's AABB, so any overlapping
pair shares a cell or sits in neighbouring cells. Bodies are counting-sorted
into a hash table of cells; each body looks at the 27 cells around it and keeps
partners with a larger index, so every pair is found once. Pairs come out sorted
by (a, b), which the narrow phase relies on for warm-start lookup.

The pair list is built with boxes grown by a skin and reused across substeps
(a Verlet list) until some body has moved, or its box has grown, by more than
the skin since the build; a settled pile rebuilds rarely.
"""
import numpy as np
from numba import njit, prange

from .math3d import JIT, JIT_PARALLEL, PARALLEL_CHUNKS

# large primes of Teschner et al. (2003) for spatial hashing
_P1, _P2, _P3 = 73856093, 19349663, 83492791


@njit(**JIT, inline="always")
def cell_hash(cx, cy, cz, mask):
    """Bucket of grid cell (cx, cy, cz) in a table of mask + 1 (a power of two) buckets."""
    return ((cx * _P1) ^ (cy * _P2) ^ (cz * _P3)) & mask


_CELL_BITS = 21
_CELL_MASK = (1 << _CELL_BITS) - 1


@njit(**JIT, inline="always")
def _cell_key(cx, cy, cz):
    """The cell's coordinates packed into one integer, modulo 2^21 per axis.

    It only tells apart the cells that share a bucket among one body's
    neighbours, which lie within one cell of each other on every axis, so the
    wrap-around never confuses two of them.
    """
    return (cx & _CELL_MASK) | ((cy & _CELL_MASK) << _CELL_BITS) | ((cz & _CELL_MASK) << (2 * _CELL_BITS))


@njit(**JIT, inline="always")
def _neighbour_range(x, reach, c, inv_cell):
    """Cell offsets (-1 or 0, 0 or 1) covered by [x - reach, x + reach] around cell c.

    Compared in the same scaled coordinates as the cell index, with the range
    padded by a relative 1e-9 so rounding can only add a cell, never drop one.
    """
    pad = reach * (1.0 + 1e-9)
    lo = -1 if np.floor((x - pad) * inv_cell) < c else 0
    hi = 1 if np.floor((x + pad) * inv_cell) > c else 0
    return lo, hi


@njit(**JIT)
def _pairs_of_bodies(first_body, end_body, position, half_extent, dynamic, bucket_start, bucket_body, bucket_key,
                     bucket_box, cell_size, pair_a, pair_b, start, stop):
    """Pairs (i, j > i) of bodies first_body..end_body into pair slots start..stop, sorted.

    Returns the slot after the last pair written, or -1 if the slots ran out.
    """
    mask = bucket_start.shape[0] - 2
    inv = 1.0 / cell_size
    largest = 0.5 * cell_size
    count = start
    for i in range(first_body, end_body):
        first = count
        xi, yi, zi = position[i, 0], position[i, 1], position[i, 2]
        ex, ey, ez = half_extent[i, 0], half_extent[i, 1], half_extent[i, 2]
        ci, cj, ck = np.int64(np.floor(xi * inv)), np.int64(np.floor(yi * inv)), np.int64(np.floor(zi * inv))
        # a partner's centre lies within half_extent[i] + largest of ours on each axis:
        # visit a neighbouring cell only if that range reaches into it
        x_lo, x_hi = _neighbour_range(xi, ex + largest, ci, inv)
        y_lo, y_hi = _neighbour_range(yi, ey + largest, cj, inv)
        z_lo, z_hi = _neighbour_range(zi, ez + largest, ck, inv)
        for ox in range(x_lo, x_hi + 1):
            for oy in range(y_lo, y_hi + 1):
                for oz in range(z_lo, z_hi + 1):
                    cx = ci + ox
                    cy = cj + oy
                    cz = ck + oz
                    h = cell_hash(cx, cy, cz, mask)
                    key = _cell_key(cx, cy, cz)
                    # a bucket lists its bodies in increasing index: walk down to the first j <= i
                    for k in range(bucket_start[h + 1] - 1, bucket_start[h] - 1, -1):
                        j = bucket_body[k]
                        if j <= i:
                            break
                        # hash collisions: keep only bodies really in this cell
                        if bucket_key[k] != key:
                            continue
                        box = bucket_box[k]
                        if (abs(xi - box[0]) > ex + box[3] or abs(yi - box[1]) > ey + box[4]
                                or abs(zi - box[2]) > ez + box[5]):
                            continue
                        if not (dynamic[i] or dynamic[j]):
                            continue
                        if count >= stop:
                            return -1
                        pair_a[count] = i
                        pair_b[count] = j
                        count += 1
        # insertion sort of this body's partners keeps the global (a, b) order
        for k in range(first + 1, count):
            value = pair_b[k]
            m = k - 1
            while m >= first and pair_b[m] > value:
                pair_b[m + 1] = pair_b[m]
                m -= 1
            pair_b[m + 1] = value
    return count


@njit(**JIT_PARALLEL)
def _pairs_in_chunks(position, half_extent, dynamic, bucket_start, bucket_body, bucket_key, bucket_box, cell_size,
                     pair_a, pair_b, chunk_end):
    """Chunk k of the bodies writes its pairs into the k-th equal share of the pair buffers, in parallel."""
    n = position.shape[0]
    capacity = pair_a.shape[0]
    chunks = chunk_end.shape[0]
    for k in prange(chunks):
        chunk_end[k] = _pairs_of_bodies(k * n // chunks, (k + 1) * n // chunks, position, half_extent, dynamic,
                                        bucket_start, bucket_body, bucket_key, bucket_box, cell_size, pair_a,
                                        pair_b, k * capacity // chunks, (k + 1) * capacity // chunks)


@njit(**JIT)
def find_pairs(position, half_extent, dynamic, bucket_start, bucket_body, bucket_key, bucket_box, bucket_fill,
               pair_a, pair_b, chunks):
    """Fill pair_a/pair_b with AABB-overlapping pairs (a < b, at least one dynamic).

    The cell size is the largest AABB's largest side, so overlapping boxes are
    always in the same or adjacent cells. Bodies are counting-sorted into
    buckets, stable so each bucket lists its bodies in increasing index, and
    each body's cell key and box are copied in bucket order so the search reads
    them contiguously. The bodies are searched in ``chunks`` parallel chunks,
    each writing into its own share of the buffers; the shares are then packed.
    Returns the number of pairs, or -1 if a share (and so possibly the buffer)
    is too small.
    """
    n = position.shape[0]
    cell_size = 1e-12
    for i in range(n):
        for k in range(3):
            cell_size = max(cell_size, 2.0 * half_extent[i, k])
    table = bucket_fill.shape[0]
    mask = table - 1
    inv = 1.0 / cell_size
    bucket_fill[:] = 0
    for i in range(n):
        cx = np.int64(np.floor(position[i, 0] * inv))
        cy = np.int64(np.floor(position[i, 1] * inv))
        cz = np.int64(np.floor(position[i, 2] * inv))
        bucket_fill[cell_hash(cx, cy, cz, mask)] += 1
    bucket_start[0] = 0
    for h in range(table):
        bucket_start[h + 1] = bucket_start[h] + bucket_fill[h]
        bucket_fill[h] = bucket_start[h]
    for i in range(n):
        cx = np.int64(np.floor(position[i, 0] * inv))
        cy = np.int64(np.floor(position[i, 1] * inv))
        cz = np.int64(np.floor(position[i, 2] * inv))
        h = cell_hash(cx, cy, cz, mask)
        k = bucket_fill[h]
        bucket_body[k] = i
        bucket_key[k] = _cell_key(cx, cy, cz)
        for m in range(3):
            bucket_box[k, m] = position[i, m]
            bucket_box[k, 3 + m] = half_extent[i, m]
        bucket_fill[h] = k + 1

    chunks = max(1, min(chunks, n))
    chunk_end = np.empty(chunks, dtype=np.int64)
    _pairs_in_chunks(position, half_extent, dynamic, bucket_start, bucket_body, bucket_key, bucket_box, cell_size,
                     pair_a, pair_b, chunk_end)
    # pack the shares: chunks hold consecutive bodies, so the packed list stays sorted;
    # every share moves left (or stays), so a forward copy never overwrites unread pairs
    capacity = pair_a.shape[0]
    count = 0
    for k in range(chunks):
        if chunk_end[k] < 0:
            return -1
        for p in range(k * capacity // chunks, chunk_end[k]):
            pair_a[count] = pair_a[p]
            pair_b[count] = pair_b[p]
            count += 1
    return count


@njit(**JIT)
def update_pairs(position, half_extent, dynamic, skin, ws):
    """Candidate pairs for this substep in ws.pair_a/pair_b: the last list if still valid, else a new one.

    A list built from boxes grown by ``skin`` holds every pair whose current
    boxes overlap as long as, for every body and axis, its displacement since
    the build plus the growth of its box is at most ``skin``. Returns the
    number of pairs, or -1 if the pair buffers are too small.
    """
    origin = ws.pair_origin
    built = ws.pair_extent
    n = position.shape[0]
    valid = ws.pair_list[1] == 1
    i = 0
    while valid and i < n:
        for k in range(3):
            if abs(position[i, k] - origin[i, k]) + half_extent[i, k] + skin - built[i, k] > skin:
                valid = False
        i += 1
    if valid:
        return ws.pair_list[0]
    for i in range(n):
        for k in range(3):
            origin[i, k] = position[i, k]
            built[i, k] = half_extent[i, k] + skin
    count = find_pairs(position, built, dynamic, ws.bucket_start, ws.bucket_body, ws.bucket_key, ws.bucket_box,
                       ws.bucket_fill, ws.pair_a, ws.pair_b, PARALLEL_CHUNKS)
    ws.pair_list[0] = count
    ws.pair_list[1] = 1 if count >= 0 else 0
    return count
