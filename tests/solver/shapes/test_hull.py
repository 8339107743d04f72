"""Convex hull (quickhull) against brute force on exact integer points, and its mesh invariants."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quadric_solver.shapes import ConvexHull
from quadric_solver.shapes.hull import RELATIVE_TOLERANCE, DegenerateHull, above, convex_hull
from quadric_solver.validate import FieldError


def check_mesh(points, vertices, faces):
    """Closed, consistently oriented outward, Euler characteristic 2, every point inside."""
    edges = {(int(a), int(b)) for f in faces for a, b in ((f[0], f[1]), (f[1], f[2]), (f[2], f[0]))}
    assert len(edges) == 3 * len(faces), "an edge is used twice in one direction"
    assert all((b, a) in edges for a, b in edges), "the mesh is not closed"
    assert len(vertices) - len(edges) // 2 + len(faces) == 2
    # every point within the merging of near-duplicates of the inner side of every face plane but
    # those of slivers (corners collinear to rounding), whose float normals are unreliable
    p0, p1, p2 = (vertices[faces[:, k]] for k in range(3))
    normals = np.cross(p1 - p0, p2 - p0)
    sines = np.linalg.norm(normals, axis=1) / np.linalg.norm(p1 - p0, axis=1) / np.linalg.norm(p2 - p0, axis=1)
    normals /= np.linalg.norm(normals, axis=1)[:, None]
    heights = points @ normals.T - np.einsum("ij,ij->i", normals, p0)
    scale = np.max(np.abs(points - points.mean(axis=0)))
    assert np.all(heights[:, sines > 1e-8] <= 2 * RELATIVE_TOLERANCE * scale)
    assert np.all(above(p0, p1, p2, vertices.mean(axis=0)) < 0)
    assert len(np.unique(faces)) == len(vertices)


def brute_force_corners(points):
    """Indices of the extreme points of integer points: the normals of their supporting planes span
    space. Supporting planes are the planes through three points with all points on one side, found
    with exact integer arithmetic."""
    points = points.astype(np.int64)
    normals_at = {i: [] for i in range(len(points))}
    for i, j, k in itertools.combinations(range(len(points)), 3):
        normal = np.cross(points[j] - points[i], points[k] - points[i])
        if not normal.any():
            continue
        side = (points - points[i]) @ normal
        if side.max() <= 0 or side.min() >= 0:
            on_plane = np.flatnonzero(side == 0)
            for p in on_plane:
                normals_at[p].append(normal)
    return sorted(i for i, normals in normals_at.items()
                  if normals and np.linalg.matrix_rank(np.array(normals, dtype=float)) == 3)


def test_random_points_make_a_closed_outward_hull():
    rng = np.random.default_rng(1)
    for count in (4, 5, 10, 100, 1000):
        points = rng.normal(size=(count, 3)) * [1.0, 3.0, 0.2] + rng.normal(size=3) * 100
        vertices, faces = convex_hull(points)
        check_mesh(points, vertices, faces)


def test_points_on_a_sphere_are_all_vertices():
    rng = np.random.default_rng(2)
    points = rng.normal(size=(2000, 3))
    points /= np.linalg.norm(points, axis=1)[:, None]
    vertices, faces = convex_hull(points)
    assert len(vertices) == 2000 and len(faces) == 2 * 2000 - 4
    check_mesh(points, vertices, faces)


def test_box_corners_with_duplicates_and_points_on_faces_edges_and_inside_give_the_box():
    rng = np.random.default_rng(3)
    half = np.array([1.0, 2.0, 0.5])
    corners = np.array(list(itertools.product((-1, 1), repeat=3))) * half
    on_faces = rng.uniform(-1, 1, size=(60, 3)) * half
    axis = rng.integers(0, 3, 60)
    on_faces[np.arange(60), axis] = rng.choice([-1.0, 1.0], 60) * half[axis]
    on_edges = corners[rng.integers(0, 8, 30)] * np.where(rng.random((30, 3)) < 0.4, rng.uniform(-1, 1, (30, 3)), 1)
    inside = rng.uniform(-0.9, 0.9, size=(40, 3)) * half
    points = np.concatenate([on_faces, corners, on_edges, corners, inside, corners[:3]])
    points = points[rng.permutation(len(points))] + [5.0, -3.0, 2.0]
    vertices, faces = convex_hull(points)
    assert len(vertices) == 8 and len(faces) == 12
    np.testing.assert_array_equal(np.sort(vertices, axis=0), np.sort(corners + [5.0, -3.0, 2.0], axis=0))
    check_mesh(points, vertices, faces)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(*[st.integers(-2, 2)] * 3), min_size=4, max_size=30))
def test_integer_points_with_many_coplanar_and_duplicates_match_brute_force(raw):
    points = np.array(raw, dtype=float)
    centred = points - points.mean(axis=0)
    if np.linalg.matrix_rank(centred) < 3:
        with pytest.raises(DegenerateHull):
            convex_hull(points)
        return
    vertices, faces = convex_hull(points)
    check_mesh(points, vertices, faces)
    expected = np.unique(points[brute_force_corners(points)], axis=0)
    np.testing.assert_array_equal(np.unique(vertices, axis=0), expected)


def nearly_degenerate_point_sets(rng):
    """Inputs that break hulls decided with float tolerances: a rotated lattice (coplanar only to
    rounding), near-duplicates 1e-12 apart, points scattered 1e-12 off a box's face, a 1e-6 thin slab."""
    corners = np.array(list(itertools.product((-1.0, 1.0), repeat=3)))
    for _ in range(25):
        lattice = rng.integers(-3, 4, size=(40, 3)).astype(float)
        yield lattice @ np.linalg.qr(rng.normal(size=(3, 3)))[0]
        sphere = rng.normal(size=(50, 3))
        sphere /= np.linalg.norm(sphere, axis=1)[:, None]
        yield np.concatenate([sphere, sphere + rng.normal(size=sphere.shape) * 1e-12])
        lid = rng.uniform(-1, 1, (40, 3)) * [1, 1, 0] + [0, 0, 1] + rng.normal(size=(40, 3)) * 1e-12
        yield np.concatenate([corners, lid])
        yield rng.normal(size=(30, 3)) * [1.0, 1.0, 1e-6]


def test_nearly_degenerate_points_give_valid_hulls():
    for points in nearly_degenerate_point_sets(np.random.default_rng(6)):
        check_mesh(points, *convex_hull(points))


def test_lattice_gives_its_eight_corners():
    grid = np.array(list(itertools.product(range(5), repeat=3)), dtype=float)
    vertices, faces = convex_hull(np.concatenate([grid, grid[::-1]]))
    assert len(vertices) == 8 and len(faces) == 12


@pytest.mark.parametrize("points, spans", [
    (np.zeros((6, 3)), "a single point"),
    (np.outer(np.arange(5.0), [1.0, 2.0, 3.0]), "a line"),
    (np.c_[np.random.default_rng(4).normal(size=(9, 2)), np.zeros(9)] @ np.linalg.qr(
        np.random.default_rng(5).normal(size=(3, 3)))[0], "a plane"),
])
def test_degenerate_points_are_refused_with_what_they_span(points, spans):
    with pytest.raises(FieldError, match=f"ConvexHull: points must hold at least 4 points not all in one plane: "
                                         f"the {len(points)} points given span only {spans}"):
        ConvexHull(points)


@pytest.mark.parametrize("points, problem", [
    ([[0, 0, 0], [1, 0, 0], [0, 1, 0]], "must hold at least 4 points not all in one plane, got 3 points"),
    ([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, float("nan")]], "contains NaN or infinity"),
    ([[0, 0], [1, 0], [0, 1], [1, 1]], "must be an \\(N, 3\\) array of points"),
    ("abc", "must be an \\(N, 3\\) array of points"),
])
def test_bad_points_are_refused(points, problem):
    with pytest.raises(FieldError, match=f"ConvexHull: points {problem}"):
        ConvexHull(points)
