"""Simulation.snapshot and restore: a run continued from a snapshot taken at a frame is the uninterrupted run's
remaining frames, bit for bit (the add-on's Bake from Current Frame relies on it)."""
import numpy as np
import pytest

import quadric_solver as solver
from examples.pile import build_pile
from tests.helpers import line

FRAMES, RESUME_AT = 30, 11


def pile_with_rope():
    """Ellipsoids falling into a box onto each other (warm-started contacts, slabs, a reused pair list) and a
    pinned rope swinging down onto them."""
    scene = build_pile(40, seed=3)
    scene.add_rope(line(12, (-0.2, -0.1, 0.6), (0.2, -0.1, 0.6)), radius=0.008, pinned=(0,), name="Rope")
    return scene


def snapshot_at(scene, frame, **settings):
    """A run of ``scene`` stopped once frame ``frame`` is done, and its snapshot there."""
    sim = solver.Simulation(scene, **settings)
    taken = []
    sim.run(frames=frame + 1, progress=lambda done, total: done == frame + 1 and taken.append(sim.snapshot()))
    return taken[0]


@pytest.mark.parametrize("threads", [1, 3])
def test_a_run_resumed_from_a_snapshot_is_the_uninterrupted_run(threads):
    scene = pile_with_rope()
    whole = solver.Simulation(scene, threads=threads).run(frames=FRAMES)
    snapshot = snapshot_at(scene, RESUME_AT, threads=threads)
    for _ in range(2):  # restoring leaves the snapshot as it was: a second resume is the same again
        sim = solver.Simulation(scene, threads=threads)
        sim.restore(snapshot)
        rest = sim.run(frames=FRAMES - RESUME_AT)
        np.testing.assert_array_equal(rest.body_poses, whole.body_poses[RESUME_AT:])
        np.testing.assert_array_equal(rest.rope_nodes(0), whole.rope_nodes(0)[RESUME_AT:])
        np.testing.assert_array_equal(rest.rope_segments(0), whole.rope_segments(0)[RESUME_AT:])
        np.testing.assert_array_equal(rest.stats["contacts"], whole.stats["contacts"][RESUME_AT:])
    assert whole.stats["contacts"][RESUME_AT:].max() > 0  # the bodies touched after the snapshot


def test_a_snapshot_of_another_scene_is_refused():
    snapshot = snapshot_at(pile_with_rope(), 2)
    other = build_pile(40, seed=4)
    other.add_rope(line(12, (-0.2, -0.1, 0.6), (0.2, -0.1, 0.6)), radius=0.008, pinned=(0,), name="Rope")
    with pytest.raises(ValueError, match="restore: snapshot was taken from a simulation of another scene"):
        solver.Simulation(other).restore(snapshot)
