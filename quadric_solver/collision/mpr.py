"""Penetration of two overlapping convex shapes by Minkowski Portal Refinement (Snethen, XenoCollide, Game
Programming Gems 7; as in libccd's ccdMPRPenetration).

C = A - B holds the origin when the shapes overlap. MPR starts from a point v0 deep inside C (the difference of
the shapes' centres) and looks along the ray from v0 through the origin: it finds a portal, a triangle of
three support points of C that the ray passes through, then replaces one corner at a time by C's support
point along the portal's normal until the portal lies on C's surface within the tolerance. The direction of
the origin's nearest point on that portal is the normal (from A to B), and C's support along it the depth.

Against EPA (epa.py), which finds the smallest depth over all directions, MPR answers along the centres'
line: its depth is never smaller than the true one, equal where the deepest point lies on that line (two
spheres, a box flat on a box), larger for shapes that overlap off it. It needs a handful of support calls
and no polytope bookkeeping, so it is fast, and its normal turns smoothly as the bodies move.
"""
import numpy as np
from numba import njit

from ..math3d import JIT
from .gjk import _triangle, pair_support

MAX_ITERATIONS = 64
NUDGE = 1e-9  # of the scale: v0 moved off the origin when the centres coincide


@njit(**JIT, inline="always")
def _row_dot(s, r, x, y, z):
    return s[r, 0] * x + s[r, 1] * y + s[r, 2] * z


@njit(**JIT, inline="always")
def _unit(x, y, z):
    length = np.sqrt(x * x + y * y + z * z)
    if length == 0.0:
        return 0.0, 0.0, 0.0, 0.0
    return x / length, y / length, z / length, length


@njit(**JIT, inline="always")
def _copy_row(s, to, frm):
    for c in range(9):
        s[to, c] = s[frm, c]


@njit(**JIT, inline="always")
def _normal(s, a, b, c):
    """Unit normal (s_b - s_a) x (s_c - s_a) of the triangle of rows a, b, c: with (0, 1, 2) the direction the
    next portal corner is sought in, with (1, 2, 3) the portal's normal, facing away from v0."""
    ux, uy, uz = s[b, 0] - s[a, 0], s[b, 1] - s[a, 1], s[b, 2] - s[a, 2]
    vx, vy, vz = s[c, 0] - s[a, 0], s[c, 1] - s[a, 1], s[c, 2] - s[a, 2]
    nx, ny, nz, _ = _unit(uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx)
    return nx, ny, nz


@njit(**JIT)
def mpr(kinds, params, hull_vertices, positions, rotations, tolerance, scale, s):
    """(found, depth, nx, ny, nz): the penetration found along the centres' line, with found False where the
    shapes do not overlap. The depth is h_C(n), C's support along the returned unit n (from A to B), so it is
    never below the true depth (as epa's). scale: the pair's size; s (5, 9) scratch for the portal's rows
    (w, a, b) as in gjk.py."""
    # v0: a point inside C, the difference of the centres
    for c in range(3):
        s[0, c] = positions[0, c] - positions[1, c]
        s[0, 3 + c] = positions[0, c]
        s[0, 6 + c] = positions[1, c]
    if s[0, 0] * s[0, 0] + s[0, 1] * s[0, 1] + s[0, 2] * s[0, 2] == 0.0:
        s[0, 0] = NUDGE * scale
    # v1: C's support towards the origin
    dx, dy, dz, _ = _unit(-s[0, 0], -s[0, 1], -s[0, 2])
    pair_support(kinds, params, hull_vertices, positions, rotations, dx, dy, dz, s, 1)
    if _row_dot(s, 1, dx, dy, dz) <= 0.0:
        return False, 0.0, dx, dy, dz
    # v2: off the line v0 v1
    cx = s[0, 1] * s[1, 2] - s[0, 2] * s[1, 1]
    cy = s[0, 2] * s[1, 0] - s[0, 0] * s[1, 2]
    cz = s[0, 0] * s[1, 1] - s[0, 1] * s[1, 0]
    dx, dy, dz, length = _unit(cx, cy, cz)
    if length <= 1e-14 * scale * scale:
        # the origin lies on the segment v0 v1: the depth is along it
        nx, ny, nz, depth = _unit(s[1, 0], s[1, 1], s[1, 2])
        if depth == 0.0:
            return True, 0.0, -s[0, 0], -s[0, 1], -s[0, 2]
        return True, depth, nx, ny, nz
    pair_support(kinds, params, hull_vertices, positions, rotations, dx, dy, dz, s, 2)
    if _row_dot(s, 2, dx, dy, dz) <= 0.0:
        return False, 0.0, dx, dy, dz
    # v3: a portal (v1, v2, v3) the ray from v0 through the origin passes through
    dx, dy, dz = _normal(s, 0, 1, 2)
    if _row_dot(s, 0, dx, dy, dz) > 0.0:
        for c in range(9):
            s[1, c], s[2, c] = s[2, c], s[1, c]
        dx, dy, dz = -dx, -dy, -dz
    found = False
    for _ in range(MAX_ITERATIONS):
        pair_support(kinds, params, hull_vertices, positions, rotations, dx, dy, dz, s, 3)
        if _row_dot(s, 3, dx, dy, dz) <= 0.0:
            return False, 0.0, dx, dy, dz
        # the origin outside the plane (v0, v1, v3)? then v3 replaces v2; outside (v0, v3, v2)? v3 replaces v1
        ax = s[1, 1] * s[3, 2] - s[1, 2] * s[3, 1]
        ay = s[1, 2] * s[3, 0] - s[1, 0] * s[3, 2]
        az = s[1, 0] * s[3, 1] - s[1, 1] * s[3, 0]
        if _row_dot(s, 0, ax, ay, az) < 0.0:
            _copy_row(s, 2, 3)
        else:
            ax = s[3, 1] * s[2, 2] - s[3, 2] * s[2, 1]
            ay = s[3, 2] * s[2, 0] - s[3, 0] * s[2, 2]
            az = s[3, 0] * s[2, 1] - s[3, 1] * s[2, 0]
            if _row_dot(s, 0, ax, ay, az) < 0.0:
                _copy_row(s, 1, 3)
            else:
                found = True
                break
        dx, dy, dz = _normal(s, 0, 1, 2)
    if not found:
        return False, 0.0, dx, dy, dz
    # refine: push the portal out to C's surface along its normal
    for _ in range(MAX_ITERATIONS):
        nx, ny, nz = _normal(s, 1, 2, 3)
        pair_support(kinds, params, hull_vertices, positions, rotations, nx, ny, nz, s, 4)
        reach = _row_dot(s, 4, nx, ny, nz)
        if reach < 0.0:
            return False, 0.0, nx, ny, nz
        if min(reach - _row_dot(s, 1, nx, ny, nz), reach - _row_dot(s, 2, nx, ny, nz),
               reach - _row_dot(s, 3, nx, ny, nz)) <= tolerance:
            break
        # the new point replaces the corner whose portal the ray no longer passes through
        wx = s[4, 1] * s[0, 2] - s[4, 2] * s[0, 1]
        wy = s[4, 2] * s[0, 0] - s[4, 0] * s[0, 2]
        wz = s[4, 0] * s[0, 1] - s[4, 1] * s[0, 0]
        if _row_dot(s, 1, wx, wy, wz) > 0.0:
            _copy_row(s, 1 if _row_dot(s, 2, wx, wy, wz) > 0.0 else 3, 4)
        else:
            _copy_row(s, 2 if _row_dot(s, 3, wx, wy, wz) > 0.0 else 1, 4)
    # the ray from v0 passed through the portal, but only a portal plane beyond the origin puts the origin inside
    # C: GJK calls a pair within its tolerance of touching "contact", and then the origin may lie just outside
    nx, ny, nz = _normal(s, 1, 2, 3)
    if _row_dot(s, 1, nx, ny, nz) < 0.0:
        return False, 0.0, nx, ny, nz
    # the origin's nearest point on the final portal: its direction is the normal
    wi, wj, wk = _triangle(s, 1, 2, 3)
    px = wi * s[1, 0] + wj * s[2, 0] + wk * s[3, 0]
    py = wi * s[1, 1] + wj * s[2, 1] + wk * s[3, 1]
    pz = wi * s[1, 2] + wj * s[2, 2] + wk * s[3, 2]
    nx, ny, nz, distance = _unit(px, py, pz)
    if distance == 0.0:
        nx, ny, nz = _normal(s, 1, 2, 3)
    pair_support(kinds, params, hull_vertices, positions, rotations, nx, ny, nz, s, 4)
    return True, _row_dot(s, 4, nx, ny, nz), nx, ny, nz
