"""Support kernels: the point returned lies on the surface and no point of the surface reaches
farther along the direction.

A boundary point of a smooth convex body whose outward normal is n is its support point along n,
so for the ellipsoid and the superellipsoid the implicit function's gradient there must be
parallel to n. For every family, dense samples of the surface (parametrisations written here)
must never beat the support value, and the support value must be within the samples' spacing of
their best.
"""
import math

import numpy as np
import pytest

from quadric_solver.shapes import Box, Capsule, ConvexHull, Cylinder, Ellipsoid, Superellipsoid, encode_shapes
from quadric_solver.shapes.support import bounding_radius, support, support_curvature, support_xyz


def directions(rng, count):
    d = rng.normal(size=(count, 3))
    d /= np.linalg.norm(d, axis=1)[:, None]
    # and the axis-aligned and diagonal directions where ties and zero components sit
    special = np.array([[1, 0, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1], [1, 1, 0], [1, -1, 1], [0, 1, 1]], float)
    return np.concatenate([d, special / np.linalg.norm(special, axis=1)[:, None]])


def support_points(shape, dirs, scale=1.0):
    """The kernel's points for each row of dirs (scaled, to check that length does not matter)."""
    kinds, params, hull = encode_shapes([shape])
    return np.array([support_xyz(kinds[0], params[0], hull, *(scale * d)) for d in dirs])


def signed_power(t, e):
    return np.sign(t) * np.abs(t) ** e


def superellipsoid_surface(axes, exponents, count=300):
    """Barr's parametrisation: x = a C(eta)^e1 C(omega)^e2, y = b C(eta)^e1 S(omega)^e2, z = c S(eta)^e1."""
    a, b, c = axes
    e1, e2 = exponents
    eta, omega = np.meshgrid(np.linspace(-math.pi / 2, math.pi / 2, count), np.linspace(-math.pi, math.pi, 2 * count))
    x = a * signed_power(np.cos(eta), e1) * signed_power(np.cos(omega), e2)
    y = b * signed_power(np.cos(eta), e1) * signed_power(np.sin(omega), e2)
    z = c * signed_power(np.sin(eta), e1)
    return np.stack([x, y, z], axis=-1)


def grid_spacing(grid):
    """Largest distance between neighbours of a sampled surface grid (rows and columns)."""
    return max(np.max(np.linalg.norm(np.diff(grid, axis=0), axis=-1)),
               np.max(np.linalg.norm(np.diff(grid, axis=1), axis=-1)))


def check_against_samples(points, dirs, samples, spacing):
    values = np.einsum("ij,ij->i", points, dirs)
    best = np.concatenate([np.max(samples @ chunk.T, axis=0) for chunk in np.array_split(dirs, len(dirs) // 64 + 1)])
    scale = np.max(np.linalg.norm(samples, axis=1))
    assert np.all(best <= values + 1e-12 * scale), "a surface sample reaches farther than the support point"
    assert np.all(values - best <= spacing), "the support value exceeds the samples' best by more than their spacing"


SUPERELLIPSOIDS = [((0.5, 0.8, 0.3), (1.0, 1.0)), ((0.5, 0.8, 0.3), (0.1, 0.1)), ((0.5, 0.8, 0.3), (2.0, 2.0)),
                   ((1.2, 0.4, 0.7), (0.3, 1.7)), ((1.2, 0.4, 0.7), (1.9, 0.25)), ((0.2, 0.2, 0.9), (0.6, 1.0)),
                   ((0.7, 0.5, 0.6), (2.0, 0.1)), ((0.7, 0.5, 0.6), (0.1, 2.0))]


@pytest.mark.parametrize("axes, exponents", SUPERELLIPSOIDS)
def test_superellipsoid_support_is_on_the_surface_with_normal_along_the_direction(axes, exponents):
    rng = np.random.default_rng(1)
    dirs = directions(rng, 1000)
    points = support_points(Superellipsoid(axes, exponents), dirs, scale=3.7)
    a, b, c = axes
    e1, e2 = exponents
    u, v, w = np.abs(points / np.array(axes)).T
    inner = u ** (2 / e2) + v ** (2 / e2)
    implicit = inner ** (e2 / e1) + w ** (2 / e1)
    np.testing.assert_allclose(implicit, 1.0, rtol=0, atol=1e-12)
    if max(exponents) < 2.0:  # exponent 2 has sharp edges, where generic directions land
        # the gradient of the implicit function, off the axis directions (there 0 meets a negative power)
        with np.errstate(divide="ignore", invalid="ignore"):
            outer = (e2 / e1) * inner ** (e2 / e1 - 1)
            gradient = np.stack([outer * (2 / e2) * u ** (2 / e2 - 1) * np.sign(points[:, 0]) / a,
                                 outer * (2 / e2) * v ** (2 / e2 - 1) * np.sign(points[:, 1]) / b,
                                 (2 / e1) * w ** (2 / e1 - 1) * np.sign(points[:, 2]) / c], axis=1)
        generic = np.all(np.abs(dirs) > 1e-3, axis=1)
        assert generic.sum() >= 990 and np.all(np.isfinite(gradient[generic]))
        g = gradient[generic] / np.linalg.norm(gradient[generic], axis=1)[:, None]
        np.testing.assert_allclose(np.linalg.norm(np.cross(g, dirs[generic]), axis=1), 0.0, atol=1e-9)
        assert np.all(np.einsum("ij,ij->i", g, dirs[generic]) > 0)
    surface = superellipsoid_surface(axes, exponents)
    check_against_samples(points, dirs, surface.reshape(-1, 3), grid_spacing(surface))


def curvature(shape, d):
    """support_curvature's support point and Hessian (3 x 3) at direction d."""
    kinds, params, _ = encode_shapes([shape])
    out = support_curvature(kinds[0], params[0], *d)
    xx, xy, xz, yy, yz, zz = out[3:]
    return np.array(out[:3]), np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])


@pytest.mark.parametrize("axes, exponents", [(axes, exponents) for axes, exponents in SUPERELLIPSOIDS
                                             if max(exponents) < 2.0] + [((0.3, 1.1, 0.6), None)])
def test_support_curvature_is_the_derivative_of_the_support_point(axes, exponents):
    """The Hessian of h is d(support point)/d(direction): central differences of support_xyz agree, it is
    symmetric and positive semi-definite (h is convex), and H d = 0 (h is homogeneous of degree 1)."""
    shape = Ellipsoid(axes) if exponents is None else Superellipsoid(axes, exponents)
    kinds, params, hull = encode_shapes([shape])
    rng = np.random.default_rng(4)
    dirs = rng.normal(size=(300, 3))
    dirs /= np.linalg.norm(dirs, axis=1)[:, None]
    dirs = dirs[np.all(np.abs(dirs) > 0.05, axis=1)]  # away from the faces, where the curvature is capped
    step = 1e-6
    for d in dirs:
        point, hessian = curvature(shape, d)
        np.testing.assert_allclose(point, support_xyz(kinds[0], params[0], hull, *d), rtol=0, atol=1e-14)
        numeric = np.empty((3, 3))
        for j in range(3):
            e = np.zeros(3)
            e[j] = step
            numeric[:, j] = (np.array(support_xyz(kinds[0], params[0], hull, *(d + e)))
                             - np.array(support_xyz(kinds[0], params[0], hull, *(d - e)))) / (2 * step)
        # central differences err by step^2 times the third derivative (with components above 0.05 and dual
        # exponents up to 20, below 1e-6 of the Hessian's size) plus the points' rounding over the step
        size = np.abs(hessian).max()
        rounding = 4 * np.finfo(float).eps * max(axes) / step
        np.testing.assert_allclose(hessian, numeric, rtol=0, atol=1e-6 * size + rounding)
        np.testing.assert_allclose(hessian @ d, 0.0, rtol=0, atol=1e-9 * size)
        assert np.linalg.eigvalsh(hessian).min() >= -1e-9 * size
    # on the axes, where a rounded face's curvature has no bound, it stays finite, symmetric and convex
    for d in np.eye(3):
        _, hessian = curvature(shape, d)
        assert np.all(np.isfinite(hessian)) and np.linalg.eigvalsh(hessian).min() >= -1e-9 * np.abs(hessian).max()


def test_ellipsoid_support_is_the_closed_form():
    rng = np.random.default_rng(2)
    dirs = directions(rng, 500)
    axes = np.array([0.3, 1.1, 0.6])
    points = support_points(Ellipsoid(axes), dirs, scale=0.01)
    expected = dirs * axes ** 2 / np.sqrt((dirs ** 2 * axes ** 2).sum(axis=1))[:, None]
    np.testing.assert_allclose(points, expected, rtol=0, atol=1e-15)
    same_as_superellipsoid = support_points(Superellipsoid(axes, (1, 1)), dirs)
    np.testing.assert_allclose(same_as_superellipsoid, expected, rtol=0, atol=1e-14)


def test_box_cylinder_capsule_and_hull_supports_against_dense_samples():
    rng = np.random.default_rng(3)
    dirs = directions(rng, 1000)
    # box: the best corner
    half = np.array([0.2, 0.5, 0.9])
    corners = np.array(np.meshgrid(*[[-1, 1]] * 3)).reshape(3, -1).T * half
    points = support_points(Box(half), dirs)
    assert np.all(np.isin(np.abs(points), half) & (np.abs(points) == half))
    np.testing.assert_allclose(np.einsum("ij,ij->i", points, dirs), np.max(corners @ dirs.T, axis=0), atol=1e-15)
    # cylinder: on a rim, against dense rims (the angular step costs at most r (1 - cos(step/2)))
    r, h = 0.4, 0.7
    angles = np.linspace(0, 2 * math.pi, 100_000, endpoint=False)
    rim = np.c_[r * np.cos(angles), r * np.sin(angles), np.full_like(angles, h)]
    rims = np.concatenate([rim, rim * [1, 1, -1]])
    points = support_points(Cylinder(r, h), dirs)
    np.testing.assert_allclose(np.abs(points[:, 2]), h, rtol=0, atol=0)
    radial = np.linalg.norm(points[:, :2], axis=1)
    np.testing.assert_allclose(radial[np.linalg.norm(dirs[:, :2], axis=1) > 0], r, rtol=1e-15)
    check_against_samples(points, dirs, rims, r * (1 - math.cos(math.pi / 100_000)) + 1e-15)
    # capsule: within r of the axis segment, reaching h |n_z| + r along n (a ball swept along the segment)
    points = support_points(Capsule(r, h), dirs, scale=5.0)
    on_axis = np.clip(points[:, 2], -h, h)
    np.testing.assert_allclose(np.linalg.norm(points - np.c_[0 * on_axis, 0 * on_axis, on_axis], axis=1), r,
                               rtol=1e-15)
    np.testing.assert_allclose(np.einsum("ij,ij->i", points, dirs), h * np.abs(dirs[:, 2]) + r, rtol=1e-15)
    # hull: the best vertex
    cloud = rng.normal(size=(200, 3)) * [1.0, 0.5, 0.2]
    hull = ConvexHull(cloud)
    points = support_points(hull, dirs)
    assert np.all(np.any(np.all(points[:, None, :] == hull.vertices[None], axis=2), axis=1))
    np.testing.assert_allclose(np.einsum("ij,ij->i", points, dirs), np.max(cloud @ dirs.T, axis=0), rtol=0, atol=1e-15)


def test_hulls_read_their_own_rows_of_the_shared_vertex_array():
    rng = np.random.default_rng(4)
    hulls = [ConvexHull(rng.normal(size=(30, 3)) + offset) for offset in ([0, 0, 0], [5, 0, 0], [0, -7, 2])]
    kinds, params, vertices = encode_shapes([Box((1, 1, 1))] + hulls)
    for k, hull in enumerate(hulls, start=1):
        for d in directions(rng, 50):
            point = np.array(support(kinds[k], params[k], vertices, d))
            assert np.any(np.all(hull.vertices == point, axis=1))
            assert point @ d == pytest.approx(np.max(hull.vertices @ d), rel=0, abs=1e-14)


def test_bounding_radius_holds_every_support_point():
    rng = np.random.default_rng(5)
    dirs = directions(rng, 3000)
    shapes = [Ellipsoid((0.2, 0.9, 0.4)), Superellipsoid((0.2, 0.9, 0.4), (0.1, 0.1)), Box((0.3, 0.1, 0.2)),
              Cylinder(0.3, 0.8), Capsule(0.3, 0.8), ConvexHull(rng.normal(size=(40, 3)) + [2, 0, 0])]
    for shape in shapes:
        kinds, params, hull = encode_shapes([shape])
        radius = bounding_radius(kinds[0], params[0], hull)
        farthest = np.max(np.linalg.norm(support_points(shape, dirs), axis=1))
        assert farthest <= radius * (1 + 1e-15)
        if not isinstance(shape, Superellipsoid):  # tight except for the rounded box
            assert farthest >= radius * (1 - 1e-3)
