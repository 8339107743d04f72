"""Phase 6, integrate: poses from the velocities, each body's travel bound, kinetic energy, the non-finite check.

Rotation conserves angular momentum exactly in free flight: with L = I_w(q) w
fixed, the body turns by the exponential map with the angular velocity
I_w(q_half)^-1 L evaluated at the half-step orientation (a second-order Lie
midpoint step), and w is recomputed from L at the new orientation. This is
where the gyroscopic term w x (I w) lives: torque-free precession and tumbling
come out of the changing world inertia instead of an explicit torque.
"""
import numpy as np
from numba import njit, prange

from .math3d import JIT, JIT_PARALLEL, PARALLEL_CHUNKS, mat_vec, norm3, quat_to_matrix, rotated_by_rotation_vector, ZERO
from .model import DYNAMIC, KINEMATIC


@njit(**JIT)
def integrate_positions(model, state, ws, h, serial):
    """Move bodies by real plus split-impulse velocities; rotate conserving angular momentum.

    Bodies are independent: parallel chunks, each with its own scratch matrices
    (with ``serial``, one chunk in the calling thread). The parallel loop takes arrays, not the tuples: a
    prange loop over a tuple of many arrays compiles several times slower (docs/numba.md).
    """
    _integrate_chunks(model.body_kind, model.inertia_local, model.inv_inertia_local, model.bounding_radius,
                      model.mass, state.position, state.orientation, state.linear_velocity, state.angular_velocity,
                      ws.pseudo_linear, ws.pseudo_angular, ws.start_position, ws.start_orientation, ws.body_travel,
                      ws.rotation, ws.body_energy, h, serial)


@njit(**JIT_PARALLEL)
def _integrate_chunks(body_kind, inertia, inv_inertia, radius, mass, position, orientation, linear, angular,
                      pseudo_linear, pseudo_angular, start_position, start_orientation, travel, frames, energy, h,
                      serial):
    """integrate_positions in parallel chunks of bodies."""
    n = body_kind.shape[0]
    if serial:
        _integrate_range(body_kind, inertia, inv_inertia, radius, mass, position, orientation, linear, angular,
                         pseudo_linear, pseudo_angular, start_position, start_orientation, travel, frames, energy, h,
                         ZERO, n)
        return
    chunks = min(n, PARALLEL_CHUNKS)
    for k in prange(chunks):
        _integrate_range(body_kind, inertia, inv_inertia, radius, mass, position, orientation, linear, angular,
                         pseudo_linear, pseudo_angular, start_position, start_orientation, travel, frames, energy, h,
                         k * n // chunks, (k + 1) * n // chunks)


@njit(**JIT, inline="always")
def inverse_inertia_times(rotation, inv_inertia_local, i, x, y, z):
    """R diag(inv_inertia_local[i]) R^T (x, y, z), without forming the matrix (half the arithmetic)."""
    bx = (rotation[0, 0] * x + rotation[1, 0] * y + rotation[2, 0] * z) * inv_inertia_local[i, 0]
    by = (rotation[0, 1] * x + rotation[1, 1] * y + rotation[2, 1] * z) * inv_inertia_local[i, 1]
    bz = (rotation[0, 2] * x + rotation[1, 2] * y + rotation[2, 2] * z) * inv_inertia_local[i, 2]
    return mat_vec(rotation, bx, by, bz)


@njit(**JIT)
def _integrate_range(body_kind, inertia, inv_inertia, radius, mass, position, orientation, linear, angular,
                     pseudo_linear, pseudo_angular, start_position, start_orientation, travel, frames, energy, h,
                     start, end):
    """Bodies start..end, rows read by index: views and helpers that take arrays and branch leave numba's
    (atomic, contended) reference counting in the loop."""
    rotation = np.empty((3, 3))
    q = np.empty(4)
    for i in range(start, end):
        kind = body_kind[i]
        for k in range(3):
            start_position[i, k] = position[i, k]
        qw, qx, qy, qz = orientation[i, 0], orientation[i, 1], orientation[i, 2], orientation[i, 3]
        start_orientation[i, 0], start_orientation[i, 1], start_orientation[i, 2], start_orientation[i, 3] = (
            qw, qx, qy, qz)
        travel[i] = 0.0
        if kind != DYNAMIC and kind != KINEMATIC:
            continue
        vx = linear[i, 0] + pseudo_linear[i, 0]
        vy = linear[i, 1] + pseudo_linear[i, 1]
        vz = linear[i, 2] + pseudo_linear[i, 2]
        position[i, 0] += h * vx
        position[i, 1] += h * vy
        position[i, 2] += h * vz
        moved = h * norm3(vx, vy, vz)
        wx = angular[i, 0]
        wy = angular[i, 1]
        wz = angular[i, 2]
        px = pseudo_angular[i, 0]
        py = pseudo_angular[i, 1]
        pz = pseudo_angular[i, 2]
        if kind == KINEMATIC:
            orientation[i, 0], orientation[i, 1], orientation[i, 2], orientation[i, 3] = rotated_by_rotation_vector(
                qw, qx, qy, qz, h * wx, h * wy, h * wz)
            travel[i] = moved + h * norm3(wx, wy, wz) * radius[i]
            continue
        # angular momentum L = R I R' w, from the rotation at the start of the substep
        bx = (frames[i, 0, 0] * wx + frames[i, 1, 0] * wy + frames[i, 2, 0] * wz) * inertia[i, 0]
        by = (frames[i, 0, 1] * wx + frames[i, 1, 1] * wy + frames[i, 2, 1] * wz) * inertia[i, 1]
        bz = (frames[i, 0, 2] * wx + frames[i, 1, 2] * wy + frames[i, 2, 2] * wz) * inertia[i, 2]
        lx = frames[i, 0, 0] * bx + frames[i, 0, 1] * by + frames[i, 0, 2] * bz
        ly = frames[i, 1, 0] * bx + frames[i, 1, 1] * by + frames[i, 1, 2] * bz
        lz = frames[i, 2, 0] * bx + frames[i, 2, 1] * by + frames[i, 2, 2] * bz
        # half step, then the full step with the midpoint angular velocity
        q[0], q[1], q[2], q[3] = rotated_by_rotation_vector(qw, qx, qy, qz, 0.5 * h * (wx + px), 0.5 * h * (wy + py),
                                                            0.5 * h * (wz + pz))
        quat_to_matrix(q, rotation)
        mx, my, mz = inverse_inertia_times(rotation, inv_inertia, i, lx, ly, lz)
        q[0], q[1], q[2], q[3] = rotated_by_rotation_vector(qw, qx, qy, qz, h * (mx + px), h * (my + py),
                                                            h * (mz + pz))
        for k in range(4):
            orientation[i, k] = q[k]
        # a surface point moves at most |dp| plus the turned angle times the largest semi-axis (arc >= chord)
        travel[i] = moved + h * norm3(mx + px, my + py, mz + pz) * radius[i]
        quat_to_matrix(q, rotation)
        wx, wy, wz = inverse_inertia_times(rotation, inv_inertia, i, lx, ly, lz)
        # kinetic energy for the statistics, free here: rotational part is w.L / 2
        ux, uy, uz = linear[i, 0], linear[i, 1], linear[i, 2]
        energy[i] = 0.5 * (mass[i] * (ux * ux + uy * uy + uz * uz) + wx * lx + wy * ly + wz * lz)
        angular[i, 0] = wx
        angular[i, 1] = wy
        angular[i, 2] = wz


@njit(**JIT)
def body_kinetic_energies(model, state, out):
    """out[i] = translational plus rotational energy of dynamic body i, 0 for the others.

    The integrate phase writes the same values as it goes; this is for a state
    that has not been integrated yet (a new Simulation).
    """
    rotation = np.empty((3, 3))
    for i in range(model.n_bodies):
        out[i] = 0.0
        if model.body_kind[i] != DYNAMIC:
            continue
        v = state.linear_velocity[i]
        w = state.angular_velocity[i]
        quat_to_matrix(state.orientation[i], rotation)
        out[i] = kinetic_energy(model.mass, model.inertia_local, rotation, i, v[0], v[1], v[2], w[0], w[1], w[2])


@njit(**JIT, inline="always")
def kinetic_energy(mass, inertia_local, rotation, i, vx, vy, vz, wx, wy, wz):
    """Translational plus rotational kinetic energy of body i turned by ``rotation``, moving at v and w."""
    energy = mass[i] * (vx * vx + vy * vy + vz * vz)
    for k in range(3):
        local = rotation[0, k] * wx + rotation[1, k] * wy + rotation[2, k] * wz
        energy += inertia_local[i, k] * local * local
    return 0.5 * energy


@njit(**JIT)
def first_non_finite_body(state):
    """Index of the first body whose pose or velocity is NaN or infinite, or -1."""
    for i in range(state.position.shape[0]):
        for k in range(3):
            if not (np.isfinite(state.position[i, k]) and np.isfinite(state.linear_velocity[i, k])
                    and np.isfinite(state.angular_velocity[i, k])):
                return i
        for k in range(4):
            if not np.isfinite(state.orientation[i, k]):
                return i
    return -1
