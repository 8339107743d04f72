"""EPA: penetration depth and normal of two overlapping convex shapes (van den Bergen 2001).

When C = A - B holds the origin, the penetration depth is the origin's distance to C's boundary,
min over unit n of h_C(n) with h_C(n) = h_A(n) + h_B(-n), and the minimising n is the normal from
A to B. EPA grows a convex polytope inside C from GJK's last simplex: it takes the face nearest to
the origin, adds C's support point along that face's normal and rebuilds the faces the new point
sees. The nearest face's distance bounds the depth from below (the polytope lies inside C) and
h_C of its normal from above; EPA stops when they meet within the tolerance. Polytope pairs end
exactly. A curved surface is only approached by facets, so the caller polishes the normal with
normal_refinement.py.

Buffers the caller provides: vertices (MAX_VERTICES, 9) rows of w, a, b; faces (MAX_FACES, 3)
vertex indices counter-clockwise from outside; planes (MAX_FACES, 4) unit normal and distance;
alive (MAX_FACES,); edges (3 MAX_FACES, 2) for the horizon.
"""
import numpy as np
from numba import njit

from ..math3d import JIT
from .gjk import pair_support

MAX_ITERATIONS = 120
MAX_VERTICES = MAX_ITERATIONS + 4
MAX_FACES = 2 * MAX_VERTICES
AXES = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0],
                 [0.0, 0.0, -1.0]])


@njit(**JIT)
def _distance_squared(v, i, j):
    return (v[i, 0] - v[j, 0]) ** 2 + (v[i, 1] - v[j, 1]) ** 2 + (v[i, 2] - v[j, 2]) ** 2


@njit(**JIT)
def _add_face(vertices, faces, planes, alive, i, j, k):
    """Put face (i, j, k) in the first free slot with its plane; returns the slot or -1 when full.
    A face too thin for a normal gets an infinite distance, so it is never the nearest."""
    slot = -1
    for f in range(len(alive)):
        if not alive[f]:
            slot = f
            break
    if slot < 0:
        return -1
    ux, uy, uz = vertices[j, 0] - vertices[i, 0], vertices[j, 1] - vertices[i, 1], vertices[j, 2] - vertices[i, 2]
    vx, vy, vz = vertices[k, 0] - vertices[i, 0], vertices[k, 1] - vertices[i, 1], vertices[k, 2] - vertices[i, 2]
    nx, ny, nz = uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx
    norm = np.sqrt(nx * nx + ny * ny + nz * nz)
    faces[slot, 0], faces[slot, 1], faces[slot, 2] = i, j, k
    alive[slot] = True
    if norm <= 1e-14 * (ux * ux + uy * uy + uz * uz + vx * vx + vy * vy + vz * vz):
        planes[slot, 0], planes[slot, 1], planes[slot, 2], planes[slot, 3] = 0.0, 0.0, 0.0, np.inf
    else:
        nx, ny, nz = nx / norm, ny / norm, nz / norm
        planes[slot, 0], planes[slot, 1], planes[slot, 2] = nx, ny, nz
        planes[slot, 3] = nx * vertices[i, 0] + ny * vertices[i, 1] + nz * vertices[i, 2]
    return slot


@njit(**JIT)
def _tetrahedron(kinds, params, hull_vertices, positions, rotations, vertices, count):
    """Grow GJK's simplex (its first ``count`` rows) to four points spanning a solid: supports along
    the axes for a point, a normal of the segment, the triangle's normal. Returns the count reached."""
    if count == 1:
        best, best_distance = 0, 0.0
        for axis in range(6):
            pair_support(kinds, params, hull_vertices, positions, rotations, AXES[axis, 0], AXES[axis, 1],
                         AXES[axis, 2], vertices, 1)
            if _distance_squared(vertices, 0, 1) > best_distance:
                best, best_distance = axis, _distance_squared(vertices, 0, 1)
        pair_support(kinds, params, hull_vertices, positions, rotations, AXES[best, 0], AXES[best, 1],
                     AXES[best, 2], vertices, 1)
        count = 2
    if count == 2:
        dx, dy, dz = vertices[1, 0] - vertices[0, 0], vertices[1, 1] - vertices[0, 1], vertices[1, 2] - vertices[0, 2]
        # the axis least along the segment, crossed with it
        ax = 1.0 if abs(dx) <= abs(dy) and abs(dx) <= abs(dz) else 0.0
        ay = 1.0 if ax == 0.0 and abs(dy) <= abs(dz) else 0.0
        az = 1.0 - ax - ay
        nx, ny, nz = dy * az - dz * ay, dz * ax - dx * az, dx * ay - dy * ax
        pair_support(kinds, params, hull_vertices, positions, rotations, nx, ny, nz, vertices, 2)
        count = 3
    if count == 3:
        ux, uy, uz = vertices[1, 0] - vertices[0, 0], vertices[1, 1] - vertices[0, 1], vertices[1, 2] - vertices[0, 2]
        vx, vy, vz = vertices[2, 0] - vertices[0, 0], vertices[2, 1] - vertices[0, 1], vertices[2, 2] - vertices[0, 2]
        nx, ny, nz = uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx
        # the side of the triangle's plane where the origin is (either when it lies in it)
        if nx * vertices[0, 0] + ny * vertices[0, 1] + nz * vertices[0, 2] > 0.0:
            nx, ny, nz = -nx, -ny, -nz
        pair_support(kinds, params, hull_vertices, positions, rotations, nx, ny, nz, vertices, 3)
        height = (nx * (vertices[3, 0] - vertices[0, 0]) + ny * (vertices[3, 1] - vertices[0, 1])
                  + nz * (vertices[3, 2] - vertices[0, 2]))
        if height <= 0.0:  # the origin's side is flat here: the other side
            pair_support(kinds, params, hull_vertices, positions, rotations, -nx, -ny, -nz, vertices, 3)
        count = 4
    return count


@njit(**JIT)
def epa(kinds, params, hull_vertices, positions, rotations, simplex, count, tolerance, vertices, faces, planes,
        alive, edges):
    """Penetration depth from GJK's final simplex (its first ``count`` rows of w, a, b).

    Returns (depth, nx, ny, nz): the depth h_C(n) >= the true depth along the best unit normal n found
    (from A to B).
    """
    for r in range(count):
        for c in range(9):
            vertices[r, c] = simplex[r, c]
    count = _tetrahedron(kinds, params, hull_vertices, positions, rotations, vertices, count)
    alive[:] = False
    ux, uy, uz = vertices[1, 0] - vertices[0, 0], vertices[1, 1] - vertices[0, 1], vertices[1, 2] - vertices[0, 2]
    vx, vy, vz = vertices[2, 0] - vertices[0, 0], vertices[2, 1] - vertices[0, 1], vertices[2, 2] - vertices[0, 2]
    height = ((uy * vz - uz * vy) * (vertices[3, 0] - vertices[0, 0])
              + (uz * vx - ux * vz) * (vertices[3, 1] - vertices[0, 1])
              + (ux * vy - uy * vx) * (vertices[3, 2] - vertices[0, 2]))
    i1, i2 = (1, 2) if height < 0.0 else (2, 1)  # the base turns counter-clockwise seen from outside
    _add_face(vertices, faces, planes, alive, 0, i1, i2)
    _add_face(vertices, faces, planes, alive, 0, 3, i1)
    _add_face(vertices, faces, planes, alive, i1, 3, i2)
    _add_face(vertices, faces, planes, alive, i2, 3, 0)
    best_depth, bx, by, bz = np.inf, 1.0, 0.0, 0.0
    for _ in range(MAX_ITERATIONS):
        nearest, nearest_distance = -1, np.inf
        for f in range(len(alive)):
            if alive[f] and planes[f, 3] < nearest_distance:
                nearest, nearest_distance = f, planes[f, 3]
        if nearest < 0:
            break
        nx, ny, nz = planes[nearest, 0], planes[nearest, 1], planes[nearest, 2]
        pair_support(kinds, params, hull_vertices, positions, rotations, nx, ny, nz, vertices, count)
        upper = nx * vertices[count, 0] + ny * vertices[count, 1] + nz * vertices[count, 2]
        if upper < best_depth:
            best_depth, bx, by, bz = upper, nx, ny, nz
        if upper - nearest_distance <= tolerance or count + 1 >= len(vertices):
            break
        # the faces the new point sees, and the loop of edges around them
        horizon = 0
        for f in range(len(alive)):
            if not alive[f]:
                continue
            i = faces[f, 0]
            seen = (planes[f, 0] * (vertices[count, 0] - vertices[i, 0])
                    + planes[f, 1] * (vertices[count, 1] - vertices[i, 1])
                    + planes[f, 2] * (vertices[count, 2] - vertices[i, 2]))
            if f != nearest and not seen > 1e-3 * tolerance:
                continue
            alive[f] = False
            for e in range(3):
                p, q = faces[f, e], faces[f, (e + 1) % 3]
                shared = -1
                for h in range(horizon):
                    if edges[h, 0] == q and edges[h, 1] == p:
                        shared = h
                        break
                if shared >= 0:  # the edge between two seen faces is inside the hole
                    edges[shared, 0], edges[shared, 1] = edges[horizon - 1, 0], edges[horizon - 1, 1]
                    horizon -= 1
                else:
                    edges[horizon, 0], edges[horizon, 1] = p, q
                    horizon += 1
        full = False
        for h in range(horizon):
            if _add_face(vertices, faces, planes, alive, edges[h, 0], edges[h, 1], count) < 0:
                full = True
        count += 1
        if full:
            break
    return best_depth, bx, by, bz
