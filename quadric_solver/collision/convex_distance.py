"""Signed distance between two posed convex shapes: GJK, EPA on overlap, then Newton on the normal.

The signed distance is the gap max over unit n of g(n) = -h_A(n) - h_B(-n): the Euclidean distance
when the shapes are apart, minus the penetration depth (the shortest translation that separates
them) when they overlap; the maximising n is the normal from A to B. GJK (gjk.py) finds it for
separated shapes, EPA (epa.py) for overlapping ones, or on request (``penetration``) MPR (mpr.py, along
the centres' line) or SGJK (sgjk.py, a local minimum from the warm start); for pairs with a curved member,
normal_refinement.py then polishes n. The answer is g at the returned normal, evaluated exactly
from the support functions, so it never exceeds the true signed distance; its deficit is what
the search leaves, measured in tests/solver/shapes/test_distance_reference.py.

The witness points lie on the surfaces with b - a = distance * normal along the normal: the
support points along it where a shape's support there is a single point, else the nearest pair
GJK finds with the shapes moved apart along the normal (see witness_points).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ..math3d import JIT, quat_to_matrix
from ..shapes import Shape, encode_shapes
from ..shapes.kinds import BUMPY, ELLIPSOID
from ..shapes.support import BOX, HULL, bounding_radius
from ..validate import FieldError, describe, unit_quaternion, unit_vector, vector
from .epa import MAX_FACES, MAX_VERTICES, epa
from .gjk import SEPARATED, combine, gjk, support_posed
from .mpr import mpr
from .normal_refinement import MAX_ITERATIONS, refine_normal
from .sgjk import sgjk

# how overlapping pairs are measured (Simulation(penetration=...), distance(penetration=...))
PENETRATION = ("epa", "mpr", "sgjk")
EPA, MPR, SGJK = range(3)

# of the pair's size: where GJK's and EPA's bounds are taken to meet (polytope pairs end exactly).
# With a curved member the Newton refinement takes over from a looser first answer (on a curved
# patch EPA would need many facets to get close); the loose bound still places that answer in a
# basin of g whose maximum is within it of the global one
TOLERANCE, CURVED_TOLERANCE = 1e-12, 1e-7
# Newton ended on a smooth optimum when the gap's gradient on the sphere is below this (of the size)
SMOOTH_GRADIENT = 1e-9
WITNESS_GAP = 1e-6  # of the size: the separation at which the witness points are found (see witness_points)


@njit(**JIT, inline="always")
def _mismatch(ax, ay, az, bx, by, bz, gap, nx, ny, nz):
    """|(b - a) - gap n|: how far a witness pair is from realising the gap along n."""
    x, y, z = bx - ax - gap * nx, by - ay - gap * ny, bz - az - gap * nz
    return x * x + y * y + z * z


@njit(**JIT)
def new_search_scratch():
    """Scratch of _search: GJK's simplex and weights, then EPA's vertices, faces, planes, alive flags and edges.

    Allocated per call they cost about 0.5 us (0.08 us for GJK's two alone), against 9 to 14 us per touching
    pebble pair in the 1,000-pebble drop's narrow phase; hot loops keep one per thread."""
    return (np.empty((4, 9)), np.zeros(4), np.empty((MAX_VERTICES, 9)), np.empty((MAX_FACES, 3), np.int64),
            np.empty((MAX_FACES, 4)), np.zeros(MAX_FACES, dtype=np.bool_), np.empty((3 * MAX_FACES, 2), np.int64))


@njit(**JIT)
def _search(kinds, params, hull_vertices, positions, rotations, nx, ny, nz, tolerance, method, scale, scratch):
    """GJK from the normal guess n, then the penetration ``method`` if GJK finds no gap: (gap, n) with
    g(n) = -h_C(n) exactly; within the tolerance of the signed distance for EPA, never above it for MPR
    (its depth along the centres' line) and SGJK (a local optimum). scratch: new_search_scratch()."""
    simplex, weights, vertices, faces, planes, alive, edges = scratch
    weights[:] = 0.0
    hx, hy, hz = nx, ny, nz
    verdict, count, gap, nx, ny, nz = gjk(kinds, params, hull_vertices, positions, rotations, nx, ny, nz,
                                          tolerance, simplex, weights)
    if verdict == SEPARATED:
        return gap, nx, ny, nz
    if method == MPR:
        found, depth, mx, my, mz = mpr(kinds, params, hull_vertices, positions, rotations, tolerance, scale,
                                       np.empty((5, 9)))
        if found:
            return -depth, mx, my, mz
        # touching within the tolerance, where MPR's ray finds no overlap: EPA decides
    elif method == SGJK:
        depth, nx, ny, nz = sgjk(kinds, params, hull_vertices, positions, rotations, hx, hy, hz, tolerance, scale,
                                 np.empty((1, 9)), simplex, weights)  # from the caller's guess
        return -depth, nx, ny, nz
    depth, nx, ny, nz = epa(kinds, params, hull_vertices, positions, rotations, simplex, count, tolerance, vertices,
                            faces, planes, alive, edges)
    return -depth, nx, ny, nz


@njit(**JIT)
def witness_points(kinds, params, hull_vertices, positions, rotations, gap, nx, ny, nz, scale, out):
    """out[4:10] = a point of A and a point of B, on their surfaces, with b - a = gap n along n.

    B is moved along n until the pair stands WITNESS_GAP apart; n stays their normal, and GJK's
    nearest pair there marks where the shapes meet, whatever the feature (a point, an edge, a face).
    Its barycentric points are then moved along n onto each shape's supporting plane (on a curved
    patch a mix of nearby support points lies just inside). Per shape, that point or the support
    point along n (exact where the support is a single point; one end of a flat face or edge
    otherwise): the pair that fits b - a = gap n best.
    """
    shift = WITNESS_GAP * scale - gap
    moved = positions.copy()
    moved[1, 0] += shift * nx
    moved[1, 1] += shift * ny
    moved[1, 2] += shift * nz
    simplex = np.empty((4, 9))
    weights = np.zeros(4)
    _, count, _, _, _, _ = gjk(kinds, params, hull_vertices, moved, rotations, nx, ny, nz, TOLERANCE * scale,
                               simplex, weights)
    ax, ay, az = combine(simplex, count, weights, 3)
    bx, by, bz = combine(simplex, count, weights, 6)
    bx, by, bz = bx - shift * nx, by - shift * ny, bz - shift * nz
    sax, say, saz = support_posed(kinds[0], params[0], hull_vertices, positions[0], rotations[0], nx, ny, nz)
    sbx, sby, sbz = support_posed(kinds[1], params[1], hull_vertices, positions[1], rotations[1], -nx, -ny, -nz)
    along = nx * (sax - ax) + ny * (say - ay) + nz * (saz - az)
    ax, ay, az = ax + along * nx, ay + along * ny, az + along * nz
    along = nx * (sbx - bx) + ny * (sby - by) + nz * (sbz - bz)
    bx, by, bz = bx + along * nx, by + along * ny, bz + along * nz
    best = _mismatch(ax, ay, az, bx, by, bz, gap, nx, ny, nz)
    out[4], out[5], out[6], out[7], out[8], out[9] = ax, ay, az, bx, by, bz
    for choice in range(3):
        qax, qay, qaz = (sax, say, saz) if choice != 1 else (ax, ay, az)
        qbx, qby, qbz = (sbx, sby, sbz) if choice != 2 else (bx, by, bz)
        mismatch = _mismatch(qax, qay, qaz, qbx, qby, qbz, gap, nx, ny, nz)
        if mismatch < best:
            best = mismatch
            out[4], out[5], out[6], out[7], out[8], out[9] = qax, qay, qaz, qbx, qby, qbz


@njit(**JIT)
def signed_distance(kinds, params, hull_vertices, positions, rotations, nx, ny, nz, out, method=EPA):
    """Signed distance of shape 0 (A) and shape 1 (B) of a pair, starting from the normal guess n.

    out (10,) receives the distance, the unit normal from A to B, the point on A and the point on B.

    With a curved member, a first search to CURVED_TOLERANCE hands its normal to the Newton
    refinement; where that does not end on a smooth optimum (a crease or kink of g: a flat face, an
    edge or a rim in contact), a second search to TOLERANCE decides.
    """
    scale = (bounding_radius(kinds[0], params[0], hull_vertices)
             + bounding_radius(kinds[1], params[1], hull_vertices))
    polytopes = (kinds[0] == BOX or kinds[0] == HULL) and (kinds[1] == BOX or kinds[1] == HULL)
    scratch = new_search_scratch()
    gap, nx, ny, nz = _search(kinds, params, hull_vertices, positions, rotations, nx, ny, nz,
                              (TOLERANCE if polytopes else CURVED_TOLERANCE) * scale, method, scale, scratch)
    if not polytopes:
        refined, rx, ry, rz, gradient, _ = refine_normal(kinds, params, hull_vertices, positions, rotations,
                                                         nx, ny, nz, scale, 1e-15, MAX_ITERATIONS)
        if refined > gap:
            gap, nx, ny, nz = refined, rx, ry, rz
        if gradient > SMOOTH_GRADIENT * scale:
            tight, tx, ty, tz = _search(kinds, params, hull_vertices, positions, rotations, nx, ny, nz,
                                        TOLERANCE * scale, method, scale, scratch)
            if tight > gap:
                gap, nx, ny, nz = tight, tx, ty, tz
    out[0], out[1], out[2], out[3] = gap, nx, ny, nz
    witness_points(kinds, params, hull_vertices, positions, rotations, gap, nx, ny, nz, scale, out)


@njit(**JIT)
def contact_distance(kinds, params, hull_vertices, positions, rotations, nx, ny, nz, method, scratch=None):
    """(gap, nx, ny, nz): the signed distance and normal that contacts need, from the normal guess n.
    scratch: new_search_scratch(), or None for one of its own (hot loops keep one per thread).

    The search alone: exact for polytope pairs, within CURVED_TOLERANCE of the pair's size with a curved
    member (1e-8 m for 5 cm bodies, far below the solver's slop of 0.2% of the size), without the
    Newton polish, the tight search and the witness points of signed_distance (which cost three
    quarters of its time on a pair of rounded boxes). The contact patch gives the points.
    """
    scale = (bounding_radius(kinds[0], params[0], hull_vertices)
             + bounding_radius(kinds[1], params[1], hull_vertices))
    polytopes = (kinds[0] == BOX or kinds[0] == HULL) and (kinds[1] == BOX or kinds[1] == HULL)
    tolerance = (TOLERANCE if polytopes else CURVED_TOLERANCE) * scale
    if scratch is None:
        return _search(kinds, params, hull_vertices, positions, rotations, nx, ny, nz, tolerance, method, scale,
                       new_search_scratch())
    return _search(kinds, params, hull_vertices, positions, rotations, nx, ny, nz, tolerance, method, scale, scratch)


class Distance(NamedTuple):
    """Result of :func:`distance`: ``distance`` (signed: negative = penetration depth), ``normal``
    (unit, from A to B), ``point_a`` on A's surface and ``point_b`` on B's (world frame), with
    point_b - point_a = distance * normal: exactly along the normal, across it to about 1e-10 of
    the shapes' size (docs/shapes.md)."""

    distance: float
    normal: np.ndarray
    point_a: np.ndarray
    point_b: np.ndarray


def _pose(field: str, pose, positions, rotations, row):
    """positions[row] and rotations[row] from a (position, orientation (w, x, y, z)) pair."""
    if not isinstance(pose, (tuple, list)) or len(pose) != 2:
        raise FieldError("distance", field, f"must be a (position, orientation) pair, got {describe(pose)}")
    try:  # the common case without building error messages
        position = np.asarray(pose[0], dtype=np.float64)
        q = np.asarray(pose[1], dtype=np.float64)
        norm = float(np.sqrt(q @ q)) if q.shape == (4,) else np.nan
        fine = position.shape == (3,) and np.all(np.isfinite(position)) and abs(norm - 1.0) <= 1e-5
    except (TypeError, ValueError):
        fine = False
    if not fine:  # the checkers name the problem
        position = np.array(vector("distance", f"{field}.position", pose[0], 3))
        q = np.array(unit_quaternion("distance", f"{field}.orientation", pose[1]))
        norm = 1.0
    positions[row] = position
    quat_to_matrix(q / norm, rotations[row])


def _centre(shape: Shape, position, rotation) -> np.ndarray:
    """A point inside the posed shape (the frame's origin, or a hull's vertex centroid)."""
    local = shape.vertices.mean(axis=0) if shape.kind == HULL else np.zeros(3)
    return position + rotation @ local


def distance(shape_a, pose_a, shape_b, pose_b, normal_hint=None, penetration="epa") -> Distance:
    """Signed distance between two convex shapes placed at pose = (position, orientation (w, x, y, z)).

    ``normal_hint`` (a direction from A to B, e.g. the last answer's normal) warm-starts the search;
    by default it runs along the line between the shapes' centres. ``penetration`` measures overlapping
    shapes: 'epa' (the smallest depth), 'mpr' (the depth along the line between the shapes' centres) or
    'sgjk' (a local minimum from the hint).
    """
    method = penetration_method("distance", penetration)
    for field, shape in (("shape_a", shape_a), ("shape_b", shape_b)):
        if not isinstance(shape, Shape):
            raise FieldError("distance", field, f"must be a shape (Ellipsoid, Box, ...), got {describe(shape)}")
    positions, rotations = np.empty((2, 3)), np.empty((2, 3, 3))
    _pose("pose_a", pose_a, positions, rotations, 0)
    _pose("pose_b", pose_b, positions, rotations, 1)
    if BUMPY in (shape_a.kind, shape_b.kind):
        return _bumpy_distance(shape_a, shape_b, positions, rotations, normal_hint)
    if normal_hint is None:
        hint = _centre(shape_b, positions[1], rotations[1]) - _centre(shape_a, positions[0], rotations[0])
        hint = hint if np.any(hint) else np.array([0.0, 0.0, 1.0])
    else:
        hint = unit_vector("distance", "normal_hint", normal_hint, 3)
    kinds, params, hull_vertices = encode_shapes([shape_a, shape_b])
    if method == MPR:  # MPR starts inside: a hull's frame is moved to its vertices' centroid
        for row, shape in enumerate((shape_a, shape_b)):
            if shape.kind == HULL:
                local = shape.vertices.mean(axis=0)
                first, count = int(params[row, 0]), int(params[row, 1])
                hull_vertices[first:first + count] -= local
                positions[row] += rotations[row] @ local
    out = np.empty(10)
    signed_distance(kinds, params, hull_vertices, positions, rotations, float(hint[0]), float(hint[1]),
                    float(hint[2]), out, method)
    return Distance(float(out[0]), out[1:4], out[4:7], out[7:10])


def _bumpy_distance(shape_a, shape_b, positions, rotations, normal_hint) -> Distance:
    """distance() where a shape is a BumpyEllipsoid: the deepest of its local contacts (bumpy_contact.py)."""
    from .bumpy_contact import posed_contacts
    for field, shape in (("shape_a", shape_a), ("shape_b", shape_b)):
        if shape.kind not in (ELLIPSOID, BUMPY):
            raise FieldError("distance", field, f"must be an Ellipsoid or BumpyEllipsoid to meet a BumpyEllipsoid "
                                                f"(other shapes cannot yet), got {type(shape).__name__}")
    hint = None if normal_hint is None else unit_vector("distance", "normal_hint", normal_hint, 3)
    contacts = posed_contacts(shape_a, shape_b, positions, rotations, hint)
    if not contacts:
        raise ArithmeticError("distance: no contact between the two shapes converged; please report the shapes and "
                              "poses")
    return contacts[0]


def penetration_method(owner: str, name) -> int:
    """EPA, MPR or SGJK for 'epa', 'mpr' or 'sgjk'; FieldError naming ``owner`` and 'penetration' otherwise."""
    if not (isinstance(name, str) and name in PENETRATION):
        raise FieldError(owner, "penetration", f"must be one of {', '.join(map(repr, PENETRATION))}, "
                                               f"got {describe(name)}")
    return PENETRATION.index(name)
