"""Fit a body's shape to a triangle mesh (pure numpy, no bpy, no numba).

Ellipsoid. Closed meshes: volume, centroid and second moments from signed tetrahedra
(each triangle with a reference point), then the principal axes and the
inertia-equivalent ellipsoid: the solid ellipsoid with the mesh's mass and
inertia tensor. Its second moment along a principal axis is M a^2 / 5, so
a_i = sqrt(5 * lambda_i / V) where lambda_i are the eigenvalues of the central
second-moment tensor (per unit density) and V the mesh volume.

Open meshes have no volume: fall back to the oriented bounding box from the
vertex covariance (half extents as semi-axes) and say so.

The other families (``fit_shape``) are fitted in a few candidate frames: the
frames the caller suggests (the object's own axes: they win ties, so a cube's
half extents follow its object's x, y, z), the mesh's principal axes and the
frame of its largest flat faces (for meshes turned in edit mode whose inertia
has no distinct axes, like a cube's), each axis of a frame taken in turn as a
cylinder's, capsule's or superellipsoid's z:

* box: the bounding box of the vertices in the frame;
* cylinder: radius and half-height of the smallest cylinder about the axis
  that holds the vertices (the axis through the centroid);
* capsule: the widest cross-section's radius, and the shortest segment whose
  caps of that radius hold the vertices;
* superellipsoid: the semi-axes of the bounding box, and the exponents that
  match the mesh's volume and second moments best (least squares, relative);
  an open mesh, which has no volume, takes those that fit its support best;
* convex hull: the hull of the vertices (quadric_solver/shapes/hull.py), in the
  principal frame.

How well a solid S fits the mesh is measured by its support gap: the mean,
over SCORE_DIRECTIONS directions u spread evenly over the sphere, of
|h_S(u) - h_M(u)|, the distance between the two planes that touch S and the
mesh's convex hull from direction u, divided by the mesh's mean half-width. It
is zero only when S is the hull (convex solids with equal support functions
are equal), and for a fit that holds the mesh it is half the difference of
their mean widths. Each family keeps its best-scoring frame; AUTO then takes
the simplest family (FAMILY_ORDER) whose gap is within TIE of the best, unless
even the best is above HULL_ABOVE: then the convex hull (whose gap is zero).
"""
import functools
import importlib.util
import math
import os
from dataclasses import dataclass, field

import numpy as np

from . import solver_package
from .shapes import (BOX, CAPSULE, CYLINDER, ELLIPSOID, EXPONENT_RANGE, FAMILIES, HULL, NAMES, SUPERELLIPSOID,
                     fibonacci_directions, kind_of, row, support_values, volume)

SCORE_DIRECTIONS = 256
FAMILY_ORDER = (ELLIPSOID, BOX, CYLINDER, CAPSULE, SUPERELLIPSOID)  # simplest first; the hull comes last
TIE = 0.005        # gaps within half a percent of the best count as a tie, won by the simpler family
FRAME_TIE = 1e-6   # a family's fits in two frames this close are the same fit (a cube's in any of its frames)
HULL_ABOVE = 0.03  # when no primitive comes within 3 % of the mesh's half-width, AUTO takes the convex hull


class FitError(ValueError):
    pass


@dataclass
class EllipsoidFit:
    center: np.ndarray      # (3,) centroid, same frame as the input vertices
    rotation: np.ndarray    # (3, 3) columns are the principal axes (right-handed)
    semi_axes: np.ndarray   # (3,) along the columns of rotation
    volume: float           # mesh volume (closed) or the ellipsoid's volume (fallback)
    closed: bool
    method: str             # 'INERTIA' or 'BOUNDING_BOX'
    warning: str = ""


def is_closed(triangles):
    """True when every edge is shared by exactly two triangles (a watertight surface)."""
    tri = np.asarray(triangles, dtype=np.int64)
    if len(tri) == 0:
        return False
    edges = np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [2, 0]]])
    edges.sort(axis=1)
    keys = np.sort(edges[:, 0] * (int(edges.max()) + 1) + edges[:, 1])
    starts = np.flatnonzero(np.concatenate([[True], keys[1:] != keys[:-1], [True]]))
    return bool(np.all(np.diff(starts) == 2))


def mass_properties(vertices, triangles):
    """Volume, centroid and central second-moment tensor (integral of r r^T dV) of a closed mesh."""
    v = np.asarray(vertices, dtype=np.float64)
    tri = np.asarray(triangles, dtype=np.int64)
    ref = v.mean(axis=0)  # a nearby reference point keeps the sums well conditioned
    a, b, c = (v[tri[:, k]] - ref for k in range(3))
    vol = np.sum(a * np.cross(b, c), axis=1) / 6.0
    volume = vol.sum()
    if volume < 0.0:  # inward-facing normals: the same solid, measured with the opposite sign
        vol, volume = -vol, -volume
    s = a + b + c
    first = vol @ s / 4.0
    # Tetrahedron (0, a, b, c): integral of r r^T dV = vol/20 (aa^T + bb^T + cc^T + ss^T).
    second = sum((x * vol[:, None]).T @ x for x in (a, b, c, s)) / 20.0
    if volume <= 0.0:
        return 0.0, ref, np.zeros((3, 3))
    centroid_rel = first / volume
    central = second - volume * np.outer(centroid_rel, centroid_rel)
    return float(volume), ref + centroid_rel, 0.5 * (central + central.T)


def _right_handed(axes):
    axes = np.array(axes, dtype=np.float64)
    if np.linalg.det(axes) < 0.0:
        axes[:, 2] *= -1.0
    return axes


def fit_ellipsoid(vertices, triangles, name="mesh"):
    """Inertia-equivalent ellipsoid of a closed mesh, else its oriented bounding box (with a warning)."""
    m = _measure(vertices, triangles, name, (), support=False)
    center, rotation, semi, method, warning = _ellipsoid_parts(m)
    volume = m.volume if m.closed else 4.0 / 3.0 * np.pi * float(np.prod(semi))
    return EllipsoidFit(center, rotation, semi, volume, m.closed, method, warning)


def _ellipsoid_parts(m):
    """(centre, axes, semi-axes, method, warning) of the ellipsoid fit of a measured mesh."""
    if m.closed:
        semi = np.sqrt(5.0 * np.maximum(m.moments, 0.0) / m.volume)
        return m.centroid, m.axes, semi, "INERTIA", ""
    _, lo, hi = _extents(m, m.axes)
    warning = f"'{m.name}': mesh is not closed; fitted its oriented bounding box instead of its inertia"
    return m.centroid + m.axes @ (0.5 * (hi + lo)), m.axes, 0.5 * (hi - lo), "BOUNDING_BOX", warning

# ------------------------------------------------------------------------------------ any family
@dataclass
class ShapeFit:
    kind: int               # shapes.ELLIPSOID ... shapes.HULL
    center: np.ndarray      # (3,) origin of the shape's frame, same frame as the input vertices
    rotation: np.ndarray    # (3, 3) columns are the shape's axes (right-handed)
    params: np.ndarray      # (5,) the shape's row (shapes.py)
    volume: float           # the mesh's volume (closed), else the fitted solid's: density x volume = mass
    shape_volume: float     # the fitted solid's volume
    closed: bool
    method: str             # 'INERTIA' or 'BOUNDING_BOX' (ellipsoids), 'ENCLOSING', 'VOLUME_INERTIA', 'SUPPORT', 'HULL'
    warning: str = ""
    score: float = 0.0      # support gap (module docstring)
    scores: dict = field(default_factory=dict)  # AUTO: every family's gap, by name
    hull_vertices: np.ndarray = None  # (V, 3) in the shape's frame (hulls only)
    hull_faces: np.ndarray = None     # (F, 3) counter-clockwise seen from outside

    @property
    def family(self):
        return FAMILIES[self.kind]


@dataclass
class _Mesh:
    """What every family's fit needs, measured once."""
    vertices: np.ndarray
    name: str
    scale: float
    closed: bool
    volume: float           # 0 for open meshes
    centroid: np.ndarray
    central: np.ndarray     # central second moments (closed) or the vertex covariance (open)
    moments: np.ndarray     # its eigenvalues, ascending
    axes: np.ndarray        # and eigenvectors: the principal frame (right-handed)
    frames: list = field(default_factory=list)  # candidate rotation matrices, the suggested ones first
    directions: np.ndarray = None  # (K, 3)
    reach: np.ndarray = None       # (K,) the mesh's support values along them
    width: float = 0.0             # its mean half-width
    local: dict = field(default_factory=dict)  # vertices in a frame, by frame index


def _measure(vertices, triangles, name, frames, support=True):
    v = np.asarray(vertices, dtype=np.float64)
    tri = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
    if len(v) < 4 or len(tri) == 0:
        raise FitError(f"'{name}': mesh has no volume (needs at least 4 vertices and some faces)")
    scale = float(np.max(np.ptp(v, axis=0)))
    if not np.all(np.isfinite(v)) or scale <= 0.0:
        raise FitError(f"'{name}': mesh has zero size")
    closed = is_closed(tri)
    if closed:
        vol, centroid, central = mass_properties(v, tri)
        if vol <= 1e-9 * scale ** 3:
            raise FitError(f"'{name}': mesh has zero volume")
    else:
        vol, centroid = 0.0, v.mean(axis=0)
        central = np.cov((v - centroid).T)
    moments, axes = np.linalg.eigh(central)
    m = _Mesh(v, name, scale, closed, vol, centroid, central, moments, _right_handed(axes))
    _, lo, hi = _extents(m, m.axes)
    if np.min(hi - lo) <= 2e-6 * scale:
        raise FitError(f"'{name}': mesh has zero volume (flat along one axis)" if closed
                       else f"'{name}': mesh is open and flat, it has zero volume")
    if not support:
        m.frames = [m.axes]
        return m
    # the suggested frames first: of fits that score the same, the first frame's wins (FRAME_TIE)
    candidates = [_right_handed(np.asarray(f, dtype=np.float64)) for f in frames] + [m.axes]
    faces = _face_frame(v, tri)
    if faces is not None:
        candidates.append(faces)
    for frame in candidates:
        # frames whose axes are the same lines (in any order) give the same fits
        if not any(np.allclose(np.abs(f.T @ frame).max(axis=1), 1.0, atol=1e-9) for f in m.frames):
            m.frames.append(frame)
    m.directions = fibonacci_directions(SCORE_DIRECTIONS)
    along = v @ m.directions.T
    m.reach = along.max(axis=0)
    m.width = float(np.mean(m.reach - along.min(axis=0))) / 2.0
    return m


def _face_frame(v, tri):
    """The frame of the mesh's largest flat area and the largest flat area square to it, else None."""
    cross = np.cross(v[tri[:, 1]] - v[tri[:, 0]], v[tri[:, 2]] - v[tri[:, 0]])
    area = np.linalg.norm(cross, axis=1)
    keep = area > 1e-12 * max(float(area.max()), 1e-300)
    normal, area = cross[keep] / area[keep, None], area[keep]
    # one sign per line: the first clearly non-zero component positive
    lead = np.argmax(np.abs(normal) > 1e-6, axis=1)
    normal *= np.where(normal[np.arange(len(normal)), lead] < 0.0, -1.0, 1.0)[:, None]
    grid = np.round(normal * 1e4).astype(np.int64) + 10001  # normals on a grid of 1e-4, as one integer each
    keys, inverse = np.unique((grid[:, 0] * 20003 + grid[:, 1]) * 20003 + grid[:, 2], return_inverse=True)
    weight = np.bincount(inverse.reshape(-1), area)
    order = np.argsort(-weight)[:64]
    cells = np.stack([keys[order] // 20003 ** 2, keys[order] // 20003 % 20003, keys[order] % 20003], axis=1) - 10001
    lines = cells / np.linalg.norm(cells, axis=1)[:, None]
    first = lines[0]
    square = np.flatnonzero(np.abs(lines[1:] @ first) < 1e-3)
    if not square.size:
        return None
    second = lines[1 + square[0]] - (lines[1 + square[0]] @ first) * first
    second /= np.linalg.norm(second)
    return np.stack([first, second, np.cross(first, second)], axis=1)


def _scores(m, kind, centers, rotations, params):
    """The support gap (module docstring) of F fits of one family at once: centres (F, 3), rotations (F, 3, 3),
    parameter rows (F, 5); (F,). One call for all of a family's candidate frames: most of a fit's time was numpy's
    overhead on a call for each."""
    centers, rotations, params = (np.asarray(x, dtype=np.float64) for x in (centers, rotations, params))
    local = m.directions @ rotations  # (F, K, 3): the directions in each fit's frame
    h = centers @ m.directions.T + support_values(kind, params[:, None, :], local)
    return np.mean(np.abs(h - m.reach), axis=-1) / m.width


def _first_best(scores):
    """The index of the least score; of those within FRAME_TIE of it, the first (the suggested frames come first)."""
    return int(np.flatnonzero(scores <= scores.min() + FRAME_TIE)[0])


def _fit(m, kind, center, rotation, params, method, hull=None, faces=None, score=None):
    """The ShapeFit of a family's parameters in a frame (``score``: its _scores, where known)."""
    params = np.asarray(params, dtype=np.float64)
    if score is None and kind != HULL:
        score = float(_scores(m, kind, [center], [rotation], [params])[0])
    shape_volume = volume(kind, params, hull, faces)
    return ShapeFit(kind, np.asarray(center, dtype=np.float64), rotation, params,
                    m.volume if m.closed else shape_volume, shape_volume, m.closed, method,
                    score=0.0 if kind == HULL else score,
                    hull_vertices=hull, hull_faces=faces)


def _fit_best(m, kind, candidates, method):
    """_fit of the best (_first_best) of a family's candidates, (centre, rotation, parameter row) in each frame."""
    centers, rotations, params = (np.array(x) for x in zip(*candidates))
    scores = _scores(m, kind, centers, rotations, params)
    k = _first_best(scores)
    return _fit(m, kind, centers[k], rotations[k], params[k], method, score=float(scores[k]))


def _axis_frames(m):
    """(frame, its vertices and their extents) for each candidate frame three times, its x, y and z in turn as
    the z axis (a cyclic shift keeps it right-handed)."""
    for index, frame in enumerate(m.frames):
        local, lo, hi = _extents(m, frame, index)
        for k in range(3):
            order = [(k + 1) % 3, (k + 2) % 3, k]
            yield frame[:, order], local[:, order], lo[order], hi[order]


def _extents(m, frame, index=None):
    """The vertices in a frame about the centroid and their bounds (cached by frame index)."""
    if index is None or index not in m.local:
        local = (m.vertices - m.centroid) @ frame
        found = local, local.min(axis=0), local.max(axis=0)
        if index is None:
            return found
        m.local[index] = found
    return m.local[index]


def _fit_ellipsoid(m):
    center, rotation, semi, method, warning = _ellipsoid_parts(m)
    fit = _fit(m, ELLIPSOID, center, rotation, row(ELLIPSOID, semi_axes=semi), method)
    fit.warning = warning
    return fit


def _fit_box(m):
    candidates = []
    for index, frame in enumerate(m.frames):
        _, lo, hi = _extents(m, frame, index)
        candidates.append((m.centroid + frame @ (0.5 * (lo + hi)), frame, row(BOX, half_extents=0.5 * (hi - lo))))
    return _fit_best(m, BOX, candidates, "ENCLOSING")


def _fit_round(m, kind):
    """The cylinder or capsule about each candidate axis that holds the vertices; the best one."""
    candidates = []
    for frame, local, lo, hi in _axis_frames(m):
        across = np.zeros(2) if m.closed else 0.5 * (lo[:2] + hi[:2])  # the centroid lies on a solid's axis
        radial = np.hypot(local[:, 0] - across[0], local[:, 1] - across[1])
        radius = float(radial.max())
        if kind == CYLINDER:
            bottom, top = lo[2], hi[2]
        else:  # caps of the widest radius: each vertex needs the segment to reach within its cap's height
            rise = np.sqrt(np.maximum(radius * radius - radial * radial, 0.0))
            top, bottom = float(np.max(local[:, 2] - rise)), float(np.min(local[:, 2] + rise))
        half_height = max(0.5 * (top - bottom), 1e-6 * m.scale)
        center = m.centroid + frame @ np.array([across[0], across[1], 0.5 * (top + bottom)])
        candidates.append((center, frame, row(kind, radius=radius, half_height=half_height)))
    return _fit_best(m, kind, candidates, "ENCLOSING")


_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
            12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7)


def _lgamma(x):
    """log Gamma(x) of an array, x > 0: Lanczos' approximation (g = 7, nine terms; within 5e-15 of math.lgamma,
    relative), where math.lgamma element by element took a sixth of a fit's time. Below 1/2 through
    Gamma(x+1) = x Gamma(x)."""
    x = np.asarray(x, dtype=np.float64)
    small = x < 0.5
    z = np.where(small, x, x - 1.0)  # Lanczos' series is for Gamma(z + 1): z + 1 = x, or x + 1 below 1/2
    series = np.full_like(z, _LANCZOS[0])
    for i, c in enumerate(_LANCZOS[1:], start=1):
        series += c / (z + i)
    t = z + 7.5
    value = 0.5 * math.log(2.0 * math.pi) + (z + 0.5) * np.log(t) - t + np.log(series)
    return np.where(small, value - np.log(x), value)


def _log_beta(x, y):
    return _lgamma(x) + _lgamma(y) - _lgamma(x + y)


def _unit_moments(e1, e2):
    """Volume and the integrals of u^2 (= of v^2) and w^2 over the unit superellipsoid, for arrays of exponents
    (shapes.superellipsoid_moment, vectorised)."""
    def moment(p, q, s):
        a, b = (p + 1) * e2 / 2.0, (q + 1) * e2 / 2.0
        return e1 * e2 * e2 / (a + b) * np.exp(_log_beta(a, b) + _log_beta((s + 1) * e1 / 2.0,
                                                                           (p + q + 2) * e1 / 2.0 + 1.0))
    return moment(0, 0, 0), moment(2, 0, 0), moment(0, 0, 2)


_GRID_STEP = 0.05
_FINE = 10  # the fine grid's steps per coarse step
_grid = {}


def _grid_values(step):
    return EXPONENT_RANGE[0] + step * np.arange(round((EXPONENT_RANGE[1] - EXPONENT_RANGE[0]) / step) + 1)


def _exponent_grid():
    """Exponent pairs over EXPONENT_RANGE and their unit moments (computed once)."""
    if not _grid:
        values = _grid_values(_GRID_STEP)
        e1, e2 = (x.ravel() for x in np.meshgrid(values, values, indexing="ij"))
        _grid["pairs"] = (e1, e2)
        _grid["moments"] = _unit_moments(e1, e2)
    return _grid["pairs"], _grid["moments"]


@functools.lru_cache(maxsize=256)  # 18 kB each
def _fine_window(i, j):
    """The pairs of the grid _FINE times finer within a coarse step of its pair (i, j), and their unit moments
    (cached: meshes alike refine about the same coarse pair, and all 145,161 fine pairs at once would take 0.3 s)."""
    values = _grid_values(_GRID_STEP / _FINE)
    rows, columns = (values[max(k - _FINE, 0):k + _FINE + 1] for k in (i, j))
    e1, e2 = (x.ravel() for x in np.meshgrid(rows, columns, indexing="ij"))
    return e1, e2, _unit_moments(e1, e2)


def _moment_mismatch(semi, target, moments):
    """Squared relative errors of volume and second moments along x, y, z, for semi-axes (..., 3) and targets
    (..., 4: V, Sxx, Syy, Szz) against the unit moments of G exponent pairs: (..., G)."""
    semi, target = np.asarray(semi)[..., None], np.asarray(target)[..., None]
    a, b, c = semi[..., 0, :], semi[..., 1, :], semi[..., 2, :]
    m0, m2, mz = moments
    abc = a * b * c
    got = (abc * m0, abc * a * a * m2, abc * b * b * m2, abc * c * c * mz)
    return sum((g / target[..., i, :] - 1.0) ** 2 for i, g in enumerate(got))


def _exponents_by_moments(semi, target, around=None):
    """The exponents on the grid that match the target best (for each of (..., 3) semi-axes and (..., 4) targets),
    or on a grid ten times finer around a pair (for one)."""
    if around is None:
        (e1, e2), moments = _exponent_grid()
    else:
        i, j = (int(round((a - EXPONENT_RANGE[0]) / (_GRID_STEP / _FINE))) for a in around)
        e1, e2, moments = _fine_window(i, j)
    k = np.argmin(_moment_mismatch(semi, target, moments), axis=-1)
    return e1[k], e2[k]


def _exponents_by_support(m, center, frame, semi):
    values = np.arange(EXPONENT_RANGE[0], EXPONENT_RANGE[1] + 1e-9, 0.1)
    e1, e2 = (x.ravel() for x in np.meshgrid(values, values, indexing="ij"))
    rows = np.zeros((len(e1), 1, 5))
    rows[:, 0, :3], rows[:, 0, 3], rows[:, 0, 4] = semi, e1, e2
    h = m.directions @ center + support_values(SUPERELLIPSOID, rows, (m.directions @ frame)[None])
    k = int(np.argmin(np.mean(np.abs(h - m.reach), axis=1)))
    return e1[k], e2[k]


def _fit_superellipsoid(m):
    """Semi-axes from the bounding box in each candidate frame, exponents from the coarse grid there; the
    best-scoring frame's exponents are then refined."""
    frames = list(_axis_frames(m))
    rotations = np.array([frame for frame, _, _, _ in frames])
    lo, hi = np.array([f[2] for f in frames]), np.array([f[3] for f in frames])
    semi = 0.5 * (hi - lo)
    centers = m.centroid + np.einsum("fij,fj->fi", rotations, 0.5 * (lo + hi))
    if m.closed:  # the volume and the second moments about each frame's axes
        targets = np.concatenate([np.full((len(frames), 1), m.volume),
                                  np.einsum("fji,jk,fki->fi", rotations, m.central, rotations)], axis=1)
        exponents, method = np.stack(_exponents_by_moments(semi, targets), axis=1), "VOLUME_INERTIA"
    else:
        exponents = np.array([_exponents_by_support(m, c, r, s) for c, r, s in zip(centers, rotations, semi)])
        method = "SUPPORT"
    params = np.array([row(SUPERELLIPSOID, semi_axes=s, exponents=e) for s, e in zip(semi, exponents)])
    scores = _scores(m, SUPERELLIPSOID, centers, rotations, params)
    k = _first_best(scores)
    if not m.closed:
        return _fit(m, SUPERELLIPSOID, centers[k], rotations[k], params[k], method, score=float(scores[k]))
    params[k] = row(SUPERELLIPSOID, semi_axes=semi[k],
                    exponents=_exponents_by_moments(semi[k], targets[k], around=params[k, 3:5]))
    return _fit(m, SUPERELLIPSOID, centers[k], rotations[k], params[k], method)


_hull_module = None


def convex_hull(points):
    """(vertices, faces) of the convex hull of points, by the solver's exact quickhull.

    quadric_solver/shapes/hull.py is plain numpy, but importing it through its package would load numba (the
    package's support kernels), so it is loaded from its file.
    """
    global _hull_module
    if _hull_module is None:
        path = os.path.join(solver_package.folder(), "shapes", "hull.py")
        spec = importlib.util.spec_from_file_location(f"{__name__}_solver_hull", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _hull_module = module
    return _hull_module.convex_hull(np.asarray(points, dtype=np.float64))


def _fit_hull(m):
    frame = m.axes
    try:
        vertices, faces = convex_hull(m.vertices)
    except ValueError as exc:  # DegenerateHull: flat within rounding
        raise FitError(f"'{m.name}': mesh has no solid convex hull ({exc})") from None
    return _fit(m, HULL, m.centroid.copy(), frame, np.zeros(5), "HULL", (vertices - m.centroid) @ frame,
                faces.astype(np.int64))


def fit_shape(vertices, triangles, family="AUTO", name="mesh", frames=()):
    """Fit a shape family ('AUTO', 'ELLIPSOID', 'SUPERELLIPSOID', 'BOX', 'CYLINDER', 'CAPSULE' or
    'CONVEX_HULL') to a triangle mesh; ``frames`` are further candidate frames (rotation matrices, e.g. the
    object's axes). Returns a ShapeFit; raises FitError naming the mesh when it has no volume."""
    if family == "ELLIPSOID":  # one frame, nothing to compare
        m = _measure(vertices, triangles, name, (), support=False)
        center, rotation, semi, method, warning = _ellipsoid_parts(m)
        params = row(ELLIPSOID, semi_axes=semi)
        shape_volume = volume(ELLIPSOID, params)
        return ShapeFit(ELLIPSOID, center, rotation, params, m.volume if m.closed else shape_volume, shape_volume,
                        m.closed, method, warning, score=math.nan)
    m = _measure(vertices, triangles, name, frames)
    fitters = {ELLIPSOID: lambda: _fit_ellipsoid(m), BOX: lambda: _fit_box(m),
               CYLINDER: lambda: _fit_round(m, CYLINDER), CAPSULE: lambda: _fit_round(m, CAPSULE),
               SUPERELLIPSOID: lambda: _fit_superellipsoid(m), HULL: lambda: _fit_hull(m)}
    if family != "AUTO":
        fit = fitters[kind_of(family)]()
    else:
        fits = {kind: fitters[kind]() for kind in FAMILY_ORDER}
        best = min(f.score for f in fits.values())
        fit = next(fits[kind] for kind in FAMILY_ORDER if fits[kind].score <= best + TIE)
        scores = {NAMES[kind]: f.score for kind, f in fits.items()}
        if best > HULL_ABOVE:
            fit = fitters[HULL]()
        fit.scores = dict(scores, **{NAMES[HULL]: 0.0})
    if not m.closed and not fit.warning:
        fit.warning = (f"'{name}': mesh is not closed; its mass is the fitted {NAMES[fit.kind]}'s volume times the "
                       "density")
    return fit
