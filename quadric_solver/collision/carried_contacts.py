"""Carried contacts: a touching pair that has barely moved since it was measured keeps its contact points, moved
with the bodies, instead of being measured again.

A touching pair of shapes other than ellipsoids costs 1 to 8 us in the narrow phase (docs/shapes.md), and in a
settling pile most pairs hardly move from one substep to the next. So, as Jolt's body-pair cache does, each
contact of such a pair is held in the warm-start cache as a point fixed in A, a point fixed in B and the normal
fixed in A, beside the pair's relative pose when it was measured (``LOCAL_WIDTH`` floats a contact). While no
point of B can have moved in A's frame by more than the pair's reuse length (``BodyShapes.reuse_length``, a share
of the smaller body's smallest half size) since that measurement, counting the motion this substep can still add,
the points go with the bodies and each depth is measured between its two points; once it can have, the pair is
measured again. A point held by two bodies moves exactly as they do, so what a carried contact misses is only
what that motion can change: a corner crossing a face's edge, a point coming within reach. Both are bounded by
the reuse length, which stays below half the speculative margin.
"""
import numpy as np
from numba import njit

from ..math3d import JIT

A_POINT = 0      # the contact's point on A, in A's frame about its centre
B_POINT = 3      # the point on B, in B's frame
NORMAL = 6       # the normal from A to B, in A's frame
REF_OFFSET = 9   # B's centre in A's frame when the pair was measured: R_A^T (x_B - x_A)
REF_TURN = 12    # B's rotation in A's frame then, R_A^T R_B (row major)
LOCAL_WIDTH = 21    # the pair's pose is the columns from REF_OFFSET on, the same in each of its contacts


@njit(**JIT, inline="always")
def _in_frame(rotation, body, a, x, y, z):
    """Component a of the world vector (x, y, z) in ``body``'s frame: (R^T v)_a."""
    return rotation[body, 0, a] * x + rotation[body, 1, a] * y + rotation[body, 2, a] * z


@njit(**JIT, inline="always")
def _relative_turn(rotation, i, j, a, b):
    """(R_i^T R_j)_ab: body j's rotation in body i's frame."""
    return rotation[i, 0, a] * rotation[j, 0, b] + rotation[i, 1, a] * rotation[j, 1, b] + \
        rotation[i, 2, a] * rotation[j, 2, b]


@njit(**JIT)
def carried_motion(local, row, position, rotation, linear_velocity, angular_velocity, bounding_radius, i, j, h):
    """Bound on how far any point of body j has moved in body i's frame since cache row ``row`` was measured, plus
    how far it moves in this substep of length h at the velocities it starts with.

    The velocities are those before the substep's prediction: with gravity in them, a box resting on a fixed one
    would seem to sink g h^2 (0.17 mm at 1/240 s) every substep and never be carried, when its contacts hold it.
    A pair that does fall apart (its support gone) is measured once its motion shows; until then its contacts'
    points are where the bodies are, and a point it lacks was beyond the margin, which the reuse length keeps at
    least twice as large."""
    dx = position[j, 0] - position[i, 0]
    dy = position[j, 1] - position[i, 1]
    dz = position[j, 2] - position[i, 2]
    shift2 = 0.0
    for a in range(3):
        shift2 += (_in_frame(rotation, i, a, dx, dy, dz) - local[row, REF_OFFSET + a]) ** 2
    # trace(M_ref^T M) with M = R_A^T R_B: 1 + 2 cos(theta) for the turn theta since the measurement
    trace = 0.0
    for a in range(3):
        for b in range(3):
            trace += local[row, REF_TURN + 3 * a + b] * _relative_turn(rotation, i, j, a, b)
    chord = np.sqrt(max(3.0 - trace, 0.0))  # 2 sin(theta / 2): how far a point at unit distance moved
    radius = bounding_radius[j]
    # this substep: j's points relative to i's frame move at most |v_j - v_i| + |w_i| (|d| + r_j) + |w_j| r_j
    dv = np.sqrt((linear_velocity[j, 0] - linear_velocity[i, 0]) ** 2
                 + (linear_velocity[j, 1] - linear_velocity[i, 1]) ** 2
                 + (linear_velocity[j, 2] - linear_velocity[i, 2]) ** 2)
    spin_i = np.sqrt(angular_velocity[i, 0] ** 2 + angular_velocity[i, 1] ** 2 + angular_velocity[i, 2] ** 2)
    spin_j = np.sqrt(angular_velocity[j, 0] ** 2 + angular_velocity[j, 1] ** 2 + angular_velocity[j, 2] ** 2)
    ahead = h * (dv + spin_i * (np.sqrt(dx * dx + dy * dy + dz * dz) + radius) + spin_j * radius)
    return np.sqrt(shift2) + chord * radius + ahead


@njit(**JIT, inline="always")
def _to_world(rotation, position, body, local, row, column):
    """Point ``local[row, column:column + 3]`` of ``body``, in the world."""
    x = local[row, column]
    y = local[row, column + 1]
    z = local[row, column + 2]
    return (position[body, 0] + rotation[body, 0, 0] * x + rotation[body, 0, 1] * y + rotation[body, 0, 2] * z,
            position[body, 1] + rotation[body, 1, 0] * x + rotation[body, 1, 1] * y + rotation[body, 1, 2] * z,
            position[body, 2] + rotation[body, 2, 0] * x + rotation[body, 2, 1] * y + rotation[body, 2, 2] * z)


@njit(**JIT)
def carry_pair(local, first, rows, position, rotation, i, j, pair_depth, pair_normal, pair_point, pair_patch,
               pair_patch_count, p):
    """Pair p's contacts from cache rows first..first + rows, moved with bodies i and j, into the pair arrays (the
    first as the pair's point, the others as its patch, as the narrow phase writes them). Returns the normal and
    the deepest depth."""
    nx = rotation[i, 0, 0] * local[first, NORMAL] + rotation[i, 0, 1] * local[first, NORMAL + 1] + \
        rotation[i, 0, 2] * local[first, NORMAL + 2]
    ny = rotation[i, 1, 0] * local[first, NORMAL] + rotation[i, 1, 1] * local[first, NORMAL + 1] + \
        rotation[i, 1, 2] * local[first, NORMAL + 2]
    nz = rotation[i, 2, 0] * local[first, NORMAL] + rotation[i, 2, 1] * local[first, NORMAL + 1] + \
        rotation[i, 2, 2] * local[first, NORMAL + 2]
    deepest = -np.inf
    for m in range(rows):
        ax, ay, az = _to_world(rotation, position, i, local, first + m, A_POINT)
        bx, by, bz = _to_world(rotation, position, j, local, first + m, B_POINT)
        depth = (ax - bx) * nx + (ay - by) * ny + (az - bz) * nz
        deepest = max(deepest, depth)
        if m == 0:
            pair_depth[p] = depth
            pair_point[p, 0] = 0.5 * (ax + bx)
            pair_point[p, 1] = 0.5 * (ay + by)
            pair_point[p, 2] = 0.5 * (az + bz)
        else:
            pair_patch[p, m - 1, 0] = 0.5 * (ax + bx)
            pair_patch[p, m - 1, 1] = 0.5 * (ay + by)
            pair_patch[p, m - 1, 2] = 0.5 * (az + bz)
            pair_patch[p, m - 1, 3] = depth
    pair_normal[p, 0] = nx
    pair_normal[p, 1] = ny
    pair_normal[p, 2] = nz
    pair_patch_count[p] = rows - 1
    return nx, ny, nz, deepest


@njit(**JIT, inline="always")
def _hold_point(local, c, column, position, rotation, body, x, y, z):
    """World point (x, y, z) into local[c, column:column + 3], in ``body``'s frame about its centre."""
    x -= position[body, 0]
    y -= position[body, 1]
    z -= position[body, 2]
    for a in range(3):
        local[c, column + a] = _in_frame(rotation, body, a, x, y, z)


@njit(**JIT)
def hold_contact(local, c, position, rotation, i, j, nx, ny, nz, px, py, pz, depth):
    """Contact c of bodies i and j as just measured (normal n from i to j, point p, depth) into ``local[c]``: its
    point on each body (p plus and minus half the depth along n), in that body's frame, and the normal in i's
    (the pair's pose: hold_pose)."""
    half = 0.5 * depth
    _hold_point(local, c, A_POINT, position, rotation, i, px + half * nx, py + half * ny, pz + half * nz)
    _hold_point(local, c, B_POINT, position, rotation, j, px - half * nx, py - half * ny, pz - half * nz)
    for a in range(3):
        local[c, NORMAL + a] = _in_frame(rotation, i, a, nx, ny, nz)


@njit(**JIT)
def hold_pose(local, c, position, rotation, i, j):
    """Bodies i and j's relative pose, as carried_motion compares it, into ``local[c]``."""
    dx = position[j, 0] - position[i, 0]
    dy = position[j, 1] - position[i, 1]
    dz = position[j, 2] - position[i, 2]
    for a in range(3):
        local[c, REF_OFFSET + a] = _in_frame(rotation, i, a, dx, dy, dz)
        for b in range(3):
            local[c, REF_TURN + 3 * a + b] = _relative_turn(rotation, i, j, a, b)
