"""Collision driver: candidate pairs and static colliders to contacts.

Pre-tests run cheapest first: bounding spheres; then pairs that had a contact
last substep go straight to the warm-started depth. A pair that was found
apart keeps a witness (ws.pair_witness, carried along with the pair list): the
direction of its last common normal. The width gap along any unit direction
bounds the depth from above, so one width gap along the witness rejects most
near misses of a resting pile. The witness only rejects: pairs it does not
reject meet oriented boxes, the width gap along the centre line, and the exact
characteristic-polynomial separation test on ellipsoids inflated to cover the
contact reach (a separated pair then gets its witness). Surviving pairs get an
exact signed depth and normal from the narrow phase.

Each body has a reach: the contact margin plus the distance it can travel this
substep (|v| h). A pair is kept as a contact when its depth exceeds minus the
sum of the reaches, so contacts that may close during the substep are solved
speculatively: fast bodies neither tunnel nor sink in, resting ones do not
jitter.

Contacts are written in increasing key order: key = a * (N + S) + b for a body
pair a < b and key = a * (N + S) + N + s for body a against static collider s.
"""
import numpy as np
from numba import njit, prange

from .math3d import JIT, JIT_PARALLEL, PARALLEL_CHUNKS
from .model import STATIC_PLANE, STATIC_TUBE, STATIC_WALL
from .narrowphase import (boxes_overlap, ellipsoid_ellipsoid_depth, ellipsoid_plane_depth, ellipsoid_tube_depth,
                          ellipsoids_separated_into, minimise_width_gap, minimise_width_gap_supports,
                          new_separation_scratch, support_point, width_gap_along)


@njit(**JIT, inline="always")
def _emit(contact_a, contact_b, contact_key, contact_normal, contact_point, contact_depth, count, a, b, key,
          nx, ny, nz, px, py, pz, depth):
    contact_a[count] = a
    contact_b[count] = b
    contact_key[count] = key
    contact_normal[count, 0] = nx
    contact_normal[count, 1] = ny
    contact_normal[count, 2] = nz
    contact_point[count, 0] = px
    contact_point[count, 1] = py
    contact_point[count, 2] = pz
    contact_depth[count] = depth


@njit(**JIT)
def _static_contact(kind, point, normal, u, v, size, center, shape, bounding_radius, reach, out):
    """Depth of a body (centre, shape matrix) against one static collider, or -inf if they cannot touch.

    out receives the normal (3) and the contact point (3).
    """
    if kind == STATIC_PLANE or kind == STATIC_WALL:
        depth = ellipsoid_plane_depth(center, shape, point, normal)
        if depth < -reach:
            return -np.inf
        px, py, pz = support_point(center, shape, normal[0], normal[1], normal[2], -1.0)
        if kind == STATIC_WALL:
            # one-sided finite rectangle: the body's centre must be on the inner side and
            # its deepest point must lie over the rectangle
            side = ((center[0] - point[0]) * normal[0] + (center[1] - point[1]) * normal[1]
                    + (center[2] - point[2]) * normal[2])
            if side <= 0.0:
                return -np.inf
            du = (px - point[0]) * u[0] + (py - point[1]) * u[1] + (pz - point[2]) * u[2]
            dv = (px - point[0]) * v[0] + (py - point[1]) * v[1] + (pz - point[2]) * v[2]
            if abs(du) > size[0] or abs(dv) > size[1]:
                return -np.inf
        out[0] = normal[0]
        out[1] = normal[1]
        out[2] = normal[2]
        out[3] = px + 0.5 * depth * normal[0]
        out[4] = py + 0.5 * depth * normal[1]
        out[5] = pz + 0.5 * depth * normal[2]
        return depth
    # tube: the body must be inside the tube's radius and the deepest point within its length
    radius = size[0]
    half_length = size[1]
    rx = center[0] - point[0]
    ry = center[1] - point[1]
    rz = center[2] - point[2]
    along = rx * normal[0] + ry * normal[1] + rz * normal[2]
    radial2 = rx * rx + ry * ry + rz * rz - along * along
    extent = bounding_radius + reach
    if radial2 >= radius * radius or np.sqrt(radial2) + extent < radius or abs(along) > half_length + extent:
        return -np.inf
    deepest = out[3:6]
    inward = out[0:3]
    depth = ellipsoid_tube_depth(center, shape, point, normal, radius, deepest, inward)
    if depth < -reach:
        return -np.inf
    axial = ((deepest[0] - point[0]) * normal[0] + (deepest[1] - point[1]) * normal[1]
             + (deepest[2] - point[2]) * normal[2])
    if abs(axial) > half_length:
        return -np.inf
    for k in range(3):
        out[3 + k] = deepest[k] + 0.5 * depth * inward[k]
    return depth


@njit(**JIT)
def _collide_pair_range(model, state, ws, start, end):
    """Depth, normal and point of pairs start..end into ws.pair_depth/normal/point (-inf: no contact)."""
    n = model.n_bodies
    stride = n + model.static_kind.shape[0]
    position = state.position
    cache_count = state.cache_count[0]
    cache_key = state.cache_key
    normal = np.empty(3)
    half_a = np.empty(3)
    half_b = np.empty(3)
    sep_scratch, sep_chain, sep_lengths, sep_remainder = new_separation_scratch()
    # pair keys rise through the range and the cache is sorted: one search, then a merge walk
    cursor = np.searchsorted(cache_key[:cache_count], ws.pair_a[start] * stride + ws.pair_b[start]) if end > start else 0
    for p in range(start, end):
        ws.pair_depth[p] = -np.inf
        i = ws.pair_a[p]
        j = ws.pair_b[p]
        ca = position[i]
        cb = position[j]
        dx = cb[0] - ca[0]
        dy = cb[1] - ca[1]
        dz = cb[2] - ca[2]
        reach_a = ws.reach[i]
        reach_b = ws.reach[j]
        reach = reach_a + reach_b
        extent = model.bounding_radius[i] + model.bounding_radius[j] + reach
        if dx * dx + dy * dy + dz * dz > extent * extent:
            continue
        key = i * stride + j
        while cursor < cache_count and cache_key[cursor] < key:
            cursor += 1
        witness = ws.pair_witness[p]
        if cursor < cache_count and cache_key[cursor] == key:
            # touching last substep: the warm-started depth decides, the pre-tests would pass anyway
            # (Newton called directly with scalars: passing array views costs more than it computes)
            sx = state.cache_normal[cursor, 0]
            sy = state.cache_normal[cursor, 1]
            sz = state.cache_normal[cursor, 2]
        else:
            # apart last time we looked: the width gap along the direction that separated them bounds the
            # depth from above, so most near misses of a resting pile end here, without the tests below.
            # A witness only ever rejects (exactly); what follows never depends on it, so contacts do not
            # depend on the pair list's history (a run with grown buffers equals one without, bit for bit)
            if (witness[0] ** 2 + witness[1] ** 2 + witness[2] ** 2 > 0.5 and
                    width_gap_along(ca, ws.shape[i], cb, ws.shape[j], witness[0], witness[1], witness[2]) < -reach):
                continue
            for k in range(3):
                half_a[k] = model.semi_axes[i, k] + reach_a
                half_b[k] = model.semi_axes[j, k] + reach_b
            if not boxes_overlap(ca, ws.rotation[i], half_a, cb, ws.rotation[j], half_b):
                continue
            # the width gap along the centre line bounds the depth from above
            distance = np.sqrt(dx * dx + dy * dy + dz * dz)
            ux, uy, uz = 0.0, 0.0, 1.0
            if distance > 0.0:
                ux = dx / distance
                uy = dy / distance
                uz = dz / distance
                if width_gap_along(ca, ws.shape[i], cb, ws.shape[j], ux, uy, uz) < -reach:
                    witness[0] = ux
                    witness[1] = uy
                    witness[2] = uz
                    continue
            inflate_a = 1.0 + reach_a / model.semi_axes[i].min()
            inflate_b = 1.0 + reach_b / model.semi_axes[j].min()
            if ellipsoids_separated_into(ca, ws.rotation[i], model.semi_axes[i], cb, ws.rotation[j],
                                         model.semi_axes[j], inflate_a, inflate_b, sep_scratch, sep_chain,
                                         sep_lengths, sep_remainder):
                if distance > 0.0:
                    # apart, so Newton from the centre line finds the global minimum: its normal is a
                    # witness that usually settles this pair in one width gap for many substeps
                    _, nx, ny, nz = minimise_width_gap(ws.shape[i], ws.shape[j], dx, dy, dz, ux, uy, uz)
                    witness[0] = nx
                    witness[1] = ny
                    witness[2] = nz
                continue
            # a cold start from several directions (overlaps can have several local minima)
            normal[:] = 0.0
            depth = ellipsoid_ellipsoid_depth(ca, ws.shape[i], ws.rotation[i], cb, ws.shape[j], ws.rotation[j],
                                              normal, normal)
            sx = normal[0]
            sy = normal[1]
            sz = normal[2]
        # Newton from the start normal (a cold start's result is already converged: this polishes it
        # in one trial) also gives both support points
        depth, nx, ny, nz, oax, oay, oaz, obx, oby, obz = minimise_width_gap_supports(
            ws.shape[i], ws.shape[j], dx, dy, dz, sx, sy, sz)
        witness[0] = nx
        witness[1] = ny
        witness[2] = nz
        if depth < -reach:
            continue
        pax, pay, paz = ca[0] + oax, ca[1] + oay, ca[2] + oaz
        pbx, pby, pbz = cb[0] - obx, cb[1] - oby, cb[2] - obz
        ws.pair_depth[p] = depth
        ws.pair_normal[p, 0] = nx
        ws.pair_normal[p, 1] = ny
        ws.pair_normal[p, 2] = nz
        ws.pair_point[p, 0] = 0.5 * (pax + pbx)
        ws.pair_point[p, 1] = 0.5 * (pay + pby)
        ws.pair_point[p, 2] = 0.5 * (paz + pbz)


@njit(**JIT_PARALLEL)
def _collide_pairs(model, state, ws, n_pairs):
    """All body pairs, in parallel chunks (each pair's result has its own slot)."""
    chunks = min(n_pairs, PARALLEL_CHUNKS)
    for chunk in prange(chunks):
        _collide_pair_range(model, state, ws, chunk * n_pairs // chunks, (chunk + 1) * n_pairs // chunks)


@njit(**JIT)
def _emit_body_range(model, state, ws, n_pairs, first_body, end_body, start, stop):
    """Contacts of bodies first_body..end_body into contact slots start..stop, in key order.

    Each body's pairs (i, j), j increasing, come first, then its static
    colliders. Returns the slot after the last contact, or -1 if the slots ran out.
    """
    n = model.n_bodies
    n_static = model.static_kind.shape[0]
    stride = n + n_static
    position = state.position
    scratch = np.empty(6)
    count = start
    p = np.searchsorted(ws.pair_a[:n_pairs], first_body)
    for i in range(first_body, end_body):
        while p < n_pairs and ws.pair_a[p] == i:
            if ws.pair_depth[p] != -np.inf:
                if count >= stop:
                    return -1
                normal = ws.pair_normal[p]
                point = ws.pair_point[p]
                _emit(ws.contact_a, ws.contact_b, ws.contact_key, ws.contact_normal, ws.contact_point,
                      ws.contact_depth, count, i, ws.pair_b[p], i * stride + ws.pair_b[p], normal[0], normal[1],
                      normal[2], point[0], point[1], point[2], ws.pair_depth[p])
                count += 1
            p += 1
        # static colliders only matter for dynamic bodies
        if model.inv_mass[i] == 0.0:
            continue
        for s in range(n_static):
            # most bodies are far from most planes and walls: a small inlined bound first, because
            # the full call below costs a few hundred nanoseconds in argument passing alone
            if (model.static_kind[s] != STATIC_TUBE and ellipsoid_plane_depth(
                    position[i], ws.shape[i], model.static_point[s], model.static_normal[s]) < -ws.reach[i]):
                continue
            depth = _static_contact(model.static_kind[s], model.static_point[s], model.static_normal[s],
                                    model.static_u[s], model.static_v[s], model.static_size[s], position[i],
                                    ws.shape[i], model.bounding_radius[i], ws.reach[i], scratch)
            if depth == -np.inf:
                continue
            if count >= stop:
                return -1
            _emit(ws.contact_a, ws.contact_b, ws.contact_key, ws.contact_normal, ws.contact_point,
                  ws.contact_depth, count, -1 - s, i, i * stride + n + s, scratch[0], scratch[1], scratch[2],
                  scratch[3], scratch[4], scratch[5], depth)
            count += 1
    return count


@njit(**JIT_PARALLEL)
def _emit_in_chunks(model, state, ws, n_pairs, chunk_end):
    """Chunk k of the bodies writes its contacts into the k-th equal share of the contact buffers, in parallel."""
    n = model.n_bodies
    capacity = ws.contact_key.shape[0]
    chunks = chunk_end.shape[0]
    for k in prange(chunks):
        chunk_end[k] = _emit_body_range(model, state, ws, n_pairs, k * n // chunks, (k + 1) * n // chunks,
                                        k * capacity // chunks, (k + 1) * capacity // chunks)


@njit(**JIT)
def collide(model, state, ws, n_pairs):
    """Write contacts for all candidate pairs and static colliders. Returns count, or -1 on overflow.

    Pairs are collided in parallel chunks of pairs; then chunks of bodies write
    their contacts (pairs, then static colliders) in parallel into their own
    shares of the buffers, which are packed into one list in key order. A share
    that runs out reports an overflow, and the caller grows the buffers.
    """
    _collide_pairs(model, state, ws, n_pairs)
    n = model.n_bodies
    chunks = max(1, min(PARALLEL_CHUNKS, n))
    chunk_end = np.empty(chunks, dtype=np.int64)
    _emit_in_chunks(model, state, ws, n_pairs, chunk_end)
    # pack the shares: each moves left (or stays), so a forward copy never overwrites unread contacts
    capacity = ws.contact_key.shape[0]
    count = 0
    for k in range(chunks):
        if chunk_end[k] < 0:
            return -1
        first = k * capacity // chunks
        if first == count:  # already in place
            count = chunk_end[k]
            continue
        for c in range(first, chunk_end[k]):
            ws.contact_a[count] = ws.contact_a[c]
            ws.contact_b[count] = ws.contact_b[c]
            ws.contact_key[count] = ws.contact_key[c]
            ws.contact_depth[count] = ws.contact_depth[c]
            for m in range(3):
                ws.contact_normal[count, m] = ws.contact_normal[c, m]
                ws.contact_point[count, m] = ws.contact_point[c, m]
            count += 1
    return count
