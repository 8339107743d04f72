"""Restitution: bounces from the approach velocity, and the rest of a bounce that began from a gap."""
import numpy as np
from numba import njit, prange

from ..integrate import inverse_inertia_times, kinetic_energy
from ..math3d import JIT, JIT_PARALLEL, cross, mat_vec, quat_to_matrix
from .rows import IAN, IBN, MASS_N, N_, body_velocity, normal_velocity, row3, row_apply


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
        vbx, vby, vbz, wbx, wby, wbz = body_velocity(linear_velocity, angular_velocity, b)
        vax = vay = vaz = wax = way = waz = 0.0
        if a >= 0:
            vax, vay, vaz, wax, way, waz = body_velocity(linear_velocity, angular_velocity, a)
        vn = normal_velocity(contact_row, c, vbx - vax, vby - vay, vbz - vaz, wbx, wby, wbz, wax, way, waz)
        old = contact_impulse[c, 0]
        contact_impulse[c, 0] = max(old - contact_row[c, MASS_N] * (vn - slot_bounce[c]), 0.0)
        row_apply(contact_row, contact_response, c, linear_velocity, angular_velocity, a, b, N_, IAN, IBN,
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
        nx, ny, nz = row3(contact_row, c, N_)
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
    vx, vy, vz, wx, wy, wz = body_velocity(linear_velocity, angular_velocity, body)
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
    vx, vy, vz, wx, wy, wz = body_velocity(linear_velocity, angular_velocity, body)
    body_energy[body] = kinetic_energy(mass, inertia_local, rotation, body, vx, vy, vz, wx, wy, wz)
