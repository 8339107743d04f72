"""Contact solver: warm-started sequential impulses (projected Gauss-Seidel).

Phases, after Box2D v3's contact_solver.c: prepare (lever arms, tangent frame,
Jacobians, effective masses, approach velocity before the solve), warm start
(apply last substep's impulses), solve (normal, Coulomb disc, rolling disc,
spinning), restitution (from the approach velocity), relax penetration with split impulses
on separate pseudo-velocities (they move bodies apart but never enter the real
velocities, so removing overlap adds no kinetic energy), store impulses for the
next substep.

Rows per contact, for relative velocity v = v_B + w_B x r_B - v_A - w_A x r_A:
  normal   n.v >= target,  0 <= lambda_n
  friction |(lambda_t1, lambda_t2)| <= mu lambda_n           (elliptic cone: projection on the disc)
  rolling  |(lambda_r1, lambda_r2)| <= mu_r lambda_n on t.(w_B - w_A)   (mu_r is a length)
  spinning |lambda_s| <= mu_s lambda_n on n.(w_B - w_A)                 (mu_s is a length)

Every Jacobian term a row needs is computed once in prepare and stored in one
flat row per contact (``contact_row``), so the iterations only stream through
it; the hot loops take plain arrays, never tuples of arrays.

Rows, impulses and velocities are in solve order (see solve_order): slot s
holds contact slot_contact[s], bodies are solve indices. Warm start, the
velocity sweeps and the split-impulse sweeps run the slabs' slot ranges in
parallel and then the boundary range; prepare and store are per contact and
fully parallel.
"""
import numpy as np
from numba import njit, prange

from .math3d import JIT, JIT_PARALLEL, PARALLEL_CHUNKS, cross, mat_vec, orthonormal_basis

# layout of ws.contact_row: 3-vectors at these offsets; everything a velocity or split-impulse
# sweep reads, so the rows a large pile's sweeps stream from memory carry nothing else
N_, T1, T2 = 0, 3, 6                     # normal and tangents
AN, BN, AT1, BT1, AT2, BT2 = 9, 12, 15, 18, 21, 24          # r_A x d and r_B x d for d = n, t1, t2
IAN, IBN, IAT1, IBT1, IAT2, IBT2 = 27, 30, 33, 36, 39, 42   # I^-1 (r x d)
MASS_N, MASS_T1, MASS_T2 = 45, 46, 47
INV_MASS_A, INV_MASS_B, TARGET, FRICTION, ROLLING, SPINNING = 48, 49, 50, 51, 52, 53
PUSH = 54                        # split-impulse target: separating pseudo-velocity along n
ROW_WIDTH = 56
# layout of ws.contact_aux, the terms read only where rolling or spinning friction or restitution act
IA1, IB1, IA2, IB2, IAS, IBS = 0, 3, 6, 9, 12, 15           # I^-1 t1, I^-1 t2, I^-1 n (rolling, spinning)
MASS_R1, MASS_R2, MASS_S = 18, 19, 20
RESTITUTION, APPROACH = 21, 22   # restitution coefficient, normal velocity before the solve
AUX_WIDTH = 23
# ws.contact_impulse: normal, t1, t2, roll1, roll2, spin (scalars along this substep's frame)


@njit(**JIT, inline="always")
def _dot3(rows, c, k, x, y, z):
    return rows[c, k] * x + rows[c, k + 1] * y + rows[c, k + 2] * z


@njit(**JIT, inline="always")
def _store3(rows, c, k, x, y, z):
    rows[c, k] = x
    rows[c, k + 1] = y
    rows[c, k + 2] = z


@njit(**JIT, inline="always")
def _row_velocity(rows, c, lin, ang, a, b, d, ja, jb):
    """d.(v_B - v_A) + w_B.(r_B x d) - w_A.(r_A x d)."""
    v = _dot3(rows, c, d, lin[b, 0], lin[b, 1], lin[b, 2]) + _dot3(rows, c, jb, ang[b, 0], ang[b, 1], ang[b, 2])
    if a >= 0:
        v -= (_dot3(rows, c, d, lin[a, 0], lin[a, 1], lin[a, 2])
              + _dot3(rows, c, ja, ang[a, 0], ang[a, 1], ang[a, 2]))
    return v


@njit(**JIT, inline="always")
def _row_apply(rows, c, lin, ang, a, b, d, ia, ib, impulse):
    """Apply impulse along direction d at the contact: +B, -A."""
    mb = rows[c, INV_MASS_B] * impulse
    for k in range(3):
        lin[b, k] += mb * rows[c, d + k]
        ang[b, k] += impulse * rows[c, ib + k]
    if a >= 0:
        ma = rows[c, INV_MASS_A] * impulse
        for k in range(3):
            lin[a, k] -= ma * rows[c, d + k]
            ang[a, k] -= impulse * rows[c, ia + k]


@njit(**JIT, inline="always")
def _angular_apply(rows, c, ang, a, b, ia, ib, impulse):
    for k in range(3):
        ang[b, k] += impulse * rows[c, ib + k]
    if a >= 0:
        for k in range(3):
            ang[a, k] -= impulse * rows[c, ia + k]


@njit(**JIT, inline="always")
def _rotation_sink(shape, semi_axes, w, nx, ny, nz, h, negligible):
    """How much more the support height of a spinning body along n grows in h than its rate predicts.

    The normal row sees the contact point's velocity, the first-order change of
    the gap. A spinning elongated body also swings its surface towards the
    other body at second order: up to (a_max^2 - a_min^2) / a_min (|w| h)^2 / 2,
    for semi-axes 5 and 2 cm at 50 rad/s and 1/240 s a ninth of the small
    semi-axis per step. The support height along n after turning by w h is
    sqrt(m' M m) with m = n turned by -w h (M = R diag(a^2) R'); subtracting
    value and slope at the start leaves the remainder, exact for a constant w.
    Returns 0 without the work when its bound (|w| h)^2 a_max^2 / a_min is
    below ``negligible`` (a resting body).
    """
    w2 = w[0] * w[0] + w[1] * w[1] + w[2] * w[2]
    a_max = max(semi_axes[0], max(semi_axes[1], semi_axes[2]))
    a_min = min(semi_axes[0], min(semi_axes[1], semi_axes[2]))
    if w2 * h * h * a_max * a_max <= negligible * a_min:
        return 0.0
    speed = np.sqrt(w2)
    kx, ky, kz = w[0] / speed, w[1] / speed, w[2] / speed
    angle = -speed * h
    cos_a, sin_a = np.cos(angle), np.sin(angle)
    cx, cy, cz = cross(kx, ky, kz, nx, ny, nz)
    along = (kx * nx + ky * ny + kz * nz) * (1.0 - cos_a)
    mx = nx * cos_a + cx * sin_a + kx * along
    my = ny * cos_a + cy * sin_a + ky * along
    mz = nz * cos_a + cz * sin_a + kz * along
    snx, sny, snz = mat_vec(shape, nx, ny, nz)
    smx, smy, smz = mat_vec(shape, mx, my, mz)
    height = np.sqrt(nx * snx + ny * sny + nz * snz)
    turned = np.sqrt(mx * smx + my * smy + mz * smz)
    # slope: d/dt sqrt(m' M m) at t = 0 with dm/dt = -w x n
    dx, dy, dz = cross(w[0], w[1], w[2], nx, ny, nz)
    slope = -(dx * snx + dy * sny + dz * snz) / height
    return turned - height - h * slope


@njit(**JIT, inline="always")
def _prepare_side(rows, c, position, inv_inertia, body, point, offsets_r, offsets_i):
    """Fill lever-arm Jacobians of one body (A or B) for directions n, t1, t2."""
    rx = point[0] - position[body, 0]
    ry = point[1] - position[body, 1]
    rz = point[2] - position[body, 2]
    iinv = inv_inertia[body]
    for k in range(3):
        d = 3 * k  # N_, T1, T2
        cx, cy, cz = cross(rx, ry, rz, rows[c, d], rows[c, d + 1], rows[c, d + 2])
        _store3(rows, c, offsets_r[k], cx, cy, cz)
        ix, iy, iz = mat_vec(iinv, cx, cy, cz)
        _store3(rows, c, offsets_i[k], ix, iy, iz)


@njit(**JIT_PARALLEL)
def prepare_contacts(slot_contact, contact_a, contact_b, contact_normal, contact_point, contact_depth, contact_row,
                     contact_aux, position, linear_velocity, angular_velocity, inv_mass, inv_inertia_world,
                     body_material, static_material, material_friction, material_rolling, material_spinning,
                     material_restitution, n_contacts, h):
    """Jacobians, effective masses, material coefficients and normal velocity targets, row s for slot s.

    Reads bodies in their own numbering (positions, velocities before the solve). Parallel chunks.
    """
    chunks = min(n_contacts, PARALLEL_CHUNKS)
    for k in prange(chunks):
        _prepare_range(k * n_contacts // chunks, (k + 1) * n_contacts // chunks, slot_contact, contact_a, contact_b,
                       contact_normal, contact_point, contact_depth, contact_row, contact_aux, position,
                       linear_velocity, angular_velocity, inv_mass, inv_inertia_world, body_material, static_material,
                       material_friction, material_rolling, material_spinning, material_restitution, h)


@njit(**JIT)
def _prepare_range(start, end, slot_contact, contact_a, contact_b, contact_normal, contact_point, contact_depth,
                   contact_row, contact_aux, position, linear_velocity, angular_velocity, inv_mass,
                   inv_inertia_world, body_material, static_material, material_friction, material_rolling, material_spinning,
                   material_restitution, h):
    offsets_ra = (AN, AT1, AT2)
    offsets_ia = (IAN, IAT1, IAT2)
    offsets_rb = (BN, BT1, BT2)
    offsets_ib = (IBN, IBT1, IBT2)
    for c in range(start, end):  # c is the slot (row); the contact it holds is slot_contact[c]
        contact = slot_contact[c]
        a = contact_a[contact]
        b = contact_b[contact]
        n = contact_normal[contact]
        mat_b = body_material[b]
        mat_a = body_material[a] if a >= 0 else static_material[-1 - a]
        contact_row[c, FRICTION] = np.sqrt(material_friction[mat_a] * material_friction[mat_b])
        contact_row[c, ROLLING] = max(material_rolling[mat_a], material_rolling[mat_b])
        contact_row[c, SPINNING] = max(material_spinning[mat_a], material_spinning[mat_b])
        contact_aux[c, RESTITUTION] = max(material_restitution[mat_a], material_restitution[mat_b])
        # the rolling and spinning rows' terms are read only where those coefficients are non-zero
        angular_rows = contact_row[c, ROLLING] > 0.0 or contact_row[c, SPINNING] > 0.0
        t1x, t1y, t1z, t2x, t2y, t2z = orthonormal_basis(n[0], n[1], n[2])
        _store3(contact_row, c, N_, n[0], n[1], n[2])
        _store3(contact_row, c, T1, t1x, t1y, t1z)
        _store3(contact_row, c, T2, t2x, t2y, t2z)
        _prepare_side(contact_row, c, position, inv_inertia_world, b, contact_point[contact], offsets_rb, offsets_ib)
        contact_row[c, INV_MASS_B] = inv_mass[b]
        if angular_rows:
            ib = inv_inertia_world[b]
            for d, off in ((N_, IBS), (T1, IB1), (T2, IB2)):
                ix, iy, iz = mat_vec(ib, contact_row[c, d], contact_row[c, d + 1], contact_row[c, d + 2])
                _store3(contact_aux, c, off, ix, iy, iz)
        if a >= 0:
            _prepare_side(contact_row, c, position, inv_inertia_world, a, contact_point[contact], offsets_ra, offsets_ia)
            contact_row[c, INV_MASS_A] = inv_mass[a]
            if angular_rows:
                ia = inv_inertia_world[a]
                for d, off in ((N_, IAS), (T1, IA1), (T2, IA2)):
                    ix, iy, iz = mat_vec(ia, contact_row[c, d], contact_row[c, d + 1], contact_row[c, d + 2])
                    _store3(contact_aux, c, off, ix, iy, iz)
        else:
            # static side: zero Jacobians so the solver's arithmetic on them stays exact
            for offset in (AN, AT1, AT2, IAN, IAT1, IAT2):
                _store3(contact_row, c, offset, 0.0, 0.0, 0.0)
            for offset in (IA1, IA2, IAS):
                _store3(contact_aux, c, offset, 0.0, 0.0, 0.0)
            contact_row[c, INV_MASS_A] = 0.0
        # effective masses 1 / (J M^-1 J')
        for d, ja, jb, ia_, ib_, slot in ((N_, AN, BN, IAN, IBN, MASS_N), (T1, AT1, BT1, IAT1, IBT1, MASS_T1),
                                          (T2, AT2, BT2, IAT2, IBT2, MASS_T2)):
            k = contact_row[c, INV_MASS_B] + _dot3(contact_row, c, jb, contact_row[c, ib_], contact_row[c, ib_ + 1], contact_row[c, ib_ + 2])
            if a >= 0:
                k += contact_row[c, INV_MASS_A] + _dot3(contact_row, c, ja, contact_row[c, ia_], contact_row[c, ia_ + 1], contact_row[c, ia_ + 2])
            contact_row[c, slot] = 1.0 / k if k > 0.0 else 0.0
        if angular_rows:
            for d, ia_, ib_, slot in ((T1, IA1, IB1, MASS_R1), (T2, IA2, IB2, MASS_R2), (N_, IAS, IBS, MASS_S)):
                k = _dot3(contact_row, c, d, contact_aux[c, ib_], contact_aux[c, ib_ + 1], contact_aux[c, ib_ + 2])
                if a >= 0:
                    k += _dot3(contact_row, c, d, contact_aux[c, ia_], contact_aux[c, ia_ + 1], contact_aux[c, ia_ + 2])
                contact_aux[c, slot] = 1.0 / k if k > 0.0 else 0.0
        # speculative contacts may close their gap during this substep, but not more
        contact_row[c, TARGET] = min(contact_depth[contact], 0.0) / h
        contact_aux[c, APPROACH] = _row_velocity(contact_row, c, linear_velocity, angular_velocity, a, b, N_, AN, BN)


@njit(**JIT_PARALLEL)
def set_penetration_targets(slot_contact, slot_a, slot_b, solve_origin, contact_depth, contact_row, linear_velocity,
                            angular_velocity, shape, semi_axes, n_contacts, h, baumgarte, slop):
    """Split-impulse targets from the velocities the solve ended with (solve numbering). Parallel chunks.

    Each contact's overlap at the end of the substep is predicted from its
    depth, its final normal velocity and the spin of both bodies; the split
    impulses then push (with pseudo-velocities, which add no kinetic energy)
    until at most the slop plus (1 - baumgarte) of the present excess would remain.
    So they remove a fraction of old overlap, and all of the new overlap that a
    spinning body or an unconverged velocity solve would otherwise leave.
    """
    chunks = min(n_contacts, PARALLEL_CHUNKS)
    for k in prange(chunks):
        _penetration_target_range(k * n_contacts // chunks, (k + 1) * n_contacts // chunks, slot_contact, slot_a,
                                  slot_b, solve_origin, contact_depth, contact_row, linear_velocity,
                                  angular_velocity, shape, semi_axes, h, baumgarte, slop)


@njit(**JIT)
def _penetration_target_range(start, end, slot_contact, slot_a, slot_b, solve_origin, contact_depth, contact_row,
                              linear_velocity, angular_velocity, shape, semi_axes, h, baumgarte, slop):
    negligible = 0.01 * slop
    for c in range(start, end):
        depth = contact_depth[slot_contact[c]]
        a = slot_a[c]
        b = slot_b[c]
        nx, ny, nz = _row3(contact_row, c, N_)
        vn = _row_velocity(contact_row, c, linear_velocity, angular_velocity, a, b, N_, AN, BN)
        body = solve_origin[b]
        sink = _rotation_sink(shape[body], semi_axes[body], angular_velocity[b], nx, ny, nz, h, negligible)
        if a >= 0:
            body = solve_origin[a]
            sink += _rotation_sink(shape[body], semi_axes[body], angular_velocity[a], nx, ny, nz, h, negligible)
        predicted = depth - h * vn + max(sink, 0.0)
        allowed = slop + (1.0 - baumgarte) * max(depth - slop, 0.0)
        contact_row[c, PUSH] = (predicted - allowed) / h


@njit(**JIT)
def _warm_start_range(start, end, slot_a, slot_b, slot_cache, contact_row, contact_aux, contact_impulse,
                      cache_impulse, linear_velocity, angular_velocity):
    for c in range(start, end):
        j = slot_cache[c]
        if j < 0:
            contact_impulse[c, :] = 0.0
            continue
        contact_impulse[c, 0] = cache_impulse[j, 0]
        contact_impulse[c, 1] = _dot3(contact_row, c, T1, cache_impulse[j, 1], cache_impulse[j, 2], cache_impulse[j, 3])
        contact_impulse[c, 2] = _dot3(contact_row, c, T2, cache_impulse[j, 1], cache_impulse[j, 2], cache_impulse[j, 3])
        contact_impulse[c, 3] = _dot3(contact_row, c, T1, cache_impulse[j, 4], cache_impulse[j, 5], cache_impulse[j, 6])
        contact_impulse[c, 4] = _dot3(contact_row, c, T2, cache_impulse[j, 4], cache_impulse[j, 5], cache_impulse[j, 6])
        contact_impulse[c, 5] = cache_impulse[j, 7]
        a = slot_a[c]
        b = slot_b[c]
        # normal and friction impulses summed, then applied to each body once
        ln, l1, l2 = contact_impulse[c, 0], contact_impulse[c, 1], contact_impulse[c, 2]
        mb = contact_row[c, INV_MASS_B]
        ma = contact_row[c, INV_MASS_A]
        for k in range(3):
            p = ln * contact_row[c, N_ + k] + l1 * contact_row[c, T1 + k] + l2 * contact_row[c, T2 + k]
            linear_velocity[b, k] += mb * p
            angular_velocity[b, k] += (ln * contact_row[c, IBN + k] + l1 * contact_row[c, IBT1 + k]
                                       + l2 * contact_row[c, IBT2 + k])
            if a >= 0:
                linear_velocity[a, k] -= ma * p
                angular_velocity[a, k] -= (ln * contact_row[c, IAN + k] + l1 * contact_row[c, IAT1 + k]
                                           + l2 * contact_row[c, IAT2 + k])
        if contact_row[c, ROLLING] > 0.0:
            _angular_apply(contact_aux, c, angular_velocity, a, b, IA1, IB1, contact_impulse[c, 3])
            _angular_apply(contact_aux, c, angular_velocity, a, b, IA2, IB2, contact_impulse[c, 4])
        if contact_row[c, SPINNING] > 0.0:
            _angular_apply(contact_aux, c, angular_velocity, a, b, IAS, IBS, contact_impulse[c, 5])


@njit(**JIT_PARALLEL)
def warm_start(slab_start, slabs, slot_a, slot_b, slot_cache, contact_row, contact_aux, contact_impulse,
               cache_impulse, linear_velocity, angular_velocity):
    """Take the impulses of contacts that existed last substep (cache row slot_cache), re-projected on the new frame."""
    for k in prange(slabs):
        _warm_start_range(slab_start[k], slab_start[k + 1], slot_a, slot_b, slot_cache, contact_row,
                          contact_aux, contact_impulse, cache_impulse, linear_velocity, angular_velocity)
    _warm_start_range(slab_start[slabs], slab_start[slabs + 1], slot_a, slot_b, slot_cache, contact_row,
                      contact_aux, contact_impulse, cache_impulse, linear_velocity, angular_velocity)


@njit(**JIT, inline="always")
def _body_velocity(lin, ang, body):
    return lin[body, 0], lin[body, 1], lin[body, 2], ang[body, 0], ang[body, 1], ang[body, 2]


@njit(**JIT, inline="always")
def _row3(rows, c, k):
    return rows[c, k], rows[c, k + 1], rows[c, k + 2]


@njit(**JIT, inline="always")
def _clamp_to_disc(x, y, radius):
    """(x, y) scaled back onto the disc of the given radius if it lies outside (elliptic cone projection)."""
    length = np.sqrt(x * x + y * y)
    if length > radius:
        return x * radius / length, y * radius / length
    return x, y


@njit(**JIT_PARALLEL)
def solve_velocities(slab_start, slabs, slot_a, slot_b, contact_row, contact_aux, contact_impulse, linear_velocity,
                     angular_velocity, iterations, tolerance, sweep_change):
    """Gauss-Seidel sweeps over all contacts: the slabs in parallel, and the boundary. Returns the sweeps run.

    The boundary goes after the slabs in even sweeps and before them in odd
    ones: always last, it had the final word in every sweep and a resting pile
    crept along the slab bounds (measured with 4 slabs: median drift of a
    settled pile 10 times larger, 4 times as many bodies moving visibly).

    After the second sweep, the sweeps stop early once the last one changed
    no contact's impulses by more than would change a body's velocity by
    ``tolerance`` (m/s): a warm-started resting pile is there after two or
    three sweeps. sweep_change holds each slab's (and the boundary's) largest
    change, so the decision does not depend on the thread count.
    """
    for sweep in range(iterations):
        if sweep % 2 == 1:
            sweep_change[slabs] = _velocity_sweep(slab_start[slabs], slab_start[slabs + 1], slot_a, slot_b,
                                                  contact_row, contact_aux, contact_impulse, linear_velocity,
                                                  angular_velocity)
        for k in prange(slabs):
            sweep_change[k] = _velocity_sweep(slab_start[k], slab_start[k + 1], slot_a, slot_b, contact_row,
                                              contact_aux, contact_impulse, linear_velocity, angular_velocity)
        if sweep % 2 == 0:
            sweep_change[slabs] = _velocity_sweep(slab_start[slabs], slab_start[slabs + 1], slot_a, slot_b,
                                                  contact_row, contact_aux, contact_impulse, linear_velocity,
                                                  angular_velocity)
        largest = 0.0
        for k in range(slabs + 1):
            largest = max(largest, sweep_change[k])
        if sweep >= 1 and largest <= tolerance:
            return sweep + 1
    return iterations


@njit(**JIT)
def _velocity_sweep(start, end, slot_a, slot_b, contact_row, contact_aux, contact_impulse, linear_velocity,
                    angular_velocity):
    """One Gauss-Seidel sweep over slots start..end: friction, rolling and spinning first, the normal row last.

    Returns the largest velocity change a contact's normal and friction
    impulses made this sweep, (|d lambda_n| + |d lambda_t|) (1/m_A + 1/m_B).

    The normal row goes last so non-penetration wins over friction (as in
    Box2D). Each contact reads its row into locals once per sweep and writes
    the two bodies' velocities back once, which lets LLVM keep everything in
    registers.
    """
    lin = linear_velocity
    ang = angular_velocity
    rows = contact_row
    aux = contact_aux
    change = 0.0
    for c in range(start, end):
        a = slot_a[c]
        b = slot_b[c]
        has_a = a >= 0
        vbx, vby, vbz, wbx, wby, wbz = _body_velocity(lin, ang, b)
        if has_a:
            vax, vay, vaz, wax, way, waz = _body_velocity(lin, ang, a)
        else:
            vax = vay = vaz = wax = way = waz = 0.0
        ma = rows[c, INV_MASS_A]
        mb = rows[c, INV_MASS_B]
        nx, ny, nz = _row3(rows, c, N_)
        t1x, t1y, t1z = _row3(rows, c, T1)
        t2x, t2y, t2z = _row3(rows, c, T2)
        dvx, dvy, dvz = vbx - vax, vby - vay, vbz - vaz

        # sliding friction, projected on the disc of radius mu * lambda_n
        v1 = (t1x * dvx + t1y * dvy + t1z * dvz + _dot3(rows, c, BT1, wbx, wby, wbz)
              - _dot3(rows, c, AT1, wax, way, waz))
        v2 = (t2x * dvx + t2y * dvy + t2z * dvz + _dot3(rows, c, BT2, wbx, wby, wbz)
              - _dot3(rows, c, AT2, wax, way, waz))
        f1, f2 = _clamp_to_disc(contact_impulse[c, 1] - rows[c, MASS_T1] * v1,
                                contact_impulse[c, 2] - rows[c, MASS_T2] * v2,
                                rows[c, FRICTION] * contact_impulse[c, 0])
        d1 = f1 - contact_impulse[c, 1]
        d2 = f2 - contact_impulse[c, 2]
        friction_change = abs(d1) + abs(d2)
        contact_impulse[c, 1] = f1
        contact_impulse[c, 2] = f2
        px, py, pz = d1 * t1x + d2 * t2x, d1 * t1y + d2 * t2y, d1 * t1z + d2 * t2z
        vbx += mb * px
        vby += mb * py
        vbz += mb * pz
        vax -= ma * px
        vay -= ma * py
        vaz -= ma * pz
        ibx1, iby1, ibz1 = _row3(rows, c, IBT1)
        ibx2, iby2, ibz2 = _row3(rows, c, IBT2)
        wbx += d1 * ibx1 + d2 * ibx2
        wby += d1 * iby1 + d2 * iby2
        wbz += d1 * ibz1 + d2 * ibz2
        iax1, iay1, iaz1 = _row3(rows, c, IAT1)
        iax2, iay2, iaz2 = _row3(rows, c, IAT2)
        wax -= d1 * iax1 + d2 * iax2
        way -= d1 * iay1 + d2 * iay2
        waz -= d1 * iaz1 + d2 * iaz2

        # rolling resistance on the disc of radius mu_r * lambda_n (mu_r is a length)
        if rows[c, ROLLING] > 0.0:
            rwx, rwy, rwz = wbx - wax, wby - way, wbz - waz
            r1, r2 = _clamp_to_disc(
                contact_impulse[c, 3] - aux[c, MASS_R1] * (t1x * rwx + t1y * rwy + t1z * rwz),
                contact_impulse[c, 4] - aux[c, MASS_R2] * (t2x * rwx + t2y * rwy + t2z * rwz),
                rows[c, ROLLING] * contact_impulse[c, 0])
            d1 = r1 - contact_impulse[c, 3]
            d2 = r2 - contact_impulse[c, 4]
            contact_impulse[c, 3] = r1
            contact_impulse[c, 4] = r2
            wbx += d1 * aux[c, IB1] + d2 * aux[c, IB2]
            wby += d1 * aux[c, IB1 + 1] + d2 * aux[c, IB2 + 1]
            wbz += d1 * aux[c, IB1 + 2] + d2 * aux[c, IB2 + 2]
            wax -= d1 * aux[c, IA1] + d2 * aux[c, IA2]
            way -= d1 * aux[c, IA1 + 1] + d2 * aux[c, IA2 + 1]
            waz -= d1 * aux[c, IA1 + 2] + d2 * aux[c, IA2 + 2]

        # spinning resistance, |lambda_s| <= mu_s * lambda_n (mu_s is a length)
        if rows[c, SPINNING] > 0.0:
            spin = nx * (wbx - wax) + ny * (wby - way) + nz * (wbz - waz)
            limit = rows[c, SPINNING] * contact_impulse[c, 0]
            old = contact_impulse[c, 5]
            new = min(max(old - aux[c, MASS_S] * spin, -limit), limit)
            contact_impulse[c, 5] = new
            ds = new - old
            wbx += ds * aux[c, IBS]
            wby += ds * aux[c, IBS + 1]
            wbz += ds * aux[c, IBS + 2]
            wax -= ds * aux[c, IAS]
            way -= ds * aux[c, IAS + 1]
            waz -= ds * aux[c, IAS + 2]

        # normal: n.v >= target, lambda_n >= 0
        vn = (nx * (vbx - vax) + ny * (vby - vay) + nz * (vbz - vaz) + _dot3(rows, c, BN, wbx, wby, wbz)
              - _dot3(rows, c, AN, wax, way, waz))
        old = contact_impulse[c, 0]
        new = max(old - rows[c, MASS_N] * (vn - rows[c, TARGET]), 0.0)
        contact_impulse[c, 0] = new
        dn = new - old
        change = max(change, (abs(dn) + friction_change) * (ma + mb))
        vbx += mb * dn * nx
        vby += mb * dn * ny
        vbz += mb * dn * nz
        wbx += dn * rows[c, IBN]
        wby += dn * rows[c, IBN + 1]
        wbz += dn * rows[c, IBN + 2]
        lin[b, 0] = vbx
        lin[b, 1] = vby
        lin[b, 2] = vbz
        ang[b, 0] = wbx
        ang[b, 1] = wby
        ang[b, 2] = wbz
        if has_a:
            lin[a, 0] = vax - ma * dn * nx
            lin[a, 1] = vay - ma * dn * ny
            lin[a, 2] = vaz - ma * dn * nz
            ang[a, 0] = wax - dn * rows[c, IAN]
            ang[a, 1] = way - dn * rows[c, IAN + 1]
            ang[a, 2] = waz - dn * rows[c, IAN + 2]
    return change


@njit(**JIT)
def apply_restitution(slot_a, slot_b, contact_row, contact_aux, contact_impulse, linear_velocity, angular_velocity,
                      n_contacts, threshold):
    """Bounce: contacts that pushed and were approaching faster than threshold leave at -e times that speed.

    As in Box2D, this runs after the velocity iterations, from the approach
    velocity measured before them, so a speculative contact that closes during
    the substep bounces with the full impact speed.
    """
    for c in range(n_contacts):
        if contact_aux[c, APPROACH] > -threshold or contact_impulse[c, 0] == 0.0 or contact_aux[c, RESTITUTION] == 0.0:
            continue
        a = slot_a[c]
        b = slot_b[c]
        vn = _row_velocity(contact_row, c, linear_velocity, angular_velocity, a, b, N_, AN, BN)
        old = contact_impulse[c, 0]
        bounce = contact_aux[c, RESTITUTION] * contact_aux[c, APPROACH]
        contact_impulse[c, 0] = max(old - contact_row[c, MASS_N] * (vn + bounce), 0.0)
        _row_apply(contact_row, c, linear_velocity, angular_velocity, a, b, N_, IAN, IBN, contact_impulse[c, 0] - old)


@njit(**JIT_PARALLEL)
def solve_penetration(slab_start, slabs, slot_a, slot_b, contact_row, contact_pseudo, pseudo_linear,
                      pseudo_angular, n_contacts, iterations):
    """Split impulses: push overlapping bodies apart through pseudo-velocities only (same order as the velocities)."""
    # zeroed in a serial helper: in a parallel function an array expression becomes a parfor of its
    # own, and one over a zero-size array crashed (a scene without bodies)
    _clear_pseudo(pseudo_linear, pseudo_angular, contact_pseudo, n_contacts)
    for sweep in range(iterations):
        if sweep % 2 == 1:
            _penetration_sweep(slab_start[slabs], slab_start[slabs + 1], slot_a, slot_b, contact_row,
                               contact_pseudo, pseudo_linear, pseudo_angular)
        for k in prange(slabs):
            _penetration_sweep(slab_start[k], slab_start[k + 1], slot_a, slot_b, contact_row, contact_pseudo,
                               pseudo_linear, pseudo_angular)
        if sweep % 2 == 0:
            _penetration_sweep(slab_start[slabs], slab_start[slabs + 1], slot_a, slot_b, contact_row,
                               contact_pseudo, pseudo_linear, pseudo_angular)


@njit(**JIT)
def _clear_pseudo(pseudo_linear, pseudo_angular, contact_pseudo, n_contacts):
    pseudo_linear[:] = 0.0
    pseudo_angular[:] = 0.0
    contact_pseudo[:n_contacts] = 0.0


@njit(**JIT)
def _penetration_sweep(start, end, slot_a, slot_b, contact_row, contact_pseudo, pseudo_linear, pseudo_angular):
    lin = pseudo_linear
    ang = pseudo_angular
    rows = contact_row
    for c in range(start, end):
        push = rows[c, PUSH]
        if push <= 0.0:
            continue
        a = slot_a[c]
        b = slot_b[c]
        has_a = a >= 0
        vbx, vby, vbz, wbx, wby, wbz = _body_velocity(lin, ang, b)
        if has_a:
            vax, vay, vaz, wax, way, waz = _body_velocity(lin, ang, a)
        else:
            vax = vay = vaz = wax = way = waz = 0.0
        nx, ny, nz = _row3(rows, c, N_)
        vn = (nx * (vbx - vax) + ny * (vby - vay) + nz * (vbz - vaz) + _dot3(rows, c, BN, wbx, wby, wbz)
              - _dot3(rows, c, AN, wax, way, waz))
        old = contact_pseudo[c]
        new = max(old - rows[c, MASS_N] * (vn - push), 0.0)
        contact_pseudo[c] = new
        dn = new - old
        mb = rows[c, INV_MASS_B] * dn
        lin[b, 0] = vbx + mb * nx
        lin[b, 1] = vby + mb * ny
        lin[b, 2] = vbz + mb * nz
        ang[b, 0] = wbx + dn * rows[c, IBN]
        ang[b, 1] = wby + dn * rows[c, IBN + 1]
        ang[b, 2] = wbz + dn * rows[c, IBN + 2]
        if has_a:
            ma = rows[c, INV_MASS_A] * dn
            lin[a, 0] = vax - ma * nx
            lin[a, 1] = vay - ma * ny
            lin[a, 2] = vaz - ma * nz
            ang[a, 0] = wax - dn * rows[c, IAN]
            ang[a, 1] = way - dn * rows[c, IAN + 1]
            ang[a, 2] = waz - dn * rows[c, IAN + 2]


@njit(**JIT_PARALLEL)
def store_impulses(contact_slot, contact_key, contact_normal, contact_row, contact_impulse, cache_key, cache_normal,
                   cache_impulse, cache_count, n_contacts):
    """Contacts of this substep become the warm-start cache of the next, in key order (world-frame impulses)."""
    chunks = min(n_contacts, PARALLEL_CHUNKS)
    for k in prange(chunks):
        _store_range(k * n_contacts // chunks, (k + 1) * n_contacts // chunks, contact_slot, contact_key,
                     contact_normal, contact_row, contact_impulse, cache_key, cache_normal, cache_impulse)
    cache_count[0] = n_contacts


@njit(**JIT)
def _store_range(start, end, contact_slot, contact_key, contact_normal, contact_row, contact_impulse, cache_key,
                 cache_normal, cache_impulse):
    for c in range(start, end):
        s = contact_slot[c]
        cache_key[c] = contact_key[c]
        cache_impulse[c, 0] = contact_impulse[s, 0]
        for k in range(3):
            cache_normal[c, k] = contact_normal[c, k]
            cache_impulse[c, 1 + k] = contact_impulse[s, 1] * contact_row[s, T1 + k] + contact_impulse[s, 2] * contact_row[s, T2 + k]
            cache_impulse[c, 4 + k] = contact_impulse[s, 3] * contact_row[s, T1 + k] + contact_impulse[s, 4] * contact_row[s, T2 + k]
        cache_impulse[c, 7] = contact_impulse[s, 5]
