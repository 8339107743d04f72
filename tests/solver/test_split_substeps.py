"""Substeps split where contacts spin or close fast (Simulation(max_turn=..., max_parts=...)).

A split substep must be exactly its parts run as substeps of their own; the parts follow split_parts' rule;
bodies in flight and contacts of ellipsoids alone never split one; an overflow inside a split substep must
resume it where it stopped. What the split does to overlaps is measured by the shapes' benchmark
(docs/design-notes.md, Split substeps), not asserted here: one chaotic drop's peak is no test.
"""
import numpy as np
import pytest

import quadric_solver as solver
from scripts.bench import shapes as bench
from quadric_solver.math3d import quat_to_matrix_np

H = 1.0 / 240.0
HALF = (0.04, 0.025, 0.02)


def _spinning_box_scene():
    """A box sliding and spinning on the floor, released 1 mm above it: inside the contact margin (2 mm), so its
    contact exists from the first substep."""
    scene = solver.Scene()
    scene.add_plane(material=solver.Material(friction=0.4))
    scene.add_body(solver.Box(HALF), position=(0.0, 0.0, HALF[2] + 0.001), velocity=(0.6, 0.2, 0.0),
                   angular_velocity=(0.0, 0.0, 30.0), material=solver.Material(friction=0.4), name="Spinner")
    return scene


def test_a_split_substep_is_its_parts_run_as_substeps_of_their_own():
    """Every substep with a contact split into 4 parts runs, bit for bit, as 4 substeps of a quarter of the length.

    The first part solves the contacts the whole substep's narrow phase found, with the reach of the whole
    substep: for a box flat on the floor those are its four lower corners either way. A quarter is a power of
    two, so the part length, and the warm start's scaling to it and back, are exact.
    """
    split = solver.Simulation(_spinning_box_scene(), dt=H, max_turn=1e-12, max_parts=4)
    plain = solver.Simulation(_spinning_box_scene(), dt=H / 4, max_turn=0.0)
    for _ in range(30):  # the box still slides and spins at the end
        split.step()
        plain.step(4)
        assert split.stats["parts"] == plain.stats["parts"] == 4
    assert split.stats["contacts"] == 4
    for field in ("position", "orientation", "linear_velocity", "angular_velocity"):
        np.testing.assert_array_equal(getattr(split.state, field), getattr(plain.state, field))
    assert split.time == pytest.approx(30 * H, rel=1e-12)


def test_a_substep_splits_into_the_parts_its_fastest_contact_needs():
    """The parts follow the rule in split_parts, from the contacts the substep's own narrow phase finds: each
    body's spin, and a pair's closing speed over the smaller bounding radius (an impact's spin), at most
    max_turn radians a part, rounded up, at most max_parts.

    A box flat on the floor spinning at 60 rad/s about the vertical (0.25 rad a substep) splits into 3 parts,
    fewer as friction slows it. A box falling at 5 m/s splits the substep in which it first meets the floor by
    its closing speed, before any spin, and none in flight."""
    def on_the_floor(position, velocity, angular_velocity):
        scene = solver.Scene()
        scene.add_plane()
        scene.add_body(solver.Box(HALF), position=position, velocity=velocity, angular_velocity=angular_velocity)
        return solver.Simulation(scene, dt=H)

    spinner = on_the_floor((0.0, 0.0, HALF[2]), (0.0, 0.0, 0.0), (0.0, 0.0, 60.0))
    turn, most = spinner.settings.max_turn, spinner.settings.max_parts
    seen = []
    for _ in range(60):
        expected = min(max(1, int(np.ceil(np.linalg.norm(spinner.state.angular_velocity[0]) * H / turn))), most)
        spinner.step()
        assert spinner.stats["parts"] == expected
        seen.append(expected)
    assert seen[0] == 3 and seen[-1] < 3

    faller = on_the_floor((0.0, 0.0, 0.1), (0.0, 0.0, -5.0), (0.0, 0.0, 0.0))
    radius, g = faller.model.bounding_radius[0], -faller.scene.gravity[2]
    for _ in range(24):
        assert faller.state.position[0, 2] > HALF[2]  # in flight until the substep that splits
        closing = -faller.state.linear_velocity[0, 2] + g * H  # after the substep's gravity
        expected = min(max(1, int(np.ceil(closing / radius * H / turn))), most)
        faller.step()
        if faller.stats["parts"] > 1:
            break
    assert faller.stats["parts"] == expected > 1


def test_contacts_of_ellipsoids_alone_never_split_a_substep():
    """An ellipsoid spinning at 60 rad/s on the floor and against another ellipsoid runs whole substeps (its
    contact point moves smoothly as it turns); a box in its place splits."""
    def parts(shape):
        scene = solver.Scene()
        scene.add_plane()
        scene.add_ellipsoid((0.03, 0.03, 0.03), position=(0.07, 0.0, 0.03))
        scene.add_body(shape, position=(0.0, 0.0, HALF[2]), angular_velocity=(0.0, 0.0, 60.0))
        sim = solver.Simulation(scene, dt=H)
        counts = []
        for _ in range(10):
            sim.step()
            counts.append(sim.stats["parts"])
        assert sim.stats["contacts"] >= 2
        return counts

    assert parts(solver.Ellipsoid((0.04, 0.025, HALF[2]))) == [1] * 10
    assert min(parts(solver.Box(HALF))) > 1


def test_bodies_in_flight_never_split_a_substep():
    """A box spinning at 200 rad/s in free flight (0.83 rad a substep) runs whole substeps, and its angular
    momentum, with no torque on it, stays what it was."""
    scene = solver.Scene()
    body = scene.add_body(solver.Box(HALF), position=(0.0, 0.0, 5.0), angular_velocity=(200.0, 5.0, 1.0))
    sim = solver.Simulation(scene, dt=H)
    inertia = np.diag(sim.model.inertia_local[body])

    def momentum():
        rotation = quat_to_matrix_np(sim.state.orientation[body])
        return rotation @ inertia @ rotation.T @ sim.state.angular_velocity[body]

    start = momentum()
    for _ in range(24):
        sim.step()
        assert sim.stats["parts"] == 1
    np.testing.assert_allclose(momentum(), start, rtol=1e-9)


def test_buffers_grown_inside_a_split_substep_give_the_run_it_would_have_had():
    """Pair and contact buffers that start far too small overflow inside split substeps; the simulation grows
    them and resumes the substep at the part that overflowed. With one slab the run must equal one whose
    buffers were large enough from the start, bit for bit."""
    scene = bench.our_scene(bench.make_scene(40, 3, "box"))

    def run(capacity):
        sim = solver.Simulation(scene, dt=H, threads=1, max_turn=0.02)
        if capacity is not None:
            sim._pair_capacity = sim._contact_capacity = capacity
            sim._ws = sim._new_workspace()
        parts = 0
        for _ in range(150):
            sim.step()
            parts += sim.stats["parts"]
        return sim, parts

    roomy, roomy_parts = run(None)
    tight, tight_parts = run(4)
    assert tight._contact_capacity >= 64 and tight._pair_capacity >= 64  # grew from 4 at least four times each
    assert roomy_parts > 150 + 100  # many substeps were split
    assert tight_parts == roomy_parts
    for field in ("position", "orientation", "linear_velocity", "angular_velocity"):
        np.testing.assert_array_equal(getattr(tight.state, field), getattr(roomy.state, field))


@pytest.mark.parametrize("field, value", [("max_turn", -0.1), ("max_turn", float("nan")), ("max_parts", 0),
                                          ("max_parts", 2.5)])
def test_split_settings_are_checked(field, value):
    with pytest.raises(ValueError, match=field):
        solver.Simulation(_spinning_box_scene(), **{field: value})
