"""The live preview of a running simulation, the statistics kept after a run, and the stale-bake indicator.

The modal operator is driven by calling modal() with timer events (bpy has no window); the worker is held at
chosen frames so that what the viewport shows can be compared with the run's own Recording.
"""
import numpy as np
import pytest

from tests.helpers import quat_to_matrix

# Blender keeps transforms and properties in float32 (6e-8 relative): on positions of a few metres, composed with
# a rotation and an offset, some 1e-6 m; the statistics are single float32 values
TRANSFORM = 1e-5
FLOAT32 = 1e-6


@pytest.fixture(scope="module")
def live(scenario):
    return scenario("live_preview")


def body_frames(live, frame):
    """The bodies' principal frames at ``frame`` per the Recording: (position, rotation matrix) per object."""
    poses = np.array(live["recording"])[frame]
    return {name: (poses[b["index"], :3], quat_to_matrix(poses[b["index"], 3:]))
            for name, b in live["bindings"].items()}


def assert_shows(live, shown, frame):
    """The objects' world matrices, times each body's offset, are the recorded frame; the rope's bone heads are
    its recorded nodes."""
    for name, (position, rotation) in body_frames(live, frame).items():
        b = live["bindings"][name]
        obj_rotation = quat_to_matrix(np.array(shown[name]["rotation"]))
        obj_location = np.array(shown[name]["location"])
        offset_rotation = quat_to_matrix(np.array(b["offset_rotation"]))
        assert obj_location + obj_rotation @ np.array(b["offset_location"]) == pytest.approx(position, abs=TRANSFORM)
        assert obj_rotation @ offset_rotation == pytest.approx(rotation, abs=TRANSFORM)
    nodes = np.array(live["rope_nodes"])[frame]
    assert np.array(shown["bone_heads"]) == pytest.approx(nodes[:-1], abs=TRANSFORM)


def test_the_timer_shows_the_newest_finished_frame_one_per_tick(live):
    assert live["ticks"] == [["PASS_THROUGH"], ["PASS_THROUGH"]]
    assert live["shown"] == [8, 8]  # held after 9 frames: frame index 8, and nothing new on the second tick
    assert live["live_equal"]  # the frames the worker handed over are the Recording's, bit for bit
    assert_shows(live, live["newest"], 8)


def test_the_timeline_scrubs_over_the_finished_frames(live):
    assert live["scrubbed_frame"] == 3
    assert_shows(live, live["scrubbed"], 3)
    assert live["beyond_frame"] == 8  # a frame not simulated yet: the newest again


def test_a_cancelled_preview_leaves_every_transform_and_action_as_it_was(live):
    assert live["cancel_tick"] == ["PASS_THROUGH"] and live["cancel_shown"] == 3
    assert live["cancel_moved"]  # it did show something
    assert live["shown_after_delete"] == 1  # the timeline scrubbed to frame index 1 with a body deleted
    assert live["cancel_after"] == live["cancel_before"]
    assert live["cancel_handlers"] == live["handlers_before"]


def test_a_finished_preview_restores_the_objects_before_baking(live):
    assert live["job_state"] == "DONE" and live["end_tick"] == ["FINISHED"]
    assert all(result == ["RUNNING_MODAL"] for result in live["end_ticks_before"])
    assert live["end_handlers"] == live["handlers_before"] and not live["end_live"]
    assert all(live["baked_after_end"].values())
    # the bake stored the pebble's transform from before the preview as its original
    before = live["pebble_before"]
    assert live["pebble_originals"]["mode"] == before["mode"] == "YZX"
    assert live["pebble_originals"]["location"] == before["location"]
    assert live["pebble_originals"]["euler"] == before["euler"]


def test_the_run_statistics_are_summarised_from_the_recording(live):
    stats, stored = live["stats"], live["stored_stats"]
    contacts, overlap, energy = (np.array(stats[k]) for k in ("contacts", "max_penetration", "kinetic_energy"))
    assert stored["frames"] == len(contacts)
    assert (stored["contacts_min"], stored["contacts_max"], stored["contacts_final"]) == (
        contacts.min(), contacts.max(), contacts[-1])
    assert stored["overlap_frame"] == live["frame_start"] + int(np.argmax(overlap))
    for name, values in (("overlap", overlap), ("energy", energy)):  # stored as float32
        for key, value in (("min", values.min()), ("max", values.max()), ("final", values[-1])):
            assert stored[f"{name}_{key}"] == pytest.approx(value, rel=FLOAT32, abs=1e-30)


def test_the_stale_indicator_names_what_changed_since_the_bake(live):
    assert live["stale_fresh"] == ""
    assert live["stale_friction"].startswith("Start pose or settings changed")
    assert live["stale_friction_back"] == ""
    assert live["stale_moved"].startswith("Moved since the bake")
    assert live["stale_after_frame_change"] == ""  # the frame change put it back on its baked path
    assert live["stale_shape"].startswith("Start pose or settings changed")
    assert live["stale_unbaked"] == ""


# ---------------------------------------------------------------------- a tick's budget at a time, and particles
@pytest.fixture(scope="module")
def chunks(scenario):
    return scenario("preview_chunks")


def test_a_frame_is_shown_over_several_ticks_and_ends_as_shown_at_once(chunks):
    assert all(severity == 'WARNING' for severity, _ in chunks["problems"])  # (ropes pass through particles)
    results, moved = chunks["chunk_results"], chunks["chunk_moved"]
    assert chunks["chunk_shown"] == 5 and all(r == ["PASS_THROUGH"] for r in results)
    # a budget of zero: one pebble a tick (then the rope and each group), not all six at once
    assert len(results) >= 6 + 1 + 2 and max(moved) == 1
    assert chunks["chunked"] == chunks["one_shot"]  # bit for bit: transforms, bones, points as stored and drawn


def test_the_preview_shows_bodies_ropes_particles_and_soft_bodies_as_recorded(chunks):
    want = chunks["expected"]["5"]
    shown = chunks["chunked"]
    for name, pose in want["poses"].items():
        b = chunks["bindings"][name]
        matrix = np.array(shown["matrices"][name])
        position, rotation = np.array(pose[:3]), quat_to_matrix(np.array(pose[3:]))
        offset = quat_to_matrix(np.array(b["offset_rotation"]))
        assert matrix[:3, 3] + matrix[:3, :3] @ np.array(b["offset_location"]) == pytest.approx(position, abs=TRANSFORM)
        assert matrix[:3, :3] @ offset == pytest.approx(rotation, abs=TRANSFORM)
    assert np.array(shown["bone_heads"]) == pytest.approx(np.array(want["rope"])[:-1], abs=TRANSFORM)
    # points: the Recording's in float32, in the axes their display plays them, exactly as the bake writes them
    assert chunks["made_display"] == [True]  # no earlier bake: a particles object made for the preview
    assert shown["grains"] == want["grains"] and shown["sheet"] == want["sheet"]
    assert shown["sheet_drawn"] == want["sheet"]
    corners, points = np.array(shown["sheet_bounds"]), np.array(want["sheet"])  # Blender knows they moved
    assert (corners.min(axis=0) == points.min(axis=0)).all() and (corners.max(axis=0) == points.max(axis=0)).all()
    assert np.array(shown["grains_drawn"]) == pytest.approx(np.array(want["grains"]), abs=FLOAT32)
    # the sheet's object axes: the soft body's world matrix at the first frame takes them to the Recording's
    matrix = np.array(chunks["sheet_matrix"])
    world = np.array(shown["sheet"]) @ matrix[:3, :3].T + matrix[:3, 3]
    assert world == pytest.approx(np.array(want["sheet_world"]), abs=TRANSFORM)


def test_cancelling_the_preview_puts_back_vertices_modifiers_and_what_it_made(chunks):
    assert chunks["cancel_after"] == chunks["cancel_before"]  # no particles object, node group or vertex left
    assert chunks["cancel2_after"] == chunks["cancel2_before"]  # the bake's caches and meshes as they were


def test_after_a_bake_the_preview_uses_its_particles_object_and_holds_its_caches_off(chunks):
    assert chunks["bake"] == ["FINISHED"]
    assert chunks["reused_display"] == [[False, chunks["output"]]]
    assert chunks["cache_held"] is False
    assert chunks["stride"] == 4  # the particle budget keeps every 4th frame; the newest comes apart
    newest, scrubbed, want = chunks["newest"], chunks["scrubbed"], chunks["expected2"]
    assert newest["grains"] == want["6"]["grains"] and newest["sheet"] == want["6"]["sheet"]
    assert np.array(newest["sheet_bounds"]).max(axis=0) == pytest.approx(np.array(want["6"]["sheet"]).max(axis=0))
    assert chunks["scrubbed_shown"] == 5  # bodies on the scrubbed frame, particles on the kept one before it
    assert scrubbed["grains"] == want["4"]["grains"] and scrubbed["sheet"] == want["4"]["sheet"]
