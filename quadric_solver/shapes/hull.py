"""Convex hull of a point set in 3-D: quickhull (Barber, Dobkin and Huhdanpaa 1996) in numpy.

The hull is a closed triangle mesh: each face lists its vertices counter-clockwise seen from
outside, so its normal (v1 - v0) x (v2 - v0) points out. Coplanar hull faces stay as separate
triangles.

Which side of a face a point lies on is decided exactly: in floating point when Shewchuk's error
bound for orient3d proves the sign, otherwise in rational arithmetic on the (dyadic) float
coordinates. With exact signs the faces a new point sees always form a disc, so duplicate,
coplanar and nearly coplanar points cannot tear the mesh; a point exactly on a face's plane
counts as inside. Tolerances serve only to refuse flat input and to merge near-duplicates.
"""
from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np

# point sets thinner than this fraction of their extent are refused as flat; points closer than it
# to an earlier point are dropped as its duplicates
RELATIVE_TOLERANCE = 1e-11
# a vertex whose faces' unit normals have a smallest singular value below this lies in a flat region
# (an angle: removing it moves the hull by at most this times its size, far below the tolerance)
FLAT_NORMALS = 1e-12
# a triangle whose corner angle has a sine below this is a sliver: its float normal is unreliable
SLIVER_SINE = 1e-10
# Shewchuk's o3derrboundA, (7 + 56 eps) eps with eps = 2^-53: a float orient3d whose magnitude
# exceeds this times its permanent has the exact sign
_ORIENT_BOUND = (7.0 + 56.0 * 2.0 ** -53) * 2.0 ** -53


class DegenerateHull(ValueError):
    """The points span a plane, a line or a point: no solid hull. ``dimension`` is 2, 1 or 0."""

    def __init__(self, dimension: int, tolerance: float):
        self.dimension, self.tolerance = dimension, tolerance
        within = f" (within {tolerance:.3g})" if dimension else ""
        self.spans = ("a single point", "a line", "a plane")[dimension] + within
        super().__init__(f"the points span only {self.spans}")


def _exact_above(a, b, c, p) -> int:
    """Sign of ((b - a) x (c - a)).(p - a) in rational arithmetic."""
    a, b, c, p = ([Fraction(float(x)) for x in point] for point in (a, b, c, p))
    u = [b[k] - a[k] for k in range(3)]
    v = [c[k] - a[k] for k in range(3)]
    w = [p[k] - a[k] for k in range(3)]
    det = (w[0] * (u[1] * v[2] - u[2] * v[1]) + w[1] * (u[2] * v[0] - u[0] * v[2])
           + w[2] * (u[0] * v[1] - u[1] * v[0]))
    return (det > 0) - (det < 0)


def above(a, b, c, p) -> np.ndarray:
    """Exact sign (+1 above, 0 on, -1 below) of point(s) p against the plane of triangle(s) a, b, c,
    whose normal is (b - a) x (c - a). Arrays of shape (..., 3) broadcast."""
    a, b, c, p = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in (a, b, c, p)))
    shape = a.shape[:-1]
    a, b, c, p = (x.reshape(-1, 3) for x in (a, b, c, p))
    # Shewchuk's orient3d form: the differences to p, then their triple product
    ad, bd, cd = a - p, b - p, c - p
    bc = bd[:, 1] * cd[:, 2] - bd[:, 2] * cd[:, 1]
    ca = bd[:, 2] * cd[:, 0] - bd[:, 0] * cd[:, 2]
    ab = bd[:, 0] * cd[:, 1] - bd[:, 1] * cd[:, 0]
    det = ad[:, 0] * bc + ad[:, 1] * ca + ad[:, 2] * ab
    permanent = (np.abs(ad[:, 0]) * (np.abs(bd[:, 1] * cd[:, 2]) + np.abs(bd[:, 2] * cd[:, 1]))
                 + np.abs(ad[:, 1]) * (np.abs(bd[:, 2] * cd[:, 0]) + np.abs(bd[:, 0] * cd[:, 2]))
                 + np.abs(ad[:, 2]) * (np.abs(bd[:, 0] * cd[:, 1]) + np.abs(bd[:, 1] * cd[:, 0])))
    # (a - p).((b - p) x (c - p)) = -((b - a) x (c - a)).(p - a)
    sign = -np.sign(det).astype(np.int64)
    for index in np.flatnonzero(np.abs(det) <= _ORIENT_BOUND * permanent):
        sign[index] = _exact_above(a[index], b[index], c[index], p[index])
    return sign.reshape(shape)


def _initial_tetrahedron(points, tolerance):
    """Four point indices spanning a tetrahedron thicker than ``tolerance``, its base (i0, i1, i2)
    counter-clockwise seen from outside (away from i3)."""
    extent = points.max(axis=0) - points.min(axis=0)
    axis = int(np.argmax(extent))
    if extent[axis] <= tolerance:
        raise DegenerateHull(0, tolerance)
    i0, i1 = int(np.argmin(points[:, axis])), int(np.argmax(points[:, axis]))
    line = (points[i1] - points[i0]) / np.linalg.norm(points[i1] - points[i0])
    offsets = points - points[i0]
    across = np.linalg.norm(offsets - np.outer(offsets @ line, line), axis=1)
    i2 = int(np.argmax(across))
    if across[i2] <= tolerance:
        raise DegenerateHull(1, tolerance)
    normal = np.cross(points[i1] - points[i0], points[i2] - points[i0])
    heights = offsets @ (normal / np.linalg.norm(normal))
    i3 = int(np.argmax(np.abs(heights)))
    if abs(heights[i3]) <= tolerance:
        raise DegenerateHull(2, tolerance)
    if above(points[i0], points[i1], points[i2], points[i3]) > 0:
        i1, i2 = i2, i1
    return i0, i1, i2, i3


class _Quickhull:
    """The growing hull: faces (vertex triples, outside points), directed edge -> face."""

    def __init__(self, points):
        self.points = points
        self.faces = np.empty((64, 3), dtype=np.int64)
        self.count = 0
        self.outside, self.alive = [], []
        self.edge_face = {}

    def add_faces(self, triangles):
        """Append faces (vertex triples, counter-clockwise from outside); returns their indices."""
        first = self.count
        self.count += len(triangles)
        if self.count > len(self.faces):
            self.faces = np.concatenate([self.faces, np.empty((max(self.count, len(self.faces)), 3), np.int64)])
        self.faces[first:self.count] = triangles
        for index, (i, j, k) in enumerate(triangles, start=first):
            self.outside.append(np.empty(0, dtype=np.int64))
            self.alive.append(True)
            for edge in ((i, j), (j, k), (k, i)):
                self.edge_face[edge] = index
        return list(range(first, self.count))

    def remove_face(self, index):
        self.alive[index] = False
        i, j, k = self.faces[index]
        for edge in ((i, j), (j, k), (k, i)):
            if self.edge_face.get(edge) == index:
                del self.edge_face[edge]

    def heights(self, faces, candidates):
        """(candidates, faces): float heights above the face planes (for choosing), zeroed where the
        exact sign says the point is not strictly above (for deciding)."""
        corners = self.points[self.faces[faces]]  # (F, 3, 3)
        a, b, c = corners[:, 0], corners[:, 1], corners[:, 2]
        normals = np.cross(b - a, c - a)
        normals /= np.maximum(np.linalg.norm(normals, axis=1), np.finfo(np.float64).tiny)[:, None]
        p = self.points[candidates][:, None, :]
        height = np.einsum("pfk,fk->pf", p - a[None], normals)
        return np.where(above(a[None], b[None], c[None], p) > 0, np.maximum(height, 0.0) + 1e-300, 0.0)

    def assign(self, candidates, new_faces):
        """Give each candidate point to the new face it is farthest above; points above none are inside."""
        if candidates.size == 0:
            return
        heights = self.heights(new_faces, candidates)
        best = np.argmax(heights, axis=1)
        outside = heights[np.arange(candidates.size), best] > 0.0
        for slot, face in enumerate(new_faces):
            self.outside[face] = candidates[outside & (best == slot)]

    def visible_from(self, eye, start):
        """Faces that see point ``eye`` (strictly), grown from face ``start`` over shared edges."""
        visible, frontier = {start}, [start]
        while frontier:
            across = set()
            for face in frontier:
                i, j, k = self.faces[face].tolist()
                across.update(self.edge_face[(b, a)] for a, b in ((i, j), (j, k), (k, i)))
            candidates = np.array(sorted(across - visible), dtype=np.int64)
            if candidates.size == 0:
                break
            corners = self.points[self.faces[candidates]]
            frontier = candidates[above(corners[:, 0], corners[:, 1], corners[:, 2], self.points[eye]) > 0].tolist()
            visible.update(frontier)
        return visible

    def horizon(self, visible):
        """Edges of the visible region's boundary, each oriented as in its visible face, as one loop."""
        boundary = []
        for face in visible:
            i, j, k = self.faces[face].tolist()
            boundary.extend((a, b) for a, b in ((i, j), (j, k), (k, i)) if self.edge_face[(b, a)] not in visible)
        following = dict(boundary)
        loop, vertex = [], boundary[0][0]
        for _ in range(len(boundary)):
            loop.append((vertex, following[vertex]))
            vertex = following[vertex]
        if len(following) != len(boundary) or vertex != boundary[0][0] or len(set(loop)) != len(loop):
            raise RuntimeError("convex hull: the faces seen from a point do not form a disc")
        return loop

    def run(self):
        pending = [f for f in range(self.count) if self.outside[f].size]
        while pending:
            face = pending.pop()
            if not self.alive[face] or self.outside[face].size == 0:
                continue
            candidates = self.outside[face]
            eye = int(candidates[np.argmax(self.heights([face], candidates)[:, 0])])
            visible = self.visible_from(eye, face)
            loop = self.horizon(visible)
            orphans = np.concatenate([self.outside[f] for f in visible])
            for f in visible:
                self.remove_face(f)
            new_faces = self.add_faces([(a, b, eye) for a, b in loop])
            self.assign(orphans[orphans != eye], new_faces)
            pending.extend(f for f in new_faces if self.outside[f].size)

    def triangles(self) -> np.ndarray:
        return self.faces[:self.count][np.array(self.alive, dtype=bool)]


def _quickhull(points, tolerance) -> np.ndarray:
    """Outward triangles (F, 3) of indices into ``points``."""
    i0, i1, i2, i3 = _initial_tetrahedron(points, tolerance)
    hull = _Quickhull(points)
    faces = hull.add_faces([(i0, i1, i2), (i0, i3, i1), (i1, i3, i2), (i2, i3, i0)])
    hull.assign(np.setdiff1d(np.arange(len(points)), [i0, i1, i2, i3]), faces)
    hull.run()
    return hull.triangles()


def _flat_vertices(points, triangles) -> np.ndarray:
    """Vertices inside a flat face or on a straight edge: their faces' normals lie in one plane.

    A corner's normals span space; quickhull keeps a coplanar point it met before the face around
    it was complete, and removing such points changes the hull by nothing.
    """
    p0, p1, p2 = (points[triangles[:, k]] for k in range(3))
    normals = np.cross(p1 - p0, p2 - p0)
    lengths = np.linalg.norm(normals, axis=1)
    # a sliver (corners collinear to rounding) has a float normal of any direction: it says nothing
    usable = lengths > SLIVER_SINE * np.linalg.norm(p1 - p0, axis=1) * np.linalg.norm(p2 - p0, axis=1)
    normals, corners = normals[usable] / lengths[usable, None], triangles[usable]
    # screen with the smallest eigenvalue of the sum of n n^T (coarse: it squares the singular value),
    # then decide on the few candidates with the singular values themselves
    gram = np.zeros((len(points), 3, 3))
    for k in range(3):
        np.add.at(gram, corners[:, k], normals[:, :, None] * normals[:, None, :])
    candidates = np.flatnonzero(np.linalg.eigvalsh(gram)[:, 0] <= 1e-10)
    flat = []
    for vertex in np.intersect1d(candidates, triangles):
        around = normals[np.any(corners == vertex, axis=1)]
        if len(around) < 3 or np.linalg.svd(around, compute_uv=False)[-1] <= FLAT_NORMALS:
            flat.append(vertex)
    return np.array(flat, dtype=np.int64)


def _distinct(points, tolerance) -> np.ndarray:
    """Sorted indices of the points left after dropping duplicates: a point that shares a grid cell of
    size ``tolerance`` with an earlier point, or lies within ``tolerance`` of the one kept in a
    neighbouring cell."""
    cells = np.floor(points / tolerance).astype(np.int64)
    _, first = np.unique(cells, axis=0, return_index=True)  # one point per cell
    kept, where = [], {}
    for index in np.sort(first).tolist():
        key = tuple(cells[index].tolist())
        close = False
        for offset in itertools.product((-1, 0, 1), repeat=3):
            other = where.get((key[0] + offset[0], key[1] + offset[1], key[2] + offset[2]))
            if other is not None and np.sum((points[index] - points[other]) ** 2) <= tolerance ** 2:
                close = True
                break
        if not close:
            kept.append(index)
            where[key] = index
    return np.array(kept, dtype=np.int64)


def convex_hull(points) -> tuple[np.ndarray, np.ndarray]:
    """Vertices (V, 3) and outward counter-clockwise triangles (F, 3) of the hull of ``points`` (N, 3).

    Raises DegenerateHull when the points do not span a solid. Vertices keep the points' coordinates,
    in the order of their first appearance in ``points``; points within the tolerance of another are
    dropped as duplicates, and points inside flat faces or on straight edges are no vertices.
    """
    points = np.asarray(points, dtype=np.float64)
    centre = 0.5 * (points.max(axis=0) + points.min(axis=0))
    local = points - centre  # the predicates' float stage proves more signs near the origin
    tolerance = RELATIVE_TOLERANCE * max(float(np.max(np.abs(local))), np.finfo(np.float64).tiny)
    keep = _distinct(local, tolerance)
    triangles = _quickhull(local[keep], tolerance)
    flat = _flat_vertices(local[keep], triangles)
    if flat.size:
        keep = np.setdiff1d(keep[np.unique(triangles)], keep[flat])
        triangles = _quickhull(local[keep], tolerance)
    used = np.unique(triangles)
    renumber = np.full(len(keep), -1, dtype=np.int64)
    renumber[used] = np.arange(used.size)
    return points[keep[used]], renumber[triangles]
