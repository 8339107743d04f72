"""Bumpy ellipsoids: validation, mass properties against closed forms and a fine mesh, and their contacts
against the ellipsoid path, sampled surfaces and closed-form placements."""
import math

import numpy as np
import pytest

import quadric_solver as solver
from quadric_solver.collision import bumpy_contact
from quadric_solver.collision.bumpy_contact import local_contacts, surface_radius
from quadric_solver.math3d import quat_to_matrix_np
from quadric_solver.shapes import BumpyEllipsoid, Ellipsoid, mass
from quadric_solver.shapes.bumps import sphere_directions
from quadric_solver.validate import FieldError
from tests.solver.shapes.distance_reference import random_quaternion

IDENTITY = (1.0, 0.0, 0.0, 0.0)


def random_pebble(rng, bumps=(3, 9)):
    return BumpyEllipsoid(rng.uniform(0.02, 0.05, 3),
                          [(rng.normal(size=3), rng.uniform(-0.25, 0.35), rng.uniform(0.3, 0.9))
                           for _ in range(rng.integers(*bumps))])


def surface_points(shape, pose, directions):
    return pose[0] + (directions * surface_radius(shape, directions)[:, None]) @ quat_to_matrix_np(pose[1]).T


def implicit(shape, pose, points):
    """|x| / r(x / |x|) - 1 in the shape's frame: negative inside (numpy, apart from the kernels)."""
    local = (np.asarray(points) - pose[0]) @ quat_to_matrix_np(pose[1])
    rho = np.linalg.norm(local, axis=-1)
    return rho / surface_radius(shape, local / rho[:, None]) - 1.0


@pytest.mark.parametrize("make, message", [
    (lambda: BumpyEllipsoid((1, 0, 1)), "BumpyEllipsoid: semi_axes must be positive, got semi_axes[1] = 0.0"),
    (lambda: BumpyEllipsoid((1, 1, 1), "bumps"), "BumpyEllipsoid: bumps must be a list of (direction, height, "
                                                 "angular_radius), got 'bumps'"),
    (lambda: BumpyEllipsoid((1, 1, 1), [((1, 0, 0), 0.1)]),
     "BumpyEllipsoid: bumps[0] must be (direction, height, angular_radius)"),
    (lambda: BumpyEllipsoid((1, 1, 1), [((1, 0, 0), 0.1, 0.5), ((0, 0, 0), 0.1, 0.5)]),
     "BumpyEllipsoid: bumps[1].direction must not be zero"),
    (lambda: BumpyEllipsoid((1, 1, 1), [((1, 0, 0), -0.6, 0.5)]),
     "BumpyEllipsoid: bumps[0].height must be in [-0.5, 1], got -0.6"),
    (lambda: BumpyEllipsoid((1, 1, 1), [((1, 0, 0), 0.1, 0.05)]),
     "BumpyEllipsoid: bumps[0].angular_radius must be in [0.1, 1.5708], got 0.05"),
    (lambda: BumpyEllipsoid((1, 1, 1), [((1, 0, 0), float("nan"), 0.5)]),
     "BumpyEllipsoid: bumps[0].height must be finite, got nan"),
    (lambda: BumpyEllipsoid((1, 1, 1), [((1, 0, 0), 0.1, 0.5)] * 65), "BumpyEllipsoid: bumps may hold at most 64"),
    (lambda: BumpyEllipsoid((1, 1, 1), [((1, 0, 0), -0.5, 0.5), ((1, 0.01, 0), -0.5, 0.5)]),
     "BumpyEllipsoid: bumps sink the surface to"),
])
def test_bad_bumps_name_the_field(make, message):
    with pytest.raises(FieldError) as error:
        make()
    assert str(error.value).startswith(message), str(error.value)


def test_a_bumpy_ellipsoid_is_a_value():
    bumps = [((2, 0, 0), 0.2, 0.5)]
    assert BumpyEllipsoid((1, 2, 3), bumps) == BumpyEllipsoid((1, 2, 3), [((1, 0, 0), 0.2, 0.5)])
    assert BumpyEllipsoid((1, 2, 3), bumps) != BumpyEllipsoid((1, 2, 3), [((1, 0, 0), 0.2, 0.4)])
    assert solver.BumpyEllipsoid is BumpyEllipsoid
    # the bump's apex lies height times the base radius further out
    assert BumpyEllipsoid((1, 2, 3), bumps).radius([[1.0, 0.0, 0.0]])[0] == pytest.approx(1.2, rel=1e-15)


def test_without_bumps_the_mass_properties_are_the_ellipsoids():
    axes = (0.03, 0.02, 0.015)
    quadrature, exact = BumpyEllipsoid(axes).mass_properties(900.0), Ellipsoid(axes).mass_properties(900.0)
    assert quadrature.volume == pytest.approx(exact.volume, rel=1e-12)
    assert np.allclose(quadrature.inertia_tensor, exact.inertia_tensor, rtol=0, atol=1e-12 * exact.inertia.max())
    assert np.allclose(quadrature.center_of_mass, 0.0, atol=1e-15)


def uv_mesh(shape, rows):
    """A closed triangle mesh of the surface: ``rows`` latitude bands, 2 rows longitude steps, outward."""
    theta = np.arange(1, rows) * math.pi / rows
    phi = np.arange(2 * rows) * math.pi / rows
    t, p = np.meshgrid(theta, phi, indexing="ij")
    directions = np.concatenate([[[0, 0, 1]], np.stack([np.sin(t) * np.cos(p), np.sin(t) * np.sin(p), np.cos(t)],
                                                       axis=-1).reshape(-1, 3), [[0, 0, -1]]])
    vertices = directions * shape.radius(directions)[:, None]
    ring = lambda i, j: 1 + i * 2 * rows + j % (2 * rows)  # noqa: E731
    faces = [(0, ring(0, j), ring(0, j + 1)) for j in range(2 * rows)]
    for i in range(rows - 2):
        for j in range(2 * rows):
            faces += [(ring(i, j), ring(i + 1, j), ring(i + 1, j + 1)),
                      (ring(i, j), ring(i + 1, j + 1), ring(i, j + 1))]
    south = len(vertices) - 1
    faces += [(south, ring(rows - 2, j + 1), ring(rows - 2, j)) for j in range(2 * rows)]
    return vertices, np.array(faces)


def test_bumpy_mass_properties_match_a_fine_mesh_by_the_divergence_theorem():
    """The mesh's integrals converge at second order in its spacing, so two meshes (spacing h and h/2) give
    an extrapolated reference and the size of their own difference bounds its error."""
    shape = random_pebble(np.random.default_rng(5), bumps=(6, 7))
    props = shape.mass_properties(1000.0)
    coarse, fine = (mass.polyhedron(*uv_mesh(shape, rows), 1000.0) for rows in (200, 400))
    for name in ("volume", "inertia_tensor", "center_of_mass"):
        a, b, ours = (np.asarray(getattr(p, name)) for p in (coarse, fine, props))
        reference = b + (b - a) / 3.0
        assert np.all(np.abs(ours - reference) <= np.abs(b - a) + 1e-9 * np.abs(reference).max()), name
    assert abs(props.volume - fine.volume) > 0.0  # the bumps moved the mass: it differs from the base's
    assert props.volume != pytest.approx(Ellipsoid(shape.semi_axes).mass_properties().volume, rel=1e-3)


@pytest.mark.parametrize("seed", range(3))
def test_ellipsoid_pairs_meet_as_on_the_convex_path(seed):
    rng = np.random.default_rng(seed)
    checked = 0
    for _ in range(30):
        a, b = Ellipsoid(rng.uniform(0.02, 0.05, 3)), Ellipsoid(rng.uniform(0.02, 0.05, 3))
        direction = rng.normal(size=3)
        pose_a = (np.zeros(3), random_quaternion(rng))
        pose_b = (direction / np.linalg.norm(direction) * rng.uniform(0.03, 0.12), random_quaternion(rng))
        convex = solver.distance(a, pose_a, b, pose_b)
        if convex.distance < -0.004:  # beyond what a simulation's contacts hold, several common normals compete
            continue
        contacts = local_contacts(BumpyEllipsoid(a.semi_axes), pose_a, b, pose_b)
        assert len(contacts) == 1
        assert contacts[0].distance == pytest.approx(convex.distance, abs=1e-12)
        assert np.allclose(contacts[0].normal, convex.normal, atol=1e-8)
        checked += 1
    assert checked >= 20


def check_on_surfaces(contact, shape_a, pose_a, shape_b, pose_b):
    assert abs(implicit(shape_a, pose_a, [contact.point_a])[0]) < 1e-12
    assert abs(implicit(shape_b, pose_b, [contact.point_b])[0]) < 1e-12
    assert np.allclose(contact.point_b - contact.point_a, contact.distance * contact.normal, atol=1e-12)


@pytest.mark.parametrize("seed, apart, samples", [(0, (0.1, 0.14), 30000), (1, (0.1, 0.14), 30000),
                                                   (2, (0.25, 0.35), 8000)])
def test_apart_the_least_contact_is_the_least_distance_between_sampled_surfaces(seed, apart, samples):
    """Samples of each surface: their least distance is never below the true one, and above it by the
    second-order sampling error, bounded by spacing^2 (1 / distance + 1 / radius) (spacing: between samples).
    Far apart, Newton from the kernel's own seeds can stall (a pair 0.3 m apart found none); the query's seed
    from sampled surfaces starts it near the place."""
    rng = np.random.default_rng(10 + seed)
    directions = sphere_directions(samples)
    angle = math.sqrt(4.0 * math.pi / len(directions))
    for _ in range(6):
        a, b = random_pebble(rng, bumps=(3, 9) if seed < 2 else (8, 9)), random_pebble(rng)
        direction = rng.normal(size=3)
        pose_a = (np.zeros(3), random_quaternion(rng))
        pose_b = (direction / np.linalg.norm(direction) * rng.uniform(*apart), random_quaternion(rng))
        contacts = local_contacts(a, pose_a, b, pose_b)
        assert contacts and contacts[0].distance > 0.0
        for contact in contacts:
            check_on_surfaces(contact, a, pose_a, b, pose_b)
            assert np.dot(contact.normal, pose_b[0] - pose_a[0]) > 0.0
        points_a, points_b = surface_points(a, pose_a, directions), surface_points(b, pose_b, directions)
        reach = contacts[0].distance + 0.005
        extent_a, extent_b = (np.linalg.norm(points - pose[0], axis=1).max()
                              for points, pose in ((points_a, pose_a), (points_b, pose_b)))
        near_a = points_a[np.linalg.norm(points_a - pose_b[0], axis=1) < extent_b + reach]
        near_b = points_b[np.linalg.norm(points_b - pose_a[0], axis=1) < extent_a + reach]
        sampled = min(np.linalg.norm(near_a[i:i + 2000, None] - near_b[None], axis=-1).min()
                      for i in range(0, len(near_a), 2000))
        spacing = angle * max(extent_a, extent_b)
        least_radius = min(min(a.semi_axes), min(b.semi_axes)) * 0.75
        assert contacts[0].distance <= sampled + 1e-12
        assert sampled - contacts[0].distance <= spacing ** 2 * (1.0 / contacts[0].distance + 1.0 / least_radius)


@pytest.mark.parametrize("seed", range(2))
def test_overlapping_pebbles_separate_by_each_contacts_depth(seed):
    """B moved along a contact's normal by its depth and 1e-4 of the size more leaves no sample of B's surface
    near the contact inside A; moved 1e-4 of the size less, some sample there is still inside."""
    rng = np.random.default_rng(20 + seed)
    cap = sphere_directions(200000)
    checked = 0
    for _ in range(12):
        a, b = random_pebble(rng), random_pebble(rng)
        pose_a = (np.zeros(3), random_quaternion(rng))
        direction = rng.normal(size=3)
        direction /= np.linalg.norm(direction)
        q = random_quaternion(rng)
        # place B just touching along the direction, then push it 2% of its size further in
        far = solver.distance(a, pose_a, b, (direction * 0.3, q))
        pose_b = (direction * 0.3 - far.normal * (far.distance + 0.02 * min(b.semi_axes)), q)
        contacts = [c for c in local_contacts(a, pose_a, b, pose_b) if c.distance < 0.0]
        assert contacts
        size = 0.25 * (sum(a.semi_axes) + sum(b.semi_axes)) / 1.5
        for contact in contacts:
            check_on_surfaces(contact, a, pose_a, b, pose_b)
            local_q = (contact.point_b - pose_b[0]) @ quat_to_matrix_np(pose_b[1])
            near = cap[cap @ (local_q / np.linalg.norm(local_q)) > math.cos(0.15)]
            for extra, inside in ((1e-4 * size, False), (-1e-4 * size, True)):
                moved = (pose_b[0] - contact.normal * (contact.distance - extra), pose_b[1])
                values = implicit(a, pose_a, surface_points(b, moved, near))
                assert bool(np.any(values < 0.0)) == inside, (contact.distance, extra)
            checked += 1
    assert checked >= 12


def test_extreme_pebbles_always_meet_somewhere_and_never_above_the_sampled_distance():
    """Bumps at the limits (heights -0.5 to 1, angular radii 0.1 to 1.5 rad, up to 12 a shape; thin spikes among
    them), overlapping by up to a fifth of a semi-axis or 5% apart: the query always finds a contact; apart,
    never above the least distance between 4,000 samples of each surface (the samples lie on the surfaces).
    Before its seeds from sampled surfaces, such pairs found no contact or missed the nearest spike."""
    rng = np.random.default_rng(7)
    directions = sphere_directions(4000)

    def pebble():
        while True:
            try:
                return BumpyEllipsoid(rng.uniform(0.01, 0.06, 3), [(rng.normal(size=3), rng.uniform(-0.5, 1.0),
                                                                    rng.uniform(0.1, 1.5))
                                                                   for _ in range(rng.integers(0, 13))])
            except FieldError:  # dents overlapping too deep
                pass

    for _ in range(40):
        a, b = pebble(), pebble()
        pose_a, turn = (np.zeros(3), random_quaternion(rng)), random_quaternion(rng)
        direction = rng.normal(size=3)
        direction /= np.linalg.norm(direction)
        far = solver.distance(a, pose_a, b, (direction * 0.5, turn))
        assert far.distance > 0.0
        pose_b = (direction * 0.5 - far.normal * (far.distance + rng.uniform(-0.05, 0.2) * min(b.semi_axes)), turn)
        contacts = local_contacts(a, pose_a, b, pose_b)
        assert contacts
        if contacts[0].distance > 0.0:
            points_a, points_b = surface_points(a, pose_a, directions), surface_points(b, pose_b, directions)
            sampled = min(np.linalg.norm(points_a[i:i + 500, None] - points_b[None], axis=-1).min()
                          for i in range(0, len(points_a), 500))
            assert contacts[0].distance <= sampled + 1e-12


def test_the_gap_curvature_matches_rays_cast_across_the_normal():
    """bumpy_contact.gap_curvature (the two surfaces' curvatures from their implicit functions' second
    derivatives) against the gap measured along n by bisection on numpy's implicit function, at offsets delta
    across n: central differences, whose truncation is about (kappa delta)^2 of kappa; and two balls' closed
    form, 1/R_A + 1/R_B."""
    def hit(shape, pose, origin, n, low, high):
        low_inside = implicit(shape, pose, [origin + low * n])[0] < 0.0
        for _ in range(80):
            middle = 0.5 * (low + high)
            if (implicit(shape, pose, [origin + middle * n])[0] < 0.0) == low_inside:
                low = middle
            else:
                high = middle
        return 0.5 * (low + high)

    def arrays(a, pose_a, b, pose_b):
        rows = np.array([[*a.semi_axes, 0, len(a.bumps)], [*b.semi_axes, len(a.bumps), len(b.bumps)]], dtype=float)
        return (rows, np.ascontiguousarray(np.concatenate([a.bump_rows(), b.bump_rows()])),
                np.array([pose_a[0], pose_b[0]], dtype=float),
                np.array([quat_to_matrix_np(p[1]) for p in (pose_a, pose_b)]))

    rng = np.random.default_rng(3)
    delta, checked = 3e-5, 0
    for _ in range(3):
        a, b = random_pebble(rng, bumps=(6, 7)), random_pebble(rng, bumps=(6, 7))
        direction = rng.normal(size=3)
        pose_a, pose_b = ((0, 0, 0), IDENTITY), (direction / np.linalg.norm(direction) * 0.09, IDENTITY)
        for contact in local_contacts(a, pose_a, b, pose_b):
            n = contact.normal
            tangents = np.array(bumpy_contact._tangents(*n)).reshape(2, 3)

            def gap(offset):
                origin = contact.point_a + offset
                return (hit(b, pose_b, origin, n, contact.distance - 0.01, contact.distance + 0.01)
                        - hit(a, pose_a, origin, n, -0.01, 0.01))

            second = [(gap(delta * w) + gap(-delta * w) - 2.0 * contact.distance) / delta ** 2
                      for w in (tangents[0], tangents[1], (tangents[0] + tangents[1]) / math.sqrt(2.0),
                                (tangents[0] - tangents[1]) / math.sqrt(2.0))]
            rays = np.array([second[0], second[1], 0.5 * (second[2] - second[3])])
            ours = np.array(bumpy_contact.gap_curvature(*arrays(a, pose_a, b, pose_b), *contact.point_a,
                                                        *contact.point_b, *n))
            largest = np.abs(ours).max()
            assert np.allclose(ours, rays, rtol=0, atol=10.0 * (largest * delta) ** 2 * largest + 1e-6)
            checked += 1
    assert checked >= 3
    balls = BumpyEllipsoid((0.03,) * 3), BumpyEllipsoid((0.02,) * 3)
    poses = ((0, 0, 0), IDENTITY), ((0.01, 0.02, 0.06), IDENTITY)
    contact = local_contacts(balls[0], poses[0], balls[1], poses[1])[0]
    h00, h11, h01 = bumpy_contact.gap_curvature(*arrays(balls[0], poses[0], balls[1], poses[1]), *contact.point_a,
                                                *contact.point_b, *contact.normal)
    assert h00 == pytest.approx(1 / 0.03 + 1 / 0.02, rel=1e-12) and h11 == pytest.approx(h00, rel=1e-12)
    assert abs(h01) < 1e-9 * h00


def test_two_bumps_on_a_floor_touch_at_both_and_not_between():
    """A ball on two overlapping bumps above a wide flat ellipsoid: a contact under each bump, the same by
    symmetry, and none at the saddle between them, where the gap is least along the line between the bumps but
    greatest across it. The gap matches the least height of 200,000 sampled points of the ball above the
    floor's top (within the samples' second-order error; the floor's tilt there changes it by under 1e-9)."""
    tilt = 0.35
    ball = BumpyEllipsoid((0.03, 0.03, 0.03), [((math.sin(tilt), 0, -math.cos(tilt)), 0.15, 0.6),
                                               ((-math.sin(tilt), 0, -math.cos(tilt)), 0.15, 0.6)])
    floor = Ellipsoid((2.0, 2.0, 0.05))
    pose = ((0.0, 0.0, 0.085), IDENTITY)
    contacts = local_contacts(ball, pose, floor, ((0.0, 0.0, 0.0), IDENTITY))
    assert len(contacts) == 2
    assert contacts[0].distance == pytest.approx(contacts[1].distance, abs=1e-12)
    assert sorted(np.sign([c.point_a[0] for c in contacts])) == [-1.0, 1.0]
    directions = sphere_directions(200000)
    points = surface_points(ball, pose, directions[directions[:, 2] < -0.5])
    heights = points[:, 2] - 0.05 * np.sqrt(1.0 - (points[:, 0] ** 2 + points[:, 1] ** 2) / 4.0)
    spacing = math.sqrt(4.0 * math.pi / len(directions)) * 0.03 * 1.3
    assert contacts[0].distance <= heights.min() + 1e-9
    assert heights.min() - contacts[0].distance <= spacing ** 2 / 0.03
    bottom = 0.085 - ball.radius([[0.0, 0.0, -1.0]])[0] - 0.05
    assert bottom > contacts[0].distance + 1e-4  # the bumps hold the ball's bottom above their contacts


def test_a_small_ball_rests_at_the_bottom_of_a_dent_and_a_large_one_on_its_rim():
    dented = BumpyEllipsoid((0.05, 0.05, 0.05), [((0, 0, 1), -0.3, 0.6)])
    bottom = 0.05 * 0.7
    small = local_contacts(dented, ((0, 0, 0), IDENTITY), Ellipsoid((0.004,) * 3), ((0, 0, bottom + 0.005), IDENTITY))
    assert len(small) == 1
    assert small[0].distance == pytest.approx(0.001, abs=1e-12)  # the closed form: 0.005 above minus its radius
    assert np.allclose(small[0].point_a, (0, 0, bottom), atol=1e-12)
    # a ball wider than the dent sinks into its slopes all around: contacts on a ring about the axis, equal by
    # symmetry (one from each of the dent's four rim seeds, more from others), holding the ball from every side;
    # its bottom above the dent's is a gap maximum, not a contact
    large = local_contacts(dented, ((0, 0, 0), IDENTITY), Ellipsoid((0.04,) * 3), ((0, 0, bottom + 0.041), IDENTITY))
    assert len(large) >= 4
    rings = [math.hypot(c.point_a[0], c.point_a[1]) for c in large]
    for contact, ring in zip(large, rings):
        assert contact.distance < 0.0
        assert contact.distance == pytest.approx(large[0].distance, abs=1e-12)
        assert ring == pytest.approx(rings[0], abs=1e-12) and ring > 0.005
    angles = sorted(math.atan2(c.point_a[1], c.point_a[0]) % (2 * math.pi) for c in large)
    assert max(np.diff(angles + [angles[0] + 2 * math.pi])) <= 0.5 * math.pi + 1e-6  # no side left open


def test_distance_returns_the_deepest_contact_and_refuses_other_shapes():
    rng = np.random.default_rng(3)
    a, b = random_pebble(rng), random_pebble(rng)
    pose_a, pose_b = ((0, 0, 0), IDENTITY), ((0.07, 0.01, 0), IDENTITY)
    assert solver.distance(a, pose_a, b, pose_b).distance == local_contacts(a, pose_a, b, pose_b)[0].distance
    with pytest.raises(FieldError, match="distance: shape_b must be an Ellipsoid or BumpyEllipsoid"):
        solver.distance(a, pose_a, solver.Box((1, 1, 1)), pose_b)


def test_scenes_refuse_bumpy_bodies_by_name():
    with pytest.raises(FieldError, match="body 'pebble' \\(0\\): shape BumpyEllipsoid bodies cannot be simulated yet"):
        solver.Scene().add_body(BumpyEllipsoid((0.1, 0.1, 0.1)), name="pebble")
