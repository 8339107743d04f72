"""A point's signed distance to each shape (collision/point_distance.py) against a dense sampling of the surface.

The nearest of N surface samples is at least the true distance, and more by at most the sampling's chord error:
with samples at most s apart along a surface of curvature radius >= rho, the nearest sample lies within s / 2 of
the nearest point, whose distance it exceeds by at most (s / 2)^2 / (2 |d|) (a circle about the point). The sign
comes from the shape's own inside test, and the nearest point p - d n must lie on the surface.
"""
import numpy as np
import pytest

from quadric_solver.collision.point_distance import point_distance
from quadric_solver.shapes import encode_shapes
from quadric_solver.shapes.values import Box, Capsule, ConvexHull, Cylinder, Ellipsoid

N = 600  # samples per parameter


def _ellipsoid_surface(a, b, c):
    u, v = np.meshgrid(np.linspace(0, 2 * np.pi, 2 * N), np.linspace(0, np.pi, N))
    return np.stack([a * np.cos(u) * np.sin(v), b * np.sin(u) * np.sin(v), c * np.cos(v)], axis=-1).reshape(-1, 3)


def _box_surface(h):
    t = np.linspace(-1, 1, N)
    s, r = np.meshgrid(t, t)
    faces = []
    for axis in range(3):
        for sign in (-1, 1):
            face = np.zeros((N * N, 3))
            others = [k for k in range(3) if k != axis]
            face[:, axis] = sign * h[axis]
            face[:, others[0]] = s.ravel() * h[others[0]]
            face[:, others[1]] = r.ravel() * h[others[1]]
            faces.append(face)
    return np.concatenate(faces)


def _cylinder_surface(radius, half, caps_round):
    u = np.linspace(0, 2 * np.pi, 2 * N)
    z = np.linspace(-half, half, N)
    uu, zz = np.meshgrid(u, z)
    side = np.stack([radius * np.cos(uu), radius * np.sin(uu), zz], axis=-1).reshape(-1, 3)
    if caps_round:  # the hemispheres beyond the ends
        ball = _ellipsoid_surface(radius, radius, radius)
        return np.concatenate([side, ball[ball[:, 2] >= 0] + (0, 0, half), ball[ball[:, 2] <= 0] - (0, 0, half)])
    rr, uu = np.meshgrid(np.linspace(0, radius, N), u)
    cap = np.stack([rr * np.cos(uu), rr * np.sin(uu), np.zeros_like(rr)], axis=-1).reshape(-1, 3)
    return np.concatenate([side, cap + (0, 0, half), cap - (0, 0, half)])


class NearestSample:
    """Distance from a point to the nearest of many samples, as the full scan gives it, without scanning them all:
    a strided subset bounds it from above by r, and every sample within r lies in the slab |x - px| <= r."""

    def __init__(self, samples):
        self.samples = samples[np.argsort(samples[:, 0], kind="stable")]
        self.coarse = self.samples[::97]

    def __call__(self, p):
        r = np.sqrt(((self.coarse - p) ** 2).sum(axis=1).min())
        x = self.samples[:, 0]
        slab = self.samples[np.searchsorted(x, p[0] - r, side="left"):np.searchsorted(x, p[0] + r, side="right")]
        return np.sqrt(((slab - p) ** 2).sum(axis=1).min())


CASES = {
    "ellipsoid": (Ellipsoid((0.3, 0.2, 0.1)), lambda p: np.sum((p / (0.3, 0.2, 0.1)) ** 2) < 1,
                  lambda: _ellipsoid_surface(0.3, 0.2, 0.1)),
    "box": (Box((0.3, 0.2, 0.1)), lambda p: np.all(np.abs(p) < (0.3, 0.2, 0.1)),
            lambda: _box_surface((0.3, 0.2, 0.1))),
    "cylinder": (Cylinder(0.2, 0.15), lambda p: np.hypot(p[0], p[1]) < 0.2 and abs(p[2]) < 0.15,
                 lambda: _cylinder_surface(0.2, 0.15, False)),
    "capsule": (Capsule(0.1, 0.2), lambda p: np.hypot(np.hypot(p[0], p[1]), p[2] - np.clip(p[2], -0.2, 0.2)) < 0.1,
                lambda: _cylinder_surface(0.1, 0.2, True)),
    "hull (a box's corners)": (ConvexHull([[x, y, z] for x in (-0.3, 0.3) for y in (-0.2, 0.2) for z in (-0.1, 0.1)]),
                               lambda p: np.all(np.abs(p) < (0.3, 0.2, 0.1)), lambda: _box_surface((0.3, 0.2, 0.1))),
}


@pytest.mark.parametrize("name", list(CASES))
def test_signed_distance_matches_the_nearest_surface_sample(name):
    shape, inside, surface = CASES[name]
    kinds, params, hull_vertices = encode_shapes([shape])
    nearest_sample = NearestSample(surface())
    spacing = 2 * np.pi * 0.3 / (2 * N) * 2  # the widest gap between neighbouring samples, with margin
    rng = np.random.default_rng(3)
    points = rng.uniform(-0.45, 0.45, size=(120, 3))
    points[:40] *= 0.3  # some deep inside
    for p in points:
        d, nx, ny, nz = point_distance(kinds[0], params[0], hull_vertices, *p)
        nearest = nearest_sample(p)
        assert (d < 0) == inside(p)
        assert abs(d) <= nearest + 1e-9
        assert nearest - abs(d) <= spacing ** 2 / (8 * max(abs(d), 1e-3)) + spacing / 2 * (abs(d) < 1e-3) + 1e-9
        assert np.hypot(np.hypot(nx, ny), nz) == pytest.approx(1.0, abs=1e-9)
        q = p - d * np.array([nx, ny, nz])  # on the surface: the nearest sample to it is within the spacing
        assert nearest_sample(q) <= spacing


def test_a_point_inside_on_the_plane_of_an_ellipsoids_smallest_axis_leaves_that_plane():
    """At the centre of (3, 2, 1) the nearest points are (0, 0, +-1); at (0.5, 0, 0) they are off the plane z = 0:
    with t = -c^2, x = a^2 px / (a^2 - c^2) and z from the surface equation."""
    kinds, params, hull_vertices = encode_shapes([Ellipsoid((3.0, 2.0, 1.0))])
    d, nx, ny, nz = point_distance(kinds[0], params[0], hull_vertices, 0.0, 0.0, 0.0)
    assert (d, abs(nz)) == (-1.0, 1.0)
    d, nx, ny, nz = point_distance(kinds[0], params[0], hull_vertices, 0.5, 0.0, 0.0)
    x = 9.0 * 0.5 / 8.0
    z = np.sqrt(1.0 - x * x / 9.0)
    assert d == pytest.approx(-np.hypot(x - 0.5, z), abs=1e-12)


def test_a_sphere_is_its_closed_form_and_agrees_with_the_general_ellipsoid():
    """The sphere's fast path: d = |p| - r along p / |p|, inside and out; a nearly round ellipsoid, which takes the
    general root search, gives the same to within its tiny flattening."""
    from quadric_solver.collision.point_distance import ellipsoid_distance

    rng = np.random.default_rng(4)
    r = 0.5
    for p in rng.normal(size=(200, 3)) * 0.6:
        d, nx, ny, nz = ellipsoid_distance(r, r, r, *p)
        length = np.linalg.norm(p)
        assert d == pytest.approx(length - r, abs=1e-15)
        np.testing.assert_allclose([nx, ny, nz], p / length, atol=1e-15)
        general = ellipsoid_distance(r, r, r * (1.0 + 1e-9), *p)
        assert general[0] == pytest.approx(d, abs=2e-9)
        np.testing.assert_allclose(general[1:], [nx, ny, nz], atol=1e-6)
