"""addon/resume.py and resume_files.py without Blender: which scenes count as unchanged, how many snapshots a run
keeps, and how a snapshot is stored."""
import types

import numpy as np
import pytest

from tests.addon.numpy_modules import load

resume = load("resume")


def test_a_scene_is_unchanged_up_to_float32_rounding_only():
    scene = {"bodies": [{"position": [0.1, 2.0, 3.0], "name": "Ball", "fixed": False}], "gravity": [0, 0, -9.81]}
    rounded = {"bodies": [{"position": [float(np.float32(0.1)), 2.0, 3.0], "name": "Ball", "fixed": False}],
               "gravity": [0, 0, -9.81]}
    assert resume.same(scene, rounded)
    moved = {"bodies": [{"position": [0.1001, 2.0, 3.0], "name": "Ball", "fixed": False}], "gravity": [0, 0, -9.81]}
    assert not resume.same(scene, moved)  # a tenth of a millimetre is a move
    renamed = {"bodies": [{"position": [0.1, 2.0, 3.0], "name": "Brick", "fixed": False}], "gravity": [0, 0, -9.81]}
    assert not resume.same(scene, renamed)
    assert not resume.same(scene, {**scene, "bodies": scene["bodies"] * 2})


def test_snapshots_are_kept_every_stride_frames_within_the_budget():
    size = resume.BUDGET // 25  # each snapshot: so 25 fit
    fake = types.SimpleNamespace(snapshot=lambda: {"workspace": (np.zeros(size, dtype=np.uint8),)})
    conv = types.SimpleNamespace(frame_start=1, fps=24.0, substeps=10, velocity_sweeps=0, scene=None)
    points = resume.ResumePoints(conv)
    for done in range(1, 101):
        points.offer(fake, done, 100)
    assert points.stride == 4  # 100 frames of snapshots would take 4 budgets
    assert sorted(points.snapshots) == list(range(0, 100, 4))
    assert len(points.snapshots) * size <= resume.BUDGET


def test_snapshots_that_take_long_to_copy_are_kept_further_apart(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(resume.time, "perf_counter", lambda: clock[0])
    frame_seconds, copy_seconds = 0.1, 0.045  # each copy 45 % of a frame's time: one every 5 frames is under 10 %

    def snapshot():
        clock[0] += copy_seconds
        return {}

    conv = types.SimpleNamespace(frame_start=1, fps=24.0, substeps=10, velocity_sweeps=0, scene=None)
    points = resume.ResumePoints(conv)
    for done in range(1, 41):
        points.offer(types.SimpleNamespace(snapshot=snapshot), done, 40)
        clock[0] += frame_seconds
    assert points.stride == 5
    kept = sorted(points.snapshots)
    assert kept[:2] == [0, 1] and all(k % 5 == 0 for k in kept[2:])


resume_files = load("resume_files")


def test_a_snapshot_goes_through_plain_arrays_and_json_into_the_solvers_types(tmp_path):
    import collections

    State = collections.namedtuple("State", "position count")
    snapshot = dict(scene_hash="abc", bodies=State(np.arange(6.0).reshape(2, 3), np.array([2], dtype=np.int64)),
                    capacity=(8, 16), stats={"contacts": 3, "phase_seconds": {"forces": 0.5}}, ropes=None)
    arrays = {}
    tree = resume_files.flatten(snapshot, arrays)
    resume_files._save_arrays(str(tmp_path / "s.npz"), tree, arrays)
    template = dict(scene_hash="", bodies=State(np.zeros((0, 3)), np.zeros(1, dtype=np.int64)), capacity=(0, 0),
                    stats={}, ropes=None)
    back = resume_files.StoredSnapshot(str(tmp_path / "s.npz")).load(template)
    assert type(back["bodies"]) is State and back["capacity"] == (8, 16) and back["scene_hash"] == "abc"
    np.testing.assert_array_equal(back["bodies"].position, snapshot["bodies"].position)
    assert back["bodies"].count.dtype == np.int64 and back["stats"] == snapshot["stats"] and back["ropes"] is None
    wrong = dict(template, bodies=State(np.zeros((0, 3), dtype=np.float32), np.zeros(1, dtype=np.int64)))
    with pytest.raises(resume_files.StoredRunError, match="float64 .* where the solver has float32"):
        resume_files.StoredSnapshot(str(tmp_path / "s.npz")).load(wrong)
    other = dict(template, bodies=(np.zeros((0, 3)),))  # a solver whose state has another number of fields
    with pytest.raises(resume_files.StoredRunError, match="of 2 fields, where the solver has 1"):
        resume_files.StoredSnapshot(str(tmp_path / "s.npz")).load(other)


def test_a_file_with_a_pickle_in_it_is_refused_unread(tmp_path):
    with pytest.raises(TypeError, match="object"):  # nothing the add-on stores is pickled
        resume_files.flatten({"names": np.array(["a", None], dtype=object)}, {})
    crafted = tmp_path / "crafted.npz"  # as a downloaded .blend's cache could hold: loading it would run code
    np.savez(crafted, tree=np.frombuffer(b'{"array": "a0"}', dtype=np.uint8), a0=np.array([{"x": 1}], dtype=object))
    with pytest.raises(resume_files.StoredRunError, match="cannot be read .*allow_pickle"):
        resume_files.StoredSnapshot(str(crafted)).load(None)


def _run(count=3):
    recording = types.SimpleNamespace(fps=24.0, body_names=["Ball"], phases=("forces",),
                                      body_poses=np.arange(21.0).reshape(3, 1, 7), scene_hash="abc",
                                      stats={"contacts": np.array([0, 1, 2])}, ropes=[], particle_groups=[], frames=3)
    return types.SimpleNamespace(conv={"frame_start": 1, "offset": np.zeros(3)}, recording=recording,
                                 snapshots={k: {"bodies": (np.full(4, float(k)),)} for k in range(count)},
                                 token="t1", scene=("Scene", 0), settings=(1, 24.0, 10, 0), offset=0, stride=1)


def _writer(target, run):
    return resume_files.Writer(target, run.token, resume_files.write_steps(target, run))


def test_a_written_run_names_its_files_and_replaces_an_earlier_runs(tmp_path):
    import json

    from quadric_solver.recording import Recording

    target = tmp_path / "resume-x"
    target.mkdir()
    (target / "snapshot-0-old.npz").write_bytes(b"an earlier run's")
    writer = _writer(str(target), _run())
    ticks = 0
    while writer.stepper.advance(budget=0.0):  # a step a tick
        ticks += 1
    assert ticks >= 8  # the conversion's arrays, the recording's, three snapshots, ...
    run = json.loads((target / "run.json").read_text())
    assert run["token"] == "t1" and run["scene"] == "Scene" and sorted(run["snapshots"]) == ["0", "1", "2"]
    assert sorted(p.name for p in target.iterdir()) == sorted(
        ["run.json", run["conv"], run["recording"], *run["snapshots"].values()])  # the earlier run's file is gone
    back = resume_files.StoredSnapshot(str(target / run["snapshots"]["2"])).load({"bodies": (np.zeros(0),)})
    np.testing.assert_array_equal(back["bodies"][0], np.full(4, 2.0))
    recording = resume_files.StoredRecording(str(target / run["recording"]), 2, whole=False).load(
        types.SimpleNamespace(Recording=Recording))
    assert recording.frames == 2 and recording.body_names == ["Ball"] and recording.scene_hash == "abc"
    np.testing.assert_array_equal(recording.body_poses, np.arange(14.0).reshape(2, 1, 7))
    np.testing.assert_array_equal(recording.stats["contacts"], [0, 1])


def test_a_write_cancelled_half_way_leaves_no_run_and_no_partial_file(tmp_path):
    target = tmp_path / "resume-x"
    writer = _writer(str(target), _run())
    for _ in range(8):  # past the conversion's file, into the recording's
        assert writer.stepper.advance(budget=0.0)
    writer.cancel()
    left = sorted(p.name for p in target.iterdir())
    assert "run.json" not in left and not any(".part" in name for name in left)
    assert [name[:5] for name in left] == ["conv-"]  # what was whole stays for Clear Bake or the next write


def test_run_json_names_only_files_of_its_own_folder():
    assert resume_files._member("/cache/resume-x", "snapshot-3-ab.npz") == "/cache/resume-x/snapshot-3-ab.npz"
    for name in ("../../home/user/.bashrc", "/etc/passwd", "..", "", 7):
        with pytest.raises(ValueError, match="not a file of its folder"):
            resume_files._member("/cache/resume-x", name)


def test_the_timer_writes_the_queued_runs_one_after_the_other(tmp_path, monkeypatch):
    monkeypatch.setattr(resume_files.ticks, "TICK_BUDGET", 0.0)  # a step a tick
    first, second = (_writer(str(tmp_path / name), _run()) for name in ("a", "b"))
    resume_files._queue[:] = [first, second]
    calls = 1
    while resume_files._tick() is not None:
        calls += 1
        assert first.stepper.done or not second.stepper.units  # one at a time, in order
    assert calls >= 16 and not resume_files._queue
    assert (tmp_path / "a" / "run.json").exists() and (tmp_path / "b" / "run.json").exists()


def test_a_run_copied_to_another_folder_is_the_same_run(tmp_path):
    import json

    _writer(str(tmp_path / "a"), _run()).stepper.finish()
    run = json.loads((tmp_path / "a" / "run.json").read_text())
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "snapshot-0-old.npz").write_bytes(b"an earlier run's")
    steps = resume_files.copy_steps(str(tmp_path / "a"), str(tmp_path / "b"), run)
    assert sum(1 for _ in steps) == 5  # a file a step: the conversion, the recording, three snapshots
    assert json.loads((tmp_path / "b" / "run.json").read_text()) == run
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == sorted(p.name for p in (tmp_path / "a").iterdir())
    for p in (tmp_path / "a").iterdir():
        assert (tmp_path / "b" / p.name).read_bytes() == p.read_bytes()


def test_a_large_array_is_written_a_chunk_a_step_and_read_back_whole(tmp_path, monkeypatch):
    import json

    monkeypatch.setattr(resume_files, "CHUNK", 1000)  # bytes a step
    big = np.arange(1000.0).reshape(250, 4)[:, ::2]  # 4,000 bytes, not contiguous
    value = {"big": big, "fortran": np.asfortranarray(np.arange(12).reshape(3, 4)), "flags": np.array([True, False]),
             "empty": np.zeros((0, 3)), "count": np.array(7)}
    arrays = {}
    tree = resume_files.flatten(value, arrays)
    units = list(resume_files._save_arrays_steps(str(tmp_path / "x.npz"), json.dumps(tree), arrays))
    assert len(units) >= 4 + 6  # the large one in four, then a unit after each of the six arrays (the tree too)
    back = resume_files.StoredSnapshot(str(tmp_path / "x.npz")).load(None)
    assert sorted(back) == sorted(value)
    for key, array in value.items():
        assert back[key].dtype == array.dtype and back[key].shape == array.shape
        np.testing.assert_array_equal(back[key], array)


def test_a_malformed_tree_is_refused_naming_the_file(tmp_path):
    import json

    template = {"bodies": (np.zeros(2),)}
    for k, tree in enumerate([{"dict": 5}, {"array": ["a0"]}, {"class": "x"}, {"scene": {}}, {"a": 1, "b": 2},
                              {"tuple": [{"array": "missing"}]}, {"dict": {"bodies": {"tuple": [1, 2]}}}]):
        path = tmp_path / f"bad{k}.npz"
        np.savez(path, tree=np.frombuffer(json.dumps(tree).encode(), dtype=np.uint8), a0=np.zeros(2))
        with pytest.raises(resume_files.StoredRunError, match=f"bad{k}.npz"):
            resume_files.StoredSnapshot(str(path)).load(template)


def _counted(steps):
    """(how many units the steps yielded, their return value)."""
    units = 0
    while True:
        try:
            next(steps)
        except StopIteration as end:
            return units, end.value
        units += 1


def test_a_large_conversion_is_flattened_and_encoded_an_item_a_step():
    """A tree with long lists (a Conversion's bindings, its Scene's bodies) is flattened and turned into JSON one
    item of them a step, into flatten's tree and json.dumps's text."""
    import dataclasses
    import json

    @dataclasses.dataclass
    class Binding:
        name: str
        offset: np.ndarray

    class Scene:
        def to_dict(self):
            return {"gravity": [0.0, 0.0, -9.81], "bodies": [{"name": f"b{k}", "position": [k, 0.0, 1.0]}
                                                              for k in range(300)]}

    value = {"bodies": [Binding(f"b{k}", np.full(3, float(k))) for k in range(200)], "scene": Scene(),
             "frames": (1, 250)}
    arrays = {}
    units, tree = _counted(resume_files.flatten_steps(value, arrays))
    assert units >= 200
    expected_arrays = {}
    assert tree == resume_files.flatten(value, expected_arrays) and list(arrays) == list(expected_arrays)
    assert all(np.array_equal(arrays[k], expected_arrays[k]) for k in arrays)
    units, text = _counted(resume_files.json_steps(tree))
    assert units >= 200 + 300
    assert json.loads(text) == json.loads(json.dumps(tree))
