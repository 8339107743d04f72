"""The three ways to measure overlapping pairs (Simulation(penetration=...), solver.distance(penetration=...)):
EPA (the smallest depth), MPR (the depth along the centres' line) and SGJK (a local minimum from the hint).

References: the independent numpy reference (tests/solver/shapes/distance_reference.py) for g(n) at each
method's normal and for the largest g; closed forms where the deepest point lies on the centres' line.
"""
import itertools
import zlib

import numpy as np
import pytest

import quadric_solver as solver
from quadric_solver.shapes import Box, Capsule, Ellipsoid
from tests.solver.shapes import distance_reference as reference

ACCURACY = 1e-6  # of the size, as for EPA (test_distance_reference.py)
FAMILY_PAIRS = list(itertools.combinations_with_replacement(reference.FAMILIES, 2))
IDENTITY = (1.0, 0.0, 0.0, 0.0)


def overlapping_pairs(family_a, family_b, count=60):
    rng = np.random.default_rng(zlib.crc32(f"pen-{family_a}-{family_b}".encode()))
    shapes_a, poses_a, shapes_b, poses_b = reference.random_pairs(rng, family_a, family_b, count)
    a, b = reference.Posed(shapes_a, *poses_a), reference.Posed(shapes_b, *poses_b)
    best, _ = reference.signed_distance(a, b)
    size = np.array([reference.reach(x) + reference.reach(y) for x, y in zip(shapes_a, shapes_b)])
    lipschitz = size + np.linalg.norm(poses_b[0] - poses_a[0], axis=1)
    return shapes_a, poses_a, shapes_b, poses_b, a, b, best, size, lipschitz


def solve(shapes_a, poses_a, shapes_b, poses_b, penetration, hints=None):
    results = [solver.distance(shapes_a[p], (poses_a[0][p], poses_a[1][p]), shapes_b[p],
                               (poses_b[0][p], poses_b[1][p]), normal_hint=None if hints is None else hints[p],
                               penetration=penetration) for p in range(len(shapes_a))]
    return np.array([r.distance for r in results]), np.array([r.normal for r in results])


@pytest.mark.parametrize("family_a, family_b", FAMILY_PAIRS)
def test_every_method_reports_the_gap_at_its_own_normal_and_never_overstates_it(family_a, family_b):
    shapes_a, poses_a, shapes_b, poses_b, a, b, best, size, lipschitz = overlapping_pairs(family_a, family_b)
    epa, epa_normal = solve(shapes_a, poses_a, shapes_b, poses_b, "epa")
    for method in ("mpr", "sgjk"):
        distance, normal = solve(shapes_a, poses_a, shapes_b, poses_b, method)
        at_normal = reference.gaps(a, b, normal[:, None, :])[:, 0]
        np.testing.assert_array_less(np.abs(distance - at_normal), 1e-12 * size)  # g(n) exactly
        np.testing.assert_array_less(distance - best, ACCURACY * size + lipschitz * reference.MIN_STEP)
    # SGJK warm-started near EPA's answer finds that optimum (a local search from a good start)
    rng = np.random.default_rng(1)
    hints = epa_normal + 0.05 * rng.normal(size=epa_normal.shape)
    distance, _ = solve(shapes_a, poses_a, shapes_b, poses_b, "sgjk", hints)
    shallow = epa < 0.0
    np.testing.assert_array_less(np.abs(distance - epa)[shallow], 2 * ACCURACY * size[shallow])


def test_mpr_is_exact_where_the_deepest_point_lies_on_the_centres_line():
    rng = np.random.default_rng(3)
    for _ in range(100):
        ra, rb = rng.uniform(0.1, 1.0, 2)
        offset = rng.normal(size=3)
        offset *= rng.uniform(0.3, 0.99) * (ra + rb) / np.linalg.norm(offset)
        result = solver.distance(Ellipsoid((ra,) * 3), ((0.0, 0.0, 0.0), IDENTITY), Ellipsoid((rb,) * 3),
                                 (offset, reference.random_quaternion(rng)), penetration="mpr")
        assert result.distance == pytest.approx(np.linalg.norm(offset) - ra - rb, abs=1e-9 * (ra + rb))
        np.testing.assert_allclose(result.normal, offset / np.linalg.norm(offset), atol=1e-7)
    for _ in range(50):  # a box pressed onto a wider one, face to face, centres on one vertical
        lower, upper = rng.uniform(0.3, 1.0, 3), rng.uniform(0.1, 0.25, 3)
        depth = rng.uniform(0.0, 0.5) * upper[2]
        result = solver.distance(Box(lower), ((0.0, 0.0, 0.0), IDENTITY), Box(upper),
                                 ((0.0, 0.0, lower[2] + upper[2] - depth), IDENTITY), penetration="mpr")
        assert result.distance == pytest.approx(-depth, abs=1e-12)
        np.testing.assert_allclose(result.normal, [0.0, 0.0, 1.0], atol=1e-12)


def test_mpr_overstates_the_depth_of_pairs_that_overlap_off_the_centres_line():
    """A capsule lying across the corner of a box: the smallest depth is at the corner, the centres' line
    passes through the box's top face, deeper. MPR reports that (larger) depth; EPA the smallest."""
    box, capsule = Box((0.5, 0.5, 0.5)), Capsule(0.1, 0.4)
    pose_b = ((0.55, 0.0, 0.55), (np.cos(np.pi / 8), np.sin(np.pi / 8), 0.0, 0.0))
    epa = solver.distance(box, ((0.0, 0.0, 0.0), IDENTITY), capsule, pose_b)
    mpr = solver.distance(box, ((0.0, 0.0, 0.0), IDENTITY), capsule, pose_b, penetration="mpr")
    assert epa.distance < 0.0 and mpr.distance < epa.distance - 0.01


def box_on_box(penetration):
    scene = solver.Scene()
    scene.add_body(Box((0.3, 0.3, 0.1)), position=(0.0, 0.0, 0.1), fixed=True)
    top = scene.add_body(Box((0.1, 0.08, 0.05)), position=(0.01, -0.02, 0.251),
                         orientation=(np.cos(0.2), 0.0, 0.0, np.sin(0.2)))
    sim = solver.Simulation(scene, penetration=penetration)
    sim.step(480)
    return sim, top


@pytest.mark.parametrize("penetration", ["mpr", "sgjk"])
def test_a_box_comes_to_rest_on_a_box_with_each_method(penetration):
    sim, top = box_on_box(penetration)
    slop = sim.settings.slop
    height = sim.state.position[top][2]
    assert 0.25 - 2 * slop <= height <= 0.25 + slop  # resting on the lower box's top face, within the slop
    assert np.linalg.norm(sim.state.linear_velocity[top]) < 1e-3
    assert np.linalg.norm(sim.state.angular_velocity[top]) < 1e-2
    reference_sim, _ = box_on_box("epa")
    np.testing.assert_allclose(sim.state.position[top], reference_sim.state.position[top], atol=2 * slop)


@pytest.mark.parametrize("value", ["gjk", 1, None])
def test_an_unknown_method_is_refused_naming_the_field(value):
    scene = solver.Scene()
    scene.add_body(Box((0.1, 0.1, 0.1)))
    with pytest.raises(ValueError, match="penetration"):
        solver.Simulation(scene, penetration=value)
    with pytest.raises(ValueError, match="penetration"):
        solver.distance(Box((0.1, 0.1, 0.1)), ((0, 0, 0), IDENTITY), Box((0.1, 0.1, 0.1)), ((0, 0, 0.1), IDENTITY),
                        penetration=value)


@pytest.mark.parametrize("penetration", ["mpr", "sgjk"])
def test_a_pair_touching_within_gjks_tolerance_is_not_turned_inside_out(penetration):
    """Rounded boxes a hair apart (below GJK's tolerance for curved shapes, so GJK calls it contact): the origin
    lies just outside C, where MPR's ray still meets a portal. The answer must stay a touch along +z, not the
    depth through the far side with the normal reversed (which sank piles of them into each other)."""
    shape = solver.Superellipsoid((0.2, 0.15, 0.1), (0.4, 0.4))
    for offset in (0.0, 0.005, 0.01, 0.02):
        for gap in (0.0, 1e-10, 1e-9, 1e-8):
            pose_b = ((offset, 0.5 * offset, 0.2 + gap), IDENTITY)
            result = solver.distance(shape, ((0.0, 0.0, 0.0), IDENTITY), shape, pose_b, penetration=penetration)
            exact = solver.distance(shape, ((0.0, 0.0, 0.0), IDENTITY), shape, pose_b)  # EPA's, the reference
            assert abs(result.distance - exact.distance) < ACCURACY * 0.4, (offset, gap, result, exact)
            np.testing.assert_allclose(result.normal, [0.0, 0.0, 1.0], atol=1e-3)
