"""Push sweeps: the listed-contact Gauss-Seidel on pseudo-velocities that split impulses and position correction share."""
import numpy as np
from numba import njit, prange

from ..collision.narrowphase import quadratic_form, sym_at
from ..math3d import JIT, JIT_PARALLEL, cross
from .rows import (AN, BN, IAN, IBN, INV_MASS_A, INV_MASS_B, MASS_N, N_, body_velocity, dot3, normal_velocity, row3,
                   sweeps_settled)

# layout of ws.push_row (float64): a listed contact's terms for the push sweeps, copied from its rows when it is
# listed, so the sweeps stream one array in list order (ws.push_body: its two bodies in solve numbering)
P_N, P_AN, P_BN, P_IAN, P_IBN = 0, 3, 6, 9, 12                # n, r x n and I^-1 (r x n) (the last four if turning)
P_MASS, P_SHARE_A, P_SHARE_B, P_TARGET, P_PSEUDO = 15, 16, 17, 18, 19  # P_PSEUDO: accumulated push
PUSH_WIDTH = 20


@njit(**JIT, inline="always")
def _sink_counts(wx, wy, wz, swing_arm, h, negligible):
    """False where _rotation_sink's bound (|w| h)^2 a_max^2 / a_min (swing_arm = a_max^2 / a_min) is below
    ``negligible`` (a resting body)."""
    return (wx * wx + wy * wy + wz * wz) * h * h * swing_arm > negligible


@njit(**JIT, inline="always")
def _rotation_sink(shape, body, wx, wy, wz, nx, ny, nz, h):
    """How much more the support height of a spinning body along n grows in h than its rate predicts.

    The normal row sees the contact point's velocity, the first-order change of
    the gap. A spinning elongated body also swings its surface towards the
    other body at second order: up to (a_max^2 - a_min^2) / a_min (|w| h)^2 / 2,
    for semi-axes 5 and 2 cm at 50 rad/s and 1/240 s a ninth of the small
    semi-axis per step. The support height along n after turning by w h is
    sqrt(m' M m) with m = n turned by -w h (M = R diag(a^2) R'); subtracting
    value and slope at the start leaves the remainder, exact for a constant w
    (w non-zero; callers skip resting bodies with _sink_counts).
    """
    w2 = wx * wx + wy * wy + wz * wz
    speed = np.sqrt(w2)
    kx, ky, kz = wx / speed, wy / speed, wz / speed
    angle = -speed * h
    cos_a, sin_a = np.cos(angle), np.sin(angle)
    cx, cy, cz = cross(kx, ky, kz, nx, ny, nz)
    along = (kx * nx + ky * ny + kz * nz) * (1.0 - cos_a)
    mx = nx * cos_a + cx * sin_a + kx * along
    my = ny * cos_a + cy * sin_a + ky * along
    mz = nz * cos_a + cz * sin_a + kz * along
    m = sym_at(shape, body)
    snx, sny, snz, height = quadratic_form(m, nx, ny, nz)
    _, _, _, turned = quadratic_form(m, mx, my, mz)
    # slope: d/dt sqrt(m' M m) at t = 0 with dm/dt = -w x n
    dx, dy, dz = cross(wx, wy, wz, nx, ny, nz)
    slope = -(dx * snx + dy * sny + dz * snz) / height
    return turned - height - h * slope


@njit(**JIT_PARALLEL)
def push_sweeps(slab_start, slabs, slot_a, slot_b, solve_origin, contact_row, contact_response, slot_depth,
                 slot_push, linear_velocity, angular_velocity, pseudo_linear, pseudo_angular, shape, swing_arm, h,
                 baumgarte, slop, max_sweeps, tolerance, sweep_change, push_slot, gap_slot, push_count, push_row,
                 push_body, body_pushed, body_level, largest, recheck_gaps, retarget, turn, serial):
    """Sweep the pushes toward the targets in slot_push (largest: the largest of them); returns the sweeps run.

    Lists per class the contacts with a positive target and, after the first
    sweep, the gaps no larger than the largest push that the pushes so far
    could close; with ``recheck_gaps`` again after sweeps 2, 4, 8, ... (a
    push travels one body further down a chain per sweep), and once more
    before they stop: if a listing adds a contact, they go on, as it has not
    been swept. Pushes that add up along a chain (a column on the floor)
    move its top body further than any one push, so before that last
    listing the candidates are widened to the gaps the fastest body could
    close. With
    ``retarget``, the listed targets are predicted again halfway with the
    pushes' spin (split impulses). Without ``turn`` the pushes only
    translate the bodies.

    A contact's terms are copied to push_row when it is listed: the sweeps
    then stream one array in list order instead of picking a third of the
    rows out of memory (at 100,000 bodies the sweeps took 55 ns per listed
    contact that way, 12 at 1,000).

    With ``serial`` the classes go one after another in the calling thread
    (the same result: the slabs share no body, and the boundary keeps its place).
    """
    _list_classes(False, slab_start, slabs, largest, slot_a, slot_b, contact_row, contact_response, slot_push,
                  pseudo_linear, pseudo_angular, turn, push_slot, gap_slot, push_count, push_row, push_body,
                  body_pushed, body_level, serial)
    retargeted = not retarget
    limit = largest  # the candidates are the gaps under this (push > -limit)
    for sweep in range(max_sweeps):
        if sweep % 2 == 1:
            sweep_change[slabs] = _penetration_sweep(slab_start[slabs], push_count[0, slabs], push_row, push_body,
                                                     pseudo_linear, pseudo_angular, turn)
        if serial:
            for k in range(slabs):
                sweep_change[k] = _penetration_sweep(slab_start[k], push_count[0, k], push_row, push_body,
                                                     pseudo_linear, pseudo_angular, turn)
        else:
            for k in prange(slabs):
                sweep_change[k] = _penetration_sweep(slab_start[k], push_count[0, k], push_row, push_body,
                                                     pseudo_linear, pseudo_angular, turn)
        if sweep % 2 == 0:
            sweep_change[slabs] = _penetration_sweep(slab_start[slabs], push_count[0, slabs], push_row, push_body,
                                                     pseudo_linear, pseudo_angular, turn)
        settled = sweeps_settled(sweep_change, slabs, sweep, tolerance)
        listing = sweep == 0 or (recheck_gaps and (sweep & (sweep + 1) == 0 or settled))
        if recheck_gaps and settled:
            # as _list_closing_gaps bounds it: twice the closing speed, at most twice the fastest body's
            reach = 4.0 * _fastest_push(pseudo_linear, body_pushed)
            if reach > limit:
                if serial:
                    for k in range(slabs + 1):
                        _widen_gaps(k, slab_start[k], slab_start[k + 1], slot_push, limit, reach, gap_slot,
                                    push_count)
                else:
                    for k in prange(slabs + 1):
                        _widen_gaps(k, slab_start[k], slab_start[k + 1], slot_push, limit, reach, gap_slot,
                                    push_count)
                limit = reach
        if listing:
            listed = _listed(push_count, slabs)
            _list_classes(True, slab_start, slabs, largest, slot_a, slot_b, contact_row, contact_response, slot_push,
                          pseudo_linear, pseudo_angular, turn, push_slot, gap_slot, push_count, push_row, push_body,
                          body_pushed, body_level, serial)
            # newly listed contacts have not been swept yet
            settled = settled and _listed(push_count, slabs) == listed
        if not retargeted and (settled or sweep + 1 == max_sweeps // 2):
            if serial:
                for k in range(slabs + 1):
                    set_targets(slab_start[k], slab_start[k] + push_count[0, k], push_slot, True, slot_a, slot_b,
                                 solve_origin, contact_row, slot_depth, slot_push, push_row, linear_velocity,
                                 angular_velocity, pseudo_angular, shape, swing_arm, h, baumgarte, slop)
            else:
                for k in prange(slabs + 1):
                    set_targets(slab_start[k], slab_start[k] + push_count[0, k], push_slot, True, slot_a, slot_b,
                                 solve_origin, contact_row, slot_depth, slot_push, push_row, linear_velocity,
                                 angular_velocity, pseudo_angular, shape, swing_arm, h, baumgarte, slop)
            retargeted = True
        elif settled:
            return sweep + 1
    return max_sweeps


@njit(**JIT_PARALLEL)
def _list_classes(gaps, slab_start, slabs, largest, slot_a, slot_b, contact_row, contact_response, slot_push,
                  pseudo_linear, pseudo_angular, turn, push_slot, gap_slot, push_count, push_row, push_body,
                  body_pushed, body_level, serial):
    """_list_class for every class: the slabs in parallel (or one after another), then the boundary.

    Listing marks the listed contacts' bodies in body_pushed; no two slabs share a body.
    """
    if serial:
        for k in range(slabs):
            _list_class(k, slab_start[k], slab_start[k + 1], gaps, largest, slot_a, slot_b, contact_row,
                        contact_response, slot_push, pseudo_linear, pseudo_angular, turn, push_slot, gap_slot,
                        push_count, push_row, push_body, body_pushed, body_level)
    else:
        for k in prange(slabs):
            _list_class(k, slab_start[k], slab_start[k + 1], gaps, largest, slot_a, slot_b, contact_row,
                        contact_response, slot_push, pseudo_linear, pseudo_angular, turn, push_slot, gap_slot,
                        push_count, push_row, push_body, body_pushed, body_level)
    _list_class(slabs, slab_start[slabs], slab_start[slabs + 1], gaps, largest, slot_a, slot_b, contact_row,
                contact_response, slot_push, pseudo_linear, pseudo_angular, turn, push_slot, gap_slot, push_count,
                push_row, push_body, body_pushed, body_level)


@njit(**JIT)
def set_targets(first, end, push_slot, listed, slot_a, slot_b, solve_origin, contact_row, slot_depth, slot_push,
                 push_row, linear_velocity, angular_velocity, pseudo_angular, shape, swing_arm, h, baumgarte, slop):
    """Split-impulse targets (slot_push) of slots first..end; returns how many saw a spinning body, and the largest.

    The surfaces turn with the real plus the pseudo spin; the first order of
    the pseudo turn is the push's own row, so only the sink sees it. With
    ``listed``, the contacts push_slot[first..end] get their targets again
    (in push_row, which the sweeps read), now with the pushes' spin, except
    those whose bodies the pushes turned too little to move the sink by a
    tenth of the slop (bound: (|w + p|^2 - |w|^2) h^2 a_max^2 / a_min); the
    return value is then of no use.

    One loop over the arrays it was given, without helpers that take arrays
    and branch: for those numba keeps reference-count updates of the shared
    arrays inside the loop (atomic, and contended between the threads; this
    loop took 2.4 times as long with them, measured on a resting pile).
    """
    negligible = 0.01 * slop
    rows = contact_row
    pseudo = pseudo_angular
    spinning = 0
    largest = 0.0
    for i in range(first, end):
        c = push_slot[i] if listed else i
        a = slot_a[c]
        b = slot_b[c]
        vbx, vby, vbz, wbx, wby, wbz = body_velocity(linear_velocity, angular_velocity, b)
        arm_b = swing_arm[solve_origin[b]]
        vax = vay = vaz = wax = way = waz = pax = pay = paz = pbx = pby = pbz = arm_a = 0.0
        if a >= 0:
            vax, vay, vaz, wax, way, waz = body_velocity(linear_velocity, angular_velocity, a)
            arm_a = swing_arm[solve_origin[a]]
        if listed:  # (before the sweeps the pushes are all zero: not read)
            pbx, pby, pbz = pseudo[b, 0], pseudo[b, 1], pseudo[b, 2]
            if a >= 0:
                pax, pay, paz = pseudo[a, 0], pseudo[a, 1], pseudo[a, 2]
        # (a static side has no spin and no push: its share is 0)
        if listed and (_extra_swing(wbx, wby, wbz, pbx, pby, pbz, arm_b, h)
                       + _extra_swing(wax, way, waz, pax, pay, paz, arm_a, h)) <= 0.1 * slop:
            continue
        nx, ny, nz = row3(rows, c, N_)
        vn = normal_velocity(rows, c, vbx - vax, vby - vay, vbz - vaz, wbx, wby, wbz, wax, way, waz)
        sink = 0.0
        spun = False
        # the sink's bound first: a resting body (most of a pile's) skips the sink's trigonometry
        if _sink_counts(wbx + pbx, wby + pby, wbz + pbz, arm_b, h, negligible):
            sink = _rotation_sink(shape, solve_origin[b], wbx + pbx, wby + pby, wbz + pbz, nx, ny, nz, h)
            spun = sink != 0.0
        if a >= 0 and _sink_counts(wax + pax, way + pay, waz + paz, arm_a, h, negligible):
            turn = _rotation_sink(shape, solve_origin[a], wax + pax, way + pay, waz + paz, nx, ny, nz, h)
            spun = spun or turn != 0.0
            sink += turn
        depth = slot_depth[c]
        predicted = depth - h * vn + max(sink, 0.0)
        target = (predicted - overlap_aim(depth, slop, baumgarte)) / h
        if listed:
            push_row[i, P_TARGET] = target
        else:
            slot_push[c] = target
            largest = max(largest, slot_push[c])
        spinning += spun
    return spinning, largest


@njit(**JIT, inline="always")
def overlap_aim(depth, slop, baumgarte):
    """Overlap a contact this deep should end the substep with: the slop plus (1 - baumgarte) of the excess."""
    return slop + (1.0 - baumgarte) * max(depth - slop, 0.0)


@njit(**JIT, inline="always")
def _extra_swing(wx, wy, wz, px, py, pz, swing_arm, h):
    """Bound on how much a body's pseudo spin p adds to its rotation sink: (2|w||p| + |p|^2) h^2 a_max^2 / a_min."""
    p2 = px * px + py * py + pz * pz
    return (2.0 * np.sqrt((wx * wx + wy * wy + wz * wz) * p2) + p2) * h * h * swing_arm


@njit(**JIT)
def clear_pseudo(pseudo_linear, pseudo_angular, body_pushed):
    pseudo_linear[:] = 0.0
    pseudo_angular[:] = 0.0
    body_pushed[:] = False


@njit(**JIT)
def _list_class(k, start, end, relist, largest, slot_a, slot_b, contact_row, contact_response, slot_push,
                pseudo_linear, pseudo_angular, turn, push_slot, gap_slot, push_count, push_row, push_body,
                body_pushed, body_level):
    """Class k's push list: its first listing (_list_pushing), or with ``relist`` the candidate gaps the pushes so
    far could close (_list_closing_gaps); the newly listed contacts are packed for the sweeps."""
    listed = push_count[0, k] if relist else 0
    if relist:
        _list_closing_gaps(k, start, slot_a, slot_b, contact_row, slot_push, pseudo_linear, pseudo_angular,
                           body_pushed, push_slot, gap_slot, push_count)
    else:
        _list_pushing(k, start, end, slot_push, largest, push_slot, gap_slot, push_count)
    _pack_listed(start, listed, push_count[0, k], push_slot, slot_a, slot_b, contact_row, contact_response, slot_push,
                 turn, push_row, push_body, body_pushed, body_level)


@njit(**JIT)
def _listed(push_count, slabs):
    """Contacts listed to push, all classes."""
    total = 0
    for k in range(slabs + 1):
        total += push_count[0, k]
    return total


@njit(**JIT)
def _fastest_push(pseudo_linear, body_pushed):
    """The largest 1-norm of a pushed body's pseudo-velocity."""
    fastest = 0.0
    for s in range(body_pushed.shape[0]):
        if body_pushed[s]:
            fastest = max(fastest, abs(pseudo_linear[s, 0]) + abs(pseudo_linear[s, 1]) + abs(pseudo_linear[s, 2]))
    return fastest


@njit(**JIT)
def _widen_gaps(k, start, end, slot_push, old, new, gap_slot, push_count):
    """Add class k's gaps between old and new (-new < push <= -old) to its candidates (gap_slot, push_count[1, k]).

    The contacts with push <= -old are the ones neither listed nor candidates so far.
    """
    gaps = push_count[1, k]
    for c in range(start, end):
        push = slot_push[c]
        if -new < push <= -old:
            gap_slot[start + gaps] = c
            gaps += 1
    push_count[1, k] = gaps


@njit(**JIT)
def _list_pushing(k, start, end, slot_push, largest, push_slot, gap_slot, push_count):
    """Class k's lists from its first slot: positive targets in push_slot (push_count[0, k]), and the gaps no
    larger than the largest push, the candidates for _list_closing_gaps, in gap_slot (push_count[1, k])."""
    pushing = 0
    gaps = 0
    for c in range(start, end):
        push = slot_push[c]
        if push > 0.0:
            push_slot[start + pushing] = c
            pushing += 1
        elif push > -largest:
            gap_slot[start + gaps] = c
            gaps += 1
    push_count[0, k] = pushing
    push_count[1, k] = gaps


@njit(**JIT)
def _list_closing_gaps(k, start, slot_a, slot_b, contact_row, slot_push, pseudo_linear, pseudo_angular, body_pushed,
                       push_slot, gap_slot, push_count):
    """Move class k's candidate gaps that the pushes could close to its push list.

    With the pushes so far a contact's bodies move at most |v| + |w| |r x n|
    along n; the later sweeps may add about as much again, so a gap under
    twice that (with 1-norms, which only list more) in this substep is
    listed. The others stay candidates (compacted in place).

    Only bodies of listed contacts have pushes (body_pushed), so the pushes
    are read only where one is marked, and the row only where one moves: in
    a resting pile few do, and the candidates are many (any gap within the
    largest push anywhere, so their share grows with the scene: 70% of a
    100,000-body pile's contacts 1 s into the drop, 23% of a 1,000-body
    one's). The per-body marks stay in cache where the pushes do not.
    """
    lin = pseudo_linear
    ang = pseudo_angular
    rows = contact_row
    count = push_count[0, k]
    kept = 0
    for i in range(start, start + push_count[1, k]):
        c = gap_slot[i]
        a = slot_a[c]
        b = slot_b[c]
        pushed_a = a >= 0 and body_pushed[a]
        move_b = turn_b = move_a = turn_a = 0.0
        if body_pushed[b]:
            move_b = abs(lin[b, 0]) + abs(lin[b, 1]) + abs(lin[b, 2])
            turn_b = abs(ang[b, 0]) + abs(ang[b, 1]) + abs(ang[b, 2])
        if pushed_a:
            move_a = abs(lin[a, 0]) + abs(lin[a, 1]) + abs(lin[a, 2])
            turn_a = abs(ang[a, 0]) + abs(ang[a, 1]) + abs(ang[a, 2])
        closing = False
        if move_b + turn_b + move_a + turn_a > 0.0:
            reach = (move_b + move_a + turn_b * (abs(rows[c, BN]) + abs(rows[c, BN + 1]) + abs(rows[c, BN + 2]))
                     + turn_a * (abs(rows[c, AN]) + abs(rows[c, AN + 1]) + abs(rows[c, AN + 2])))
            closing = slot_push[c] > -2.0 * reach
        if closing:
            push_slot[start + count] = c
            count += 1
        else:
            gap_slot[start + kept] = c
            kept += 1
    push_count[0, k] = count
    push_count[1, k] = kept


@njit(**JIT)
def _pack_listed(start, first, end, push_slot, slot_a, slot_b, contact_row, contact_response, slot_push, turn, push_row,
                 push_body, body_pushed, body_level):
    """Copy the terms of listed slots push_slot[start + first .. start + end] to push_row, push_body (no push yet),
    and mark their bodies in body_pushed: only they will have pushes.

    With ``turn`` the pushes act like impulses (effective mass, inverse
    masses, lever arms); without, they only translate, and the body nearer
    to an immovable one (body_level, see support_levels) takes SUPPORT_SHARE
    of the share of the other, two bodies equally near take equal shares.
    The position correction need not conserve momentum (it changes no
    velocity): shares that ignore mass converge where a heavy body rests on
    a light one, which mass-weighted Gauss-Seidel does not; and with the
    lower body nearly held, a chain of contacts up from the floor is nearly
    a triangular system, which the sweeps solve in about as many sweeps as
    it has levels, where equal shares need of the order of its length
    squared (a ten-high column: more than a hundred).
    """
    rows = contact_row
    response = contact_response
    for i in range(start + first, start + end):
        c = push_slot[i]
        a = slot_a[c]
        b = slot_b[c]
        push_body[i, 0] = a
        push_body[i, 1] = b
        body_pushed[b] = True
        if a >= 0:
            body_pushed[a] = True
        for k in range(3):
            push_row[i, P_N + k] = rows[c, N_ + k]
        share_a = response[c, INV_MASS_A]
        share_b = response[c, INV_MASS_B]
        if turn:
            for k in range(3):
                push_row[i, P_AN + k] = rows[c, AN + k]
                push_row[i, P_BN + k] = rows[c, BN + k]
                push_row[i, P_IAN + k] = response[c, IAN + k]
                push_row[i, P_IBN + k] = response[c, IBN + k]
            mass = np.float64(rows[c, MASS_N])
        else:
            share_a = 1.0 if share_a > 0.0 else 0.0
            share_b = 1.0 if share_b > 0.0 else 0.0
            if share_a > 0.0 and share_b > 0.0:
                if body_level[a] < body_level[b]:
                    share_a = SUPPORT_SHARE
                elif body_level[b] < body_level[a]:
                    share_b = SUPPORT_SHARE
            mass = 1.0 / (share_a + share_b) if share_a + share_b > 0.0 else 0.0
        push_row[i, P_MASS] = mass
        push_row[i, P_SHARE_A] = share_a
        push_row[i, P_SHARE_B] = share_b
        push_row[i, P_TARGET] = slot_push[c]
        push_row[i, P_PSEUDO] = 0.0


@njit(**JIT)
def _penetration_sweep(first, count, push_row, push_body, pseudo_linear, pseudo_angular, turn):
    """One sweep over the listed slots first..first+count (their terms in push_row, see _pack_listed); returns the
    largest body velocity change it made. With ``turn``, pushes turn the bodies as well."""
    largest = 0.0
    lin = pseudo_linear
    ang = pseudo_angular
    for i in range(first, first + count):
        a = push_body[i, 0]
        b = push_body[i, 1]
        has_a = a >= 0
        # bodies' pushes read into locals and written back once (as in _velocity_sweep, and without
        # helpers that take the arrays and branch, whose reference counting numba keeps in the loop)
        vbx, vby, vbz, wbx, wby, wbz = body_velocity(lin, ang, b)
        vax = vay = vaz = wax = way = waz = 0.0
        if has_a:
            vax, vay, vaz, wax, way, waz = body_velocity(lin, ang, a)
        nx, ny, nz = push_row[i, P_N], push_row[i, P_N + 1], push_row[i, P_N + 2]
        vn = nx * (vbx - vax) + ny * (vby - vay) + nz * (vbz - vaz)
        if turn:
            vn += dot3(push_row, i, P_BN, wbx, wby, wbz) - dot3(push_row, i, P_AN, wax, way, waz)
        share_a = push_row[i, P_SHARE_A]
        share_b = push_row[i, P_SHARE_B]
        old = push_row[i, P_PSEUDO]
        new = max(old - push_row[i, P_MASS] * (vn - push_row[i, P_TARGET]), 0.0)
        push_row[i, P_PSEUDO] = new
        dn = new - old
        lin[b, 0] = vbx + share_b * dn * nx
        lin[b, 1] = vby + share_b * dn * ny
        lin[b, 2] = vbz + share_b * dn * nz
        if has_a:
            lin[a, 0] = vax - share_a * dn * nx
            lin[a, 1] = vay - share_a * dn * ny
            lin[a, 2] = vaz - share_a * dn * nz
        if turn:
            ang[b, 0] = wbx + dn * push_row[i, P_IBN]
            ang[b, 1] = wby + dn * push_row[i, P_IBN + 1]
            ang[b, 2] = wbz + dn * push_row[i, P_IBN + 2]
            if has_a:
                ang[a, 0] = wax - dn * push_row[i, P_IAN]
                ang[a, 1] = way - dn * push_row[i, P_IAN + 1]
                ang[a, 2] = waz - dn * push_row[i, P_IAN + 2]
        largest = max(largest, abs(dn) * max(share_a, share_b))
    return largest


UNSUPPORTED = np.int32(2**30)  # support level of a body no chain of contacts joins to an immovable one
# The correction's share of the body nearer to an immovable one, relative to the other's 1. Not 0: a body
# wedged between two nearer ones, both held, could not get out (in random piles that left overlaps the sweeps
# never removed); up to about half, chains still converge in a few sweeps.
SUPPORT_SHARE = 0.25
