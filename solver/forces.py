"""Phase 1, forces: gravity, damping and kinematic tracks into the velocities; body frames and bounding boxes."""
import numpy as np
from numba import njit, prange

from .collision.narrowphase import shape_matrix
from .math3d import JIT, JIT_PARALLEL, PARALLEL_CHUNKS, norm3, quat_mul, quat_to_matrix, world_inverse_inertia, ZERO
from .model import DYNAMIC, KINEMATIC


@njit(**JIT_PARALLEL)
def update_body_frames(model, state, ws, margin, h, serial):
    """Rotation, shape matrix, world inverse inertia, reach and AABB of every body (parallel chunks).

    The reach is the margin plus how far the body's surface can move in h
    (linear speed plus angular speed times its largest semi-axis). With
    ``serial``, all in the calling thread.
    """
    n = model.n_bodies
    if serial:
        _body_frames_range(model, state, ws, margin, h, ZERO, n)
        return
    chunks = min(n, PARALLEL_CHUNKS)
    for k in prange(chunks):
        _body_frames_range(model, state, ws, margin, h, k * n // chunks, (k + 1) * n // chunks)


@njit(**JIT)
def _body_frames_range(model, state, ws, margin, h, start, end):
    for i in range(start, end):
        quat_to_matrix(state.orientation[i], ws.rotation[i])
        shape_matrix(ws.rotation[i], model.semi_axes[i], ws.shape[i])
        world_inverse_inertia(ws.rotation[i], model.inv_inertia_local[i], ws.inv_inertia_world[i])
        v = state.linear_velocity[i]
        w = state.angular_velocity[i]
        speed = norm3(v[0], v[1], v[2]) + norm3(w[0], w[1], w[2]) * model.bounding_radius[i]
        reach = margin + speed * h
        # a body going non-finite is reported by the integrate phase; its box must not swallow the others
        ws.reach[i] = reach if np.isfinite(reach) else margin
        for k in range(3):
            ws.half_extent[i, k] = np.sqrt(ws.shape[i, k, k]) + ws.reach[i]


@njit(**JIT)
def _track_pose(model, body, t, out):
    """Pose (x, y, z, qw, qx, qy, qz) of a kinematic track at time t: linear and slerp, held at the ends."""
    start = model.track_offsets[body]
    stop = model.track_offsets[body + 1]
    times = model.track_times
    poses = model.track_poses
    if t <= times[start]:
        out[:] = poses[start]
        return
    if t >= times[stop - 1]:
        out[:] = poses[stop - 1]
        return
    lo = start
    hi = stop - 1
    while hi - lo > 1:
        mid = (lo + hi) >> 1
        if times[mid] <= t:
            lo = mid
        else:
            hi = mid
    s = (t - times[lo]) / (times[hi] - times[lo])
    for k in range(3):
        out[k] = (1.0 - s) * poses[lo, k] + s * poses[hi, k]
    q0 = poses[lo, 3:]
    q1 = poses[hi, 3:]
    dot = q0[0] * q1[0] + q0[1] * q1[1] + q0[2] * q1[2] + q0[3] * q1[3]
    sign = 1.0
    if dot < 0.0:
        sign = -1.0
        dot = -dot
    if dot > 0.9995:
        w0 = 1.0 - s
        w1 = s * sign
    else:
        angle = np.arccos(min(dot, 1.0))
        w0 = np.sin((1.0 - s) * angle) / np.sin(angle)
        w1 = sign * np.sin(s * angle) / np.sin(angle)
    norm = 0.0
    for k in range(4):
        out[3 + k] = w0 * q0[k] + w1 * q1[k]
        norm += out[3 + k] ** 2
    norm = np.sqrt(norm)
    for k in range(4):
        out[3 + k] /= norm


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
            _track_pose(model, i, t, now)
            _track_pose(model, i, t + h, nxt)
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
