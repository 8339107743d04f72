"""Prepare: each contact's rows (directions, lever arms, effective masses, bounds, bounce targets) once per substep."""
import numpy as np
from numba import njit, prange

from ..math3d import JIT, JIT_PARALLEL, PARALLEL_CHUNKS, cross, mat_vec, orthonormal_basis, ZERO
from .rows import (AN, AT1, AT2, BN, BT1, BT2, FRICTION, IA1, IA2, IAN, IAS, IAT1, IAT2, IB1, IB2, IBN, IBS, IBT1,
                   IBT2, INV_MASS_A, INV_MASS_B, MASS_N, MASS_R1, MASS_R2, MASS_S, MASS_T1, MASS_T2, ROLLING,
                   SPINNING, TARGET, body_velocity, normal_velocity, single, store3)

# a bounce from a gap is split in two (see prepare_contacts) unless turning changes its contact point's normal
# velocity by more than this fraction of the rebound speed within the substep
REBOUND_TURN = 0.01


@njit(**JIT, inline="always")
def _larger_spin_squared(wx, wy, wz, dx, dy, dz):
    """The larger of |w|^2 and |w + d|^2."""
    before = wx * wx + wy * wy + wz * wz
    ax, ay, az = wx + dx, wy + dy, wz + dz
    return max(before, ax * ax + ay * ay + az * az)


@njit(**JIT_PARALLEL)
def prepare_contacts(slot_contact, contact_a, contact_b, contact_normal, contact_point, contact_depth, contact_row,
                     contact_response, contact_aux, slot_depth, slot_bounce, slot_rebound, position, linear_velocity,
                     angular_velocity, inv_mass, inv_inertia_world, body_material, static_material, material_friction,
                     material_rolling, material_spinning, material_restitution, n_contacts, h, restitution_threshold, serial):
    """Jacobians, effective masses, material coefficients and normal velocity targets, row s for slot s.

    Reads bodies in their own numbering (positions, velocities before the solve). Parallel chunks
    (with ``serial``, one in the calling thread).
    A contact approaching at least restitution_threshold fast (before the
    solve) bounces: it is to leave at e times that speed (see
    apply_restitution). Touching, slot_bounce is that speed. Still a gap d,
    it touches partway through the substep; leaving at once from where it is
    would end the substep (1 + e) d too far apart, and a rebound would rise
    up to (1 + e) |v| h too high (6 to 22% of the height for e = 0.3 from 1 m
    at 1/240 s). So during the substep it leaves (1 + e) d / h slower
    (slot_bounce), which ends it where a bounce at the moment of touching
    would, and slot_rebound keeps the full speed for finish_rebounds to give
    after the move. Both halves are impulses, so momentum is kept. Only where
    the bodies turn little in the substep (REBOUND_TURN); otherwise the
    plain bounce.

    Returns the number of bouncing contacts (none: restitution has nothing to do).
    """
    if serial:
        return _prepare_range(ZERO, n_contacts, slot_contact, contact_a, contact_b, contact_normal, contact_point,
                              contact_depth, contact_row, contact_response, contact_aux, slot_depth, slot_bounce,
                              slot_rebound, position, linear_velocity, angular_velocity, inv_mass, inv_inertia_world,
                              body_material, static_material, material_friction, material_rolling, material_spinning,
                              material_restitution, h, restitution_threshold)
    chunks = min(n_contacts, PARALLEL_CHUNKS)
    bounces = 0
    for k in prange(chunks):
        bounces += _prepare_range(k * n_contacts // chunks, (k + 1) * n_contacts // chunks, slot_contact, contact_a,
                                  contact_b, contact_normal, contact_point, contact_depth, contact_row,
                                  contact_response, contact_aux, slot_depth, slot_bounce, slot_rebound, position,
                                  linear_velocity, angular_velocity, inv_mass, inv_inertia_world, body_material,
                                  static_material, material_friction, material_rolling, material_spinning,
                                  material_restitution, h, restitution_threshold)
    return bounces


@njit(**JIT)
def _prepare_range(start, end, slot_contact, contact_a, contact_b, contact_normal, contact_point, contact_depth,
                   contact_row, contact_response, contact_aux, slot_depth, slot_bounce, slot_rebound, position,
                   linear_velocity, angular_velocity, inv_mass, inv_inertia_world, body_material, static_material,
                   material_friction, material_rolling, material_spinning, material_restitution, h,
                   restitution_threshold):
    rows = contact_row
    response = contact_response
    offsets_ra = (AN, AT1, AT2)
    offsets_ia = (IAN, IAT1, IAT2)
    offsets_rb = (BN, BT1, BT2)
    offsets_ib = (IBN, IBT1, IBT2)
    directions = np.empty((3, 3))   # n, t1, t2 rounded to single precision
    lever_b = np.empty((3, 3))      # r x d and I^-1 (r x d) in double, for the effective masses
    lever_a = np.empty((3, 3))
    spun_b = np.empty((3, 3))
    spun_a = np.empty((3, 3))
    bounces = 0
    for c in range(start, end):  # c is the slot (row); the contact it holds is slot_contact[c]
        contact = slot_contact[c]
        a = contact_a[contact]
        b = contact_b[contact]
        has_a = a >= 0
        mat_b = body_material[b]
        mat_a = body_material[a] if has_a else static_material[-1 - a]
        rolling = max(material_rolling[mat_a], material_rolling[mat_b])
        spinning = max(material_spinning[mat_a], material_spinning[mat_b])
        rows[c, FRICTION] = np.sqrt(material_friction[mat_a] * material_friction[mat_b])
        rows[c, ROLLING] = rolling
        rows[c, SPINNING] = spinning
        restitution = max(material_restitution[mat_a], material_restitution[mat_b])
        # the rolling and spinning rows' terms are read only where those coefficients are non-zero
        angular_rows = rolling > 0.0 or spinning > 0.0
        # directions first rounded to what the row stores: every term below, applied ones
        # included, is computed from exactly these, so momentum is conserved to double precision
        nx, ny, nz = (single(contact_normal[contact, 0]), single(contact_normal[contact, 1]),
                      single(contact_normal[contact, 2]))
        t1x, t1y, t1z, t2x, t2y, t2z = orthonormal_basis(nx, ny, nz)
        directions[0, 0], directions[0, 1], directions[0, 2] = nx, ny, nz
        directions[1, 0], directions[1, 1], directions[1, 2] = single(t1x), single(t1y), single(t1z)
        directions[2, 0], directions[2, 1], directions[2, 2] = single(t2x), single(t2y), single(t2z)
        for k in range(3):
            store3(rows, c, 3 * k, directions[k, 0], directions[k, 1], directions[k, 2])
        px, py, pz = contact_point[contact, 0], contact_point[contact, 1], contact_point[contact, 2]
        for k in range(3):
            _prepare_lever(px - position[b, 0], py - position[b, 1], pz - position[b, 2], inv_inertia_world, b,
                           directions, k, lever_b, spun_b)
        for k in range(3):
            store3(rows, c, offsets_rb[k], lever_b[k, 0], lever_b[k, 1], lever_b[k, 2])
            store3(response, c, offsets_ib[k], spun_b[k, 0], spun_b[k, 1], spun_b[k, 2])
        response[c, INV_MASS_B] = inv_mass[b]
        if angular_rows:
            _store_angular_terms(contact_aux, c, inv_inertia_world[b], directions, IBS, IB1, IB2)
        if has_a:
            for k in range(3):
                _prepare_lever(px - position[a, 0], py - position[a, 1], pz - position[a, 2], inv_inertia_world, a,
                               directions, k, lever_a, spun_a)
            for k in range(3):
                store3(rows, c, offsets_ra[k], lever_a[k, 0], lever_a[k, 1], lever_a[k, 2])
                store3(response, c, offsets_ia[k], spun_a[k, 0], spun_a[k, 1], spun_a[k, 2])
            response[c, INV_MASS_A] = inv_mass[a]
            if angular_rows:
                _store_angular_terms(contact_aux, c, inv_inertia_world[a], directions, IAS, IA1, IA2)
        else:
            # static side: zero Jacobians so the solver's arithmetic on them stays exact
            for k in range(3):
                store3(rows, c, offsets_ra[k], 0.0, 0.0, 0.0)
                store3(response, c, offsets_ia[k], 0.0, 0.0, 0.0)
            if angular_rows:
                for offset in (IA1, IA2, IAS):
                    store3(contact_aux, c, offset, 0.0, 0.0, 0.0)
            response[c, INV_MASS_A] = 0.0
            lever_a[:] = 0.0
            spun_a[:] = 0.0
        # effective masses 1 / (J M^-1 J'), from the double-precision terms
        for k, slot in ((0, MASS_N), (1, MASS_T1), (2, MASS_T2)):
            total = (response[c, INV_MASS_B] + response[c, INV_MASS_A] + _row_dot(lever_b, spun_b, k)
                     + _row_dot(lever_a, spun_a, k))
            rows[c, slot] = 1.0 / total if total > 0.0 else 0.0
        if angular_rows:
            for k, ia_, ib_, slot in ((1, IA1, IB1, MASS_R1), (2, IA2, IB2, MASS_R2), (0, IAS, IBS, MASS_S)):
                total = 0.0  # d' (I_A^-1 + I_B^-1) d with d = directions[k] (t1, t2, n)
                for j in range(3):
                    total += directions[k, j] * (contact_aux[c, ib_ + j] + contact_aux[c, ia_ + j])
                contact_aux[c, slot] = 1.0 / total if total > 0.0 else 0.0
        # speculative contacts may close their gap during this substep, but not more
        depth = contact_depth[contact]
        slot_depth[c] = depth
        rows[c, TARGET] = min(depth, 0.0) / h
        vbx, vby, vbz, wbx, wby, wbz = body_velocity(linear_velocity, angular_velocity, b)
        vax = vay = vaz = wax = way = waz = 0.0
        if has_a:
            vax, vay, vaz, wax, way, waz = body_velocity(linear_velocity, angular_velocity, a)
        approach = normal_velocity(rows, c, vbx - vax, vby - vay, vbz - vaz, wbx, wby, wbz, wax, way, waz)
        bounce = -restitution * approach if approach <= -restitution_threshold else 0.0
        gap = max(-depth, 0.0)
        rebound = 0.0
        if bounce > 0.0 and gap > 0.0:
            # the split holds the contact point's normal velocity through the substep; turning at w changes it
            # by about |w|^2 |r| h, and with more than a hundredth of the rebound the late half would act on a
            # different speed (a tumbling ellipsoid gained 7% of its energy): then the plain bounce. The bodies
            # turn at the spin they have after the bounce's first half: the larger of the spins before and
            # after the whole bounce bounds it (an off-centre hit can spin a flat ellipsoid up a hundredfold).
            impulse = rows[c, MASS_N] * (bounce - approach)
            rx, ry, rz = px - position[b, 0], py - position[b, 1], pz - position[b, 2]
            turn = _larger_spin_squared(wbx, wby, wbz, impulse * spun_b[0, 0], impulse * spun_b[0, 1],
                                        impulse * spun_b[0, 2]) * np.sqrt(rx * rx + ry * ry + rz * rz)
            if has_a:
                rx, ry, rz = px - position[a, 0], py - position[a, 1], pz - position[a, 2]
                turn += _larger_spin_squared(wax, way, waz, -impulse * spun_a[0, 0], -impulse * spun_a[0, 1],
                                             -impulse * spun_a[0, 2]) * np.sqrt(rx * rx + ry * ry + rz * rz)
            if turn * h <= REBOUND_TURN * bounce:
                rebound = bounce
        slot_rebound[c] = rebound
        if rebound > 0.0:
            # never faster toward the gap than the speculative row allows
            bounce = max(bounce - (1.0 + restitution) * gap / h, -gap / h)
        slot_bounce[c] = bounce
        if bounce != 0.0 or rebound > 0.0:
            bounces += 1
    return bounces


@njit(**JIT, inline="always")
def _prepare_lever(rx, ry, rz, inv_inertia, body, directions, k, lever, spun):
    """lever[k] = r x d_k and spun[k] = I^-1 (r x d_k) for the body's arm r to the contact point.

    Straight-line, and the inertia read by index: an inlined helper that takes
    arrays and loops or branches keeps numba's reference counting in the loop.
    """
    cx, cy, cz = cross(rx, ry, rz, directions[k, 0], directions[k, 1], directions[k, 2])
    lever[k, 0], lever[k, 1], lever[k, 2] = cx, cy, cz
    spun[k, 0] = inv_inertia[body, 0, 0] * cx + inv_inertia[body, 0, 1] * cy + inv_inertia[body, 0, 2] * cz
    spun[k, 1] = inv_inertia[body, 1, 0] * cx + inv_inertia[body, 1, 1] * cy + inv_inertia[body, 1, 2] * cz
    spun[k, 2] = inv_inertia[body, 2, 0] * cx + inv_inertia[body, 2, 1] * cy + inv_inertia[body, 2, 2] * cz


@njit(**JIT, inline="always")
def _row_dot(x, y, k):
    return x[k, 0] * y[k, 0] + x[k, 1] * y[k, 1] + x[k, 2] * y[k, 2]


@njit(**JIT, inline="always")
def _store_angular_terms(aux, c, iinv, directions, off_n, off_t1, off_t2):
    """I^-1 n, I^-1 t1, I^-1 t2 of one body, for the spinning and rolling rows."""
    for k, off in ((0, off_n), (1, off_t1), (2, off_t2)):
        ix, iy, iz = mat_vec(iinv, directions[k, 0], directions[k, 1], directions[k, 2])
        store3(aux, c, off, ix, iy, iz)
