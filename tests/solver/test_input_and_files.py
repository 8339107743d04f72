"""Validation of Scene input, divergence handling, scene and recording files, the CLI."""
import io
import json
import math
import re
import subprocess
import sys

import numpy as np
import pytest

import quadric_solver as solver
from examples.pile import build_pile
from tests.helpers import ROOT, line


@pytest.mark.parametrize("kwargs, field", [
    (dict(semi_axes=(0.1, float("nan"), 0.1)), "semi_axes"),
    (dict(semi_axes=(0.1, 0.0, 0.1)), "semi_axes"),
    (dict(semi_axes=(0.1, -0.2, 0.1)), "semi_axes"),
    (dict(semi_axes=(0.1, 0.1)), "semi_axes"),
    (dict(semi_axes=(0.1, 0.1, 0.1), density=0.0), "density"),
    (dict(semi_axes=(0.1, 0.1, 0.1), density=-5.0), "density"),
    (dict(semi_axes=(0.1, 0.1, 0.1), mass=0.0), "mass"),
    (dict(semi_axes=(0.1, 0.1, 0.1), position=(0, float("inf"), 0)), "position"),
    (dict(semi_axes=(0.1, 0.1, 0.1), orientation=(1, 0.2, 0, 0)), "orientation"),
    (dict(semi_axes=(0.1, 0.1, 0.1), velocity=(0, 0, float("nan"))), "velocity"),
    (dict(semi_axes=(0.1, 0.1, 0.1), angular_velocity=(0, "x", 0)), "angular_velocity"),
])
def test_bad_body_input_names_object_and_field(kwargs, field):
    scene = solver.Scene()
    with pytest.raises(ValueError) as error:
        scene.add_ellipsoid(name="Pebble.007", **kwargs)
    assert field in str(error.value)
    assert "Pebble.007" in str(error.value)
    assert scene.bodies == []  # nothing half-added


def test_bad_collider_and_material_input():
    scene = solver.Scene()
    with pytest.raises(ValueError, match="normal"):
        scene.add_plane(normal=(0, 0, 0), name="Ground")
    with pytest.raises(ValueError, match="radius"):
        scene.add_tube((0, 0, 0), (0, 0, 1), radius=0.0, length=1.0)
    with pytest.raises(ValueError, match="axis"):
        scene.add_tube((0, 0, 0), (0, 0, 0), radius=1.0, length=1.0)
    with pytest.raises(ValueError, match="half_extents"):
        scene.add_box_container((0, 0, 0), (1, 0, 1))
    with pytest.raises(ValueError, match="friction"):
        solver.Material(friction=-0.1)
    with pytest.raises(ValueError, match="restitution"):
        solver.Material(restitution=1.5)
    with pytest.raises(ValueError, match="gravity"):
        solver.Scene(gravity=(0, 0, float("nan")))


def test_initial_overlap_is_reported_with_both_names():
    scene = solver.Scene()
    scene.add_ellipsoid((0.1, 0.1, 0.1), position=(0, 0, 0.5), name="Rock")
    scene.add_ellipsoid((0.1, 0.1, 0.1), position=(0.1, 0, 0.5), name="Bean")
    with pytest.raises(ValueError, match="Bean.*Rock|Rock.*Bean"):
        solver.Simulation(scene)
    ground = solver.Scene()
    ground.add_plane(name="Floor")
    ground.add_ellipsoid((0.1, 0.1, 0.1), position=(0, 0, 0.05), name="Sunk")
    with pytest.raises(ValueError, match="Sunk.*Floor"):
        solver.Simulation(ground)


def test_diverging_run_keeps_finished_frames_and_names_the_body():
    scene = solver.Scene(gravity=(0, 0, 0))
    scene.add_ellipsoid((0.1, 0.1, 0.1), position=(0, 0, 0), name="Calm")
    # x grows by 1e306 per frame from 1.5e308 and overflows (max float 1.797e308) at frame 30
    scene.add_ellipsoid((0.1, 0.1, 0.1), position=(1.5e308, 0, 0), velocity=(1e306, 0, 0), name="Runaway")
    sim = solver.Simulation(scene)
    expected_frame = math.ceil((np.finfo(float).max - 1.5e308) / 1e306)
    with pytest.raises(solver.SimulationDiverged) as error:
        sim.run(frames=100, fps=1.0, substeps=1)
    assert error.value.frame == expected_frame
    assert error.value.body == 1 and error.value.body_name == "Runaway"
    assert f"frame {expected_frame}" in str(error.value) and "Runaway" in str(error.value)
    kept = error.value.recording
    assert kept.frames == expected_frame
    assert np.all(np.isfinite(kept.body_poses))
    assert kept.body_poses[-1, 1, 0] == pytest.approx(1.5e308 + (expected_frame - 1) * 1e306, rel=1e-12)


def test_cancel_stops_and_keeps_frames():
    scene = solver.Scene()
    scene.add_plane()
    scene.add_ellipsoid((0.1, 0.1, 0.1), position=(0, 0, 1))
    sim = solver.Simulation(scene)
    seen = []
    with pytest.raises(solver.SimulationCancelled) as error:
        sim.run(frames=50, progress=lambda done, total: seen.append(done), should_stop=lambda: len(seen) >= 5)
    assert error.value.recording.frames == 5
    assert seen == [1, 2, 3, 4, 5]


def demo_scene():
    scene = solver.Scene(gravity=(0, 0, -9.81))
    rubber = solver.Material(friction=0.9, rolling_friction=0.001, restitution=0.5)
    scene.add_plane(point=(0, 0, 0), normal=(0, 0, 1), material=rubber, name="Ground")
    scene.add_box_container((0, 0, 0.3), (0.4, 0.4, 0.3), name="Crate")
    scene.add_tube((0, 0, 0.5), (0, 0, 1), radius=0.3, length=1.0, name="Pipe")
    scene.add_ellipsoid((0.05, 0.04, 0.03), position=(0, 0, 0.2), name="A", material=rubber)
    scene.add_ellipsoid((0.05, 0.04, 0.03), position=(0.1, 0, 0.3), velocity=(0, 0, -1), name="B", fixed=False)
    mover = scene.add_ellipsoid((0.05, 0.05, 0.05), position=(-0.2, 0, 0.1), name="Mover", kinematic=True)
    scene.set_kinematic_track(mover, [0.0, 1.0], [[-0.2, 0, 0.1, 1, 0, 0, 0], [0.2, 0, 0.1, 1, 0, 0, 0]])
    return scene


def test_scene_and_recording_round_trip(tmp_path):
    scene = demo_scene()
    path = tmp_path / "scene.json"
    scene.save(path)
    loaded = solver.Scene.load(path)
    assert loaded.to_dict() == scene.to_dict()
    first = solver.Simulation(scene).run(frames=20)
    second = solver.Simulation(loaded).run(frames=20)
    np.testing.assert_array_equal(first.body_poses, second.body_poses)  # deterministic
    rec_path = tmp_path / "rec.npz"
    first.save(rec_path)
    again = solver.Recording.load(rec_path)
    np.testing.assert_array_equal(again.body_poses, first.body_poses)
    assert again.body_names == ["A", "B", "Mover"] and again.fps == first.fps
    np.testing.assert_array_equal(again.stats["contacts"], first.stats["contacts"])


def test_kinematic_body_follows_its_track():
    scene = demo_scene()
    sim = solver.Simulation(scene)
    recording = sim.run(frames=25, fps=24, substeps=10)
    times = recording.times
    expected_x = np.interp(times, [0.0, 1.0], [-0.2, 0.2])
    np.testing.assert_allclose(recording.body_poses[:, 2, 0], expected_x, atol=1e-12)
    assert sim.state.linear_velocity[2, 0] == pytest.approx(0.4)


def test_cli_runs_a_saved_scene(tmp_path):
    scene_path = tmp_path / "scene.json"
    demo_scene().save(scene_path)
    out = tmp_path / "rec.npz"
    result = subprocess.run([sys.executable, "-m", "quadric_solver", "run", str(scene_path), "-o", str(out),
                             "--frames", "12", "--fps", "24", "--substeps", "5"],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert "12/12 frames" in result.stderr
    recording = solver.Recording.load(out)
    assert recording.body_poses.shape == (12, 3, 7)
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "something else"}')
    result = subprocess.run([sys.executable, "-m", "quadric_solver", "run", str(bad), "-o", str(out)],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 2 and "not a Quadric Dynamics scene" in result.stderr


def test_cli_threads_option_reaches_the_solver(tmp_path):
    """The slab count sets the Gauss-Seidel order: the CLI run must match the API run with the same count."""
    scene_path = tmp_path / "pile.json"
    build_pile(60).save(scene_path)
    out = tmp_path / "rec.npz"
    result = subprocess.run([sys.executable, "-m", "quadric_solver", "run", str(scene_path), "-o", str(out), "--quiet",
                             "--frames", "12", "--fps", "24", "--substeps", "5", "--threads", "3"],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    cli = solver.Recording.load(out).body_poses
    # The API runs go in a process of their own after the CLI's, so both use the kernels the numba cache
    # then holds. In this process, kernels compiled here and loaded from the cache may differ in their
    # last bits (contraction), and the solver rows' single-precision rounding can turn such a difference
    # into 1e-7 after a dozen frames of a pile (seen with a cold cache).
    api = tmp_path / "api.npz"
    script = (f"import numpy as np, quadric_solver as solver\n"
              f"scene = solver.Scene.load({str(scene_path)!r})\n"
              f"runs = [solver.Simulation(scene, threads=t).run(frames=12, fps=24, substeps=5).body_poses"
              f" for t in (3, 1)]\n"
              f"np.savez({str(api)!r}, same=runs[0], other=runs[1])\n")
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    same, other = np.load(api)["same"], np.load(api)["other"]
    # same slab count, same order of operations: the same run; a different slab count moves poses by
    # centimetres here
    np.testing.assert_allclose(cli, same, rtol=0, atol=1e-9)
    assert np.abs(cli - other).max() > 1e-3  # so the agreement above says something
    result = subprocess.run([sys.executable, "-m", "quadric_solver", "run", str(scene_path), "-o", str(out),
                             "--threads", "0"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 2 and "threads" in result.stderr


# ----------------------------------------------------------------------------- API arguments
@pytest.mark.parametrize("kwargs, message", [
    (dict(dt=0.0), "Simulation: dt must be positive and finite, got 0.0"),
    (dict(velocity_sweeps="8"), "Simulation: velocity_sweeps must be an integer, got '8'"),
    (dict(velocity_sweeps=0), "Simulation: velocity_sweeps must be an integer >= 1, got 0"),
    (dict(split_impulse_sweeps=-1), "Simulation: split_impulse_sweeps must be an integer >= 0, got -1"),
    (dict(margin=math.inf), "Simulation: margin must be finite, got inf"),
    (dict(baumgarte=None), "Simulation: baumgarte must be a number, got None"),
    (dict(baumgarte=1.5), "Simulation: baumgarte must be in [0, 1], got 1.5"),
    (dict(linear_damping=-0.1), "Simulation: linear_damping must be >= 0, got -0.1"),
    (dict(threads=2.5), "Simulation: threads must be an integer, got 2.5"),
    (dict(position_correction="yes"), "Simulation: position_correction must be true or false, got 'yes'"),
    (dict(overlap_tolerance=-1), "Simulation: overlap_tolerance must be >= 0, got -1"),
])
def test_bad_simulation_keywords_name_the_keyword(kwargs, message):
    with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
        solver.Simulation(demo_scene(), **kwargs)


def test_renamed_sweep_keywords_warn_and_still_apply():
    """The sweep settings' earlier names map to the new ones, with a DeprecationWarning naming both."""
    for old, new, value in (("iterations", "velocity_sweeps", 3), ("position_iterations", "split_impulse_sweeps", 2),
                            ("correction_iterations", "correction_sweeps", 5)):
        with pytest.warns(DeprecationWarning, match=f"^Simulation: {old} is now called {new}$"):
            sim = solver.Simulation(demo_scene(), **{old: value})
        assert getattr(sim.settings, new) == value
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="^Simulation: iterations must be an integer >= 1, got 0$"):
        solver.Simulation(demo_scene(), iterations=0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'sweeps'"):
        solver.Simulation(demo_scene(), sweeps=3)


def test_bad_scene_and_run_arguments_name_the_argument():
    with pytest.raises(ValueError, match="^Simulation: scene must be a quadric_solver.Scene, got dict$"):
        solver.Simulation(demo_scene().to_dict())
    sim = solver.Simulation(demo_scene())
    with pytest.raises(ValueError, match=r"^run: fps must be a number, got 'fast'$"):
        sim.run(frames=3, fps="fast")
    with pytest.raises(ValueError, match=r"^run: frames must be an integer >= 1, got 0$"):
        sim.run(frames=0)
    with pytest.raises(ValueError, match=r"^run: progress must be a function or None, got int$"):
        sim.run(frames=2, progress=3)
    scene = solver.Scene()
    with pytest.raises(ValueError, match=r"^ellipsoid \(body 0\): name must be a string or None, got 7$"):
        scene.add_ellipsoid((0.1, 0.1, 0.1), name=7)
    with pytest.raises(ValueError, match=r"^ellipsoid 'Big' \(body 0\): mass gives mass 1e\+300 kg"):
        scene.add_ellipsoid((1e10, 1e10, 1e10), mass=1e300, name="Big")
    with pytest.raises(ValueError, match=r"^set_kinematic_track: body 4 is out of range: expected a body index"):
        scene.set_kinematic_track(4, [0.0], [[0, 0, 0, 1, 0, 0, 0]])
    with pytest.raises(ValueError, match=r"^plane 'Floor': material must be a quadric_solver.Material, got str$"):
        scene.add_plane(material="rubber", name="Floor")
    assert scene.bodies == [] and scene.planes == []


# ------------------------------------------------------------------------------- scene files
def saved_scene(tmp_path, change=None):
    """demo_scene saved as JSON after ``change(document)``; returns the path."""
    document = json.loads(json.dumps(demo_scene().to_dict()))
    if change is not None:
        change(document)
    path = tmp_path / "scene.json"
    path.write_text(json.dumps(document))
    return path


def body(k, **values):
    return lambda document: document["bodies"][k].update(values)


def drop(section, k, *keys):
    def change(document):
        for key in keys:
            del document[section][k][key]
    return change


@pytest.mark.parametrize("change, message", [
    (body(1, material=999), "bodies[1].material 999 is out of range: expected a material index from 0 to 1"),
    (lambda document: document.update(bodies="nope"), "bodies must be a list, got 'nope'"),
    (drop("bodies", 1, "position"), "bodies[1].position is missing"),
    (drop("planes", 0, "normal"), "planes[0].normal is missing"),
    (drop("bodies", 1, "density", "mass"), "bodies[1] needs density or mass; it has neither"),
    (body(0, position=["1", "2", "3"]), "bodies[0].position must be 3 numbers, got ['1', '2', '3']"),
    (body(0, semi_axes=[0.05, 0.0, 0.03]), "bodies[0].semi_axes must be positive, got semi_axes[1] = 0.0"),
    (body(0, density=math.nan), "bodies[0].density must be positive and finite, got nan"),
    (body(0, orientation=[0, 0, 0, 0]), "bodies[0].orientation must be a unit quaternion (w, x, y, z), got norm 0"),
    (body(0, fixed="no"), "bodies[0].fixed must be true or false, got 'no'"),
    (body(0, semi_axes=[1e200, 1e200, 1e200]), "bodies[0].density gives mass inf kg"),
    (body(2, kinematic=False), "bodies[2].track needs a body added with kinematic=True"),
    (lambda document: document["bodies"][2]["track"].update(times=[0.0, 0.0]),
     "bodies[2].track.times must be strictly increasing"),
    (lambda document: document["materials"][0].update(friction=-1), "materials[0].friction must be >= 0, got -1"),
    (lambda document: document.update(ropes=[{"points": [[0, 0, 0]]}]), "ropes[0].points needs at least 2 points"),
    (lambda document: document.update(ropes=[{"points": [[0, 0, 1], [1, 0, 1]], "attachments": [[1, 7, [0, 0, 0]]]}]),
     "ropes[0].attachments[0] body 7 does not exist (3 bodies)"),
    (lambda document: document.update(version=2),
     "version is 2: this scene needs a newer solver (this one reads scene files up to version 1)"),
    (lambda document: document.update(format="something else"),
     "format is 'something else': not a Quadric Dynamics scene (expected 'quadric-dynamics-scene')"),
])
def test_scene_file_errors_name_the_file_the_json_path_and_what_was_found(tmp_path, change, message):
    path = saved_scene(tmp_path, change)
    with pytest.raises(solver.SceneFileError) as error:
        solver.Scene.load(path)
    assert str(error.value).startswith(f"{path}: {message}")
    assert isinstance(error.value, ValueError) and error.value.file == str(path)


@pytest.mark.parametrize("contents, message", [
    (lambda text: text[:len(text) // 2], "not valid JSON (truncated or damaged?): "),
    (lambda text: "[1, 2]", "must be a JSON object, got [1, 2]"),
    (lambda text: text.replace('"Ground"', '"Gr\udcffound"'), "not a text (UTF-8) file"),
])
def test_unreadable_scene_files_are_scene_file_errors(tmp_path, contents, message):
    path = saved_scene(tmp_path)
    path.write_bytes(contents(path.read_text()).encode("utf-8", "surrogateescape"))
    with pytest.raises(solver.SceneFileError, match="^" + re.escape(f"{path}: {message}")):
        solver.Scene.load(path)


def test_unknown_keys_warn_and_the_scene_still_loads(tmp_path):
    path = saved_scene(tmp_path, lambda document: (document.update(comment="by hand"),
                                                   document["bodies"][0].update(colour="red")))
    with pytest.warns(UserWarning) as caught:
        loaded = solver.Scene.load(path)
    assert sorted(str(w.message) for w in caught) == [f"{path}: bodies[0].colour is not a known key; ignored",
                                                      f"{path}: comment is not a known key; ignored"]
    assert loaded.to_dict() == demo_scene().to_dict()


def test_older_scene_files_load_with_defaults(tmp_path):
    """Keys added after version 1 first shipped (ropes, box rotation, kinematic, track) may be absent."""
    def strip(document):
        del document["ropes"]
        del document["boxes"][0]["rotation"]
        for entry in document["bodies"][:2]:
            del entry["kinematic"], entry["track"]
    loaded = solver.Scene.load(saved_scene(tmp_path, strip))
    assert loaded.to_dict() == demo_scene().to_dict()


def test_readme_quotes_only_error_messages_the_solver_produces(tmp_path, monkeypatch):
    """Every file error the README and quadric_solver/validate.py quote (`scene.json: ...`) is produced here, word
    for word."""
    monkeypatch.chdir(tmp_path)  # so the file is named as the README names it
    produced = set()
    for change in (lambda document: document["bodies"].insert(3, dict(document["bodies"][0], position="abc")),):
        saved_scene(tmp_path, change)
        with pytest.raises(solver.SceneFileError) as error:
            solver.Scene.load("scene.json")
        produced.add(str(error.value))
    for document in ("README.md", "quadric_solver/validate.py"):
        quoted = re.findall(r"`(scene\.json: [^`]+)`", (ROOT / document).read_text())
        assert quoted and set(quoted) <= produced, (document, quoted, produced)


# ------------------------------------------------------------------------------ recordings
@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A short recording of demo_scene plus a rope, saved; returns (scene, recording, path)."""
    scene = demo_scene()
    scene.add_rope(line(4, (-0.3, 0.6, 0.8), (0.3, 0.6, 0.8)), pinned=(0,), name="Cord")
    recording = solver.Simulation(scene).run(frames=4)
    path = tmp_path_factory.mktemp("recorded") / "rec.npz"
    recording.save(path)
    return scene, recording, path


def rewrite_recording(path, target, meta_changes=None, **members):
    """Copy the recording at ``path`` to ``target`` with meta changed and members replaced (None: removed)."""
    with np.load(path) as archive:
        arrays = {name: archive[name] for name in archive.files}
    document = json.loads(str(arrays["meta"]))
    document.update(meta_changes or {})
    arrays["meta"] = np.array(json.dumps({key: value for key, value in document.items() if value is not None}))
    arrays.update(members)
    np.savez_compressed(target, **{name: value for name, value in arrays.items() if value is not None})
    return target


def test_recording_carries_the_scene_hash(recorded):
    scene, recording, path = recorded
    assert recording.scene_hash == scene.content_hash() and len(recording.scene_hash) == 64
    loaded = solver.Recording.load(path)
    assert loaded.scene_hash == recording.scene_hash and loaded.mismatches(scene) == []
    assert loaded.ropes[0]["name"] == "Cord" and loaded.rope_nodes(0).shape == (4, 5, 3)
    moved = solver.Scene.from_dict(json.loads(json.dumps(scene.to_dict())))
    assert moved.content_hash() == scene.content_hash()  # a save and load keeps it
    moved.bodies[0]["position"] = (0.0, 0.0, 0.21)
    assert moved.content_hash() != scene.content_hash()


def test_a_saved_and_loaded_scene_is_the_same_bit_for_bit(tmp_path):
    """Normalising twice changes no bit, so a loaded scene keeps the content hash its recordings carry."""
    rng = np.random.default_rng(3)
    scene = solver.Scene()
    for k in range(20):
        q = rng.normal(size=4)
        scene.add_ellipsoid((0.1, 0.1, 0.1), position=(k, 0.0, 1.0), orientation=q / np.linalg.norm(q))
    scene.add_plane(normal=rng.normal(size=3))
    scene.add_tube((0.0, 0.0, 0.0), rng.normal(size=3), radius=1.0, length=1.0)
    scene.add_box_container((0.0, 0.0, 0.0), (1.0, 1.0, 1.0), rotation=q / np.linalg.norm(q))
    scene.save(tmp_path / "scene.json")
    loaded = solver.Scene.load(tmp_path / "scene.json")
    assert loaded.to_dict() == scene.to_dict() and loaded.content_hash() == scene.content_hash()


def test_recording_mismatches_say_which_bodies_and_ropes(recorded):
    scene, _, path = recorded
    recording = solver.Recording.load(path)
    other = demo_scene()
    other.bodies[1]["name"] = "Bee"
    other.add_ellipsoid((0.05, 0.05, 0.05), position=(0.2, 0.2, 0.2), name="Extra")
    assert recording.mismatches(other) == [
        "bodies of the scene missing from the recording: 'Bee', 'Extra'",
        "bodies in the recording that the scene does not have: 'B'",
        "ropes in the recording that the scene does not have: 'Cord'"]
    swapped = demo_scene()
    swapped.bodies[0]["name"], swapped.bodies[1]["name"] = "B", "A"
    swapped.add_rope(line(6, (-0.3, 0.6, 0.8), (0.3, 0.6, 0.8)), name="Cord")
    assert recording.mismatches(swapped) == [
        "bodies in another order: the recording has 'A', 'B', 'Mover', the scene 'B', 'A', 'Mover'",
        "rope 0 ('Cord') has 5 nodes in the recording but 7 in the scene"]


@pytest.mark.parametrize("meta, members, message", [
    (dict(fps="24"), {}, "meta.fps must be a number, got '24'"),
    (dict(version=3), {}, "meta.version is 3: this recording needs a newer solver "
                          "(this one reads recording files up to version 2)"),
    (dict(format=None), {}, "meta.format is missing: not a Quadric Dynamics recording"),
    (dict(body_names=["A", 7, "Mover"]), {}, "meta.body_names[1] must be a name or null, got 7"),
    (dict(scene_sha256="abc"), {}, "meta.scene_sha256 must be 64 hex digits or null, got 'abc'"),
    ({}, dict(body_poses=np.zeros((4, 2, 7))), "body_poses must be (frames, 3 bodies, 7) poses, "
                                               "got an array of shape (4, 2, 7)"),
    ({}, dict(stats_contacts=None), "stats_contacts is missing"),
    ({}, dict(stats_kinetic_energy=np.full(4, np.nan)), "stats_kinetic_energy contains NaN or infinity"),
    ({}, dict(rope0_segments=np.zeros((4, 3, 4))), "rope0_segments must be 4 frames of 4 segment quaternions, "
                                                   "got an array of shape (4, 3, 4)"),
    ({}, dict(meta=None), "meta is missing: not a Quadric Dynamics recording"),
])
def test_recording_file_errors_name_the_member(recorded, tmp_path, meta, members, message):
    path = rewrite_recording(recorded[2], tmp_path / "bad.npz", meta, **members)
    with pytest.raises(solver.SceneFileError, match="^" + re.escape(f"{path}: {message}")):
        solver.Recording.load(path)


def test_truncated_recording_is_a_scene_file_error(recorded, tmp_path):
    path = tmp_path / "cut.npz"
    path.write_bytes(recorded[2].read_bytes()[:-100])
    with pytest.raises(solver.SceneFileError, match="^" + re.escape(
            f"{path}: not a readable recording (.npz archive; truncated or damaged?): ")):
        solver.Recording.load(path)


def test_version_1_recordings_load_without_a_scene_hash(recorded, tmp_path):
    path = rewrite_recording(recorded[2], tmp_path / "old.npz", dict(version=1, scene_sha256=None))
    loaded = solver.Recording.load(path)
    assert loaded.scene_hash is None
    np.testing.assert_array_equal(loaded.body_poses, recorded[1].body_poses)


# --------------------------------------------------------------------------- interrupted saves
def half_then_fail(buffer, handle):
    """Write the first half of what the real serialiser wrote to ``buffer``, then fail as a full disk would."""
    handle.write(buffer.getvalue()[:len(buffer.getvalue()) // 2])
    raise OSError(28, "No space left on device")


def check_interrupted_save(obj, path, load, monkeypatch, module, name, fake):
    obj.save(path)
    before = path.read_bytes()
    monkeypatch.setattr(module, name, fake)
    with pytest.raises(OSError, match="No space left"):
        obj.save(path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left behind
    load(path)  # still loads


def test_an_interrupted_scene_save_leaves_the_old_file_whole(tmp_path, monkeypatch):
    real = json.dump

    def fake(data, handle, **options):
        buffer = io.StringIO()
        real(data, buffer, **options)
        half_then_fail(buffer, handle)

    check_interrupted_save(demo_scene(), tmp_path / "scene.json", solver.Scene.load, monkeypatch, json, "dump", fake)


def test_an_interrupted_recording_save_leaves_the_old_file_whole(recorded, tmp_path, monkeypatch):
    real = np.savez_compressed

    def fake(handle, **arrays):
        buffer = io.BytesIO()
        real(buffer, **arrays)
        half_then_fail(buffer, handle)

    check_interrupted_save(recorded[1], tmp_path / "rec.npz", solver.Recording.load, monkeypatch, np,
                           "savez_compressed", fake)


# ------------------------------------------------------------------------------------ the CLI
def run_cli(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "quadric_solver", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=600)


@pytest.mark.parametrize("args, words", [
    (["run", "{bad}", "-o", "{out}"], "bodies[1].material 999 is out of range"),
    (["run", "{cut}", "-o", "{out}"], "not valid JSON"),
    (["run", "{missing}", "-o", "{out}"], "No such file or directory"),
    (["run", "{good}", "-o", "{out}", "--frames", "0"], "argument --frames: expected a positive integer, got '0'"),
    (["run", "{good}", "-o", "{out}", "--fps", "nan"], "argument --fps: expected a positive number, got 'nan'"),
    (["run", "{good}", "-o", "{out}", "--substeps", "many"], "argument --substeps: expected a positive integer"),
    (["run", "{good}", "-o", "{out}", "--colour", "red"], "unrecognized arguments: --colour red"),
    (["run", "{good}"], "the following arguments are required: -o/--output"),
    (["run", "{good}", "-o", "{nowhere}"], "the folder"),
])
def test_cli_bad_file_or_option_gives_one_line_and_no_traceback(tmp_path, args, words):
    paths = dict(good=saved_scene(tmp_path), out=tmp_path / "rec.npz", missing=tmp_path / "missing.json",
                 nowhere=tmp_path / "no" / "rec.npz")
    paths["bad"] = tmp_path / "bad.json"
    paths["bad"].write_text(saved_scene(tmp_path, body(1, material=999)).read_text())
    paths["cut"] = tmp_path / "cut.json"
    paths["cut"].write_text(saved_scene(tmp_path).read_text()[:100])
    result = run_cli(*(arg.format(**paths) for arg in args))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0] and "Traceback" not in result.stderr, result.stderr
    assert not (tmp_path / "rec.npz").exists()


def test_cli_reports_unknown_keys_as_one_line_warnings(tmp_path):
    path = saved_scene(tmp_path, body(0, colour="red"))
    result = run_cli("run", path, "-o", tmp_path / "rec.npz", "--frames", "2", "--quiet")
    assert result.returncode == 0, result.stderr
    assert result.stderr == f"warning: {path}: bodies[0].colour is not a known key; ignored\n"
