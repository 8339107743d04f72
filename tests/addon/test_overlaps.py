"""addon/overlaps.py (plain numpy, used by Check Scene before anything compiles) against closed forms and
against the solver's own narrow phase and initial-overlap check."""
import inspect

import numpy as np
import pytest

from tests.addon.numpy_modules import load

ov = load("overlaps")

# The solver's narrow phase stops after a full Newton step under 3e-4 rad, which leaves its normal within
# 3e-7 of the true one (quadric_solver/collision/narrowphase.py); ours stops under NEWTON_CONVERGED_STEP = 1e-6, so
# within about 1e-12. Where the width gap is minimal its slope is zero, so a normal off by an angle t changes
# the depth by about H t^2 / 2, H the gap's curvature on the sphere, at most a_max^2 / a_min for each body
# plus the centre distance; to that adds the round-off of the gap itself (a few eps of its terms).
SOLVER_NORMAL_ERROR = 3e-7
OUR_NORMAL_ERROR = ov.NEWTON_CONVERGED_STEP ** 2
EPS = np.finfo(np.float64).eps


def random_rotations(rng, count):
    q = rng.normal(size=(count, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    w, x, y, z = q.T
    return np.stack([np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
                     np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
                     np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1)], -2)


def quaternion_of(matrix):
    from quadric_solver.rotations import from_matrix

    return tuple(from_matrix(matrix))


@pytest.fixture(scope="module")
def random_pairs():
    """Pairs of ellipsoids (semi-axes 2-10 cm) along a random direction at 0.25-1.6 times their summed reaches
    there: deep overlaps to clear separation."""
    rng = np.random.default_rng(7)
    count = 4000
    axes_a, axes_b = rng.uniform(0.02, 0.1, (count, 3)), rng.uniform(0.02, 0.1, (count, 3))
    rot_a, rot_b = random_rotations(rng, count), random_rotations(rng, count)
    ma, mb = ov.shape_matrices(rot_a, axes_a), ov.shape_matrices(rot_b, axes_b)
    ca = rng.uniform(-1.0, 1.0, (count, 3))
    u = rng.normal(size=(count, 3))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    reach = np.sqrt(np.einsum("pi,pij,pj->p", u, ma, u)) + np.sqrt(np.einsum("pi,pij,pj->p", u, mb, u))
    cb = ca + (rng.uniform(0.25, 1.6, count) * reach)[:, None] * u
    return dict(axes_a=axes_a, axes_b=axes_b, rot_a=rot_a, rot_b=rot_b, ma=ma, mb=mb, ca=ca, cb=cb)


def test_two_spheres_and_aligned_ellipsoids_closed_form():
    # spheres: depth = r_a + r_b - distance, normal along the centre line, overlapping or apart
    centers = np.array([[0.0, 0.0, 0.0], [0.15, 0.05, 0.0], [1.0, 0.0, 0.0], [1.0, 0.0, 0.5]])
    semi = np.array([[0.1] * 3, [0.08] * 3, [0.2] * 3, [0.2] * 3])
    rot = np.tile(np.eye(3), (4, 1, 1))
    depth, normal = ov.ellipsoid_pair_depths(centers, rot, semi, np.array([0, 2]), np.array([1, 3]))
    np.testing.assert_allclose(depth, [0.18 - np.hypot(0.15, 0.05), 0.4 - 0.5], rtol=0, atol=1e-15)
    np.testing.assert_allclose(normal, [[0.15 / np.hypot(0.15, 0.05), 0.05 / np.hypot(0.15, 0.05), 0], [0, 0, 1]],
                               atol=1e-12)
    # ellipsoids with parallel axes, offset along their x axes: depth = a_x + b_x - d
    rot = random_rotations(np.random.default_rng(1), 1)
    semi = np.array([[0.3, 0.1, 0.05], [0.2, 0.15, 0.1]])
    centers = np.array([[0.0, 0.0, 0.0], 0.45 * rot[0][:, 0]])
    depth, normal = ov.ellipsoid_pair_depths(centers, np.repeat(rot, 2, axis=0), semi, np.array([0]), np.array([1]))
    assert depth[0] == pytest.approx(0.05, abs=1e-14)
    np.testing.assert_allclose(normal[0], rot[0][:, 0], atol=1e-9)


def test_pair_depths_match_the_solvers_narrow_phase(random_pairs):
    from quadric_solver.collision import narrowphase

    data = random_pairs
    count = len(data["ca"])
    ours, our_normal = ov.ellipsoid_pair_depths(np.concatenate([data["ca"], data["cb"]]),
                                                np.concatenate([data["rot_a"], data["rot_b"]]),
                                                np.concatenate([data["axes_a"], data["axes_b"]]),
                                                np.arange(count), count + np.arange(count))
    theirs, their_normal = np.empty(count), np.empty((count, 3))
    cold = np.zeros(3)
    for p in range(count):
        theirs[p] = narrowphase.ellipsoid_ellipsoid_depth(data["ca"][p], data["ma"][p], data["rot_a"][p],
                                                          data["cb"][p], data["mb"][p], data["rot_b"][p], cold,
                                                          their_normal[p])
    distance = np.linalg.norm(data["cb"] - data["ca"], axis=1)
    curvature = (data["axes_a"].max(1) ** 2 / data["axes_a"].min(1) + data["axes_b"].max(1) ** 2
                 / data["axes_b"].min(1) + distance)
    angle = SOLVER_NORMAL_ERROR + OUR_NORMAL_ERROR
    round_off = 8 * EPS * (data["axes_a"].max(1) + data["axes_b"].max(1) + distance)
    tolerance = 0.5 * curvature * angle ** 2 + round_off
    error = np.abs(ours - theirs)
    assert (ours > 0).sum() > 1000 and (ours < 0).sum() > 1000  # both overlaps and separations were tried
    assert np.all(error <= tolerance), (error / tolerance).max()
    assert np.linalg.norm(our_normal - their_normal, axis=1).max() <= angle


def test_tube_depths_match_the_solvers_narrow_phase():
    from quadric_solver.collision import narrowphase

    rng = np.random.default_rng(8)
    count = 2000
    axes = rng.uniform(0.02, 0.1, (count, 3))
    rot = random_rotations(rng, count)
    m = ov.shape_matrices(rot, axes)
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    tube_center, radius = np.array([0.3, -0.2, 0.1]), 0.3
    e1, e2 = ov.tangent_basis(axis[None])
    angle = rng.uniform(0, 2 * np.pi, count)
    radial = np.cos(angle)[:, None] * e1 + np.sin(angle)[:, None] * e2
    # centres inside the tube, from clear of its wall to deep in it
    offset = radius - rng.uniform(-0.3, 2.0, count) * axes.max(axis=1)
    offset = np.clip(offset, 0.01, radius - 1e-3)
    center = tube_center + offset[:, None] * radial + rng.uniform(-0.5, 0.5, count)[:, None] * axis
    ours, w, deepest = ov.tube_depths(center, m, tube_center, axis, radius)
    theirs, their_normal, their_point = np.empty(count), np.empty((count, 3)), np.empty((count, 3))
    for p in range(count):
        theirs[p] = narrowphase.ellipsoid_tube_depth(center[p], m[p], tube_center, axis, radius, their_point[p],
                                                     their_normal[p])
    assert (ours > 0).sum() > 300 and (ours < 0).sum() > 300
    # both maximise the same smooth function of the angle around the axis; the solver's Newton on central
    # differences (step 1e-5) stops at an angle within about 1e-7, so the reach agrees to the curvature
    # (a_max^2 / a_min plus the offset) times that squared
    curvature = axes.max(1) ** 2 / axes.min(1) + offset
    tolerance = 0.5 * curvature * 1e-7 ** 2 + 8 * EPS * (radius + np.abs(center).sum(1))
    assert np.all(np.abs(ours - theirs) <= tolerance), (np.abs(ours - theirs) / tolerance).max()
    # and so does the direction of the deepest point, to that angle (the solver's normal points at the axis)
    np.testing.assert_allclose(-w, their_normal, atol=1e-7)


def test_overlap_tolerance_is_the_solvers():
    import quadric_solver as solver

    default = inspect.signature(solver.Simulation).parameters["overlap_tolerance"].default
    assert ov.OVERLAP_TOLERANCE == default


def _scene_with(bodies, planes=(), boxes=(), tubes=()):
    import quadric_solver as solver

    scene = solver.Scene()
    for k, (center, rot, semi, fixed) in enumerate(bodies):
        scene.add_ellipsoid(tuple(semi), position=tuple(center), orientation=quaternion_of(rot), fixed=fixed,
                            name=f"b{k}")
    for point, normal in planes:
        scene.add_plane(point=tuple(point), normal=tuple(normal))
    for center, half, rot in boxes:
        scene.add_box_container(center=tuple(center), half_extents=tuple(half), rotation=quaternion_of(rot))
    for center, axis, radius, length in tubes:
        scene.add_tube(center=tuple(center), axis=tuple(axis), radius=radius, length=length)
    return scene


def _solver_refuses(scene):
    import quadric_solver as solver

    try:
        solver.Simulation(scene)
    except ValueError as exc:
        assert "overlaps" in str(exc)
        return True
    return False


def test_what_the_check_reports_is_what_the_solver_refuses():
    """Single bodies in a plane, a box container (floor and walls are one-sided rectangles) or a tube, and
    pairs of bodies, placed around the tolerance: the solver refuses a scene exactly when the check reports."""
    rng = np.random.default_rng(3)
    rot_box = random_rotations(rng, 1)[0]
    box = (np.array([0.0, 0.0, 0.5]), np.array([0.4, 0.3, 0.5]), rot_box)
    tube = (np.array([2.0, 0.0, 0.5]), np.array([0.0, 0.6, 0.8]), 0.25, 1.0)
    plane = (np.array([0.0, 0.0, -1.0]), np.array([0.0, 0.0, 1.0]))
    colliders = ov.statics([(0, *plane)], [(1, *box)], [(2, *tube)])
    agreed, reported = 0, 0
    for trial in range(60):
        semi = rng.uniform(0.03, 0.08, 3)
        rot = random_rotations(rng, 1)[0]
        # a point near a wall, the floor, the plane or the tube's wall, pushed in or out by up to 2 tolerances
        target = trial % 4
        if target == 0:
            center = np.array([rng.uniform(-2, 4), rng.uniform(-2, 2), -1.0])
            normal = plane[1]
        elif target in (1, 2):
            local = rng.uniform(-0.8, 0.8, 3) * box[1]
            face = rng.integers(0, 2) if target == 1 else 2
            local[face] = -box[1][face]
            center = box[0] + rot_box @ local
            normal = rot_box[:, face]
        else:
            e1, _ = ov.tangent_basis(tube[1][None] / np.linalg.norm(tube[1]))
            center = tube[0] + tube[2] * e1[0] + rng.uniform(-0.3, 0.3) * tube[1]
            normal = -e1[0]
        reach = np.sqrt(normal @ ov.shape_matrices(rot[None], semi[None])[0] @ normal)
        depth = rng.choice([-1, 1]) * rng.uniform(0.2, 2.0) * ov.OVERLAP_TOLERANCE * semi.min()
        center = center + (reach - depth) * normal
        found = ov.static_overlaps(center[None], rot[None], semi[None], colliders, np.array([True]))
        refused = _solver_refuses(_scene_with([(center, rot, semi, False)], [plane], [box], [tube]))
        agreed += refused == bool(found.a.size)
        reported += bool(found.a.size)
    for trial in range(30):
        semi = rng.uniform(0.03, 0.08, (2, 3))
        rot = random_rotations(rng, 2)
        direction = rng.normal(size=3)
        direction /= np.linalg.norm(direction)
        m = ov.shape_matrices(rot, semi)
        reach = np.sqrt(direction @ m[0] @ direction) + np.sqrt(direction @ m[1] @ direction)
        centers = np.array([[0.0, 0.0, 0.0], reach * direction])
        depth = ov.ellipsoid_pair_depths(centers, rot, semi, np.array([0]), np.array([1]))[0][0]
        # move B along the common normal to a chosen depth around the tolerance
        normal = ov.ellipsoid_pair_depths(centers, rot, semi, np.array([0]), np.array([1]))[1][0]
        want = rng.choice([-1, 1]) * rng.uniform(0.2, 2.0) * ov.OVERLAP_TOLERANCE * semi.min()
        centers[1] += (depth - want) * normal
        found = ov.body_overlaps(centers, rot, semi)
        refused = _solver_refuses(_scene_with([(centers[k], rot[k], semi[k], False) for k in range(2)]))
        agreed += refused == bool(found.a.size)
        reported += bool(found.a.size)
    assert 20 < reported < 70  # both sides of the tolerance were tried
    assert agreed == 90


def test_candidate_pairs_are_the_touching_bounding_spheres():
    rng = np.random.default_rng(5)
    centers = rng.uniform(0, 1, (400, 3)) * [3.0, 1.0, 0.2]
    radii = rng.uniform(0.01, 0.08, 400)
    a, b = ov.candidate_pairs(centers, radii)
    gap = np.linalg.norm(centers[:, None] - centers[None], axis=2) - radii[:, None] - radii[None]
    want_a, want_b = np.nonzero(np.triu(gap <= 0.0, 1))
    assert len(a) > 100
    assert set(zip(a.tolist(), b.tolist())) == set(zip(want_a.tolist(), want_b.tolist()))
    assert np.all(a < b)


def test_separate_moves_only_offenders_by_their_depth():
    # a sphere sunk 3 cm into the floor, a pair overlapping by 4 cm, a fixed body overlapped by a dynamic one,
    # a resting pair within the tolerance, and a free body
    r = 0.1
    centers = np.array([[0.0, 0.0, 0.07], [1.0, 0.0, 0.5], [1.16, 0.0, 0.5], [2.0, 0.0, 0.5], [2.0, 0.17, 0.5],
                        [3.0, 0.0, 0.5], [3.0, 0.0, 0.6995], [5.0, 0.0, 0.5]])
    n = len(centers)
    semi = np.full((n, 3), r)
    rot = np.tile(np.eye(3), (n, 1, 1))
    movable = np.array([True, True, True, False, True, True, True, True])
    floor = ov.statics([(0, (0.0, 0.0, 0.0), (0.0, 0.0, 1.0))])
    gap = 1e-3
    moved, left = ov.separate(centers, rot, semi, movable, floor, gap=gap)
    assert left.a.size == 0
    after = centers + moved
    assert ov.body_overlaps(after, rot, semi).a.size == 0
    assert ov.static_overlaps(after, rot, semi, floor, movable).a.size == 0
    extra = gap * r
    np.testing.assert_allclose(moved[0], [0, 0, 0.03 + extra], atol=1e-12)       # lifted by its depth
    np.testing.assert_allclose(moved[1], [-(0.02 + extra / 2), 0, 0], atol=1e-12)  # each half of 4 cm
    np.testing.assert_allclose(moved[2], [0.02 + extra / 2, 0, 0], atol=1e-12)
    np.testing.assert_allclose(moved[3], 0.0)                                      # fixed: stays
    np.testing.assert_allclose(moved[4], [0, 0.03 + extra, 0], atol=1e-12)         # pushed off it all the way
    np.testing.assert_allclose(moved[5:], 0.0)                                     # within tolerance, and free


def test_separate_leaves_what_no_body_can_move():
    centers = np.array([[0.0, 0.0, 0.0], [0.1, 0.0, 0.0]])
    semi = np.full((2, 3), 0.1)
    rot = np.tile(np.eye(3), (2, 1, 1))
    moved, left = ov.separate(centers, rot, semi, np.array([False, False]), ov.statics())
    assert not moved.any()
    assert left.a.tolist() == [0] and left.b.tolist() == [1] and left.depth[0] == pytest.approx(0.1)


# ------------------------------------------------------------------------------------ other shapes
shp = load("shapes")


def shapes_of(*rows):
    """Shapes from (kind, row) pairs, and their half-widths (what the tolerance is a fraction of)."""
    kinds = np.array([kind for kind, _ in rows])
    params = np.array([p for _, p in rows])
    widths = np.array([shp.half_widths(kind, p) for kind, p in rows])
    return ov.Shapes(kinds, params, (None,) * len(rows)), widths


def test_a_box_resting_on_a_plane_has_depth_zero_and_one_sunk_in_it_its_depth():
    box = (shp.BOX, shp.row(shp.BOX, half_extents=(1.0, 0.5, 0.25)))
    tilted = random_rotations(np.random.default_rng(2), 1)[0]
    shapes, widths = shapes_of(box, box, box)
    # resting, sunk by 0.2, and turned: its lowest corner sunk by 0.01 (depth = h(-n) - height, exactly)
    lowest = np.abs(tilted.T @ [0.0, 0.0, 1.0]) @ [1.0, 0.5, 0.25]
    centers = np.array([[0.0, 0.0, 0.25], [3.0, 0.0, 0.05], [6.0, 0.0, lowest - 0.01]])
    rot = np.array([np.eye(3), np.eye(3), tilted])
    floor = ov.statics([(0, (0.0, 0.0, 0.0), (0.0, 0.0, 1.0))])
    found = ov.static_overlaps(centers, rot, widths, floor, np.ones(3, dtype=bool), tolerance=0.0, shapes=shapes)
    assert found.b.tolist() == [1, 2]
    np.testing.assert_allclose(found.depth, [0.2, 0.01], rtol=1e-12)
    np.testing.assert_allclose(found.normal, [[0, 0, 1], [0, 0, 1]])


def test_pairs_with_other_shapes_are_reported_when_proven_with_their_depth():
    box = (shp.BOX, shp.row(shp.BOX, half_extents=(1.0, 1.0, 1.0)))
    ball = (shp.ELLIPSOID, shp.row(shp.ELLIPSOID, semi_axes=(0.5, 0.5, 0.5)))
    can = (shp.CYLINDER, shp.row(shp.CYLINDER, radius=0.5, half_height=1.0))
    shapes, widths = shapes_of(box, box, box, box, ball, box, can, box)
    centers = np.array([[0, 0, 1], [0, 0, 3],            # stacked: touching, not overlapping
                        [10, 0, 1], [10.5, 0.3, 2.8],    # 0.2 deep along z
                        [20, 0, 2.4], [20, 0, 1.0],      # a ball 0.1 into a box's top
                        [30, 0, 1.0], [31.4, 0, 1.0]], dtype=float)  # a cylinder 0.1 into a box's side
    rot = np.tile(np.eye(3), (8, 1, 1))
    found = ov.body_overlaps(centers, rot, widths, shapes=shapes)
    assert list(zip(found.a.tolist(), found.b.tolist())) == [(2, 3), (4, 5), (6, 7)]
    np.testing.assert_allclose(found.depth, [0.2, 0.1, 0.1], rtol=1e-9)
    np.testing.assert_allclose(found.normal, [[0, 0, 1], [0, 0, -1], [1, 0, 0]], atol=1e-6)


def test_proven_depths_bound_the_least_gap_found_by_brute_force():
    """Random turned pairs of every family: a proven overlap's depth is within a few per cent above the least
    gap over 40,000 directions, a pair proven within the tolerance has a direction that shows it, and the pairs
    left undecided are the borderline ones."""
    rng = np.random.default_rng(11)
    count = 40
    kinds = rng.integers(0, 5, 2 * count)
    rows = [(k, shp.row(k, semi_axes=rng.uniform(0.05, 0.1, 3), exponents=rng.uniform(0.2, 1.8, 2),
                        half_extents=rng.uniform(0.05, 0.1, 3), radius=rng.uniform(0.03, 0.08),
                        half_height=rng.uniform(0.03, 0.08))) for k in kinds]
    shapes, widths = shapes_of(*rows)
    rot = random_rotations(rng, 2 * count)
    a, b = np.arange(count), np.arange(count, 2 * count)
    u = rng.normal(size=(count, 3))
    centers = np.zeros((2 * count, 3))
    centers[b] = u / np.linalg.norm(u, axis=1)[:, None] * rng.uniform(0.05, 0.2, count)[:, None]
    threshold = ov.OVERLAP_TOLERANCE * np.minimum(widths[a].min(axis=1), widths[b].min(axis=1))
    depth, normal, status = ov.certified_pair_depths(centers, rot, shapes, a, b, threshold)
    assert 10 < np.sum(status == 1) < count - 10 and np.sum(status == -1) <= 2
    directions = shp.fibonacci_directions(40000)
    for p in range(count):
        gaps = ov._gaps(centers, rot, shapes, a[p:p + 1], b[p:p + 1], directions[None])[0]
        at_normal = ov._gaps(centers, rot, shapes, a[p:p + 1], b[p:p + 1], normal[p:p + 1, None])[0, 0]
        assert at_normal == pytest.approx(depth[p], rel=1e-12)  # the depth is the gap along the normal given
        if status[p] == 1:
            assert depth[p] > threshold[p]
            assert depth[p] <= gaps.min() * 1.05, p  # and at least the least gap: it is a gap
        elif status[p] == 0:
            assert depth[p] <= threshold[p]
        else:
            assert gaps.min() == pytest.approx(threshold[p], rel=0.1), p


# ---------------------------------------------------------------------------------- mesh colliders


def grid(n, half=1.0, height=None):
    """A square of (n + 1)^2 vertices and 2 n^2 triangles, fronts up, heights z = height(x, y) (flat: 0)."""
    x, y = np.meshgrid(np.linspace(-half, half, n + 1), np.linspace(-half, half, n + 1), indexing="ij")
    z = np.zeros_like(x) if height is None else height(x, y)
    vertices = np.stack([x.ravel(), y.ravel(), z.ravel()], axis=1)
    k = np.arange((n + 1) ** 2).reshape(n + 1, n + 1)
    a, b, c, d = k[:-1, :-1].ravel(), k[1:, :-1].ravel(), k[1:, 1:].ravel(), k[:-1, 1:].ravel()
    return vertices, np.concatenate([np.stack([a, b, c], axis=1), np.stack([a, c, d], axis=1)])


def test_mesh_triangles_keep_the_triangles_with_area_and_their_front_normals():
    """On a bumpy grid with a twentieth of its triangles turned over, a sliver of no area and an edge of three:
    the sliver is left out, the normals are the corners' cross products, and the wrongly wound neighbours
    Check Scene reports are the edges whose two triangles run the same way along them, counted one by one."""
    rng = np.random.default_rng(21)
    vertices, triangles = grid(16, height=lambda x, y: 0.2 * np.sin(3 * x) * np.cos(2 * y))
    turned = rng.random(len(triangles)) < 0.05
    triangles[turned] = triangles[turned][:, [0, 2, 1]]
    extra = np.array([[2.0, 0.0, 0.0], [2.5, 0.0, 0.0], [3.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    v = len(vertices)
    vertices = np.concatenate([vertices, extra])
    triangles = np.concatenate([triangles, [[v, v + 1, v + 2], [triangles[0, 0], triangles[0, 1], v + 3]]])
    tri = ov.mesh_triangles(vertices, triangles)
    kept = np.r_[np.arange(len(triangles) - 2), len(triangles) - 1]
    np.testing.assert_array_equal(tri.corners, vertices[triangles[kept]])
    cross = np.cross(tri.corners[:, 1] - tri.corners[:, 0], tri.corners[:, 2] - tri.corners[:, 0])
    np.testing.assert_allclose(tri.normal, cross / np.linalg.norm(cross, axis=1)[:, None], atol=1e-15)
    directions = {}
    for a, b, c in triangles[kept]:
        for p, q in ((a, b), (b, c), (c, a)):
            directions.setdefault((min(p, q), max(p, q)), []).append(p < q)
    flipped = sum(1 for runs in directions.values() if len(runs) == 2 and runs[0] == runs[1])
    assert flipped > 10
    from quadric_solver.mesh import mesh_topology
    assert mesh_topology(vertices, triangles).flipped_edges == flipped


def test_interval_pairs_are_every_overlapping_pair_once():
    rng = np.random.default_rng(22)
    lo_a, lo_b = rng.uniform(0, 10, 60), rng.uniform(0, 10, 90)
    lo_b[:5] = lo_a[:5]  # starts that coincide
    hi_a, hi_b = lo_a + rng.uniform(0, 1, 60), lo_b + rng.exponential(1.0, 90)
    found = [pair for i, j in ov._interval_pairs(lo_a, hi_a, lo_b, hi_b, block=7) for pair in zip(i, j)]
    want = {(i, j) for i in range(60) for j in range(90) if lo_a[i] <= hi_b[j] and lo_b[j] <= hi_a[i]}
    assert len(found) == len(set(found)) == len(want) > 100
    assert set(found) == want


def mesh_statics(vertices, triangles, owner=0):
    return ov.statics(meshes=[(owner, vertices, triangles)])


def random_shapes(rng, families, count, low, high, round_high=None):
    """``count`` shapes of the families at random, their sizes uniform in [low, high] (radius and half height
    up to ``round_high``, default high): shapes_of's (shapes, widths)."""
    round_high = high if round_high is None else round_high
    kinds = rng.choice(families, count)
    return shapes_of(*[(k, shp.row(k, semi_axes=rng.uniform(low, high, 3), half_extents=rng.uniform(low, high, 3),
                                   radius=rng.uniform(low, round_high), half_height=rng.uniform(low, round_high)))
                       for k in kinds])


def test_a_flat_mesh_floor_reports_what_a_plane_does():
    """Ellipsoids and boxes over the middle of a finely triangulated floor have the plane's depths (the same
    support, measured from a corner of the triangle under them); a body beyond the mesh's edge or with its
    centre below it has none."""
    rng = np.random.default_rng(23)
    count = 200
    shapes, widths = random_shapes(rng, [shp.ELLIPSOID, shp.BOX, shp.CYLINDER], count, 0.02, 0.06)
    rot = random_rotations(rng, count)
    centers = np.stack([rng.uniform(-0.8, 0.8, count), rng.uniform(-0.8, 0.8, count),
                        rng.uniform(-0.02, 0.1, count)], axis=1)
    centers[:10, 0] = 1.2  # beyond the edge
    movable = np.ones(count, dtype=bool)
    floor = mesh_statics(*grid(20))
    plane = ov.statics([(0, (0.0, 0.0, 0.0), (0.0, 0.0, 1.0))])
    found = ov.static_overlaps(centers, rot, widths, floor, movable, tolerance=0.0, shapes=shapes)
    want = ov.static_overlaps(centers, rot, widths, plane, movable, tolerance=0.0, shapes=shapes)
    expected = (centers[want.b, 2] > 0.0) & (centers[want.b, 0] < 1.0)
    assert 50 < expected.sum() < count - 50
    assert found.b.tolist() == want.b[expected].tolist()
    np.testing.assert_allclose(found.depth, want.depth[expected], rtol=1e-12)
    np.testing.assert_array_equal(found.normal, np.tile([0.0, 0.0, 1.0], (len(found.b), 1)))
    assert np.all(found.a == -1)


def test_mesh_depths_are_the_deepest_triangle_under_each_body(monkeypatch):
    """On a bumpy terrain, in blocks of a few pairs: each body's depth and normal are those of the deepest
    triangle it has its centre in front of and its deepest point over (every triangle tried, one body at a
    time)."""
    rng = np.random.default_rng(24)
    vertices, triangles = grid(12, height=lambda x, y: 0.15 * np.sin(4 * x) * np.cos(3 * y))
    count = 150
    shapes, widths = random_shapes(rng, [shp.ELLIPSOID, shp.BOX, shp.CAPSULE], count, 0.03, 0.1, 0.08)
    rot = random_rotations(rng, count)
    xy = rng.uniform(-1.1, 1.1, (count, 2))
    ground = 0.15 * np.sin(4 * xy[:, 0]) * np.cos(3 * xy[:, 1])
    centers = np.concatenate([xy, (ground + rng.uniform(-0.05, 0.15, count))[:, None]], axis=1)
    monkeypatch.setattr(ov, "PAIR_BLOCK", 64)
    found = ov.static_overlaps(centers, rot, widths, mesh_statics(vertices, triangles), np.ones(count, dtype=bool),
                               tolerance=0.0, shapes=shapes)
    tri = ov.mesh_triangles(vertices, triangles)
    want = {}
    for k in range(count):
        height = np.einsum("ti,ti->t", centers[k] - tri.corners[:, 0], tri.normal)
        value, point = ov.support_world(shapes, np.array([k]), rot[k:k + 1], -tri.normal[None])
        depth, deepest = value[0] - height, centers[k] + point[0]
        inside = np.ones(len(tri.normal), dtype=bool)
        for j in range(3):
            edge = tri.corners[:, (j + 1) % 3] - tri.corners[:, j]
            inside &= np.einsum("ti,ti->t", np.cross(edge, deepest - tri.corners[:, j]), tri.normal) >= 0.0
        ok = (height > 0.0) & inside & (depth > 0.0)
        if ok.any():
            t = np.flatnonzero(ok)[np.argmax(depth[ok])]
            want[k] = (depth[t], tri.normal[t])
    assert 30 < len(want) < count - 30
    assert found.b.tolist() == sorted(want)
    np.testing.assert_allclose(found.depth, [want[k][0] for k in found.b], rtol=1e-12)
    np.testing.assert_allclose(found.normal, [want[k][1] for k in found.b], atol=1e-15)


def test_separate_lifts_bodies_out_of_a_mesh():
    """A sphere sunk 3 cm into a triangulated floor rises straight up by that (and the gap); one sunk into the
    bottom of a V-shaped valley (two slopes at 30 degrees) ends clear of both slopes."""
    r, gap = 0.1, 1e-3
    floor_v, floor_t = grid(8)
    slope = np.tan(np.radians(30.0))
    valley_v, valley_t = grid(8, height=lambda x, y: slope * np.abs(x))
    valley_v[:, 0] += 5.0
    statics = ov.statics(meshes=[(0, floor_v, floor_t), (1, valley_v, valley_t)])
    centers = np.array([[0.1, 0.2, 0.07], [5.0, 0.1, 0.08]])
    semi, rot = np.full((2, 3), r), np.tile(np.eye(3), (2, 1, 1))
    moved, left = ov.separate(centers, rot, semi, np.array([True, True]), statics, gap=gap)
    assert left.a.size == 0
    np.testing.assert_allclose(moved[0], [0.0, 0.0, 0.03 + gap * r], atol=1e-12)
    after = centers[1] + moved[1]
    # clear of each slope (within the tolerance), and not thrown far: each pass pushes it off the deeper slope,
    # which (the slopes' normals 60 degrees apart) only lifts it off the other, so each slope pushes it once, by
    # at most its depth at the start (r - 0.08 cos 30) and the gap
    for sign in (1.0, -1.0):
        normal = np.array([-sign * slope, 0.0, 1.0]) / np.hypot(slope, 1.0)
        assert (after - [5.0, 0.0, 0.0]) @ normal >= r * (1.0 - ov.OVERLAP_TOLERANCE)
    assert np.linalg.norm(moved[1]) <= 2 * (r - 0.08 * np.cos(np.radians(30.0)) + gap * r)
