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

Bodies of other shapes (scenes with BodyShapes; see model.py) take the same
bounding-sphere test, then oriented boxes around their shapes; a pair apart
last substep then meets the gap along its witness (or the centre line), two
support points. The rest get a signed distance warm-started from the last
normal: the separating-axis test of box_box.py for two boxes (GJK where two
boxes apart are nearest at a vertex and the axis's patch misses it), Newton on the
normal for smooth shapes (smooth_contact.py), GJK/EPA otherwise
(convex_distance.py's contact_distance). They touch in a patch of up to PATCH
points (patches.py); against planes and walls the corners of their supporting
feature touch. Bodies of every shape meet the mesh colliders' triangles that a
bounding-volume hierarchy (bvh.py) finds
near them, in patches too (triangle_contact.py).

Contacts are written in increasing key order: key = (a * (N + S) + b) PATCH + k
for point k of a body pair a < b and (a * (N + S) + N + s) PATCH + k for body a
against static collider s (S counts the triangles too).
"""
import numpy as np
from numba import njit, prange

from ..math3d import JIT, JIT_PARALLEL, PARALLEL_CHUNKS, ZERO
from ..model import STATIC_PLANE, STATIC_TUBE, STATIC_WALL
from ..shapes.support import BOX, ELLIPSOID, PARAMS, bounding_radius, smooth_kind
from .convex_distance import contact_distance, new_search_scratch, witness_points
from .normal_refinement import minkowski_support
from .narrowphase import (boxes_overlap, ellipsoid_ellipsoid_depth, ellipsoid_tube_depth,
                          ellipsoids_separated_into, minimise_width_gap, minimise_width_gap_supports,
                          new_separation_scratch, plane_depth, quadratic_form, sym_at, width_gap)
from .box_box import box_box_distance, box_box_gap_is_distance
from .carried_contacts import REF_OFFSET, carried_motion, carry_pair, hold_contact, hold_pose
from .bvh import query
from .patches import PATCH, new_patch_scratch, pair_patch, plane_patch
from .smooth_contact import smooth_contact_distance
from .triangle_contact import new_triangle_scratch, triangle_patch


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
def _wall_holds(static_u, static_v, static_size, s, rx, ry, rz, nx, ny, nz):
    """Whether wall s (a one-sided finite rectangle) acts on a body whose centre is r from the wall's centre.

    It does when the centre lies on its inner side and over the rectangle. The test is on the centre, not on
    the contact points: a box container's walls meet at their edges, and a point pressed a little past one
    wall lies beyond the edge of the next, which must still hold it (a pebble in a corner sank through the
    floor when its deepest point had to lie over the floor's rectangle).
    """
    if rx * nx + ry * ny + rz * nz <= 0.0:
        return False
    du = rx * static_u[s, 0] + ry * static_u[s, 1] + rz * static_u[s, 2]
    dv = rx * static_v[s, 0] + ry * static_v[s, 1] + rz * static_v[s, 2]
    return abs(du) <= static_size[s, 0] and abs(dv) <= static_size[s, 1]


@njit(**JIT)
def _static_contact(static_kind, static_point, static_normal, static_u, static_v, static_size, s, position, shape,
                    i, bounding_radius, reach, out):
    """Depth of body i (centre, shape matrix) against static collider s, or -inf if they cannot touch.

    out receives the normal (3) and the contact point (3). Rows are read by index (see sym_at).
    """
    kind = static_kind[s]
    nx, ny, nz = static_normal[s, 0], static_normal[s, 1], static_normal[s, 2]
    rx = position[i, 0] - static_point[s, 0]
    ry = position[i, 1] - static_point[s, 1]
    rz = position[i, 2] - static_point[s, 2]
    if kind == STATIC_PLANE or kind == STATIC_WALL:
        m = sym_at(shape, i)
        depth = plane_depth(m, rx, ry, rz, nx, ny, nz)
        if depth < -reach:
            return -np.inf
        # the body's deepest point: its support point along -n
        mx, my, mz, half = quadratic_form(m, nx, ny, nz)
        px = position[i, 0] - mx / half
        py = position[i, 1] - my / half
        pz = position[i, 2] - mz / half
        if kind == STATIC_WALL and not _wall_holds(static_u, static_v, static_size, s, rx, ry, rz, nx, ny, nz):
            return -np.inf
        out[0] = nx
        out[1] = ny
        out[2] = nz
        out[3] = px + 0.5 * depth * nx
        out[4] = py + 0.5 * depth * ny
        out[5] = pz + 0.5 * depth * nz
        return depth
    # tube: the body must be inside the tube's radius and the deepest point within its length
    radius = static_size[s, 0]
    half_length = static_size[s, 1]
    along = rx * nx + ry * ny + rz * nz
    radial2 = rx * rx + ry * ry + rz * rz - along * along
    extent = bounding_radius + reach
    if radial2 >= radius * radius or np.sqrt(radial2) + extent < radius or abs(along) > half_length + extent:
        return -np.inf
    deepest = out[3:6]
    inward = out[0:3]
    depth = ellipsoid_tube_depth(position[i], shape[i], static_point[s], static_normal[s], radius, deepest, inward)
    if depth < -reach:
        return -np.inf
    axial = ((deepest[0] - static_point[s, 0]) * nx + (deepest[1] - static_point[s, 1]) * ny
             + (deepest[2] - static_point[s, 2]) * nz)
    if abs(axial) > half_length:
        return -np.inf
    for k in range(3):
        out[3 + k] = deepest[k] + 0.5 * depth * inward[k]
    return depth


@njit(**JIT, inline="always")
def _store_witness(witness, p, x, y, z):
    witness[p, 0] = x
    witness[p, 1] = y
    witness[p, 2] = z


@njit(**JIT)
def pair_pose_scratch():
    """A pair's kinds, params, positions and rotations, as shape_pair_distance takes them."""
    return np.empty(2, dtype=np.int64), np.empty((2, PARAMS)), np.empty((2, 3)), np.empty((2, 3, 3))


@njit(**JIT, inline="always")
def load_pair_shapes(kind, body_params, position, i, j, kinds, params, positions):
    """Bodies i and j's kinds, parameter rows and positions into a pair's scratch (pair_pose_scratch).

    Element by element: a row copied as a slice cost about as much as a box pair's distance.
    """
    for side in range(2):
        body = i if side == 0 else j
        kinds[side] = kind[body]
        for k in range(params.shape[1]):
            params[side, k] = body_params[body, k]
        for r in range(3):
            positions[side, r] = position[body, r]


@njit(**JIT, inline="always")
def load_pair_pose(kind, body_params, position, rotation, i, j, kinds, params, positions, rotations):
    """load_pair_shapes, and the two bodies' rotation matrices."""
    load_pair_shapes(kind, body_params, position, i, j, kinds, params, positions)
    for side in range(2):
        body = i if side == 0 else j
        for r in range(3):
            for k in range(3):
                rotations[side, r, k] = rotation[body, r, k]


@njit(**JIT)
def _shape_pair_scratch():
    """Scratch of _collide_shape_pair: pair_pose_scratch, then the patch's scratch, the patch and the search's."""
    return pair_pose_scratch() + (new_patch_scratch(), np.empty((PATCH, 4)), new_search_scratch())


@njit(**JIT)
def shape_pair_distance(kinds, params, hull_vertices, positions, rotations, hx, hy, hz, penetration, touching,
                        scratch=None):
    """(gap, nx, ny, nz) of shapes 0 (A) and 1 (B) from the unit normal guess h, normal from A to B: the
    separating-axis test for two boxes (a lower bound of the distance where they are apart, see box_box.py),
    Newton for two smooth shapes, GJK/EPA otherwise. ``touching``: h is the pair's normal of last substep.
    scratch: as for contact_distance."""
    if kinds[0] == BOX and kinds[1] == BOX:
        return box_box_distance(params[0, :3], positions[0], rotations[0], params[1, :3], positions[1], rotations[1])
    if smooth_kind(kinds[0]) and smooth_kind(kinds[1]):
        return smooth_contact_distance(kinds, params, hull_vertices, positions, rotations, hx, hy, hz, penetration,
                                       touching, scratch)
    return contact_distance(kinds, params, hull_vertices, positions, rotations, hx, hy, hz, penetration, scratch)


@njit(**JIT)
def _contact_buffers(ws):
    """The arrays _emit writes: ws.contact_a, contact_b, contact_key, contact_normal, contact_point, contact_depth."""
    return ws.contact_a, ws.contact_b, ws.contact_key, ws.contact_normal, ws.contact_point, ws.contact_depth


@njit(**JIT)
def _pair_arrays(ws):
    """The pair list and its results: ws.pair_a, pair_b, pair_witness, pair_depth, pair_normal, pair_point,
    pair_patch, pair_patch_count."""
    return (ws.pair_a, ws.pair_b, ws.pair_witness, ws.pair_depth, ws.pair_normal, ws.pair_point, ws.pair_patch,
            ws.pair_patch_count)


# of the pair's size: how much shallower than the measured depth a patch's deepest point may be. Along the normal
# the search returns, the features that meet hold a point at exactly that depth (the gap is evaluated there)
MISSED_DEPTH = 1e-4


@njit(**JIT)
def patch_at_depth(kinds, params, hull_vertices, positions, rotations, gap, nx, ny, nz, patch, count):
    """count, or 1 with patch[0] the witness points' midpoint at depth -gap where the patch misses that depth.

    The supporting features are chosen by heuristics (patches.py), and a hull's face can hold the deepest vertex
    without the edge that meets the other hull's edge: two pebbles resting edge on edge then got three points
    beside the crossing, 7% of the smallest half extent apart where the pebbles overlapped by 0.5%, and sank
    into each other over several substeps (4.3% in the hull benchmark). The one point where they meet is right.
    """
    deepest = -np.inf
    for k in range(count):
        deepest = max(deepest, patch[k, 3])
    if deepest >= -gap:
        return count
    scale = bounding_radius(kinds[0], params[0], hull_vertices) + bounding_radius(kinds[1], params[1], hull_vertices)
    if deepest >= -gap - MISSED_DEPTH * scale:
        return count
    out = np.empty(10)
    witness_points(kinds, params, hull_vertices, positions, rotations, gap, nx, ny, nz, scale, out)
    for r in range(3):
        patch[0, r] = 0.5 * (out[4 + r] + out[7 + r])
    patch[0, 3] = -gap
    return 1


@njit(**JIT)
def _collide_shape_pair(position, rotation, reach_of, shapes, pairs, p, i, j, hx, hy, hz, touching, scratch):
    """Pair p of bodies i < j, one of them not an ellipsoid, whose oriented boxes overlap: its contact patch
    into ``pairs`` (_pair_arrays).

    (hx, hy, hz) is the normal to start from (unit), the pair's normal of last substep where ``touching``.
    Leaves pair_depth at -inf where they stay apart. It takes arrays, not the workspace: a call that passed
    the workspace's 78 arrays cost more than a box pair's distance and patch together (1.2 us of 4). Even so
    the call costs about 0.3 us, so the caller tests the oriented boxes first.
    """
    kinds, params, positions, rotations, patch_scratch, patch, search_scratch = scratch
    _, _, witness, pair_depth, pair_normal, pair_point, pair_patch_points, pair_patch_count = pairs
    reach = reach_of[i] + reach_of[j]
    load_pair_pose(shapes.kind, shapes.params, position, rotation, i, j, kinds, params, positions, rotations)
    if not touching:
        # apart last substep, or new: the gap along the start direction bounds the distance from below (the
        # distance is the largest gap over all directions), so a pair still apart beyond the reach along it is
        # done in two support points. In a settled pile of rounded boxes that is about half the pairs.
        xx, xy, xz = minkowski_support(kinds, params, shapes.hull_vertices, positions, rotations, hx, hy, hz)
        if hx * xx + hy * xy + hz * xz < -reach:
            _store_witness(witness, p, hx, hy, hz)
            return
    gap, nx, ny, nz = shape_pair_distance(kinds, params, shapes.hull_vertices, positions, rotations, hx, hy, hz,
                                          shapes.penetration, touching, search_scratch)
    if gap > reach:
        _store_witness(witness, p, nx, ny, nz)
        return
    if gap > 0.0 and kinds[0] == BOX and kinds[1] == BOX and not box_box_gap_is_distance(
            params[0, :3], positions[0], rotations[0], params[1, :3], positions[1], rotations[1], gap, nx, ny, nz):
        # two boxes apart within reach, nearest at a vertex and a vertex or an edge: the separating axis only
        # bounds their distance from below, and its patch lay beside the nearest points, stating a wider gap
        # than the distance (a falling box then sank 4 to 9% into the one below), or the axis's gap itself (a
        # pair 11.5 mm apart kept as a contact 10.6 mm apart, its normal 23 degrees off): the exact distance
        # instead, and the patch along its normal only
        gap, nx, ny, nz = contact_distance(kinds, params, shapes.hull_vertices, positions, rotations, nx, ny, nz,
                                           shapes.penetration, search_scratch)
    count = 0
    if gap <= reach:
        count = pair_patch(kinds, params, shapes.hull_vertices, shapes.hull_faces, positions, rotations, nx, ny, nz,
                           reach, patch_scratch, patch)
        count = patch_at_depth(kinds, params, shapes.hull_vertices, positions, rotations, gap, nx, ny, nz, patch,
                               count)
    _store_witness(witness, p, nx, ny, nz)
    if count == 0:
        return
    pair_normal[p, 0] = nx
    pair_normal[p, 1] = ny
    pair_normal[p, 2] = nz
    pair_depth[p] = patch[0, 3]
    for k in range(3):
        pair_point[p, k] = patch[0, k]
    for m in range(1, count):
        for k in range(4):
            pair_patch_points[p, m - 1, k] = patch[m, k]
    pair_patch_count[p] = count - 1


@njit(**JIT)
def _collide_pair_range(stride, position, rotation, shape, reach_of, axes, bounding_radius, cache_key, cache_normal,
                        pairs, start, end, shapes, carried, velocity, h):
    """Depth, normal and point of pairs start..end into ``pairs`` (_pair_arrays; depth -inf: no contact).

    ``cache_key``: the warm-start cache's keys in use. Rows are read by index, not as views like position[i] (see
    sym_at); only the rare paths take views. ``carried``: _carried_arrays; ``velocity``: the bodies' linear and
    angular velocities before this substep's prediction, h the substep (carried_contacts.carried_motion).
    """
    pair_a, pair_b, witness, pair_depth, pair_normal, pair_point, pair_patch, pair_patch_count = pairs
    pair_source, cache_local, _ = carried
    linear_velocity, angular_velocity = velocity
    cache_count = cache_key.shape[0]
    normal = np.empty(3)
    sep_scratch, sep_chain, sep_lengths, sep_remainder = new_separation_scratch()
    shape_scratch = _shape_pair_scratch()
    # pair keys rise through the range and the cache is sorted: one search, then a merge walk
    cursor = (np.searchsorted(cache_key, (pair_a[start] * stride + pair_b[start]) * PATCH)
              if end > start else 0)
    for p in range(start, end):
        pair_depth[p] = -np.inf
        if shapes is not None:
            pair_patch_count[p] = 0
            pair_source[p] = -2
        i = pair_a[p]
        j = pair_b[p]
        dx = position[j, 0] - position[i, 0]
        dy = position[j, 1] - position[i, 1]
        dz = position[j, 2] - position[i, 2]
        reach_a = reach_of[i]
        reach_b = reach_of[j]
        reach = reach_a + reach_b
        extent = bounding_radius[i] + bounding_radius[j] + reach
        if dx * dx + dy * dy + dz * dz > extent * extent:
            continue
        key = (i * stride + j) * PATCH
        while cursor < cache_count and cache_key[cursor] < key:
            cursor += 1
        cached = cursor < cache_count and cache_key[cursor] < key + PATCH
        if shapes is not None:
            if shapes.kind[i] != ELLIPSOID or shapes.kind[j] != ELLIPSOID:
                # the oriented boxes around the shapes, here and not in the call: the call alone cost 5 to 10
                # times the test, which settles a fifth of the 1,000-box drop's candidate pairs
                size = shapes.size
                if not boxes_overlap(rotation, i, j, dx, dy, dz,
                                     (size[i, 0] + reach_a, size[i, 1] + reach_a, size[i, 2] + reach_a),
                                     (size[j, 0] + reach_b, size[j, 1] + reach_b, size[j, 2] + reach_b)):
                    continue
                if cached:
                    limit = min(shapes.reuse_length[i], shapes.reuse_length[j])
                    if limit > 0.0 and carried_motion(cache_local, cursor, position, rotation, linear_velocity,
                                                      angular_velocity, bounding_radius, i, j, h) <= limit:
                        rows = 1
                        while cursor + rows < cache_count and cache_key[cursor + rows] < key + PATCH:
                            rows += 1
                        nx, ny, nz, deepest = carry_pair(cache_local, cursor, rows, position, rotation, i, j,
                                                         pair_depth, pair_normal, pair_point, pair_patch,
                                                         pair_patch_count, p)
                        _store_witness(witness, p, nx, ny, nz)
                        if deepest < -reach:  # now beyond the reach (it shrinks as bodies slow): apart
                            pair_depth[p] = -np.inf
                            pair_patch_count[p] = 0
                        else:
                            pair_source[p] = cursor
                        continue
                    hx, hy, hz = cache_normal[cursor, 0], cache_normal[cursor, 1], cache_normal[cursor, 2]
                elif witness[p, 0] ** 2 + witness[p, 1] ** 2 + witness[p, 2] ** 2 > 0.5:
                    hx, hy, hz = witness[p, 0], witness[p, 1], witness[p, 2]
                else:
                    distance = np.sqrt(dx * dx + dy * dy + dz * dz)
                    hx, hy, hz = (dx / distance, dy / distance, dz / distance) if distance > 0.0 else (0.0, 0.0, 1.0)
                pair_source[p] = -1
                _collide_shape_pair(position, rotation, reach_of, shapes, pairs, p, i, j, hx, hy, hz, cached,
                                    shape_scratch)
                continue
        if cached:
            # touching last substep: the warm-started depth decides, the pre-tests would pass anyway
            sx = cache_normal[cursor, 0]
            sy = cache_normal[cursor, 1]
            sz = cache_normal[cursor, 2]
        else:
            # apart last time we looked: the width gap along the direction that separated them bounds the
            # depth from above, so most near misses of a resting pile end here, without the tests below.
            # A witness only ever rejects (exactly); what follows never depends on it, so contacts do not
            # depend on the pair list's history (a run with grown buffers equals one without, bit for bit)
            wx, wy, wz = witness[p, 0], witness[p, 1], witness[p, 2]
            if (wx * wx + wy * wy + wz * wz > 0.5
                    and width_gap(sym_at(shape, i), sym_at(shape, j), dx, dy, dz, wx, wy, wz) < -reach):
                continue
            if not boxes_overlap(rotation, i, j, dx, dy, dz,
                                 (axes[i, 0] + reach_a, axes[i, 1] + reach_a, axes[i, 2] + reach_a),
                                 (axes[j, 0] + reach_b, axes[j, 1] + reach_b, axes[j, 2] + reach_b)):
                continue
            # the width gap along the centre line bounds the depth from above
            distance = np.sqrt(dx * dx + dy * dy + dz * dz)
            ux, uy, uz = 0.0, 0.0, 1.0
            if distance > 0.0:
                ux = dx / distance
                uy = dy / distance
                uz = dz / distance
                if width_gap(sym_at(shape, i), sym_at(shape, j), dx, dy, dz, ux, uy, uz) < -reach:
                    _store_witness(witness, p, ux, uy, uz)
                    continue
            inflate_a = 1.0 + reach_a / min(axes[i, 0], min(axes[i, 1], axes[i, 2]))
            inflate_b = 1.0 + reach_b / min(axes[j, 0], min(axes[j, 1], axes[j, 2]))
            # the few pairs that get this far (newly within reach) may take views
            ca = position[i]
            cb = position[j]
            if ellipsoids_separated_into(ca, rotation[i], axes[i], cb, rotation[j],
                                         axes[j], inflate_a, inflate_b, sep_scratch, sep_chain,
                                         sep_lengths, sep_remainder):
                if distance > 0.0:
                    # apart, so Newton from the centre line finds the global minimum: its normal is a
                    # witness that usually settles this pair in one width gap for many substeps
                    _, nx, ny, nz = minimise_width_gap(sym_at(shape, i), sym_at(shape, j), dx, dy, dz, ux, uy, uz)
                    _store_witness(witness, p, nx, ny, nz)
                continue
            # a cold start from several directions (overlaps can have several local minima)
            normal[:] = 0.0
            depth = ellipsoid_ellipsoid_depth(ca, shape[i], rotation[i], cb, shape[j], rotation[j], normal, normal)
            sx = normal[0]
            sy = normal[1]
            sz = normal[2]
        # Newton from the start normal (a cold start's result is already converged: this polishes it
        # in one trial) also gives both support points
        depth, nx, ny, nz, oax, oay, oaz, obx, oby, obz = minimise_width_gap_supports(
            sym_at(shape, i), sym_at(shape, j), dx, dy, dz, sx, sy, sz)
        _store_witness(witness, p, nx, ny, nz)
        if depth < -reach:
            continue
        # the midpoint of the support points c_A + offset_A and c_B - offset_B
        pair_depth[p] = depth
        pair_normal[p, 0] = nx
        pair_normal[p, 1] = ny
        pair_normal[p, 2] = nz
        pair_point[p, 0] = position[i, 0] + 0.5 * (dx + oax - obx)
        pair_point[p, 1] = position[i, 1] + 0.5 * (dy + oay - oby)
        pair_point[p, 2] = position[i, 2] + 0.5 * (dz + oaz - obz)


@njit(**JIT_PARALLEL)
def _collide_pairs(stride, position, rotation, shape, reach, axes, bounding_radius, cache_key, cache_normal, pairs,
                   n_pairs, shapes, serial, carried, velocity, h):
    """All body pairs, in parallel chunks (each pair's result has its own slot, so chunking changes nothing); with
    ``serial``, in the calling thread. Arrays, not the model and workspace: a prange loop over a tuple of many
    arrays compiles several times slower (docs/numba.md)."""
    if serial:
        _collide_pair_range(stride, position, rotation, shape, reach, axes, bounding_radius, cache_key,
                            cache_normal, pairs, ZERO, n_pairs, shapes, carried, velocity, h)
        return
    chunks = min(n_pairs, PARALLEL_CHUNKS)
    for chunk in prange(chunks):
        _collide_pair_range(stride, position, rotation, shape, reach, axes, bounding_radius, cache_key,
                            cache_normal, pairs, chunk * n_pairs // chunks, (chunk + 1) * n_pairs // chunks, shapes,
                            carried, velocity, h)


@njit(**JIT, inline="always")
def _static_out_of_reach(static_kind, static_point, static_normal, s, m, position, i, reach):
    """Whether plane or wall s stays beyond ``reach`` of body i, judged by its bounding ellipsoid (matrix
    entries m, sym_at), whose depth bounds the shape's from above. False for a tube, which is not a plane."""
    return static_kind[s] != STATIC_TUBE and plane_depth(
        m, position[i, 0] - static_point[s, 0], position[i, 1] - static_point[s, 1],
        position[i, 2] - static_point[s, 2], static_normal[s, 0], static_normal[s, 1],
        static_normal[s, 2]) < -reach


@njit(**JIT)
def _emit_shape_statics(statics, n, stride, position, rotation, turn, shape, reach, shapes, contacts, i, count, stop,
                        scratch, patch):
    """Contacts of body i (not an ellipsoid) with the planes and walls, from slot count on; the next slot or -1.

    ``statics`` and ``contacts``: as _emit_inputs gives them; ``shape``: the bounding ellipsoids' matrices.
    Arrays, not the model and workspace, for the reason _collide_shape_pair gives: it runs once a body.
    Tubes hold ellipsoids only (Simulation refuses other shapes in scenes with tubes).
    """
    static_kind, static_point, static_normal, static_u, static_v, static_size = statics
    contact_a, contact_b, contact_key, contact_normal, contact_point, contact_depth = contacts
    m = sym_at(shape, i)
    for s in range(static_kind.shape[0]):
        kind = static_kind[s]
        if kind == STATIC_TUBE or _static_out_of_reach(static_kind, static_point, static_normal, s, m, position, i,
                                                       reach[i]):
            continue
        nx, ny, nz = static_normal[s, 0], static_normal[s, 1], static_normal[s, 2]
        rx = position[i, 0] - static_point[s, 0]
        ry = position[i, 1] - static_point[s, 1]
        rz = position[i, 2] - static_point[s, 2]
        if kind == STATIC_WALL and not _wall_holds(static_u, static_v, static_size, s, rx, ry, rz, nx, ny, nz):
            continue
        points = plane_patch(shapes.kind[i], shapes.params[i], shapes.hull_vertices, shapes.hull_faces, position[i],
                             rotation[i], static_point[s, 0], static_point[s, 1], static_point[s, 2], nx, ny, nz,
                             reach[i], turn[i], scratch, patch)
        for q in range(points):
            if count >= stop:
                return -1
            _emit(contact_a, contact_b, contact_key, contact_normal, contact_point, contact_depth, count, -1 - s, i,
                  (i * stride + n + s) * PATCH + q, nx, ny, nz, patch[q, 0], patch[q, 1], patch[q, 2], patch[q, 3])
            count += 1
    return count


@njit(**JIT)
def _emit_mesh_contacts(n, stride, position, rotation, shape, reach_of, bounding_radius, shapes, meshes, contacts, i,
                        count, stop, found, scratch, patch):
    """Contacts of body i with the mesh colliders' triangles near it, from slot count on, in key order.

    Arrays as for _emit_shape_statics. Returns (the next slot or -1 when the slots ran out, the candidate
    buffer, perhaps grown).
    """
    contact_a, contact_b, contact_key, contact_normal, contact_point, contact_depth = contacts
    reach = reach_of[i]
    extent = bounding_radius[i] + reach
    found_count, found = query(meshes.bvh_low, meshes.bvh_high, meshes.bvh_skip, meshes.bvh_first, meshes.bvh_count,
                               meshes.bvh_item, position[i, 0] - extent, position[i, 1] - extent,
                               position[i, 2] - extent, position[i, 0] + extent, position[i, 1] + extent,
                               position[i, 2] + extent, found)
    m = sym_at(shape, i)
    for f in range(found_count):
        t = found[f]
        nx, ny, nz = meshes.normal[t, 0], meshes.normal[t, 1], meshes.normal[t, 2]
        # the bounding ellipsoid's depth below the triangle's plane bounds the shape's
        if plane_depth(m, position[i, 0] - meshes.centre[t, 0], position[i, 1] - meshes.centre[t, 1],
                       position[i, 2] - meshes.centre[t, 2], nx, ny, nz) < -reach:
            continue
        points, nx, ny, nz = triangle_patch(shapes.kind[i], shapes.params[i], shapes.hull_vertices, shapes.hull_faces,
                                            position[i], rotation[i], meshes, t, reach, scratch, patch,
                                            shapes.penetration)
        s = meshes.first_static + t
        for k in range(points):
            if count >= stop:
                return -1, found
            _emit(contact_a, contact_b, contact_key, contact_normal, contact_point, contact_depth, count, -1 - s, i,
                  (i * stride + n + s) * PATCH + k, nx, ny, nz, patch[k, 0], patch[k, 1], patch[k, 2], patch[k, 3])
            count += 1
    return count, found


@njit(**JIT)
def _emit_body_range(stride, bodies, statics, pairs, contacts, n_pairs, first_body, end_body, start, stop, shapes,
                     meshes, carried):
    """Contacts of bodies first_body..end_body into contact slots start..stop, in key order.

    Each body's pairs (i, j), j increasing, come first, then its static
    colliders, then the mesh colliders' triangles (``meshes``: None where ``shapes`` is).
    The arrays come in the tuples of _emit_inputs and _carried_arrays. Returns the slot after the last contact, or
    -1 if the slots ran out.
    """
    position, rotation, shape, reach, turn, inv_mass, bounding_radius = bodies
    static_kind, static_point, static_normal, static_u, static_v, static_size = statics
    pair_a, pair_b, _, pair_depth, pair_normal, pair_point, pair_patch, pair_patch_count = pairs
    contact_a, contact_b, contact_key, contact_normal, contact_point, contact_depth = contacts
    n = position.shape[0]
    n_static = static_kind.shape[0]
    scratch = np.empty(6)
    patch_scratch = new_patch_scratch()
    patch = np.empty((PATCH, 4))
    has_triangles = False
    if meshes is not None:
        found = np.empty(64, dtype=np.int64)
        triangle_scratch = new_triangle_scratch()
        # shape scenes without mesh colliders carry an empty MeshColliders (one compiled specialisation for
        # both): an empty hierarchy's query cost 1.7 us a body, a tenth of a 1,000-box pile's narrow phase
        has_triangles = meshes.centre.shape[0] > 0
    count = start
    p = np.searchsorted(pair_a[:n_pairs], first_body)
    for i in range(first_body, end_body):
        while p < n_pairs and pair_a[p] == i:
            if pair_depth[p] != -np.inf:
                if count >= stop:
                    return -1
                key = (i * stride + pair_b[p]) * PATCH
                _emit(contact_a, contact_b, contact_key, contact_normal, contact_point, contact_depth, count, i,
                      pair_b[p], key, pair_normal[p, 0], pair_normal[p, 1], pair_normal[p, 2],
                      pair_point[p, 0], pair_point[p, 1], pair_point[p, 2], pair_depth[p])
                count += 1
                if shapes is not None:
                    for k in range(pair_patch_count[p]):
                        if count >= stop:
                            return -1
                        extra = pair_patch[p, k]
                        _emit(contact_a, contact_b, contact_key, contact_normal, contact_point, contact_depth, count,
                              i, pair_b[p], key + 1 + k, pair_normal[p, 0], pair_normal[p, 1], pair_normal[p, 2],
                              extra[0], extra[1], extra[2], extra[3])
                        count += 1
                    _hold_pair(carried, position, rotation, i, pair_b[p], p, count - 1 - pair_patch_count[p],
                               count, contact_normal, contact_point, contact_depth)
            p += 1
        # static colliders only matter for dynamic bodies
        if inv_mass[i] == 0.0:
            continue
        m = sym_at(shape, i)
        if shapes is not None:
            if shapes.kind[i] != ELLIPSOID:
                # most bodies are far from every plane and wall, and the call costs several times this bound
                for s in range(n_static):
                    if static_kind[s] != STATIC_TUBE and not _static_out_of_reach(
                            static_kind, static_point, static_normal, s, m, position, i, reach[i]):
                        count = _emit_shape_statics(statics, n, stride, position, rotation, turn, shape, reach,
                                                    shapes, contacts, i, count, stop, patch_scratch, patch)
                        if count < 0:
                            return -1
                        break
                if meshes is not None:
                    if has_triangles:
                        count, found = _emit_mesh_contacts(n, stride, position, rotation, shape, reach,
                                                           bounding_radius, shapes, meshes, contacts, i, count, stop,
                                                           found, triangle_scratch, patch)
                        if count < 0:
                            return -1
                continue
        for s in range(n_static):
            # most bodies are far from most planes and walls: a small inlined bound first, because
            # the full call below costs a few hundred nanoseconds in argument passing alone
            if _static_out_of_reach(static_kind, static_point, static_normal, s, m, position, i, reach[i]):
                continue
            depth = _static_contact(static_kind, static_point, static_normal, static_u, static_v, static_size, s,
                                    position, shape, i, bounding_radius[i], reach[i], scratch)
            if depth == -np.inf:
                continue
            if count >= stop:
                return -1
            _emit(contact_a, contact_b, contact_key, contact_normal, contact_point, contact_depth, count, -1 - s, i,
                  (i * stride + n + s) * PATCH, scratch[0], scratch[1], scratch[2], scratch[3], scratch[4], scratch[5],
                  depth)
            count += 1
        if meshes is not None:
            if has_triangles:
                count, found = _emit_mesh_contacts(n, stride, position, rotation, shape, reach, bounding_radius,
                                                   shapes, meshes, contacts, i, count, stop, found, triangle_scratch,
                                                   patch)
                if count < 0:
                    return -1
    return count


@njit(**JIT, inline="always")
def _hold_pair(carried, position, rotation, i, j, p, first, end, contact_normal, contact_point, contact_depth):
    """The held points of pair p's contacts first..end (carried_contacts.py): copied where they were carried,
    taken from the contacts where the pair was measured."""
    pair_source, cache_local, contact_local = carried
    source = pair_source[p]
    if source >= 0:
        for c in range(first, end):
            for k in range(contact_local.shape[1]):
                contact_local[c, k] = cache_local[source + c - first, k]
    elif source == -1:
        hold_pose(contact_local, first, position, rotation, i, j)  # once a pair, the same for each contact
        for c in range(first, end):
            hold_contact(contact_local, c, position, rotation, i, j, contact_normal[c, 0], contact_normal[c, 1],
                         contact_normal[c, 2], contact_point[c, 0], contact_point[c, 1], contact_point[c, 2],
                         contact_depth[c])
            if c > first:
                for k in range(REF_OFFSET, contact_local.shape[1]):
                    contact_local[c, k] = contact_local[first, k]


@njit(**JIT_PARALLEL)
def _emit_in_chunks(stride, bodies, statics, pairs, contacts, n_pairs, chunk_end, shapes, meshes, carried):
    """Chunk k of the bodies writes its contacts into the k-th equal share of the contact buffers, in parallel (one
    chunk: in the calling thread). Small tuples of the arrays it uses, not the model and workspace (see
    _collide_pairs)."""
    n = bodies[0].shape[0]
    capacity = contacts[0].shape[0]
    chunks = chunk_end.shape[0]
    if chunks == 1:
        chunk_end[0] = _emit_body_range(stride, bodies, statics, pairs, contacts, n_pairs, ZERO, n, ZERO, capacity,
                                        shapes, meshes, carried)
        return
    for k in prange(chunks):
        chunk_end[k] = _emit_body_range(stride, bodies, statics, pairs, contacts, n_pairs, k * n // chunks,
                                        (k + 1) * n // chunks, k * capacity // chunks, (k + 1) * capacity // chunks,
                                        shapes, meshes, carried)


@njit(**JIT)
def _emit_inputs(model, state, ws):
    """What _emit_body_range reads and writes besides the shapes: (stride, bodies, statics, pairs, contacts).

    stride: bodies plus static colliders (contact keys); bodies: position, rotation, shape, reach, turn, inv_mass,
    bounding_radius; statics: the planes' and walls' kind, point, normal, u, v, size; pairs: _pair_arrays;
    contacts: _contact_buffers."""
    stride = model.n_bodies + model.static_material.shape[0]
    bodies = (state.position, ws.rotation, ws.shape, ws.reach, ws.turn, model.inv_mass, model.bounding_radius)
    statics = (model.static_kind, model.static_point, model.static_normal, model.static_u, model.static_v,
               model.static_size)
    return stride, bodies, statics, _pair_arrays(ws), _contact_buffers(ws)


@njit(**JIT)
def _carried_arrays(state, ws):
    """What carried contacts read and write: ws.pair_source, state.cache_local, ws.contact_local."""
    return ws.pair_source, state.cache_local, ws.contact_local


def load_emit(model, state, ws, shapes=None, meshes=None):
    """Load _emit_body_range's own compiled code before any kernel that calls it, by a call on no bodies.

    Each cached kernel holds a copy of the functions it calls, and a call resolves to the first copy loaded. A
    process that compiles loads the callee's own first; one that loads from the cache, the first kernel's, and
    the copy in collide's parallel emit ran at half the speed of the callee's own (docs/numba.md).
    """
    stride, bodies, statics, pairs, contacts = _emit_inputs(model, state, ws)
    _emit_body_range(stride, bodies, statics, pairs, contacts, 0, ZERO, ZERO, ZERO, contacts[0].shape[0], shapes,
                     meshes, _carried_arrays(state, ws))


@njit(**JIT)
def collide(model, state, ws, n_pairs, serial, h, shapes=None, meshes=None):
    """Write contacts for all candidate pairs and static colliders. Returns count, or -1 on overflow.

    Pairs are collided in parallel chunks of pairs; then chunks of bodies write
    their contacts (pairs, then static colliders) in parallel into their own
    shares of the buffers, which are packed into one list in key order. A share
    that runs out reports an overflow, and the caller grows the buffers.
    With ``serial`` both run in the calling thread, as one chunk each: the
    same contacts in the same order. ``shapes``: the bodies' BodyShapes and ``meshes`` the
    MeshColliders; Simulation gives both in every scene, ellipsoids only too (None compiles another variant).
    h: the substep's length, which bounds how far a pair can move in it (carried_contacts.py).
    """
    n = model.n_bodies
    stride, bodies, statics, pairs, contacts = _emit_inputs(model, state, ws)
    carried = _carried_arrays(state, ws)
    _collide_pairs(stride, state.position, ws.rotation, ws.shape, ws.reach, model.semi_axes, model.bounding_radius,
                   state.cache_key[:state.cache_count[0]], state.cache_normal, pairs, n_pairs, shapes, serial,
                   carried, (ws.start_linear, ws.start_angular), h)
    chunk_end = np.empty(1 if serial else max(1, min(PARALLEL_CHUNKS, n)), dtype=np.int64)
    _emit_in_chunks(stride, bodies, statics, pairs, contacts, n_pairs, chunk_end, shapes, meshes, carried)
    chunks = chunk_end.shape[0]
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
            if ws.contact_local.shape[0] > 0:
                for m in range(ws.contact_local.shape[1]):
                    ws.contact_local[count, m] = ws.contact_local[c, m]
            count += 1
    return count
