"""Operators driven in a real Blender (bpy 5.0 module) with the installed extension.

The Blender half of each check is in blender_scenarios.py; it reports what it
saw and these tests judge it. Keyframes are float32 in Blender, so values up to
a few metres round at ~2e-7: the issue's 1e-6 bound holds for fcurve values;
the shape displays go through Blender's float32 matrix products, hence 1e-5.
"""
import ctypes
import subprocess
import sys

import numpy as np
import pytest

from examples.rebound import G, rebound_apex_error
from tests.helpers import ROOT, quat_mul, quat_to_matrix


# --------------------------------------------------------------------------- helpers
def same_rotation_error(q1, q2):
    """Largest component error between quaternion arrays, allowing q ~ -q."""
    return np.minimum(np.abs(q1 - q2).max(axis=-1), np.abs(q1 + q2).max(axis=-1)).max()


# ----------------------------------------------------------------------------- fitting
@pytest.fixture(scope="module")
def fit(scenario):
    return scenario("fit_and_errors")


def test_fitted_uv_sphere_scaled_123_within_one_percent(fit):
    assert fit["add_body"] == ["FINISHED"] and fit["fit_method"] == "INERTIA"
    assert fit["fitted_shape"] == "ELLIPSOID"  # Auto's choice for a scaled UV sphere
    np.testing.assert_allclose(np.sort(fit["semi_axes"]), [1.0, 2.0, 3.0], rtol=0.01)
    # The principal axes are the object's own axes (scaled sphere), up to order and sign.
    axes = np.abs(np.array(fit["axes_in_object_frame"]))
    np.testing.assert_allclose(np.sort(axes, axis=1)[:, -1], 1.0, atol=1e-5)


def test_editing_the_panels_semi_axes_edits_the_body_and_its_display(fit):
    np.testing.assert_allclose(fit["semi_axes_after_edit"], 1.5 * np.array(fit["semi_axes"]), rtol=1e-6)
    np.testing.assert_allclose(fit["display_extent_after_edit"], 1.5 * np.array(fit["semi_axes"]), rtol=1e-6)


def test_shape_is_shown_as_a_wire_mesh_that_follows_the_body(fit):
    assert fit["display"] == dict(type="MESH", display_type="WIRE", selectable=False, follows="Egg", render=False)
    np.testing.assert_allclose(fit["display_center"], fit["object_location"], atol=1e-5)


@pytest.mark.parametrize("key,words", [
    ("err_non_mesh_body", ["NotAMesh", "not a mesh"]),
    ("err_non_mesh_collider", ["NotAMesh", "not a mesh"]),
    ("err_non_curve_rope", ["NotAMesh", "not a curve"]),
    ("err_open_flat_body", ["FlatPlane", "zero volume"]),
    ("err_zero_volume_body", ["SquashedCube", "zero volume"]),
    ("err_short_curve", ["OnePointCurve", "at least 2 points"]),
    ("err_empty_selection", ["select"]),
    ("err_overlap", ["Intruder", "overlaps"]),
])
def test_bad_input_reports_a_clear_error_naming_the_object(fit, key, words):
    message = fit[key]
    assert message.startswith("Error"), message
    for w in words:
        assert w in message, message


def test_panels_draw_existing_properties_and_operators(fit):
    drawn = {tuple(x) for x in fit["panels"]}
    # What a user needs on screen, for bodies, colliders and objects not yet in the simulation.
    for item in [("operator", "quadric.add_body"), ("operator", "quadric.add_collider"),
                 ("operator", "quadric.make_rope"), ("operator", "quadric.simulate"),
                 ("operator", "quadric.clear_bake"), ("prop", "body_type"), ("prop", "density"),
                 ("prop", "friction"), ("prop", "rolling_friction"), ("prop", "spinning_friction"),
                 ("prop", "restitution"), ("prop", "collider_kind"), ("prop", "substeps")]:
        assert item in drawn, item


def test_failed_simulation_changes_nothing(fit):
    assert fit["fcurves_after_failed"] == 0
    assert "Intruder" in fit["status_after_overlap"]


# -------------------------------------------------------------------------------- bake
@pytest.fixture(scope="module")
def baked(checkout_kernels, scenario, tmp_path_factory):
    blend = tmp_path_factory.mktemp("bake") / "scene.blend"
    res = scenario("bake", blend)
    res["blend"] = blend
    return res


def test_simulate_operator_bakes(baked):
    assert baked["simulate"] == ["FINISHED"], baked["status"]
    assert baked["job_state"] == "DONE" and baked["finish"] == ["FINISHED"]
    assert set(baked["rotation_modes_baked"].values()) == {"QUATERNION"}


def test_worker_runs_the_solver_on_openmp_where_its_runtime_loads(baked):
    # workqueue, the fallback, starts each of a substep's parallel loops about 0.1 ms slower (a 1,000-body
    # pile ran three times slower on it); TBB is never taken, Blender ships its own
    if sys.platform == "linux":
        try:
            ctypes.CDLL("libgomp.so.1")
            expected = "omp"
        except OSError:
            expected = "workqueue"
        assert baked["threading_layer"] == expected
    else:
        assert baked["threading_layer"] in ("omp", "workqueue")


def test_body_fcurves_match_recording_at_every_frame(baked):
    rec = np.array(baked["recording"])
    frames = rec.shape[0]
    assert frames == 40
    moved = 0.0
    for name, t in baked["tracks"].items():
        loc, rot = np.array(t["location"]), np.array(t["rotation"])
        assert loc.shape == (frames, 3)
        # Body pose implied by the object's fcurves and its origin -> principal-frame offset.
        body_q = quat_mul(rot, np.array(t["offset_rotation"]))
        body_p = loc + quat_to_matrix(rot) @ np.array(t["offset_location"])
        pose = rec[:, t["index"]]
        assert np.abs(body_p - pose[:, :3]).max() <= 1e-6, name
        assert same_rotation_error(body_q, pose[:, 3:]) <= 1e-6, name
        moved = max(moved, np.abs(pose[-1, :3] - pose[0, :3]).max())
    assert moved > 0.1  # the scene really moved (the ball falls)


def test_animated_body_follows_its_keyframes(baked):
    # Tracks are sampled at every frame, so at frame times the solver's pose is the animated one.
    assert not baked["pusher_baked"]
    recorded = np.array(baked["pusher_recorded"])[:, :3]
    animated = np.array(baked["pusher_animated"])
    np.testing.assert_allclose(recorded, animated, atol=1e-5)
    assert animated[-1, 0] - animated[0, 0] > 2.0  # it really moved


def test_shape_displays_move_exactly_with_bodies(baked):
    rec = np.array(baked["recording"])
    for name, t in baked["tracks"].items():
        m = np.array(t["empty_matrix"])
        pose = rec[:, t["index"]]
        np.testing.assert_allclose(m[:, :3, 3], pose[:, :3], atol=1e-5, err_msg=name)
        rot = m[:, :3, :3] / np.linalg.norm(m[:, :3, :3], axis=1, keepdims=True)
        np.testing.assert_allclose(rot, quat_to_matrix(pose[:, 3:]), atol=1e-5, err_msg=name)


def test_operator_and_job_bakes_agree(baked):
    assert baked["operator_keys"].keys() == baked["job_keys"].keys()
    for key, (frames, values) in baked["operator_keys"].items():
        np.testing.assert_allclose(baked["job_keys"][key][1], values, atol=1e-6, err_msg=key)
        assert frames == list(range(1, 41))


def assert_whole_runs_first_five_frames(baked, partial):
    """The partial bake ``baked[partial]`` keys each channel of the whole run (``job_keys``) at its first five
    frames, with the same values."""
    start = baked["frame_start"]
    assert baked[partial].keys() == baked["job_keys"].keys()
    for key, (frames, values) in baked[partial].items():
        assert frames == list(range(start, start + 5)), key
        np.testing.assert_allclose(values, baked["job_keys"][key][1][:5], atol=1e-6, err_msg=key)


def test_cancelled_run_keeps_its_finished_frames_as_a_partial_bake(baked):
    assert baked["cancel_state"] == "CANCELLED"
    assert baked["cancel_finish"] == ["FINISHED"]  # the partial bake changed the file: one undo step
    start = baked["frame_start"]
    assert baked["cancel_partial_end"] == start + 4  # cancelled once 5 frames (the start pose and 4 steps) were done
    assert baked["cancel_status"] == (f"{baked['cancel_message']}; kept frames {start}-{start + 4} as a "
                                      "partial bake")
    # the same scene from the same start: the partial bake is the whole run's first five frames
    assert_whole_runs_first_five_frames(baked, "cancel_keys")
    assert baked["partial_end_after_clear"] == 0


def test_diverging_run_reports_frame_and_body(baked):
    assert baked["diverge_state"] == "FAILED"
    assert baked["diverge_finish"] == ["CANCELLED"]
    # The Brick's velocity is infinite, so the state is non-finite after the first step (Blender frame 2).
    solver_says = baked["solver_diverged"]
    assert solver_says is not None and solver_says["frame"] == 1
    # The add-on reports the solver's frame as a Blender frame, and the body by its object name.
    assert f"frame {baked['frame_start'] + solver_says['frame']}" in baked["diverge_message"]
    assert f"body '{solver_says['body_name']}'" in baked["diverge_message"]
    assert solver_says["body_name"] in ("Brick", "Ball")  # the Brick, or the Ball it hit in that step
    assert baked["diverge_status"] == baked["diverge_message"] + "; nothing was baked"  # only the start pose done
    assert baked["diverge_partial_end"] == baked["cancel_partial_end"]  # the partial bake before it is untouched
    assert baked["diverge_keys_unchanged"]


def test_a_run_diverging_after_some_frames_keeps_them_as_a_partial_bake(baked):
    start = baked["frame_start"]
    assert baked["late_diverge_state"] == "FAILED"
    # the Brick's velocity made infinite once frame start + 4 was done: the next frame is where it diverged
    assert baked["late_diverge_message"].startswith(f"simulation diverged at frame {start + 5} (body '")
    assert baked["late_diverge_finish"] == ["FINISHED"]  # the partial bake changed the file: one undo step
    assert baked["late_diverge_partial_end"] == start + 4
    assert baked["late_diverge_status"] == (f"{baked['late_diverge_message']}; kept frames {start}-{start + 4} as a "
                                            "partial bake")
    # the same scene from the same start until it was poisoned: the whole run's first five frames
    assert_whole_runs_first_five_frames(baked, "late_diverge_keys")


def test_clear_bake_restores_originals(baked):
    assert baked["clear"] == ["FINISHED"]
    for name, orig in baked["originals"].items():
        now = baked["after_clear"][name]
        assert now["rotation_mode"] == orig["rotation_mode"]
        np.testing.assert_allclose(now["location"], orig["location"], atol=1e-6)
        np.testing.assert_allclose(now["rotation_euler"], orig["rotation_euler"], atol=1e-6)
        np.testing.assert_allclose(now["rotation_axis_angle"], orig["rotation_axis_angle"], atol=1e-6)
        assert now["fcurves"] == 0 and not now["is_baked"]
    assert baked["bake_actions_left"] == []


def test_clear_bake_leaves_no_bake_field_and_drops_the_kept_run(baked):
    assert baked["fields_before"] == {}
    assert set(baked["fields_baked"]) == {"Ball", "Brick"}  # the keyframe bake's originals and fingerprints
    assert baked["fields_after_clear"] == {}  # unset, as before the bake
    first, frames, snapshots = baked["kept_before_clear"]
    assert snapshots >= 1  # a run was kept to continue from
    said = "\n".join(baked["clear_reports"])
    assert f"dropped the kept run of frames {first}-{first + frames - 1} ({snapshots} resume point" in said
    assert not baked["kept_after_clear"] and baked["kept_snapshots_after_clear"] == 0


def test_bake_script_matches_operator(baked, installed, scenario, tmp_path):
    env, _ = installed
    out = tmp_path / "baked.blend"
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "bake.py"), str(baked["blend"]), "--",
                           "--frames", "1", "40", "--substeps", "8", "--save", str(out)],
                          env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "[bake] saved" in proc.stdout and "frame 40/40" in proc.stdout
    keys = scenario("read_keys", out, *baked["originals"].keys())["keys"]
    assert keys.keys() == baked["operator_keys"].keys()
    for key, (frames, values) in baked["operator_keys"].items():
        assert keys[key][0] == frames
        np.testing.assert_allclose(keys[key][1], values, atol=1e-6, err_msg=key)


def test_the_demo_scene_builds(installed, tmp_path):
    """scripts/demo's first step: the .blend built from code holds the 300 pebbles, the sled and both ropes."""
    env, _ = installed
    out = tmp_path / "pebbles.blend"
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "make_demo_blend.py"), "--output", str(out),
                           "--frames", "10"], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"[demo] saved {out}: 301 bodies, 2 ropes, frames 1-10" in proc.stdout
    assert out.stat().st_size > 0


def test_bake_script_fails_with_nonzero_exit(baked, installed, tmp_path):
    env, _ = installed
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "bake.py"), str(baked["blend"]), "--",
                           "--frames", "5", "5"], env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode != 0
    assert "frame range" in proc.stderr


def test_export_scene_run_elsewhere_and_import_recording(baked, scenario, checkout_kernels, tmp_path):
    scene_json = tmp_path / "scene.json"
    assert scenario("export", baked["blend"], scene_json)["result"] == ["FINISHED"]
    rec = tmp_path / "rec.npz"
    checkout_kernels.wait_for("ellipsoids")  # so the run loads them from numba's cache rather than compiling them again
    proc = subprocess.run([sys.executable, "-m", "quadric_solver", "run", str(scene_json), "-o", str(rec),
                           "--frames", "40", "--fps", "24", "--substeps", "8", "--quiet"], cwd=ROOT,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    imported = scenario("import", baked["blend"], rec, *baked["originals"].keys())
    assert imported["result"] == ["FINISHED"]
    assert imported["keys"].keys() == baked["operator_keys"].keys()
    for key, (frames, values) in baked["operator_keys"].items():
        assert imported["keys"][key][0] == frames
        np.testing.assert_allclose(imported["keys"][key][1], values, atol=1e-6, err_msg=key)


def test_import_recording_refuses_a_recording_of_other_bodies_or_another_scene(scenario):
    res = scenario("import_checks")
    assert res["export"] == ["FINISHED"]
    assert "cut.npz: not a readable recording (.npz archive; truncated or damaged?)" in res["cut"]
    assert res["other_bodies"].startswith("Error: other.npz does not match this scene: "), res["other_bodies"]
    assert ("bodies of the scene missing from the recording: 'Brick'; "
            "bodies in the recording that the scene does not have: 'Brick.001'") in res["other_bodies"]
    assert res["changed"].startswith("Error: same.npz was simulated from another version of this scene"), res["changed"]
    assert res["baked_after_refusals"] == [False, False]  # a refused import bakes nothing
    assert res["changed_ignored"] == ["FINISHED"]
    # the export and the import convert the same Blender scene: the same content hash
    assert res["matching"] == ["FINISHED"] and res["baked"] == [True, True]


def test_clicked_import_and_export_go_a_step_a_tick_and_esc_before_they_commit_changes_nothing(scenario):
    res = scenario("import_checks")
    # Export Scene, clicked: Esc while it reads the scene writes nothing; a step a tick, the file a script writes
    assert res["export_esc"]["result"] == ["CANCELLED"] and not res["export_esc"]["written"]
    assert res["export_esc"]["reports"] == [[["WARNING"], "Export Quadric Scene cancelled: nothing was changed"]]
    ticked = res["export_ticked"]
    assert ticked["results"][-1] == ["FINISHED"] and all(r == ["RUNNING_MODAL"] for r in ticked["results"][:-1])
    assert len(ticked["results"]) >= 3 and ticked["same_file"]
    assert [kind for kind, _ in ticked["reports"]] == [["INFO"]] and "simulate it with" in ticked["reports"][0][1]
    esc = res["esc"]
    assert esc["result"] == ["CANCELLED"]
    assert esc["reports"] == [[["WARNING"], "Bake Quadric Recording cancelled: nothing was changed"]]
    assert esc["baked"] == [False, False] and esc["same_objects"]
    ticked = res["ticked"]
    results = ticked["results"]
    assert results[-1] == ["FINISHED"] and all(r == ["RUNNING_MODAL"] for r in results[:-1])
    assert len(results) >= 5  # reading the scene, the file, and the bake's own steps, each a tick
    assert ticked["baked"] == [True, True]
    assert ticked["keys"] > 0 and ticked["same_keys"]  # the keys a script's import bakes
    assert any(kind == ["INFO"] and "from same.npz" in msg for kind, msg in ticked["reports"]), ticked["reports"]
    refused = res["ticked_refused"]
    assert refused["results"][-1] == ["CANCELLED"]
    assert [kind for kind, _ in refused["reports"]] == [["ERROR"]]
    assert refused["reports"][0][1].startswith("same.npz was simulated from another version of this scene")


# ----------------------------------------------------------------- properties and colliders reach the solver
@pytest.fixture(scope="module")
def materials(scenario):
    return scenario("materials")


def test_material_and_mass_set_in_blender_reach_the_solver(materials):
    # Blender stores these properties in single precision: 6e-8 relative
    settings = materials["settings"]
    assert materials["planes"] == ["Floor"]
    for name in settings:
        model = materials["floor"] if name == "Floor" else materials[name]["material"]
        for key in ("friction", "rolling_friction", "spinning_friction", "restitution"):
            assert model[key] == pytest.approx(settings[name][key], rel=1e-7), (name, key)
    # a mass is taken as it is; a density weighs the mesh's own volume (the shape is unchanged), up to the
    # single-precision semi-axes its volume is measured from again (1e-6)
    bouncy, dull = materials["Bouncy"], materials["Dull"]
    assert bouncy["mass"] == pytest.approx(settings["Bouncy"]["mass"], rel=1e-7)
    assert dull["mass"] == pytest.approx(settings["Dull"]["density"] * dull["fitted_volume"], rel=1e-6)
    # and the moments of inertia are the ellipsoid's for that mass, m (b^2 + c^2) / 5 and so on (double round-off)
    for body in (bouncy, dull):
        a2, b2, c2 = np.square(body["semi_axes"])
        np.testing.assert_allclose(body["inertia"], body["mass"] / 5 * np.array([b2 + c2, a2 + c2, a2 + b2]),
                                   rtol=1e-12)


def test_restitution_set_in_blender_sets_how_high_each_ball_rebounds(materials):
    # The floor's restitution is 0, so each ball rebounds with its own (they combine by maximum) to e^2 times its
    # drop, within the solver's first-order error at this substep (examples/rebound.py) and
    # the apex falling between two recorded frames, at most g / (8 fps^2) lower.
    assert materials["job_state"] == "DONE", materials["job_message"]
    fps, h = materials["fps"], materials["dt"]
    for name in ("Bouncy", "Dull"):
        body = materials[name]
        restitution = materials["settings"][name]["restitution"]
        # an icosphere's fitted ellipsoid is a sphere (icosahedral symmetry makes its inertia isotropic), so its
        # bottom is a semi-axis below its centre; 1e-5 of 0.1 m is far below what the bound below allows
        radius = body["semi_axes"][0]
        np.testing.assert_allclose(body["semi_axes"], radius, rtol=1e-5)
        drop = body["position"][2] - radius
        heights = np.array(materials["heights"][name]) - radius
        apex = heights[int(np.argmin(heights[: int(0.6 * fps)])):].max()
        expected = restitution ** 2 * drop
        error = rebound_apex_error(restitution, np.sqrt(2 * G * drop), h) + G / (8 * fps ** 2) / expected
        assert apex == pytest.approx(expected, rel=error), name


def test_add_collider_makes_tube_and_box_containers_from_the_mesh(scenario):
    res = scenario("colliders")
    for name, kind in (("Pipe", "TUBE"), ("Crate", "BOX")):
        assert res[name]["result"] == ["FINISHED"], name
        assert (res[name]["role"], res[name]["kind"], res[name]["auto"]) == ("COLLIDER", kind, kind), name
    assert res["planes"] == []
    # Blender's mesh coordinates and matrices are single precision: 1e-6 at these sizes
    (tube,), (box,) = res["tubes"], res["boxes"]
    # a 32-sided cylinder of radius 0.4 and depth 1.2 scaled (1.25, 1.25, 1.5), turned 0.3 rad about x
    assert tube["name"] == "Pipe"
    np.testing.assert_allclose(tube["center"], (1.0, 2.0, 0.6), atol=1e-6)
    np.testing.assert_allclose(tube["axis"], (0.0, -np.sin(0.3), np.cos(0.3)), atol=1e-6)
    assert tube["radius"] == pytest.approx(0.5, abs=1e-6)
    assert tube["length"] == pytest.approx(1.8, abs=1e-6)
    # a unit cube scaled (1.5, 0.8, 0.5), turned 0.4 rad about z
    assert box["name"] == "Crate"
    np.testing.assert_allclose(box["center"], (-2.0, 0.0, 0.5), atol=1e-6)
    np.testing.assert_allclose(box["half_extents"], (0.75, 0.4, 0.25), atol=1e-6)
    assert same_rotation_error(np.array(box["rotation"]), np.array([np.cos(0.2), 0.0, 0.0, np.sin(0.2)])) <= 1e-6
