"""Velocity sweeps: sequential impulses on the normal, friction, rolling and spinning rows (projected Gauss-Seidel)."""
import numpy as np
from numba import njit, prange

from ..math3d import JIT, JIT_PARALLEL
from .rows import (AN, AT1, AT2, BN, BT1, BT2, FRICTION, IA1, IA2, IAN, IAS, IAT1, IAT2, IB1, IB2, IBN, IBS, IBT1,
                   IBT2, INV_MASS_A, INV_MASS_B, MASS_N, MASS_R1, MASS_R2, MASS_S, MASS_T1, MASS_T2, N_, ROLLING,
                   SPINNING, T1, T2, TARGET, body_velocity, dot3, normal_velocity, row3, sweeps_settled)


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
                     contact_twist_impulse, linear_velocity, angular_velocity, max_sweeps, tolerance, sweep_change,
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
    for sweep in range(max_sweeps):
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
        if sweeps_settled(sweep_change, slabs, sweep, tolerance):
            return sweep + 1
    return max_sweeps


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
        vbx, vby, vbz, wbx, wby, wbz = body_velocity(lin, ang, b)
        if has_a:
            vax, vay, vaz, wax, way, waz = body_velocity(lin, ang, a)
        else:
            vax = vay = vaz = wax = way = waz = 0.0
        if (impulse[c, 0] == 0.0 and impulse[c, 1] == 0.0 and impulse[c, 2] == 0.0
                and (rows[c, ROLLING] == 0.0 or (twist[c, 0] == 0.0 and twist[c, 1] == 0.0))
                and (rows[c, SPINNING] == 0.0 or twist[c, 2] == 0.0)):
            # an idle contact (a quarter to a half of a pile's, mostly speculative ones still apart): with
            # no normal impulse every friction bound is zero, so if the normal row does not push either,
            # the full update below would change nothing. Skipping it is exact.
            vn = normal_velocity(rows, c, vbx - vax, vby - vay, vbz - vaz, wbx, wby, wbz, wax, way, waz)
            if vn >= rows[c, TARGET]:
                continue
        ma = response[c, INV_MASS_A]
        mb = response[c, INV_MASS_B]
        nx, ny, nz = row3(rows, c, N_)
        t1x, t1y, t1z = row3(rows, c, T1)
        t2x, t2y, t2z = row3(rows, c, T2)
        dvx, dvy, dvz = vbx - vax, vby - vay, vbz - vaz

        # sliding friction, projected on the disc of radius mu * lambda_n
        v1 = (t1x * dvx + t1y * dvy + t1z * dvz + dot3(rows, c, BT1, wbx, wby, wbz)
              - dot3(rows, c, AT1, wax, way, waz))
        v2 = (t2x * dvx + t2y * dvy + t2z * dvz + dot3(rows, c, BT2, wbx, wby, wbz)
              - dot3(rows, c, AT2, wax, way, waz))
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
        ibx1, iby1, ibz1 = row3(response, c, IBT1)
        ibx2, iby2, ibz2 = row3(response, c, IBT2)
        wbx += d1 * ibx1 + d2 * ibx2
        wby += d1 * iby1 + d2 * iby2
        wbz += d1 * ibz1 + d2 * ibz2
        iax1, iay1, iaz1 = row3(response, c, IAT1)
        iax2, iay2, iaz2 = row3(response, c, IAT2)
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
        vn = (nx * (vbx - vax) + ny * (vby - vay) + nz * (vbz - vaz) + dot3(rows, c, BN, wbx, wby, wbz)
              - dot3(rows, c, AN, wax, way, waz))
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
