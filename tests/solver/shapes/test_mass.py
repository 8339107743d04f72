"""Mass properties against closed forms, quadrature, Monte Carlo and limits of the superellipsoid."""
import itertools
import math

import numpy as np
import pytest

from quadric_solver.shapes import Box, Capsule, ConvexHull, Cylinder, Ellipsoid, Superellipsoid, mass
from quadric_solver.validate import FieldError
from tests.solver.shapes.distance_reference import fibonacci_sphere

DENSITY = 750.0


def revolution_integrals(profile_pieces):
    """Volume and the integrals of x^2 and z^2 of a solid of revolution about z whose squared radius
    R^2(z) is a polynomial on each piece (z0, z1, R^2): Gauss-Legendre with 8 nodes per piece is
    exact for the integrands pi R^2, pi R^4 / 4 and pi R^2 z^2 (degree at most 6)."""
    nodes, weights = np.polynomial.legendre.leggauss(8)
    volume = xx = zz = 0.0
    for z0, z1, radius_squared in profile_pieces:
        z = 0.5 * (z1 - z0) * nodes + 0.5 * (z1 + z0)
        w = 0.5 * (z1 - z0) * weights
        r2 = radius_squared(z)
        volume += np.sum(w * math.pi * r2)
        xx += np.sum(w * math.pi * r2 * r2 / 4.0)
        zz += np.sum(w * math.pi * r2 * z * z)
    return volume, xx, zz


def assert_revolution(properties, pieces):
    volume, xx, zz = revolution_integrals(pieces)
    np.testing.assert_allclose(properties.volume, volume, rtol=1e-13)
    np.testing.assert_allclose(properties.inertia, DENSITY * np.array([xx + zz, xx + zz, 2 * xx]), rtol=1e-13)


def test_sphere_cube_cylinder_and_capsule_closed_forms():
    r, h = 0.3, 0.7
    sphere = Ellipsoid((r, r, r)).mass_properties(DENSITY)
    m = DENSITY * 4 / 3 * math.pi * r ** 3
    assert sphere.mass == pytest.approx(m, rel=1e-15)
    np.testing.assert_allclose(sphere.inertia, 0.4 * m * r * r, rtol=1e-15)
    cube = Box((h, h, h)).mass_properties(DENSITY)
    m = DENSITY * (2 * h) ** 3
    assert cube.mass == pytest.approx(m, rel=1e-15)
    np.testing.assert_allclose(cube.inertia, m * (2 * h) ** 2 / 6, rtol=1e-15)
    cylinder = Cylinder(r, h).mass_properties(DENSITY)
    m = DENSITY * math.pi * r * r * 2 * h
    np.testing.assert_allclose(cylinder.inertia, [m * (3 * r * r + (2 * h) ** 2) / 12] * 2 + [m * r * r / 2],
                               rtol=1e-15)
    # solids of revolution by exact quadrature: the sphere, the cylinder, the capsule and its hemispheres
    assert_revolution(sphere, [(-r, r, lambda z: r * r - z * z)])
    assert_revolution(cylinder, [(-h, h, lambda z: r * r + 0 * z)])
    assert_revolution(Capsule(r, h).mass_properties(DENSITY), [
        (-h - r, -h, lambda z: r * r - (z + h) ** 2), (-h, h, lambda z: r * r + 0 * z),
        (h, h + r, lambda z: r * r - (z - h) ** 2)])
    for shape in (sphere, cube, cylinder):
        assert shape.mass == pytest.approx(DENSITY * shape.volume, rel=1e-15)
        np.testing.assert_array_equal(shape.center_of_mass, 0.0)
        np.testing.assert_array_equal(shape.principal_axes, np.eye(3))


def test_superellipsoid_at_exponents_one_is_the_ellipsoid():
    axes = (0.2, 0.5, 1.3)
    expected = Ellipsoid(axes).mass_properties(DENSITY)
    got = Superellipsoid(axes, (1.0, 1.0)).mass_properties(DENSITY)
    assert got.volume == pytest.approx(expected.volume, rel=1e-14)
    np.testing.assert_allclose(got.inertia, expected.inertia, rtol=1e-14)


def book_inertia(a1, a2, a3, e1, e2, density):
    """The closed forms of Jaklic, Leonardis and Solina (2000, ch. 2) as they are usually quoted, written
    out literally (a second derivation to compare with solver.shapes.mass)."""
    beta = mass._beta
    common = 0.5 * density * a1 * a2 * a3 * e1 * e2
    i_xx = common * (a2 ** 2 * beta(1.5 * e2, 0.5 * e2) * beta(0.5 * e1, 2 * e1 + 1)
                     + 4 * a3 ** 2 * beta(0.5 * e2, 0.5 * e2 + 1) * beta(1.5 * e1, e1 + 1))
    i_yy = common * (a1 ** 2 * beta(1.5 * e2, 0.5 * e2) * beta(0.5 * e1, 2 * e1 + 1)
                     + 4 * a3 ** 2 * beta(0.5 * e2, 0.5 * e2 + 1) * beta(1.5 * e1, e1 + 1))
    i_zz = common * (a1 ** 2 + a2 ** 2) * beta(1.5 * e2, 0.5 * e2) * beta(0.5 * e1, 2 * e1 + 1)
    volume = 2 * a1 * a2 * a3 * e1 * e2 * beta(0.5 * e1 + 1, e1) * beta(0.5 * e2, 0.5 * e2)
    return volume, np.array([i_xx, i_yy, i_zz])


@pytest.mark.parametrize("exponents", [(0.1, 0.1), (0.3, 1.7), (1.0, 0.25), (2.0, 2.0), (1.4, 0.6)])
def test_superellipsoid_matches_the_book_formulas(exponents):
    axes = (0.4, 0.9, 0.25)
    got = Superellipsoid(axes, exponents).mass_properties(DENSITY)
    volume, inertia = book_inertia(*axes, *exponents, DENSITY)
    assert got.volume == pytest.approx(volume, rel=1e-13)
    np.testing.assert_allclose(got.inertia, inertia, rtol=1e-13)


def test_superellipsoid_approaches_the_box_and_the_cylinder():
    """ln G(1 + x) = -gamma x + pi^2 x^2 / 12 + O(x^3) turns the beta functions at small exponents e
    into 8abc (1 - pi^2 e^2 / 8) for e1 = e2 = e (the box) and 2 pi abc (1 - pi^2 e^2 / 12) for
    e2 = 1, e1 = e (the elliptic cylinder): the relative deficits over e^2 tend to pi^2/8 and pi^2/12."""
    axes = (0.3, 0.5, 0.8)
    box = Box(axes).mass_properties(DENSITY)
    cylinder_volume = 2 * math.pi * axes[0] * axes[1] * axes[2]
    e = 1e-3  # below the class's range: the formula itself
    near_box = mass.superellipsoid(axes, (e, e), DENSITY)
    near_cylinder = mass.superellipsoid(axes, (e, 1.0), DENSITY)
    assert (1 - near_box.volume / box.volume) / e ** 2 == pytest.approx(math.pi ** 2 / 8, rel=1e-2)
    assert (1 - near_cylinder.volume / cylinder_volume) / e ** 2 == pytest.approx(math.pi ** 2 / 12, rel=1e-2)
    np.testing.assert_allclose(near_box.inertia, box.inertia, rtol=4 * e ** 2)
    a, b, c = axes
    m = DENSITY * cylinder_volume
    elliptic_cylinder = m * np.array([b * b / 4 + c * c / 3, a * a / 4 + c * c / 3, (a * a + b * b) / 4])
    np.testing.assert_allclose(near_cylinder.inertia, elliptic_cylinder, rtol=4 * e ** 2)
    # and the error shrinks monotonically through the allowed range
    deficits = [1 - mass.superellipsoid(axes, (x, x), DENSITY).volume / box.volume for x in (1.0, 0.5, 0.2, 0.1)]
    assert all(np.diff(deficits) < 0) and deficits[-1] > 0


def superellipsoid_inside(points, axes, exponents):
    a, b, c = axes
    e1, e2 = exponents
    x, y, z = np.abs(points / np.array(axes)).T
    return (x ** (2 / e2) + y ** (2 / e2)) ** (e2 / e1) + z ** (2 / e1) <= 1.0


@pytest.mark.parametrize("exponents", [(0.1, 0.1), (0.5, 1.5), (1.0, 1.0), (2.0, 0.3), (1.8, 2.0)])
def test_superellipsoid_against_monte_carlo_of_its_implicit_function(exponents):
    """Sample the bounding box uniformly: each integral is the box volume times a sample mean, with a
    standard error from the sample's own spread; the closed forms must lie within 5 of those."""
    axes = np.array([0.4, 0.7, 0.3])
    count = 1_000_000
    rng = np.random.default_rng(11)
    points = rng.uniform(-1, 1, size=(count, 3)) * axes
    inside = superellipsoid_inside(points, axes, exponents)
    box_volume = 8 * np.prod(axes)
    samples = np.stack([inside, inside * points[:, 0] ** 2, inside * points[:, 1] ** 2,
                        inside * points[:, 2] ** 2]) * box_volume
    estimate = samples.mean(axis=1)
    error = samples.std(axis=1) / math.sqrt(count)
    got = Superellipsoid(axes, exponents).mass_properties(DENSITY)
    second = np.linalg.solve(DENSITY * np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0]]), got.inertia)
    np.testing.assert_array_less(np.abs(np.r_[got.volume, second] - estimate), 5 * error)


def test_hull_of_a_box_is_the_box():
    half = np.array([0.3, 0.5, 0.8])
    rng = np.random.default_rng(12)
    rotation = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    rotation *= np.sign(np.linalg.det(rotation))
    centre = np.array([1.5, -2.0, 0.7])
    corners = np.array(list(itertools.product((-1, 1), repeat=3))) * half @ rotation.T + centre
    got = ConvexHull(corners).mass_properties(DENSITY)
    box = Box(half).mass_properties(DENSITY)
    assert got.volume == pytest.approx(box.volume, rel=1e-14)
    np.testing.assert_allclose(got.center_of_mass, centre, rtol=0, atol=1e-14)
    np.testing.assert_allclose(np.sort(got.inertia), np.sort(box.inertia), rtol=1e-13)
    np.testing.assert_allclose(got.inertia_tensor, rotation @ np.diag(box.inertia) @ rotation.T,
                               rtol=0, atol=1e-13 * box.inertia.max())
    axes = got.principal_axes
    assert np.linalg.det(axes) == pytest.approx(1.0, abs=1e-14)
    np.testing.assert_allclose(axes.T @ axes, np.eye(3), atol=1e-14)


@pytest.mark.parametrize("count", [250, 1000, 4000])
def test_hull_of_points_on_a_sphere_approaches_the_sphere(count):
    """N points spread evenly give 2N triangles of area 2 pi / N. Over an equilateral triangle of
    circumradius rho the sphere stands (rho^2 - s^2)/2 above the plane at distance s from its centre,
    which integrates to 3/8 A rho^2 with A = 3 sqrt(3)/4 rho^2: the hull misses 4 pi^2 / (sqrt(3) N) of
    the volume, a relative 3 pi / (sqrt(3) N) = 5.44 / N, and about 5/3 of that of the inertia (the
    missing mass sits at the radius). Fibonacci triangles are nearly equilateral: within -10/+20 %."""
    got = ConvexHull(fibonacci_sphere(count)).mass_properties(DENSITY)
    sphere = Ellipsoid((1.0, 1.0, 1.0)).mass_properties(DENSITY)
    deficit = 3 * math.pi / (math.sqrt(3) * count)
    assert 0.9 * deficit <= 1 - got.volume / sphere.volume <= 1.2 * deficit
    assert np.all(0.9 * 5 / 3 * deficit <= 1 - got.inertia / sphere.inertia)
    assert np.all(1 - got.inertia / sphere.inertia <= 1.2 * 5 / 3 * deficit)


@pytest.mark.parametrize("density", [0.0, -1.0, float("nan"), "heavy"])
def test_bad_density_is_refused(density):
    with pytest.raises(FieldError, match="Cylinder: density must be"):
        Cylinder(0.1, 0.2).mass_properties(density)
