"""The shapes a Quadric body can have, in plain numpy (no bpy, no numba).

Each family is a solver shape (quadric_solver/shapes/values.py) in its own frame, centred on its origin with
its symmetry axes along the frame's axes. Here a shape is a kind (the solver's ids, support.py) and
a row of PARAMS floats; a hull's vertices come beside the row:

    ELLIPSOID 0        a, b, c (semi-axes)
    SUPERELLIPSOID 1   a, b, c, e1, e2
    BOX 2              hx, hy, hz (half extents)
    CYLINDER 3         radius, half_height (along z)
    CAPSULE 4          radius, half_height (of the segment between the caps' centres)
    HULL 5             -  (its vertices (V, 3), in its frame)

The support functions (the farthest point along a direction, and how far) are the closed forms of
quadric_solver/shapes/support.py, vectorised over directions; the add-on's fit and Check Scene use them so
that nothing compiles before a simulation. Also: volumes, half-widths, bounding radii and a mesh
that shows the shape.
"""
import functools
import math

import numpy as np

ELLIPSOID, SUPERELLIPSOID, BOX, CYLINDER, CAPSULE, HULL = range(6)
# the Blender enum identifiers, by kind
FAMILIES = ("ELLIPSOID", "SUPERELLIPSOID", "BOX", "CYLINDER", "CAPSULE", "CONVEX_HULL")
NAMES = ("ellipsoid", "superellipsoid", "box", "cylinder", "capsule", "convex hull")
PARAMS = 5
EXPONENT_RANGE = (0.1, 2.0)  # as quadric_solver/shapes/values.py
# the body setting that holds each family's parameters, and the solver argument it becomes
FIELDS = {ELLIPSOID: ("semi_axes",), SUPERELLIPSOID: ("semi_axes", "exponents"), BOX: ("half_extents",),
          CYLINDER: ("radius", "half_height"), CAPSULE: ("radius", "half_height"), HULL: ()}


def kind_of(family):
    """The kind of a Blender enum identifier ('BOX' -> BOX)."""
    return FAMILIES.index(family)


def row(kind, semi_axes=(0.0, 0.0, 0.0), exponents=(1.0, 1.0), half_extents=(0.0, 0.0, 0.0), radius=0.0,
        half_height=0.0):
    """The parameter row of a shape from its named parameters (the others are ignored)."""
    out = np.zeros(PARAMS)
    if kind in (ELLIPSOID, SUPERELLIPSOID):
        out[:3] = semi_axes
        if kind == SUPERELLIPSOID:
            out[3:5] = exponents
    elif kind == BOX:
        out[:3] = half_extents
    elif kind in (CYLINDER, CAPSULE):
        out[:2] = radius, half_height
    return out


def named(kind, params):
    """{field: value} of a row, the inverse of ``row`` (a hull has none)."""
    p = [float(x) for x in params]
    return {ELLIPSOID: lambda: dict(semi_axes=tuple(p[:3])),
            SUPERELLIPSOID: lambda: dict(semi_axes=tuple(p[:3]), exponents=tuple(p[3:5])),
            BOX: lambda: dict(half_extents=tuple(p[:3])),
            CYLINDER: lambda: dict(radius=p[0], half_height=p[1]),
            CAPSULE: lambda: dict(radius=p[0], half_height=p[1]),
            HULL: dict}[kind]()


def sizes(kind, params):
    """The lengths of a row that must be positive (all but a superellipsoid's exponents)."""
    p = np.asarray(params, dtype=np.float64)
    return {ELLIPSOID: p[:3], SUPERELLIPSOID: p[:3], BOX: p[:3], CYLINDER: p[:2], CAPSULE: p[:2],
            HULL: np.ones(1)}[kind]


# ------------------------------------------------------------------------------------------ support
def _sign(x):
    return np.where(x >= 0.0, 1.0, -1.0)


def _dual_pair(x, y, e):
    """Hoelder's maximiser of (x, y).(s, t) over the unit ball of the 2/e norm, for x, y >= 0 (arrays).

    Returns (the dual norm of (x, y), s, t), as quadric_solver/shapes/support.py:_dual_pair.
    """
    x, y, e = np.broadcast_arrays(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64),
                                  np.asarray(e, dtype=np.float64))
    top = np.maximum(x, y)
    live = top > 0.0
    safe = np.where(live, top, 1.0)
    rx, ry = x / safe, y / safe
    sharp = e >= 2.0
    dual = 2.0 / (2.0 - np.where(sharp, 1.0, e))
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        norm = (rx ** dual + ry ** dual) ** (1.0 / dual)
        safe_norm = np.where(norm > 0.0, norm, 1.0)
        s, t = (rx / safe_norm) ** (dual - 1.0), (ry / safe_norm) ** (dual - 1.0)
    wx, wy = (x >= y).astype(np.float64), (y >= x).astype(np.float64)
    s = np.where(sharp, wx / (wx + wy), s)
    t = np.where(sharp, wy / (wx + wy), t)
    value = np.where(sharp, top, top * norm)
    return np.where(live, value, 0.0), np.where(live, s, 0.0), np.where(live, t, 0.0)


def support_values(kind, params, directions, hull=None):
    """h(d) = max over the shape of d.x, for local directions (..., 3) (need not be unit).

    ``params`` is a row (5,) or rows that broadcast against the directions' leading axes, e.g. (P, 1, 5)
    for directions (P, K, 3).
    """
    d = np.asarray(directions, dtype=np.float64)
    p = np.asarray(params, dtype=np.float64)
    dx, dy, dz = d[..., 0], d[..., 1], d[..., 2]
    if kind == ELLIPSOID:
        return np.sqrt((p[..., 0] * dx) ** 2 + (p[..., 1] * dy) ** 2 + (p[..., 2] * dz) ** 2)
    if kind == SUPERELLIPSOID:
        sigma, _, _ = _dual_pair(np.abs(p[..., 0] * dx), np.abs(p[..., 1] * dy), p[..., 4])
        value, _, _ = _dual_pair(sigma, np.abs(p[..., 2] * dz), p[..., 3])
        return value
    if kind == BOX:
        return p[..., 0] * np.abs(dx) + p[..., 1] * np.abs(dy) + p[..., 2] * np.abs(dz)
    if kind == CYLINDER:
        return p[..., 0] * np.hypot(dx, dy) + p[..., 1] * np.abs(dz)
    if kind == CAPSULE:
        return p[..., 0] * np.sqrt(dx * dx + dy * dy + dz * dz) + p[..., 1] * np.abs(dz)
    return (d @ np.asarray(hull, dtype=np.float64).T).max(axis=-1)


def support_points(kind, params, directions, hull=None):
    """The support point (..., 3) of a shape along local directions (..., 3) (a zero direction: the origin)."""
    d = np.asarray(directions, dtype=np.float64)
    p = np.asarray(params, dtype=np.float64)
    dx, dy, dz = d[..., 0], d[..., 1], d[..., 2]
    if kind == ELLIPSOID:
        a2 = p[..., :3] ** 2
        ad = a2 * d
        norm = np.sqrt(np.sum(ad * d, axis=-1))
        return ad / np.where(norm > 0.0, norm, np.inf)[..., None]
    if kind == SUPERELLIPSOID:
        a, b, c, e1, e2 = (p[..., k] for k in range(5))
        sigma, u, v = _dual_pair(np.abs(a * dx), np.abs(b * dy), e2)
        _, rho, w = _dual_pair(sigma, np.abs(c * dz), e1)
        return np.stack([_sign(dx) * a * rho * u, _sign(dy) * b * rho * v, _sign(dz) * c * w], axis=-1)
    if kind == BOX:
        return _sign(d) * p[..., :3]
    if kind in (CYLINDER, CAPSULE):
        radius, half_height = p[..., 0], p[..., 1]
        across = np.hypot(dx, dy) if kind == CYLINDER else np.sqrt(dx * dx + dy * dy + dz * dz)
        scale = radius / np.where(across > 0.0, across, np.inf)
        z = _sign(dz) * half_height + (scale * dz if kind == CAPSULE else 0.0)
        return np.stack([scale * dx, scale * dy, np.broadcast_to(z, dx.shape)], axis=-1)
    hull = np.asarray(hull, dtype=np.float64)
    return hull[np.argmax(d @ hull.T, axis=-1)]


def fibonacci_directions(count):
    """``count`` unit vectors spread evenly over the sphere (a Fibonacci lattice), (count, 3)."""
    k = np.arange(count) + 0.5
    z = 1.0 - 2.0 * k / count
    phi = np.pi * (1.0 + 5.0 ** 0.5) * k
    r = np.sqrt(np.maximum(1.0 - z * z, 0.0))
    return np.stack([r * np.cos(phi), r * np.sin(phi), z], axis=1)


# ------------------------------------------------------------------------------------ measures
def _beta(x, y):
    return math.exp(math.lgamma(x) + math.lgamma(y) - math.lgamma(x + y))


def superellipsoid_moment(p, q, s, e1, e2):
    """The integral of u^p v^q w^s (even powers) over the unit superellipsoid, as quadric_solver/shapes/mass.py."""
    a, b = (p + 1) * e2 / 2.0, (q + 1) * e2 / 2.0
    return e1 * e2 * e2 * _beta(a, b) / (a + b) * _beta((s + 1) * e1 / 2.0, (p + q + 2) * e1 / 2.0 + 1.0)


def mesh_volume(vertices, faces):
    """Volume of a closed triangle mesh with outward faces (signed tetrahedra from the vertex centroid)."""
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    v = v - v.mean(axis=0)
    a, b, c = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
    return float(abs(np.einsum("ij,ij->", a, np.cross(b, c))) / 6.0)


def volume(kind, params, hull=None, hull_faces=None):
    """Volume of the solid (m^3)."""
    p = [float(x) for x in params]
    if kind == ELLIPSOID:
        return 4.0 / 3.0 * math.pi * p[0] * p[1] * p[2]
    if kind == SUPERELLIPSOID:
        return p[0] * p[1] * p[2] * superellipsoid_moment(0, 0, 0, p[3], p[4])
    if kind == BOX:
        return 8.0 * p[0] * p[1] * p[2]
    if kind == CYLINDER:
        return 2.0 * math.pi * p[0] ** 2 * p[1]
    if kind == CAPSULE:
        return 2.0 * math.pi * p[0] ** 2 * p[1] + 4.0 / 3.0 * math.pi * p[0] ** 3
    return mesh_volume(hull, hull_faces)


def half_widths(kind, params, hull=None):
    """Half of the shape's width along each axis of its frame, (3,): the semi-axes of an ellipsoid."""
    p = np.asarray(params, dtype=np.float64)
    if kind == HULL:
        h = np.asarray(hull, dtype=np.float64)
        return 0.5 * (h.max(axis=0) - h.min(axis=0))
    if kind in (CYLINDER, CAPSULE):
        return np.array([p[0], p[0], p[1] + (p[0] if kind == CAPSULE else 0.0)])
    return p[:3].copy()


def bounding_radius(kind, params, hull=None):
    """Radius of a ball about the frame's origin that holds the shape, as quadric_solver/shapes/support.py."""
    p = np.asarray(params, dtype=np.float64)
    if kind == ELLIPSOID:
        return float(p[:3].max())
    if kind in (SUPERELLIPSOID, BOX):  # a superellipsoid lies in its box
        return float(np.linalg.norm(p[:3]))
    if kind == CYLINDER:
        return float(np.hypot(p[0], p[1]))
    if kind == CAPSULE:
        return float(p[0] + p[1])
    return float(np.linalg.norm(np.asarray(hull, dtype=np.float64), axis=1).max())


# ---------------------------------------------------------------------------------- display mesh
def _grid(points, rings, segments):
    """The points with the faces of a closed (rings x segments) latitude-longitude grid with a pole before and
    after it."""
    return points, _grid_faces(rings, segments)


@functools.lru_cache(maxsize=None)
def _grid_faces(rings, segments):
    """_grid's faces: the same for every body of a family (a third of Add Body's time making 300 displays)."""
    faces = []
    south, north = 0, 1 + rings * segments
    at = lambda i, j: 1 + i * segments + (j % segments)  # noqa: E731
    for j in range(segments):
        faces.append((south, at(0, j + 1), at(0, j)))
        faces.append((north, at(rings - 1, j), at(rings - 1, j + 1)))
        for i in range(rings - 1):
            faces.append((at(i, j), at(i, j + 1), at(i + 1, j + 1), at(i + 1, j)))
    return tuple(faces)


def _rings(x, y, z, cos_w, sin_w):
    """(len(x) * len(cos_w), 3): ring i's points (x[i] cos_w, y[i] sin_w, z[i]), ring by ring."""
    rows = np.empty((len(x), len(cos_w), 3))
    rows[:, :, 0] = np.outer(x, cos_w)
    rows[:, :, 1] = np.outer(y, sin_w)
    rows[:, :, 2] = np.asarray(z)[:, None]
    return rows.reshape(-1, 3)


def _signed_power(x, e):
    return np.sign(x) * np.abs(x) ** e


def display_mesh(kind, params, hull=None, hull_faces=None, segments=32, rings=15):
    """Vertices (V, 3) and faces (lists of indices) of a mesh showing the shape in its frame."""
    p = np.asarray(params, dtype=np.float64)
    if kind == BOX:
        v = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=np.float64) * p[:3]
        return v, [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    if kind == HULL:
        return np.asarray(hull, dtype=np.float64), [tuple(int(i) for i in f) for f in hull_faces]
    omega = 2.0 * np.pi * np.arange(segments) / segments
    cos_w, sin_w = np.cos(omega), np.sin(omega)
    if kind == CYLINDER:
        r, h = p[0], p[1]
        ring = np.stack([r * cos_w, r * sin_w, np.zeros(segments)], axis=1)
        v = np.concatenate([ring + (0, 0, -h), ring + (0, 0, h)])
        faces = [(j, (j + 1) % segments, segments + (j + 1) % segments, segments + j) for j in range(segments)]
        faces += [tuple(range(segments - 1, -1, -1)), tuple(range(segments, 2 * segments))]
        return v, faces
    if kind == CAPSULE:
        r, h = p[0], p[1]
        half = rings // 2 + 1  # latitude rings per cap, the equator included
        eta = np.concatenate([np.linspace(-0.5 * np.pi, 0.0, half + 1)[1:],
                              np.linspace(0.0, 0.5 * np.pi, half + 1)[:-1]])
        shift = np.where(np.arange(len(eta)) < half, -h, h)
        rows = _rings(r * np.cos(eta), r * np.cos(eta), r * np.sin(eta) + shift, cos_w, sin_w)
        return _grid(np.concatenate([[(0.0, 0.0, -h - r)], rows, [(0.0, 0.0, h + r)]]), len(eta), segments)
    eta = np.linspace(-0.5 * np.pi, 0.5 * np.pi, rings + 2)[1:-1]
    e1, e2 = (p[3], p[4]) if kind == SUPERELLIPSOID else (1.0, 1.0)
    ce, se = _signed_power(np.cos(eta), e1), _signed_power(np.sin(eta), e1)
    cw, sw = _signed_power(cos_w, e2), _signed_power(sin_w, e2)
    rows = _rings(p[0] * ce, p[1] * ce, p[2] * se, cw, sw)
    return _grid(np.concatenate([[(0.0, 0.0, -p[2])], rows, [(0.0, 0.0, p[2])]]), rings, segments)
