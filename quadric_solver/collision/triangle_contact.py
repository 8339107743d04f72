"""Contact of a convex body with one triangle of a mesh collider: a patch along the face normal, or
one point at an active edge or corner.

The face first. The body's supporting feature along minus the triangle's front normal (a face,
a segment, a point; patches.py) is clipped to the triangle's prism, and its points within reach
of the triangle's plane touch the face. Where the clip cuts the feature at an edge, the cut
point counts only at an active edge (quadric_solver/mesh.py): across an inactive one the neighbour's
face goes on, and a box sliding over a finely triangulated floor keeps its four corners, as on
a plane, instead of gaining points (and bumps) at every seam. A corner of the feature that lies
on an inactive edge belongs to the lower-numbered of its two triangles.

Where no part of the feature lies over the face, the body may still touch the triangle's
boundary: GJK/EPA (convex_distance.py's contact_distance) between the body and the triangle gives
the gap and the normal, and the triangle's corners highest along the normal tell the feature (one
corner, or the two ends of an edge); the point is the feature's nearest to the body's support point. An active edge touches when the
normal points into that edge's own range of directions (between the two face normals at a
convex fold; any at the boundary), and the edge belongs to the lower-numbered triangle; an
active corner touches for the lowest-numbered triangle around it. An inactive feature never
touches: a face beside it does.

Only bodies whose centre is in front of the triangle's plane touch it (one-sided, like the box
containers' walls).
"""
import numpy as np
from numba import njit

from ..math3d import JIT
from ..shapes.support import HULL, PARAMS, SUPERELLIPSOID
from .convex_distance import contact_distance
from .gjk import support_posed
from .patches import MAX_FEATURE, PATCH, finish_patch, rounded_corners, supporting_feature

EDGE_TOLERANCE = 1e-9     # of the triangle's longest edge: a point this close to an edge is on it
SUPPORT_TOLERANCE = 1e-3  # of the same: corners this close to the highest along the normal share its feature
CLIPPED = 2 * MAX_FEATURE + 6  # points a clip can make: the feature's corners and two per edge


@njit(**JIT)
def new_triangle_scratch():
    """Scratch of triangle_patch: feature corners, local corners, clipped points and their tags, work
    copies, depths, choices; the distance query's kinds, params, positions and rotations."""
    rotations = np.zeros((2, 3, 3))
    for k in range(3):
        rotations[0, k, k] = 1.0
    return (np.empty((MAX_FEATURE, 3)), np.empty((MAX_FEATURE, 3)), np.empty((CLIPPED, 3)),
            np.empty(CLIPPED, dtype=np.int64), np.empty((CLIPPED, 3)), np.empty(CLIPPED, dtype=np.int64),
            np.empty(CLIPPED), np.empty(PATCH, dtype=np.int64),
            np.array([HULL, 0], dtype=np.int64), np.zeros((2, PARAMS)), np.empty((2, 3)), rotations)


@njit(**JIT, inline="always")
def _corner(meshes, hull_vertices, t, k):
    row = meshes.first_corner + 3 * t + k
    return (meshes.centre[t, 0] + hull_vertices[row, 0], meshes.centre[t, 1] + hull_vertices[row, 1],
            meshes.centre[t, 2] + hull_vertices[row, 2])


@njit(**JIT)
def _edge_planes(meshes, hull_vertices, t, planes):
    """planes[e] = (a, m): a corner of edge e (corners e, e + 1) and the unit normal of its side plane,
    which contains the edge and the face normal and faces the inside; returns the longest edge."""
    nx, ny, nz = meshes.normal[t, 0], meshes.normal[t, 1], meshes.normal[t, 2]
    longest = 0.0
    for e in range(3):
        ax, ay, az = _corner(meshes, hull_vertices, t, e)
        bx, by, bz = _corner(meshes, hull_vertices, t, (e + 1) % 3)
        ex, ey, ez = bx - ax, by - ay, bz - az
        length = np.sqrt(ex * ex + ey * ey + ez * ez)
        longest = max(longest, length)
        # counter-clockwise about n: the inside lies to the left of each edge, along n x e
        planes[e, 0], planes[e, 1], planes[e, 2] = ax, ay, az
        planes[e, 3] = (ny * ez - nz * ey) / length
        planes[e, 4] = (nz * ex - nx * ez) / length
        planes[e, 5] = (nx * ey - ny * ex) / length
    return longest


@njit(**JIT, inline="always")
def _side(planes, e, x, y, z):
    return planes[e, 3] * (x - planes[e, 0]) + planes[e, 4] * (y - planes[e, 1]) + planes[e, 5] * (z - planes[e, 2])


@njit(**JIT)
def _clip_to_triangle(points, tags, count, closed, planes, tolerance, work, work_tags):
    """Clip a polygon (closed, count >= 3) or a segment (count 2) to the triangle's prism, widened by
    ``tolerance``; points cut at edge e get tag e, the others keep theirs. Returns the new count."""
    for e in range(3):
        if count == 0:
            return 0
        for k in range(count):
            work[k, :] = points[k, :]
            work_tags[k] = tags[k]
        n_in = count
        count = 0
        last = n_in if closed else n_in - 1
        for k in range(n_in):
            sk = _side(planes, e, work[k, 0], work[k, 1], work[k, 2]) + tolerance
            if sk >= 0.0:
                points[count, :] = work[k, :]
                tags[count] = work_tags[k]
                count += 1
            if k >= last:
                continue
            l = (k + 1) % n_in
            sl = _side(planes, e, work[l, 0], work[l, 1], work[l, 2]) + tolerance
            if (sk >= 0.0) != (sl >= 0.0):
                f = sk / (sk - sl)
                for r in range(3):
                    points[count, r] = work[k, r] + f * (work[l, r] - work[k, r])
                tags[count] = e
                count += 1
        if not closed and count == 1:
            return 0  # a segment that only grazes the edge
    return count


@njit(**JIT)
def _face_patch(kind, params, hull_vertices, hull_faces, position, rotation, meshes, t, reach, planes, tolerance,
                scratch, out):
    """Points of the body's supporting feature over triangle t's face within reach of its plane: count into out."""
    feature, local, points, tags, work, work_tags, depth, keep = scratch[:8]
    nx, ny, nz = meshes.normal[t, 0], meshes.normal[t, 1], meshes.normal[t, 2]
    if kind == SUPERELLIPSOID and min(params[3], params[4]) < 1.0:
        count = rounded_corners(kind, params, hull_vertices, position, rotation, -nx, -ny, -nz, feature)
        separate = True  # five support points, not a polygon
    else:
        count = supporting_feature(kind, params, hull_vertices, hull_faces, position, rotation, -nx, -ny, -nz,
                                   feature, local)
        separate = count == 1
    for k in range(count):
        points[k, :] = feature[k, :]
        tags[k] = -1
    if separate:
        kept = 0
        for k in range(count):
            if min(_side(planes, 0, points[k, 0], points[k, 1], points[k, 2]),
                   min(_side(planes, 1, points[k, 0], points[k, 1], points[k, 2]),
                       _side(planes, 2, points[k, 0], points[k, 1], points[k, 2]))) >= -tolerance:
                points[kept, :] = points[k, :]
                kept += 1
        count = kept
    else:
        count = _clip_to_triangle(points, tags, count, count >= 3, planes, tolerance, work, work_tags)
    ax, ay, az = planes[0, 0], planes[0, 1], planes[0, 2]
    kept = 0
    for k in range(count):
        x, y, z = points[k, 0], points[k, 1], points[k, 2]
        if tags[k] >= 0:
            if not meshes.edge_active[t, tags[k]]:
                continue
        else:
            mine = True
            for e in range(3):
                other = meshes.neighbour[t, e]
                if (not meshes.edge_active[t, e] and 0 <= other < t
                        and abs(_side(planes, e, x, y, z)) <= tolerance):
                    mine = False
            if not mine:
                continue
        overlap = -(nx * (x - ax) + ny * (y - ay) + nz * (z - az))
        if overlap <= -reach:
            continue
        points[kept, 0] = x + 0.5 * overlap * nx
        points[kept, 1] = y + 0.5 * overlap * ny
        points[kept, 2] = z + 0.5 * overlap * nz
        depth[kept] = overlap
        kept += 1
    return finish_patch(points, depth, kept, nx, ny, nz, rotation, keep, out)


@njit(**JIT)
def triangle_patch(kind, params, hull_vertices, hull_faces, position, rotation, meshes, t, reach, scratch, out,
                   penetration):
    """Contact of a body (shape kind and params, posed) with triangle t of the mesh colliders; ``penetration``
    as for pairs of bodies (convex_distance.py).

    out[k] = (x, y, z, depth) as for patches.pair_patch; returns (count, nx, ny, nz): the points and
    the unit normal from the triangle to the body. Count 0: they do not touch within ``reach``.
    """
    nx, ny, nz = meshes.normal[t, 0], meshes.normal[t, 1], meshes.normal[t, 2]
    planes = np.empty((3, 6))
    longest = _edge_planes(meshes, hull_vertices, t, planes)
    if (nx * (position[0] - planes[0, 0]) + ny * (position[1] - planes[0, 1])
            + nz * (position[2] - planes[0, 2])) <= 0.0:
        return 0, nx, ny, nz  # behind the triangle
    count = _face_patch(kind, params, hull_vertices, hull_faces, position, rotation, meshes, t, reach, planes,
                        EDGE_TOLERANCE * longest, scratch, out)
    if count > 0:
        return count, nx, ny, nz
    active = False
    for e in range(3):
        active = active or meshes.edge_active[t, e] or meshes.corner_active[t, e]
    if not active:
        return 0, nx, ny, nz
    kinds, pair_params, positions, rotations = scratch[8:]
    kinds[1] = kind
    pair_params[0, 0] = meshes.first_corner + 3 * t
    pair_params[0, 1] = 3
    pair_params[1, :] = params
    for r in range(3):
        positions[0, r] = meshes.centre[t, r]
        positions[1, r] = position[r]
    rotations[1, :, :] = rotation
    gap, gx, gy, gz = contact_distance(kinds, pair_params, hull_vertices, positions, rotations, nx, ny, nz,
                                       penetration)
    if gap > reach:
        return 0, nx, ny, nz
    # which feature of the triangle is nearest: its corners highest along the normal (its support there);
    # the normal is exact for polytopes and within about 1e-3 rad for curved bodies, hence the tolerance
    top = -np.inf
    for k in range(3):
        cx, cy, cz = _corner(meshes, hull_vertices, t, k)
        top = max(top, gx * cx + gy * cy + gz * cz)
    highest = 0  # a bit per corner
    for k in range(3):
        cx, cy, cz = _corner(meshes, hull_vertices, t, k)
        if gx * cx + gy * cy + gz * cz >= top - SUPPORT_TOLERANCE * longest:
            highest |= 1 << k
    if highest == 7:
        return 0, nx, ny, nz  # the face: its patch found nothing
    # the corners' bits to an edge (corners e, e + 1) or a corner: 3 -> edge 0, 6 -> edge 1, 5 -> edge 2
    on = 1 if highest == 3 else (2 if highest == 6 else (4 if highest == 5 else 0))
    edge = 0 if on == 1 else (1 if on == 2 else 2)
    if on != 0:
        if not meshes.edge_active[t, edge]:
            return 0, nx, ny, nz
        other = meshes.neighbour[t, edge]
        if other >= 0:
            if other < t:
                return 0, nx, ny, nz  # the neighbour speaks for the edge
            # the normal must not lean over the neighbour's face: o is the neighbour's outward
            # direction across the edge, in its plane
            ax, ay, az = planes[edge, 0], planes[edge, 1], planes[edge, 2]
            bx, by, bz = _corner(meshes, hull_vertices, t, (edge + 1) % 3)
            dx, dy, dz = bx - ax, by - ay, bz - az
            length = np.sqrt(dx * dx + dy * dy + dz * dz)
            dx, dy, dz = dx / length, dy / length, dz / length
            ox = ax - meshes.centre[other, 0]
            oy = ay - meshes.centre[other, 1]
            oz = az - meshes.centre[other, 2]
            along = ox * dx + oy * dy + oz * dz
            ox, oy, oz = ox - along * dx, oy - along * dy, oz - along * dz
            if gx * ox + gy * oy + gz * oz < 0.0:
                return 0, nx, ny, nz
    # the point of the feature nearest the body's support point along minus the normal, then half the gap on
    bx, by, bz = support_posed(kind, params, hull_vertices, position, rotation, -gx, -gy, -gz)
    if on == 0:
        corner = 0 if highest == 1 else (1 if highest == 2 else 2)
        if not meshes.corner_active[t, corner] or meshes.corner_owner[t, corner] != t:
            return 0, nx, ny, nz
        qx, qy, qz = _corner(meshes, hull_vertices, t, corner)
    else:
        ax, ay, az = _corner(meshes, hull_vertices, t, edge)
        ex, ey, ez = _corner(meshes, hull_vertices, t, (edge + 1) % 3)
        ex, ey, ez = ex - ax, ey - ay, ez - az
        f = min(max(((bx - ax) * ex + (by - ay) * ey + (bz - az) * ez) / (ex * ex + ey * ey + ez * ez), 0.0), 1.0)
        qx, qy, qz = ax + f * ex, ay + f * ey, az + f * ez
    out[0, 0] = qx + 0.5 * gap * gx
    out[0, 1] = qy + 0.5 * gap * gy
    out[0, 2] = qz + 0.5 * gap * gz
    out[0, 3] = -gap
    return 1, gx, gy, gz
