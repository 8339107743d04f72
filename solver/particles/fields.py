"""Field forces on particles: drag, wind, vortex, turbulence and attractor (formulas in forces.py).

A field is a row of field_kind / field_param (FIELD_WIDTH numbers, laid out per kind below) and the groups it
acts on (field_group[f, g]). Drag is summed per particle when the model is built (particle_drag), because the
implicit integrator needs it as a Jacobian as well. State vectors are flat: y = [x (3n); v (3n)].
"""
import numpy as np
from numba import njit

from ..math3d import JIT
from .noise import curl_noise

WIND, VORTEX, TURBULENCE, ATTRACTOR = range(4)
FIELD_WIDTH = 9
# field_param columns per kind:
#   WIND        direction (3), strength, turbulence, size, seed, gust_speed
#   VORTEX      point (3), axis (3), strength, falloff, min_distance
#   TURBULENCE  flow (3), strength, size, seed
#   ATTRACTOR   point (3), strength, falloff, min_distance


@njit(**JIT)
def add_drag_forces(particle_drag, y, n, force):
    """force_i -= c_i v_i, c_i the summed drag coefficients of particle i (N s/m)."""
    for i in range(n):
        c = particle_drag[i]
        if c != 0.0:
            for k in range(3):
                force[3 * i + k] -= c * y[3 * n + 3 * i + k]


@njit(**JIT)
def add_field_forces(field_kind, field_param, field_group, group_start, y, n, t, force):
    """force += the force of every field on every particle of the groups it acts on, at state y and time t."""
    for f in range(field_kind.shape[0]):
        kind = field_kind[f]
        for g in range(group_start.shape[0] - 1):
            if not field_group[f, g]:
                continue
            start, end = group_start[g], group_start[g + 1]
            if kind == WIND:
                _wind(field_param, f, y, start, end, t, force)
            elif kind == VORTEX:
                _vortex(field_param, f, y, start, end, force)
            elif kind == TURBULENCE:
                _turbulence(field_param, f, y, start, end, t, force)
            elif kind == ATTRACTOR:
                _attractor(field_param, f, y, start, end, force)


@njit(**JIT)
def _wind(param, f, y, start, end, t, force):
    dx, dy, dz = param[f, 0], param[f, 1], param[f, 2]
    strength, turbulence, size = param[f, 3], param[f, 4], param[f, 5]
    seed = np.int64(param[f, 6])
    drift = param[f, 7] * t
    if turbulence == 0.0:
        for i in range(start, end):
            force[3 * i] += strength * dx
            force[3 * i + 1] += strength * dy
            force[3 * i + 2] += strength * dz
        return
    gust = strength * turbulence
    for i in range(start, end):
        cx, cy, cz = curl_noise((y[3 * i] - drift * dx) / size, (y[3 * i + 1] - drift * dy) / size,
                                (y[3 * i + 2] - drift * dz) / size, seed)
        force[3 * i] += strength * dx + gust * cx
        force[3 * i + 1] += strength * dy + gust * cy
        force[3 * i + 2] += strength * dz + gust * cz


@njit(**JIT)
def _vortex(param, f, y, start, end, force):
    px, py, pz = param[f, 0], param[f, 1], param[f, 2]
    ax, ay, az = param[f, 3], param[f, 4], param[f, 5]
    strength, falloff, min_distance = param[f, 6], param[f, 7], param[f, 8]
    for i in range(start, end):
        rx, ry, rz = y[3 * i] - px, y[3 * i + 1] - py, y[3 * i + 2] - pz
        along = rx * ax + ry * ay + rz * az
        rx, ry, rz = rx - along * ax, ry - along * ay, rz - along * az
        distance = np.sqrt(rx * rx + ry * ry + rz * rz)
        if distance < 1e-12:
            continue  # on the axis the direction of the swirl is undefined
        scale = strength / distance
        if falloff != 0.0:
            scale *= max(distance, min_distance) ** -falloff
        force[3 * i] += scale * (ay * rz - az * ry)
        force[3 * i + 1] += scale * (az * rx - ax * rz)
        force[3 * i + 2] += scale * (ax * ry - ay * rx)


@njit(**JIT)
def _turbulence(param, f, y, start, end, t, force):
    fx, fy, fz = param[f, 0] * t, param[f, 1] * t, param[f, 2] * t
    strength, size = param[f, 3], param[f, 4]
    seed = np.int64(param[f, 5])
    for i in range(start, end):
        cx, cy, cz = curl_noise((y[3 * i] - fx) / size, (y[3 * i + 1] - fy) / size, (y[3 * i + 2] - fz) / size,
                                seed)
        force[3 * i] += strength * cx
        force[3 * i + 1] += strength * cy
        force[3 * i + 2] += strength * cz


@njit(**JIT)
def _attractor(param, f, y, start, end, force):
    px, py, pz = param[f, 0], param[f, 1], param[f, 2]
    strength, falloff, min_distance = param[f, 3], param[f, 4], param[f, 5]
    for i in range(start, end):
        rx, ry, rz = px - y[3 * i], py - y[3 * i + 1], pz - y[3 * i + 2]
        distance = np.sqrt(rx * rx + ry * ry + rz * rz)
        if distance < 1e-12:
            continue  # at the point itself the pull has no direction
        scale = strength / distance
        if falloff != 0.0:
            scale *= max(distance, min_distance) ** -falloff
        force[3 * i] += scale * rx
        force[3 * i + 1] += scale * ry
        force[3 * i + 2] += scale * rz
