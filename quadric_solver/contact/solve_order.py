"""Solve order of the contact solver: spatial slabs run on threads, colours keep each thread busy.

Sequential impulses are Gauss-Seidel: a contact reads and writes the velocities
of its two bodies, so two contacts may run at the same time only if they share
no dynamic body.

* Slabs. The dynamic bodies are split into ``slabs`` bands of about equal count
  along x. A contact whose dynamic bodies lie in one slab belongs to that slab;
  the few that join two slabs form a last, boundary class. The slabs' contacts
  run in parallel, one slab per thread, and touch disjoint bodies; the boundary
  class runs alone after them, in every sweep. The result depends on the number
  of slabs, never on how many threads run them.
* Colours. Inside a class, contacts are ordered by a greedy colouring (no two
  contacts of one colour share a dynamic body). In key order, neighbouring
  contacts share body A and each waits for the previous one's velocity update;
  in colour order the CPU overlaps them (measured: 25-30% less time per sweep).
  The colouring is done in blocks of BLOCK contacts that follow each other in
  key order: a block's contacts, rows and bodies stay in cache while it is
  prepared, swept and stored. Coloured all at once, every colour walked the
  whole class, and a 100,000-body pile's phases that read contacts in slot
  order fetched each contact's and body's cache lines once per colour.
* Renumbering. The solver works on a copy of the velocities in which every
  slab's bodies are contiguous. With the bodies' own numbering, threads write
  neighbouring entries of the same cache lines, and two threads were no faster
  than one (measured).

Rows and impulses are stored in solve order (slot s); ``slot_contact[s]`` is the
contact (in key order) a slot holds and ``contact_slot`` the inverse.
"""
import numpy as np
from numba import njit, prange

from ..math3d import JIT, JIT_PARALLEL, PARALLEL_CHUNKS, ZERO

HISTOGRAM_BINS = 1024   # resolution of the equal-count split along x
SLAB_IMBALANCE = 1.25   # a slab may hold this many times its share of dynamic bodies before the split moves
COLOURS = 64            # colours tracked per body (one bit each); later contacts share the last bucket
BLOCK = 4096            # contacts coloured together (consecutive in key order within a class)


@njit(**JIT)
def _equal_count_bounds(position, dynamic, n_dynamic, bounds):
    """Split positions along x that leave about n_dynamic / slabs dynamic bodies in each slab."""
    slabs = bounds.shape[0] + 1
    lo = np.inf
    hi = -np.inf
    for i in range(position.shape[0]):
        if dynamic[i]:
            lo = min(lo, position[i, 0])
            hi = max(hi, position[i, 0])
    width = (hi - lo) / HISTOGRAM_BINS
    histogram = np.zeros(HISTOGRAM_BINS, dtype=np.int64)
    for i in range(position.shape[0]):
        if dynamic[i]:
            # clamped, so even a non-finite position lands in a bin
            histogram[max(0, min(int((position[i, 0] - lo) / width) if width > 0.0 else 0, HISTOGRAM_BINS - 1))] += 1
    seen = 0
    slab = 0
    for k in range(HISTOGRAM_BINS):
        seen += histogram[k]
        while slab < slabs - 1 and seen * slabs >= (slab + 1) * n_dynamic:
            bounds[slab] = lo + (k + 1) * width
            slab += 1
    while slab < slabs - 1:
        bounds[slab] = np.inf
        slab += 1


@njit(**JIT, inline="always")
def _slab_of(x, bounds):
    slab = 0
    while slab < bounds.shape[0] and x >= bounds[slab]:
        slab += 1
    return slab


@njit(**JIT)
def assign_slabs(position, dynamic, slabs, ws):
    """Slab of each body and the solve numbering (ws.body_slab, ws.solve_body, ws.solve_origin).

    The split positions (ws.slab_bounds) are kept from substep to substep and
    recomputed only when a slab holds more than SLAB_IMBALANCE times its share:
    a body that changes slab changes the solve order of its contacts, and a
    settled pile whose order changed every substep kept jittering (measured: its
    kinetic energy stayed 300 times higher). Bodies that are not dynamic take
    slab 0: the solver never changes their velocities, so they constrain no slab.
    """
    n = position.shape[0]
    n_dynamic = 0
    for i in range(n):
        if dynamic[i]:
            n_dynamic += 1
    fill = np.zeros(slabs + 1, dtype=np.int64)
    bounds = ws.slab_bounds
    for attempt in range(2):
        fill[:] = 0
        for i in range(n):
            s = _slab_of(position[i, 0], bounds) if dynamic[i] else 0
            ws.body_slab[i] = s
            fill[s + 1] += 1
        largest = 0
        for s in range(slabs):
            largest = max(largest, fill[s + 1] - (n - n_dynamic if s == 0 else 0))
        if attempt == 1 or largest * slabs <= SLAB_IMBALANCE * n_dynamic + slabs:
            break
        _equal_count_bounds(position, dynamic, n_dynamic, bounds)
    for s in range(slabs):
        fill[s + 1] += fill[s]
    for i in range(n):
        s = ws.body_slab[i]
        ws.solve_body[i] = fill[s]
        ws.solve_origin[fill[s]] = i
        fill[s] += 1


def order_bucket_count(slabs, contact_capacity):
    """Length of ws.order_counts: a counter per class, block and colour, plus one."""
    return (slabs + 1) * (contact_capacity // BLOCK + 1) * COLOURS + 1


@njit(**JIT)
def order_contacts(contact_a, contact_b, contact_key, n_contacts, dynamic, slabs, cache_key, cache_count, ws, serial):
    """Slot of every contact: grouped by class (slabs, then boundary), in blocks, colour order inside a block.

    Also writes per slot the solve indices of both bodies (statics keep their
    negative id), the warm-start cache row (-1 if the contact is new), and the
    slot range of each class in ws.slab_start[0 : slabs + 2].

    The classes touch disjoint colour state (a slab's bodies; the boundary
    keeps its own column) and disjoint counters, so the slabs are coloured and
    placed in parallel and the boundary after them; the result does not depend
    on the thread count, nor on ``serial`` (all in the calling thread). The parallel loops take arrays, not the
    workspace: a prange loop over a tuple of many arrays compiles several times slower (docs/numba.md).
    """
    _order_in_chunks(contact_a, contact_b, contact_key, n_contacts, dynamic, slabs, cache_key, cache_count,
                     ws.body_slab, ws.contact_class, ws.body_colours, ws.body_colour_block, ws.order_counts,
                     ws.slab_start, ws.solve_body, ws.contact_slot, ws.slot_contact, ws.slot_a, ws.slot_b,
                     ws.slot_cache, serial)


@njit(**JIT_PARALLEL)
def _order_in_chunks(contact_a, contact_b, contact_key, n_contacts, dynamic, slabs, cache_key, cache_count, body_slab,
                     contact_class, body_colours, body_colour_block, counts, slab_start, solve_body, contact_slot,
                     slot_contact, slot_a, slot_b, slot_cache, serial):
    """order_contacts on the workspace's arrays."""
    n_classes = slabs + 1
    blocks = n_contacts // BLOCK + 1  # per class, at most
    bucket = contact_slot  # holds each contact's bucket until the slots are known
    _clear_order(body_colour_block, counts, n_classes * blocks * COLOURS + 1)
    if serial:
        _classify_range(ZERO, n_contacts, contact_a, contact_b, dynamic, slabs, body_slab, contact_class)
        for k in range(slabs):
            _colour_class(k, slabs, blocks, n_contacts, contact_a, contact_b, dynamic, contact_class, body_colours,
                          body_colour_block, bucket, counts)
    else:
        chunks = min(n_contacts, PARALLEL_CHUNKS)
        for k in prange(chunks):
            _classify_range(k * n_contacts // chunks, (k + 1) * n_contacts // chunks, contact_a, contact_b, dynamic,
                            slabs, body_slab, contact_class)
        for k in prange(slabs):
            _colour_class(k, slabs, blocks, n_contacts, contact_a, contact_b, dynamic, contact_class, body_colours,
                          body_colour_block, bucket, counts)
    _colour_class(slabs, slabs, blocks, n_contacts, contact_a, contact_b, dynamic, contact_class, body_colours,
                  body_colour_block, bucket, counts)
    for k in range(n_classes * blocks * COLOURS):
        counts[k + 1] += counts[k]
    for k in range(n_classes + 1):
        slab_start[k] = counts[k * blocks * COLOURS]
    if serial:
        for k in range(slabs):
            _place_class(k, n_contacts, contact_a, contact_b, contact_key, cache_key, cache_count, contact_class,
                         solve_body, bucket, counts, contact_slot, slot_contact, slot_a, slot_b, slot_cache)
    else:
        for k in prange(slabs):
            _place_class(k, n_contacts, contact_a, contact_b, contact_key, cache_key, cache_count, contact_class,
                         solve_body, bucket, counts, contact_slot, slot_contact, slot_a, slot_b, slot_cache)
    _place_class(slabs, n_contacts, contact_a, contact_b, contact_key, cache_key, cache_count, contact_class,
                 solve_body, bucket, counts, contact_slot, slot_contact, slot_a, slot_b, slot_cache)


@njit(**JIT)
def _clear_order(colour_block, counts, n_counts):
    # a serial helper: in a parallel function an array expression becomes a parfor of its own
    colour_block[:] = -1
    counts[:n_counts] = 0


@njit(**JIT)
def _classify_range(start, end, contact_a, contact_b, dynamic, slabs, body_slab, contact_class):
    """Class of contacts start..end: the slab of its dynamic bodies, or the boundary (slabs) if they differ."""
    for c in range(start, end):
        a = contact_a[c]
        b = contact_b[c]
        a_moves = a >= 0 and dynamic[a]
        if a_moves and dynamic[b]:
            contact_class[c] = body_slab[b] if body_slab[a] == body_slab[b] else slabs
        elif dynamic[b]:
            contact_class[c] = body_slab[b]
        else:
            contact_class[c] = body_slab[a] if a_moves else 0


@njit(**JIT)
def _colour_class(klass, slabs, blocks, n_contacts, contact_a, contact_b, dynamic, contact_class, used, colour_block,
                  bucket, counts):
    """Greedy colours of one class's contacts, block by block in key order; counts per (block, colour)."""
    # colours a body took in another block do not count; a body's contacts are in its slab's class
    # or in the boundary class, which keep their colours apart (column 0 and 1)
    side = 1 if klass == slabs else 0
    fill = 0
    for c in range(n_contacts):
        if contact_class[c] != klass:
            continue
        block = klass * blocks + fill // BLOCK
        fill += 1
        a = contact_a[c]
        b = contact_b[c]
        a_moves = a >= 0 and dynamic[a]
        b_moves = dynamic[b]
        used_b = used[b, side] if b_moves and colour_block[b, side] == block else 0
        used_a = used[a, side] if a_moves and colour_block[a, side] == block else 0
        mask = used_a | used_b
        colour = 0
        while colour < COLOURS - 1 and (mask >> colour) & 1:
            colour += 1
        bit = np.int64(1) << colour
        if b_moves:
            used[b, side] = used_b | bit
            colour_block[b, side] = block
        if a_moves:
            used[a, side] = used_a | bit
            colour_block[a, side] = block
        bucket[c] = block * COLOURS + colour
        counts[bucket[c] + 1] += 1


@njit(**JIT)
def _place_class(klass, n_contacts, contact_a, contact_b, contact_key, cache_key, cache_count, contact_class,
                 solve_body, bucket, counts, contact_slot, slot_contact, slot_a, slot_b, slot_cache):
    """Slots of one class's contacts from the counted buckets, with bodies and warm-start cache rows."""
    cursor = 0
    for c in range(n_contacts):
        if contact_class[c] != klass:
            continue
        s = counts[bucket[c]]
        counts[bucket[c]] += 1
        contact_slot[c] = s
        slot_contact[s] = c
        a = contact_a[c]
        slot_a[s] = solve_body[a] if a >= 0 else a
        slot_b[s] = solve_body[contact_b[c]]
        # contacts and cache are both sorted by key: one merge walk finds last substep's impulses
        key = contact_key[c]
        while cursor < cache_count and cache_key[cursor] < key:
            cursor += 1
        slot_cache[s] = cursor if cursor < cache_count and cache_key[cursor] == key else -1


@njit(**JIT)
def gather_velocities(solve_origin, linear, angular, solve_linear, solve_angular):
    """Velocities into solve numbering."""
    for j in range(solve_origin.shape[0]):
        i = solve_origin[j]
        for k in range(3):
            solve_linear[j, k] = linear[i, k]
            solve_angular[j, k] = angular[i, k]


@njit(**JIT)
def scatter_velocities(solve_origin, solve_linear, solve_angular, linear, angular):
    """Velocities back into body numbering."""
    for j in range(solve_origin.shape[0]):
        i = solve_origin[j]
        for k in range(3):
            linear[i, k] = solve_linear[j, k]
            angular[i, k] = solve_angular[j, k]
