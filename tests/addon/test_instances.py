"""Instanced output (Bake To: Instances) in a real Blender: every body's instance, read through the evaluated
depsgraph, against the Recording at several frames; the objects, datablocks and files it adds and Clear Bake
removes; undo; failures that leave the file as it was; Export USD read back with pxr.

Tolerances come from the storage: the cache holds float32 positions (rounding 2^-24 of a coordinate), and a
body's rotation is rebuilt from two of them (an axis tip minus the origin) over the marker length L, which the
bake makes a power of two no shorter than the largest coordinate c (addon/instances.py: marker_length), so each
axis is known to 2^-24 (2 c + L) / L <= 3 x 2^-24; Blender composes the instance matrix in float32 (a few more
roundings). USD orientations are half floats (quath), rounding 2^-11 of each quaternion component.
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.helpers import ROOT, quat_mul, quat_to_matrix

F32 = 2.0 ** -24
HALF = 2.0 ** -11


def expected_matrices(rec, binding, frame):
    """The object's world matrix at a recording frame, from its body's pose: what a keyframe bake would give."""
    pose = np.asarray(rec)[frame, binding["index"]]
    off_q = np.array(binding["offset_rotation"]) / np.linalg.norm(binding["offset_rotation"])
    q = quat_mul(pose[3:], off_q * [1.0, -1.0, -1.0, -1.0])
    rot = quat_to_matrix(q)
    m = np.eye(4)
    m[:3, :3] = rot * np.array(binding["scale"])[None, :]
    m[:3, 3] = pose[:3] - rot @ np.array(binding["offset_location"])
    return m


def assert_instances_match(res, frames_got, rotation_unit):
    """Every body's instance at every sampled frame is its object's pose from the Recording."""
    rec = np.array(res["recording"])
    coordinate = max(1.0, np.abs(rec[..., :3]).max() + max(np.linalg.norm(b["offset_location"])
                                                          for b in res["bindings"].values()))
    scale = max(max(b["scale"]) for b in res["bindings"].values())
    translation_tol = 8 * F32 * coordinate
    rotation_tol = 8 * rotation_unit * scale
    assert frames_got, "no frames sampled"
    for frame, placed in frames_got.items():
        k = int(float(frame)) - res["frame_start"]
        assert set(placed) == set(res["bindings"]), frame
        for name, binding in res["bindings"].items():
            want = expected_matrices(rec, binding, k)
            got = np.array(placed[name])
            np.testing.assert_allclose(got[:3, 3], want[:3, 3], rtol=0, atol=translation_tol, err_msg=(frame, name))
            np.testing.assert_allclose(got[:3, :3], want[:3, :3], rtol=0, atol=rotation_tol, err_msg=(frame, name))


@pytest.fixture(scope="module")
def baked(checkout_kernels, scenario, tmp_path_factory):
    folder, usd = tmp_path_factory.mktemp("instances"), tmp_path_factory.mktemp("usd") / "bake.usda"
    res = scenario("instances", folder / "scene.blend", usd)
    res["folder"], res["usd"] = folder, usd
    return res


def test_bake_adds_one_points_object_and_hides_its_sources(baked):
    assert baked["finish"] == ["FINISHED"], baked["status"]
    assert "as instances of 'Quadric Instances'" in baked["status"]
    assert baked["rebake_names"] == ["Quadric Instances"] * 3 + ["Quadric Instance Sources"] * 2
    assert baked["new"]["objects"] == [baked["points"]]  # at most 3 new objects: here one, for any count
    assert baked["new"]["node_groups"] == ["Quadric Instances"]
    assert baked["new"]["collections"] == ["Quadric Instance Sources", "Quadric Instance Sources 1"]
    assert baked["new"]["actions"] == []  # the bodies carry no keyframes
    assert np.allclose(baked["points_matrix"], np.eye(4))
    for name, (viewport, render) in baked["visibility_baked"].items():
        assert viewport and render, name  # sources and their shape displays: only the instances show
    assert not set(baked["bindings"]) & set(baked["evaluated_objects"])  # no copy of a source is drawn


def test_cache_is_a_pc2_file_beside_the_blend_that_mesh_cache_plays_unchanged(baked):
    rec = np.array(baked["recording"])
    frames, bodies = rec.shape[0], len(baked["bindings"])
    assert baked["cache_settings"]["filepath"].startswith("//quadric_cache/")  # relative: moves with the .blend
    assert baked["cache_settings"]["forward"] == "POS_Y" and baked["cache_settings"]["up"] == "POS_Z"
    assert baked["cache_settings"]["flip"] == []
    assert baked["pc2"] == dict(shape=[frames, 3 * bodies, 3], start=float(baked["frame_start"]), rate=1.0)
    new = set(baked["files_baked"]) - set(baked["files_before"])
    assert len(new) == 1 and next(iter(new)).startswith(
        os.path.join("quadric_cache", "scene", "Scene", "instances_"))  # the .blend's name, then the scene's


def test_instances_follow_the_recording_at_several_frames(baked):
    assert len(baked["instances"]) == 4
    assert_instances_match(baked, baked["instances"], 3 * F32)
    rec = np.array(baked["recording"])
    assert np.abs(rec[-1, :, :3] - rec[0, :, :3]).max() > 0.1  # the bodies really moved


def test_clear_bake_removes_every_datablock_and_file_and_shows_the_bodies(baked):
    assert baked["clear"] == ["FINISHED"]
    assert "deleted the instanced bake 'Quadric Instances'" in "\n".join(baked["clear_reports"])
    assert baked["last_object_at_clear"] == "Zz Marker"  # the report names the bake, not the scene's last object
    assert baked["after_clear"] == baked["before"]
    assert baked["files_after_clear"] == baked["files_before"]  # the cache file and its folders are gone
    assert baked["visibility_after_clear"] == baked["visibility_before"]
    assert baked["pointers_after_clear"] == [True, True, True]
    hidden = {name for name, fields in baked["fields_baked"].items() if "orig_hide_viewport" in fields}
    assert len(hidden) == 4  # both bodies and their shape displays kept their visibility
    assert baked["fields_after_clear"] == {}  # and every field of the bake is unset again
    assert "dropped the kept run of frames" in "\n".join(baked["clear_reports"])  # the job's, kept for resuming


def test_simulate_is_one_undo_step(baked):
    assert baked["simulate"] == ["FINISHED"]
    assert "Quadric Instances" in baked["after_simulate"]
    assert baked["after_undo"] == baked["before"]
    assert baked["visibility_after_undo"] == baked["visibility_before"]
    assert baked["after_redo_points"] == "Quadric Instances"
    assert baked["visibility_after_redo"] == baked["visibility_baked"]
    assert_instances_match(baked, baked["after_redo"], 3 * F32)


def test_failed_bake_leaves_the_file_and_the_earlier_bake_as_they_were(baked):
    assert baked["failed_finish"] == ["CANCELLED"]
    assert baked["failed_kept"]
    status = baked["failed_status"]  # the new points object, beside the kept one, is 'Quadric Instances.001'
    assert status.startswith("Error: instanced bake 'Quadric Instances") and "did not instance 'Brick'" in status


def test_unwritable_cache_folder_changes_nothing_and_says_which_file(baked):
    assert baked["blocked_finish"] == ["CANCELLED"]
    assert baked["blocked_untouched"]
    status = baked["blocked_status"]
    assert status.startswith("Error: instanced bake 'Quadric Instances': cannot write its point cache"), status
    assert "'Quadric Point Cache' modifier's file" in status and "quadric_cache" in status
    assert sorted(baked["blocked_files"]) == sorted(baked["files_before"] + ["quadric_cache"])


def test_poses_that_are_not_finite_are_refused_by_name(baked):
    frame = baked["frame_start"] + 3
    assert baked["nan_error"].startswith("'Brick': its simulated pose"), baked["nan_error"]
    assert f"not finite at frame {frame}" in baked["nan_error"]
    assert baked["nan_files"] == baked["files_before"]


def test_panel_offers_bake_to_and_export_usd(baked):
    drawn = {tuple(x[:2]) for x in baked["panel"]}
    assert ("prop", "bake_output") in drawn and ("operator", "quadric.export_usd") in drawn


def test_instances_render_where_their_hidden_source_does_not(scenario):
    res = scenario("instances_render")
    assert res["hidden"] == [True, True]
    (lit, background), (frame1, _), (frame2, background2) = res["before"], res["frame1"], res["frame2"]
    assert lit > background + 0.5  # the glowing cube fills the centre pixel, not the corner
    assert frame1 == pytest.approx(lit, rel=0.05)  # its instance, where the cube was, source hidden
    # the instance left the view, and the hidden source does not render: the centre is background
    assert abs(frame2 - background2) < 0.05 * (lit - background)


@pytest.fixture(scope="module")
def usd(baked, tmp_path_factory):
    """The exported file read with the pxr that ships inside the bpy wheel, in its own process."""
    out = tmp_path_factory.mktemp("usd") / "usd.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([baked["bpy_site_packages"], str(ROOT)]))
    proc = subprocess.run([sys.executable, "-m", "tests.addon.usd_instancer", str(baked["usd"]), str(out)],
                          env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text())


def test_export_usd_says_when_this_blender_writes_no_point_instancer(baked):
    """Blender 4.5 and later write the instanced bake as one point instancer; older ones write a prim per instance
    (run under scripts/test_blender_versions), and the export says so."""
    assert baked["usd_export"] == ["FINISHED"], baked["usd_reports"]
    warned = [line for line in baked["usd_reports"] if "not one point instancer" in line]
    assert len(warned) == (0 if baked["usd_point_instancer"] else 1), baked["usd_reports"]


@pytest.fixture(scope="module")
def point_instancer(baked):
    if not baked["usd_point_instancer"]:
        pytest.xfail("this Blender writes no point instancer (the test above checks that the export says so)")


def test_export_usd_writes_a_point_instancer_sampled_every_frame(baked, point_instancer, usd):
    assert baked["usd_export"] == ["FINISHED"], baked["usd_reports"]
    assert len(usd) == 1, list(usd)
    instancer = next(iter(usd.values()))
    frames = len(baked["recording"])
    expected_times = [float(baked["frame_start"] + k) for k in range(frames)]
    assert instancer["position_times"] == expected_times
    assert instancer["orientation_times"] == expected_times
    assert instancer["orientation_type"] == "quath[]"  # Blender writes half floats: the rotation tolerance below


def test_exported_instances_follow_the_recording(baked, point_instancer, usd):
    instancer = next(iter(usd.values()))
    sampled = {t: placed for t, placed in instancer["frames"].items()}
    # a half-float quaternion component rounds by up to 2^-11; a rotation matrix entry, quadratic in them, by a
    # few times that
    assert_instances_match(baked, sampled, 2 * HALF)


@pytest.mark.parametrize("count", [2000])
def test_thousands_of_pebbles_add_one_object_and_every_instance_is_placed(scenario, checkout_kernels, count):
    res = scenario("instances_many", count)
    assert res["finish"] == ["FINISHED"], res["status"]
    assert len(res["new_objects"]) <= 3 and res["new_objects"] == ["Quadric Instances"]
    assert len(res["bindings"]) == count
    assert all(len(placed) == count for placed in res["instances"].values())
    assert_instances_match(res, res["instances"], 3 * F32)
    print(f"instanced bake of {count} bodies x {len(res['recording'])} frames: {res['bake_seconds']:.3f} s")


# ------------------------------------------------------------- the bake after a run, a tick's budget at a time
@pytest.fixture(scope="module")
def chunks(checkout_kernels, scenario, tmp_path_factory):
    return scenario("instances_chunks", tmp_path_factory.mktemp("instances_chunks") / "scene.blend")


def test_the_bake_goes_a_step_a_tick_and_ends_as_the_bake_at_once(chunks):
    results = chunks["ticked_results"]
    assert results[-1] == ["FINISHED"] and all(r == ["RUNNING_MODAL"] for r in results[:-1])
    assert len(results) >= chunks["frames"]  # a budget of zero: a frame of the cache a tick
    assert "as instances of 'Quadric Instances'" in chunks["ticked_status"]
    assert chunks["cleared"] and chunks["one_shot_finish"] == ["FINISHED"]
    assert chunks["ticked"] == chunks["one_shot"]  # bit for bit: samples, points mesh, instances


def test_esc_or_cancel_in_the_middle_of_the_bake_leaves_the_file_as_it_was(chunks):
    assert all(r == ["RUNNING_MODAL"] for r in chunks["mid_results"])
    what, done, total = chunks["mid_progress"]
    assert what == "writing the instances' point cache" and 0 < done < total == chunks["frames"]
    assert chunks["mid_previous_hidden"]  # the earlier bake's instances stepped aside meanwhile
    assert any(f.endswith(".pc2.part") for f in chunks["mid_files"])
    assert chunks["esc"] == ["CANCELLED"] and not chunks["esc_active_job"]
    assert chunks["esc_status"].startswith("bake cancelled after the run") and "nothing was baked" in \
        chunks["esc_status"]
    assert chunks["esc_after"] == chunks["esc_before"]  # datablocks, files, visibility, the earlier bake's instances
    assert chunks["button"] == ["FINISHED"] and chunks["button_tick"] == ["CANCELLED"] and chunks["button_kept"]


def test_esc_after_the_datablock_step_leaves_the_file_as_it_was(chunks):
    assert chunks["built_blocks"] == 1  # the new points object, beside the earlier bake's
    assert chunks["built_esc"] == ["CANCELLED"] and chunks["built_kept"]


def test_the_datablock_step_begins_a_tick_of_its_own(chunks):
    first, first_shown, first_untouched, second, second_shown, second_untouched, stopped, kept = chunks["alone"]
    assert first and first_shown[0] == "building the instances" and first_untouched  # the poses only
    assert second and second_shown[0] == "reading the instances' order" and not second_untouched
    assert stopped and kept  # closed there: what it built removed, the earlier bake as it was


def test_esc_once_the_bake_has_committed_lets_it_finish(chunks):
    assert chunks["late_esc"] == ["RUNNING_MODAL"] and chunks["late_end"][-1] == ["FINISHED"]
    assert chunks["late"] == chunks["one_shot"]
