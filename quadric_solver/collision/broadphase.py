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

from ..math3d import JIT, JIT_PARALLEL, ZERO

# Row-major cell numbering, wrapped into the table: neighbouring cells along x share a cache line of
# bucket_start and their bodies lie next to each other in bucket order (with the XOR-of-primes hash of
# Teschner et al. 2003 every neighbour cell was a cache miss). Cells of a box up to 101 x 101 x 25
# cells get distinct numbers; further cells may share a bucket, which the cell key tells apart.
_ROW, _LAYER = 101, 101 * 101


@njit(**JIT, inline="always")
def cell_hash(cx, cy, cz, mask):
    """Bucket of grid cell (cx, cy, cz) in a table of mask + 1 (a power of two) buckets."""
    return (cx + _ROW * cy + _LAYER * cz) & mask


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


@njit(**JIT, inline="always")
def _append_partners(i, lowest, centre, half_extent, dynamic, bucket_start, bucket_body, bucket_key, bucket_box,
                     cell_size, partner, count, stop):
    """Bodies j > lowest, j != i, whose boxes overlap body i's (one of the two dynamic), appended to partner.

    Returns the new count, or -1 if partner[count:stop] ran out.
    """
    mask = bucket_start.shape[0] - 2
    inv = 1.0 / cell_size
    largest = 0.5 * cell_size
    xi, yi, zi = centre[i, 0], centre[i, 1], centre[i, 2]
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
                # a bucket lists its bodies in increasing index: walk down to the first j <= lowest
                for k in range(bucket_start[h + 1] - 1, bucket_start[h] - 1, -1):
                    j = bucket_body[k]
                    if j <= lowest:
                        break
                    # hash collisions: keep only bodies really in this cell
                    if j == i or bucket_key[k] != key:
                        continue
                    # (read by index: a view like bucket_box[k] here kept numba's reference counting, atomic
                    # and contended between the threads, in this innermost loop)
                    if (abs(xi - bucket_box[k, 0]) > ex + bucket_box[k, 3]
                            or abs(yi - bucket_box[k, 1]) > ey + bucket_box[k, 4]
                            or abs(zi - bucket_box[k, 2]) > ez + bucket_box[k, 5]):
                        continue
                    if not (dynamic[i] or dynamic[j]):
                        continue
                    if count >= stop:
                        return -1
                    partner[count] = j
                    count += 1
    return count


@njit(**JIT)
def _pairs_of_bodies(first_body, end_body, position, half_extent, dynamic, bucket_start, bucket_body, bucket_key,
                     bucket_box, cell_size, pair_a, pair_b, start, stop):
    """Pairs (i, j > i) of bodies first_body..end_body into pair slots start..stop, sorted.

    Returns the slot after the last pair written, or -1 if the slots ran out.
    """
    count = start
    for i in range(first_body, end_body):
        first = count
        count = _append_partners(i, i, position, half_extent, dynamic, bucket_start, bucket_body, bucket_key,
                                 bucket_box, cell_size, pair_b, count, stop)
        if count < 0:
            return -1
        for k in range(first, count):
            pair_a[k] = i
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
def _fill_grid(centre, half_extent, bucket_start, bucket_body, bucket_key, bucket_box, bucket_fill):
    """Counting-sort the boxes into the hash table of cells; returns the cell size (the largest box side).

    Stable, so each bucket lists its bodies in increasing index; each body's
    cell key and box are copied in bucket order so searches read them contiguously.
    """
    n = centre.shape[0]
    cell_size = 1e-12
    for i in range(n):
        for k in range(3):
            cell_size = max(cell_size, 2.0 * half_extent[i, k])
    table = bucket_fill.shape[0]
    mask = table - 1
    inv = 1.0 / cell_size
    bucket_fill[:] = 0
    for i in range(n):
        cx = np.int64(np.floor(centre[i, 0] * inv))
        cy = np.int64(np.floor(centre[i, 1] * inv))
        cz = np.int64(np.floor(centre[i, 2] * inv))
        bucket_fill[cell_hash(cx, cy, cz, mask)] += 1
    bucket_start[0] = 0
    for h in range(table):
        bucket_start[h + 1] = bucket_start[h] + bucket_fill[h]
        bucket_fill[h] = bucket_start[h]
    for i in range(n):
        cx = np.int64(np.floor(centre[i, 0] * inv))
        cy = np.int64(np.floor(centre[i, 1] * inv))
        cz = np.int64(np.floor(centre[i, 2] * inv))
        h = cell_hash(cx, cy, cz, mask)
        k = bucket_fill[h]
        bucket_body[k] = i
        bucket_key[k] = _cell_key(cx, cy, cz)
        for m in range(3):
            bucket_box[k, m] = centre[i, m]
            bucket_box[k, 3 + m] = half_extent[i, m]
        bucket_fill[h] = k + 1
    return cell_size


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
    One chunk is searched in the calling thread (no parallel launch). The
    pairs and their order do not depend on ``chunks``. Returns the number of
    pairs, or -1 if a share (and so possibly the buffer) is too small.
    """
    n = position.shape[0]
    cell_size = _fill_grid(position, half_extent, bucket_start, bucket_body, bucket_key, bucket_box, bucket_fill)
    chunks = max(1, min(chunks, n))
    chunk_end = np.empty(chunks, dtype=np.int64)
    if chunks == 1:
        chunk_end[0] = _pairs_of_bodies(ZERO, n, position, half_extent, dynamic, bucket_start, bucket_body, bucket_key,
                                        bucket_box, cell_size, pair_a, pair_b, 0, pair_a.shape[0])
    else:
        _pairs_in_chunks(position, half_extent, dynamic, bucket_start, bucket_body, bucket_key, bucket_box,
                         cell_size, pair_a, pair_b, chunk_end)
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


PARTIAL_UPDATE_SHARE = 16   # a list is updated around its moved bodies while at most 1/16 of them moved
PARTNERS_PER_MOVED_BODY = 64  # room for partners found per moved body before a full rebuild is used instead


@njit(**JIT)
def update_pairs(position, half_extent, dynamic, skin, ws, chunks):
    """Candidate pairs for this substep in ws.pair_a/pair_b: the last list, updated where bodies moved.

    The list holds every pair whose *built* boxes overlap: each body's box
    grown by ``skin`` at the position it had when its pairs were last searched
    (ws.pair_origin, ws.pair_extent). A body whose displacement since then plus
    the growth of its box exceeds the skin on some axis has moved out of its
    built box; while none has, every pair of overlapping current boxes is
    still listed. If a few have (or their boxes have shrunk by more than the
    skin), only their boxes are rebuilt and only their pairs searched again
    and merged into the list: in a large settled pile a few bodies are always
    moving, and rebuilding the whole list for them (about 76 ms for 100,000
    bodies, in 6 of 16 substeps of a pile at 1.5 s) was a third of its broad
    phase.
    A full rebuild searches the bodies in ``chunks`` parallel chunks (see find_pairs).
    Returns the number of pairs, or -1 if the pair buffers are too small.
    """
    origin = ws.pair_origin
    built = ws.pair_extent
    n = position.shape[0]
    moved = ws.moved_body
    n_moved = 0
    if ws.pair_list[1] == 1:
        for i in range(n):
            outside = False
            for k in range(3):
                # left its built box, or the box has shrunk by more than the skin (a body that was
                # built while falling fast keeps a large box, and large boxes make large grid cells)
                grown = half_extent[i, k] + skin - built[i, k]
                if abs(position[i, k] - origin[i, k]) + grown > skin or grown < -skin:
                    outside = True
            if outside:
                if n_moved * PARTIAL_UPDATE_SHARE >= n:
                    n_moved = n  # too many: rebuild all
                    break
                moved[n_moved] = i
                n_moved += 1
        if n_moved == 0:
            return ws.pair_list[0]
    else:
        n_moved = n
    if n_moved < n:
        count = _update_moved_pairs(position, half_extent, dynamic, skin, moved[:n_moved], ws)
        if count >= 0:
            ws.pair_list[0] = count
            return count
    for i in range(n):
        for k in range(3):
            origin[i, k] = position[i, k]
            built[i, k] = half_extent[i, k] + skin
    # the narrow phase's witnesses belong to pairs: set the valid old list aside to carry them over
    n_old = ws.pair_list[0] if ws.pair_list[1] == 1 else 0
    old_key = np.empty(n_old, dtype=np.int64)
    old_witness = np.empty((n_old, 3))
    for p in range(n_old):
        old_key[p] = ws.pair_a[p] * n + ws.pair_b[p]
        for k in range(3):
            old_witness[p, k] = ws.pair_witness[p, k]
    count = find_pairs(position, built, dynamic, ws.bucket_start, ws.bucket_body, ws.bucket_key, ws.bucket_box,
                       ws.bucket_fill, ws.pair_a, ws.pair_b, chunks)
    if count >= 0:
        _carry_witnesses(old_key, old_witness, ws.pair_a, ws.pair_b, ws.pair_witness, count, n)
    ws.pair_list[0] = count
    ws.pair_list[1] = 1 if count >= 0 else 0
    return count


@njit(**JIT)
def _update_moved_pairs(position, half_extent, dynamic, skin, moved, ws):
    """Rebuild the boxes of the moved bodies, search their pairs again and merge them into the sorted list.

    Returns the new number of pairs, or -1 if the buffers are too small (the
    caller then rebuilds everything, which may report the overflow).
    """
    origin = ws.pair_origin
    built = ws.pair_extent
    is_moved = ws.body_moved
    for i in moved:
        is_moved[i] = True
        for k in range(3):
            origin[i, k] = position[i, k]
            built[i, k] = half_extent[i, k] + skin
    cell_size = _fill_grid(origin, built, ws.bucket_start, ws.bucket_body, ws.bucket_key, ws.bucket_box,
                           ws.bucket_fill)
    # partners of the moved bodies, each pair once, as keys a * n + b
    n = position.shape[0]
    room = PARTNERS_PER_MOVED_BODY * moved.shape[0]
    partner = np.empty(room, dtype=np.int64)
    new_key = np.empty(room, dtype=np.int64)
    n_new = 0
    for i in moved:
        first = n_new
        n_new = _append_partners(i, -1, origin, built, dynamic, ws.bucket_start, ws.bucket_body, ws.bucket_key,
                                 ws.bucket_box, cell_size, partner, n_new, room)
        if n_new < 0:
            _clear_moved(moved, is_moved)
            return -1
        kept = first
        for k in range(first, n_new):
            j = partner[k]
            if is_moved[j] and j < i:
                continue  # found from j's side too
            new_key[kept] = min(i, j) * n + max(i, j)
            kept += 1
        n_new = kept
    new_key = np.sort(new_key[:n_new])
    # drop the old pairs of moved bodies (setting their witnesses aside, in key order, for the pairs
    # found again; past the room a witness is just dropped), then merge from the back (the list only
    # grows at its end)
    pair_a = ws.pair_a
    pair_b = ws.pair_b
    witness = ws.pair_witness
    dropped_key = np.empty(room, dtype=np.int64)
    dropped_witness = np.empty((room, 3))
    n_dropped = 0
    kept = 0
    for p in range(ws.pair_list[0]):
        if not (is_moved[pair_a[p]] or is_moved[pair_b[p]]):
            pair_a[kept] = pair_a[p]
            pair_b[kept] = pair_b[p]
            for k in range(3):
                witness[kept, k] = witness[p, k]
            kept += 1
        elif n_dropped < room:
            dropped_key[n_dropped] = pair_a[p] * n + pair_b[p]
            for k in range(3):
                dropped_witness[n_dropped, k] = witness[p, k]
            n_dropped += 1
    _clear_moved(moved, is_moved)
    total = kept + n_new
    if total > pair_a.shape[0]:
        ws.pair_list[1] = 0  # the list is half-merged: the full rebuild must not read it
        return -1
    old = kept - 1
    fresh = n_new - 1
    last_dropped = n_dropped - 1
    for w in range(total - 1, -1, -1):
        if fresh < 0:
            break  # the old pairs left are already in place
        if old >= 0 and pair_a[old] * n + pair_b[old] > new_key[fresh]:
            pair_a[w] = pair_a[old]
            pair_b[w] = pair_b[old]
            for k in range(3):
                witness[w, k] = witness[old, k]
            old -= 1
        else:
            key = new_key[fresh]
            pair_a[w] = key // n
            pair_b[w] = key % n
            while last_dropped >= 0 and dropped_key[last_dropped] > key:
                last_dropped -= 1
            found = last_dropped >= 0 and dropped_key[last_dropped] == key
            for k in range(3):
                witness[w, k] = dropped_witness[last_dropped, k] if found else 0.0
            fresh -= 1
    return total


@njit(**JIT)
def _carry_witnesses(old_key, old_witness, pair_a, pair_b, witness, count, n):
    """Witnesses of the new list's pairs from the old sorted list (keys a * n + b); zeros for new pairs."""
    cursor = 0
    for p in range(count):
        key = pair_a[p] * n + pair_b[p]
        while cursor < old_key.shape[0] and old_key[cursor] < key:
            cursor += 1
        found = cursor < old_key.shape[0] and old_key[cursor] == key
        for k in range(3):
            witness[p, k] = old_witness[cursor, k] if found else 0.0


@njit(**JIT)
def _clear_moved(moved, is_moved):
    for i in moved:
        is_moved[i] = False
