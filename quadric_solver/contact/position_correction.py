"""Position correction: after integration, pushes in position only for overlaps the split impulses left."""
import numpy as np
from numba import njit, prange

from ..collision.driver import load_pair_shapes, pair_pose_scratch, shape_pair_distance
from ..math3d import JIT, JIT_PARALLEL, PARALLEL_CHUNKS, cross, quat_to_matrix, ZERO
from ..shapes.support import ELLIPSOID, support_xyz
from .push_sweeps import UNSUPPORTED, clear_pseudo, overlap_aim, push_sweeps
from .rows import INV_MASS_A, INV_MASS_B, N_, row3


@njit(**JIT, inline="always")
def _support_height(orientation, semi_axes, body, nx, ny, nz):
    """Half-width along the unit world direction n of a body's ellipsoid: |diag(axes) R^T n| (read by index)."""
    # R^T n = conj(q) n q = n + 2 w (u x n) + 2 u x (u x n) with u = -(q_x, q_y, q_z)
    w = orientation[body, 0]
    ux, uy, uz = -orientation[body, 1], -orientation[body, 2], -orientation[body, 3]
    cx, cy, cz = cross(ux, uy, uz, nx, ny, nz)
    dx, dy, dz = cross(ux, uy, uz, cx, cy, cz)
    lx = semi_axes[body, 0] * (nx + 2.0 * (w * cx + dx))
    ly = semi_axes[body, 1] * (ny + 2.0 * (w * cy + dy))
    lz = semi_axes[body, 2] * (nz + 2.0 * (w * cz + dz))
    return np.sqrt(lx * lx + ly * ly + lz * lz)


@njit(**JIT, inline="always")
def _width_gap(nx, ny, nz, a, b, position, orientation, semi_axes):
    """n.(p_B - p_A) minus both half-widths along n (bodies in their own numbering; a < 0: static).

    Only its change is used: a static side's share is constant, so it is left out.
    """
    gap = (nx * position[b, 0] + ny * position[b, 1] + nz * position[b, 2]
           - _support_height(orientation, semi_axes, b, nx, ny, nz))
    if a >= 0:
        gap -= (nx * position[a, 0] + ny * position[a, 1] + nz * position[a, 2]
                + _support_height(orientation, semi_axes, a, nx, ny, nz))
    return gap


@njit(**JIT)
def _shape_support_height(orientation, semi_axes, shapes, body, nx, ny, nz):
    """Half-width along the unit world direction n of a body of any shape (BodyShapes): h(R^T n)."""
    if shapes.kind[body] == ELLIPSOID:
        return _support_height(orientation, semi_axes, body, nx, ny, nz)
    w = orientation[body, 0]
    ux, uy, uz = -orientation[body, 1], -orientation[body, 2], -orientation[body, 3]
    cx, cy, cz = cross(ux, uy, uz, nx, ny, nz)
    dx, dy, dz = cross(ux, uy, uz, cx, cy, cz)
    lx, ly, lz = nx + 2.0 * (w * cx + dx), ny + 2.0 * (w * cy + dy), nz + 2.0 * (w * cz + dz)
    px, py, pz = support_xyz(shapes.kind[body], shapes.params[body], shapes.hull_vertices, lx, ly, lz)
    return lx * px + ly * py + lz * pz


@njit(**JIT)
def _shape_width_gap(nx, ny, nz, a, b, position, orientation, semi_axes, shapes):
    """_width_gap for bodies of any shape (B's half-width along -n: a hull is not symmetric)."""
    gap = (nx * position[b, 0] + ny * position[b, 1] + nz * position[b, 2]
           - _shape_support_height(orientation, semi_axes, shapes, b, -nx, -ny, -nz))
    if a >= 0:
        gap -= (nx * position[a, 0] + ny * position[a, 1] + nz * position[a, 2]
                + _shape_support_height(orientation, semi_axes, shapes, a, nx, ny, nz))
    return gap


@njit(**JIT)
def _overlap_now(shapes, a, b, position, orientation, nx, ny, nz, scratch):
    """Overlap of bodies a and b (a pair not both ellipsoids) in their poses now, measured as the narrow phase
    does from their contact normal n (negative: apart)."""
    kinds, params, positions, rotations = scratch
    # the rotations from the quaternions: the matrices of the workspace are those of the substep's start
    load_pair_shapes(shapes.kind, shapes.params, position, a, b, kinds, params, positions)
    quat_to_matrix(orientation[a], rotations[0])
    quat_to_matrix(orientation[b], rotations[1])
    gap, _, _, _ = shape_pair_distance(kinds, params, shapes.hull_vertices, positions, rotations, nx, ny, nz,
                                       shapes.penetration, True)
    return -gap


@njit(**JIT_PARALLEL)
def correct_positions(slab_start, slabs, slot_a, slot_b, solve_origin, contact_slot, contact_row, contact_response,
                      slot_depth, slot_push, start_position, start_orientation, body_travel, position, orientation,
                      pseudo_linear, pseudo_angular, shape, semi_axes, n_contacts, h, baumgarte, slop, max_sweeps,
                      tolerance, sweep_change, push_slot, gap_slot, push_count, push_row, push_body, body_pushed,
                      body_level, level_start, level_adjacent, level_queue, serial, shapes=None):
    """After integration: push apart, in position only, the contacts the split impulses left too deep.

    The split impulses aim each contact's overlap at the end of the substep
    from a first-order prediction (plus a bound on a spinning body's swing)
    and may stop before they converge: in a 1,000-body drop they missed by up
    to 7% of the smallest semi-axis (bodies spinning at 100 rad/s, six
    sweeps not enough where a heavy body lands on a light one), or converge
    on a prediction a spinning body outruns. The step runs this after every
    substep with contacts. It measures every contact's
    overlap again with the new poses: the narrow phase's overlap plus how far
    the bodies' centres and half-widths along the contact normal moved
    towards each other (the overlap of two convex bodies' shadows on a line
    is at least their true overlap, so this never measures too little; but
    it can measure far too much where a body turned, so a pair with a body
    of another shape than an ellipsoid that seems too deep is measured
    again as the narrow phase does, and the smaller measure is taken).
    Where a contact ended more than the slop deeper than they aimed, sweeps
    push the bodies apart until none is, and the pushes move the bodies
    directly, as Box2D v2's position correction does, without touching the
    velocities: no kinetic energy is added.

    The pushes only translate (see _penetration_sweep): turning pushes
    measured along the old normals swung elongated bodies into their other
    neighbours. Of a contact's two bodies, the one fewer contacts away from
    an immovable body takes a quarter of the other's share (support_levels,
    _pack_listed; equally far: equal shares), so pushes travel up a stack
    from the floor in a few sweeps instead of going back and forth between
    the floor and the top. The gaps the pushes could close are looked for
    again after sweeps 2, 4, 8, ... and before the sweeps stop: listed only
    after the first, pushes travelling along a chain of bodies closed gaps
    that sweep had not reached; listing every gap within the largest push
    instead swept 60% of a 100,000-body pile's contacts.

    With ``serial``, all of it runs in the calling thread, with the same result.
    ``shapes``: the bodies' BodyShapes (None: ellipsoids only). Returns the sweeps
    run (0 when no contact needed it).
    """
    if serial:
        largest = _correction_targets(ZERO, n_contacts, contact_slot, slot_a, slot_b, solve_origin, contact_row,
                                      slot_depth, slot_push, start_position, start_orientation, body_travel, position,
                                      orientation, semi_axes, h, baumgarte, slop, shapes)
    else:
        chunks = min(n_contacts, PARALLEL_CHUNKS)
        largest = -np.inf
        for k in prange(chunks):
            top = _correction_targets(k * n_contacts // chunks, (k + 1) * n_contacts // chunks, contact_slot,
                                      slot_a, slot_b, solve_origin, contact_row, slot_depth, slot_push, start_position,
                                      start_orientation, body_travel, position, orientation, semi_axes, h,
                                      baumgarte, slop, shapes)
            largest = max(largest, top)
    if largest <= 0.0:
        return 0
    clear_pseudo(pseudo_linear, pseudo_angular, body_pushed)
    support_levels(n_contacts, slot_a, slot_b, contact_response, slot_depth, slot_push, slop, body_level, level_start,
                   level_adjacent, level_queue)
    # no retargeting, so the velocity, shape and swing arguments are only placeholders
    sweeps = push_sweeps(slab_start, slabs, slot_a, slot_b, solve_origin, contact_row, contact_response, slot_depth,
                          slot_push, pseudo_linear, pseudo_angular, pseudo_linear, pseudo_angular, shape, body_travel,
                          h, baumgarte, slop, max_sweeps, tolerance, sweep_change, push_slot, gap_slot, push_count,
                          push_row, push_body, body_pushed, body_level, largest, True, False, False, serial)
    n = solve_origin.shape[0]
    if serial:
        _apply_pushes(ZERO, n, solve_origin, pseudo_linear, position, h)
        return sweeps
    body_chunks = min(n, PARALLEL_CHUNKS)
    for k in prange(body_chunks):
        _apply_pushes(k * n // body_chunks, (k + 1) * n // body_chunks, solve_origin, pseudo_linear, position, h)
    return sweeps


@njit(**JIT)
def support_levels(n_contacts, slot_a, slot_b, contact_response, slot_depth, slot_push, slop, body_level, level_start,
                   level_adjacent, level_queue):
    """body_level (solve numbering): the fewest contacts between a body and an immovable one (static, kinematic).

    1 for a body touching one, 2 for one on top of that, ...; UNSUPPORTED
    where no chain of contacts reaches one. Only touching contacts count:
    those the narrow phase found overlapping or within the slop, and those
    the correction pushes. A speculative contact across a gap supports
    nothing: through one, a body about to land on a column took a lower
    level from the next column than the body it was landing on, and that
    body was pushed from above and below. A breadth-first search over those
    contacts, in O(bodies + contacts): the neighbours are listed per body
    (level_start, level_adjacent), then the levels spread from the bodies
    that touch an immovable one (level_queue).
    """
    n = body_level.shape[0]
    response = contact_response
    level_start[:] = 0
    end = 0
    for s in range(n):
        body_level[s] = UNSUPPORTED
    for c in range(n_contacts):
        if slot_depth[c] < -slop and slot_push[c] <= 0.0:
            continue
        a = slot_a[c]
        b = slot_b[c]
        moves_a = a >= 0 and response[c, INV_MASS_A] > 0.0
        moves_b = response[c, INV_MASS_B] > 0.0
        if moves_a and moves_b:
            level_start[a + 1] += 1
            level_start[b + 1] += 1
        elif moves_b or moves_a:
            body = b if moves_b else a
            if body_level[body] != 1:
                body_level[body] = 1
                level_queue[end] = body
                end += 1
    for s in range(n):
        level_start[s + 1] += level_start[s]
    # fill with level_start[s] as body s's cursor; afterwards it holds the start of s + 1: shifted back below
    for c in range(n_contacts):
        a = slot_a[c]
        b = slot_b[c]
        if ((slot_depth[c] >= -slop or slot_push[c] > 0.0) and a >= 0 and response[c, INV_MASS_A] > 0.0
                and response[c, INV_MASS_B] > 0.0):
            level_adjacent[level_start[a]] = b
            level_start[a] += 1
            level_adjacent[level_start[b]] = a
            level_start[b] += 1
    for s in range(n, 0, -1):
        level_start[s] = level_start[s - 1]
    level_start[0] = 0
    head = 0
    while head < end:
        body = level_queue[head]
        head += 1
        next_level = body_level[body] + 1
        for j in range(level_start[body], level_start[body + 1]):
            other = level_adjacent[j]
            if body_level[other] > next_level:
                body_level[other] = next_level
                level_queue[end] = other
                end += 1


@njit(**JIT)
def _correction_targets(start, end, contact_slot, slot_a, slot_b, solve_origin, contact_row, slot_depth, slot_push,
                        start_position, start_orientation, body_travel, position, orientation, semi_axes, h, baumgarte,
                        slop, shapes):
    """slot_push of slots start..end: the overlap now beyond the split impulses' aim plus the slop, per h; the largest.

    With ``shapes``, contacts start..end in key order instead (contact_slot: their slots), where a pair's patch
    points are neighbours and one measurement again serves them all; in solve order they almost never are.

    The overlap grew by at most both bodies' travel; where even that stays
    within the limit, that bound stands in for the measurement (it lists
    more gaps, never fewer) and the poses are not read: most contacts of a
    pile that is nearly at rest.
    """
    largest = -np.inf
    rows = contact_row
    scratch = pair_pose_scratch()
    # the last pair measured (a patch's points share their pair and normal): its half-width gaps at the start and
    # now, and whether its overlap was measured as the narrow phase does
    last_a, last_b, last_nx, last_ny, last_nz = -2, -2, 0.0, 0.0, 0.0
    gap_start, gap_now, last_overlap, overlap_measured = 0.0, 0.0, 0.0, False
    for k in range(start, end):
        c = contact_slot[k] if shapes is not None else k
        a = slot_a[c]
        if a >= 0:
            a = solve_origin[a]
        b = solve_origin[slot_b[c]]
        before = slot_depth[c]
        aim = overlap_aim(before, slop, baumgarte)
        depth = before + body_travel[b] + (body_travel[a] if a >= 0 else 0.0)
        if depth > aim + slop:
            nx, ny, nz = row3(rows, c, N_)
            if shapes is not None:
                if not (a == last_a and b == last_b and nx == last_nx and ny == last_ny and nz == last_nz):
                    last_a, last_b, last_nx, last_ny, last_nz = a, b, nx, ny, nz
                    gap_start = _shape_width_gap(nx, ny, nz, a, b, start_position, start_orientation, semi_axes,
                                                 shapes)
                    gap_now = _shape_width_gap(nx, ny, nz, a, b, position, orientation, semi_axes, shapes)
                    overlap_measured = False
                depth = before + gap_start - gap_now
                if (depth > aim + slop and a >= 0
                        and not (shapes.kind[a] == ELLIPSOID and shapes.kind[b] == ELLIPSOID)):
                    # a spinning box's shadow along the old normal can overlap its neighbour's by centimetres
                    # while they are apart (or one slid past the other): the pushes then shoved whole columns
                    # 10 mm a substep into the bodies falling onto them. The overlap measured as the narrow
                    # phase does bounds it.
                    if not overlap_measured:
                        last_overlap = _overlap_now(shapes, a, b, position, orientation, nx, ny, nz, scratch)
                        overlap_measured = True
                    depth = min(depth, last_overlap)
            else:
                depth = (before + _width_gap(nx, ny, nz, a, b, start_position, start_orientation, semi_axes)
                         - _width_gap(nx, ny, nz, a, b, position, orientation, semi_axes))
        push = (depth - aim - slop) / h
        slot_push[c] = push
        largest = max(largest, push)
    return largest


@njit(**JIT)
def _apply_pushes(start, end, solve_origin, pseudo_linear, position, h):
    """Move bodies start..end (solve numbering) by their pushes over h."""
    for s in range(start, end):
        body = solve_origin[s]
        for k in range(3):
            position[body, k] += h * pseudo_linear[s, k]
