"""Carried contacts (Simulation(contact_reuse=...), quadric_solver/collision/carried_contacts.py): a touching pair
that has barely moved since it was measured keeps its contact points, moved with the bodies.

The contract: a carried pair's deepest point is within twice the pair's motion bound of a fresh measurement (each
is within one bound of the measurement it started from); a pair that moved further is measured; carrying changes
when a sliding box leaves an edge by less than a step; a resting tower stands at the closed-form heights; scenes
of ellipsoids alone never carry.
"""
import numpy as np
import pytest

import quadric_solver as solver
from quadric_solver.collision.carried_contacts import carried_motion
from quadric_solver.collision.driver import collide
from quadric_solver.collision.patches import PATCH
from quadric_solver.forces import update_body_frames
from quadric_solver.step import PAIRS
from tests.helpers import axis_angle, quat_mul

H = 1.0 / 240.0


def _small_pile():
    """Boxes, a rounded box, a cylinder and a capsule dropped onto a fixed slab, settling within a second."""
    scene = solver.Scene()
    scene.add_plane()
    scene.add_body(solver.Box((0.2, 0.2, 0.02)), position=(0.0, 0.0, 0.02), fixed=True, name="Slab")
    shapes = [solver.Box((0.03, 0.02, 0.015)), solver.Superellipsoid((0.025, 0.02, 0.02), (0.4, 0.5)),
              solver.Cylinder(0.02, 0.03), solver.Capsule(0.015, 0.02), solver.Box((0.02, 0.02, 0.02)),
              solver.Box((0.04, 0.015, 0.01))]
    rng = np.random.default_rng(5)
    for k, shape in enumerate(shapes * 2):
        q = rng.normal(size=4)
        scene.add_body(shape, position=(-0.1 + 0.1 * (k % 3), -0.1 + 0.1 * (k // 3 % 3), 0.1 + 0.1 * (k // 9)),
                       orientation=tuple(q / np.linalg.norm(q)), name=f"Body{k}")
    return scene


def _narrow_phase(sim, shapes):
    """Contacts of the simulation's current poses, by the compiled narrow phase with ``shapes``: {pair: deepest}."""
    ws, state = sim._ws, sim._bodies
    update_body_frames(sim.model, state, ws, sim.settings.margin, 0.0, False)
    count = collide(sim.model, state, ws, int(ws.counters[PAIRS]), False, 0.0, shapes, sim._kernel_meshes)
    deepest = {}
    for a, b, depth in zip(ws.contact_a[:count], ws.contact_b[:count], ws.contact_depth[:count]):
        if a >= 0:
            deepest[(int(a), int(b))] = max(deepest.get((int(a), int(b)), -np.inf), float(depth))
    return deepest


def test_a_carried_pair_is_within_twice_its_motion_of_a_fresh_measurement():
    """After the pile settles, every body is moved by a small rigid motion: a shift and a turn that move its points
    by up to 0.6 of the smallest reuse length. The narrow phase then carries the touching pairs whose motion bound
    stays within their limit, and its deepest depth for each must lie within twice that bound of the narrow
    phase with carrying off (the same compiled code, reuse lengths zero). Pairs whose bound exceeds the limit are
    measured. Both kinds occur."""
    sim = solver.Simulation(_small_pile(), dt=H)
    sim.step(240)
    shapes = sim._kernel_shapes
    measured_shapes = shapes._replace(reuse_length=np.zeros_like(shapes.reuse_length))
    rng = np.random.default_rng(1)
    state = sim._bodies
    radius = sim.model.bounding_radius
    step = 0.6 * shapes.reuse_length[shapes.reuse_length > 0].min()
    for i in range(1, sim.model.n_bodies):  # the slab stays: it is fixed
        direction = rng.normal(size=3)
        state.position[i] += rng.uniform(0.0, step) * direction / np.linalg.norm(direction)
        angle = rng.uniform(0.0, step) / radius[i]
        state.orientation[i] = quat_mul(axis_angle(rng.normal(size=3), angle), state.orientation[i])
    carried = _narrow_phase(sim, shapes)
    ws, cache_local, cache_key = sim._ws, state.cache_local, state.cache_key[:state.cache_count[0]]
    n_pairs = int(ws.counters[PAIRS])
    sources = ws.pair_source[:n_pairs].copy()
    pairs = list(zip(ws.pair_a[:n_pairs].tolist(), ws.pair_b[:n_pairs].tolist()))
    measured = _narrow_phase(sim, measured_shapes)
    assert np.count_nonzero(ws.pair_source[:n_pairs] >= 0) == 0
    n_carried = n_measured = 0
    for (a, b), source in zip(pairs, sources):
        if source == -1 and (a, b) in measured:
            n_measured += 1
        if source < 0:
            continue
        n_carried += 1
        motion = carried_motion(cache_local, source, state.position, ws.rotation, state.linear_velocity,
                                state.angular_velocity, radius, a, b, 0.0)
        assert motion <= min(shapes.reuse_length[a], shapes.reuse_length[b])
        assert cache_key[source] % PATCH == 0  # the pair's first contact
        if (a, b) in measured:
            assert abs(carried[(a, b)] - measured[(a, b)]) <= 2.0 * motion + 1e-12, (a, b, motion)
        else:  # apart beyond the reach when measured
            assert carried[(a, b)] <= -(ws.reach[a] + ws.reach[b]) + 2.0 * motion + 1e-12, (a, b, motion)
    assert n_carried >= 5 and n_measured >= 1


def test_a_box_creeping_off_an_edge_tips_when_it_does_with_every_pair_measured():
    """A box creeps at 5 mm/s across a frictionless fixed box and off its edge. Its pair is carried while its
    points can have moved by less than its reuse length (50 um here: every other substep), so its support can lag
    the measured one by that length, which the box covers in 10 ms: the step at which it has tipped and dropped
    by half its height may come that much later or earlier, and no more. Held up beyond the edge it would not
    drop at all."""
    speed, reuse_length = 0.005, 0.005 * 0.01

    def run(reuse):
        scene = solver.Scene()
        scene.add_plane()
        ice = solver.Material(friction=0.0)
        scene.add_body(solver.Box((0.1, 0.1, 0.05)), position=(0.0, 0.0, 0.05), fixed=True, material=ice,
                       name="Table")
        scene.add_body(solver.Box((0.02, 0.02, 0.01)), position=(0.098, 0.0, 0.11), velocity=(speed, 0.0, 0.0),
                       material=ice, name="Creeper")
        sim = solver.Simulation(scene, dt=H, contact_reuse=reuse)
        assert min(sim._shapes.reuse_length) == pytest.approx(reuse_length if reuse else 0.0)
        heights, carried = [], 0
        for _ in range(240):
            sim.step()
            heights.append(sim.state.position[1, 2])
            carried += sim.stats["carried_pairs"]
        return np.array(heights), carried

    heights, carried = run(0.005)
    heights_measured, carried_measured = run(0.0)
    assert carried > 20 and carried_measured == 0  # the creeper's pair was carried on the way
    assert heights[0] == pytest.approx(0.11, abs=2e-4)  # resting on the table, then creeping
    dropped = int(np.argmax(heights < 0.11 - 0.01))
    dropped_measured = int(np.argmax(heights_measured < 0.11 - 0.01))
    assert 0 < dropped_measured < 200 and 0 < dropped
    assert abs(dropped - dropped_measured) <= reuse_length / speed / H + 1


def test_a_resting_tower_carries_its_pairs_and_stands_at_its_heights_without_creeping():
    """Five boxes stacked flat, released exactly touching, rock for a tenth of a second and settle. After that they
    stand at the sums of their half heights (within the slop at each of the five contacts below the top), within a
    millimetre of where they were placed, and in the second second their four pairs are carried in most substeps
    and no box moves by a micrometre."""
    scene = solver.Scene()
    scene.add_plane()
    halves = (0.02, 0.015, 0.025, 0.01, 0.02)
    base = 0.0
    for k, half in enumerate(halves):
        scene.add_body(solver.Box((0.05 - 0.005 * k, 0.04, half)), position=(0.0, 0.0, base + half), name=f"B{k}")
        base += 2 * half
    sim = solver.Simulation(scene, dt=H)
    sim.step(240)
    settled = sim.state.position.copy()
    carried = measured = 0
    for _ in range(240):
        sim.step()
        carried += sim.stats["carried_pairs"]
        measured += sim.stats["measured_pairs"]
    assert carried > 0.8 * (carried + measured)
    expected = np.cumsum(halves) + np.cumsum((0.0,) + halves[:-1])
    np.testing.assert_allclose(sim.state.position[:, 2], expected, atol=len(halves) * sim.settings.slop)
    assert np.abs(sim.state.position[:, :2]).max() < 1e-3
    assert np.abs(sim.state.position - settled).max() < 1e-6


def test_ellipsoids_are_never_carried_and_the_setting_is_checked():
    scene = solver.Scene()
    scene.add_plane()
    scene.add_ellipsoid((0.02, 0.02, 0.02), position=(0.0, 0.0, 0.02))
    scene.add_ellipsoid((0.02, 0.02, 0.02), position=(0.0, 0.0, 0.06))
    sim = solver.Simulation(scene, dt=H)
    sim.step(120)
    assert sim.stats["contacts"] == 2 and sim.stats["carried_pairs"] == 0 and sim.stats["measured_pairs"] == 0
    for bad in (-0.1, float("nan"), "0.01"):
        with pytest.raises(ValueError, match="contact_reuse"):
            solver.Simulation(scene, contact_reuse=bad)
