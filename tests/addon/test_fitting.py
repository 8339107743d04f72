"""Ellipsoid fitting (addon/fitting.py is pure numpy), checked against closed-form mass properties."""
import numpy as np
import pytest

from tests.addon.numpy_modules import load

fitting = load("fitting")


def box_mesh(hx, hy, hz):
    v = np.array([[x, y, z] for x in (-hx, hx) for y in (-hy, hy) for z in (-hz, hz)], dtype=float)
    quads = [[0, 1, 3, 2], [4, 6, 7, 5], [0, 4, 5, 1], [2, 3, 7, 6], [0, 2, 6, 4], [1, 5, 7, 3]]
    tris = [[q[0], q[1], q[2]] for q in quads] + [[q[0], q[2], q[3]] for q in quads]
    return v, np.array(tris)


def uv_sphere(segments=96, rings=48):
    verts = [[0.0, 0.0, 1.0]]
    for i in range(1, rings):
        th = np.pi * i / rings
        for j in range(segments):
            ph = 2 * np.pi * j / segments
            verts.append([np.sin(th) * np.cos(ph), np.sin(th) * np.sin(ph), np.cos(th)])
    verts.append([0.0, 0.0, -1.0])
    tris = []
    ring = lambda i, j: 1 + (i - 1) * segments + (j % segments)
    for j in range(segments):
        tris.append([0, ring(1, j), ring(1, j + 1)])
        tris.append([len(verts) - 1, ring(rings - 1, j + 1), ring(rings - 1, j)])
    for i in range(1, rings - 1):
        for j in range(segments):
            a, b, c, d = ring(i, j), ring(i, j + 1), ring(i + 1, j + 1), ring(i + 1, j)
            tris += [[a, d, c], [a, c, b]]
    return np.array(verts), np.array(tris)


def random_rotation(seed):
    q, r = np.linalg.qr(np.random.default_rng(seed).normal(size=(3, 3)))
    q *= np.sign(np.diag(r))
    return q if np.linalg.det(q) > 0 else -q


def test_box_mass_properties_match_closed_form():
    # Solid box 2a x 2b x 2c: volume 8abc, second moment along x: V a^2 / 3.
    a, b, c = 0.7, 1.3, 0.4
    v, t = box_mesh(a, b, c)
    rot = random_rotation(1)
    shift = np.array([3.0, -2.0, 5.0])
    volume, centroid, central = fitting.mass_properties(v @ rot.T + shift, t)
    assert volume == pytest.approx(8 * a * b * c, rel=1e-12)
    np.testing.assert_allclose(centroid, shift, atol=1e-12)
    expected = rot @ np.diag([a * a, b * b, c * c]) @ rot.T * volume / 3.0
    np.testing.assert_allclose(central, expected, atol=1e-12)


def test_box_fit_is_inertia_equivalent():
    # Same mass and inertia: V a_e^2 / 5 = V a^2 / 3  ->  a_e = a sqrt(5/3).
    a, b, c = 0.7, 1.3, 0.4
    v, t = box_mesh(a, b, c)
    fit = fitting.fit_ellipsoid(v, t)
    assert fit.closed and fit.method == "INERTIA"
    np.testing.assert_allclose(np.sort(fit.semi_axes), np.sort([a, b, c]) * np.sqrt(5 / 3), rtol=1e-12)
    assert np.linalg.det(fit.rotation) == pytest.approx(1.0)


def test_scaled_sphere_fit_within_one_percent():
    # A polyhedral UV sphere is slightly smaller than the true ellipsoid; 1% is the bound.
    v, t = uv_sphere()
    rot = random_rotation(7)
    fit = fitting.fit_ellipsoid((v * [1.0, 2.0, 3.0]) @ rot.T, t)
    order = np.argsort(fit.semi_axes)
    np.testing.assert_allclose(fit.semi_axes[order], [1.0, 2.0, 3.0], rtol=0.01)
    # Principal axes are the rotated coordinate axes (up to sign).
    np.testing.assert_allclose(np.abs(rot.T @ fit.rotation[:, order]), np.eye(3), atol=1e-6)


def test_open_mesh_falls_back_to_bounding_box_with_warning():
    v, t = box_mesh(1.0, 0.5, 0.25)
    open_t = t[[i for i in range(len(t)) if i not in (1, 7)]]  # drop the two triangles of one face
    assert not fitting.is_closed(open_t)
    fit = fitting.fit_ellipsoid(v, open_t, name="Bowl")
    assert fit.method == "BOUNDING_BOX" and "Bowl" in fit.warning
    np.testing.assert_allclose(np.sort(fit.semi_axes), [0.25, 0.5, 1.0], atol=1e-9)


def test_zero_volume_mesh_is_rejected_by_name():
    v, t = box_mesh(1.0, 1.0, 0.0)
    with pytest.raises(fitting.FitError, match="Flat"):
        fitting.fit_ellipsoid(v, t, name="Flat")


# ------------------------------------------------------------------------------------- other families
def cylinder_mesh(radius, half_height, segments=32):
    """A closed prism of ``segments`` sides around z, its corners on the circle (as Blender's cylinder)."""
    phi = 2 * np.pi * np.arange(segments) / segments
    ring = np.stack([radius * np.cos(phi), radius * np.sin(phi), np.zeros(segments)], axis=1)
    v = np.concatenate([ring - [0, 0, half_height], ring + [0, 0, half_height]])
    tris = []
    for j in range(segments):
        k = (j + 1) % segments
        tris += [[j, k, segments + k], [j, segments + k, segments + j]]
    for j in range(1, segments - 1):  # the caps as fans
        tris += [[0, j + 1, j], [segments, segments + j, segments + j + 1]]
    return v, np.array(tris)


def placed(v, seed):
    return v @ random_rotation(seed).T + np.array([0.3, -1.2, 2.0])


def test_auto_fits_a_box_to_a_box_a_cylinder_to_a_cylinder_an_ellipsoid_to_a_sphere():
    v, t = box_mesh(0.7, 1.3, 0.4)
    fit = fitting.fit_shape(placed(v, 2), t)
    assert fit.family == "BOX" and fit.score < 1e-12
    np.testing.assert_allclose(np.sort(fit.params[:3]), [0.4, 0.7, 1.3], rtol=1e-12)
    np.testing.assert_allclose(fit.center, [0.3, -1.2, 2.0], atol=1e-12)
    assert fit.volume == pytest.approx(8 * 0.7 * 1.3 * 0.4, rel=1e-12) and fit.shape_volume == pytest.approx(fit.volume)
    v, t = cylinder_mesh(0.5, 1.0)
    fit = fitting.fit_shape(placed(v, 3), t)
    assert fit.family == "CYLINDER"
    np.testing.assert_allclose(fit.params[:2], [0.5, 1.0], rtol=1e-12)
    np.testing.assert_allclose(np.abs(fit.rotation[:, 2] @ random_rotation(3)[:, 2]), 1.0, rtol=1e-12)  # its axis
    v, t = uv_sphere(32, 16)
    fit = fitting.fit_shape(placed(v * [1.0, 2.0, 3.0], 4), t)
    assert fit.family == "ELLIPSOID" and fit.method == "INERTIA"
    assert fit.scores["ellipsoid"] < 0.005 and fit.scores["box"] > 0.3


def test_auto_fits_a_capsule_and_a_rounded_box_and_takes_the_hull_of_a_pyramid():
    v, t = uv_sphere(32, 16)
    v = v * 0.4 + np.where(v[:, 2:] > 1e-9, 0.6, np.where(v[:, 2:] < -1e-9, -0.6, 0.0)) * [0, 0, 1]
    fit = fitting.fit_shape(v, t)
    assert fit.family == "CAPSULE"
    np.testing.assert_allclose(fit.params[:2], [0.4, 0.6], rtol=1e-9)
    # a cube whose points are pulled onto a superellipsoid of exponent 0.3
    v, t = uv_sphere(48, 24)
    signed = lambda x, e: np.sign(x) * np.abs(x) ** e  # noqa: E731
    theta = np.arccos(np.clip(v[:, 2], -1, 1))
    phi = np.arctan2(v[:, 1], v[:, 0])
    eta = np.pi / 2 - theta
    rounded = np.stack([signed(np.cos(eta), 0.3) * signed(np.cos(phi), 0.3),
                        signed(np.cos(eta), 0.3) * signed(np.sin(phi), 0.3), signed(np.sin(eta), 0.3)], axis=1)
    fit = fitting.fit_shape(rounded * [1.0, 0.8, 0.6], t)
    assert fit.family == "SUPERELLIPSOID"
    np.testing.assert_allclose(fit.params[3:5], 0.3, atol=0.05)
    # a square pyramid is none of them: its convex hull, exactly
    v = np.array([[-1, -1, 0], [1, -1, 0], [1, 1, 0], [-1, 1, 0], [0, 0, 1.5]], dtype=float)
    t = np.array([[0, 2, 1], [0, 3, 2], [0, 1, 4], [1, 2, 4], [2, 3, 4], [3, 0, 4]])
    fit = fitting.fit_shape(v, t)
    assert fit.family == "CONVEX_HULL" and min(s for k, s in fit.scores.items() if k != "convex hull") > 0.03
    assert len(fit.hull_vertices) == 5 and fit.shape_volume == pytest.approx(4 * 1.5 / 3, rel=1e-12)
    # the hull's points, in its frame, are the pyramid's
    world = fit.hull_vertices @ fit.rotation.T + fit.center
    np.testing.assert_allclose(np.sort(world, axis=0), np.sort(v, axis=0), atol=1e-12)


def test_each_family_can_be_asked_for_and_open_meshes_take_the_shapes_volume():
    v, t = box_mesh(1.0, 0.5, 0.25)
    for family in ("ELLIPSOID", "SUPERELLIPSOID", "BOX", "CYLINDER", "CAPSULE", "CONVEX_HULL"):
        fit = fitting.fit_shape(v, t, family)
        assert fit.family == family and fit.volume == pytest.approx(1.0, rel=1e-12), family
    open_t = t[[i for i in range(len(t)) if i not in (1, 7)]]
    fit = fitting.fit_shape(v, open_t, "BOX", name="Tray")
    assert not fit.closed and fit.volume == pytest.approx(1.0) and "Tray" in fit.warning


def test_unit_moments_match_the_closed_form_through_math_lgamma():
    # the fit's moments come from a vectorised log Gamma (Lanczos): against math.lgamma's closed form, for
    # exponents over the whole range and the integrals of 1, u^2 and w^2
    import math

    shapes = load("shapes")
    e1, e2 = (x.ravel() for x in np.meshgrid(np.linspace(0.1, 2.0, 23), np.linspace(0.1, 2.0, 19), indexing="ij"))
    m0, m2, mz = fitting._unit_moments(e1, e2)
    for k in range(len(e1)):
        for got, powers in ((m0[k], (0, 0, 0)), (m2[k], (2, 0, 0)), (mz[k], (0, 0, 2))):
            assert got == pytest.approx(shapes.superellipsoid_moment(*powers, e1[k], e2[k]), rel=1e-13)
    x = np.concatenate([np.geomspace(1e-3, 0.5, 500), np.linspace(0.5, 40.0, 5000)])
    ref = np.array([math.lgamma(v) for v in x])
    np.testing.assert_allclose(fitting._lgamma(x), ref, rtol=1e-14, atol=1e-14)


def test_scores_of_many_frames_at_once_are_each_frames_own():
    # a family's candidate frames are scored in one call: each equals the mean support gap over the directions
    # computed for that frame alone, h(u) = u.c + h_shape(R^T u)
    shapes = load("shapes")
    v, t = uv_sphere(24, 12)
    m = fitting._measure(v * [1.0, 0.7, 0.4], t, "Egg", ())
    rng = np.random.default_rng(3)
    rotations = np.array([random_rotation(seed) for seed in range(5)])
    centers = rng.normal(scale=0.1, size=(5, 3))
    for kind, params in ((shapes.SUPERELLIPSOID, [[0.9, 0.6, 0.5, 0.4 + 0.3 * k, 1.2 - 0.2 * k] for k in range(5)]),
                         (shapes.BOX, [[0.9, 0.6, 0.5 + 0.1 * k, 0, 0] for k in range(5)]),
                         (shapes.CYLINDER, [[0.8, 0.4 + 0.1 * k, 0, 0, 0] for k in range(5)])):
        got = fitting._scores(m, kind, centers, rotations, params)
        for k in range(5):
            h = np.array([u @ centers[k] + shapes.support_values(kind, params[k], rotations[k].T @ u)
                          for u in m.directions])
            assert got[k] == pytest.approx(np.mean(np.abs(h - m.reach)) / m.width, rel=1e-12), (kind, k)
