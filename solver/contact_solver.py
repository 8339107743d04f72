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
"""
import numpy as np
from numba import njit

from .math3d import JIT, cross, mat_vec, orthonormal_basis

# layout of ws.contact_row: 3-vectors at these offsets
N_, T1, T2 = 0, 3, 6                     # normal and tangents
AN, BN, AT1, BT1, AT2, BT2 = 9, 12, 15, 18, 21, 24          # r_A x d and r_B x d for d = n, t1, t2
IAN, IBN, IAT1, IBT1, IAT2, IBT2 = 27, 30, 33, 36, 39, 42   # I^-1 (r x d)
IA1, IB1, IA2, IB2, IAS, IBS = 45, 48, 51, 54, 57, 60       # I^-1 t1, I^-1 t2, I^-1 n (rolling, spinning)
MASS_N, MASS_T1, MASS_T2, MASS_R1, MASS_R2, MASS_S = 63, 64, 65, 66, 67, 68
INV_MASS_A, INV_MASS_B, TARGET, FRICTION, ROLLING, SPINNING = 69, 70, 71, 72, 73, 74
RESTITUTION, APPROACH = 75, 76   # restitution coefficient, normal velocity before the solve
ROW_WIDTH = 77
# ws.contact_impulse: normal, t1, t2, roll1, roll2, spin (scalars along this substep's frame)


@njit(**JIT, inline="always")
def _dot3(row, k, x, y, z):
    return row[k] * x + row[k + 1] * y + row[k + 2] * z


@njit(**JIT, inline="always")
def _store3(row, k, x, y, z):
    row[k] = x
    row[k + 1] = y
    row[k + 2] = z


@njit(**JIT, inline="always")
def _row_velocity(row, lin, ang, a, b, d, ja, jb):
    """d.(v_B - v_A) + w_B.(r_B x d) - w_A.(r_A x d)."""
    v = (_dot3(row, d, lin[b, 0], lin[b, 1], lin[b, 2]) + _dot3(row, jb, ang[b, 0], ang[b, 1], ang[b, 2]))
    if a >= 0:
        v -= _dot3(row, d, lin[a, 0], lin[a, 1], lin[a, 2]) + _dot3(row, ja, ang[a, 0], ang[a, 1], ang[a, 2])
    return v


@njit(**JIT, inline="always")
def _row_apply(row, lin, ang, a, b, d, ia, ib, impulse):
    """Apply impulse along direction d at the contact: +B, -A."""
    mb = row[INV_MASS_B] * impulse
    for k in range(3):
        lin[b, k] += mb * row[d + k]
        ang[b, k] += impulse * row[ib + k]
    if a >= 0:
        ma = row[INV_MASS_A] * impulse
        for k in range(3):
            lin[a, k] -= ma * row[d + k]
            ang[a, k] -= impulse * row[ia + k]


@njit(**JIT, inline="always")
def _angular_velocity(row, ang, a, b, d):
    v = _dot3(row, d, ang[b, 0], ang[b, 1], ang[b, 2])
    if a >= 0:
        v -= _dot3(row, d, ang[a, 0], ang[a, 1], ang[a, 2])
    return v


@njit(**JIT, inline="always")
def _angular_apply(row, ang, a, b, ia, ib, impulse):
    for k in range(3):
        ang[b, k] += impulse * row[ib + k]
    if a >= 0:
        for k in range(3):
            ang[a, k] -= impulse * row[ia + k]


@njit(**JIT)
def _prepare_side(row, position, inv_inertia, body, point, sign_offset_r, sign_offset_i, offsets_r, offsets_i):
    """Fill lever-arm Jacobians of one body (A or B) for directions n, t1, t2."""
    rx = point[0] - position[body, 0]
    ry = point[1] - position[body, 1]
    rz = point[2] - position[body, 2]
    iinv = inv_inertia[body]
    for k in range(3):
        d = 3 * k  # N_, T1, T2
        cx, cy, cz = cross(rx, ry, rz, row[d], row[d + 1], row[d + 2])
        _store3(row, offsets_r[k], cx, cy, cz)
        ix, iy, iz = mat_vec(iinv, cx, cy, cz)
        _store3(row, offsets_i[k], ix, iy, iz)


@njit(**JIT)
def prepare_contacts(contact_a, contact_b, contact_normal, contact_point, contact_depth, contact_row,
                     position, linear_velocity, angular_velocity, inv_mass, inv_inertia_world,
                     body_material, static_material, material_friction, material_rolling, material_spinning,
                     material_restitution, n_contacts, h):
    """Jacobians, effective masses, material coefficients and normal velocity targets."""
    offsets_ra = (AN, AT1, AT2)
    offsets_ia = (IAN, IAT1, IAT2)
    offsets_rb = (BN, BT1, BT2)
    offsets_ib = (IBN, IBT1, IBT2)
    for c in range(n_contacts):
        a = contact_a[c]
        b = contact_b[c]
        row = contact_row[c]
        n = contact_normal[c]
        t1x, t1y, t1z, t2x, t2y, t2z = orthonormal_basis(n[0], n[1], n[2])
        _store3(row, N_, n[0], n[1], n[2])
        _store3(row, T1, t1x, t1y, t1z)
        _store3(row, T2, t2x, t2y, t2z)
        _prepare_side(row, position, inv_inertia_world, b, contact_point[c], 1, 1, offsets_rb, offsets_ib)
        ib = inv_inertia_world[b]
        for d, off in ((N_, IBS), (T1, IB1), (T2, IB2)):
            ix, iy, iz = mat_vec(ib, row[d], row[d + 1], row[d + 2])
            _store3(row, off, ix, iy, iz)
        row[INV_MASS_B] = inv_mass[b]
        mat_b = body_material[b]
        if a >= 0:
            _prepare_side(row, position, inv_inertia_world, a, contact_point[c], 1, 1, offsets_ra, offsets_ia)
            ia = inv_inertia_world[a]
            for d, off in ((N_, IAS), (T1, IA1), (T2, IA2)):
                ix, iy, iz = mat_vec(ia, row[d], row[d + 1], row[d + 2])
                _store3(row, off, ix, iy, iz)
            row[INV_MASS_A] = inv_mass[a]
            mat_a = body_material[a]
        else:
            for k in range(AN, AN + 3):
                row[k] = 0.0
            row[INV_MASS_A] = 0.0
            mat_a = static_material[-1 - a]
        # effective masses 1 / (J M^-1 J')
        for d, ja, jb, ia_, ib_, slot in ((N_, AN, BN, IAN, IBN, MASS_N), (T1, AT1, BT1, IAT1, IBT1, MASS_T1),
                                          (T2, AT2, BT2, IAT2, IBT2, MASS_T2)):
            k = row[INV_MASS_B] + _dot3(row, jb, row[ib_], row[ib_ + 1], row[ib_ + 2])
            if a >= 0:
                k += row[INV_MASS_A] + _dot3(row, ja, row[ia_], row[ia_ + 1], row[ia_ + 2])
            row[slot] = 1.0 / k if k > 0.0 else 0.0
        for d, ia_, ib_, slot in ((T1, IA1, IB1, MASS_R1), (T2, IA2, IB2, MASS_R2), (N_, IAS, IBS, MASS_S)):
            k = _dot3(row, d, row[ib_], row[ib_ + 1], row[ib_ + 2])
            if a >= 0:
                k += _dot3(row, d, row[ia_], row[ia_ + 1], row[ia_ + 2])
            row[slot] = 1.0 / k if k > 0.0 else 0.0
        row[FRICTION] = np.sqrt(material_friction[mat_a] * material_friction[mat_b])
        row[ROLLING] = max(material_rolling[mat_a], material_rolling[mat_b])
        row[SPINNING] = max(material_spinning[mat_a], material_spinning[mat_b])
        restitution = max(material_restitution[mat_a], material_restitution[mat_b])
        row[RESTITUTION] = restitution
        # speculative contacts may close their gap during this substep, but not more
        row[TARGET] = min(contact_depth[c], 0.0) / h
        row[APPROACH] = _row_velocity(row, linear_velocity, angular_velocity, a, b, N_, AN, BN)


@njit(**JIT)
def warm_start(contact_key, contact_a, contact_b, contact_row, contact_impulse, cache_key, cache_impulse,
               cache_count, linear_velocity, angular_velocity, n_contacts):
    """Take the impulses of contacts that existed last substep (same key), re-projected on the new frame."""
    j = 0
    for c in range(n_contacts):
        key = contact_key[c]
        imp = contact_impulse[c]
        while j < cache_count and cache_key[j] < key:
            j += 1
        if j >= cache_count or cache_key[j] != key:
            imp[:] = 0.0
            continue
        row = contact_row[c]
        old = cache_impulse[j]
        imp[0] = old[0]
        imp[1] = _dot3(row, T1, old[1], old[2], old[3])
        imp[2] = _dot3(row, T2, old[1], old[2], old[3])
        imp[3] = _dot3(row, T1, old[4], old[5], old[6])
        imp[4] = _dot3(row, T2, old[4], old[5], old[6])
        imp[5] = old[7]
        a = contact_a[c]
        b = contact_b[c]
        _row_apply(row, linear_velocity, angular_velocity, a, b, N_, IAN, IBN, imp[0])
        _row_apply(row, linear_velocity, angular_velocity, a, b, T1, IAT1, IBT1, imp[1])
        _row_apply(row, linear_velocity, angular_velocity, a, b, T2, IAT2, IBT2, imp[2])
        _angular_apply(row, angular_velocity, a, b, IA1, IB1, imp[3])
        _angular_apply(row, angular_velocity, a, b, IA2, IB2, imp[4])
        _angular_apply(row, angular_velocity, a, b, IAS, IBS, imp[5])


@njit(**JIT)
def solve_velocities(contact_a, contact_b, contact_row, contact_impulse, linear_velocity, angular_velocity,
                     n_contacts, iterations):
    lin = linear_velocity
    ang = angular_velocity
    for _ in range(iterations):
        for c in range(n_contacts):
            a = contact_a[c]
            b = contact_b[c]
            row = contact_row[c]
            imp = contact_impulse[c]
            # sliding friction, projected on the disc of radius mu * lambda_n
            v1 = _row_velocity(row, lin, ang, a, b, T1, AT1, BT1)
            v2 = _row_velocity(row, lin, ang, a, b, T2, AT2, BT2)
            f1 = imp[1] - row[MASS_T1] * v1
            f2 = imp[2] - row[MASS_T2] * v2
            limit = row[FRICTION] * imp[0]
            length = np.sqrt(f1 * f1 + f2 * f2)
            if length > limit:
                f1 *= limit / length
                f2 *= limit / length
            _row_apply(row, lin, ang, a, b, T1, IAT1, IBT1, f1 - imp[1])
            _row_apply(row, lin, ang, a, b, T2, IAT2, IBT2, f2 - imp[2])
            imp[1] = f1
            imp[2] = f2
            # rolling resistance, on the disc of radius mu_r * lambda_n
            if row[ROLLING] > 0.0:
                w1 = _angular_velocity(row, ang, a, b, T1)
                w2 = _angular_velocity(row, ang, a, b, T2)
                r1 = imp[3] - row[MASS_R1] * w1
                r2 = imp[4] - row[MASS_R2] * w2
                limit = row[ROLLING] * imp[0]
                length = np.sqrt(r1 * r1 + r2 * r2)
                if length > limit:
                    r1 *= limit / length
                    r2 *= limit / length
                _angular_apply(row, ang, a, b, IA1, IB1, r1 - imp[3])
                _angular_apply(row, ang, a, b, IA2, IB2, r2 - imp[4])
                imp[3] = r1
                imp[4] = r2
            # spinning resistance, |lambda_s| <= mu_s * lambda_n
            if row[SPINNING] > 0.0:
                ws_ = _angular_velocity(row, ang, a, b, N_)
                limit = row[SPINNING] * imp[0]
                old = imp[5]
                imp[5] = min(max(old - row[MASS_S] * ws_, -limit), limit)
                _angular_apply(row, ang, a, b, IAS, IBS, imp[5] - old)
            # normal last, so non-penetration wins over friction (as in Box2D): n.v >= target, lambda_n >= 0
            vn = _row_velocity(row, lin, ang, a, b, N_, AN, BN)
            old = imp[0]
            imp[0] = max(old - row[MASS_N] * (vn - row[TARGET]), 0.0)
            _row_apply(row, lin, ang, a, b, N_, IAN, IBN, imp[0] - old)


@njit(**JIT)
def apply_restitution(contact_a, contact_b, contact_row, contact_impulse, linear_velocity, angular_velocity,
                      n_contacts, threshold):
    """Bounce: contacts that pushed and were approaching faster than threshold leave at -e times that speed.

    As in Box2D, this runs after the velocity iterations, from the approach
    velocity measured before them, so a speculative contact that closes during
    the substep bounces with the full impact speed.
    """
    for c in range(n_contacts):
        row = contact_row[c]
        imp = contact_impulse[c]
        if row[APPROACH] > -threshold or imp[0] == 0.0 or row[RESTITUTION] == 0.0:
            continue
        a = contact_a[c]
        b = contact_b[c]
        vn = _row_velocity(row, linear_velocity, angular_velocity, a, b, N_, AN, BN)
        old = imp[0]
        imp[0] = max(old - row[MASS_N] * (vn + row[RESTITUTION] * row[APPROACH]), 0.0)
        _row_apply(row, linear_velocity, angular_velocity, a, b, N_, IAN, IBN, imp[0] - old)


@njit(**JIT)
def solve_penetration(contact_a, contact_b, contact_row, contact_depth, contact_pseudo, pseudo_linear,
                      pseudo_angular, n_contacts, iterations, h, baumgarte, slop):
    """Split impulses: push overlapping bodies apart through pseudo-velocities only."""
    pseudo_linear[:] = 0.0
    pseudo_angular[:] = 0.0
    contact_pseudo[:n_contacts] = 0.0
    for _ in range(iterations):
        for c in range(n_contacts):
            depth = contact_depth[c]
            if depth <= slop:
                continue
            a = contact_a[c]
            b = contact_b[c]
            row = contact_row[c]
            vn = _row_velocity(row, pseudo_linear, pseudo_angular, a, b, N_, AN, BN)
            old = contact_pseudo[c]
            new = max(old - row[MASS_N] * (vn - baumgarte * (depth - slop) / h), 0.0)
            contact_pseudo[c] = new
            _row_apply(row, pseudo_linear, pseudo_angular, a, b, N_, IAN, IBN, new - old)


@njit(**JIT)
def store_impulses(contact_key, contact_normal, contact_row, contact_impulse, cache_key, cache_normal,
                   cache_impulse, cache_count, n_contacts):
    """Contacts of this substep become the warm-start cache of the next (already sorted by key)."""
    for c in range(n_contacts):
        row = contact_row[c]
        imp = contact_impulse[c]
        cache_key[c] = contact_key[c]
        out = cache_impulse[c]
        out[0] = imp[0]
        for k in range(3):
            cache_normal[c, k] = contact_normal[c, k]
            out[1 + k] = imp[1] * row[T1 + k] + imp[2] * row[T2 + k]
            out[4 + k] = imp[3] * row[T1 + k] + imp[4] * row[T2 + k]
        out[7] = imp[5]
    cache_count[0] = n_contacts
