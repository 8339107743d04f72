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

Every term a sweep needs is computed once in prepare and stored per contact in
two flat rows, so the iterations only stream through them; the hot loops take
plain arrays, never tuples of arrays:

* ``contact_row`` (float32): what a row reads: directions, the lever-arm
  Jacobians r x d, effective masses, bounds and targets;
* ``contact_response`` (float64): how an impulse changes the two bodies'
  velocities: inverse masses and I^-1 (r x d).

A large pile's sweeps stream these rows from memory (a 100,000-body pile has
about 100 MB of them; 150 MB as one row of 56 doubles), so their size sets the
cost there. Single precision is exact
enough for what a row reads (a velocity estimate to 1e-7); what it applies
stays double, and the directions are rounded to single precision before any
other term is computed from them, so an impulse changes the linear and angular
momentum of the two bodies by exactly opposite amounts.

"""
import numpy as np
from numba import njit, prange

from .integrate import inverse_inertia_times, kinetic_energy
from .math3d import JIT, JIT_PARALLEL, PARALLEL_CHUNKS, cross, mat_vec, orthonormal_basis, quat_to_matrix
from .narrowphase import quadratic_form, sym_at

# layout of ws.contact_row (float32): 3-vectors at these offsets, then scalars
N_, T1, T2 = 0, 3, 6                     # normal and tangents
AN, BN, AT1, BT1, AT2, BT2 = 9, 12, 15, 18, 21, 24          # r_A x d and r_B x d for d = n, t1, t2
MASS_N, MASS_T1, MASS_T2 = 27, 28, 29
TARGET, FRICTION, ROLLING, SPINNING = 30, 31, 32, 33
ROW_WIDTH = 34
ROW_DTYPE = np.float32
# layout of ws.contact_response (float64)
IAN, IBN, IAT1, IBT1, IAT2, IBT2 = 0, 3, 6, 9, 12, 15       # I^-1 (r x d)
INV_MASS_A, INV_MASS_B = 18, 19
RESPONSE_WIDTH = 20
# layout of ws.contact_aux (float64), the terms read and written only where rolling or spinning friction act
IA1, IB1, IA2, IB2, IAS, IBS = 0, 3, 6, 9, 12, 15           # I^-1 t1, I^-1 t2, I^-1 n (rolling, spinning)
MASS_R1, MASS_R2, MASS_S = 18, 19, 20
AUX_WIDTH = 21
# ws.contact_impulse: normal, t1, t2; ws.contact_twist_impulse: roll1, roll2, spin
# (scalars along this substep's frame; apart, so the sweeps stream only the first three)
# ws.slot_depth, ws.slot_push (float32): signed depth (overlap > 0) and the push target, a separating
# pseudo-velocity along n (split impulses, position correction). Apart from the rows: those passes read
# and write them for every contact, the velocity sweeps never.
# ws.slot_bounce (float64): the normal velocity restitution asks for, 0 for none (see prepare_contacts);
# ws.slot_rebound (float64): the rebound speed a bounce from a gap still owes after the move (finish_rebounds).
# layout of ws.push_row (float64): a listed contact's terms for the push sweeps, copied from its rows when it is
# listed, so the sweeps stream one array in list order (ws.push_body: its two bodies in solve numbering)
# a bounce from a gap is split in two (see prepare_contacts) unless turning changes its contact point's normal
# velocity by more than this fraction of the rebound speed within the substep
REBOUND_TURN = 0.01
P_N, P_AN, P_BN, P_IAN, P_IBN = 0, 3, 6, 9, 12                # n, r x n and I^-1 (r x n) (the last four if turning)
P_MASS, P_SHARE_A, P_SHARE_B, P_TARGET, P_PSEUDO = 15, 16, 17, 18, 19  # P_PSEUDO: accumulated push
PUSH_WIDTH = 20


@njit(**JIT, inline="always")
def _dot3(rows, c, k, x, y, z):
    return rows[c, k] * x + rows[c, k + 1] * y + rows[c, k + 2] * z


@njit(**JIT, inline="always")
def _store3(rows, c, k, x, y, z):
    rows[c, k] = x
    rows[c, k + 1] = y
    rows[c, k + 2] = z


@njit(**JIT, inline="always")
def _normal_velocity(rows, c, dvx, dvy, dvz, wbx, wby, wbz, wax, way, waz):
    """n.dv + w_B.(r_B x n) - w_A.(r_A x n) from velocities already loaded (dv = v_B - v_A; zeros for a static A).

    Callers load the bodies' velocities into locals first rather than pass the
    velocity arrays: numba keeps reference-count updates of arrays passed to
    an inlined helper that branches (as it would to skip a static side) inside
    the loop, and those are atomic and contended between threads.
    """
    return (_dot3(rows, c, N_, dvx, dvy, dvz) + _dot3(rows, c, BN, wbx, wby, wbz)
            - _dot3(rows, c, AN, wax, way, waz))


@njit(**JIT, inline="always")
def _row_apply(rows, response, c, lin, ang, a, b, d, ia, ib, impulse):
    """Apply impulse along direction d at the contact: +B, -A."""
    mb = response[c, INV_MASS_B] * impulse
    for k in range(3):
        lin[b, k] += mb * rows[c, d + k]
        ang[b, k] += impulse * response[c, ib + k]
    if a >= 0:
        ma = response[c, INV_MASS_A] * impulse
        for k in range(3):
            lin[a, k] -= ma * rows[c, d + k]
            ang[a, k] -= impulse * response[c, ia + k]


@njit(**JIT, inline="always")
def _single(x):
    """x rounded to the nearest float32, as a float64."""
    return np.float64(np.float32(x))


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
        return _prepare_range(0, n_contacts, slot_contact, contact_a, contact_b, contact_normal, contact_point,
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
        nx, ny, nz = (_single(contact_normal[contact, 0]), _single(contact_normal[contact, 1]),
                      _single(contact_normal[contact, 2]))
        t1x, t1y, t1z, t2x, t2y, t2z = orthonormal_basis(nx, ny, nz)
        directions[0, 0], directions[0, 1], directions[0, 2] = nx, ny, nz
        directions[1, 0], directions[1, 1], directions[1, 2] = _single(t1x), _single(t1y), _single(t1z)
        directions[2, 0], directions[2, 1], directions[2, 2] = _single(t2x), _single(t2y), _single(t2z)
        for k in range(3):
            _store3(rows, c, 3 * k, directions[k, 0], directions[k, 1], directions[k, 2])
        px, py, pz = contact_point[contact, 0], contact_point[contact, 1], contact_point[contact, 2]
        for k in range(3):
            _prepare_lever(px - position[b, 0], py - position[b, 1], pz - position[b, 2], inv_inertia_world, b,
                           directions, k, lever_b, spun_b)
        for k in range(3):
            _store3(rows, c, offsets_rb[k], lever_b[k, 0], lever_b[k, 1], lever_b[k, 2])
            _store3(response, c, offsets_ib[k], spun_b[k, 0], spun_b[k, 1], spun_b[k, 2])
        response[c, INV_MASS_B] = inv_mass[b]
        if angular_rows:
            _store_angular_terms(contact_aux, c, inv_inertia_world[b], directions, IBS, IB1, IB2)
        if has_a:
            for k in range(3):
                _prepare_lever(px - position[a, 0], py - position[a, 1], pz - position[a, 2], inv_inertia_world, a,
                               directions, k, lever_a, spun_a)
            for k in range(3):
                _store3(rows, c, offsets_ra[k], lever_a[k, 0], lever_a[k, 1], lever_a[k, 2])
                _store3(response, c, offsets_ia[k], spun_a[k, 0], spun_a[k, 1], spun_a[k, 2])
            response[c, INV_MASS_A] = inv_mass[a]
            if angular_rows:
                _store_angular_terms(contact_aux, c, inv_inertia_world[a], directions, IAS, IA1, IA2)
        else:
            # static side: zero Jacobians so the solver's arithmetic on them stays exact
            for k in range(3):
                _store3(rows, c, offsets_ra[k], 0.0, 0.0, 0.0)
                _store3(response, c, offsets_ia[k], 0.0, 0.0, 0.0)
            if angular_rows:
                for offset in (IA1, IA2, IAS):
                    _store3(contact_aux, c, offset, 0.0, 0.0, 0.0)
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
        vbx, vby, vbz, wbx, wby, wbz = _body_velocity(linear_velocity, angular_velocity, b)
        vax = vay = vaz = wax = way = waz = 0.0
        if has_a:
            vax, vay, vaz, wax, way, waz = _body_velocity(linear_velocity, angular_velocity, a)
        approach = _normal_velocity(rows, c, vbx - vax, vby - vay, vbz - vaz, wbx, wby, wbz, wax, way, waz)
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
        _store3(aux, c, off, ix, iy, iz)


@njit(**JIT)
def _warm_start_range(start, end, slot_a, slot_b, slot_cache, contact_row, contact_response, contact_aux,
                      contact_impulse, contact_twist_impulse, cache_impulse, linear_velocity, angular_velocity):
    """Cached impulses of slots start..end, on this substep's frames, applied to each body once (summed)."""
    rows = contact_row
    response = contact_response
    aux = contact_aux
    twist = contact_twist_impulse
    lin = linear_velocity
    ang = angular_velocity
    for c in range(start, end):
        j = slot_cache[c]
        if j < 0:
            for k in range(3):
                contact_impulse[c, k] = 0.0
                twist[c, k] = 0.0
            continue
        ln = cache_impulse[j, 0]
        l1 = _dot3(rows, c, T1, cache_impulse[j, 1], cache_impulse[j, 2], cache_impulse[j, 3])
        l2 = _dot3(rows, c, T2, cache_impulse[j, 1], cache_impulse[j, 2], cache_impulse[j, 3])
        r1 = _dot3(rows, c, T1, cache_impulse[j, 4], cache_impulse[j, 5], cache_impulse[j, 6])
        r2 = _dot3(rows, c, T2, cache_impulse[j, 4], cache_impulse[j, 5], cache_impulse[j, 6])
        spin = cache_impulse[j, 7]
        contact_impulse[c, 0] = ln
        contact_impulse[c, 1] = l1
        contact_impulse[c, 2] = l2
        twist[c, 0] = r1
        twist[c, 1] = r2
        twist[c, 2] = spin
        # the rolling and spinning terms exist only where those coefficients are non-zero
        rolling = rows[c, ROLLING] > 0.0
        spinning = rows[c, SPINNING] > 0.0
        a = slot_a[c]
        b = slot_b[c]
        mb = response[c, INV_MASS_B]
        ma = response[c, INV_MASS_A]
        for k in range(3):
            p = ln * rows[c, N_ + k] + l1 * rows[c, T1 + k] + l2 * rows[c, T2 + k]
            turn_b = ln * response[c, IBN + k] + l1 * response[c, IBT1 + k] + l2 * response[c, IBT2 + k]
            turn_a = ln * response[c, IAN + k] + l1 * response[c, IAT1 + k] + l2 * response[c, IAT2 + k]
            if rolling:
                turn_b += r1 * aux[c, IB1 + k] + r2 * aux[c, IB2 + k]
                turn_a += r1 * aux[c, IA1 + k] + r2 * aux[c, IA2 + k]
            if spinning:
                turn_b += spin * aux[c, IBS + k]
                turn_a += spin * aux[c, IAS + k]
            lin[b, k] += mb * p
            ang[b, k] += turn_b
            if a >= 0:
                lin[a, k] -= ma * p
                ang[a, k] -= turn_a


@njit(**JIT_PARALLEL)
def warm_start(slab_start, slabs, slot_a, slot_b, slot_cache, contact_row, contact_response, contact_aux,
               contact_impulse, contact_twist_impulse, cache_impulse, linear_velocity, angular_velocity, serial):
    """Take the impulses of contacts that existed last substep (cache row slot_cache), re-projected on the new frame.

    The slabs in parallel, then the boundary; with ``serial``, all in slot order in the calling thread.
    """
    if not serial:
        for k in prange(slabs):
            _warm_start_range(slab_start[k], slab_start[k + 1], slot_a, slot_b, slot_cache, contact_row,
                              contact_response, contact_aux, contact_impulse, contact_twist_impulse, cache_impulse,
                              linear_velocity, angular_velocity)
    _warm_start_range(slab_start[0] if serial else slab_start[slabs], slab_start[slabs + 1], slot_a, slot_b,
                      slot_cache, contact_row, contact_response, contact_aux, contact_impulse, contact_twist_impulse,
                      cache_impulse, linear_velocity, angular_velocity)


@njit(**JIT, inline="always")
def _body_velocity(lin, ang, body):
    return lin[body, 0], lin[body, 1], lin[body, 2], ang[body, 0], ang[body, 1], ang[body, 2]


@njit(**JIT, inline="always")
def _row3(rows, c, k):
    return np.float64(rows[c, k]), np.float64(rows[c, k + 1]), np.float64(rows[c, k + 2])


@njit(**JIT, inline="always")
def _clamp_to_disc(x, y, radius):
    """(x, y) scaled back onto the disc of the given radius if it lies outside (elliptic cone projection).

    Squared lengths first: a resting contact sticks, and then no square root delays the normal row.
    """
    length2 = x * x + y * y
    if length2 > radius * radius:
        scale = radius / np.sqrt(length2)
        return x * scale, y * scale
    return x, y


@njit(**JIT_PARALLEL)
def solve_velocities(slab_start, slabs, slot_a, slot_b, contact_row, contact_response, contact_aux, contact_impulse,
                     contact_twist_impulse, linear_velocity, angular_velocity, iterations, tolerance, sweep_change,
                     serial):
    """Gauss-Seidel sweeps over all contacts: the slabs in parallel, and the boundary. Returns the sweeps run.

    With ``serial`` the slabs go one after another in the calling thread (the same result: they share no body).

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
                                                  contact_row, contact_response, contact_aux, contact_impulse,
                                                  contact_twist_impulse, linear_velocity, angular_velocity)
        if serial:
            for k in range(slabs):
                sweep_change[k] = _velocity_sweep(slab_start[k], slab_start[k + 1], slot_a, slot_b, contact_row,
                                                  contact_response, contact_aux, contact_impulse,
                                                  contact_twist_impulse, linear_velocity, angular_velocity)
        else:
            for k in prange(slabs):
                sweep_change[k] = _velocity_sweep(slab_start[k], slab_start[k + 1], slot_a, slot_b, contact_row,
                                                  contact_response, contact_aux, contact_impulse,
                                                  contact_twist_impulse, linear_velocity, angular_velocity)
        if sweep % 2 == 0:
            sweep_change[slabs] = _velocity_sweep(slab_start[slabs], slab_start[slabs + 1], slot_a, slot_b,
                                                  contact_row, contact_response, contact_aux, contact_impulse,
                                                  contact_twist_impulse, linear_velocity, angular_velocity)
        if _sweeps_settled(sweep_change, slabs, sweep, tolerance):
            return sweep + 1
    return iterations


@njit(**JIT)
def _sweeps_settled(sweep_change, slabs, sweep, tolerance):
    """True after the second sweep once no class's last sweep changed a velocity by more than tolerance."""
    largest = 0.0
    for k in range(slabs + 1):
        largest = max(largest, sweep_change[k])
    return sweep >= 1 and largest <= tolerance


@njit(**JIT)
def _velocity_sweep(start, end, slot_a, slot_b, contact_row, contact_response, contact_aux, contact_impulse,
                    contact_twist_impulse, linear_velocity, angular_velocity):
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
    response = contact_response
    aux = contact_aux
    impulse = contact_impulse
    twist = contact_twist_impulse
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
        if (impulse[c, 0] == 0.0 and impulse[c, 1] == 0.0 and impulse[c, 2] == 0.0
                and (rows[c, ROLLING] == 0.0 or (twist[c, 0] == 0.0 and twist[c, 1] == 0.0))
                and (rows[c, SPINNING] == 0.0 or twist[c, 2] == 0.0)):
            # an idle contact (a quarter to a half of a pile's, mostly speculative ones still apart): with
            # no normal impulse every friction bound is zero, so if the normal row does not push either,
            # the full update below would change nothing. Skipping it is exact.
            vn = _normal_velocity(rows, c, vbx - vax, vby - vay, vbz - vaz, wbx, wby, wbz, wax, way, waz)
            if vn >= rows[c, TARGET]:
                continue
        ma = response[c, INV_MASS_A]
        mb = response[c, INV_MASS_B]
        nx, ny, nz = _row3(rows, c, N_)
        t1x, t1y, t1z = _row3(rows, c, T1)
        t2x, t2y, t2z = _row3(rows, c, T2)
        dvx, dvy, dvz = vbx - vax, vby - vay, vbz - vaz

        # sliding friction, projected on the disc of radius mu * lambda_n
        v1 = (t1x * dvx + t1y * dvy + t1z * dvz + _dot3(rows, c, BT1, wbx, wby, wbz)
              - _dot3(rows, c, AT1, wax, way, waz))
        v2 = (t2x * dvx + t2y * dvy + t2z * dvz + _dot3(rows, c, BT2, wbx, wby, wbz)
              - _dot3(rows, c, AT2, wax, way, waz))
        f1, f2 = _clamp_to_disc(impulse[c, 1] - rows[c, MASS_T1] * v1,
                                impulse[c, 2] - rows[c, MASS_T2] * v2,
                                rows[c, FRICTION] * impulse[c, 0])
        d1 = f1 - impulse[c, 1]
        d2 = f2 - impulse[c, 2]
        friction_change = abs(d1) + abs(d2)
        impulse[c, 1] = f1
        impulse[c, 2] = f2
        px, py, pz = d1 * t1x + d2 * t2x, d1 * t1y + d2 * t2y, d1 * t1z + d2 * t2z
        vbx += mb * px
        vby += mb * py
        vbz += mb * pz
        vax -= ma * px
        vay -= ma * py
        vaz -= ma * pz
        ibx1, iby1, ibz1 = _row3(response, c, IBT1)
        ibx2, iby2, ibz2 = _row3(response, c, IBT2)
        wbx += d1 * ibx1 + d2 * ibx2
        wby += d1 * iby1 + d2 * iby2
        wbz += d1 * ibz1 + d2 * ibz2
        iax1, iay1, iaz1 = _row3(response, c, IAT1)
        iax2, iay2, iaz2 = _row3(response, c, IAT2)
        wax -= d1 * iax1 + d2 * iax2
        way -= d1 * iay1 + d2 * iay2
        waz -= d1 * iaz1 + d2 * iaz2

        # rolling resistance on the disc of radius mu_r * lambda_n (mu_r is a length)
        if rows[c, ROLLING] > 0.0:
            rwx, rwy, rwz = wbx - wax, wby - way, wbz - waz
            r1, r2 = _clamp_to_disc(
                twist[c, 0] - aux[c, MASS_R1] * (t1x * rwx + t1y * rwy + t1z * rwz),
                twist[c, 1] - aux[c, MASS_R2] * (t2x * rwx + t2y * rwy + t2z * rwz),
                rows[c, ROLLING] * impulse[c, 0])
            d1 = r1 - twist[c, 0]
            d2 = r2 - twist[c, 1]
            twist[c, 0] = r1
            twist[c, 1] = r2
            wbx += d1 * aux[c, IB1] + d2 * aux[c, IB2]
            wby += d1 * aux[c, IB1 + 1] + d2 * aux[c, IB2 + 1]
            wbz += d1 * aux[c, IB1 + 2] + d2 * aux[c, IB2 + 2]
            wax -= d1 * aux[c, IA1] + d2 * aux[c, IA2]
            way -= d1 * aux[c, IA1 + 1] + d2 * aux[c, IA2 + 1]
            waz -= d1 * aux[c, IA1 + 2] + d2 * aux[c, IA2 + 2]

        # spinning resistance, |lambda_s| <= mu_s * lambda_n (mu_s is a length)
        if rows[c, SPINNING] > 0.0:
            spin = nx * (wbx - wax) + ny * (wby - way) + nz * (wbz - waz)
            limit = rows[c, SPINNING] * impulse[c, 0]
            old = twist[c, 2]
            new = min(max(old - aux[c, MASS_S] * spin, -limit), limit)
            twist[c, 2] = new
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
        old = impulse[c, 0]
        new = max(old - rows[c, MASS_N] * (vn - rows[c, TARGET]), 0.0)
        impulse[c, 0] = new
        dn = new - old
        change = max(change, (abs(dn) + friction_change) * (ma + mb))
        vbx += mb * dn * nx
        vby += mb * dn * ny
        vbz += mb * dn * nz
        wbx += dn * response[c, IBN]
        wby += dn * response[c, IBN + 1]
        wbz += dn * response[c, IBN + 2]
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
            ang[a, 0] = wax - dn * response[c, IAN]
            ang[a, 1] = way - dn * response[c, IAN + 1]
            ang[a, 2] = waz - dn * response[c, IAN + 2]
    return change


@njit(**JIT_PARALLEL)
def apply_restitution(slab_start, slabs, slot_a, slot_b, contact_row, contact_response, slot_bounce, slot_rebound,
                      contact_impulse, linear_velocity, angular_velocity, serial):
    """Bounce: contacts that pushed and were approaching fast enough leave at the speed slot_bounce asks for.

    One that did not push never touched: its slot_rebound is cleared.

    As in Box2D, this runs after the velocity iterations, from the approach
    velocity measured before them, so a speculative contact that closes during
    the substep bounces with the full impact speed. The slabs share no bodies,
    so they go in parallel and the boundary after: the same result as one pass
    in slot order, which is what ``serial`` does in the calling thread.
    """
    if not serial:
        for k in prange(slabs):
            _restitution_range(slab_start[k], slab_start[k + 1], slot_a, slot_b, contact_row, contact_response,
                               slot_bounce, slot_rebound, contact_impulse, linear_velocity, angular_velocity)
    _restitution_range(slab_start[0] if serial else slab_start[slabs], slab_start[slabs + 1], slot_a, slot_b,
                       contact_row, contact_response, slot_bounce, slot_rebound, contact_impulse, linear_velocity,
                       angular_velocity)


@njit(**JIT)
def _restitution_range(start, end, slot_a, slot_b, contact_row, contact_response, slot_bounce, slot_rebound,
                       contact_impulse, linear_velocity, angular_velocity):
    for c in range(start, end):
        rebound = slot_rebound[c]
        if contact_impulse[c, 0] == 0.0 or (slot_bounce[c] == 0.0 and rebound == 0.0):
            if rebound > 0.0:
                slot_rebound[c] = 0.0
            continue
        a = slot_a[c]
        b = slot_b[c]
        vbx, vby, vbz, wbx, wby, wbz = _body_velocity(linear_velocity, angular_velocity, b)
        vax = vay = vaz = wax = way = waz = 0.0
        if a >= 0:
            vax, vay, vaz, wax, way, waz = _body_velocity(linear_velocity, angular_velocity, a)
        vn = _normal_velocity(contact_row, c, vbx - vax, vby - vay, vbz - vaz, wbx, wby, wbz, wax, way, waz)
        old = contact_impulse[c, 0]
        contact_impulse[c, 0] = max(old - contact_row[c, MASS_N] * (vn - slot_bounce[c]), 0.0)
        _row_apply(contact_row, contact_response, c, linear_velocity, angular_velocity, a, b, N_, IAN, IBN,
                   contact_impulse[c, 0] - old)


@njit(**JIT)
def finish_rebounds(slot_contact, contact_a, contact_b, contact_point, contact_row, slot_rebound, n_contacts,
                    start_position, start_rotation, position, orientation, linear_velocity, angular_velocity,
                    inv_mass, inv_inertia_local, mass, inertia_local, body_energy):
    """After the move, the rest of each bounce that started from a gap: its normal velocity up to slot_rebound.

    The impulse acts along the contact normal at one point for both bodies,
    the contact point carried along with them, with their arms and inertia
    at the new pose: so it keeps linear and angular momentum as the bounce
    itself does. Serial: only bounces from a gap have one, and a body may
    have several. Updates the kinetic energies (body_energy) it changes.
    """
    rotation_a = np.empty((3, 3))
    rotation_b = np.empty((3, 3))
    for c in range(n_contacts):
        rebound = slot_rebound[c]
        if rebound <= 0.0:
            continue
        contact = slot_contact[c]
        a = contact_a[contact]
        b = contact_b[contact]
        nx, ny, nz = _row3(contact_row, c, N_)
        px, py, pz = contact_point[contact, 0], contact_point[contact, 1], contact_point[contact, 2]
        quat_to_matrix(orientation[b], rotation_b)
        qx, qy, qz = _carried_point(px, py, pz, start_position, start_rotation, position, rotation_b, b)
        if a >= 0:
            quat_to_matrix(orientation[a], rotation_a)
            ax, ay, az = _carried_point(px, py, pz, start_position, start_rotation, position, rotation_a, a)
            qx, qy, qz = 0.5 * (qx + ax), 0.5 * (qy + ay), 0.5 * (qz + az)
        ibx, iby, ibz, normal_speed, compliance = _point_response(b, qx, qy, qz, nx, ny, nz, position, rotation_b,
                                                                  inv_mass, inv_inertia_local, linear_velocity,
                                                                  angular_velocity)
        iax = iay = iaz = 0.0
        if a >= 0:
            iax, iay, iaz, speed_a, compliance_a = _point_response(a, qx, qy, qz, nx, ny, nz, position, rotation_a,
                                                                   inv_mass, inv_inertia_local, linear_velocity,
                                                                   angular_velocity)
            normal_speed -= speed_a
            compliance += compliance_a
        if compliance <= 0.0 or normal_speed >= rebound:
            continue
        impulse = (rebound - normal_speed) / compliance
        _kick(b, impulse, nx, ny, nz, ibx, iby, ibz, rotation_b, linear_velocity, angular_velocity, inv_mass, mass,
              inertia_local, body_energy)
        if a >= 0:
            _kick(a, -impulse, nx, ny, nz, iax, iay, iaz, rotation_a, linear_velocity, angular_velocity, inv_mass,
                  mass, inertia_local, body_energy)


@njit(**JIT, inline="always")
def _point_response(body, qx, qy, qz, nx, ny, nz, position, rotation, inv_mass, inv_inertia_local, linear_velocity,
                    angular_velocity):
    """For an impulse along n at the point q of a body turned by ``rotation``: I^-1 (r x n), the point's velocity
    along n, and the body's part of the compliance, 1/m + (r x n).I^-1 (r x n)."""
    cx, cy, cz = cross(qx - position[body, 0], qy - position[body, 1], qz - position[body, 2], nx, ny, nz)
    ix, iy, iz = inverse_inertia_times(rotation, inv_inertia_local, body, cx, cy, cz)
    vx, vy, vz, wx, wy, wz = _body_velocity(linear_velocity, angular_velocity, body)
    speed = nx * vx + ny * vy + nz * vz + wx * cx + wy * cy + wz * cz
    return ix, iy, iz, speed, inv_mass[body] + cx * ix + cy * iy + cz * iz


@njit(**JIT, inline="always")
def _carried_point(px, py, pz, start_position, start_rotation, position, rotation, body):
    """Where the world point p at the start of the substep is now, carried along with the body."""
    dx, dy, dz = px - start_position[body, 0], py - start_position[body, 1], pz - start_position[body, 2]
    lx = start_rotation[body, 0, 0] * dx + start_rotation[body, 1, 0] * dy + start_rotation[body, 2, 0] * dz
    ly = start_rotation[body, 0, 1] * dx + start_rotation[body, 1, 1] * dy + start_rotation[body, 2, 1] * dz
    lz = start_rotation[body, 0, 2] * dx + start_rotation[body, 1, 2] * dy + start_rotation[body, 2, 2] * dz
    mx, my, mz = mat_vec(rotation, lx, ly, lz)
    return position[body, 0] + mx, position[body, 1] + my, position[body, 2] + mz


@njit(**JIT, inline="always")
def _kick(body, impulse, nx, ny, nz, ix, iy, iz, rotation, linear_velocity, angular_velocity, inv_mass, mass,
          inertia_local, body_energy):
    """Impulse along n at the point whose I^-1 (r x n) is i, on a movable body; its kinetic energy written anew."""
    if inv_mass[body] <= 0.0:
        return
    dv = impulse * inv_mass[body]
    linear_velocity[body, 0] += dv * nx
    linear_velocity[body, 1] += dv * ny
    linear_velocity[body, 2] += dv * nz
    angular_velocity[body, 0] += impulse * ix
    angular_velocity[body, 1] += impulse * iy
    angular_velocity[body, 2] += impulse * iz
    vx, vy, vz, wx, wy, wz = _body_velocity(linear_velocity, angular_velocity, body)
    body_energy[body] = kinetic_energy(mass, inertia_local, rotation, body, vx, vy, vz, wx, wy, wz)


@njit(**JIT_PARALLEL)
def solve_penetration(slab_start, slabs, slot_a, slot_b, solve_origin, contact_row, contact_response, slot_depth,
                      slot_push, linear_velocity, angular_velocity, pseudo_linear, pseudo_angular, shape, swing_arm,
                      n_contacts, h, baumgarte, slop, iterations, tolerance, sweep_change, push_slot, gap_slot,
                      push_count, push_row, push_body, body_pushed, body_level, serial):
    """Split impulses: push overlapping bodies apart through pseudo-velocities only (same order as the velocities).

    (body_level is unused here: these pushes turn the bodies and share by mass.)

    Each contact's overlap at the end of the substep is predicted from its
    depth, its normal velocity after the solve (solve numbering) and the spin
    of both bodies; the split impulses then push (with pseudo-velocities, which
    add no kinetic energy) until at most the slop plus (1 - baumgarte) of the
    present excess would remain. So they remove a fraction of old overlap, and
    all of the new overlap that a spinning body or an unconverged velocity
    solve would otherwise leave.

    The sweeps read only listed rows: each class lists in push_slot, from its
    first slot on (push_count[0] of them), the contacts with a positive
    target, and after the first sweep those whose gap the pushes could close.
    A contact left out would not resist pseudo-velocities driving its bodies
    together: in a 1,000-body drop that is how about four in five of the
    contacts deeper than 1% of the smallest semi-axis got there.

    The pushes turn bodies as well; where a body spins fast, its surface's
    second-order swing depends on that extra turn, so halfway through the
    sweeps the targets of the listed contacts are predicted again from the
    total turn.

    Like the velocity sweeps, they stop after the second once the last one
    changed no body's pseudo-velocity by more than ``tolerance`` (m/s).
    With ``serial``, everything runs in the calling thread, with the same result.
    Returns the sweeps run.
    """
    # zeroed in a serial helper: in a parallel function an array expression becomes a parfor of its
    # own, and one over a zero-size array crashed (a scene without bodies)
    _clear_pseudo(pseudo_linear, pseudo_angular, body_pushed)
    if serial:
        spinning, largest = _set_targets(0, n_contacts, push_slot, False, slot_a, slot_b, solve_origin, contact_row,
                                         slot_depth, slot_push, push_row, linear_velocity, angular_velocity,
                                         pseudo_angular, shape, swing_arm, h, baumgarte, slop)
    else:
        chunks = min(n_contacts, PARALLEL_CHUNKS)
        spinning = 0
        largest = 0.0
        for k in prange(chunks):
            spun, top = _set_targets(k * n_contacts // chunks, (k + 1) * n_contacts // chunks, push_slot, False,
                                     slot_a, slot_b, solve_origin, contact_row, slot_depth, slot_push, push_row,
                                     linear_velocity, angular_velocity, pseudo_angular, shape, swing_arm, h,
                                     baumgarte, slop)
            spinning += spun
            largest = max(largest, top)
    return _push_sweeps(slab_start, slabs, slot_a, slot_b, solve_origin, contact_row, contact_response, slot_depth,
                        slot_push, linear_velocity, angular_velocity, pseudo_linear, pseudo_angular, shape, swing_arm,
                        h, baumgarte, slop, iterations, tolerance, sweep_change, push_slot, gap_slot, push_count,
                        push_row, push_body, body_pushed, body_level, largest, False, spinning > 0, True, serial)


@njit(**JIT_PARALLEL)
def _push_sweeps(slab_start, slabs, slot_a, slot_b, solve_origin, contact_row, contact_response, slot_depth,
                 slot_push, linear_velocity, angular_velocity, pseudo_linear, pseudo_angular, shape, swing_arm, h,
                 baumgarte, slop, iterations, tolerance, sweep_change, push_slot, gap_slot, push_count, push_row,
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
    for sweep in range(iterations):
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
        settled = _sweeps_settled(sweep_change, slabs, sweep, tolerance)
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
        if not retargeted and (settled or sweep + 1 == iterations // 2):
            if serial:
                for k in range(slabs + 1):
                    _set_targets(slab_start[k], slab_start[k] + push_count[0, k], push_slot, True, slot_a, slot_b,
                                 solve_origin, contact_row, slot_depth, slot_push, push_row, linear_velocity,
                                 angular_velocity, pseudo_angular, shape, swing_arm, h, baumgarte, slop)
            else:
                for k in prange(slabs + 1):
                    _set_targets(slab_start[k], slab_start[k] + push_count[0, k], push_slot, True, slot_a, slot_b,
                                 solve_origin, contact_row, slot_depth, slot_push, push_row, linear_velocity,
                                 angular_velocity, pseudo_angular, shape, swing_arm, h, baumgarte, slop)
            retargeted = True
        elif settled:
            return sweep + 1
    return iterations


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
def _set_targets(first, end, push_slot, listed, slot_a, slot_b, solve_origin, contact_row, slot_depth, slot_push,
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
        vbx, vby, vbz, wbx, wby, wbz = _body_velocity(linear_velocity, angular_velocity, b)
        arm_b = swing_arm[solve_origin[b]]
        vax = vay = vaz = wax = way = waz = pax = pay = paz = pbx = pby = pbz = arm_a = 0.0
        if a >= 0:
            vax, vay, vaz, wax, way, waz = _body_velocity(linear_velocity, angular_velocity, a)
            arm_a = swing_arm[solve_origin[a]]
        if listed:  # (before the sweeps the pushes are all zero: not read)
            pbx, pby, pbz = pseudo[b, 0], pseudo[b, 1], pseudo[b, 2]
            if a >= 0:
                pax, pay, paz = pseudo[a, 0], pseudo[a, 1], pseudo[a, 2]
        # (a static side has no spin and no push: its share is 0)
        if listed and (_extra_swing(wbx, wby, wbz, pbx, pby, pbz, arm_b, h)
                       + _extra_swing(wax, way, waz, pax, pay, paz, arm_a, h)) <= 0.1 * slop:
            continue
        nx, ny, nz = _row3(rows, c, N_)
        vn = _normal_velocity(rows, c, vbx - vax, vby - vay, vbz - vaz, wbx, wby, wbz, wax, way, waz)
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
        target = (predicted - _overlap_aim(depth, slop, baumgarte)) / h
        if listed:
            push_row[i, P_TARGET] = target
        else:
            slot_push[c] = target
            largest = max(largest, slot_push[c])
        spinning += spun
    return spinning, largest


@njit(**JIT, inline="always")
def _overlap_aim(depth, slop, baumgarte):
    """Overlap a contact this deep should end the substep with: the slop plus (1 - baumgarte) of the excess."""
    return slop + (1.0 - baumgarte) * max(depth - slop, 0.0)


@njit(**JIT, inline="always")
def _extra_swing(wx, wy, wz, px, py, pz, swing_arm, h):
    """Bound on how much a body's pseudo spin p adds to its rotation sink: (2|w||p| + |p|^2) h^2 a_max^2 / a_min."""
    p2 = px * px + py * py + pz * pz
    return (2.0 * np.sqrt((wx * wx + wy * wy + wz * wz) * p2) + p2) * h * h * swing_arm


@njit(**JIT)
def _clear_pseudo(pseudo_linear, pseudo_angular, body_pushed):
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
        vbx, vby, vbz, wbx, wby, wbz = _body_velocity(lin, ang, b)
        vax = vay = vaz = wax = way = waz = 0.0
        if has_a:
            vax, vay, vaz, wax, way, waz = _body_velocity(lin, ang, a)
        nx, ny, nz = push_row[i, P_N], push_row[i, P_N + 1], push_row[i, P_N + 2]
        vn = nx * (vbx - vax) + ny * (vby - vay) + nz * (vbz - vaz)
        if turn:
            vn += _dot3(push_row, i, P_BN, wbx, wby, wbz) - _dot3(push_row, i, P_AN, wax, way, waz)
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


@njit(**JIT_PARALLEL)
def correct_positions(slab_start, slabs, slot_a, slot_b, solve_origin, contact_row, contact_response, slot_depth,
                      slot_push, start_position, start_orientation, body_travel, position, orientation, pseudo_linear,
                      pseudo_angular, shape, semi_axes, n_contacts, h, baumgarte, slop, iterations, tolerance,
                      sweep_change, push_slot, gap_slot, push_count, push_row, push_body, body_pushed, body_level,
                      level_start, level_adjacent, level_queue, serial):
    """After integration: push apart, in position only, the contacts the split impulses left too deep.

    The split impulses aim each contact's overlap at the end of the substep
    from a first-order prediction (plus a bound on a spinning body's swing)
    and may stop before they converge: in a 1,000-body drop they missed by up
    to 7% of the smallest semi-axis (bodies spinning at 100 rad/s, six
    sweeps not enough where a heavy body lands on a light one). The step
    runs this when they used all their sweeps. It measures every contact's
    overlap again with the new poses: the narrow phase's overlap plus how far
    the bodies' centres and half-widths along the contact normal moved
    towards each other (the overlap of two convex bodies' shadows on a line
    is at least their true overlap, so this never measures too little).
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
    Returns the sweeps run (0 when no contact needed it).
    """
    if serial:
        largest = _correction_targets(0, n_contacts, slot_a, slot_b, solve_origin, contact_row, slot_depth, slot_push,
                                      start_position, start_orientation, body_travel, position, orientation,
                                      semi_axes, h, baumgarte, slop)
    else:
        chunks = min(n_contacts, PARALLEL_CHUNKS)
        largest = -np.inf
        for k in prange(chunks):
            top = _correction_targets(k * n_contacts // chunks, (k + 1) * n_contacts // chunks, slot_a, slot_b,
                                      solve_origin, contact_row, slot_depth, slot_push, start_position,
                                      start_orientation, body_travel, position, orientation, semi_axes, h,
                                      baumgarte, slop)
            largest = max(largest, top)
    if largest <= 0.0:
        return 0
    _clear_pseudo(pseudo_linear, pseudo_angular, body_pushed)
    support_levels(n_contacts, slot_a, slot_b, contact_response, slot_depth, slot_push, slop, body_level, level_start,
                   level_adjacent, level_queue)
    # no retargeting, so the velocity, shape and swing arguments are only placeholders
    sweeps = _push_sweeps(slab_start, slabs, slot_a, slot_b, solve_origin, contact_row, contact_response, slot_depth,
                          slot_push, pseudo_linear, pseudo_angular, pseudo_linear, pseudo_angular, shape, body_travel,
                          h, baumgarte, slop, iterations, tolerance, sweep_change, push_slot, gap_slot, push_count,
                          push_row, push_body, body_pushed, body_level, largest, True, False, False, serial)
    n = solve_origin.shape[0]
    if serial:
        _apply_pushes(0, n, solve_origin, pseudo_linear, position, h)
        return sweeps
    body_chunks = min(n, PARALLEL_CHUNKS)
    for k in prange(body_chunks):
        _apply_pushes(k * n // body_chunks, (k + 1) * n // body_chunks, solve_origin, pseudo_linear, position, h)
    return sweeps


UNSUPPORTED = np.int32(2**30)  # support level of a body no chain of contacts joins to an immovable one
# The correction's share of the body nearer to an immovable one, relative to the other's 1. Not 0: a body
# wedged between two nearer ones, both held, could not get out (in random piles that left overlaps the sweeps
# never removed); up to about half, chains still converge in a few sweeps.
SUPPORT_SHARE = 0.25


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
def _correction_targets(start, end, slot_a, slot_b, solve_origin, contact_row, slot_depth, slot_push, start_position,
                        start_orientation, body_travel, position, orientation, semi_axes, h, baumgarte, slop):
    """slot_push of slots start..end: the overlap now beyond the split impulses' aim plus the slop, per h; the largest.

    The overlap grew by at most both bodies' travel; where even that stays
    within the limit, that bound stands in for the measurement (it lists
    more gaps, never fewer) and the poses are not read: most contacts of a
    pile that is nearly at rest.
    """
    largest = -np.inf
    rows = contact_row
    for c in range(start, end):
        a = slot_a[c]
        if a >= 0:
            a = solve_origin[a]
        b = solve_origin[slot_b[c]]
        before = slot_depth[c]
        aim = _overlap_aim(before, slop, baumgarte)
        depth = before + body_travel[b] + (body_travel[a] if a >= 0 else 0.0)
        if depth > aim + slop:
            nx, ny, nz = _row3(rows, c, N_)
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


@njit(**JIT_PARALLEL)
def store_impulses(contact_slot, contact_key, contact_normal, contact_row, contact_impulse, contact_twist_impulse,
                   cache_key, cache_normal, cache_impulse, cache_count, n_contacts, serial):
    """Contacts of this substep become the warm-start cache of the next, in key order (world-frame impulses).

    Parallel chunks of contacts; with ``serial``, one chunk in the calling thread.
    """
    cache_count[0] = n_contacts
    if serial:
        _store_range(0, n_contacts, contact_slot, contact_key, contact_normal, contact_row, contact_impulse,
                     contact_twist_impulse, cache_key, cache_normal, cache_impulse)
        return
    chunks = min(n_contacts, PARALLEL_CHUNKS)
    for k in prange(chunks):
        _store_range(k * n_contacts // chunks, (k + 1) * n_contacts // chunks, contact_slot, contact_key,
                     contact_normal, contact_row, contact_impulse, contact_twist_impulse, cache_key, cache_normal,
                     cache_impulse)


@njit(**JIT)
def _store_range(start, end, contact_slot, contact_key, contact_normal, contact_row, contact_impulse,
                 contact_twist_impulse, cache_key, cache_normal, cache_impulse):
    for c in range(start, end):
        s = contact_slot[c]
        cache_key[c] = contact_key[c]
        cache_impulse[c, 0] = contact_impulse[s, 0]
        for k in range(3):
            cache_normal[c, k] = contact_normal[c, k]
            cache_impulse[c, 1 + k] = contact_impulse[s, 1] * contact_row[s, T1 + k] + contact_impulse[s, 2] * contact_row[s, T2 + k]
            cache_impulse[c, 4 + k] = (contact_twist_impulse[s, 0] * contact_row[s, T1 + k]
                                       + contact_twist_impulse[s, 1] * contact_row[s, T2 + k])
        cache_impulse[c, 7] = contact_twist_impulse[s, 2]
