"""Kinematic tracks: poses (x, y, z, w, qx, qy, qz) at increasing times, as Scene.set_kinematic_track and
Scene.set_pin_track give them, interpolated in compiled code. Kinematic bodies (forces.py) and the pinned particles
of a group (particles/pins.py) read their tracks through this one function.

Tracks of several items share flat arrays: item k's keys are rows offsets[k] to offsets[k + 1] - 1 of times and
poses (an empty range: no track).
"""
import numpy as np
from numba import njit

from .math3d import JIT


@njit(**JIT)
def track_pose(offsets, times, poses, item, t, out):
    """out = the pose of item's track at time t: positions linearly, rotations by slerp (normalised linear
    interpolation for turns under about 3.6 degrees between keys), held at the first and last key."""
    start = offsets[item]
    stop = offsets[item + 1]
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
