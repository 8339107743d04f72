"""Shape values: the convex shape families with their parameters, checked when made.

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
from .kinds import BOX, CAPSULE, CYLINDER, ELLIPSOID, HULL, PARAMS, SUPERELLIPSOID

EXPONENT_RANGE = (0.1, 2.0)  # below 0.1 the powers of a superellipsoid's support lose too many digits


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

    def _density(self, density) -> float:
        return _positive(type(self).__name__, "density", density)


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
