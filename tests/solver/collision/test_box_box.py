"""The separating-axis test of two boxes against the exact polytope distance (numpy reference).

Overlapping: the largest separation is minus the penetration depth, exactly, and the boxes moved
apart along its axis by that depth just touch. Apart: it never exceeds the distance, and equals
it when the nearest features are a face and anything or two edges (face-on pairs below).
"""
import numpy as np
import pytest

from quadric_solver.collision.box_box import box_box_distance, box_box_gap_is_distance
from quadric_solver.math3d import quat_to_matrix_np
from quadric_solver.shapes import Box
from tests.solver.shapes import distance_reference as reference


def _posed(half, position, quaternion):
    return reference.Posed([Box(half)], position[None], quaternion[None])


def _pair(rng, distance_scale, turned=True):
    half_a, half_b = rng.uniform(0.2, 1.0, 3), rng.uniform(0.2, 1.0, 3)
    quaternions = [reference.random_quaternion(rng) if turned else np.array([1.0, 0.0, 0.0, 0.0]) for _ in range(2)]
    direction = rng.normal(size=3)
    positions = np.array([rng.normal(size=3) * 0.1, np.zeros(3)])
    positions[1] = positions[0] + direction / np.linalg.norm(direction) * distance_scale
    posed = (_posed(half_a, positions[0], quaternions[0]), _posed(half_b, positions[1], quaternions[1]))
    rotations = [quat_to_matrix_np(q) for q in quaternions]
    return (half_a, positions[0], rotations[0], half_b, positions[1], rotations[1]), (posed, quaternions[1])


def test_the_separating_axis_gives_the_penetration_depth_of_overlapping_boxes():
    rng = np.random.default_rng(31)
    overlapping = 0
    for _ in range(400):
        args, ((posed_a, posed_b), turn_b) = _pair(rng, rng.uniform(0.1, 1.5))
        exact = reference.polytope_signed_distance(posed_a, posed_b, 0)
        gap, nx, ny, nz = box_box_distance(*args)
        normal = np.array([nx, ny, nz])
        assert np.linalg.norm(normal) == pytest.approx(1.0, abs=1e-14)
        if exact > 0.0:
            continue
        overlapping += 1
        assert gap == pytest.approx(exact, abs=1e-12)
        # B moved along the normal by the depth touches A: their distance along any other axis is no more
        moved = _posed(args[3], args[4] - gap * normal, turn_b)
        assert reference.polytope_signed_distance(posed_a, moved, 0) == pytest.approx(0.0, abs=1e-12)
    assert overlapping > 150


def test_the_separating_axis_bounds_the_distance_of_boxes_apart_and_meets_it_face_on():
    rng = np.random.default_rng(32)
    apart = 0
    for _ in range(400):
        args, ((posed_a, posed_b), _) = _pair(rng, rng.uniform(1.5, 4.0))
        exact = reference.polytope_signed_distance(posed_a, posed_b, 0)
        gap, _, _, _ = box_box_distance(*args)
        if exact <= 0.0:
            continue
        apart += 1
        assert gap <= exact + 1e-12
        assert gap > 0.0  # a separating axis is among the fifteen
    assert apart > 150
    # axis-aligned boxes side by side: face to face, the distance itself
    face_on = 0
    for _ in range(100):
        args, ((posed_a, posed_b), _) = _pair(rng, rng.uniform(1.5, 4.0), turned=False)
        exact = reference.polytope_signed_distance(posed_a, posed_b, 0)
        gap, _, _, _ = box_box_distance(*args)
        offset = np.abs(args[4] - args[1]) - args[0] - args[3]
        if exact > 0.0 and np.sum(offset > 0.0) == 1:  # apart along one axis only: a face is nearest
            face_on += 1
            assert gap == pytest.approx(exact, abs=1e-12)
    assert face_on > 10


def test_the_gap_of_boxes_apart_is_taken_as_their_distance_only_where_it_is():
    """box_box_gap_is_distance: where it says so, the axis's gap is the exact distance and B moved back
    along the axis by it just touches A; it says so for face-on pairs, and not for every pair (vertex pairs)."""
    rng = np.random.default_rng(34)
    taken = refused = 0
    for turned in (True, False):
        for _ in range(300):
            args, ((posed_a, posed_b), turn_b) = _pair(rng, rng.uniform(1.5, 3.5), turned)
            gap, nx, ny, nz = box_box_distance(*args)
            if gap <= 0.0:
                continue
            exact = reference.polytope_signed_distance(posed_a, posed_b, 0)
            offset = np.abs(args[4] - args[1]) - args[0] - args[3]
            if not box_box_gap_is_distance(*args, gap, nx, ny, nz):
                refused += 1
                assert turned or np.sum(offset > 0.0) > 1, "a face-on pair refused"
                continue
            taken += 1
            assert gap == pytest.approx(exact, abs=1e-12)
            moved = _posed(args[3], args[4] - gap * np.array([nx, ny, nz]), turn_b)
            assert reference.polytope_signed_distance(posed_a, moved, 0) == pytest.approx(0.0, abs=1e-12)
    assert taken > 200 and refused > 50


def test_two_crossing_edges_are_joined_by_the_gap():
    """A cube on its edge along x over a cube on its edge along y: the edges cross, the nearest points are
    their middles, and the edge-edge axis's gap is the distance."""
    a = 0.5
    turn_x = np.array([np.cos(np.pi / 8), np.sin(np.pi / 8), 0.0, 0.0])
    turn_y = np.array([np.cos(np.pi / 8), 0.0, np.sin(np.pi / 8), 0.0])
    rotations = [quat_to_matrix_np(turn_x), quat_to_matrix_np(turn_y)]
    for offset in ((0.0, 0.0), (0.2, -0.3), (-0.45, 0.45)):  # B's edge's middle over A's edge
        position_b = np.array([offset[0], offset[1], 2.0 * a * np.sqrt(2.0) + 0.1])
        args = (np.full(3, a), np.zeros(3), rotations[0], np.full(3, a), position_b, rotations[1])
        gap, nx, ny, nz = box_box_distance(*args)
        exact = reference.polytope_signed_distance(_posed(args[0], args[1], turn_x),
                                                   _posed(args[3], args[4], turn_y), 0)
        assert exact == pytest.approx(0.1, abs=1e-12)
        assert gap == pytest.approx(0.1, abs=1e-12) and np.allclose((nx, ny, nz), (0.0, 0.0, 1.0), atol=1e-12)
        assert box_box_gap_is_distance(*args, gap, nx, ny, nz)


def test_a_contact_of_two_boxes_apart_never_states_a_gap_wider_than_their_distance():
    """The driver's contact of two boxes apart: its deepest point's gap is at most their distance.

    The separating axis only bounds the distance of boxes nearest at a vertex, and the patch along it
    can lie beside the nearest points; a speculative contact stating a wider gap than the distance lets
    a falling box sink into the one below (by 4 to 9% of its size in a 1,000-box drop)."""
    import quadric_solver as solver
    from quadric_solver.collision.driver import collide
    from quadric_solver.forces import update_body_frames

    rng = np.random.default_rng(33)
    halves = rng.uniform(0.2, 1.0, (2, 3))
    scene = solver.Scene(gravity=(0.0, 0.0, 0.0))
    for k in range(2):
        scene.add_body(Box(tuple(halves[k])), position=(3.0 * k, 0.0, 0.0))
    sim = solver.Simulation(scene, dt=1 / 240)
    model, state, ws = sim.model, sim._bodies, sim._ws
    checked = beside = 0
    for _ in range(1000):
        quaternions = [reference.random_quaternion(rng) for _ in range(2)]
        direction = rng.normal(size=3)
        positions = [np.zeros(3), direction / np.linalg.norm(direction) * rng.uniform(1.0, 3.0)]
        exact = reference.polytope_signed_distance(_posed(halves[0], positions[0], quaternions[0]),
                                                   _posed(halves[1], positions[1], quaternions[1]), 0)
        if not 0.0 < exact < 0.5:
            continue
        for k in range(2):
            state.position[k], state.orientation[k] = positions[k], quaternions[k]
        state.cache_count[0] = 0  # no warm start: every pair is new
        update_body_frames(model, state, ws, 0.0, 1 / 240, False)
        ws.reach[:] = 0.5  # every pair within the contact reach
        ws.pair_a[0], ws.pair_b[0], ws.pair_witness[0] = 0, 1, 0.0
        count = collide(model, state, ws, 1, False, 0.0, sim._shapes, sim._meshes)
        assert count > 0
        gap = -ws.contact_depth[:count].max()  # GJK, where it decides, is exact to 1e-12 of the size
        assert gap <= exact + 1e-10, f"contact gap {gap:.9g} wider than the distance {exact:.9g}"
        checked += 1
        axis_gap = box_box_distance(halves[0], positions[0], quat_to_matrix_np(quaternions[0]), halves[1],
                                    positions[1], quat_to_matrix_np(quaternions[1]))[0]
        beside += axis_gap < exact - 1e-6  # the axis is only a bound there
    assert checked > 200 and beside > 20  # both face-on and vertex pairs were there
