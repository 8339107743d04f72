"""Contact solver: warm-started sequential impulses (projected Gauss-Seidel).

Phases, after Box2D v3's contact_solver.c: prepare (lever arms, tangent frame,
effective masses, restitution target from the approach velocity before the
solve), warm start (apply last substep's impulses), solve (normal, Coulomb
disc, rolling disc, spinning), relax penetration with split impulses on
separate pseudo-velocities (they move bodies apart but never enter the real
velocities, so removing overlap adds no kinetic energy), store impulses for
the next substep.

Rows per contact, for relative velocity v = v_B + w_B x r_B - v_A - w_A x r_A:
  normal   n.v >= target,  0 <= lambda_n
  friction |(t1.v, t2.v) impulse| <= mu lambda_n            (elliptic cone: projected on the disc)
  rolling  |(t1.(w_B - w_A), t2.(w_B - w_A)) impulse| <= mu_r lambda_n   (mu_r is a length)
  spinning |n.(w_B - w_A) impulse| <= mu_s lambda_n                      (mu_s is a length)
"""
import numpy as np
from numba import njit

from .math3d import JIT, cross, mat_vec, orthonormal_basis


@njit(**JIT, inline="always")
def _angular_mass(iinv, rx, ry, rz, nx, ny, nz):
    """(r x n)' I^-1 (r x n)."""
    cx, cy, cz = cross(rx, ry, rz, nx, ny, nz)
    ix, iy, iz = mat_vec(iinv, cx, cy, cz)
    return cx * ix + cy * iy + cz * iz


@njit(**JIT, inline="always")
def _rotational_mass(iinv, nx, ny, nz):
    """n' I^-1 n."""
    ix, iy, iz = mat_vec(iinv, nx, ny, nz)
    return nx * ix + ny * iy + nz * iz


@njit(**JIT)
def _relative_velocity(model, state, ws, c, a, b, lin, ang):
    """Relative velocity at contact c of B with respect to A (lin, ang: the velocity arrays to use)."""
    rb = ws.contact_rb[c]
    wx, wy, wz = cross(ang[b, 0], ang[b, 1], ang[b, 2], rb[0], rb[1], rb[2])
    vx = lin[b, 0] + wx
    vy = lin[b, 1] + wy
    vz = lin[b, 2] + wz
    if a >= 0:
        ra = ws.contact_ra[c]
        wx, wy, wz = cross(ang[a, 0], ang[a, 1], ang[a, 2], ra[0], ra[1], ra[2])
        vx -= lin[a, 0] + wx
        vy -= lin[a, 1] + wy
        vz -= lin[a, 2] + wz
    return vx, vy, vz


@njit(**JIT)
def _apply_impulse(model, ws, c, a, b, px, py, pz, lin, ang):
    """Apply impulse p at the contact point: +p to B, -p to A."""
    mb = model.inv_mass[b]
    if mb > 0.0:
        lin[b, 0] += mb * px
        lin[b, 1] += mb * py
        lin[b, 2] += mb * pz
        rb = ws.contact_rb[c]
        tx, ty, tz = cross(rb[0], rb[1], rb[2], px, py, pz)
        ix, iy, iz = mat_vec(ws.inv_inertia_world[b], tx, ty, tz)
        ang[b, 0] += ix
        ang[b, 1] += iy
        ang[b, 2] += iz
    if a >= 0:
        ma = model.inv_mass[a]
        if ma > 0.0:
            lin[a, 0] -= ma * px
            lin[a, 1] -= ma * py
            lin[a, 2] -= ma * pz
            ra = ws.contact_ra[c]
            tx, ty, tz = cross(ra[0], ra[1], ra[2], px, py, pz)
            ix, iy, iz = mat_vec(ws.inv_inertia_world[a], tx, ty, tz)
            ang[a, 0] -= ix
            ang[a, 1] -= iy
            ang[a, 2] -= iz


@njit(**JIT)
def _apply_angular_impulse(model, ws, a, b, tx, ty, tz, ang):
    """Apply a pure angular impulse: +t to B, -t to A."""
    if model.inv_mass[b] > 0.0:
        ix, iy, iz = mat_vec(ws.inv_inertia_world[b], tx, ty, tz)
        ang[b, 0] += ix
        ang[b, 1] += iy
        ang[b, 2] += iz
    if a >= 0 and model.inv_mass[a] > 0.0:
        ix, iy, iz = mat_vec(ws.inv_inertia_world[a], tx, ty, tz)
        ang[a, 0] -= ix
        ang[a, 1] -= iy
        ang[a, 2] -= iz


@njit(**JIT)
def prepare_contacts(model, state, ws, n_contacts, h, restitution_threshold):
    """Lever arms, tangents, effective masses, material coefficients and velocity targets."""
    lin = state.linear_velocity
    ang = state.angular_velocity
    for c in range(n_contacts):
        a = ws.contact_a[c]
        b = ws.contact_b[c]
        n = ws.contact_normal[c]
        p = ws.contact_point[c]
        for k in range(3):
            ws.contact_rb[c, k] = p[k] - state.position[b, k]
            ws.contact_ra[c, k] = p[k] - state.position[a, k] if a >= 0 else 0.0
        t1x, t1y, t1z, t2x, t2y, t2z = orthonormal_basis(n[0], n[1], n[2])
        ws.contact_tangent[c, 0] = t1x
        ws.contact_tangent[c, 1] = t1y
        ws.contact_tangent[c, 2] = t1z
        ws.contact_tangent[c, 3] = t2x
        ws.contact_tangent[c, 4] = t2y
        ws.contact_tangent[c, 5] = t2z
        rb = ws.contact_rb[c]
        ra = ws.contact_ra[c]
        ib = ws.inv_inertia_world[b]
        kn = model.inv_mass[b] + _angular_mass(ib, rb[0], rb[1], rb[2], n[0], n[1], n[2])
        k1 = model.inv_mass[b] + _angular_mass(ib, rb[0], rb[1], rb[2], t1x, t1y, t1z)
        k2 = model.inv_mass[b] + _angular_mass(ib, rb[0], rb[1], rb[2], t2x, t2y, t2z)
        r1 = _rotational_mass(ib, t1x, t1y, t1z)
        r2 = _rotational_mass(ib, t2x, t2y, t2z)
        rs = _rotational_mass(ib, n[0], n[1], n[2])
        mat_b = model.body_material[b]
        if a >= 0:
            ia = ws.inv_inertia_world[a]
            kn += model.inv_mass[a] + _angular_mass(ia, ra[0], ra[1], ra[2], n[0], n[1], n[2])
            k1 += model.inv_mass[a] + _angular_mass(ia, ra[0], ra[1], ra[2], t1x, t1y, t1z)
            k2 += model.inv_mass[a] + _angular_mass(ia, ra[0], ra[1], ra[2], t2x, t2y, t2z)
            r1 += _rotational_mass(ia, t1x, t1y, t1z)
            r2 += _rotational_mass(ia, t2x, t2y, t2z)
            rs += _rotational_mass(ia, n[0], n[1], n[2])
            mat_a = model.body_material[a]
        else:
            mat_a = model.static_material[-1 - a]
        ws.contact_mass[c, 0] = 1.0 / kn if kn > 0.0 else 0.0
        ws.contact_mass[c, 1] = 1.0 / k1 if k1 > 0.0 else 0.0
        ws.contact_mass[c, 2] = 1.0 / k2 if k2 > 0.0 else 0.0
        ws.contact_mass[c, 3] = 1.0 / r1 if r1 > 0.0 else 0.0
        ws.contact_mass[c, 4] = 1.0 / r2 if r2 > 0.0 else 0.0
        ws.contact_mass[c, 5] = 1.0 / rs if rs > 0.0 else 0.0
        ws.contact_coeff[c, 0] = np.sqrt(model.material_friction[mat_a] * model.material_friction[mat_b])
        ws.contact_coeff[c, 1] = max(model.material_rolling[mat_a], model.material_rolling[mat_b])
        ws.contact_coeff[c, 2] = max(model.material_spinning[mat_a], model.material_spinning[mat_b])
        restitution = max(model.material_restitution[mat_a], model.material_restitution[mat_b])
        ws.contact_coeff[c, 3] = restitution
        depth = ws.contact_depth[c]
        vx, vy, vz = _relative_velocity(model, state, ws, c, a, b, lin, ang)
        approach = vx * n[0] + vy * n[1] + vz * n[2]
        if depth < 0.0:
            # speculative: the gap may close during this substep, but not more
            target = depth / h
        elif approach < -restitution_threshold:
            target = -restitution * approach
        else:
            target = 0.0
        ws.contact_target[c] = target
        ws.contact_pseudo[c] = 0.0


@njit(**JIT)
def warm_start(model, state, ws, n_contacts):
    """Take accumulated impulses of contacts that existed last substep (same key) and apply them."""
    lin = state.linear_velocity
    ang = state.angular_velocity
    cache_count = state.cache_count[0]
    j = 0
    for c in range(n_contacts):
        key = ws.contact_key[c]
        while j < cache_count and state.cache_key[j] < key:
            j += 1
        imp = ws.contact_impulse[c]
        if j < cache_count and state.cache_key[j] == key:
            for k in range(8):
                imp[k] = state.cache_impulse[j, k]
            # keep only the tangential parts of the old friction and rolling vectors
            n = ws.contact_normal[c]
            fn = imp[1] * n[0] + imp[2] * n[1] + imp[3] * n[2]
            rn = imp[4] * n[0] + imp[5] * n[1] + imp[6] * n[2]
            for k in range(3):
                imp[1 + k] -= fn * n[k]
                imp[4 + k] -= rn * n[k]
        else:
            imp[:] = 0.0
            continue
        a = ws.contact_a[c]
        b = ws.contact_b[c]
        n = ws.contact_normal[c]
        _apply_impulse(model, ws, c, a, b, imp[0] * n[0] + imp[1], imp[0] * n[1] + imp[2],
                       imp[0] * n[2] + imp[3], lin, ang)
        _apply_angular_impulse(model, ws, a, b, imp[4] + imp[7] * n[0], imp[5] + imp[7] * n[1],
                               imp[6] + imp[7] * n[2], ang)


@njit(**JIT)
def solve_velocities(model, state, ws, n_contacts, iterations):
    lin = state.linear_velocity
    ang = state.angular_velocity
    for _ in range(iterations):
        for c in range(n_contacts):
            a = ws.contact_a[c]
            b = ws.contact_b[c]
            n = ws.contact_normal[c]
            imp = ws.contact_impulse[c]
            mass = ws.contact_mass[c]
            # normal
            vx, vy, vz = _relative_velocity(model, state, ws, c, a, b, lin, ang)
            vn = vx * n[0] + vy * n[1] + vz * n[2]
            old = imp[0]
            imp[0] = max(old - mass[0] * (vn - ws.contact_target[c]), 0.0)
            dn = imp[0] - old
            if dn != 0.0:
                _apply_impulse(model, ws, c, a, b, dn * n[0], dn * n[1], dn * n[2], lin, ang)
            normal_impulse = imp[0]
            # sliding friction on the disc of radius mu * lambda_n
            t = ws.contact_tangent[c]
            vx, vy, vz = _relative_velocity(model, state, ws, c, a, b, lin, ang)
            f1 = (imp[1] * t[0] + imp[2] * t[1] + imp[3] * t[2]) - mass[1] * (vx * t[0] + vy * t[1] + vz * t[2])
            f2 = (imp[1] * t[3] + imp[2] * t[4] + imp[3] * t[5]) - mass[2] * (vx * t[3] + vy * t[4] + vz * t[5])
            limit = ws.contact_coeff[c, 0] * normal_impulse
            length = np.sqrt(f1 * f1 + f2 * f2)
            if length > limit:
                scale = limit / length
                f1 *= scale
                f2 *= scale
            fx = f1 * t[0] + f2 * t[3]
            fy = f1 * t[1] + f2 * t[4]
            fz = f1 * t[2] + f2 * t[5]
            _apply_impulse(model, ws, c, a, b, fx - imp[1], fy - imp[2], fz - imp[3], lin, ang)
            imp[1] = fx
            imp[2] = fy
            imp[3] = fz
            # rolling resistance on the disc of radius mu_r * lambda_n
            rolling = ws.contact_coeff[c, 1]
            spinning = ws.contact_coeff[c, 2]
            if rolling > 0.0 or spinning > 0.0:
                wx = ang[b, 0]
                wy = ang[b, 1]
                wz = ang[b, 2]
                if a >= 0:
                    wx -= ang[a, 0]
                    wy -= ang[a, 1]
                    wz -= ang[a, 2]
                if rolling > 0.0:
                    r1 = (imp[4] * t[0] + imp[5] * t[1] + imp[6] * t[2]) - mass[3] * (wx * t[0] + wy * t[1] + wz * t[2])
                    r2 = (imp[4] * t[3] + imp[5] * t[4] + imp[6] * t[5]) - mass[4] * (wx * t[3] + wy * t[4] + wz * t[5])
                    limit = rolling * normal_impulse
                    length = np.sqrt(r1 * r1 + r2 * r2)
                    if length > limit:
                        scale = limit / length
                        r1 *= scale
                        r2 *= scale
                    rx = r1 * t[0] + r2 * t[3]
                    ry = r1 * t[1] + r2 * t[4]
                    rz = r1 * t[2] + r2 * t[5]
                    _apply_angular_impulse(model, ws, a, b, rx - imp[4], ry - imp[5], rz - imp[6], ang)
                    imp[4] = rx
                    imp[5] = ry
                    imp[6] = rz
                if spinning > 0.0:
                    wx = ang[b, 0]
                    wy = ang[b, 1]
                    wz = ang[b, 2]
                    if a >= 0:
                        wx -= ang[a, 0]
                        wy -= ang[a, 1]
                        wz -= ang[a, 2]
                    old = imp[7]
                    limit = spinning * normal_impulse
                    imp[7] = min(max(old - mass[5] * (wx * n[0] + wy * n[1] + wz * n[2]), -limit), limit)
                    ds = imp[7] - old
                    _apply_angular_impulse(model, ws, a, b, ds * n[0], ds * n[1], ds * n[2], ang)


@njit(**JIT)
def solve_penetration(model, state, ws, n_contacts, iterations, h, baumgarte, slop):
    """Split impulses: push overlapping bodies apart through pseudo-velocities only."""
    lin = ws.pseudo_linear
    ang = ws.pseudo_angular
    lin[:] = 0.0
    ang[:] = 0.0
    for _ in range(iterations):
        for c in range(n_contacts):
            depth = ws.contact_depth[c]
            if depth <= slop:
                continue
            a = ws.contact_a[c]
            b = ws.contact_b[c]
            n = ws.contact_normal[c]
            vx, vy, vz = _relative_velocity(model, state, ws, c, a, b, lin, ang)
            vn = vx * n[0] + vy * n[1] + vz * n[2]
            target = baumgarte * (depth - slop) / h
            old = ws.contact_pseudo[c]
            new = max(old - ws.contact_mass[c, 0] * (vn - target), 0.0)
            ws.contact_pseudo[c] = new
            dp = new - old
            if dp != 0.0:
                _apply_impulse(model, ws, c, a, b, dp * n[0], dp * n[1], dp * n[2], lin, ang)


@njit(**JIT)
def store_impulses(state, ws, n_contacts):
    """Contacts of this substep become the warm-start cache of the next (already sorted by key)."""
    for c in range(n_contacts):
        state.cache_key[c] = ws.contact_key[c]
        for k in range(3):
            state.cache_normal[c, k] = ws.contact_normal[c, k]
        for k in range(8):
            state.cache_impulse[c, k] = ws.contact_impulse[c, k]
    state.cache_count[0] = n_contacts
