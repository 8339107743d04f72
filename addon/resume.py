"""Bake from the current frame: a run keeps snapshots of its simulation (Simulation.snapshot) at frame boundaries,
in memory for this Blender session, per scene, and beside the .blend when it is saved (addon/resume_files.py);
a later run of the unchanged scene continues from the last one at or before the current frame instead of from
the start (simulating the kept run's own Scene again), and bakes the frames before it as they were.

A snapshot holds the solver's work buffers as well as its State (what carries over between substeps), which
makes the continued run the uninterrupted one bit for bit, and makes snapshots large. So a run keeps one every
``stride`` frames, chosen from the first snapshot's size to stay within BUDGET bytes and widened while copying
them takes more than SHARE of the run's time; continuing from a frame between two of them simulates again from
the earlier, which gives the same frames.

Runs are kept by an id stored on the scene (``scene.quadric.resume_id``, random, made at the scene's first kept
run), not by its name: a renamed scene keeps its run, and a new scene given the old name has none. Duplicating
a scene copies the id; of the scenes that share one, the run belongs to the scene it was kept for (told by its
address, else by its name; neither found, to none), and a copy's own first run gives the copy an id of its own.
The id is made within the first run's undo step, so undoing that step hides the run until redo.
"""
import dataclasses
import math
import time
import uuid

import numpy as np

from . import resume_files

BUDGET = 512 * 2**20  # bytes of snapshots kept per scene
FLOAT32 = 1e-6  # relative: a few units in the last place of a float32 (6e-8)
SHARE = 0.1  # of the run's time, at most, spent copying snapshots (the worker holds no lock, but takes a core)
MIN_COST = 0.005  # s: cheaper snapshots are kept every frame the budget allows
_kept = {}  # a scene's resume_id -> ResumePoints of its last run


def _nbytes(value):
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, (tuple, list)):
        return sum(_nbytes(item) for item in value)
    if isinstance(value, dict):
        return sum(_nbytes(item) for item in value.values())
    return 0


def _settings(conv):
    """What, beside the Scene, makes two runs the same run: where they start and how they step."""
    return conv.frame_start, conv.fps, conv.substeps, conv.velocity_sweeps


def same(a, b):
    """Whether two Scene documents (Scene.to_dict) describe the same scene: equal but for float32 rounding, which
    differs where Blender and the add-on compute an object's matrix in different ways (a baked object's start
    pose is read from its stored original transform)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, (int, float)) and not isinstance(b, bool):
        return abs(a - b) <= FLOAT32 * max(1.0, abs(a), abs(b))
    return a == b


class ResumePoints:
    """The snapshots of one run (by frame index from the start of its range) and the frames it finished."""

    def __init__(self, conv, snapshots=None, offset=0):
        self.settings = _settings(conv)
        # the run's Conversion: a continued run simulates its Scene again and bakes with its bindings (a baked
        # object's offsets, read again, can differ from them in the last bit)
        self.conv = conv
        self.snapshots = dict(snapshots or {})  # frame index -> Simulation.snapshot()
        self.offset = offset    # the frame index the run recording into this started at
        self.stride = 1
        self.recording = None   # every finished frame from the range's start, once the run ended
        self.scene = ("", 0)    # the name and address (as_pointer) of the scene it was last kept or found for
        self.token = uuid.uuid4().hex  # which run a folder on disk holds (resume_files)
        self._last = None       # (frame index, time) of the last frame offered
        self._frame_seconds = 0.0

    def offer(self, sim, done, total):
        """In the worker, after frame ``done - 1`` of the run: keep a snapshot there if it is on the stride."""
        index = self.offset + done - 1
        now = time.perf_counter()
        if self._last is not None:  # the frames' own time, without the copies
            self._frame_seconds = (now - self._last[1]) / max(1, index - self._last[0])
        self._last = index, now
        if index % self.stride:
            return
        snapshot = sim.snapshot()
        self._last = index, time.perf_counter()
        cost = self._last[1] - now
        if done == 1 and not self.offset:  # a run's first snapshot (the start pose): size the stride to the budget
            self.stride = max(1, math.ceil((self.offset + total) * _nbytes(snapshot) / BUDGET))
        elif cost > MIN_COST and self._frame_seconds:  # and keep the copies to a small share of the run's time
            self.stride = max(self.stride, math.ceil(cost / (SHARE * self._frame_seconds)))
        self.snapshots[index] = snapshot

    def matches(self, conv):
        """'' if a run of ``conv`` is the run these snapshots came from, else why not."""
        if _settings(conv) != self.settings:
            return "the start frame, frame rate, substeps or sweeps changed"
        if not same(conv.scene.to_dict(), self.conv.scene.to_dict()):
            return "a body, collider, rope or setting changed"
        return ""

    def resumable(self, index):
        """The frame index to continue from for frame index ``index``: the last snapshot at or before it, if the
        run finished that frame (else None)."""
        finished = self.recording.frames if self.recording is not None else 0
        below = [k for k in self.snapshots if k <= index] if 0 <= index < finished else []
        return max(below) if below else None


def _holders(key):
    import bpy

    return [s for s in bpy.data.scenes if s.quadric.resume_id == key]


def _owner(key):
    """The scene whose run is kept under ``key``, or None: the one scene with that id (renamed or not); of several
    (copies), the one at the address, else of the name, the run was kept or last found for."""
    kept = _kept.get(key)
    holders = _holders(key) if kept is not None else []
    if len(holders) == 1:
        return holders[0]
    name, address = kept.scene if kept is not None else ("", 0)
    return (next((s for s in holders if s.as_pointer() == address), None) or
            next((s for s in holders if s.name == name), None))


def points(scene):
    """The scene's kept run (ResumePoints), or None."""
    key = scene.quadric.resume_id
    if not key or _owner(key) != scene:
        return None
    kept = _kept[key]
    kept.scene = scene.name, scene.as_pointer()  # renamed since: copies made from now on are told apart by these
    return kept


def keep(scene, resume_points, recording):
    """Store a run's snapshots and frames for the scene once it ended (main thread), in place of its last run's;
    runs of scenes no longer there are dropped."""
    if recording is None or recording.frames < 1:
        return
    key = scene.quadric.resume_id
    if not key or (len(_holders(key)) > 1 and _owner(key) != scene):  # a first run, or a copy's first
        key = scene.quadric.resume_id = uuid.uuid4().hex
    resume_points.recording = recording
    _remember(scene, resume_points)


def _remember(scene, resume_points):
    resume_points.scene = scene.name, scene.as_pointer()
    _kept[scene.quadric.resume_id] = resume_points
    for gone in [k for k in _kept if _owner(k) is None]:  # a deleted scene's, another file's
        del _kept[gone]


def read_steps(scene, solver):
    """Steps (addon/ticks.py) that find the scene's kept run: in memory, else read from beside the saved .blend
    (and kept in memory from then on); returns its ResumePoints or None. resume_files.StoredRunError where the
    one on disk cannot be read."""
    kept = points(scene)
    if kept is None and _owns_run_on_disk(scene):
        kept = yield from resume_files.read_steps(scene, solver, ResumePoints)
        if kept is not None:
            _remember(scene, kept)
    return kept


def available(scene):
    """Whether the scene has a kept run to continue, in memory or on disk (the panel shows From Current Frame)."""
    return points(scene) is not None or _owns_run_on_disk(scene)


def _owns_run_on_disk(scene):
    """Whether the run on disk under the scene's id is its own: of the scenes that share the id (copies), the one
    it was kept for (by name), unless a run in memory says otherwise."""
    key = scene.quadric.resume_id
    if not key:
        return False
    if key in _kept:
        return _owner(key) == scene
    run = resume_files.read_run(scene)
    return run is not None and (len(_holders(key)) == 1 or run.get("scene") == scene.name)


_on_disk_before_save = {}  # a scene (as_pointer) -> the folder of its run on disk, noted before a save


def before_save():
    """(save_pre) Note each scene's run on disk that is not in memory, for save_all to copy where the file is
    saved under another name."""
    import bpy

    _on_disk_before_save.clear()
    for scene in bpy.data.scenes:
        if points(scene) is None and _owns_run_on_disk(scene):
            _on_disk_before_save[scene.as_pointer()] = resume_files.folder(scene)


def save_all():
    """(save_post) Write every kept run of this file's scenes that its folder does not hold yet, or copy a run read
    from beside the file's previous name, and delete the runs of scenes no longer in the file: what is on disk goes
    with the bakes the saved file holds."""
    import bpy

    for scene in bpy.data.scenes:
        kept = points(scene)
        if kept is not None and not resume_files.written(scene, kept):
            resume_files.write_later(scene, kept)
        elif kept is None and scene.as_pointer() in _on_disk_before_save:
            resume_files.copy_later(_on_disk_before_save[scene.as_pointer()], scene)
    _on_disk_before_save.clear()
    resume_files.prune(bpy.data.scenes)


def forget(scene):
    """Drop the scene's kept run (Clear Bake), on disk too, and release its snapshots, also where a finished job
    still holds them; returns describe()'s words for it, or '' if none was kept."""
    kept = points(scene)
    on_disk = resume_files.remove(scene) if kept is not None or _owns_run_on_disk(scene) else False
    if kept is None:
        return "the kept run saved beside the file" if on_disk else ""
    del _kept[scene.quadric.resume_id]
    what = describe(kept)
    kept.snapshots.clear()
    return what


def describe(resume_points):
    """'the kept run of frames 1-40 (40 resume points)'."""
    first = resume_points.conv.frame_start
    last = first + (resume_points.recording.frames if resume_points.recording is not None else 1) - 1
    count = len(resume_points.snapshots)
    return f"the kept run of frames {first}-{last} ({count} resume point{'s' if count != 1 else ''})"


def continued(conv, resume_points, index):
    """(the whole range's conversion, that of the frames from ``index`` on, the snapshot there, the frames before
    it, new ResumePoints): what a job needs to continue the run at frame index ``index`` over ``conv``'s range
    (a matching one: `matches`)."""
    whole = dataclasses.replace(resume_points.conv, frames=conv.frames)
    rest = dataclasses.replace(whole, frame_start=whole.frame_start + index, frames=whole.frames - index)
    kept = {k: snap for k, snap in resume_points.snapshots.items() if k <= index}
    new_points = ResumePoints(whole, kept, offset=index)
    new_points.stride = resume_points.stride
    return whole, rest, resume_points.snapshots[index], resume_points.recording.truncated(index), new_points


def joined(solver, before, after):
    """One Recording of ``before``'s frames followed by ``after``'s (whose first frame continues them)."""
    def both(a, b):
        return np.concatenate([a, b], axis=0)

    stats = {key: both(before.stats[key], after.stats[key]) for key in after.stats}
    recording = solver.Recording(after.fps, after.body_names, after.phases, both(before.body_poses, after.body_poses),
                                 stats, after.scene_hash)
    recording.ropes = [dict(name=b["name"], nodes=both(a["nodes"], b["nodes"]),
                            segments=both(a["segments"], b["segments"])) for a, b in zip(before.ropes, after.ropes)]
    recording.particle_groups = [dict(name=b["name"], positions=both(a["positions"], b["positions"]))
                                 for a, b in zip(before.particle_groups, after.particle_groups)]
    return recording
