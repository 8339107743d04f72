"""Pinned particles that follow their group's pin track (Scene.set_pin_track), rigidly, as kinematic bodies follow
theirs.

A tracked pin keeps its place in the track's frame (ParticleModel.tracked_pin_local): at time t it is at
x(t) + R(q(t)) local, the pose (x, q) interpolated by tracks.track_pose. At the start of a substep from t to t + h,
drive_pins puts each tracked pin there and gives it the velocity of that step along its track, (p(t + h) - p(t)) / h,
which the springs' damping and the implicit integrator see and with which the explicit integrators move it
(system.derivative); after the integrator, place_pins puts it exactly at p(t + h), so pins follow their tracks to
rounding whatever the integrator.
"""
import numpy as np
from numba import njit

from ..math3d import JIT, mat_vec, quat_to_matrix
from ..tracks import track_pose


@njit(**JIT)
def _pose_of_group(model, group, t, pose, rotation):
    """pose = the group's track at t and rotation its matrix."""
    track_pose(model.pin_track_offsets, model.pin_track_times, model.pin_track_poses, group, t, pose)
    quat_to_matrix(pose[3:], rotation)


@njit(**JIT)
def _tracked_point(pose, rotation, local, k):
    """Where the tracked pin k is at pose (its rotation matrix given)."""
    rx, ry, rz = mat_vec(rotation, local[k, 0], local[k, 1], local[k, 2])
    return pose[0] + rx, pose[1] + ry, pose[2] + rz


@njit(**JIT)
def _put_pins(model, state, t, h, with_velocity):
    """Every tracked pin where its track is at t; ``with_velocity``: moving at its track's velocity over [t, t + h]
    (else its velocity stays)."""
    pins, local = model.tracked_pin, model.tracked_pin_local
    n = model.n_particles
    y = state.y
    now, later = np.empty(7), np.empty(7)
    turn_now, turn_later = np.empty((3, 3)), np.empty((3, 3))
    group = -1
    for k in range(pins.shape[0]):
        i = pins[k]
        if model.particle_group[i] != group:
            group = model.particle_group[i]
            _pose_of_group(model, group, t, now, turn_now)
            if with_velocity:
                _pose_of_group(model, group, t + h, later, turn_later)
        ax, ay, az = _tracked_point(now, turn_now, local, k)
        y[3 * i], y[3 * i + 1], y[3 * i + 2] = ax, ay, az
        if with_velocity:
            bx, by, bz = _tracked_point(later, turn_later, local, k)
            j = 3 * n + 3 * i
            y[j], y[j + 1], y[j + 2] = (bx - ax) / h, (by - ay) / h, (bz - az) / h


@njit(**JIT)
def drive_pins(model, state, t, h):
    """Put every tracked pin where its track is at t, moving at its track's velocity over the step to t + h."""
    _put_pins(model, state, t, h, True)


@njit(**JIT)
def place_pins(model, state, t):
    """Put every tracked pin where its track is at t (its velocity stays)."""
    _put_pins(model, state, t, 1.0, False)
