"""Two boxes' signed distance by the separating-axis test (Gottschalk's OBB test, with depths).

Two convex polytopes are apart exactly when some axis separates their shadows, and for boxes the
candidates are fifteen: the three face normals of each and the nine cross products of an edge of
each. The separation along an axis, |T.L| - r_A(L) - r_B(L) for the unit axis L (T the centre
offset, r the half widths), is at most the distance; the largest of the fifteen is

- minus the penetration depth when the boxes overlap (the shortest separating translation of two
  polytopes lies along a face normal or an edge cross product of their Minkowski difference), and
- the distance when the nearest features are a face and anything, or two edges; a lower bound
  when they are a vertex and a vertex or an edge (then no candidate axis joins them).

A lower bound alone would make a speculative contact early, as in ODE's and MuJoCo's box tests,
and the patch along that axis can lie beside the nearest points and state a wider gap than the
distance. box_box_gap_is_distance tells the two apart: a vertex over a face, or two crossing
edges, joined by the gap make it the distance; where neither is found the collision driver takes
GJK's distance instead. Face axes win ties and near ties (within FACE_BIAS of the size) over edge
axes, so a resting face keeps its normal. On a resting pair it takes 0.27 µs, GJK and EPA 0.7 to
1.8 µs.
"""
import numpy as np
from numba import njit

from ..math3d import JIT, sign

FACE_BIAS = 1e-6      # of the pair's size: how much better an edge axis must separate to be taken
PARALLEL = 1e-12      # squared length of an edge cross product below which the edges are parallel
EXACT = 1e-12         # of the pair's size: how far two points may lie beyond the gap for it to be the distance
TIE = 1e-9            # how much less square to an axis than the squarest an edge may be and still be tried


@njit(**JIT, inline="always")
def _column_dot(rotation, i, x, y, z):
    """Column i of a rotation matrix dotted with (x, y, z)."""
    return rotation[0, i] * x + rotation[1, i] * y + rotation[2, i] * z


@njit(**JIT, inline="always")
def _row_of_r(rotation_a, rotation_b, i):
    """Row i of A^T B: A's axis i dotted with B's three axes."""
    return (_column_dot(rotation_b, 0, rotation_a[0, i], rotation_a[1, i], rotation_a[2, i]),
            _column_dot(rotation_b, 1, rotation_a[0, i], rotation_a[1, i], rotation_a[2, i]),
            _column_dot(rotation_b, 2, rotation_a[0, i], rotation_a[1, i], rotation_a[2, i]))


@njit(**JIT, inline="always")
def _b_in_a(position_a, rotation_a, position_b, rotation_b):
    """(T, R): B's centre in A's frame, T = A^T (p_B - p_A), and R[i][j] = A_i . B_j."""
    dx = position_b[0] - position_a[0]
    dy = position_b[1] - position_a[1]
    dz = position_b[2] - position_a[2]
    # tuples, not arrays: two small arrays allocated per call cost a third of a resting pair's test
    t = (_column_dot(rotation_a, 0, dx, dy, dz), _column_dot(rotation_a, 1, dx, dy, dz),
         _column_dot(rotation_a, 2, dx, dy, dz))
    r = (_row_of_r(rotation_a, rotation_b, 0), _row_of_r(rotation_a, rotation_b, 1),
         _row_of_r(rotation_a, rotation_b, 2))
    return t, r


@njit(**JIT, inline="always")
def _pair_size(half_a, half_b):
    """The boxes' largest half extents added: the scale of FACE_BIAS and EXACT."""
    return max(half_a[0], max(half_a[1], half_a[2])) + max(half_b[0], max(half_b[1], half_b[2]))


@njit(**JIT)
def box_box_distance(half_a, position_a, rotation_a, half_b, position_b, rotation_b):
    """(gap, nx, ny, nz): the largest separation over the fifteen axes and its unit axis, from A to B.

    half_*: the boxes' half extents; rotation_*: their axes as matrix columns (world from box).
    """
    t, r = _b_in_a(position_a, rotation_a, position_b, rotation_b)
    size = _pair_size(half_a, half_b)
    best = -np.inf
    lx, ly, lz = 0.0, 0.0, 1.0  # the best axis in A's frame, pointing from A to B
    for i in range(3):
        reach_b = half_b[0] * abs(r[i][0]) + half_b[1] * abs(r[i][1]) + half_b[2] * abs(r[i][2])
        separation = abs(t[i]) - half_a[i] - reach_b
        if separation > best:
            best = separation
            side = sign(t[i])
            lx, ly, lz = (side if i == 0 else 0.0), (side if i == 1 else 0.0), (side if i == 2 else 0.0)
    for j in range(3):
        along = t[0] * r[0][j] + t[1] * r[1][j] + t[2] * r[2][j]
        reach_a = half_a[0] * abs(r[0][j]) + half_a[1] * abs(r[1][j]) + half_a[2] * abs(r[2][j])
        separation = abs(along) - reach_a - half_b[j]
        if separation > best:
            best = separation
            side = sign(along)
            lx, ly, lz = side * r[0][j], side * r[1][j], side * r[2][j]
    face_best = best
    for i in range(3):
        for j in range(3):
            # L = A_i x B_j in A's frame
            bx, by, bz = r[0][j], r[1][j], r[2][j]
            if i == 0:
                cx, cy, cz = 0.0, -bz, by
            elif i == 1:
                cx, cy, cz = bz, 0.0, -bx
            else:
                cx, cy, cz = -by, bx, 0.0
            length2 = cx * cx + cy * cy + cz * cz
            if length2 <= PARALLEL:
                continue
            length = np.sqrt(length2)
            cx, cy, cz = cx / length, cy / length, cz / length
            reach_a = half_a[0] * abs(cx) + half_a[1] * abs(cy) + half_a[2] * abs(cz)
            reach_b = 0.0
            for k in range(3):
                reach_b += half_b[k] * abs(cx * r[0][k] + cy * r[1][k] + cz * r[2][k])
            along = t[0] * cx + t[1] * cy + t[2] * cz
            separation = abs(along) - reach_a - reach_b
            if separation > best and separation > face_best + FACE_BIAS * size:
                best = separation
                side = sign(along)
                lx, ly, lz = side * cx, side * cy, side * cz
    nx = rotation_a[0, 0] * lx + rotation_a[0, 1] * ly + rotation_a[0, 2] * lz
    ny = rotation_a[1, 0] * lx + rotation_a[1, 1] * ly + rotation_a[1, 2] * lz
    nz = rotation_a[2, 0] * lx + rotation_a[2, 1] * ly + rotation_a[2, 2] * lz
    return best, nx, ny, nz


@njit(**JIT, inline="always")
def _vertex_over_face(half_f, half_v, t, r, lx, ly, lz):
    """Distance from the vertices of box V over the face of box F that faces along the unit axis l to that
    face, the least (inf where none lies over it), all in F's frame: t is V's centre, r[i][j] = F_i . V_j.

    A vertex over the face at height h lies h from the face's point below it, a point of F."""
    i = 0
    if abs(ly) > abs(lx):
        i = 1
    if abs(lz) > max(abs(lx), abs(ly)):
        i = 2
    side = sign((lx, ly, lz)[i])
    nearest = np.inf
    for corner in range(8):
        s0 = half_v[0] if corner & 1 else -half_v[0]
        s1 = half_v[1] if corner & 2 else -half_v[1]
        s2 = half_v[2] if corner & 4 else -half_v[2]
        inside = True
        height = 0.0
        for k in range(3):
            v = t[k] + r[k][0] * s0 + r[k][1] * s1 + r[k][2] * s2
            if k == i:
                height = side * v - half_f[k]
            elif abs(v) > half_f[k]:
                inside = False
        if inside and 0.0 <= height < nearest:
            nearest = height
    return nearest


@njit(**JIT, inline="always")
def _edge_pair_distance(half_a, half_b, t, r, i, j, l, along_b):
    """Distance of the closest points of A's edge along A_i and B's along B_j, A's on its side facing +l and B's
    on its side facing -l (A's frame; along_b[k] = l . B_k), where both lie within their edges (inf otherwise)."""
    b = r[i][j]  # A_i . B_j
    denom = 1.0 - b * b
    if denom <= PARALLEL:
        return np.inf
    ca = (0.0 if i == 0 else sign(l[0]) * half_a[0], 0.0 if i == 1 else sign(l[1]) * half_a[1],
          0.0 if i == 2 else sign(l[2]) * half_a[2])
    w = (0.0 if j == 0 else -sign(along_b[0]) * half_b[0], 0.0 if j == 1 else -sign(along_b[1]) * half_b[1],
         0.0 if j == 2 else -sign(along_b[2]) * half_b[2])
    cb = (t[0] + r[0][0] * w[0] + r[0][1] * w[1] + r[0][2] * w[2],
          t[1] + r[1][0] * w[0] + r[1][1] * w[1] + r[1][2] * w[2],
          t[2] + r[2][0] * w[0] + r[2][1] * w[1] + r[2][2] * w[2])
    dx, dy, dz = ca[0] - cb[0], ca[1] - cb[1], ca[2] - cb[2]
    c = (dx, dy, dz)[i]
    f = r[0][j] * dx + r[1][j] * dy + r[2][j] * dz
    u = (b * f - c) / denom  # along A_i from ca
    v = f + b * u            # along B_j from cb
    if abs(u) > half_a[i] or abs(v) > half_b[j]:
        return np.inf
    ex = dx + (u if i == 0 else 0.0) - v * r[0][j]
    ey = dy + (u if i == 1 else 0.0) - v * r[1][j]
    ez = dz + (u if i == 2 else 0.0) - v * r[2][j]
    return np.sqrt(ex * ex + ey * ey + ez * ez)


@njit(**JIT, inline="always")
def _crossing_edges(half_a, half_b, t, r, lx, ly, lz):
    """The least _edge_pair_distance over the edges of A and of B most square to the unit axis l (A's frame,
    from A to B), ties within TIE all tried (face-on, two axes of a box are square to l). Two edges that
    cross, seen along an edge-edge axis, are joined along it by its gap."""
    l = (lx, ly, lz)
    along_b = (lx * r[0][0] + ly * r[1][0] + lz * r[2][0], lx * r[0][1] + ly * r[1][1] + lz * r[2][1],
               lx * r[0][2] + ly * r[1][2] + lz * r[2][2])
    square_a = min(abs(lx), min(abs(ly), abs(lz))) + TIE
    square_b = min(abs(along_b[0]), min(abs(along_b[1]), abs(along_b[2]))) + TIE
    nearest = np.inf
    for i in range(3):
        if abs(l[i]) > square_a:
            continue
        for j in range(3):
            if abs(along_b[j]) <= square_b:
                nearest = min(nearest, _edge_pair_distance(half_a, half_b, t, r, i, j, l, along_b))
    return nearest


@njit(**JIT)
def box_box_gap_is_distance(half_a, position_a, rotation_a, half_b, position_b, rotation_b, gap, nx, ny, nz):
    """Whether the gap of two boxes apart along the unit axis n (world, from A to B) is their distance, to
    EXACT of their size: a point of each no further apart than that (the gap bounds the distance from below).

    Tried: a vertex of either over the other's face most turned to it, and the two edges most square to n.
    That finds the nearest points of a face and anything, and of two edges, on box_box_distance's axis; a
    vertex nearest to a vertex or an edge is found by no axis, and gets False."""
    t, r = _b_in_a(position_a, rotation_a, position_b, rotation_b)
    lx = rotation_a[0, 0] * nx + rotation_a[1, 0] * ny + rotation_a[2, 0] * nz
    ly = rotation_a[0, 1] * nx + rotation_a[1, 1] * ny + rotation_a[2, 1] * nz
    lz = rotation_a[0, 2] * nx + rotation_a[1, 2] * ny + rotation_a[2, 2] * nz
    size = _pair_size(half_a, half_b)
    bound = gap + EXACT * size
    if _vertex_over_face(half_a, half_b, t, r, lx, ly, lz) <= bound:
        return True
    # A in B's frame, the axis from B to A
    t_b = (-(r[0][0] * t[0] + r[1][0] * t[1] + r[2][0] * t[2]), -(r[0][1] * t[0] + r[1][1] * t[1] + r[2][1] * t[2]),
           -(r[0][2] * t[0] + r[1][2] * t[1] + r[2][2] * t[2]))
    r_b = ((r[0][0], r[1][0], r[2][0]), (r[0][1], r[1][1], r[2][1]), (r[0][2], r[1][2], r[2][2]))
    mx = -(r[0][0] * lx + r[1][0] * ly + r[2][0] * lz)
    my = -(r[0][1] * lx + r[1][1] * ly + r[2][1] * lz)
    mz = -(r[0][2] * lx + r[1][2] * ly + r[2][2] * lz)
    if _vertex_over_face(half_b, half_a, t_b, r_b, mx, my, mz) <= bound:
        return True
    return _crossing_edges(half_a, half_b, t, r, lx, ly, lz) <= bound
