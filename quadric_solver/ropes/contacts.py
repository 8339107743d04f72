"""Rope contacts: each segment is a capsule (its axis inflated by the rope radius).

Contacts are found once per substep (rope_collide) and solved by sequential impulses inside the rope
substep (solve_rope_contacts), with Coulomb friction, two-way with dynamic bodies:

- nodes against planes, box-container walls and tube walls (for a capsule these touch first at an end),
- segments against ellipsoids (the segment point deepest in the ellipsoid's metric, then an exact
  sphere-ellipsoid distance),
- segments against segments of any rope, itself included (closest points of the two axes).

Candidates come from a hashed uniform grid over segment midpoints. Contacts are speculative: a pair
closer than what can be travelled in the substep is kept and may close at most its gap, so ropes do not
tunnel at the speeds they reach.
"""
import math
from typing import NamedTuple

import numpy as np
from numba import njit

from ..collision.broadphase import cell_hash
from ..math3d import JIT, cross, quat_to_matrix, world_inverse_inertia
from ..model import STATIC_PLANE, STATIC_TUBE, STATIC_WALL
from .impulses import apply_node_impulse, node_impulse_arrays

KIND_STATIC, KIND_BODY, KIND_ROPE = 0, 1, 2


class ContactArrays(NamedTuple):
    """The arrays a contact sweep reads per contact (a small tuple: fields of the large rope State are costly
    to read in per-contact loops of compiled code)."""
    contact_kind: np.ndarray
    contact_nodes: np.ndarray
    contact_t: np.ndarray
    contact_other: np.ndarray
    contact_point: np.ndarray
    work_contact_center: np.ndarray
    work_contact_inv_inertia: np.ndarray
    node_velocity: np.ndarray
    node_w: np.ndarray
    seg_rope: np.ndarray
    rope_node_start: np.ndarray
    rope_seg_start: np.ndarray


@njit(**JIT)
def _contact_arrays(rope_model, state):
    return ContactArrays(state.contact_kind, state.contact_nodes, state.contact_t, state.contact_other,
                         state.contact_point, state.work_contact_center, state.work_contact_inv_inertia,
                         state.node_velocity, state.work_node_w, rope_model.seg_rope, rope_model.rope_node_start,
                         rope_model.rope_seg_start)
CONTACT_ERP = 0.2      # fraction of the overlap beyond the slop removed per substep
CONTACT_SLOP = 0.02    # overlap left alone, as a fraction of the rope radius


class CollideArrays(NamedTuple):
    """What contact generation reads and writes per candidate pair, as one small tuple (see ContactArrays)."""
    node_position: np.ndarray
    node_inv_mass: np.ndarray
    node_attachment: np.ndarray
    att_body: np.ndarray
    seg_rope: np.ndarray
    rope_node_start: np.ndarray
    rope_seg_start: np.ndarray
    rope_radius: np.ndarray
    rope_friction: np.ndarray
    seg_rest_length: np.ndarray
    semi_axes: np.ndarray
    body_material: np.ndarray
    material_friction: np.ndarray
    contact_count: np.ndarray
    contact_kind: np.ndarray
    contact_rope: np.ndarray
    contact_nodes: np.ndarray
    contact_t: np.ndarray
    contact_other: np.ndarray
    contact_normal: np.ndarray
    contact_point: np.ndarray
    contact_gap: np.ndarray
    contact_friction: np.ndarray
    contact_impulse: np.ndarray


@njit(**JIT)
def _collide_arrays(rope_model, state, model):
    return CollideArrays(state.node_position, rope_model.node_inv_mass, rope_model.node_attachment, rope_model.att_body, rope_model.seg_rope, rope_model.rope_node_start, rope_model.rope_seg_start, rope_model.rope_radius, rope_model.rope_friction, rope_model.seg_rest_length, model.semi_axes, model.body_material, model.material_friction, state.contact_count, state.contact_kind, state.contact_rope, state.contact_nodes, state.contact_t, state.contact_other, state.contact_normal, state.contact_point, state.contact_gap, state.contact_friction, state.contact_impulse)


@njit(**JIT)
def _build_grid(model, state, cell):
    """Bucket every segment by the grid cell of its midpoint (counting sort into a hashed table)."""
    rope_radius = model.rope_radius
    rope_node_start = model.rope_node_start
    rope_seg_start = model.rope_seg_start
    grid_bucket_start = state.grid_bucket_start
    node_position = state.node_position
    grid_cell = state.grid_cell
    grid_key = state.grid_key
    grid_fill = state.grid_fill
    grid_items = state.grid_items
    table = grid_bucket_start.shape[0] - 1
    grid_bucket_start[:] = 0
    for r in range(rope_radius.shape[0]):
        n0 = rope_node_start[r]
        s0 = rope_seg_start[r]
        for s in range(s0, rope_seg_start[r + 1]):
            a = n0 + s - s0
            for c in range(3):
                mid = 0.5 * (node_position[a, c] + node_position[a + 1, c])
                grid_cell[s, c] = int(math.floor(mid / cell))
            key = cell_hash(grid_cell[s, 0], grid_cell[s, 1], grid_cell[s, 2], table - 1)
            grid_key[s] = key
            grid_bucket_start[key + 1] += 1
    for k in range(table):
        grid_bucket_start[k + 1] += grid_bucket_start[k]
    grid_fill[:] = 0
    for s in range(grid_key.shape[0]):
        key = grid_key[s]
        grid_items[grid_bucket_start[key] + grid_fill[key]] = s
        grid_fill[key] += 1


@njit(**JIT, inline="always")
def _segment_nodes(model, seg_rope, s):
    r = seg_rope[s]
    a = model.rope_node_start[r] + s - model.rope_seg_start[r]
    return a, a + 1


@njit(**JIT, inline="always")
def _emit(ar, kind, rope, node_a, node_b, t, other, other_t, nx, ny, nz, px, py, pz, gap, friction):
    c = ar.contact_count[0]
    if c >= ar.contact_kind.shape[0]:
        ar.contact_count[1] += 1  # overflow: dropped
        return
    ar.contact_kind[c] = kind
    ar.contact_rope[c] = rope
    ar.contact_nodes[c, 0] = node_a
    ar.contact_nodes[c, 1] = node_b
    ar.contact_t[c, 0] = t
    ar.contact_other[c] = other
    ar.contact_t[c, 1] = other_t
    ar.contact_normal[c, 0] = nx
    ar.contact_normal[c, 1] = ny
    ar.contact_normal[c, 2] = nz
    ar.contact_point[c, 0] = px
    ar.contact_point[c, 1] = py
    ar.contact_point[c, 2] = pz
    ar.contact_gap[c] = gap
    ar.contact_friction[c] = friction
    ar.contact_impulse[c, :] = 0.0
    ar.contact_count[0] = c + 1


@njit(**JIT, inline="always")
def _point_ellipsoid(qx, qy, qz, a0, a1, a2):
    """Closest point on the ellipsoid x^2/a0^2 + ... = 1 to q (local frame) and the signed distance
    (negative inside), by safeguarded Newton on the Lagrange multiplier t: x_i = a_i^2 q_i / (a_i^2 + t)."""
    s0, s1, s2 = a0 * a0, a1 * a1, a2 * a2
    inside = qx * qx / s0 + qy * qy / s1 + qz * qz / s2 < 1.0
    lo = -min(s0, min(s1, s2))
    norm_q = math.sqrt(qx * qx + qy * qy + qz * qz)
    hi = max(a0, max(a1, a2)) * norm_q + 1e-12
    if inside:
        hi = 0.0
    else:
        lo = 0.0
    t = 0.5 * (lo + hi)
    for _ in range(60):
        e0 = a0 * qx / (s0 + t)
        e1 = a1 * qy / (s1 + t)
        e2 = a2 * qz / (s2 + t)
        f = e0 * e0 + e1 * e1 + e2 * e2 - 1.0
        if f > 0.0:
            lo = t
        else:
            hi = t
        df = -2.0 * (e0 * e0 / (s0 + t) + e1 * e1 / (s1 + t) + e2 * e2 / (s2 + t))
        step = t - f / df if df != 0.0 else 0.5 * (lo + hi)
        t = step if lo < step < hi else 0.5 * (lo + hi)
        if hi - lo < 1e-14 * (1.0 + abs(t)):
            break
    x0 = s0 * qx / (s0 + t)
    x1 = s1 * qy / (s1 + t)
    x2 = s2 * qz / (s2 + t)
    dist = math.sqrt((qx - x0) ** 2 + (qy - x1) ** 2 + (qz - x2) ** 2)
    # outward normal: gradient at the surface point
    nx, ny, nz = x0 / s0, x1 / s1, x2 / s2
    nn = math.sqrt(nx * nx + ny * ny + nz * nz)
    return x0, x1, x2, nx / nn, ny / nn, nz / nn, (-dist if inside else dist)


@njit(**JIT, inline="always")
def _segment_segment(p0, p1, q0, q1):
    """Parameters (s, t) of the closest points of segments p0p1 and q0q1 (clamped)."""
    d1x, d1y, d1z = p1[0] - p0[0], p1[1] - p0[1], p1[2] - p0[2]
    d2x, d2y, d2z = q1[0] - q0[0], q1[1] - q0[1], q1[2] - q0[2]
    rx, ry, rz = p0[0] - q0[0], p0[1] - q0[1], p0[2] - q0[2]
    a = d1x * d1x + d1y * d1y + d1z * d1z
    e = d2x * d2x + d2y * d2y + d2z * d2z
    f = d2x * rx + d2y * ry + d2z * rz
    c = d1x * rx + d1y * ry + d1z * rz
    b = d1x * d2x + d1y * d2y + d1z * d2z
    denom = a * e - b * b
    s = min(max((b * f - c * e) / denom, 0.0), 1.0) if denom > 1e-14 * a * e else 0.0
    t = (b * s + f) / e
    if t < 0.0:
        t = 0.0
        s = min(max(-c / a, 0.0), 1.0)
    elif t > 1.0:
        t = 1.0
        s = min(max((b - c) / a, 0.0), 1.0)
    return s, t


@njit(**JIT)
def rope_collide(rope_model, rope_state, model, body_position, body_orientation, body_rotation, h):
    """Find this substep's rope contacts (static colliders, ellipsoids, rope segments)."""
    static_kind = model.static_kind
    static_point = model.static_point
    static_normal = model.static_normal
    material_friction = model.material_friction
    static_material = model.static_material
    static_u = model.static_u
    static_v = model.static_v
    static_size = model.static_size
    semi_axes = model.semi_axes
    seg_rest_length = rope_model.seg_rest_length
    rope_radius = rope_model.rope_radius
    rope_friction = rope_model.rope_friction
    rope_node_start = rope_model.rope_node_start
    node_inv_mass = rope_model.node_inv_mass
    state = rope_state
    ar = _collide_arrays(rope_model, state, model)
    seg_rope = rope_model.seg_rope
    rope_seg_start = rope_model.rope_seg_start
    node_position = state.node_position
    grid_bucket_start = state.grid_bucket_start
    grid_items = state.grid_items
    grid_cell = state.grid_cell
    state.contact_count[:] = 0
    n_seg = seg_rest_length.shape[0]
    if n_seg == 0:
        return
    # speculative reach: what nodes and bodies can travel in this substep, at least one rope radius
    node_speed = 0.0
    node_velocity = state.node_velocity
    for i in range(node_velocity.shape[0]):
        v = node_velocity[i]
        node_speed = max(node_speed, math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]))
    max_radius = 0.0
    max_len = 0.0
    for r in range(rope_radius.shape[0]):
        max_radius = max(max_radius, rope_radius[r])
    for s in range(n_seg):
        max_len = max(max_len, seg_rest_length[s])
    reach = 2.0 * node_speed * h

    # --- nodes against static colliders
    for r in range(rope_radius.shape[0]):
        radius = rope_radius[r]
        margin = 0.5 * radius + reach
        mu_rope = rope_friction[r]
        n0 = rope_node_start[r]
        n1 = rope_node_start[r + 1]
        for i in range(n0, n1):
            if node_inv_mass[i] == 0.0:
                continue
            x = node_position[i]
            # the node as an end of one of its segments
            node_a, node_b, t = (i, i + 1, 0.0) if i + 1 < n1 else (i - 1, i, 1.0)
            for k in range(static_kind.shape[0]):
                kind = static_kind[k]
                p = static_point[k]
                nrm = static_normal[k]
                mu = math.sqrt(mu_rope * material_friction[static_material[k]])
                dx, dy, dz = x[0] - p[0], x[1] - p[1], x[2] - p[2]
                if kind == STATIC_PLANE or kind == STATIC_WALL:
                    side = dx * nrm[0] + dy * nrm[1] + dz * nrm[2]
                    gap = side - radius
                    if gap > margin:
                        continue
                    if kind == STATIC_WALL:
                        # one-sided: the node must be on the inner side (or less than a radius through) and
                        # over the rectangle
                        if side <= -radius:
                            continue
                        u = static_u[k]
                        v = static_v[k]
                        if abs(dx * u[0] + dy * u[1] + dz * u[2]) > static_size[k, 0] or \
                                abs(dx * v[0] + dy * v[1] + dz * v[2]) > static_size[k, 1]:
                            continue
                    _emit(ar, KIND_STATIC, r, node_a, node_b, t, k, 0.0, nrm[0], nrm[1], nrm[2],
                          x[0] - side * nrm[0], x[1] - side * nrm[1], x[2] - side * nrm[2], gap, mu)
                elif kind == STATIC_TUBE:
                    tube_radius = static_size[k, 0]
                    along = dx * nrm[0] + dy * nrm[1] + dz * nrm[2]
                    if abs(along) > static_size[k, 1]:
                        continue
                    rx, ry, rz = dx - along * nrm[0], dy - along * nrm[1], dz - along * nrm[2]
                    radial = math.sqrt(rx * rx + ry * ry + rz * rz)
                    # inside the tube (or less than a radius through its wall)
                    if radial >= tube_radius + radius or radial < 1e-12:
                        continue
                    gap = tube_radius - radial - radius
                    if gap > margin:
                        continue
                    inward_x, inward_y, inward_z = -rx / radial, -ry / radial, -rz / radial
                    _emit(ar, KIND_STATIC, r, node_a, node_b, t, k, 0.0, inward_x, inward_y, inward_z,
                          x[0] - (tube_radius - radial) * inward_x, x[1] - (tube_radius - radial) * inward_y,
                          x[2] - (tube_radius - radial) * inward_z, gap, mu)

    # --- grid over segment midpoints: two touching capsules have midpoints within one cell
    # (a segment pair's own reach, from its relative speed, is at most twice the global one)
    cell = max_len + 2.0 * max_radius + 2.0 * reach + 1e-9
    _build_grid(rope_model, state, cell)
    table = grid_bucket_start.shape[0] - 1

    # --- segments against ellipsoids
    # cells holding segments at all: a body's query is clipped to them
    occupied_lo = grid_cell[0].copy()
    occupied_hi = grid_cell[0].copy()
    for s in range(n_seg):
        for k in range(3):
            occupied_lo[k] = min(occupied_lo[k], grid_cell[s, k])
            occupied_hi[k] = max(occupied_hi[k], grid_cell[s, k])
    for b in range(body_position.shape[0]):
        axes = semi_axes[b]
        bound = max(axes[0], max(axes[1], axes[2]))
        extent = bound + 0.5 * max_len + max_radius + reach
        c = body_position[b]
        lo0 = max(int(math.floor((c[0] - extent) / cell)), occupied_lo[0])
        lo1 = max(int(math.floor((c[1] - extent) / cell)), occupied_lo[1])
        lo2 = max(int(math.floor((c[2] - extent) / cell)), occupied_lo[2])
        hi0 = min(int(math.floor((c[0] + extent) / cell)), occupied_hi[0])
        hi1 = min(int(math.floor((c[1] + extent) / cell)), occupied_hi[1])
        hi2 = min(int(math.floor((c[2] + extent) / cell)), occupied_hi[2])
        if lo0 > hi0 or lo1 > hi1 or lo2 > hi2:
            continue
        whole = (hi0 - lo0 + 1) * (hi1 - lo1 + 1) * (hi2 - lo2 + 1) > 4 * n_seg
        for ix in range(lo0, hi0 + 1):
            for iy in range(lo1, hi1 + 1):
                for iz in range(lo2, hi2 + 1):
                    if whole and (ix, iy, iz) != (lo0, lo1, lo2):
                        continue
                    key = cell_hash(ix, iy, iz, table - 1)
                    first, last = (0, n_seg) if whole else (grid_bucket_start[key], grid_bucket_start[key + 1])
                    for item in range(first, last):
                        # a body much larger than the ropes tests every segment rather than walk empty cells
                        s = item if whole else grid_items[item]
                        if not whole and (grid_cell[s, 0] != ix or grid_cell[s, 1] != iy or grid_cell[s, 2] != iz):
                            continue
                        a = rope_node_start[seg_rope[s]] + s - rope_seg_start[seg_rope[s]]
                        mx = 0.5 * (node_position[a, 0] + node_position[a + 1, 0]) - c[0]
                        my = 0.5 * (node_position[a, 1] + node_position[a + 1, 1]) - c[1]
                        mz = 0.5 * (node_position[a, 2] + node_position[a + 1, 2]) - c[2]
                        if mx * mx + my * my + mz * mz > extent * extent:
                            continue
                        _segment_body(ar, s, b, body_position, body_rotation, reach)

    # --- segments against segments (each pair once: the lower index asks)
    for s in range(n_seg):
        for ox in range(-1, 2):
            for oy in range(-1, 2):
                for oz in range(-1, 2):
                    ix = grid_cell[s, 0] + ox
                    iy = grid_cell[s, 1] + oy
                    iz = grid_cell[s, 2] + oz
                    key = cell_hash(ix, iy, iz, table - 1)
                    for item in range(grid_bucket_start[key], grid_bucket_start[key + 1]):
                        o = grid_items[item]
                        if o <= s:
                            continue
                        if grid_cell[o, 0] != ix or grid_cell[o, 1] != iy or grid_cell[o, 2] != iz:
                            continue
                        # midpoints further apart than the two half lengths, radii and reach cannot touch
                        a = rope_node_start[seg_rope[s]] + s - rope_seg_start[seg_rope[s]]
                        b = rope_node_start[seg_rope[o]] + o - rope_seg_start[seg_rope[o]]
                        dx = node_position[a, 0] + node_position[a + 1, 0] - node_position[b, 0] - node_position[b + 1, 0]
                        dy = node_position[a, 1] + node_position[a + 1, 1] - node_position[b, 1] - node_position[b + 1, 1]
                        dz = node_position[a, 2] + node_position[a + 1, 2] - node_position[b, 2] - node_position[b + 1, 2]
                        # speculative distance from the two segments' relative speed: ropes falling
                        # together side by side get no speculative contacts between them
                        pair_reach = 2.0 * h * _relative_speed_bound(node_velocity, a, b)
                        limit = seg_rest_length[s] + seg_rest_length[o] + 2.0 * (
                            rope_radius[seg_rope[s]] + rope_radius[seg_rope[o]] + pair_reach)
                        if dx * dx + dy * dy + dz * dz > limit * limit:
                            continue
                        _segment_segment_contact(ar, s, o, pair_reach)


@njit(**JIT, inline="always")
def _relative_speed_bound(node_velocity, a, b):
    """Largest speed of a point of segment (a, a+1) relative to a point of segment (b, b+1).

    Points move with the linear blend of their nodes' velocities, so their relative velocity is a
    convex combination of the four node differences and its length is at most the largest of those.
    """
    largest = 0.0
    for i in range(a, a + 2):
        for j in range(b, b + 2):
            dx = node_velocity[i, 0] - node_velocity[j, 0]
            dy = node_velocity[i, 1] - node_velocity[j, 1]
            dz = node_velocity[i, 2] - node_velocity[j, 2]
            largest = max(largest, dx * dx + dy * dy + dz * dz)
    return math.sqrt(largest)


@njit(**JIT)
def _segment_body(ar, s, b, body_position, body_rotation, reach):
    semi_axes = ar.semi_axes
    material_friction = ar.material_friction
    body_material = ar.body_material
    node_position = ar.node_position
    seg_rope = ar.seg_rope
    rope_radius = ar.rope_radius
    node_inv_mass = ar.node_inv_mass
    node_attachment = ar.node_attachment
    att_body = ar.att_body
    rope_friction = ar.rope_friction
    r = seg_rope[s]
    radius = rope_radius[r]
    a, bn = _segment_nodes(ar, seg_rope, s)
    if node_inv_mass[a] == 0.0 and node_inv_mass[bn] == 0.0:
        return
    # a segment tied to this body by one of its nodes rests against it by construction
    for node in (a, bn):
        att = node_attachment[node]
        if att >= 0 and att_body[att] == b:
            return
    rot = body_rotation[b]
    axes = semi_axes[b]
    c = body_position[b]
    # both ends in the body frame
    pa = node_position[a]
    pb = node_position[bn]
    la0 = rot[0, 0] * (pa[0] - c[0]) + rot[1, 0] * (pa[1] - c[1]) + rot[2, 0] * (pa[2] - c[2])
    la1 = rot[0, 1] * (pa[0] - c[0]) + rot[1, 1] * (pa[1] - c[1]) + rot[2, 1] * (pa[2] - c[2])
    la2 = rot[0, 2] * (pa[0] - c[0]) + rot[1, 2] * (pa[1] - c[1]) + rot[2, 2] * (pa[2] - c[2])
    e0 = rot[0, 0] * (pb[0] - pa[0]) + rot[1, 0] * (pb[1] - pa[1]) + rot[2, 0] * (pb[2] - pa[2])
    e1 = rot[0, 1] * (pb[0] - pa[0]) + rot[1, 1] * (pb[1] - pa[1]) + rot[2, 1] * (pb[2] - pa[2])
    e2 = rot[0, 2] * (pb[0] - pa[0]) + rot[1, 2] * (pb[1] - pa[1]) + rot[2, 2] * (pb[2] - pa[2])
    # the segment point deepest in the ellipsoid's own metric (quadratic in t)
    w0, w1, w2 = 1.0 / (axes[0] * axes[0]), 1.0 / (axes[1] * axes[1]), 1.0 / (axes[2] * axes[2])
    ee = w0 * e0 * e0 + w1 * e1 * e1 + w2 * e2 * e2
    t = -(w0 * la0 * e0 + w1 * la1 * e1 + w2 * la2 * e2) / ee if ee > 0.0 else 0.0
    t = min(max(t, 0.0), 1.0)
    q0, q1, q2 = la0 + t * e0, la1 + t * e1, la2 + t * e2
    bound = max(axes[0], max(axes[1], axes[2]))
    if math.sqrt(q0 * q0 + q1 * q1 + q2 * q2) > bound + radius + reach:
        return
    x0, x1, x2, n0, n1, n2, dist = _point_ellipsoid(q0, q1, q2, axes[0], axes[1], axes[2])
    gap = dist - radius
    if gap > 0.5 * radius + reach:
        return
    nx = rot[0, 0] * n0 + rot[0, 1] * n1 + rot[0, 2] * n2
    ny = rot[1, 0] * n0 + rot[1, 1] * n1 + rot[1, 2] * n2
    nz = rot[2, 0] * n0 + rot[2, 1] * n1 + rot[2, 2] * n2
    px = c[0] + rot[0, 0] * x0 + rot[0, 1] * x1 + rot[0, 2] * x2
    py = c[1] + rot[1, 0] * x0 + rot[1, 1] * x1 + rot[1, 2] * x2
    pz = c[2] + rot[2, 0] * x0 + rot[2, 1] * x1 + rot[2, 2] * x2
    mu = math.sqrt(rope_friction[r] * material_friction[body_material[b]])
    _emit(ar, KIND_BODY, r, a, bn, t, b, 0.0, nx, ny, nz, px, py, pz, gap, mu)


@njit(**JIT)
def _segment_segment_contact(ar, s, o, reach):
    node_position = ar.node_position
    seg_rope = ar.seg_rope
    rope_radius = ar.rope_radius
    seg_rest_length = ar.seg_rest_length
    rope_friction = ar.rope_friction
    rs = seg_rope[s]
    ro = seg_rope[o]
    ra = rope_radius[rs]
    rb = rope_radius[ro]
    if rs == ro:
        # neighbours along the same rope always touch near their joint: skip pairs closer along the rope
        # than the two radii can keep apart (a U-turn needs an arc of about pi r)
        between = 0.0
        for k in range(s + 1, o):
            between += seg_rest_length[k]
        if between < math.pi * ra:
            return
    a0, a1 = _segment_nodes(ar, seg_rope, s)
    b0, b1 = _segment_nodes(ar, seg_rope, o)
    p0 = node_position[a0]
    p1 = node_position[a1]
    q0 = node_position[b0]
    q1 = node_position[b1]
    ts, to = _segment_segment(p0, p1, q0, q1)
    dx = p0[0] + ts * (p1[0] - p0[0]) - q0[0] - to * (q1[0] - q0[0])
    dy = p0[1] + ts * (p1[1] - p0[1]) - q0[1] - to * (q1[1] - q0[1])
    dz = p0[2] + ts * (p1[2] - p0[2]) - q0[2] - to * (q1[2] - q0[2])
    dist = math.sqrt(dx * dx + dy * dy + dz * dz)
    gap = dist - ra - rb
    if gap > 0.25 * (ra + rb) + reach or dist < 1e-12:
        return
    mu = math.sqrt(rope_friction[rs] * rope_friction[ro])
    _emit(ar, KIND_ROPE, rs, a0, a1, ts, o, to, dx / dist, dy / dist, dz / dist, 0.0, 0.0, 0.0, gap, mu)


# ----------------------------------------------------------------------------------------------
# solve

@njit(**JIT, inline="always")
def _quad_node(ca, node, nx, ny, nz, mx, my, mz):
    w = ca.node_w[node]
    return (nx * (w[0, 0] * mx + w[0, 1] * my + w[0, 2] * mz) + ny * (w[1, 0] * mx + w[1, 1] * my + w[1, 2] * mz)
            + nz * (w[2, 0] * mx + w[2, 1] * my + w[2, 2] * mz))


@njit(**JIT, inline="always")
def _contact_velocity(ca, c, body_linear_velocity, body_angular_velocity):
    """Velocity of the rope point relative to the other side."""
    a = ca.contact_nodes[c, 0]
    b = ca.contact_nodes[c, 1]
    t = ca.contact_t[c, 0]
    vx = (1.0 - t) * ca.node_velocity[a, 0] + t * ca.node_velocity[b, 0]
    vy = (1.0 - t) * ca.node_velocity[a, 1] + t * ca.node_velocity[b, 1]
    vz = (1.0 - t) * ca.node_velocity[a, 2] + t * ca.node_velocity[b, 2]
    kind = ca.contact_kind[c]
    other = ca.contact_other[c]
    if kind == KIND_BODY:
        w = body_angular_velocity[other]
        rx = ca.contact_point[c, 0] - ca.work_contact_center[c, 0]
        ry = ca.contact_point[c, 1] - ca.work_contact_center[c, 1]
        rz = ca.contact_point[c, 2] - ca.work_contact_center[c, 2]
        cx, cy, cz = cross(w[0], w[1], w[2], rx, ry, rz)
        vx -= body_linear_velocity[other, 0] + cx
        vy -= body_linear_velocity[other, 1] + cy
        vz -= body_linear_velocity[other, 2] + cz
    elif kind == KIND_ROPE:
        o0, o1 = _segment_nodes(ca, ca.seg_rope, other)
        u = ca.contact_t[c, 1]
        vx -= (1.0 - u) * ca.node_velocity[o0, 0] + u * ca.node_velocity[o1, 0]
        vy -= (1.0 - u) * ca.node_velocity[o0, 1] + u * ca.node_velocity[o1, 1]
        vz -= (1.0 - u) * ca.node_velocity[o0, 2] + u * ca.node_velocity[o1, 2]
    return vx, vy, vz


@njit(**JIT, inline="always")
def _apply_contact(ca, imp, c, px, py, pz, body_linear_velocity, body_angular_velocity, body_inv_mass):
    a = ca.contact_nodes[c, 0]
    b = ca.contact_nodes[c, 1]
    t = ca.contact_t[c, 0]
    apply_node_impulse(imp, a, (1.0 - t) * px, (1.0 - t) * py, (1.0 - t) * pz,
                       body_linear_velocity, body_angular_velocity, body_inv_mass)
    apply_node_impulse(imp, b, t * px, t * py, t * pz, body_linear_velocity, body_angular_velocity,
                       body_inv_mass)
    kind = ca.contact_kind[c]
    other = ca.contact_other[c]
    if kind == KIND_BODY:
        wb = body_inv_mass[other]
        body_linear_velocity[other, 0] -= wb * px
        body_linear_velocity[other, 1] -= wb * py
        body_linear_velocity[other, 2] -= wb * pz
        rx = ca.contact_point[c, 0] - ca.work_contact_center[c, 0]
        ry = ca.contact_point[c, 1] - ca.work_contact_center[c, 1]
        rz = ca.contact_point[c, 2] - ca.work_contact_center[c, 2]
        tx, ty, tz = cross(rx, ry, rz, -px, -py, -pz)
        ii = ca.work_contact_inv_inertia[c]
        body_angular_velocity[other, 0] += ii[0, 0] * tx + ii[0, 1] * ty + ii[0, 2] * tz
        body_angular_velocity[other, 1] += ii[1, 0] * tx + ii[1, 1] * ty + ii[1, 2] * tz
        body_angular_velocity[other, 2] += ii[2, 0] * tx + ii[2, 1] * ty + ii[2, 2] * tz
    elif kind == KIND_ROPE:
        o0, o1 = _segment_nodes(ca, ca.seg_rope, other)
        u = ca.contact_t[c, 1]
        apply_node_impulse(imp, o0, -(1.0 - u) * px, -(1.0 - u) * py, -(1.0 - u) * pz,
                           body_linear_velocity, body_angular_velocity, body_inv_mass)
        apply_node_impulse(imp, o1, -u * px, -u * py, -u * pz, body_linear_velocity,
                           body_angular_velocity, body_inv_mass)


@njit(**JIT, inline="always")
def _inverse_mass_along(ca, c, nx, ny, nz, body_inv_mass):
    a = ca.contact_nodes[c, 0]
    b = ca.contact_nodes[c, 1]
    t = ca.contact_t[c, 0]
    k = (1.0 - t) ** 2 * _quad_node(ca, a, nx, ny, nz, nx, ny, nz) + t * t * _quad_node(ca, b, nx, ny, nz,
                                                                                             nx, ny, nz)
    kind = ca.contact_kind[c]
    other = ca.contact_other[c]
    if kind == KIND_BODY:
        rx = ca.contact_point[c, 0] - ca.work_contact_center[c, 0]
        ry = ca.contact_point[c, 1] - ca.work_contact_center[c, 1]
        rz = ca.contact_point[c, 2] - ca.work_contact_center[c, 2]
        tx, ty, tz = cross(rx, ry, rz, nx, ny, nz)
        ii = ca.work_contact_inv_inertia[c]
        k += body_inv_mass[other] + (tx * (ii[0, 0] * tx + ii[0, 1] * ty + ii[0, 2] * tz)
                                     + ty * (ii[1, 0] * tx + ii[1, 1] * ty + ii[1, 2] * tz)
                                     + tz * (ii[2, 0] * tx + ii[2, 1] * ty + ii[2, 2] * tz))
    elif kind == KIND_ROPE:
        o0, o1 = _segment_nodes(ca, ca.seg_rope, other)
        u = ca.contact_t[c, 1]
        k += (1.0 - u) ** 2 * _quad_node(ca, o0, nx, ny, nz, nx, ny, nz) + u * u * _quad_node(
            ca, o1, nx, ny, nz, nx, ny, nz)
    return k


@njit(**JIT)
def prepare_rope_contacts(rope_model, state, body_position, body_orientation, body_inv_inertia_local):
    """Body centres and world inverse inertia of the body contacts (once per substep)."""
    contact_count = state.contact_count
    contact_kind = state.contact_kind
    contact_other = state.contact_other
    work_contact_center = state.work_contact_center
    work_contact_inv_inertia = state.work_contact_inv_inertia
    rot = np.empty((3, 3))
    for c in range(contact_count[0]):
        if contact_kind[c] != KIND_BODY:
            continue
        b = contact_other[c]
        work_contact_center[c, :] = body_position[b]
        quat_to_matrix(body_orientation[b], rot)
        world_inverse_inertia(rot, body_inv_inertia_local[b], work_contact_inv_inertia[c])


@njit(**JIT)
def solve_rope_contacts(rope_model, state, h, body_linear_velocity, body_angular_velocity, body_inv_mass):
    """One sequential-impulse sweep over the rope contacts: non-penetration (speculative), Coulomb friction."""
    contact_count = state.contact_count
    contact_normal = state.contact_normal
    contact_gap = state.contact_gap
    contact_rope = state.contact_rope
    contact_impulse = state.contact_impulse
    contact_friction = state.contact_friction
    rope_radius = rope_model.rope_radius
    ca = _contact_arrays(rope_model, state)
    imp = node_impulse_arrays(rope_model, state)
    for c in range(contact_count[0]):
        nx = contact_normal[c, 0]
        ny = contact_normal[c, 1]
        nz = contact_normal[c, 2]
        k = _inverse_mass_along(ca, c, nx, ny, nz, body_inv_mass)
        if k <= 0.0:
            continue
        vx, vy, vz = _contact_velocity(ca, c, body_linear_velocity, body_angular_velocity)
        vn = vx * nx + vy * ny + vz * nz
        gap = contact_gap[c]
        slop = CONTACT_SLOP * rope_radius[contact_rope[c]]
        # separating speed at least -gap/h: approach at most the gap this substep, or push out a fraction of an
        # overlap deeper than the slop
        target = -gap / h if gap > 0.0 else CONTACT_ERP * max(-gap - slop, 0.0) / h
        old = contact_impulse[c, 0]
        new = max(old - (vn - target) / k, 0.0)
        dn = new - old
        contact_impulse[c, 0] = new
        if dn != 0.0:
            _apply_contact(ca, imp, c, dn * nx, dn * ny, dn * nz, body_linear_velocity,
                           body_angular_velocity, body_inv_mass)
        # friction against the sliding velocity, bounded by mu times the normal impulse
        mu = contact_friction[c]
        if mu <= 0.0 or new <= 0.0:
            continue
        vx, vy, vz = _contact_velocity(ca, c, body_linear_velocity, body_angular_velocity)
        vn = vx * nx + vy * ny + vz * nz
        tx, ty, tz = vx - vn * nx, vy - vn * ny, vz - vn * nz
        speed = math.sqrt(tx * tx + ty * ty + tz * tz)
        if speed < 1e-12:
            continue
        tx, ty, tz = tx / speed, ty / speed, tz / speed
        kt = _inverse_mass_along(ca, c, tx, ty, tz, body_inv_mass)
        fx = contact_impulse[c, 1] - speed / kt * tx
        fy = contact_impulse[c, 2] - speed / kt * ty
        fz = contact_impulse[c, 3] - speed / kt * tz
        limit = mu * new
        mag = math.sqrt(fx * fx + fy * fy + fz * fz)
        if mag > limit:
            fx, fy, fz = fx * limit / mag, fy * limit / mag, fz * limit / mag
        dx = fx - contact_impulse[c, 1]
        dy = fy - contact_impulse[c, 2]
        dz = fz - contact_impulse[c, 3]
        contact_impulse[c, 1] = fx
        contact_impulse[c, 2] = fy
        contact_impulse[c, 3] = fz
        _apply_contact(ca, imp, c, dx, dy, dz, body_linear_velocity, body_angular_velocity, body_inv_mass)
