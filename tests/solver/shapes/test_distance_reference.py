"""solver.distance against the independent numpy reference (distance_reference.py) on random pairs
of every pair of families, about half of them overlapping, and against closed forms.

For each pair:
* the answer is the gap along its own normal, g(n) = -h_A(n) - h_B(-n), evaluated by the reference:
  a lower bound of the true signed distance, so the solver can never overstate it;
* it is no lower than the reference's maximum of g minus the issue's accuracy (1e-6 of the size,
  the sum of the two shapes' reaches) minus the reference's resolution (g's Lipschitz constant times
  its angular step): so it is within that of the truth wherever the reference found the maximum;
* boxes and hulls also against the exact polytope distance (SAT depth or nearest features);
* the normal is a unit vector, the points lie on their surfaces (relative residual within the
  accuracy), and point_b - point_a = distance * normal: exactly along the normal, within the
  accuracy across it;
* moving B by -distance * normal leaves the pair touching: distance 0 within the same accuracy.
"""
import itertools
import zlib

import numpy as np
import pytest

import quadric_solver as solver
from quadric_solver.shapes import Box, Capsule, Cylinder, Ellipsoid
from tests.solver.shapes import distance_reference as reference

PAIRS = 100  # per pair of families: 2,100 pairs in all
ACCURACY = 1e-6  # of the size: the requirement on distance and normal
FAMILY_PAIRS = list(itertools.combinations_with_replacement(reference.FAMILIES, 2))
IDENTITY = (1.0, 0.0, 0.0, 0.0)


def solve(shapes_a, poses_a, shapes_b, poses_b):
    results = [solver.distance(shapes_a[p], (poses_a[0][p], poses_a[1][p]), shapes_b[p], (poses_b[0][p], poses_b[1][p]))
               for p in range(len(shapes_a))]
    return (np.array([r.distance for r in results]), np.array([r.normal for r in results]),
            np.array([r.point_a for r in results]), np.array([r.point_b for r in results]))


@pytest.mark.parametrize("family_a, family_b", FAMILY_PAIRS)
def test_distance_matches_the_reference(family_a, family_b):
    rng = np.random.default_rng(zlib.crc32(f"{family_a}-{family_b}".encode()))
    shapes_a, poses_a, shapes_b, poses_b = reference.random_pairs(rng, family_a, family_b, PAIRS)
    a, b = reference.Posed(shapes_a, *poses_a), reference.Posed(shapes_b, *poses_b)
    distance, normal, point_a, point_b = solve(shapes_a, poses_a, shapes_b, poses_b)
    size = np.array([reference.reach(x) + reference.reach(y) for x, y in zip(shapes_a, shapes_b)])
    lipschitz = size + np.linalg.norm(poses_b[0] - poses_a[0], axis=1)
    best, _ = reference.signed_distance(a, b)
    assert 0.2 * PAIRS < np.sum(best < 0) < 0.8 * PAIRS, "the draw should mix overlapping and separated pairs"

    np.testing.assert_allclose(np.linalg.norm(normal, axis=1), 1.0, rtol=0, atol=1e-14)
    at_normal = reference.gaps(a, b, normal[:, None, :])[:, 0]
    np.testing.assert_array_less(np.abs(distance - at_normal), 1e-12 * size)
    np.testing.assert_array_less(best - distance, ACCURACY * size + lipschitz * reference.MIN_STEP)
    if family_a in ("box", "hull") and family_b in ("box", "hull"):
        exact = np.array([reference.polytope_signed_distance(a, b, p) for p in range(PAIRS)])
        np.testing.assert_allclose(distance, exact, rtol=0, atol=1e-12 * size.max())

    np.testing.assert_array_less(np.abs(a.surface_residual(point_a)), ACCURACY)
    np.testing.assert_array_less(np.abs(b.surface_residual(point_b)), ACCURACY)
    offset = point_b - point_a
    along = np.einsum("ij,ij->i", offset, normal)
    np.testing.assert_array_less(np.abs(along - distance), 1e-12 * size)
    np.testing.assert_array_less(np.linalg.norm(offset - along[:, None] * normal, axis=1), ACCURACY * size)

    moved = (poses_b[0] - distance[:, None] * normal, poses_b[1])
    touching, _, _, _ = solve(shapes_a, poses_a, shapes_b, moved)
    np.testing.assert_array_less(np.abs(touching), ACCURACY * size)


def test_spheres_against_the_closed_form():
    rng = np.random.default_rng(7)
    for _ in range(200):
        ra, rb = rng.uniform(0.1, 1.0, 2)
        centre_a, offset = rng.normal(size=3), rng.normal(size=3)
        offset *= rng.uniform(0.05, 2.0) * (ra + rb) / np.linalg.norm(offset)
        result = solver.distance(Ellipsoid((ra,) * 3), (centre_a, IDENTITY), Ellipsoid((rb,) * 3),
                                 (centre_a + offset, reference.random_quaternion(rng)))
        direction = offset / np.linalg.norm(offset)
        assert result.distance == pytest.approx(np.linalg.norm(offset) - ra - rb, abs=1e-14)
        np.testing.assert_allclose(result.normal, direction, atol=1e-7)
        np.testing.assert_allclose(result.point_a, centre_a + ra * direction, atol=1e-7)


def test_capsules_against_the_distance_of_their_segments():
    """A capsule is its segment swept by a ball, so two capsules' signed distance is their segments'
    distance minus both radii, apart or overlapping (crossing segments have distance 0)."""
    rng = np.random.default_rng(8)
    for _ in range(200):
        shapes = [Capsule(rng.uniform(0.1, 0.5), rng.uniform(0.1, 1.0)) for _ in range(2)]
        quaternions = [reference.random_quaternion(rng) for _ in range(2)]
        centres = [np.zeros(3), rng.normal(size=3) * 0.8]
        ends = [[c + s * shape.half_height * reference.rotation_matrix(q)[:, 2] for s in (-1, 1)]
                for shape, q, c in zip(shapes, quaternions, centres)]
        segments = reference._segment_segment(*(np.array(e) for e in ends[0] + ends[1]))
        result = solver.distance(shapes[0], (centres[0], quaternions[0]), shapes[1], (centres[1], quaternions[1]))
        expected = segments - shapes[0].radius - shapes[1].radius
        size = sum(shape.radius + shape.half_height for shape in shapes)
        assert expected - ACCURACY * size <= result.distance <= expected + 1e-12


def test_face_contacts_of_boxes_and_cylinders():
    # a cylinder standing on a box, apart by 0.05 and pressed in by 0.05: the gap along z, exactly
    for height in (0.05, -0.05):
        result = solver.distance(Box((1.0, 0.8, 0.5)), ((0, 0, 0), IDENTITY), Cylinder(0.3, 0.4),
                                 ((0.2, -0.1, 0.5 + 0.4 + height), IDENTITY))
        assert result.distance == pytest.approx(height, abs=1e-12)
        np.testing.assert_allclose(result.normal, [0, 0, 1], atol=1e-12)
        assert result.point_a[2] == pytest.approx(0.5, abs=1e-12)
        assert result.point_b[2] == pytest.approx(0.5 + height, abs=1e-12)
    # a box lying on its side on a cylinder's curved side: 0.1 apart along x
    result = solver.distance(Cylinder(0.3, 0.4), ((0, 0, 0), IDENTITY), Box((0.2, 0.2, 0.2)),
                             ((0.6, 0.0, 0.1), IDENTITY))
    assert result.distance == pytest.approx(0.1, abs=1e-12)
    np.testing.assert_allclose(result.normal, [1, 0, 0], atol=1e-12)


def test_normal_hint_changes_nothing_but_the_start():
    rng = np.random.default_rng(9)
    shapes_a, poses_a, shapes_b, poses_b = reference.random_pairs(rng, "superellipsoid", "hull", 30)
    for p in range(30):
        pose_a, pose_b = (poses_a[0][p], poses_a[1][p]), (poses_b[0][p], poses_b[1][p])
        cold = solver.distance(shapes_a[p], pose_a, shapes_b[p], pose_b)
        for hint in (cold.normal, -cold.normal, rng.normal(size=3)):
            warm = solver.distance(shapes_a[p], pose_a, shapes_b[p], pose_b, normal_hint=hint)
            size = reference.reach(shapes_a[p]) + reference.reach(shapes_b[p])
            assert warm.distance == pytest.approx(cold.distance, abs=ACCURACY * size)


@pytest.mark.parametrize("call, message", [
    (lambda: solver.distance("box", ((0, 0, 0), IDENTITY), Box((1, 1, 1)), ((0, 0, 0), IDENTITY)),
     "distance: shape_a must be a shape"),
    (lambda: solver.distance(Box((1, 1, 1)), ((0, 0, 0), IDENTITY), Box((1, 1, 1)), (0, 0, 0)),
     "distance: pose_b must be a (position, orientation) pair"),
    (lambda: solver.distance(Box((1, 1, 1)), ((0, float("nan"), 0), IDENTITY), Box((1, 1, 1)), ((0, 0, 0), IDENTITY)),
     "distance: pose_a.position contains NaN or infinity"),
    (lambda: solver.distance(Box((1, 1, 1)), ((0, 0, 0), (1, 1, 0, 0)), Box((1, 1, 1)), ((0, 0, 0), IDENTITY)),
     "distance: pose_a.orientation must be a unit quaternion"),
    (lambda: solver.distance(Box((1, 1, 1)), ((0, 0, 0), IDENTITY), Box((1, 1, 1)), ((0, 0, 0), IDENTITY),
                             normal_hint=(0, 0, 0)), "distance: normal_hint must be a non-zero direction"),
])
def test_bad_arguments_name_the_field(call, message):
    with pytest.raises(ValueError) as caught:
        call()
    assert str(caught.value).startswith(message)
