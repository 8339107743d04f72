"""Field forces: drag, wind, vortex, turbulence and attractor (formulas in forces.py), on particles here and,
through field_force, on rope nodes and bodies (targets.py).

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
            for i in range(group_start[g], group_start[g + 1]):
                fx, fy, fz = field_force(kind, field_param, f, y[3 * i], y[3 * i + 1], y[3 * i + 2], t)
                force[3 * i] += fx
                force[3 * i + 1] += fy
                force[3 * i + 2] += fz


@njit(**JIT, inline="always")
def field_force(kind, param, f, x, y, z, t):
    """The force (N) of field f (a row of param, of the given kind) on a point at (x, y, z) at time t.

    Particles, rope nodes and bodies' centres of mass all feel a field through this one formula.
    """
    if kind == WIND:
        return _wind(param, f, x, y, z, t)
    if kind == VORTEX:
        return _vortex(param, f, x, y, z)
    if kind == TURBULENCE:
        return _turbulence(param, f, x, y, z, t)
    return _attractor(param, f, x, y, z)


@njit(**JIT, inline="always")
def _wind(param, f, x, y, z, t):
    dx, dy, dz = param[f, 0], param[f, 1], param[f, 2]
    strength, turbulence, size = param[f, 3], param[f, 4], param[f, 5]
    if turbulence == 0.0:
        return strength * dx, strength * dy, strength * dz
    seed = np.int64(param[f, 6])
    drift = param[f, 7] * t
    gust = strength * turbulence
    cx, cy, cz = curl_noise((x - drift * dx) / size, (y - drift * dy) / size, (z - drift * dz) / size, seed)
    return strength * dx + gust * cx, strength * dy + gust * cy, strength * dz + gust * cz


@njit(**JIT, inline="always")
def _vortex(param, f, x, y, z):
    px, py, pz = param[f, 0], param[f, 1], param[f, 2]
    ax, ay, az = param[f, 3], param[f, 4], param[f, 5]
    strength, falloff, min_distance = param[f, 6], param[f, 7], param[f, 8]
    rx, ry, rz = x - px, y - py, z - pz
    along = rx * ax + ry * ay + rz * az
    rx, ry, rz = rx - along * ax, ry - along * ay, rz - along * az
    distance = np.sqrt(rx * rx + ry * ry + rz * rz)
    if distance < 1e-12:
        return 0.0, 0.0, 0.0  # on the axis the direction of the swirl is undefined
    scale = strength / distance
    if falloff != 0.0:
        scale *= max(distance, min_distance) ** -falloff
    return scale * (ay * rz - az * ry), scale * (az * rx - ax * rz), scale * (ax * ry - ay * rx)


@njit(**JIT, inline="always")
def _turbulence(param, f, x, y, z, t):
    fx, fy, fz = param[f, 0] * t, param[f, 1] * t, param[f, 2] * t
    strength, size = param[f, 3], param[f, 4]
    seed = np.int64(param[f, 5])
    cx, cy, cz = curl_noise((x - fx) / size, (y - fy) / size, (z - fz) / size, seed)
    return strength * cx, strength * cy, strength * cz


@njit(**JIT, inline="always")
def _attractor(param, f, x, y, z):
    px, py, pz = param[f, 0], param[f, 1], param[f, 2]
    strength, falloff, min_distance = param[f, 3], param[f, 4], param[f, 5]
    rx, ry, rz = px - x, py - y, pz - z
    distance = np.sqrt(rx * rx + ry * ry + rz * rz)
    if distance < 1e-12:
        return 0.0, 0.0, 0.0  # at the point itself the pull has no direction
    scale = strength / distance
    if falloff != 0.0:
        scale *= max(distance, min_distance) ** -falloff
    return scale * rx, scale * ry, scale * rz
