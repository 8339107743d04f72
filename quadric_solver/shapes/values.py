"""Shape values: the convex shape families and the bumpy ellipsoid, with their parameters, checked when made.

Each shape is immutable, compares by value and is described in its own frame (SI units): the
primitives are centred on its origin with their symmetry axes along its axes, so that frame is
their principal frame; a convex hull keeps the coordinates of the points it was made from (its
centre of mass and principal frame come from ``mass_properties``). A bad argument raises a
FieldError (a ValueError) that names the shape and the field.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..validate import FieldError, array, describe, number, vector
from . import mass
from .hull import DegenerateHull, convex_hull
from .bumps import BUMP_COLUMNS, bumpy_radius, sphere_directions
from .kinds import BOX, BUMPY, CAPSULE, CYLINDER, ELLIPSOID, HULL, PARAMS, SUPERELLIPSOID

EXPONENT_RANGE = (0.1, 2.0)  # below 0.1 the powers of a superellipsoid's support lose too many digits
BUMP_HEIGHT_RANGE = (-0.5, 1.0)  # a fraction of the base radius: dents to half of it, bumps to twice
BUMP_ANGLE_RANGE = (0.1, 0.5 * np.pi)  # radians from the apex to the rim: sampled finely enough by mass.py
MAX_BUMPS = 64
MIN_RADIUS_FACTOR = 0.25  # overlapping dents may not sink the surface below this fraction of the base


def _positive(owner, field, value) -> float:
    return number(owner, field, value, positive=True)


def _positive_vector(owner, field, value) -> tuple:
    values = vector(owner, field, value, 3)
    for k, item in enumerate(values):
        if item <= 0.0:
            raise FieldError(owner, field, f"must be positive, got {field}[{k}] = {item}")
    return values


class Shape:
    """A convex shape family member: ``kind`` (a support.py id), parameters, mass properties."""

    __slots__ = ()
    kind = -1

    def _fields(self) -> tuple:
        raise NotImplementedError

    def params(self, hull_offset: int = 0, face_offset: int = 0) -> np.ndarray:
        """This shape's row of support.PARAMS floats (a hull's vertices start at ``hull_offset``, its faces
        at ``face_offset``)."""
        raise NotImplementedError

    def mass_properties(self, density: float = 1000.0) -> mass.MassProperties:
        raise NotImplementedError

    def __eq__(self, other):
        return type(other) is type(self) and self._fields() == other._fields()

    def __hash__(self):
        return hash((type(self).__name__, self._fields()))

    def __repr__(self):
        return f"{type(self).__name__}{self._fields()!r}"

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable")

    def _set(self, **values):
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def __reduce__(self):
        """Pickled as its fields (immutability refuses pickle's own restore): Dask and multiprocessing send shapes."""
        return _restore, (type(self), {name: getattr(self, name) for name in self.__slots__})

    def _density(self, density) -> float:
        return _positive(type(self).__name__, "density", density)


def _restore(cls, values) -> Shape:
    for value in values.values():
        if isinstance(value, np.ndarray):  # a hull's arrays stay read-only, as when made
            value.flags.writeable = False
    shape = cls.__new__(cls)
    shape._set(**values)
    return shape


def _row(*values) -> np.ndarray:
    row = np.zeros(PARAMS)
    row[:len(values)] = values
    return row


class Ellipsoid(Shape):
    """Solid ellipsoid (x/a)^2 + (y/b)^2 + (z/c)^2 <= 1 with ``semi_axes`` (a, b, c)."""

    __slots__ = ("semi_axes",)
    kind = ELLIPSOID

    def __init__(self, semi_axes):
        self._set(semi_axes=_positive_vector("Ellipsoid", "semi_axes", semi_axes))

    def _fields(self):
        return (self.semi_axes,)

    def params(self, hull_offset=0, face_offset=0):
        return _row(*self.semi_axes)

    def mass_properties(self, density=1000.0):
        return mass.ellipsoid(self.semi_axes, self._density(density))


class Superellipsoid(Shape):
    """Barr's superellipsoid (|x/a|^(2/e2) + |y/b|^(2/e2))^(e2/e1) + |z/c|^(2/e1) <= 1.

    ``semi_axes`` (a, b, c); ``exponents`` (e1, e2), each in [0.1, 2]: e1 shapes the profile along
    z, e2 the cross-section in x-y. (1, 1) is the ellipsoid, small values round boxes (e2 = 1 with
    a small e1 is a rounded cylinder) and 2 gives sharp diamond edges.
    """

    __slots__ = ("semi_axes", "exponents")
    kind = SUPERELLIPSOID

    def __init__(self, semi_axes, exponents):
        exponents = vector("Superellipsoid", "exponents", exponents, 2)
        low, high = EXPONENT_RANGE
        for k, item in enumerate(exponents):
            if not low <= item <= high:
                raise FieldError("Superellipsoid", "exponents",
                                 f"must be in [{low:g}, {high:g}], got exponents[{k}] = {item}")
        self._set(semi_axes=_positive_vector("Superellipsoid", "semi_axes", semi_axes), exponents=exponents)

    def _fields(self):
        return self.semi_axes, self.exponents

    def params(self, hull_offset=0, face_offset=0):
        return _row(*self.semi_axes, *self.exponents)

    def mass_properties(self, density=1000.0):
        return mass.superellipsoid(self.semi_axes, self.exponents, self._density(density))


class Box(Shape):
    """Solid box |x| <= hx, |y| <= hy, |z| <= hz with ``half_extents`` (hx, hy, hz)."""

    __slots__ = ("half_extents",)
    kind = BOX

    def __init__(self, half_extents):
        self._set(half_extents=_positive_vector("Box", "half_extents", half_extents))

    def _fields(self):
        return (self.half_extents,)

    def params(self, hull_offset=0, face_offset=0):
        return _row(*self.half_extents)

    def mass_properties(self, density=1000.0):
        return mass.box(self.half_extents, self._density(density))


class Cylinder(Shape):
    """Solid cylinder along local z: x^2 + y^2 <= radius^2, |z| <= half_height."""

    __slots__ = ("radius", "half_height")
    kind = CYLINDER

    def __init__(self, radius, half_height):
        self._set(radius=_positive("Cylinder", "radius", radius),
                  half_height=_positive("Cylinder", "half_height", half_height))

    def _fields(self):
        return self.radius, self.half_height

    def params(self, hull_offset=0, face_offset=0):
        return _row(self.radius, self.half_height)

    def mass_properties(self, density=1000.0):
        return mass.cylinder(self.radius, self.half_height, self._density(density))


class Capsule(Shape):
    """Points within ``radius`` of the segment from (0, 0, -half_height) to (0, 0, half_height):
    a cylinder of that half-height capped by two hemispheres."""

    __slots__ = ("radius", "half_height")
    kind = CAPSULE

    def __init__(self, radius, half_height):
        self._set(radius=_positive("Capsule", "radius", radius),
                  half_height=_positive("Capsule", "half_height", half_height))

    def _fields(self):
        return self.radius, self.half_height

    def params(self, hull_offset=0, face_offset=0):
        return _row(self.radius, self.half_height)

    def mass_properties(self, density=1000.0):
        return mass.capsule(self.radius, self.half_height, self._density(density))


class ConvexHull(Shape):
    """The convex hull of ``points`` (N, 3), at least 4 of them not in one plane.

    Stores ``vertices`` (V, 3), the hull's corners in the points' coordinates, and ``faces``
    (F, 3), triangles of vertex indices, counter-clockwise seen from outside. Duplicate points and
    points inside the hull or inside its flat faces are dropped.
    """

    __slots__ = ("vertices", "faces")
    kind = HULL

    def __init__(self, points):
        points = array("ConvexHull", "points", points, (None, 3), "an (N, 3) array of points")
        if len(points) < 4:
            raise FieldError("ConvexHull", "points",
                             f"must hold at least 4 points not all in one plane, got {len(points)} points")
        try:
            vertices, faces = convex_hull(points)
        except DegenerateHull as error:
            raise FieldError("ConvexHull", "points", f"must hold at least 4 points not all in one plane: "
                             f"the {len(points)} points given span only {error.spans}") from None
        vertices.flags.writeable = False
        faces.flags.writeable = False
        self._set(vertices=vertices, faces=faces)

    def _fields(self):
        return self.vertices.tobytes(), self.faces.tobytes()

    def __repr__(self):
        return f"ConvexHull({len(self.vertices)} vertices, {len(self.faces)} faces)"

    def params(self, hull_offset=0, face_offset=0):
        """(first vertex row, vertex count, first face row, face count) in shared arrays."""
        return _row(hull_offset, len(self.vertices), face_offset, len(self.faces))

    def mass_properties(self, density=1000.0):
        return mass.polyhedron(self.vertices, self.faces, self._density(density))


class BumpyEllipsoid(Shape):
    """An ellipsoid with bumps and dents: a pebble or grain that keeps its shape detail (an FDO body: an
    ellipsoid base plus local perturbations). It need not be convex.

    ``semi_axes`` (a, b, c) give the base. Each of ``bumps`` is (direction, height, angular_radius): along
    ``direction`` (shape frame; any length) the surface is lifted by ``height`` times the base's radius
    there (negative: a dent), in [-0.5, 1]; the lift fades smoothly to nothing ``angular_radius``
    radians from that direction, in [0.1, pi/2]. Bumps add where they overlap, but dents may not sink
    the surface below a quarter of the base radius anywhere. Formula: shapes/bumps.py.
    """

    __slots__ = ("semi_axes", "bumps")
    kind = BUMPY

    def __init__(self, semi_axes, bumps=()):
        owner = "BumpyEllipsoid"
        semi_axes = _positive_vector(owner, "semi_axes", semi_axes)
        if isinstance(bumps, (str, bytes)) or not hasattr(bumps, "__len__"):
            raise FieldError(owner, "bumps", f"must be a list of (direction, height, angular_radius), "
                                             f"got {describe(bumps)}")
        if len(bumps) > MAX_BUMPS:
            raise FieldError(owner, "bumps", f"may hold at most {MAX_BUMPS} bumps, got {len(bumps)}")
        checked = []
        for k, bump in enumerate(bumps):
            field = f"bumps[{k}]"
            if isinstance(bump, (str, bytes)) or not hasattr(bump, "__len__") or len(bump) != 3:
                raise FieldError(owner, field, f"must be (direction, height, angular_radius), got {describe(bump)}")
            direction = np.array(vector(owner, f"{field}.direction", bump[0], 3))
            length = float(np.linalg.norm(direction))
            if not length > 0.0:
                raise FieldError(owner, f"{field}.direction", "must not be zero")
            height = number(owner, f"{field}.height", bump[1])
            angle = number(owner, f"{field}.angular_radius", bump[2])
            for name, value, (low, high) in (("height", height, BUMP_HEIGHT_RANGE),
                                             ("angular_radius", angle, BUMP_ANGLE_RANGE)):
                if not low <= value <= high:
                    raise FieldError(owner, f"{field}.{name}", f"must be in [{low:g}, {high:g}], got {value}")
            checked.append((tuple(float(x) for x in direction / length), height, angle))
        self._set(semi_axes=semi_axes, bumps=tuple(checked))
        self._check_dents()

    def _check_dents(self):
        """The surface factor s(u) must stay above MIN_RADIUS_FACTOR: sampled where it is least, at the
        dents' apexes and on a fine sphere of directions."""
        rows = self.bump_rows()
        if not np.any(rows[:, 3] < 0.0):
            return
        u = np.concatenate([sphere_directions(20000), rows[rows[:, 3] < 0.0, :3]])
        a, b, c = self.semi_axes
        factor = bumpy_radius(a, b, c, rows, 0, len(rows), u[:, 0], u[:, 1], u[:, 2])[0] / \
            bumpy_radius(a, b, c, rows, 0, 0, u[:, 0], u[:, 1], u[:, 2])[0]
        least = int(np.argmin(factor))
        if factor[least] < MIN_RADIUS_FACTOR:
            raise FieldError("BumpyEllipsoid", "bumps", f"sink the surface to {factor[least]:.3g} of the base "
                                                        f"radius along {np.round(u[least], 3).tolist()}; overlapping "
                                                        f"dents may keep no less than {MIN_RADIUS_FACTOR:g}")

    def _fields(self):
        return self.semi_axes, self.bumps

    def __repr__(self):
        return f"BumpyEllipsoid({self.semi_axes!r}, {len(self.bumps)} bumps)"

    def bump_rows(self) -> np.ndarray:
        """(B, 5) rows (d_x, d_y, d_z, height, cos angular_radius) for shapes/bumps.py."""
        rows = np.zeros((len(self.bumps), BUMP_COLUMNS))
        for k, (direction, height, angle) in enumerate(self.bumps):
            rows[k] = (*direction, height, np.cos(angle))
        return rows

    def radius(self, directions) -> np.ndarray:
        """Distance from the origin to the surface along each unit direction (N, 3), shape frame."""
        u = np.asarray(directions, dtype=np.float64)
        rows = self.bump_rows()
        return bumpy_radius(*self.semi_axes, rows, 0, len(rows), u[..., 0], u[..., 1], u[..., 2])[0]

    def params(self, hull_offset=0, face_offset=0):
        """(a, b, c, first bump row, bump count): the bumps start at ``hull_offset`` in a shared array."""
        return _row(*self.semi_axes, hull_offset, len(self.bumps))

    def mass_properties(self, density=1000.0):
        rows = self.bump_rows()
        finest = min([angle for _, _, angle in self.bumps], default=np.pi)
        return mass.star_shaped(lambda ux, uy, uz: bumpy_radius(*self.semi_axes, rows, 0, len(rows), ux, uy, uz)[0],
                                self._density(density), finest)


class ShapeArrays(NamedTuple):
    """Shapes encoded for compiled code: kinds (N,) int64, params (N, PARAMS) float64 and the shared
    hull_vertices (V, 3) float64 that hull rows point into."""

    kinds: np.ndarray
    params: np.ndarray
    hull_vertices: np.ndarray


def encode_shapes(shapes) -> ShapeArrays:
    """Flat arrays for a sequence of shapes, in order; each hull's vertices are appended to hull_vertices."""
    kinds = np.empty(len(shapes), dtype=np.int64)
    params = np.empty((len(shapes), PARAMS))
    blocks, offset = [], 0
    for index, shape in enumerate(shapes):
        if not isinstance(shape, Shape):
            raise FieldError("encode_shapes", f"shapes[{index}]", f"must be a shape, got {describe(shape)}")
        kinds[index] = shape.kind
        params[index] = shape.params(offset)
        if shape.kind == HULL:
            blocks.append(shape.vertices)
            offset += len(shape.vertices)
    hull_vertices = np.concatenate(blocks) if blocks else np.zeros((0, 3))
    return ShapeArrays(kinds, params, np.ascontiguousarray(hull_vertices))
