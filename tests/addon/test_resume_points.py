"""addon/resume.py without Blender: which scenes count as unchanged, and how many snapshots a run keeps."""
import types

import numpy as np

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
