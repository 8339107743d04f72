"""GJK distance between two convex support-mapped shapes (Gilbert, Johnson and Keerthi 1988).

A pair is described by kinds (2,), params (2, PARAMS), the shared hull vertices, positions (2, 3)
and rotation matrices (2, 3, 3); shape 0 is A, shape 1 is B. GJK walks a simplex of points of the
Minkowski difference C = A - B towards the origin: each step adds C's support point w along -v,
where v is the simplex point closest to the origin (closest_on_simplex). Along the unit
n = -v/|v| (from A to B) the gap between the shapes is

    g(n) = -h_A(n) - h_B(-n) = v.w / |v|,

a lower bound on the distance, while |v| is an upper bound: GJK stops when they meet within the
tolerance, and keeps the best n it has seen. For polytopes it ends exactly; for curved shapes it
converges linearly and the caller polishes n (normal_refinement.py).
"""
import numpy as np
from numba import njit

from ..math3d import JIT, mat_t_vec
from ..shapes.support import support_xyz

MAX_ITERATIONS = 128
FLAT = 1e-9  # a height below this fraction of the lengths involved does not decide a side
SEPARATED, CONTACT = 0, 1  # GJK's verdicts: a proven gap, or an origin within the tolerance of C


@njit(**JIT)
def support_posed(kind, params, hull_vertices, position, rotation, dx, dy, dz):
    """Support point in world coordinates of a shape placed at position with a rotation matrix."""
    lx, ly, lz = mat_t_vec(rotation, dx, dy, dz)
    px, py, pz = support_xyz(kind, params, hull_vertices, lx, ly, lz)
    return (position[0] + rotation[0, 0] * px + rotation[0, 1] * py + rotation[0, 2] * pz,
            position[1] + rotation[1, 0] * px + rotation[1, 1] * py + rotation[1, 2] * pz,
            position[2] + rotation[2, 0] * px + rotation[2, 1] * py + rotation[2, 2] * pz)


@njit(**JIT)
def pair_support(kinds, params, hull_vertices, positions, rotations, nx, ny, nz, out, row):
    """out[row] = (w, a, b): a = A's support along n, b = B's along -n, w = a - b (C's along n)."""
    ax, ay, az = support_posed(kinds[0], params[0], hull_vertices, positions[0], rotations[0], nx, ny, nz)
    bx, by, bz = support_posed(kinds[1], params[1], hull_vertices, positions[1], rotations[1], -nx, -ny, -nz)
    out[row, 0], out[row, 1], out[row, 2] = ax - bx, ay - by, az - bz
    out[row, 3], out[row, 4], out[row, 5] = ax, ay, az
    out[row, 6], out[row, 7], out[row, 8] = bx, by, bz


@njit(**JIT, inline="always")
def _dot(s, i, x, y, z):
    return s[i, 0] * x + s[i, 1] * y + s[i, 2] * z


@njit(**JIT, inline="always")
def _diff_dot(s, i, j, k, l):
    """(s_j - s_i).(s_l - s_k) over the w columns."""
    return ((s[j, 0] - s[i, 0]) * (s[l, 0] - s[k, 0]) + (s[j, 1] - s[i, 1]) * (s[l, 1] - s[k, 1])
            + (s[j, 2] - s[i, 2]) * (s[l, 2] - s[k, 2]))


@njit(**JIT)
def _segment(s, i, j):
    """Barycentric weights (on i, on j) of the point of segment s_i s_j closest to the origin."""
    along = _diff_dot(s, i, j, i, j)
    t = -_dot(s, i, s[j, 0] - s[i, 0], s[j, 1] - s[i, 1], s[j, 2] - s[i, 2])
    if t <= 0.0 or along <= 0.0:
        return 1.0, 0.0
    if t >= along:
        return 0.0, 1.0
    return 1.0 - t / along, t / along


@njit(**JIT, inline="always")
def _norm_squared(s, i, j, k, wi, wj, wk):
    x = wi * s[i, 0] + wj * s[j, 0] + wk * s[k, 0]
    y = wi * s[i, 1] + wj * s[j, 1] + wk * s[k, 1]
    z = wi * s[i, 2] + wj * s[j, 2] + wk * s[k, 2]
    return x * x + y * y + z * z


@njit(**JIT, inline="always")
def _area(ax, ay, bx, by, cx, cy):
    """Twice the signed area of the 2-D triangle a, b, c."""
    return (bx - ax) * (cy - ay) - (by - ay) * (cx - ax)


@njit(**JIT)
def _triangle(s, i, j, k):
    """Barycentric weights (on i, j, k) of the point of triangle s_i s_j s_k closest to the origin.

    The nearest of the candidates: each edge's nearest point, and the foot of the perpendicular
    when it falls inside. Every candidate is a true point of the triangle, so a sliver (two corners
    nearly together, common near convergence on a curved surface) whose foot is computed badly
    can only lose to an edge, never return a point farther than the edges' best.
    """
    wi, wj = _segment(s, i, j)
    best, bi, bj, bk = _norm_squared(s, i, j, k, wi, wj, 0.0), wi, wj, 0.0
    wj, wk = _segment(s, j, k)
    d = _norm_squared(s, i, j, k, 0.0, wj, wk)
    if d < best:
        best, bi, bj, bk = d, 0.0, wj, wk
    wk, wi = _segment(s, k, i)
    d = _norm_squared(s, i, j, k, wi, 0.0, wk)
    if d < best:
        best, bi, bj, bk = d, wi, 0.0, wk
    # the foot p of the perpendicular from the origin, with barycentric weights from signed areas in
    # the coordinate plane where the triangle's projection is largest (Montanari et al. 2017): for a
    # sliver these keep full precision, where the normal equations would square its condition number
    ux, uy, uz = s[j, 0] - s[i, 0], s[j, 1] - s[i, 1], s[j, 2] - s[i, 2]
    vx, vy, vz = s[k, 0] - s[i, 0], s[k, 1] - s[i, 1], s[k, 2] - s[i, 2]
    nx, ny, nz = uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx
    nn = nx * nx + ny * ny + nz * nz
    if nn > 0.0:
        t = _dot(s, i, nx, ny, nz) / nn
        px, py, pz = t * nx, t * ny, t * nz
        if abs(nx) >= abs(ny) and abs(nx) >= abs(nz):
            a, b = 1, 2
            pa, pb = py, pz
        elif abs(ny) >= abs(nz):
            a, b = 2, 0
            pa, pb = pz, px
        else:
            a, b = 0, 1
            pa, pb = px, py
        total = _area(s[i, a], s[i, b], s[j, a], s[j, b], s[k, a], s[k, b])
        ci = _area(pa, pb, s[j, a], s[j, b], s[k, a], s[k, b])
        cj = _area(s[i, a], s[i, b], pa, pb, s[k, a], s[k, b])
        ck = _area(s[i, a], s[i, b], s[j, a], s[j, b], pa, pb)
        if total != 0.0 and ci / total > 0.0 and cj / total > 0.0 and ck / total > 0.0:
            wi, wj, wk = ci / total, cj / total, ck / total
            d = _norm_squared(s, i, j, k, wi, wj, wk)
            if d < best:
                bi, bj, bk = wi, wj, wk
    return bi, bj, bk


@njit(**JIT)
def _outside_face(s, i, j, k, opposite):
    """Whether the origin lies on the other side of plane s_i s_j s_k than s_opposite, or too near
    the plane to tell, or the tetrahedron is too flat to tell: then the face must be searched."""
    abx, aby, abz = s[j, 0] - s[i, 0], s[j, 1] - s[i, 1], s[j, 2] - s[i, 2]
    acx, acy, acz = s[k, 0] - s[i, 0], s[k, 1] - s[i, 1], s[k, 2] - s[i, 2]
    nx, ny, nz = aby * acz - abz * acy, abz * acx - abx * acz, abx * acy - aby * acx
    origin_side = -_dot(s, i, nx, ny, nz)
    opposite_side = _dot(s, opposite, nx, ny, nz) - _dot(s, i, nx, ny, nz)
    normal = np.sqrt(nx * nx + ny * ny + nz * nz)
    reach = np.sqrt(_dot(s, i, s[i, 0], s[i, 1], s[i, 2]))
    return (origin_side * opposite_side < 0.0 or abs(opposite_side) <= FLAT * normal * np.sqrt(
        _diff_dot(s, i, opposite, i, opposite)) or abs(origin_side) <= FLAT * normal * reach)


@njit(**JIT)
def closest_on_simplex(s, count, weights):
    """Reduce simplex s (its first ``count`` rows; columns w, a, b) to the smallest face holding the
    point closest to the origin, writing its barycentric weights. Returns the new count, or 4 with
    the simplex unchanged when the origin lies inside the tetrahedron."""
    for r in range(4):
        weights[r] = 0.0
    if count == 1:
        weights[0] = 1.0
    elif count == 2:
        weights[0], weights[1] = _segment(s, 0, 1)
    elif count == 3:
        weights[0], weights[1], weights[2] = _triangle(s, 0, 1, 2)
    else:
        # every face, not only those the origin is outside of: near convergence the tetrahedron is
        # nearly flat, its side tests are unreliable, and the better face may be any of the four
        best = np.inf
        inside = True
        for face in range(4):  # the face opposite vertex `face`
            i, j, k = (1, 2, 3) if face == 0 else ((0, 2, 3) if face == 1 else ((0, 1, 3) if face == 2 else (0, 1, 2)))
            if _outside_face(s, i, j, k, face):
                inside = False
            wi, wj, wk = _triangle(s, i, j, k)
            d = _norm_squared(s, i, j, k, wi, wj, wk)
            if d < best:
                best = d
                for r in range(4):
                    weights[r] = 0.0
                weights[i], weights[j], weights[k] = wi, wj, wk
        if inside:
            for r in range(4):
                weights[r] = 0.25
            return 4
    kept = 0
    for r in range(count):  # keep the rows with weight, in order
        if weights[r] > 0.0:
            for c in range(9):
                s[kept, c] = s[r, c]
            weights[kept] = weights[r]
            kept += 1
    for r in range(kept, 4):
        weights[r] = 0.0
    return kept


@njit(**JIT)
def combine(s, count, weights, column):
    """Sum over the simplex rows of weight * (columns column..column+2): w (0), a (3) or b (6)."""
    x = y = z = 0.0
    for r in range(count):
        x += weights[r] * s[r, column]
        y += weights[r] * s[r, column + 1]
        z += weights[r] * s[r, column + 2]
    return x, y, z


@njit(**JIT)
def gjk(kinds, params, hull_vertices, positions, rotations, nx, ny, nz, tolerance, simplex, weights):
    """Run GJK from the direction n (a guess of the normal from A to B, need not be unit).

    Returns (verdict, count, gap, nx, ny, nz): SEPARATED with the best gap g(n) > tolerance found and
    its unit n, or CONTACT when C holds the origin or comes within the tolerance of it. simplex (4, 9)
    and weights (4,) hold the final simplex (w, a, b rows) and the barycentric weights of its point
    closest to the origin: their combination of the a and b columns is a closest pair.
    """
    pair_support(kinds, params, hull_vertices, positions, rotations, nx, ny, nz, simplex, 0)
    count = 1
    weights[0] = 1.0
    vx, vy, vz = simplex[0, 0], simplex[0, 1], simplex[0, 2]
    best_gap, bx, by, bz = -np.inf, nx, ny, nz
    for _ in range(MAX_ITERATIONS):
        squared = vx * vx + vy * vy + vz * vz
        length = np.sqrt(squared)
        if length <= tolerance:
            return CONTACT, count, best_gap, bx, by, bz
        ux, uy, uz = -vx / length, -vy / length, -vz / length
        pair_support(kinds, params, hull_vertices, positions, rotations, ux, uy, uz, simplex, count)
        gap = -(ux * simplex[count, 0] + uy * simplex[count, 1] + uz * simplex[count, 2])
        if gap > best_gap:
            best_gap, bx, by, bz = gap, ux, uy, uz
        if length - best_gap <= tolerance:  # the upper and lower bounds meet
            break
        count = closest_on_simplex(simplex, count + 1, weights)
        if count == 4:
            return CONTACT, count, best_gap, bx, by, bz
        wx, wy, wz = combine(simplex, count, weights, 0)
        if wx * wx + wy * wy + wz * wz >= squared:  # no progress left in floating point
            break
        vx, vy, vz = wx, wy, wz
    if best_gap <= tolerance:
        return CONTACT, count, best_gap, bx, by, bz
    return SEPARATED, count, best_gap, bx, by, bz
