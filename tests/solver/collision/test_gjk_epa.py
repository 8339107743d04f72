"""GJK's simplex step, GJK, EPA and the normal refinement, each against an exact answer.

The simplex step must return the point of the simplex nearest the origin: checked against an
enumeration of every face's affine least-squares point (numpy), also on the slivers that GJK
builds near convergence on curved surfaces. GJK and EPA are checked on boxes against the exact
polytope distance and on spheres against the closed form; the refinement on ellipsoid pairs, where
the gap's maximum is smooth, against the numpy reference.
"""
import itertools

import numpy as np
import pytest

from quadric_solver.collision.epa import MAX_FACES, MAX_VERTICES, epa
from quadric_solver.collision.gjk import CONTACT, SEPARATED, closest_on_simplex, combine, gjk
from quadric_solver.collision.normal_refinement import refine_normal
from quadric_solver.math3d import quat_to_matrix_np
from quadric_solver.shapes import Box, Ellipsoid, encode_shapes
from tests.solver.shapes import distance_reference as reference


def nearest_point_of_hull(points):
    """min |sum l_i p_i| over the simplex by enumerating faces: each face's affine minimiser from its
    KKT system, kept when its weights are non-negative."""
    best = np.inf
    for size in range(1, len(points) + 1):
        for face in itertools.combinations(range(len(points)), size):
            q = points[list(face)]
            system = np.block([[2 * q @ q.T, np.ones((size, 1))], [np.ones((1, size)), np.zeros((1, 1))]])
            weights = np.linalg.lstsq(system, np.r_[np.zeros(size), 1.0], rcond=None)[0][:size]
            if np.all(weights >= 0):
                best = min(best, np.linalg.norm(weights @ q))
    return best


def simplices(rng):
    for count in (1, 2, 3, 4):
        for _ in range(200):
            yield rng.normal(size=(count, 3)) + rng.normal(size=3) * rng.uniform(0, 3)
    for _ in range(200):  # slivers: far points with clusters 1e-5 wide, away from the origin
        far = rng.normal(size=(rng.integers(1, 3), 3))
        cluster = rng.normal(size=3) + rng.normal(size=(4 - len(far), 3)) * 1e-5
        yield np.concatenate([far, cluster]) + rng.normal(size=3)


def test_simplex_step_returns_the_nearest_point():
    rng = np.random.default_rng(1)
    for points in simplices(rng):
        s = np.zeros((4, 9))
        s[:len(points), :3] = points
        weights = np.zeros(4)
        count = closest_on_simplex(s, len(points), weights)
        exact = nearest_point_of_hull(points)
        if count == 4:  # the origin inside: the tetrahedron reaches it
            assert exact <= 1e-12
            continue
        assert np.all(weights[:count] > 0) and weights[:count].sum() == pytest.approx(1.0, abs=1e-14)
        nearest = np.linalg.norm(combine(s, count, weights, 0))
        scale = np.max(np.linalg.norm(points, axis=1))
        # the step's point is a true point of the simplex, so it can undercut the enumeration only by
        # the enumeration's own error (its KKT solves square a sliver's condition number)
        assert exact - 1e-12 * scale <= nearest <= exact + 1e-13 * scale
        # the rows kept are rows of the input, in order
        kept = [int(np.flatnonzero(np.all(points == row, axis=1))[0]) for row in s[:count, :3]]
        assert kept == sorted(kept)


def posed_pair(shape_a, shape_b, rng, distance_scale):
    kinds, params, hull = encode_shapes([shape_a, shape_b])
    quaternions = [reference.random_quaternion(rng) for _ in range(2)]
    positions = np.array([rng.normal(size=3) * 0.1, rng.normal(size=3)])
    positions[1] = positions[0] + positions[1] / np.linalg.norm(positions[1]) * distance_scale
    rotations = np.stack([quat_to_matrix_np(q) for q in quaternions])
    posed = (reference.Posed([shape_a], positions[:1], quaternions[:1]),
             reference.Posed([shape_b], positions[1:], quaternions[1:]))
    return (kinds, params, hull, positions, rotations), posed


def test_gjk_and_epa_on_boxes_are_exact():
    rng = np.random.default_rng(2)
    separated = overlapping = 0
    for _ in range(300):
        a, b = Box(rng.uniform(0.2, 1, 3)), Box(rng.uniform(0.2, 1, 3))
        pair, (posed_a, posed_b) = posed_pair(a, b, rng, rng.uniform(0.3, 2.5))
        exact = reference.polytope_signed_distance(posed_a, posed_b, 0)
        direction = pair[3][1] - pair[3][0]
        simplex, weights = np.empty((4, 9)), np.zeros(4)
        verdict, count, gap, nx, ny, nz = gjk(*pair, *direction, 1e-12, simplex, weights)
        if verdict == SEPARATED:
            separated += 1
            assert gap == pytest.approx(exact, abs=1e-12)
            a_point = np.array(combine(simplex, count, weights, 3))
            b_point = np.array(combine(simplex, count, weights, 6))
            assert np.linalg.norm(b_point - a_point) == pytest.approx(exact, abs=1e-12)
        else:
            assert verdict == CONTACT and exact <= 1e-12
            overlapping += 1
            buffers = (np.empty((MAX_VERTICES, 9)), np.empty((MAX_FACES, 3), np.int64), np.empty((MAX_FACES, 4)),
                       np.zeros(MAX_FACES, np.bool_), np.empty((3 * MAX_FACES, 2), np.int64))
            depth, nx, ny, nz = epa(*pair, simplex, count, 1e-12, *buffers)
            assert -depth == pytest.approx(exact, abs=1e-12)
    assert separated > 50 and overlapping > 50


def test_gjk_and_epa_on_spheres_bound_the_closed_form():
    """GJK's gap and EPA's depth are each the gap along their normal, so GJK's never exceeds the
    distance and EPA's depth never falls below the true depth; GJK reaches its tolerance."""
    rng = np.random.default_rng(3)
    for _ in range(200):
        ra, rb = rng.uniform(0.2, 1, 2)
        pair, _ = posed_pair(Ellipsoid((ra,) * 3), Ellipsoid((rb,) * 3), rng, (ra + rb) * rng.uniform(0.3, 2))
        exact = np.linalg.norm(pair[3][1] - pair[3][0]) - ra - rb
        simplex, weights = np.empty((4, 9)), np.zeros(4)
        verdict, count, gap, nx, ny, nz = gjk(*pair, 0.0, 0.0, 1.0, 1e-10, simplex, weights)
        if verdict == SEPARATED:
            assert exact - 1e-10 <= gap <= exact + 1e-15
            continue
        buffers = (np.empty((MAX_VERTICES, 9)), np.empty((MAX_FACES, 3), np.int64), np.empty((MAX_FACES, 4)),
                   np.zeros(MAX_FACES, np.bool_), np.empty((3 * MAX_FACES, 2), np.int64))
        depth, nx, ny, nz = epa(*pair, simplex, count, 1e-10, *buffers)
        centre_gap = np.array([nx, ny, nz]) @ (pair[3][1] - pair[3][0])
        assert depth == pytest.approx(ra + rb - centre_gap, abs=1e-14)  # the gap along its normal
        assert depth >= -exact - 1e-15


def test_refinement_reaches_the_smooth_maximum_and_never_loses():
    rng = np.random.default_rng(4)
    for _ in range(100):
        a, b = Ellipsoid(rng.uniform(0.2, 1, 3)), Ellipsoid(rng.uniform(0.2, 1, 3))
        pair, (posed_a, posed_b) = posed_pair(a, b, rng, rng.uniform(0.5, 2.5))
        best, normal = reference.signed_distance(posed_a, posed_b)
        start = normal[0] + rng.normal(size=3) * 1e-2
        start /= np.linalg.norm(start)
        before = reference.gaps(posed_a, posed_b, start[None, None])[0, 0]
        gap, nx, ny, nz, gradient, _ = refine_normal(*pair, *start, 2.0)
        assert gap >= before - 1e-15  # (steps may trade rounding in the gap for a smaller gradient)
        assert gap == pytest.approx(best[0], abs=1e-13)
        assert gradient <= 1e-12
        assert reference.gaps(posed_a, posed_b, np.array([[[nx, ny, nz]]]))[0, 0] == pytest.approx(gap, abs=1e-15)
    # at a box's face the maximum is a kink: the refinement may not move, but never lowers the gap
    for _ in range(50):
        pair, (posed_a, posed_b) = posed_pair(Box(rng.uniform(0.2, 1, 3)), Ellipsoid(rng.uniform(0.2, 1, 3)), rng, 1.5)
        start = rng.normal(size=3)
        start /= np.linalg.norm(start)
        before = reference.gaps(posed_a, posed_b, start[None, None])[0, 0]
        assert refine_normal(*pair, *start, 2.0)[0] >= before - 1e-15
