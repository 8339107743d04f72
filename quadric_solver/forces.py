"""Phase 1, forces: gravity, damping and kinematic tracks into the velocities; body frames and bounding boxes."""
import numpy as np
from numba import njit, prange

from .collision.narrowphase import shape_matrix
from .math3d import JIT, JIT_PARALLEL, PARALLEL_CHUNKS, norm3, quat_mul, quat_to_matrix, world_inverse_inertia, ZERO
from .model import DYNAMIC, KINEMATIC
from .tracks import track_pose


@njit(**JIT)
def update_body_frames(model, state, ws, margin, h, serial):
    """Rotation, shape matrix, world inverse inertia, reach and AABB of every body (parallel chunks).

    The reach is the margin plus how far the body's surface can move in h
    (linear speed plus angular speed times its largest semi-axis). With
    ``serial``, all in the calling thread. The parallel loop takes arrays, not the tuples: a prange loop
    over a tuple of many arrays compiles several times slower (docs/numba.md).
    """
    _body_frames_chunks(model.semi_axes, model.inv_inertia_local, model.bounding_radius, state.orientation,
                        state.linear_velocity, state.angular_velocity, ws.rotation, ws.shape, ws.inv_inertia_world,
                        ws.reach, ws.turn, ws.half_extent, margin, h, serial)


@njit(**JIT_PARALLEL)
def _body_frames_chunks(semi_axes, inv_inertia_local, bounding_radius, orientation, linear_velocity,
                        angular_velocity, rotation, shape, inv_inertia_world, reach, turn, half_extent, margin, h,
                        serial):
    """update_body_frames in parallel chunks of bodies."""
    n = semi_axes.shape[0]
    if serial:
        _body_frames_range(semi_axes, inv_inertia_local, bounding_radius, orientation, linear_velocity,
                           angular_velocity, rotation, shape, inv_inertia_world, reach, turn, half_extent, margin, h,
                           ZERO, n)
        return
    chunks = min(n, PARALLEL_CHUNKS)
    for k in prange(chunks):
        _body_frames_range(semi_axes, inv_inertia_local, bounding_radius, orientation, linear_velocity,
                           angular_velocity, rotation, shape, inv_inertia_world, reach, turn, half_extent, margin, h,
                           k * n // chunks, (k + 1) * n // chunks)


@njit(**JIT)
def _body_frames_range(semi_axes, inv_inertia_local, bounding_radius, orientation, linear_velocity, angular_velocity,
                       rotation, shape, inv_inertia_world, reach, turn, half_extent, margin, h, start, end):
    for i in range(start, end):
        quat_to_matrix(orientation[i], rotation[i])
        shape_matrix(rotation[i], semi_axes[i], shape[i])
        world_inverse_inertia(rotation[i], inv_inertia_local[i], inv_inertia_world[i])
        v = linear_velocity[i]
        w = angular_velocity[i]
        spin = norm3(w[0], w[1], w[2])
        speed = norm3(v[0], v[1], v[2]) + spin * bounding_radius[i]
        body_reach = margin + speed * h
        # a body going non-finite is reported by the integrate phase; its box must not swallow the others
        reach[i] = body_reach if np.isfinite(body_reach) else margin
        turn[i] = spin * h if np.isfinite(spin) else 0.0
        for k in range(3):
            half_extent[i, k] = np.sqrt(shape[i, k, k]) + reach[i]


@njit(**JIT)
def predict_velocities(model, state, h, linear_damping, angular_damping, start_linear, start_angular):
    """Gravity and damping for dynamic bodies; pose and velocity from the track for kinematic ones.

    The velocities before the prediction go to start_linear/start_angular, so
    restore_velocities can undo it (the kinematic poses it sets are the same
    when the substep is redone).
    """
    g = model.gravity
    t = state.time[0]
    now = np.empty(7)
    nxt = np.empty(7)
    linear_factor = 1.0 / (1.0 + h * linear_damping)
    angular_factor = 1.0 / (1.0 + h * angular_damping)
    for i in range(model.n_bodies):
        for k in range(3):
            start_linear[i, k] = state.linear_velocity[i, k]
            start_angular[i, k] = state.angular_velocity[i, k]
        kind = model.body_kind[i]
        if kind == DYNAMIC:
            for k in range(3):
                state.linear_velocity[i, k] = state.linear_velocity[i, k] * linear_factor + h * g[k]
                state.angular_velocity[i, k] *= angular_factor
        elif kind == KINEMATIC and model.track_offsets[i + 1] > model.track_offsets[i]:
            track_pose(model.track_offsets, model.track_times, model.track_poses, i, t, now)
            track_pose(model.track_offsets, model.track_times, model.track_poses, i, t + h, nxt)
            for k in range(3):
                state.position[i, k] = now[k]
                state.linear_velocity[i, k] = (nxt[k] - now[k]) / h
            for k in range(4):
                state.orientation[i, k] = now[3 + k]
            # angular velocity: rotation vector of q_next * conj(q_now), over h
            dw, dx, dy, dz = quat_mul(nxt[3], nxt[4], nxt[5], nxt[6], now[3], -now[4], -now[5], -now[6])
            if dw < 0.0:
                dw, dx, dy, dz = -dw, -dx, -dy, -dz
            vector_norm = np.sqrt(dx * dx + dy * dy + dz * dz)
            angle = 2.0 * np.arctan2(vector_norm, dw)
            scale = angle / (vector_norm * h) if vector_norm > 1e-15 else 2.0 / h
            state.angular_velocity[i, 0] = dx * scale
            state.angular_velocity[i, 1] = dy * scale
            state.angular_velocity[i, 2] = dz * scale


@njit(**JIT)
def restore_velocities(state, start_linear, start_angular):
    """Undo predict_velocities: the velocities it started from."""
    state.linear_velocity[:] = start_linear
    state.angular_velocity[:] = start_angular
