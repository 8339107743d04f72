"""Contact patches: up to PATCH points where two convex shapes (or a shape and a plane) touch along a normal.

A single deepest point lets a box on a floor rock about it; engines keep a
patch of points instead (Box2D v3's manifolds, Jolt's supporting faces). Each
shape gives its supporting feature along a direction: a face polygon (a box or
hull face, a cylinder cap as an octagon turned to the support point), a
segment (a cylinder's side, a capsule's axis) or one point (ellipsoids,
superellipsoids, a rim). Two polygons clip one against the other
(Sutherland-Hodgman, against the side planes of the clipping feature's
edges); a segment clips against a polygon; two segments side by side give
the ends of their common stretch; any other pair of features (a point
against anything, two crossing segments, two faces that meet only at their
rims) gives the one point where they meet. Each clipped point's depth is its
gap along the normal to the other face's plane. Points whose depth is within
the reach are kept, and more than PATCH are reduced as engines do: the
deepest, the farthest from it, the one spanning the largest triangle with
them, and the one that adds most area outside that triangle. The points are
listed by angle about their centroid from a body axis, so a resting patch
keeps its order (and its warm-started impulses) from substep to substep.
"""
import numpy as np
from numba import njit

from ..math3d import JIT, mat_t_vec
from ..shapes.support import BOX, CAPSULE, CYLINDER, HULL, SUPERELLIPSOID, support_xyz

PATCH = 4          # contact points per pair at most
MAX_FEATURE = 16   # corners of a supporting feature at most (a hull face with more is subsampled)
CAP_CORNERS = 8    # a cylinder cap's polygon
# tan of the angle between n and rounded_corners' four directions: about 3 degrees reaches half way out a
# (0.4, 0.4) superellipsoid's face, 0.9% of its size above its lowest point (0.7 of the way at exponents 0.2)
TILT = 0.05
# a hull vertex within this fraction of the shape's size of the chosen face's plane belongs to the face
FACE_TOLERANCE = 1e-6
# of a hull's size: how far below its support vertex along a direction a corner still counts as its top (a
# face holding a top edge then wins over one that only touches it at the vertex)
TOP_BAND = 0.01
# _swinging_corner's allowance over a rigid turn about the deepest corner: the spin grows within a substep
# (14 to 16.5 rad/s in the traced pebble) and the body need not turn about that corner
TURN_SAFETY = 2.0


@njit(**JIT, inline="always")
def _to_world(position, rotation, x, y, z, out, k):
    for r in range(3):
        out[k, r] = position[r] + rotation[r, 0] * x + rotation[r, 1] * y + rotation[r, 2] * z


@njit(**JIT, inline="always")
def _face_normal(vertices, a, b, c):
    """(b - a) x (c - a): the outward normal of a counter-clockwise triangle, times twice its area."""
    ux, uy, uz = vertices[b, 0] - vertices[a, 0], vertices[b, 1] - vertices[a, 1], vertices[b, 2] - vertices[a, 2]
    vx, vy, vz = vertices[c, 0] - vertices[a, 0], vertices[c, 1] - vertices[a, 1], vertices[c, 2] - vertices[a, 2]
    return uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx


@njit(**JIT, inline="always")
def _cross_along(nx, ny, nz, ux, uy, uz, vx, vy, vz):
    """n . (u x v): twice the signed area of the triangle (0, u, v) seen along n."""
    return nx * (uy * vz - uz * vy) + ny * (uz * vx - ux * vz) + nz * (ux * vy - uy * vx)


@njit(**JIT, inline="always")
def _pseudo_angle(x, y):
    """A strictly increasing function of atan2(y, x) on (-pi, pi], in (-2, 2]: orders directions as the angle does,
    without its cost (a sixth of a box pair's patch)."""
    r = abs(x) + abs(y)
    if r == 0.0:
        return 0.0
    turn = 1.0 - x / r
    return turn if y >= 0.0 else -turn


@njit(**JIT, inline="always")
def _insert_by_angle(angles, items, count, angle, item):
    """Insert item, at angle, into items[:count] kept in increasing angles[:count] (a step of an insertion sort;
    items[count] and angles[count] may be overwritten)."""
    k = count
    while k > 0 and angles[k - 1] > angle:
        angles[k] = angles[k - 1]
        items[k] = items[k - 1]
        k -= 1
    angles[k] = angle
    items[k] = item


@njit(**JIT)
def _hull_face(params, hull_vertices, hull_faces, dx, dy, dz, local):
    """Corners of the hull face that holds the most of the hull's top along the local direction d (the
    support vertex and the corners within TOP_BAND of it), the one whose outward normal is nearest d among
    those, in angle order.

    The face nearest d over the whole hull need not hold the support vertex: on 24-point pebbles it missed
    it for 0.7% of directions, with the vertex up to 5 mm further out, and the patch then left out the
    deepest point (pebbles sank 3 mm into the floor). Nor need the nearest of the faces at the support
    vertex hold a top edge: two pebbles edge to edge then lost the point where the edges cross. Returns the
    count of corners (at most MAX_FEATURE: a larger face keeps every k-th corner, counted from the support
    vertex).
    """
    first_vertex, count = int(params[0]), int(params[1])
    first_face, face_count = int(params[2]), int(params[3])
    top, top_value, size = first_vertex, -np.inf, 0.0
    for v in range(first_vertex, first_vertex + count):
        value = hull_vertices[v, 0] * dx + hull_vertices[v, 1] * dy + hull_vertices[v, 2] * dz
        if value > top_value:
            top, top_value = v, value
        size = max(size, abs(hull_vertices[v, 0]) + abs(hull_vertices[v, 1]) + abs(hull_vertices[v, 2]))
    band = top_value - TOP_BAND * size * np.sqrt(dx * dx + dy * dy + dz * dz)
    best, best_held, best_cos = first_face, 0, -np.inf
    for f in range(first_face, first_face + face_count):
        a, b, c = hull_faces[f, 0], hull_faces[f, 1], hull_faces[f, 2]
        if a != top and b != top and c != top:
            continue
        held = 0
        for v in (a, b, c):
            held += hull_vertices[v, 0] * dx + hull_vertices[v, 1] * dy + hull_vertices[v, 2] * dz >= band
        nx, ny, nz = _face_normal(hull_vertices, a, b, c)
        norm = np.sqrt(nx * nx + ny * ny + nz * nz)
        cosine = (nx * dx + ny * dy + nz * dz) / norm if norm > 0.0 else -np.inf
        if held > best_held or (held == best_held and cosine > best_cos):
            best, best_held, best_cos = f, held, cosine
    a, b, c = hull_faces[best, 0], hull_faces[best, 1], hull_faces[best, 2]
    nx, ny, nz = _face_normal(hull_vertices, a, b, c)
    norm = np.sqrt(nx * nx + ny * ny + nz * nz)
    nx, ny, nz = nx / norm, ny / norm, nz / norm
    offset = nx * hull_vertices[a, 0] + ny * hull_vertices[a, 1] + nz * hull_vertices[a, 2]
    members = np.empty(count, dtype=np.int64)
    found = 0
    for v in range(first_vertex, first_vertex + count):
        if abs(nx * hull_vertices[v, 0] + ny * hull_vertices[v, 1] + nz * hull_vertices[v, 2] - offset) \
                <= FACE_TOLERANCE * size:
            members[found] = v
            found += 1
    # order by angle about their centroid in the face plane
    cx, cy, cz = 0.0, 0.0, 0.0
    for m in range(found):
        cx += hull_vertices[members[m], 0] / found
        cy += hull_vertices[members[m], 1] / found
        cz += hull_vertices[members[m], 2] / found
    ex = hull_vertices[b, 0] - hull_vertices[a, 0]
    ey = hull_vertices[b, 1] - hull_vertices[a, 1]
    ez = hull_vertices[b, 2] - hull_vertices[a, 2]
    length = np.sqrt(ex * ex + ey * ey + ez * ez)
    ex, ey, ez = ex / length, ey / length, ez / length
    fx, fy, fz = ny * ez - nz * ey, nz * ex - nx * ez, nx * ey - ny * ex
    # members sorted in place by angle (an insertion sort: faces have a few corners)
    angles = np.empty(found)
    for m in range(found):
        v = members[m]
        px = hull_vertices[v, 0] - cx
        py = hull_vertices[v, 1] - cy
        pz = hull_vertices[v, 2] - cz
        _insert_by_angle(angles, members, m, _pseudo_angle(px * ex + py * ey + pz * ez, px * fx + py * fy + pz * fz),
                         v)
    stride = 1 if found <= MAX_FEATURE else (found + MAX_FEATURE - 1) // MAX_FEATURE
    start = 0
    for m in range(found):
        if members[m] == top:
            start = m % stride
    kept = 0
    for m in range(start, found, stride):
        v = members[m]
        local[kept, 0] = hull_vertices[v, 0]
        local[kept, 1] = hull_vertices[v, 1]
        local[kept, 2] = hull_vertices[v, 2]
        kept += 1
    return kept


@njit(**JIT, inline="always")
def _box_face(params, position, rotation, dx, dy, dz, out):
    """World corners of the box face whose normal is nearest the local direction d, in order around it."""
    hx, hy, hz = params[0], params[1], params[2]
    ax, ay, az = abs(dx), abs(dy), abs(dz)
    if az >= ax and az >= ay:
        z = hz if dz >= 0.0 else -hz
        _to_world(position, rotation, hx, hy, z, out, 0)
        _to_world(position, rotation, -hx, hy, z, out, 1)
        _to_world(position, rotation, -hx, -hy, z, out, 2)
        _to_world(position, rotation, hx, -hy, z, out, 3)
    elif ay >= ax:
        y = hy if dy >= 0.0 else -hy
        _to_world(position, rotation, hx, y, hz, out, 0)
        _to_world(position, rotation, -hx, y, hz, out, 1)
        _to_world(position, rotation, -hx, y, -hz, out, 2)
        _to_world(position, rotation, hx, y, -hz, out, 3)
    else:
        x = hx if dx >= 0.0 else -hx
        _to_world(position, rotation, x, hy, hz, out, 0)
        _to_world(position, rotation, x, -hy, hz, out, 1)
        _to_world(position, rotation, x, -hy, -hz, out, 2)
        _to_world(position, rotation, x, hy, -hz, out, 3)


@njit(**JIT)
def supporting_feature(kind, params, hull_vertices, hull_faces, position, rotation, nx, ny, nz, out, local):
    """World corners of the shape's supporting feature along the world direction n into out; their count.

    A face gives its corners in order around it, a segment its two ends, a smooth shape its support point.
    ``local`` is (MAX_FEATURE, 3) scratch.
    """
    dx, dy, dz = mat_t_vec(rotation, nx, ny, nz)
    if kind == BOX:
        _box_face(params, position, rotation, dx, dy, dz, out)
        return 4
    if kind == CYLINDER:
        radius, half_height = params[0], params[1]
        across = np.sqrt(dx * dx + dy * dy)
        if abs(dz) >= across:
            # the cap: an octagon turned so that one corner is the support point on the rim
            z = half_height if dz >= 0.0 else -half_height
            start = np.arctan2(dy, dx) if across > 0.0 else 0.0
            for k in range(CAP_CORNERS):
                angle = start + 2.0 * np.pi * k / CAP_CORNERS
                _to_world(position, rotation, radius * np.cos(angle), radius * np.sin(angle), z, out, k)
            return CAP_CORNERS
        ux, uy = radius * dx / across, radius * dy / across
        _to_world(position, rotation, ux, uy, half_height, out, 0)
        _to_world(position, rotation, ux, uy, -half_height, out, 1)
        return 2
    if kind == CAPSULE:
        radius, half_height = params[0], params[1]
        norm = np.sqrt(dx * dx + dy * dy + dz * dz)
        ux, uy, uz = radius * dx / norm, radius * dy / norm, radius * dz / norm
        _to_world(position, rotation, ux, uy, uz + half_height, out, 0)
        _to_world(position, rotation, ux, uy, uz - half_height, out, 1)
        return 2
    if kind == HULL:
        count = _hull_face(params, hull_vertices, hull_faces, dx, dy, dz, local)
        for k in range(count):
            _to_world(position, rotation, local[k, 0], local[k, 1], local[k, 2], out, k)
        return count
    x, y, z = support_xyz(kind, params, hull_vertices, dx, dy, dz)
    _to_world(position, rotation, x, y, z, out, 0)
    return 1


@njit(**JIT, inline="always")
def _centroid(polygon, count):
    cx, cy, cz = 0.0, 0.0, 0.0
    for k in range(count):
        cx += polygon[k, 0] / count
        cy += polygon[k, 1] / count
        cz += polygon[k, 2] / count
    return cx, cy, cz


@njit(**JIT, inline="always")
def _side_plane(clipper, clip_count, e, cx, cy, cz, nx, ny, nz):
    """Side plane of edge e of the clipper polygon: a point on it and its normal m (along n x edge), which
    points to the centroid c, the inside."""
    ax, ay, az = clipper[e, 0], clipper[e, 1], clipper[e, 2]
    f = (e + 1) % clip_count
    ex, ey, ez = clipper[f, 0] - ax, clipper[f, 1] - ay, clipper[f, 2] - az
    mx, my, mz = ny * ez - nz * ey, nz * ex - nx * ez, nx * ey - ny * ex
    if mx * (cx - ax) + my * (cy - ay) + mz * (cz - az) < 0.0:
        mx, my, mz = -mx, -my, -mz
    return ax, ay, az, mx, my, mz


@njit(**JIT)
def rounded_corners(kind, params, hull_vertices, position, rotation, nx, ny, nz, out):
    """A boxy superellipsoid's support point along n and its support points along four directions
    tilted from n (by atan TILT, along the diagonals of two body axes): 5 world points into out.

    Its flat faces meet a plane in a patch, not a point (a rounded box landing on one edge slams its
    face down within a substep); these points stand for that patch.
    """
    dx, dy, dz = mat_t_vec(rotation, nx, ny, nz)
    x, y, z = support_xyz(kind, params, hull_vertices, dx, dy, dz)
    _to_world(position, rotation, x, y, z, out, 0)
    # the two body axes most across d, made perpendicular to it
    ax = abs(dx)
    ay = abs(dy)
    az = abs(dz)
    ux, uy, uz = (1.0, 0.0, 0.0) if (ax <= ay or ax <= az) else (0.0, 1.0, 0.0)
    if az < ax and az < ay:
        ux, uy, uz = 0.0, 0.0, 1.0
    along = ux * dx + uy * dy + uz * dz
    ux, uy, uz = ux - along * dx, uy - along * dy, uz - along * dz
    length = np.sqrt(ux * ux + uy * uy + uz * uz)
    ux, uy, uz = ux / length, uy / length, uz / length
    wx, wy, wz = dy * uz - dz * uy, dz * ux - dx * uz, dx * uy - dy * ux
    for k in range(4):
        su = TILT * (1.0 if k == 0 or k == 3 else -1.0)
        sw = TILT * (1.0 if k < 2 else -1.0)
        x, y, z = support_xyz(kind, params, hull_vertices, dx + su * ux + sw * wx, dy + su * uy + sw * wy,
                              dz + su * uz + sw * wz)
        _to_world(position, rotation, x, y, z, out, k + 1)
    return 5


@njit(**JIT)
def _clip_polygon(subject, count, clipper, clip_count, nx, ny, nz, work, out):
    """subject (count >= 3 corners) clipped to the prism of the clipper's polygon along n; count of out.

    Each clipper edge's side plane contains the edge and n; the clipper's centroid marks its inside.
    """
    cx, cy, cz = _centroid(clipper, clip_count)
    for k in range(count):
        for r in range(3):
            out[k, r] = subject[k, r]
    n_out = count
    for e in range(clip_count):
        if n_out == 0:
            break
        ax, ay, az, mx, my, mz = _side_plane(clipper, clip_count, e, cx, cy, cz, nx, ny, nz)
        for k in range(n_out):
            for r in range(3):
                work[k, r] = out[k, r]
        n_in = n_out
        n_out = 0
        for k in range(n_in):
            l = (k + 1) % n_in
            sk = mx * (work[k, 0] - ax) + my * (work[k, 1] - ay) + mz * (work[k, 2] - az)
            sl = mx * (work[l, 0] - ax) + my * (work[l, 1] - ay) + mz * (work[l, 2] - az)
            if sk >= 0.0:
                for r in range(3):
                    out[n_out, r] = work[k, r]
                n_out += 1
            if (sk >= 0.0) != (sl >= 0.0):
                t = sk / (sk - sl)
                for r in range(3):
                    out[n_out, r] = work[k, r] + t * (work[l, r] - work[k, r])
                n_out += 1
    return n_out


@njit(**JIT)
def _clip_segment(segment, clipper, clip_count, nx, ny, nz, out):
    """The part of a segment inside the prism of the clipper's polygon along n: 0 or 2 points in out."""
    cx, cy, cz = _centroid(clipper, clip_count)
    t0, t1 = 0.0, 1.0
    for e in range(clip_count):
        ax, ay, az, mx, my, mz = _side_plane(clipper, clip_count, e, cx, cy, cz, nx, ny, nz)
        s0 = mx * (segment[0, 0] - ax) + my * (segment[0, 1] - ay) + mz * (segment[0, 2] - az)
        s1 = mx * (segment[1, 0] - ax) + my * (segment[1, 1] - ay) + mz * (segment[1, 2] - az)
        if s0 < 0.0 and s1 < 0.0:
            return 0
        if s0 < 0.0:
            t0 = max(t0, s0 / (s0 - s1))
        elif s1 < 0.0:
            t1 = min(t1, s0 / (s0 - s1))
    if t0 > t1:
        return 0
    for r in range(3):
        out[0, r] = segment[0, r] + t0 * (segment[1, r] - segment[0, r])
        out[1, r] = segment[0, r] + t1 * (segment[1, r] - segment[0, r])
    return 2


@njit(**JIT)
def reduce_patch(points, depth, count, nx, ny, nz, keep):
    """Indices (into keep) of at most PATCH of the points that span the patch; their count."""
    if count <= PATCH:
        for k in range(count):
            keep[k] = k
        return count
    first = 0
    for k in range(count):
        if depth[k] > depth[first]:
            first = k
    second, best = first, -1.0
    for k in range(count):
        d = ((points[k, 0] - points[first, 0]) ** 2 + (points[k, 1] - points[first, 1]) ** 2
             + (points[k, 2] - points[first, 2]) ** 2)
        if d > best:
            second, best = k, d
    ux, uy, uz = points[second, 0] - points[first, 0], points[second, 1] - points[first, 1], \
        points[second, 2] - points[first, 2]
    third, best = first, -1.0
    for k in range(count):
        area = abs(_cross_along(nx, ny, nz, ux, uy, uz, points[k, 0] - points[first, 0],
                                points[k, 1] - points[first, 1], points[k, 2] - points[first, 2]))
        if area > best:
            third, best = k, area
    # the triangle counter-clockwise about n; the fourth point lies farthest outside one of its edges
    c1, c2 = second, third
    if _cross_along(nx, ny, nz, ux, uy, uz, points[third, 0] - points[first, 0], points[third, 1] - points[first, 1],
                    points[third, 2] - points[first, 2]) < 0.0:
        c1, c2 = third, second
    fourth, best = -1, 0.0
    for k in range(count):
        outside = 0.0
        for e in range(3):
            a = first if e == 0 else (c1 if e == 1 else c2)
            b = c1 if e == 0 else (c2 if e == 1 else first)
            outside = max(outside, -_cross_along(
                nx, ny, nz, points[b, 0] - points[a, 0], points[b, 1] - points[a, 1], points[b, 2] - points[a, 2],
                points[k, 0] - points[a, 0], points[k, 1] - points[a, 1], points[k, 2] - points[a, 2]))
        if outside > best:
            fourth, best = k, outside
    kept = 0
    for k in range(count):
        if k == first or k == second or k == third or k == fourth:
            keep[kept] = k
            kept += 1
    return kept


@njit(**JIT)
def _order_around(points, keep, count, nx, ny, nz, rotation, angles):
    """Sort keep[:count] by angle about the points' centroid, from the body axis most across n.

    A resting patch then lists its points in the same order every substep, whichever clipped
    points stand for its corners, and each keeps its warm-started impulse. ``angles``: count floats
    of scratch (an insertion sort of at most PATCH points, without allocating).
    """
    if count < 3:
        return
    best, ex, ey, ez = -1.0, 0.0, 0.0, 0.0
    for k in range(3):
        ax, ay, az = rotation[0, k], rotation[1, k], rotation[2, k]
        along = ax * nx + ay * ny + az * nz
        ax, ay, az = ax - along * nx, ay - along * ny, az - along * nz
        length = ax * ax + ay * ay + az * az
        if length > best:
            best, ex, ey, ez = length, ax, ay, az
    fx, fy, fz = ny * ez - nz * ey, nz * ex - nx * ez, nx * ey - ny * ex
    cx, cy, cz = 0.0, 0.0, 0.0
    for k in range(count):
        cx += points[keep[k], 0] / count
        cy += points[keep[k], 1] / count
        cz += points[keep[k], 2] / count
    for k in range(count):
        px, py, pz = points[keep[k], 0] - cx, points[keep[k], 1] - cy, points[keep[k], 2] - cz
        _insert_by_angle(angles, keep, k, _pseudo_angle(px * ex + py * ey + pz * ez, px * fx + py * fy + pz * fz),
                         keep[k])


@njit(**JIT)
def finish_patch(points, depth, count, nx, ny, nz, rotation, keep, out):
    """The patch's points, reduced to PATCH and put in angle order, into out (x, y, z, depth); their count."""
    chosen = reduce_patch(points, depth, count, nx, ny, nz, keep)
    _order_around(points, keep, chosen, nx, ny, nz, rotation, out[:, 3])
    for k in range(chosen):
        for r in range(3):
            out[k, r] = points[keep[k], r]
        out[k, 3] = depth[keep[k]]
    return chosen


@njit(**JIT)
def _pair_feature(kind, params, hull_vertices, hull_faces, position, rotation, nx, ny, nz, out, local):
    """The feature a pair clips with along n: (its corner count, the shape's support height along n, whether it
    is a boxy superellipsoid's). Such a shape's feature is the quadrilateral of rounded_corners' four tilted
    supports, and its own support point waits in out[MAX_FEATURE - 1]."""
    if kind == SUPERELLIPSOID and min(params[3], params[4]) < 1.0:
        rounded_corners(kind, params, hull_vertices, position, rotation, nx, ny, nz, local)
        for r in range(3):  # element by element, as in _clip_polygon
            for k in range(4):
                out[k, r] = local[k + 1, r]
            out[MAX_FEATURE - 1, r] = local[0, r]
        return 4, nx * local[0, 0] + ny * local[0, 1] + nz * local[0, 2], True
    if kind == BOX:
        # the common case without the general call (its seven array arguments cost more than the corners)
        dx, dy, dz = mat_t_vec(rotation, nx, ny, nz)
        _box_face(params, position, rotation, dx, dy, dz, out)
        count = 4
    else:
        count = supporting_feature(kind, params, hull_vertices, hull_faces, position, rotation, nx, ny, nz, out,
                                   local)
    height = -np.inf
    for k in range(count):
        height = max(height, nx * out[k, 0] + ny * out[k, 1] + nz * out[k, 2])
    return count, height, False


@njit(**JIT)
def _segments_meet(segment_a, segment_b, nx, ny, nz):
    """Where two segments come nearest seen along n: (s, t), the fractions along each.

    The segments' points have each one height along n (a supporting feature's do), so this is the
    nearest pair of two segments in the plane across n: where they cross, or an end and its nearest point.
    """
    # the segments' directions and the offset between their starts, with their parts along n removed
    ux, uy, uz = segment_a[1, 0] - segment_a[0, 0], segment_a[1, 1] - segment_a[0, 1], segment_a[1, 2] - segment_a[0, 2]
    vx, vy, vz = segment_b[1, 0] - segment_b[0, 0], segment_b[1, 1] - segment_b[0, 1], segment_b[1, 2] - segment_b[0, 2]
    wx, wy, wz = segment_a[0, 0] - segment_b[0, 0], segment_a[0, 1] - segment_b[0, 1], segment_a[0, 2] - segment_b[0, 2]
    along = ux * nx + uy * ny + uz * nz
    ux, uy, uz = ux - along * nx, uy - along * ny, uz - along * nz
    along = vx * nx + vy * ny + vz * nz
    vx, vy, vz = vx - along * nx, vy - along * ny, vz - along * nz
    along = wx * nx + wy * ny + wz * nz
    wx, wy, wz = wx - along * nx, wy - along * ny, wz - along * nz
    a, b, c = ux * ux + uy * uy + uz * uz, ux * vx + uy * vy + uz * vz, vx * vx + vy * vy + vz * vz
    d, e = ux * wx + uy * wy + uz * wz, vx * wx + vy * wy + vz * wz
    # the nearest points of two segments (Ericson, Real-Time Collision Detection 5.1.9)
    if a <= 1e-300 and c <= 1e-300:
        return 0.0, 0.0
    if a <= 1e-300:
        return 0.0, min(max(e / c, 0.0), 1.0)
    if c <= 1e-300:
        return min(max(-d / a, 0.0), 1.0), 0.0
    denominator = a * c - b * b
    s = min(max((b * e - c * d) / denominator, 0.0), 1.0) if denominator > 1e-12 * a * c else 0.5
    t = (b * s + e) / c
    if t < 0.0:
        t, s = 0.0, min(max(-d / a, 0.0), 1.0)
    elif t > 1.0:
        t, s = 1.0, min(max((b - d) / a, 0.0), 1.0)
    return s, t


@njit(**JIT)
def _side_by_side(segment_a, segment_b, nx, ny, nz, reach, out):
    """Two segments lying side by side seen along n (two capsules or cylinders' sides parallel): the ends of
    their common stretch as two points, out[k] = (x, y, z, depth), each with its own depth; 0 where they cross
    or part further than the reach over that stretch (then they meet in one point).

    One point would let a capsule lying along another turn freely about the normal; two hold it as a line
    contact does.
    """
    ux, uy, uz = segment_a[1, 0] - segment_a[0, 0], segment_a[1, 1] - segment_a[0, 1], segment_a[1, 2] - segment_a[0, 2]
    along = ux * nx + uy * ny + uz * nz
    ux, uy, uz = ux - along * nx, uy - along * ny, uz - along * nz
    length2 = ux * ux + uy * uy + uz * uz
    if length2 <= 1e-300:
        return 0
    # b's ends as fractions along a, seen along n
    t0 = ((segment_b[0, 0] - segment_a[0, 0]) * ux + (segment_b[0, 1] - segment_a[0, 1]) * uy
          + (segment_b[0, 2] - segment_a[0, 2]) * uz) / length2
    t1 = ((segment_b[1, 0] - segment_a[0, 0]) * ux + (segment_b[1, 1] - segment_a[0, 1]) * uy
          + (segment_b[1, 2] - segment_a[0, 2]) * uz) / length2
    if abs(t1 - t0) <= 1e-9:
        return 0  # b is across a: they meet in a point
    lo, hi = max(0.0, min(t0, t1)), min(1.0, max(t0, t1))
    if hi - lo <= 1e-6:
        return 0
    for k in range(2):
        u = lo if k == 0 else hi
        v = (u - t0) / (t1 - t0)  # the point of b seen at the same place along a
        ax, ay, az = (segment_a[0, 0] + u * (segment_a[1, 0] - segment_a[0, 0]),
                      segment_a[0, 1] + u * (segment_a[1, 1] - segment_a[0, 1]),
                      segment_a[0, 2] + u * (segment_a[1, 2] - segment_a[0, 2]))
        bx, by, bz = (segment_b[0, 0] + v * (segment_b[1, 0] - segment_b[0, 0]),
                      segment_b[0, 1] + v * (segment_b[1, 1] - segment_b[0, 1]),
                      segment_b[0, 2] + v * (segment_b[1, 2] - segment_b[0, 2]))
        depth = (ax - bx) * nx + (ay - by) * ny + (az - bz) * nz  # A reaches up to a, B down to b
        wx, wy, wz = bx - ax + depth * nx, by - ay + depth * ny, bz - az + depth * nz  # across n
        if depth <= -reach or wx * wx + wy * wy + wz * wz > reach * reach:
            return 0
        out[k, 0], out[k, 1], out[k, 2], out[k, 3] = 0.5 * (ax + bx), 0.5 * (ay + by), 0.5 * (az + bz), depth
    return 2


@njit(**JIT)
def _nearest_edges(feature_a, count_a, feature_b, count_b, nx, ny, nz, out):
    """out[0:3] = the midpoint of the nearest pair of points on the two features' outlines, seen along n (two
    polygons that meet only at their rims, as two boxes edge to edge, whose clip is empty)."""
    best = np.inf
    segment_a, segment_b = np.empty((2, 3)), np.empty((2, 3))
    for i in range(count_a):
        segment_a[0, :], segment_a[1, :] = feature_a[i, :], feature_a[(i + 1) % count_a, :]
        for j in range(count_b):
            segment_b[0, :], segment_b[1, :] = feature_b[j, :], feature_b[(j + 1) % count_b, :]
            s, t = _segments_meet(segment_a, segment_b, nx, ny, nz)
            ax = segment_a[0, 0] + s * (segment_a[1, 0] - segment_a[0, 0])
            ay = segment_a[0, 1] + s * (segment_a[1, 1] - segment_a[0, 1])
            az = segment_a[0, 2] + s * (segment_a[1, 2] - segment_a[0, 2])
            bx = segment_b[0, 0] + t * (segment_b[1, 0] - segment_b[0, 0])
            by = segment_b[0, 1] + t * (segment_b[1, 1] - segment_b[0, 1])
            bz = segment_b[0, 2] + t * (segment_b[1, 2] - segment_b[0, 2])
            dx, dy, dz = bx - ax, by - ay, bz - az
            along = dx * nx + dy * ny + dz * nz
            across = (dx - along * nx) ** 2 + (dy - along * ny) ** 2 + (dz - along * nz) ** 2
            if across < best:
                best = across
                out[0], out[1], out[2] = 0.5 * (ax + bx), 0.5 * (ay + by), 0.5 * (az + bz)


@njit(**JIT)
def _face_plane(feature, count, nx, ny, nz):
    """A face feature's plane: its centroid, unit normal m turned along n, and m . n; m . n = 0 where the
    feature is not a face or too steep to measure along n by (its normal more than about 84 degrees from n)."""
    cx, cy, cz = _centroid(feature, count)
    mx, my, mz = 0.0, 0.0, 0.0
    if count >= 3:
        # Newell's normal: exact for a planar polygon, the best fit for a nearly planar one
        for k in range(count):
            l = (k + 1) % count
            mx += (feature[k, 1] - feature[l, 1]) * (feature[k, 2] + feature[l, 2])
            my += (feature[k, 2] - feature[l, 2]) * (feature[k, 0] + feature[l, 0])
            mz += (feature[k, 0] - feature[l, 0]) * (feature[k, 1] + feature[l, 1])
    norm = np.sqrt(mx * mx + my * my + mz * mz)
    if norm == 0.0:
        return cx, cy, cz, 0.0, 0.0, 0.0, 0.0
    mx, my, mz = mx / norm, my / norm, mz / norm
    facing = mx * nx + my * ny + mz * nz
    if facing < 0.0:
        mx, my, mz, facing = -mx, -my, -mz, -facing
    if facing < 0.1:
        return cx, cy, cz, 0.0, 0.0, 0.0, 0.0
    return cx, cy, cz, mx, my, mz, facing


@njit(**JIT)
def pair_patch(kinds, params, hull_vertices, hull_faces, positions, rotations, nx, ny, nz, reach, scratch, out):
    """Patch of shapes 0 (A) and 1 (B) of a pair along the unit normal n from A to B; count of points.

    out[k] = (x, y, z, depth): the midpoint between the surfaces and the overlap there (positive:
    overlapping), only points with depth > -reach. Features that make no patch (a point meets
    anything, two segments, two faces meeting only at their rims) give the one point where they meet.
    scratch: new_patch_scratch().
    """
    feature_a, feature_b, local, clipped, work, depth, keep = scratch
    count_a, height_a, round_a = _pair_feature(kinds[0], params[0], hull_vertices, hull_faces, positions[0],
                                               rotations[0], nx, ny, nz, feature_a, local)
    count_b, height_b, round_b = _pair_feature(kinds[1], params[1], hull_vertices, hull_faces, positions[1],
                                               rotations[1], -nx, -ny, -nz, feature_b, local)
    height_b = -height_b  # B reaches down to height_b along n, A up to height_a
    if count_a == 2 and count_b == 2:
        count = _side_by_side(feature_a, feature_b, nx, ny, nz, reach, out)
        if count > 0:
            return count
    if count_a < 2 or count_b < 2 or (count_a == 2 and count_b == 2):
        overlap = height_a - height_b
        if overlap <= -reach:
            return 0
        # where they meet: a point feature's own point, or where two segments cross seen along n; then
        # moved along n half way between the surfaces
        if count_a == 1 or count_b == 1:
            on_a = count_a == 1
            feature = feature_a if on_a else feature_b
            shift = -0.5 * overlap if on_a else 0.5 * overlap
            for r in range(3):
                out[0, r] = feature[0, r] + shift * (nx if r == 0 else (ny if r == 1 else nz))
        else:
            s, t = _segments_meet(feature_a, feature_b, nx, ny, nz)
            for r in range(3):
                a = feature_a[0, r] + s * (feature_a[1, r] - feature_a[0, r])
                b = feature_b[0, r] + t * (feature_b[1, r] - feature_b[0, r])
                # their midpoint lies half way between the two heights along n already
                out[0, r] = 0.5 * (a + b)
        out[0, 3] = overlap
        return 1
    on_b = True  # whether the clipped points lie on B (else on A)
    if count_b >= 3 and count_a >= 3:
        count = _clip_polygon(feature_b, count_b, feature_a, count_a, nx, ny, nz, work, clipped)
    elif count_b == 2:
        count = _clip_segment(feature_b, feature_a, count_a, nx, ny, nz, clipped)
    else:
        count = _clip_segment(feature_a, feature_b, count_b, nx, ny, nz, clipped)
        on_b = False
    # each point's own depth: its gap along n to the other side's face plane, where that is a flat face (a
    # rounded face's four tilted supports lie below its surface; there its support height stays). One depth for
    # all, the other face's highest corner, held a level box up on the edge of a tilted one and froze piles of
    # boxes half a second early (docs/shapes.md, contact patches)
    ox, oy, oz, mx, my, mz, facing = _face_plane(feature_a if on_b else feature_b, count_a if on_b else count_b,
                                                  nx, ny, nz)
    if round_a if on_b else round_b:
        facing = 0.0
    kept = 0
    for k in range(count):
        height = nx * clipped[k, 0] + ny * clipped[k, 1] + nz * clipped[k, 2]
        overlap = height_a - height if on_b else height - height_b
        if facing > 0.0:
            # t along n from the point to the other face's plane: positive where that surface lies beyond it
            t = (mx * (ox - clipped[k, 0]) + my * (oy - clipped[k, 1]) + mz * (oz - clipped[k, 2])) / facing
            overlap = t if on_b else -t
        if overlap > -reach:
            shift = 0.5 * overlap if on_b else -0.5 * overlap
            clipped[kept, 0] = clipped[k, 0] + shift * nx
            clipped[kept, 1] = clipped[k, 1] + shift * ny
            clipped[kept, 2] = clipped[k, 2] + shift * nz
            depth[kept] = overlap
            kept += 1
    # a rounded face's own support point, where it reaches furthest: at the full depth
    for side in range(2):
        if (round_a if side == 0 else round_b) and kept > 0:
            feature = feature_a if side == 0 else feature_b
            overlap = height_a - height_b
            shift = -0.5 * overlap if side == 0 else 0.5 * overlap
            for r in range(3):
                clipped[kept, r] = feature[MAX_FEATURE - 1, r] + shift * (nx if r == 0 else (ny if r == 1 else nz))
            depth[kept] = overlap
            kept += 1
    if kept == 0 and height_a - height_b > -reach:
        # the features touch only at their outlines (an edge across an edge): the nearest points there
        _nearest_edges(feature_a, count_a, feature_b, count_b, nx, ny, nz, out[0])
        out[0, 3] = height_a - height_b
        return 1
    return finish_patch(clipped, depth, kept, nx, ny, nz, rotations[0], keep, out)


@njit(**JIT)
def plane_patch(kind, params, hull_vertices, hull_faces, position, rotation, px, py, pz, nx, ny, nz, reach, turn,
                scratch, out):
    """Patch of a shape on the plane through p with unit normal n (into free space); count of points.

    out[k] = (x, y, z, depth) as for pair_patch. Every corner of the shape's supporting feature along -n
    within the reach of the plane counts; a boxy superellipsoid (an exponent below 1) offers its support
    point and four around it (rounded_corners). A box or hull turning by ``turn`` radians this substep also
    offers the corner that turn brings nearest (_swinging_corner).
    """
    feature, _, local, points, _, depth, keep = scratch
    if kind == SUPERELLIPSOID and min(params[3], params[4]) < 1.0:
        count = rounded_corners(kind, params, hull_vertices, position, rotation, -nx, -ny, -nz, feature)
    else:
        count = supporting_feature(kind, params, hull_vertices, hull_faces, position, rotation, -nx, -ny, -nz,
                                   feature, local)
    kept = 0
    for k in range(count):
        overlap = -(nx * (feature[k, 0] - px) + ny * (feature[k, 1] - py) + nz * (feature[k, 2] - pz))
        if overlap > -reach:
            points[kept, 0] = feature[k, 0] + 0.5 * overlap * nx
            points[kept, 1] = feature[k, 1] + 0.5 * overlap * ny
            points[kept, 2] = feature[k, 2] + 0.5 * overlap * nz
            depth[kept] = overlap
            kept += 1
    patch_count = finish_patch(points, depth, kept, nx, ny, nz, rotation, keep, out)
    if (kind == BOX or kind == HULL) and 0 < patch_count < PATCH and turn > 0.0:
        patch_count = _swinging_corner(kind, params, hull_vertices, position, rotation, px, py, pz, nx, ny, nz, reach,
                                       turn, feature, count, local, patch_count, out)
    return patch_count


@njit(**JIT)
def _swinging_corner(kind, params, hull_vertices, position, rotation, px, py, pz, nx, ny, nz, reach, turn, feature,
                     feature_count, corner, count, out):
    """Add to the patch out[:count] (count < PATCH) the box or hull corner off the supporting feature
    (feature[:feature_count]) that the body's turn this substep (radians) brings nearest the plane: within the
    reach, and above the patch's deepest point by less than TURN_SAFETY * turn times its distance from it; the
    one with the least of that allowance used. corner: scratch of one row at least. Returns the patch's count.

    The feature alone missed it: a pebble tumbling at 15 rad/s about its resting face swung a corner from
    1.4 mm above the floor to 1.6 mm below in one substep, with no contact to hold it. A body that does not
    turn gets none (a falling box's top corners lie within a fast body's reach). Only into a free slot: taking
    the shallowest point's slot from a box's four face corners raised the 1,000-box drop's peak overlap from
    2.6% to 6.5%.
    """
    deepest = 0
    for k in range(1, count):
        if out[k, 3] > out[deepest, 3]:
            deepest = k
    # the deepest corner itself (patch points lie halfway into the overlap)
    dx = out[deepest, 0] - 0.5 * out[deepest, 3] * nx
    dy = out[deepest, 1] - 0.5 * out[deepest, 3] * ny
    dz = out[deepest, 2] - 0.5 * out[deepest, 3] * nz
    if kind == BOX:
        first, corners = 0, 8
    else:
        first, corners = int(params[0]), int(params[1])
    best, bx, by, bz, b_overlap = 1.0, 0.0, 0.0, 0.0, 0.0
    for v in range(first, first + corners):
        if kind == BOX:
            x = params[0] if v & 1 else -params[0]
            y = params[1] if v & 2 else -params[1]
            z = params[2] if v & 4 else -params[2]
        else:
            x, y, z = hull_vertices[v, 0], hull_vertices[v, 1], hull_vertices[v, 2]
        _to_world(position, rotation, x, y, z, corner, 0)
        wx, wy, wz = corner[0, 0], corner[0, 1], corner[0, 2]
        overlap = -(nx * (wx - px) + ny * (wy - py) + nz * (wz - pz))
        if overlap <= -reach:
            continue
        # rounding, at the body's size: distinct corners lie much further apart (the deepest corner itself
        # sits within it of (dx, dy, dz), where the allowance is 0)
        tolerance = 1e-9 * (abs(x) + abs(y) + abs(z))
        lever = np.sqrt((wx - dx) ** 2 + (wy - dy) ** 2 + (wz - dz) ** 2)
        if lever <= tolerance:
            continue
        used = (out[deepest, 3] - overlap) / (TURN_SAFETY * turn * lever)
        if used >= best:
            continue
        on_feature = False
        for k in range(feature_count):
            if abs(feature[k, 0] - wx) + abs(feature[k, 1] - wy) + abs(feature[k, 2] - wz) <= tolerance:
                on_feature = True
                break
        if not on_feature:
            best, bx, by, bz, b_overlap = used, wx, wy, wz, overlap
    if best >= 1.0:
        return count
    out[count, 0] = bx + 0.5 * b_overlap * nx
    out[count, 1] = by + 0.5 * b_overlap * ny
    out[count, 2] = bz + 0.5 * b_overlap * nz
    out[count, 3] = b_overlap
    return count + 1


@njit(**JIT)
def new_patch_scratch():
    """Scratch for pair_patch and plane_patch: features, local corners, clipped points, depths, choices."""
    size = 2 * MAX_FEATURE + 2
    return (np.empty((MAX_FEATURE, 3)), np.empty((MAX_FEATURE, 3)), np.empty((MAX_FEATURE, 3)),
            np.empty((size, 3)), np.empty((size, 3)), np.empty(size), np.empty(PATCH, dtype=np.int64))
