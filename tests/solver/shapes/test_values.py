"""Shape values: validation naming the field, value semantics, and the flat encoding for kernels."""
import math

import numpy as np
import pytest

import quadric_solver as solver
from quadric_solver.shapes import Box, Capsule, ConvexHull, Cylinder, Ellipsoid, Superellipsoid, encode_shapes
from quadric_solver.shapes.support import BOX, CAPSULE, CYLINDER, ELLIPSOID, HULL, PARAMS, SUPERELLIPSOID
from quadric_solver.validate import FieldError

NAN = float("nan")
TETRAHEDRON = [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]]


@pytest.mark.parametrize("make, message", [
    (lambda: Ellipsoid((1, 0, 1)), "Ellipsoid: semi_axes must be positive, got semi_axes[1] = 0.0"),
    (lambda: Ellipsoid((1, 1, -2)), "Ellipsoid: semi_axes must be positive, got semi_axes[2] = -2.0"),
    (lambda: Ellipsoid((1, NAN, 1)), "Ellipsoid: semi_axes contains NaN or infinity"),
    (lambda: Ellipsoid((1, 1)), "Ellipsoid: semi_axes must be 3 numbers"),
    (lambda: Superellipsoid((1, 1, 1), (0.09, 1)),
     "Superellipsoid: exponents must be in [0.1, 2], got exponents[0] = 0.09"),
    (lambda: Superellipsoid((1, 1, 1), (1, 2.01)),
     "Superellipsoid: exponents must be in [0.1, 2], got exponents[1] = 2.01"),
    (lambda: Superellipsoid((1, 1, 1), (1, NAN)), "Superellipsoid: exponents contains NaN or infinity"),
    (lambda: Superellipsoid((1, 1, 1), (1, 1, 1)), "Superellipsoid: exponents must be 2 numbers"),
    (lambda: Superellipsoid((1, -1, 1), (1, 1)), "Superellipsoid: semi_axes must be positive, got semi_axes[1] = -1.0"),
    (lambda: Superellipsoid((NAN, 1, 1), (1, 1)), "Superellipsoid: semi_axes contains NaN or infinity"),
    (lambda: Box((1, 1, 0)), "Box: half_extents must be positive, got half_extents[2] = 0.0"),
    (lambda: Box((1, math.inf, 1)), "Box: half_extents contains NaN or infinity"),
    (lambda: Box("abc"), "Box: half_extents must be 3 numbers"),
    (lambda: Cylinder(0, 1), "Cylinder: radius must be positive and finite, got 0"),
    (lambda: Cylinder(1, -1), "Cylinder: half_height must be positive and finite, got -1"),
    (lambda: Cylinder(NAN, 1), "Cylinder: radius must be positive and finite, got nan"),
    (lambda: Capsule(1, NAN), "Capsule: half_height must be positive and finite, got nan"),
    (lambda: Capsule(-0.5, 1), "Capsule: radius must be positive and finite, got -0.5"),
    (lambda: Capsule("1", 1), "Capsule: radius must be a number, got '1'"),
    (lambda: ConvexHull(TETRAHEDRON + [[NAN, 0, 0]]), "ConvexHull: points contains NaN or infinity"),
    (lambda: ConvexHull(TETRAHEDRON[:3]), "ConvexHull: points must hold at least 4 points not all in one plane"),
])
def test_bad_arguments_raise_a_value_error_naming_the_shape_and_the_field(make, message):
    with pytest.raises(FieldError) as caught:
        make()
    assert isinstance(caught.value, ValueError)
    assert str(caught.value).startswith(message)


def test_exponent_range_ends_are_allowed():
    for exponents in [(0.1, 0.1), (2, 2), (0.1, 2)]:
        assert Superellipsoid((1, 2, 3), exponents).exponents == tuple(float(e) for e in exponents)


def test_shapes_are_immutable_values():
    shapes = [Ellipsoid((1, 2, 3)), Superellipsoid((1, 2, 3), (0.5, 1.5)), Box((1, 2, 3)), Cylinder(1, 2),
              Capsule(1, 2), ConvexHull(TETRAHEDRON)]
    twins = [Ellipsoid([1.0, 2, 3]), Superellipsoid(np.array([1, 2, 3]), (0.5, 1.5)), Box((1, 2, 3)),
             Cylinder(1.0, 2), Capsule(1, 2.0), ConvexHull(np.array(TETRAHEDRON, dtype=float) + 0.0)]
    for shape, twin in zip(shapes, twins):
        assert shape == twin and hash(shape) == hash(twin)
        assert shape != Box((1, 2, 4))
        with pytest.raises(AttributeError):
            shape.radius = 3
    assert Cylinder(1, 2) != Capsule(1, 2)
    assert repr(Cylinder(1, 2)) == "Cylinder(1.0, 2.0)"
    assert repr(ConvexHull(TETRAHEDRON)) == "ConvexHull(4 vertices, 4 faces)"
    with pytest.raises(ValueError):
        ConvexHull(TETRAHEDRON).vertices[0, 0] = 5.0


def test_public_names_are_exported_from_solver():
    for name in ("Ellipsoid", "Superellipsoid", "Box", "Cylinder", "Capsule", "ConvexHull", "MassProperties",
                 "Distance", "distance"):
        assert name in solver.__all__ and hasattr(solver, name)


def test_encoding_puts_each_shape_in_a_row_and_hulls_in_one_vertex_array():
    hull_a = ConvexHull(TETRAHEDRON)
    hull_b = ConvexHull(np.array(TETRAHEDRON) * 2.0 + [[0, 0, 0]] + [0.5, 0, 0])
    shapes = [Ellipsoid((1, 2, 3)), hull_a, Superellipsoid((1, 2, 3), (0.5, 1.5)), Box((4, 5, 6)),
              Cylinder(0.1, 0.2), hull_b, Capsule(0.3, 0.4)]
    kinds, params, hull_vertices = encode_shapes(shapes)
    assert kinds.tolist() == [ELLIPSOID, HULL, SUPERELLIPSOID, BOX, CYLINDER, HULL, CAPSULE]
    assert params.shape == (7, PARAMS) and params.dtype == np.float64
    np.testing.assert_array_equal(params[[0, 2, 3, 4, 6], :5], [[1, 2, 3, 0, 0], [1, 2, 3, 0.5, 1.5], [4, 5, 6, 0, 0],
                                                                [0.1, 0.2, 0, 0, 0], [0.3, 0.4, 0, 0, 0]])
    assert params[1, :2].tolist() == [0, 4] and params[5, :2].tolist() == [4, 4]
    np.testing.assert_array_equal(hull_vertices, np.concatenate([hull_a.vertices, hull_b.vertices]))
    assert hull_vertices.flags.c_contiguous
    assert encode_shapes([Box((1, 1, 1))]).hull_vertices.shape == (0, 3)
    with pytest.raises(FieldError, match=r"encode_shapes: shapes\[1\] must be a shape, got 'box'"):
        encode_shapes([Box((1, 1, 1)), "box"])


def test_every_shape_survives_pickling_as_an_equal_value():
    import pickle

    shapes = [Ellipsoid((1, 2, 3)), Superellipsoid((1, 2, 3), (0.5, 1.5)), Box((1, 2, 3)), Cylinder(1, 2),
              Capsule(1, 2), ConvexHull(TETRAHEDRON), solver.BumpyEllipsoid((1, 2, 3), [((1, 0, 0), 0.2, 0.5)])]
    for shape in shapes:
        copy = pickle.loads(pickle.dumps(shape))
        assert copy == shape and type(copy) is type(shape)
        with pytest.raises(AttributeError, match="is immutable"):
            copy.kind = 0
    hull = pickle.loads(pickle.dumps(shapes[5]))
    assert np.array_equal(hull.vertices, shapes[5].vertices) and not hull.vertices.flags.writeable
