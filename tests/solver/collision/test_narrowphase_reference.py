"""Narrow phase against a slow, independent brute-force reference (issue 2).

The reference below is plain numpy, written from the definitions only:

* ellipsoid k: centre c_k, rotation R_k, semi-axes a_k, M_k = R_k diag(a_k^2) R_k^T,
  support function s_k(n) = c_k.n + sqrt(n' M_k n);
* ellipsoid-ellipsoid signed depth (positive = penetration, negative = separation
  distance): min over unit n of sqrt(n'M_A n) + sqrt(n'M_B n) - (c_B - c_A).n, the
  minimiser being the normal from A to B. Found by exhaustive search over a
  Fibonacci sphere of 20,000 directions, derivative-free pattern search from the
  best few distinct grid points, then a short Newton polish of the tangent
  gradient (a value-only search cannot resolve angles below about sqrt(eps));
* ellipsoid-plane (normal n out of the solid): (p - c).n + sqrt(n'M n), normal n;
* ellipsoid-tube inner wall: max over surface points x of |x_perp| - R. Since
  |x_perp| = max over unit radial e of e.(x - c0), this is max over the radial
  angle of (c - c0).e + sqrt(e'M e) - R: a dense 1-D scan, refinement of the two
  best local maxima, and Newton on the analytic slope;
* box container: its floor and four inner walls are planes, as above.

The solver's conventions match: normals point from the first shape to the
second, and for static colliders the collider comes first, so a plane's normal
points into free space and a tube's toward its axis.

The reference is first checked against closed-form answers, then the solver's
compiled kernels are checked against it on 10,000 random pairs, and on pairs
built near touching with an exactly known depth.
"""

import numpy as np
import pytest

from tests.helpers import quat_to_matrix

# ---------------------------------------------------------------------------
# reference geometry (numpy only)


def random_rotations(rng, count):
    """Uniform random rotation matrices (count, 3, 3) from normalised Gaussian quaternions."""
    q = rng.normal(size=(count, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return quat_to_matrix(q)


def shape_matrices(rotations, semi_axes):
    """M = R diag(a^2) R^T, batched."""
    return np.einsum("pij,pj,pkj->pik", rotations, semi_axes**2, rotations)


def fibonacci_sphere(count):
    """Nearly uniform unit vectors (count, 3) on the sphere (golden-angle spiral)."""
    k = np.arange(count) + 0.5
    z = 1.0 - 2.0 * k / count
    r = np.sqrt(1.0 - z * z)
    phi = k * np.pi * (3.0 - np.sqrt(5.0))
    return np.stack([r * np.cos(phi), r * np.sin(phi), z], axis=1)


def _quadratic_monomials(directions):
    """(6, D) rows x^2, y^2, z^2, 2xy, 2xz, 2yz so that n'Mn = coeffs(M) @ monomials."""
    x, y, z = directions.T
    return np.stack([x * x, y * y, z * z, 2 * x * y, 2 * x * z, 2 * y * z])


def _matrix_coefficients(m):
    return np.stack([m[:, 0, 0], m[:, 1, 1], m[:, 2, 2], m[:, 0, 1], m[:, 0, 2], m[:, 1, 2]], axis=1)


def width_gap(ma, mb, d, n):
    """sqrt(n'M_A n) + sqrt(n'M_B n) - d.n for n of shape (P, K, 3)."""
    x, y, z = n[..., 0], n[..., 1], n[..., 2]
    return (np.sqrt(_quadratic_form(ma, x, y, z)) + np.sqrt(_quadratic_form(mb, x, y, z))
            - (d[:, 0, None] * x + d[:, 1, None] * y + d[:, 2, None] * z))


def _quadratic_form(m, x, y, z):
    """n'Mn for M (P, 3, 3) and components of n (P, K), written out (einsum is slow here)."""
    return (m[:, 0, 0, None] * (x * x) + m[:, 1, 1, None] * (y * y) + m[:, 2, 2, None] * (z * z)
            + 2.0 * (m[:, 0, 1, None] * (x * y) + m[:, 0, 2, None] * (x * z) + m[:, 1, 2, None] * (y * z)))


def _tangent_basis(n):
    """Two unit tangents orthogonal to each unit vector in n (..., 3)."""
    helper = np.where(np.abs(n[..., :1]) < 0.6, [1.0, 0.0, 0.0], [0.0, 1.0, 0.0])
    t1 = np.cross(n, helper)
    t1 /= np.linalg.norm(t1, axis=-1, keepdims=True)
    t2 = np.cross(n, t1)
    return t1, t2


_PATTERN = np.array([(i, j) for i in (-1, 0, 1) for j in (-1, 0, 1)], dtype=float)


def refine_on_sphere(objective, n, step, smallest_step=1e-7, max_iterations=400):
    """Derivative-free pattern search on the unit sphere, batched over (P, K) starts.

    Each round evaluates a 3x3 grid of tangent-plane offsets of size `step`
    around the current point; the best strictly better point is taken, else
    the step is halved. Stops when every step is below `smallest_step` radians
    (the objective then changes by less than 1e-14 per step; the gradient
    polish below takes the normal the rest of the way).
    """
    value = objective(n)
    step = np.full(value.shape, float(step))
    for _ in range(max_iterations):
        active = step >= smallest_step
        if not active.any():
            break
        t1, t2 = _tangent_basis(n)
        offsets = step[..., None, None] * (
            _PATTERN[:, 0, None] * t1[..., None, :] + _PATTERN[:, 1, None] * t2[..., None, :]
        )  # (P, K, 9, 3)
        trial = n[..., None, :] + offsets
        trial /= np.linalg.norm(trial, axis=-1, keepdims=True)
        p, k = n.shape[:2]
        trial_values = objective(trial.reshape(p, k * 9, 3)).reshape(p, k, 9)
        best = np.argmin(trial_values, axis=-1)
        best_value = np.take_along_axis(trial_values, best[..., None], axis=-1)[..., 0]
        improved = (best_value < value) & active
        best_point = np.take_along_axis(trial, best[..., None, None], axis=-2)[..., 0, :]
        n = np.where(improved[..., None], best_point, n)
        value = np.where(improved, best_value, value)
        step = np.where(improved | ~active, step, 0.5 * step)
    return n, value


def width_gap_gradient(ma, mb, d, n):
    """Euclidean gradient of the width gap, M_A n / sqrt(n'M_A n) + M_B n / sqrt(n'M_B n) - d, for (P, K, 3)."""
    man = np.einsum("pij,pkj->pki", ma, n)
    mbn = np.einsum("pij,pkj->pki", mb, n)
    sa = np.sqrt(np.einsum("pki,pki->pk", n, man))[..., None]
    sb = np.sqrt(np.einsum("pki,pki->pk", n, mbn))[..., None]
    return man / sa + mbn / sb - d[:, None, :]


def polish_stationary_point(ma, mb, d, n, iterations=3, fd_step=1e-6):
    """Newton steps on the tangent gradient (finite-difference Jacobian) from pattern-search minima.

    A value-only search stalls where the objective's change drops below rounding
    (angles of about sqrt(eps)); the gradient is exact to rounding, so zeroing it
    sharpens the normal to about eps / curvature. Only small corrections are
    taken, so the basin found by the search is kept.
    """
    for _ in range(iterations):
        t1, t2 = _tangent_basis(n)

        def tangent_gradient(m):
            # the gradient's part tangent to the sphere at m (zero at a stationary point),
            # in the fixed basis at n
            g = width_gap_gradient(ma, mb, d, m)
            g = g - np.einsum("pki,pki->pk", g, m)[..., None] * m
            return np.stack([np.einsum("pki,pki->pk", g, t1), np.einsum("pki,pki->pk", g, t2)], axis=-1)

        g0 = tangent_gradient(n)
        columns = []
        for t in (t1, t2):
            shifted = n + fd_step * t
            shifted /= np.linalg.norm(shifted, axis=-1, keepdims=True)
            columns.append((tangent_gradient(shifted) - g0) / fd_step)
        jac = np.stack(columns, axis=-1)  # (P, K, 2, 2)
        det = jac[..., 0, 0] * jac[..., 1, 1] - jac[..., 0, 1] * jac[..., 1, 0]
        safe = np.abs(det) > 1e-300
        det = np.where(safe, det, 1.0)
        s1 = -(jac[..., 1, 1] * g0[..., 0] - jac[..., 0, 1] * g0[..., 1]) / det
        s2 = -(-jac[..., 1, 0] * g0[..., 0] + jac[..., 0, 0] * g0[..., 1]) / det
        small = safe & (np.hypot(s1, s2) < 1e-5)
        stepped = n + s1[..., None] * t1 + s2[..., None] * t2
        stepped /= np.linalg.norm(stepped, axis=-1, keepdims=True)
        n = np.where(small[..., None], stepped, n)
    return n


def _distinct_best(values, directions, count, separation, shortlist=400):
    """Indices of up to `count` low grid values at least `separation` radians apart (per row)."""
    p = values.shape[0]
    short = np.argpartition(values, shortlist, axis=1)[:, :shortlist]
    short_values = np.take_along_axis(values, short, axis=1)
    order = np.argsort(short_values, axis=1)
    short = np.take_along_axis(short, order, axis=1)
    short_values = np.take_along_axis(short_values, order, axis=1)
    cos_sep = np.cos(separation)
    picks = np.empty((p, count), dtype=np.int64)
    available = np.ones(short.shape, dtype=bool)
    rows = np.arange(p)
    for c in range(count):
        first = np.argmax(available, axis=1)  # lowest value still available (ties: the first)
        none_left = ~available[rows, first]
        chosen = short[rows, first]
        picks[:, c] = np.where(none_left, picks[:, max(c - 1, 0)], chosen)
        close = np.einsum("psi,pi->ps", directions[short], directions[chosen]) > cos_sep
        available &= ~close
    return picks


def reference_ellipsoid_ellipsoid(ca, ma, cb, mb, grid_size=20000, candidates=6, chunk=100):
    """Brute-force signed depth (P,), normal A->B (P, 3), and the runner-up local minimum value (P,)."""
    directions = fibonacci_sphere(grid_size)
    monomials = _quadratic_monomials(directions)
    spacing = np.sqrt(4 * np.pi / grid_size)
    depth = np.empty(len(ca))
    normal = np.empty((len(ca), 3))
    runner_up = np.empty(len(ca))
    for lo in range(0, len(ca), chunk):
        sl = slice(lo, lo + chunk)
        d = cb[sl] - ca[sl]
        a_coef = _matrix_coefficients(ma[sl])
        b_coef = _matrix_coefficients(mb[sl])
        values = np.sqrt(a_coef @ monomials) + np.sqrt(b_coef @ monomials) - d @ directions.T
        picks = _distinct_best(values, directions, candidates, separation=3 * spacing)
        starts = directions[picks]

        def objective(n, ma=ma[sl], mb=mb[sl], d=d):
            return width_gap(ma, mb, d, n)

        refined, refined_values = refine_on_sphere(objective, starts, step=spacing)
        refined = polish_stationary_point(ma[sl], mb[sl], d, refined)
        refined_values = objective(refined)
        order = np.argsort(refined_values, axis=1)
        rows = np.arange(len(d))
        best = order[:, 0]
        depth[sl] = refined_values[rows, best]
        normal[sl] = refined[rows, best]
        # the best value among refined starts that ended somewhere else (another local minimum)
        far = np.einsum("pki,pi->pk", refined, normal[sl]) < np.cos(1e-3)
        runner_up[sl] = np.where(far, refined_values, np.inf).min(axis=1)
    return depth, normal, runner_up


def reference_ellipsoid_plane(center, m, point, plane_normal):
    """Depth of an ellipsoid against a plane whose unit normal points out of the solid; normal = plane normal."""
    depth = np.einsum("pi,pi->p", point - center, plane_normal) + np.sqrt(
        np.einsum("pi,pij,pj->p", plane_normal, m, plane_normal)
    )
    return depth, plane_normal.copy()


def reference_ellipsoid_tube(center, m, tube_center, axis, radius, samples=1024, chunk=500):
    """Depth max_x |x_perp| - R over the ellipsoid, the wall normal (toward the axis) at the maximiser,
    and the depth at the other local maximum of the radial reach (-inf if none)."""
    results = [_reference_tube_chunk(center[sl], m[sl], tube_center[sl], axis[sl], radius[sl], samples)
               for sl in (slice(lo, lo + chunk) for lo in range(0, len(center), chunk))]
    return tuple(np.concatenate(parts) for parts in zip(*results))


def _reference_tube_chunk(center, m, tube_center, axis, radius, samples):
    e1, e2 = _tangent_basis(axis)
    offset = center - tube_center
    rows = np.arange(len(center))

    def direction(theta):  # radial unit vectors, theta (P, T) -> components (P, T) each
        return [np.cos(theta) * e1[:, k, None] + np.sin(theta) * e2[:, k, None] for k in range(3)]

    def radial_reach(theta):  # max over the body of e(theta).(x - c0), for theta (P, T)
        x, y, z = direction(theta)
        return (offset[:, 0, None] * x + offset[:, 1, None] * y + offset[:, 2, None] * z
                + np.sqrt(_quadratic_form(m, x, y, z)))

    def reach_slope(theta):  # d/dtheta of radial_reach, analytic, theta (P, T)
        e = np.stack(direction(theta), axis=-1)
        de = np.stack(direction(theta + 0.5 * np.pi), axis=-1)
        return (np.einsum("pi,pti->pt", offset, de)
                + np.einsum("pti,pij,ptj->pt", de, m, e) / np.sqrt(np.einsum("pti,pij,ptj->pt", e, m, e)))

    theta = np.broadcast_to(np.linspace(0.0, 2 * np.pi, samples, endpoint=False), (len(center), samples))
    values = radial_reach(theta)
    # refine the two best local maxima of the samples (the reach can be bimodal)
    peak = (values >= np.roll(values, 1, axis=1)) & (values > np.roll(values, -1, axis=1))
    peak_values = np.where(peak, values, -np.inf)
    first = np.argmax(peak_values, axis=1)
    peak_values[rows, first] = -np.inf
    second = np.argmax(peak_values, axis=1)
    second = np.where(np.isfinite(peak_values[rows, second]), second, first)  # single peak: refine it twice
    best_theta = theta[0][np.stack([first, second], axis=1)]
    half_width = np.full(best_theta.shape, 2 * np.pi / samples)
    # shrinking symmetric five-point grid: move to the best point, or halve when the centre wins
    offsets = np.linspace(-1.0, 1.0, 5)
    while half_width.max() > 1e-7:
        trial = best_theta[..., None] + half_width[..., None] * offsets
        trial_values = radial_reach(trial.reshape(len(center), -1)).reshape(trial.shape)
        k = np.argmax(trial_values, axis=-1)
        # move only on a strict gain over the centre, so rounding ties shrink instead of drifting
        gain = np.take_along_axis(trial_values, k[..., None], axis=-1)[..., 0] > trial_values[..., 2]
        k = np.where(gain, k, 2)
        best_theta = np.take_along_axis(trial, k[..., None], axis=-1)[..., 0]
        half_width = np.where(k == 2, 0.5 * half_width, half_width)
    # polish: Newton on the analytic slope (a value-only search stalls near sqrt(eps) in angle)
    for _ in range(3):
        slope = reach_slope(best_theta)
        curvature = (reach_slope(best_theta + 1e-6) - slope) / 1e-6
        correction = np.where(curvature < 0, -slope / np.where(curvature < 0, curvature, -1.0), 0.0)
        best_theta = np.where(np.abs(correction) < 1e-5, best_theta + correction, best_theta)
    best_value = radial_reach(best_theta)
    pick = np.argmax(best_value, axis=1)
    theta_star = best_theta[rows, pick]
    other = best_theta[rows, 1 - pick]
    distinct = np.abs(np.angle(np.exp(1j * (other - theta_star)))) > 1e-3
    runner_up = np.where(distinct, best_value[rows, 1 - pick], -np.inf) - radius
    e = np.stack(direction(theta_star[:, None]), axis=-1)[:, 0, :]
    return best_value[rows, pick] - radius, -e, runner_up


def surface_points(center, rotation, semi_axes, count):
    """Points on one ellipsoid's surface from a Fibonacci sphere mapped through its axes (count, 3)."""
    return center + (fibonacci_sphere(count) * semi_axes) @ rotation.T


# ---------------------------------------------------------------------------
# the reference against closed-form answers


def _single(x):
    return np.asarray(x, dtype=float)[None]


def test_reference_two_spheres_overlapping_and_separated():
    rng = np.random.default_rng(1)
    for _ in range(20):
        ra, rb = rng.uniform(0.02, 0.1, size=2)
        u = rng.normal(size=3)
        u /= np.linalg.norm(u)
        distance = rng.uniform(0.3, 1.6) * (ra + rb)
        ca = rng.normal(size=3) * 0.1
        cb = ca + distance * u
        rot = random_rotations(rng, 2)
        ma = shape_matrices(rot[:1], _single([ra, ra, ra]))
        mb = shape_matrices(rot[1:], _single([rb, rb, rb]))
        depth, normal, _ = reference_ellipsoid_ellipsoid(_single(ca), ma, _single(cb), mb)
        assert depth[0] == pytest.approx(ra + rb - distance, abs=1e-12)
        np.testing.assert_allclose(normal[0], u, atol=1e-7)


def test_reference_axis_aligned_ellipsoids_along_principal_axis():
    # Touching along x happens at distance a_A + a_B; the normal is x by symmetry, and the
    # depth along a principal axis of both bodies is a_A + a_B - distance as long as the
    # tips are the deepest points (shallow overlap, the x semi-axes the shortest).
    axes_a = np.array([0.03, 0.07, 0.09])
    axes_b = np.array([0.025, 0.05, 0.08])
    eye = np.eye(3)[None]
    for distance in (0.04, 0.05, 0.055, 0.06, 0.1):
        depth, normal, _ = reference_ellipsoid_ellipsoid(
            _single([0, 0, 0]), shape_matrices(eye, axes_a[None]), _single([distance, 0, 0]),
            shape_matrices(eye, axes_b[None]))
        assert depth[0] == pytest.approx(0.055 - distance, abs=1e-12)
        np.testing.assert_allclose(np.abs(normal[0]), [1, 0, 0], atol=1e-7)
        assert normal[0, 0] > 0


def test_reference_separated_ellipsoids_from_a_known_common_normal():
    # Put B so that its support point along -n lies exactly gap * n beyond A's support
    # point along n: the tangent planes there separate the bodies, so the distance is
    # the gap and the normal is n, for any shapes.
    rng = np.random.default_rng(2)
    count = 40
    rot_a, rot_b = random_rotations(rng, count), random_rotations(rng, count)
    ma = shape_matrices(rot_a, rng.uniform(0.02, 0.1, (count, 3)))
    mb = shape_matrices(rot_b, rng.uniform(0.02, 0.1, (count, 3)))
    n = rng.normal(size=(count, 3))
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    gap = rng.uniform(1e-4, 0.05, count)
    ca = rng.normal(size=(count, 3)) * 0.1
    cb = _touching_centre(ca, ma, mb, n, gap)
    depth, normal, _ = reference_ellipsoid_ellipsoid(ca, ma, cb, mb)
    np.testing.assert_allclose(depth, -gap, atol=1e-12)
    np.testing.assert_allclose(normal, n, atol=1e-6)


def test_reference_overlap_is_the_minimum_translation():
    # Pushing B by (depth + gap) along the reference normal must leave the bodies exactly
    # the gap apart with the same normal (the separated case is checked above), and a
    # brute-force point test must find no point of the pushed B inside A.
    rng = np.random.default_rng(3)
    count = 30
    axes_a, axes_b = rng.uniform(0.02, 0.1, (count, 3)), rng.uniform(0.02, 0.1, (count, 3))
    ma = shape_matrices(random_rotations(rng, count), axes_a)
    mb = shape_matrices(random_rotations(rng, count), axes_b)
    u = rng.normal(size=(count, 3))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    # closer than the sum of the inscribed spheres' radii: certainly overlapping
    inscribed = axes_a.min(axis=1) + axes_b.min(axis=1)
    ca = np.zeros((count, 3))
    cb = ca + (rng.uniform(0.3, 0.95, count) * inscribed)[:, None] * u
    depth, normal, _ = reference_ellipsoid_ellipsoid(ca, ma, cb, mb)
    assert (depth > 0).all()
    gap = 1e-3
    moved_depth, moved_normal, _ = reference_ellipsoid_ellipsoid(ca, ma, cb + (depth + gap)[:, None] * normal, mb)
    np.testing.assert_allclose(moved_depth, -gap, atol=1e-10)
    np.testing.assert_allclose(moved_normal, normal, atol=1e-6)
    for p in range(5):
        sphere_to_b = np.linalg.cholesky(mb[p])  # L L' = M_B maps the unit sphere onto B's surface
        points = (cb[p] + (depth[p] + gap) * normal[p]) + fibonacci_sphere(4000) @ sphere_to_b.T
        inside_a = np.einsum("ki,ij,kj->k", points - ca[p], np.linalg.inv(ma[p]), points - ca[p])
        assert inside_a.min() > 1.0


def test_reference_sphere_and_ellipsoid_on_plane():
    rng = np.random.default_rng(4)
    count = 50
    rot = random_rotations(rng, count)
    axes = rng.uniform(0.02, 0.1, (count, 3))
    m = shape_matrices(rot, axes)
    normal = rng.normal(size=(count, 3))
    normal /= np.linalg.norm(normal, axis=1, keepdims=True)
    center = rng.normal(size=(count, 3))
    point = center - rng.uniform(-0.12, 0.12, count)[:, None] * normal
    depth, out_normal = reference_ellipsoid_plane(center, m, point, normal)
    # brute force: deepest surface point below the plane. Sampling can only miss the true
    # maximum, and by at most reach * (1 - cos(covering angle)) <= a_max * (1 - cos(spacing)).
    samples = 20000
    sampling_slack = 1.0 - np.cos(np.sqrt(4 * np.pi / samples))
    for p in range(count):
        sampled = np.max((point[p] - surface_points(center[p], rot[p], axes[p], samples)) @ normal[p])
        assert 0.0 <= depth[p] - sampled <= axes[p].max() * sampling_slack
    np.testing.assert_array_equal(out_normal, normal)
    # sphere of radius r at height h above a floor: depth r - h exactly
    r, h = 0.04, 0.03
    sphere_depth, _ = reference_ellipsoid_plane(
        _single([0, 0, h]), (r * r * np.eye(3))[None], _single([0, 0, 0]), _single([0, 0, 1]))
    assert sphere_depth[0] == pytest.approx(r - h, abs=1e-15)


def test_reference_tube_closed_forms_and_surface_sampling():
    axis = _single([0, 0, 1])
    # sphere of radius r at distance s from the axis of a tube of radius R: s + r - R, normal toward the axis
    r, s, big_r = 0.03, 0.2, 0.22
    depth, normal, _ = reference_ellipsoid_tube(_single([s, 0, 0.5]), (r * r * np.eye(3))[None],
                                                _single([0, 0, 0]), axis, _single(big_r))
    assert depth[0] == pytest.approx(s + r - big_r, abs=1e-14)
    np.testing.assert_allclose(normal[0], [-1, 0, 0], atol=1e-9)
    # axis-aligned ellipsoid on the axis: reach is its largest semi-axis across the axis
    m = np.diag([0.05, 0.08, 0.2]) ** 2
    depth, normal, _ = reference_ellipsoid_tube(_single([0, 0, 0]), m[None], _single([0, 0, 3]), axis, _single(0.1))
    assert depth[0] == pytest.approx(0.08 - 0.1, abs=1e-14)
    assert abs(normal[0, 1]) == pytest.approx(1.0, abs=1e-9)
    # random bodies and tubes: the reach matches the largest |x_perp| over dense surface points
    rng = np.random.default_rng(5)
    count = 30
    rot = random_rotations(rng, count)
    axes = rng.uniform(0.02, 0.1, (count, 3))
    tube_axis = rng.normal(size=(count, 3))
    tube_axis /= np.linalg.norm(tube_axis, axis=1, keepdims=True)
    tube_center = rng.normal(size=(count, 3))
    center = tube_center + rng.normal(size=(count, 3)) * 0.1
    radius = rng.uniform(0.1, 0.3, count)
    depth, normal, _ = reference_ellipsoid_tube(center, shape_matrices(rot, axes), tube_center, tube_axis, radius)
    samples = 40000
    sampling_slack = 1.0 - np.cos(np.sqrt(4 * np.pi / samples))  # as for the plane above
    for p in range(count):
        pts = surface_points(center[p], rot[p], axes[p], samples) - tube_center[p]
        perp = pts - np.outer(pts @ tube_axis[p], tube_axis[p])
        reach = np.linalg.norm(perp, axis=1)
        k = np.argmax(reach)
        assert 0.0 <= depth[p] - (reach[k] - radius[p]) <= axes[p].max() * sampling_slack
        np.testing.assert_allclose(normal[p], -perp[k] / reach[k], atol=0.05)
        assert abs(normal[p] @ tube_axis[p]) < 1e-12


# ---------------------------------------------------------------------------
# random pairs shared by the kernel tests


def _touching_centre(ca, ma, mb, n, gap):
    """Centre of B whose support point along -n is gap * n beyond A's support point along n."""
    qa = np.sqrt(np.einsum("pi,pij,pj->p", n, ma, n))
    qb = np.sqrt(np.einsum("pi,pij,pj->p", n, mb, n))
    tip_a = ca + np.einsum("pij,pj->pi", ma, n) / qa[:, None]
    return tip_a + gap[:, None] * n + np.einsum("pij,pj->pi", mb, n) / qb[:, None]


PAIR_COUNT = 10_000


@pytest.fixture(scope="module")
def random_pairs():
    """10,000 pairs: a third placed near touching along a chosen normal (gap within +-30% of the
    smallest semi-axis), the rest along a random direction at 0.25-1.6 times the summed reaches,
    which spans deep overlap to clear separation."""
    rng = np.random.default_rng(20240611)
    count = PAIR_COUNT
    axes_a = rng.uniform(0.02, 0.1, (count, 3))
    axes_b = rng.uniform(0.02, 0.1, (count, 3))
    rot_a, rot_b = random_rotations(rng, count), random_rotations(rng, count)
    ma, mb = shape_matrices(rot_a, axes_a), shape_matrices(rot_b, axes_b)
    ca = rng.uniform(-1.0, 1.0, (count, 3))
    u = rng.normal(size=(count, 3))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    reach = np.sqrt(np.einsum("pi,pij,pj->p", u, ma, u)) + np.sqrt(np.einsum("pi,pij,pj->p", u, mb, u))
    cb = ca + (rng.uniform(0.25, 1.6, count) * reach)[:, None] * u
    near = np.arange(count) < count // 3
    smallest = np.minimum(axes_a.min(axis=1), axes_b.min(axis=1))
    gap = rng.uniform(-0.3, 0.3, count) * smallest
    cb[near] = _touching_centre(ca[near], ma[near], mb[near], u[near], gap[near])
    depth, normal, runner_up = reference_ellipsoid_ellipsoid(ca, ma, cb, mb)
    pairs = dict(axes_a=axes_a, axes_b=axes_b, rot_a=rot_a, rot_b=rot_b, ma=ma, mb=mb, ca=ca, cb=cb,
                 depth=depth, normal=normal, runner_up=runner_up, smallest=smallest)
    return {k: np.ascontiguousarray(v) for k, v in pairs.items()}


def test_random_pairs_span_separated_touching_and_overlapping(random_pairs):
    rel = random_pairs["depth"] / random_pairs["smallest"]
    assert (rel < -0.5).sum() > 500
    assert (np.abs(rel) < 0.05).sum() > 500
    assert (rel > 1.0).sum() > 500


# ---------------------------------------------------------------------------
# the solver's compiled kernels against the reference

from quadric_solver.collision import narrowphase  # noqa: E402  (after the reference, which must not depend on it)
from quadric_solver.model import STATIC_WALL, build_model  # noqa: E402
from quadric_solver.scene import Scene  # noqa: E402

# Issue 2: depth and normal agree with the brute-force reference to 1e-6 relative.
# Depth is relative to the smaller semi-axis of the pair; normals are unit vectors.
RELATIVE_TOLERANCE = 1e-6


def _format_pair(data, p, **extra):
    fields = dict(
        ca=data["ca"][p].tolist(), axes_a=data["axes_a"][p].tolist(), rot_a=data["rot_a"][p].tolist(),
        cb=data["cb"][p].tolist(), axes_b=data["axes_b"][p].tolist(), rot_b=data["rot_b"][p].tolist(),
        reference_depth=float(data["depth"][p]), reference_normal=data["normal"][p].tolist(),
    )
    fields.update(extra)
    return repr(fields)


def test_ellipsoid_ellipsoid_kernel_matches_reference(random_pairs):
    data = random_pairs
    count = len(data["ca"])
    depth = np.empty(count)
    normal = np.empty((count, 3))
    cold = np.zeros(3)
    for p in range(count):
        out = np.empty(3)
        depth[p] = narrowphase.ellipsoid_ellipsoid_depth(data["ca"][p], data["ma"][p], data["rot_a"][p],
                                                         data["cb"][p], data["mb"][p], data["rot_b"][p], cold, out)
        normal[p] = out
    tolerance = RELATIVE_TOLERANCE * data["smallest"]
    depth_error = np.abs(depth - data["depth"])
    # Where two distinct local minima tie within the tolerance the normal is not defined by
    # the depth; there the kernel's normal must still attain the minimum.
    unique_minimum = data["runner_up"] - data["depth"] > tolerance
    normal_error = np.where(unique_minimum, np.linalg.norm(normal - data["normal"], axis=1), 0.0)
    attained = width_gap(data["ma"], data["mb"], data["cb"] - data["ca"], normal[:, None, :])[:, 0]
    bad = np.flatnonzero((depth_error > tolerance) | (normal_error > RELATIVE_TOLERANCE)
                         | (attained - data["depth"] > tolerance))
    worst = [
        _format_pair(data, p, kernel_depth=float(depth[p]), kernel_normal=normal[p].tolist(),
                     width_gap_at_kernel_normal=float(attained[p]))
        for p in bad[np.argsort(-(depth_error[bad] / data["smallest"][bad]))][:3]
    ]
    assert bad.size == 0, (
        f"{bad.size} of {count} pairs disagree; max relative depth error "
        f"{np.max(depth_error / data['smallest']):.3e}, max normal error {normal_error.max():.3e}; worst: {worst}")


def test_ellipsoid_ellipsoid_kernel_warm_started_matches_reference(random_pairs):
    # In a simulation the kernel starts from last step's normal; tilt the true normal by up
    # to 0.05 rad (a fast-spinning body's turn in one 1/240 s step) and start from there.
    data = random_pairs
    count = len(data["ca"])
    rng = np.random.default_rng(12)
    t1, t2 = _tangent_basis(data["normal"])
    angle = rng.uniform(0.0, 0.05, count)
    heading = rng.uniform(0.0, 2 * np.pi, count)
    warm = (np.cos(angle)[:, None] * data["normal"]
            + np.sin(angle)[:, None] * (np.cos(heading)[:, None] * t1 + np.sin(heading)[:, None] * t2))
    depth = np.empty(count)
    normal = np.empty((count, 3))
    for p in range(count):
        out = np.empty(3)
        depth[p] = narrowphase.ellipsoid_ellipsoid_depth(data["ca"][p], data["ma"][p], data["rot_a"][p],
                                                         data["cb"][p], data["mb"][p], data["rot_b"][p],
                                                         np.ascontiguousarray(warm[p]), out)
        normal[p] = out
    tolerance = RELATIVE_TOLERANCE * data["smallest"]
    depth_error = np.abs(depth - data["depth"])
    unique_minimum = data["runner_up"] - data["depth"] > tolerance
    normal_error = np.where(unique_minimum, np.linalg.norm(normal - data["normal"], axis=1), 0.0)
    bad = np.flatnonzero((depth_error > tolerance) | (normal_error > RELATIVE_TOLERANCE))
    worst = [_format_pair(data, p, warm_normal=warm[p].tolist(), kernel_depth=float(depth[p]),
                          kernel_normal=normal[p].tolist()) for p in bad[:3]]
    assert bad.size == 0, (
        f"{bad.size} of {count} pairs disagree; max relative depth error "
        f"{np.max(depth_error / data['smallest']):.3e}, max normal error {normal_error.max():.3e}; e.g. {worst}")


def test_separation_filter_matches_reference_sign(random_pairs):
    data = random_pairs
    count = len(data["ca"])
    separated = np.array([
        narrowphase.ellipsoids_separated(data["ca"][p], data["rot_a"][p], data["axes_a"][p],
                                         data["cb"][p], data["rot_b"][p], data["axes_b"][p], 1.0, 1.0)
        for p in range(count)
    ])
    decidable = np.abs(data["depth"]) > 1e-9 * data["smallest"]
    wrong = np.flatnonzero(decidable & (separated != (data["depth"] < 0)))
    assert wrong.size == 0, (
        f"{wrong.size} of {decidable.sum()} pairs misclassified, e.g. "
        f"{[_format_pair(data, p, separated=bool(separated[p])) for p in wrong[:3]]}")


def test_ellipsoid_plane_kernel_matches_reference():
    rng = np.random.default_rng(7)
    count = PAIR_COUNT
    axes = rng.uniform(0.02, 0.1, (count, 3))
    m = shape_matrices(random_rotations(rng, count), axes)
    plane_normal = rng.normal(size=(count, 3))
    plane_normal /= np.linalg.norm(plane_normal, axis=1, keepdims=True)
    center = rng.uniform(-1.0, 1.0, (count, 3))
    # centre heights from well inside the plane to well above it (semi-axis units)
    point = center - (rng.uniform(-0.5, 1.5, count) * axes.max(axis=1))[:, None] * plane_normal
    ref_depth, ref_normal = reference_ellipsoid_plane(center, m, point, plane_normal)
    depth = np.array([narrowphase.ellipsoid_plane_depth(center[p], m[p], point[p], plane_normal[p])
                      for p in range(count)])
    # the kernel's contact normal is the plane normal itself (from the plane into the body's side)
    error = np.abs(depth - ref_depth) / axes.min(axis=1)
    assert error.max() <= RELATIVE_TOLERANCE, f"worst pair {np.argmax(error)}: relative error {error.max():.3e}"
    assert (ref_depth > 0).sum() > 1000 and (ref_depth < 0).sum() > 1000
    np.testing.assert_array_equal(ref_normal, plane_normal)


def test_ellipsoid_tube_kernel_matches_reference():
    rng = np.random.default_rng(8)
    count = PAIR_COUNT
    axes = rng.uniform(0.02, 0.1, (count, 3))
    m = shape_matrices(random_rotations(rng, count), axes)
    axis = rng.normal(size=(count, 3))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    tube_center = rng.uniform(-1.0, 1.0, (count, 3))
    radius = rng.uniform(0.15, 0.5, count)
    e1, e2 = _tangent_basis(axis)
    angle = rng.uniform(0, 2 * np.pi, count)
    radial = np.cos(angle)[:, None] * e1 + np.sin(angle)[:, None] * e2
    # centre inside the tube (off the axis), from clear of the wall to deep in it
    largest = axes.max(axis=1)
    toward_wall = rng.uniform(0.3, 2.0, count) * largest
    offset = np.where(toward_wall < radius - 0.01, radius - toward_wall, rng.uniform(0.01, radius))
    center = tube_center + offset[:, None] * radial + rng.uniform(-0.5, 0.5, count)[:, None] * axis
    ref_depth, ref_normal, runner_up = reference_ellipsoid_tube(center, m, tube_center, axis, radius)
    depth = np.empty(count)
    normal = np.empty((count, 3))
    for p in range(count):
        point_out, normal_out = np.empty(3), np.empty(3)
        depth[p] = narrowphase.ellipsoid_tube_depth(center[p], m[p], tube_center[p], axis[p], radius[p],
                                                    point_out, normal_out)
        normal[p] = normal_out
    smallest = axes.min(axis=1)
    depth_error = np.abs(depth - ref_depth) / smallest
    # normals are compared where the deepest point is unique (two maxima can tie by symmetry)
    unique_maximum = ref_depth - runner_up > RELATIVE_TOLERANCE * smallest
    normal_error = np.where(unique_maximum, np.linalg.norm(normal - ref_normal, axis=1), 0.0)
    # everywhere, the kernel's normal must be radial and reach the reference depth
    radial_reach_at_kernel_normal = (np.einsum("pi,pi->p", center - tube_center, -normal)
                                     + np.sqrt(np.einsum("pi,pij,pj->p", normal, m, normal)))
    attained = (ref_depth + radius - radial_reach_at_kernel_normal) / smallest
    off_radial = np.abs(np.einsum("pi,pi->p", normal, axis))
    bad = np.flatnonzero((depth_error > RELATIVE_TOLERANCE) | (normal_error > RELATIVE_TOLERANCE)
                         | (attained > RELATIVE_TOLERANCE) | (off_radial > RELATIVE_TOLERANCE))
    examples = [dict(center=center[p].tolist(), m=m[p].tolist(), tube_center=tube_center[p].tolist(),
                     axis=axis[p].tolist(), radius=float(radius[p]), kernel_depth=float(depth[p]),
                     reference_depth=float(ref_depth[p]), kernel_normal=normal[p].tolist(),
                     reference_normal=ref_normal[p].tolist()) for p in bad[:3]]
    assert (ref_depth > 0).sum() > 1000 and (ref_depth < 0).sum() > 1000
    assert bad.size == 0, (f"{bad.size} of {count} disagree; max relative depth error {depth_error.max():.3e}, "
                           f"max normal error {normal_error.max():.3e}; e.g. {examples}")


def test_box_container_walls_match_reference():
    # The container's inner faces, written from the definition of an open-top box, against
    # the walls the solver builds, each tested through the plane kernel on bodies inside.
    rng = np.random.default_rng(9)
    boxes = 20
    per_box = 500
    scene = Scene()
    centers = rng.uniform(-2, 2, (boxes, 3))
    halves = rng.uniform(0.2, 0.8, (boxes, 3))
    quats = rng.normal(size=(boxes, 4))
    quats /= np.linalg.norm(quats, axis=1, keepdims=True)
    box_rotations = quat_to_matrix(quats)
    for b in range(boxes):
        scene.add_box_container(centers[b], halves[b], rotation=tuple(quats[b]))
    model = build_model(scene)
    walls = np.flatnonzero(model.static_kind == STATIC_WALL)
    assert walls.size == 5 * boxes
    worst = 0.0
    for b in range(boxes):
        ex, ey, ez = box_rotations[b].T
        hx, hy, hz = halves[b]
        c = centers[b]
        expected = [(c - hz * ez, ez), (c - hx * ex, ex), (c + hx * ex, -ex), (c - hy * ey, ey), (c + hy * ey, -ey)]
        axes = rng.uniform(0.02, 0.1, (per_box, 3))
        m = shape_matrices(random_rotations(rng, per_box), axes)
        local = rng.uniform(-1, 1, (per_box, 3)) * halves[b]
        body_center = c + local @ box_rotations[b].T
        built = [(model.static_point[s], model.static_normal[s]) for s in walls[5 * b:5 * b + 5]]
        # walls may be listed in any order: match each expected face to the built one with the same normal
        for point, inward in expected:
            match = [k for k, (_, nrm) in enumerate(built) if np.allclose(nrm, inward, atol=1e-12)]
            assert len(match) == 1
            s_point, s_normal = built[match[0]]
            ref_depth, _ = reference_ellipsoid_plane(body_center, m, np.broadcast_to(point, (per_box, 3)),
                                                     np.broadcast_to(inward, (per_box, 3)))
            depth = np.array([narrowphase.ellipsoid_plane_depth(body_center[p], m[p], s_point, s_normal)
                              for p in range(per_box)])
            error = np.abs(depth - ref_depth) / axes.min(axis=1)
            worst = max(worst, error.max())
    assert worst <= RELATIVE_TOLERANCE, f"max relative wall depth error {worst:.3e}"


@pytest.fixture(scope="module")
def near_touching_pairs():
    """Pairs whose support points along a chosen normal u are |gap| = 1e-9 .. 1e-3 smallest semi-axes
    apart (gap > 0) or past each other (gap < 0). u is then a stationary direction of the width gap
    with value exactly -gap; it is the global minimum when separated (the tangent planes separate)
    and stays so for overlaps far below the smallest radius of curvature (0.02^2 / 0.1 = 0.004 m
    against |gap| <= 1e-4 m here), so depth = -gap and normal = u exactly."""
    rng = np.random.default_rng(11)
    count = 4000
    axes_a, axes_b = rng.uniform(0.02, 0.1, (count, 3)), rng.uniform(0.02, 0.1, (count, 3))
    rot_a, rot_b = random_rotations(rng, count), random_rotations(rng, count)
    ma, mb = shape_matrices(rot_a, axes_a), shape_matrices(rot_b, axes_b)
    u = rng.normal(size=(count, 3))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    smallest = np.minimum(axes_a.min(axis=1), axes_b.min(axis=1))
    gap = np.where(rng.random(count) < 0.5, 1.0, -1.0) * 10.0 ** rng.uniform(-9, -3, count) * smallest
    ca = rng.uniform(-1.0, 1.0, (count, 3))
    cb = _touching_centre(ca, ma, mb, u, gap)
    pairs = dict(axes_a=axes_a, axes_b=axes_b, rot_a=rot_a, rot_b=rot_b, ma=ma, mb=mb, ca=ca, cb=cb,
                 u=u, gap=gap, smallest=smallest)
    return {k: np.ascontiguousarray(v) for k, v in pairs.items()}


def test_separation_filter_near_touching(near_touching_pairs):
    data = near_touching_pairs
    separated = np.array([
        narrowphase.ellipsoids_separated(data["ca"][p], data["rot_a"][p], data["axes_a"][p],
                                         data["cb"][p], data["rot_b"][p], data["axes_b"][p], 1.0, 1.0)
        for p in range(len(data["ca"]))
    ])
    wrong = np.flatnonzero(separated != (data["gap"] > 0))
    relative_gap = data["gap"][wrong] / data["smallest"][wrong]
    assert wrong.size == 0, f"{wrong.size} misclassified; relative gaps {relative_gap[:10]}"


def test_ellipsoid_ellipsoid_kernel_near_touching(near_touching_pairs):
    data = near_touching_pairs
    count = len(data["ca"])
    depth = np.empty(count)
    normal = np.empty((count, 3))
    cold = np.zeros(3)
    for p in range(count):
        out = np.empty(3)
        depth[p] = narrowphase.ellipsoid_ellipsoid_depth(data["ca"][p], data["ma"][p], data["rot_a"][p],
                                                         data["cb"][p], data["mb"][p], data["rot_b"][p], cold, out)
        normal[p] = out
    depth_error = np.abs(depth + data["gap"]) / data["smallest"]
    normal_error = np.linalg.norm(normal - data["u"], axis=1)
    bad = np.flatnonzero((depth_error > RELATIVE_TOLERANCE) | (normal_error > RELATIVE_TOLERANCE))
    assert bad.size == 0, (f"{bad.size} of {count} disagree; max relative depth error "
                           f"{depth_error.max():.3e}, max normal error {normal_error.max():.3e}")
