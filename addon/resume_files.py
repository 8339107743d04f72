"""Kept runs on disk: Bake from Current Frame after the .blend was saved, closed and opened again.

A kept run (resume.ResumePoints) of a saved .blend is written beside it, in ``//quadric_cache/<blend>/resume-<id>/``
(``id``: the scene's resume_id, so a renamed scene finds its run):
- ``run.json``: the format, the run's settings, frames and stride, the scene it was kept for and the names of the
  files below. It is written last, in one replace, so a folder whose writing stopped half-way (Blender quit)
  holds the previous run whole; files it does not name are deleted at the next write.
- ``conv-*.npz``: the Conversion (the Scene as its own document, the bindings as fields); ``recording-*.npz``:
  the Recording of the finished frames; ``snapshot-<frame index>-*.npz``: one snapshot (Simulation.snapshot)
  each.

Only plain arrays and JSON are written and read (np.load without pickles): opening a cache that came with a
downloaded .blend runs no code. A snapshot's named tuples are the solver's own types, so its file holds their
fields in order, and reading it pours them into a snapshot of the continuing Simulation (``StoredSnapshot``).
The main thread reads run.json and the Conversion; the snapshot and the Recording are read in the worker thread
of the run that continues them.

A run is written when the file is saved (the save_post handler), so what is on disk goes with the bakes of the
saved file, and a bake that failed or was cancelled changes no file. Writing runs on the main thread, CHUNK bytes
a step from a timer, and at once in the background (no timers run there): Blender's Python must not run in
another thread while Blender changes its data (a writer thread crashed Blender under undo). Clear Bake deletes
the folder at once.
"""
import dataclasses
import json
import os
import shutil
import traceback
import uuid
import zipfile

import numpy as np

from . import point_cache, ticks

FORMAT = "quadric-resume"
VERSION = 1
RUN = "run.json"
_queue = []  # Writers waiting or under way, the first one writing


class StoredRunError(ValueError):
    """A kept run on disk that cannot be read: the message names the file and what is wrong."""


# ------------------------------------------------------------------------------- plain arrays and JSON
SHORT = 16  # items of a list or dict done in one step; a longer one takes a step an item


def flatten(value, arrays):
    """A JSON tree of ``value`` (nested dicts, lists, tuples, named tuples, dataclasses, arrays, scalars, None;
    a solver Scene as its document) whose arrays are moved into ``arrays`` by key."""
    return ticks.drain(flatten_steps(value, arrays))


def flatten_steps(value, arrays):
    """flatten as steps, whose return value is the tree: a step ends after each item of a long list or dict (the
    bindings of a Conversion: thousands of bodies took tens of ms in one step)."""
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise TypeError("cannot store an array of Python objects (it would be pickled)")
        key = f"a{len(arrays)}"
        arrays[key] = value
        return {"array": key}
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict):
        tree = {}
        for k, v in value.items():
            tree[str(k)] = yield from flatten_steps(v, arrays)
            if len(value) > SHORT:
                yield
        return {"dict": tree}
    if isinstance(value, (tuple, list)):
        items = []
        for v in value:
            items.append((yield from flatten_steps(v, arrays)))
            if len(value) > SHORT:
                yield
        return {"tuple" if isinstance(value, tuple) else "list": items}
    if dataclasses.is_dataclass(value):
        fields = {}
        for f in dataclasses.fields(value):
            fields[f.name] = yield from flatten_steps(getattr(value, f.name), arrays)
        return {"class": [type(value).__name__, fields]}
    if hasattr(value, "to_dict"):  # the solver's Scene
        return {"scene": value.to_dict()}
    raise TypeError(f"cannot store a {type(value).__name__}")


def json_steps(tree):
    """Steps whose return value is the JSON text of a flatten tree (json.dumps's, up to white space): a step
    ends after each item of a long list (one body's binding, or one body of the Scene's document)."""
    parts = []
    yield from _json_parts(tree, parts)
    return "".join(parts)


def _json_parts(tree, parts):
    if isinstance(tree, dict) and tree:
        for k, (key, value) in enumerate(tree.items()):
            parts.append(("{" if k == 0 else ",") + json.dumps(key) + ":")
            yield from _json_parts(value, parts)
        parts.append("}")
    elif isinstance(tree, list) and tree:
        long = len(tree) > SHORT  # its items one a step, each in one piece; a short one's (a class, a tuple) opened
        for k, value in enumerate(tree):
            parts.append("[" if k == 0 else ",")
            if long:
                parts.append(json.dumps(value))
                yield
            else:
                yield from _json_parts(value, parts)
        parts.append("]")
    else:
        parts.append(json.dumps(tree))


def unflatten(tree, arrays, template=None, classes=None, solver=None):
    """The value ``flatten`` made ``tree`` of. Tuples take the type of the ``template`` at their place (the solver's
    named tuples), dataclasses come from ``classes`` by name and Scenes from ``solver``; arrays must have the
    template's dtype and dimensions. ValueError where the tree does not fit them."""
    if not isinstance(tree, dict):
        return tree
    kind, = tree
    body = tree[kind]
    if kind == "array":
        if body not in arrays:
            raise ValueError(f"array {body} is missing")
        array = arrays[body]
        if isinstance(template, np.ndarray) and (array.dtype != template.dtype or array.ndim != template.ndim):
            raise ValueError(f"array {body} is {array.dtype} {array.shape}, where the solver has {template.dtype} "
                             f"in {template.ndim} dimensions")
        return array
    if kind == "dict":
        known = template if isinstance(template, dict) else {}
        return {k: unflatten(v, arrays, known.get(k), classes, solver) for k, v in body.items()}
    if kind in ("tuple", "list"):
        known = template if isinstance(template, (tuple, list)) else ()
        if known and len(known) != len(body):
            raise ValueError(f"a {type(template).__name__} of {len(body)} fields, where the solver has {len(known)}")
        items = [unflatten(v, arrays, known[k] if known else None, classes, solver) for k, v in enumerate(body)]
        if hasattr(template, "_fields"):
            return type(template)(*items)
        return tuple(items) if kind == "tuple" else items
    if kind == "class":
        name, fields = body
        cls = (classes or {}).get(name)
        if cls is None:
            raise ValueError(f"unknown class {name!r}")
        unknown = set(fields) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise ValueError(f"{name} has no fields {sorted(unknown)}")
        return cls(**{k: unflatten(v, arrays, None, classes, solver) for k, v in fields.items()})
    if kind == "scene":
        return solver.Scene.from_dict(body, source="the kept run's scene")
    raise ValueError(f"unknown entry {kind!r}")


CHUNK = 2**21  # bytes written a step: a few ms, and less time stuck where the disk makes writes wait


def _save_arrays_steps(path, text, arrays):
    """Steps that write an .npz (np.savez's layout: one .npy per array, and ``text``, the tree as JSON, in UTF-8),
    CHUNK bytes a step; the file appears whole at the end, or not at all."""
    part = f"{path}.part"
    try:
        with zipfile.ZipFile(part, "w", allowZip64=True) as archive:
            for key, value in [("tree", np.frombuffer(text.encode(), dtype=np.uint8)), *arrays.items()]:
                value = np.asarray(value, order="C")  # (ascontiguousarray would make a 0-d array 1-d)
                with archive.open(f"{key}.npy", "w", force_zip64=True) as member:
                    np.lib.format.write_array_header_2_0(member, np.lib.format.header_data_from_array_1_0(value))
                    data = memoryview(value.reshape(-1).view(np.uint8))  # the raw bytes, any dtype
                    for start in range(0, len(data), CHUNK):
                        member.write(data[start:start + CHUNK])
                        yield
                yield
        os.replace(part, path)
    except BaseException:  # a failure, or the writer closed (Clear Bake)
        if os.path.exists(part):
            os.remove(part)
        raise


def _save_arrays(path, tree, arrays):
    ticks.drain(_save_arrays_steps(path, json.dumps(tree), arrays))


def _load_arrays(path):
    """(tree, arrays) of a file of _save_arrays. StoredRunError where it cannot be read."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {key: archive[key] for key in archive.files}
        return json.loads(arrays.pop("tree").tobytes().decode()), arrays
    except Exception as exc:  # a damaged archive fails in many ways (BadZipFile, zlib.error, EOFError, ...)
        raise StoredRunError(f"the kept run's file '{path}' cannot be read ({exc})") from exc


class StoredSnapshot:
    """A snapshot in its file, read when a run continues from it (``load``, in the worker thread)."""

    def __init__(self, path):
        self.path = path

    def load(self, template):
        """The snapshot, its tuples of the types of ``template`` (the continuing Simulation's own snapshot)."""
        tree, arrays = _load_arrays(self.path)
        try:
            return unflatten(tree, arrays, template)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:  # (a tree of the wrong shape)
            raise StoredRunError(f"the kept run's snapshot '{self.path}' does not fit this solver: {exc}") from exc


def resolved(snapshot, sim):
    """The snapshot to restore ``sim`` from: a StoredSnapshot read, poured into ``sim``'s types."""
    return snapshot.load(sim.snapshot()) if isinstance(snapshot, StoredSnapshot) else snapshot


class StoredRecording:
    """A kept run's Recording in its file, its first ``frames`` frames: read in the worker thread, where a continued
    run joins it to its own frames (``load``), so that the main thread does not wait for a large one."""

    def __init__(self, path, frames, whole=True):
        self.path, self.frames, self.whole = path, frames, whole

    def truncated(self, frames):
        return StoredRecording(self.path, min(frames, self.frames), whole=frames >= self.frames and self.whole)

    def load(self, solver):
        tree, arrays = _load_arrays(self.path)
        try:
            recording = _recording(solver, unflatten(tree, arrays))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise StoredRunError(f"the kept run's recording '{self.path}' does not hold a recording: {exc}") from exc
        if recording.frames < self.frames:
            raise StoredRunError(f"the kept run's recording '{self.path}' holds {recording.frames} frames, not "
                                 f"{self.frames}")
        return recording.truncated(self.frames) if recording.frames > self.frames else recording


def loaded(recording, solver):
    """The Recording itself: a StoredRecording read."""
    return recording.load(solver) if isinstance(recording, StoredRecording) else recording


_RECORDING = ("fps", "body_names", "phases", "body_poses", "stats", "scene_hash", "ropes", "particle_groups")


def _recording(solver, fields):
    """A Recording of its fields (as _RECORDING lists them), its arrays' shapes checked against its frames."""
    poses, names = fields["body_poses"], fields["body_names"]
    frames = len(poses)
    if poses.ndim != 3 or poses.shape[1:] != (len(names), 7):
        raise ValueError(f"body_poses is {poses.shape}, not (frames, {len(names)} bodies, 7)")
    series = [*fields["stats"].values(), *(a for group in fields["ropes"] + fields["particle_groups"]
                                           for a in group.values() if isinstance(a, np.ndarray))]
    if any(len(a) != frames for a in series):
        raise ValueError(f"its statistics, ropes or particles do not hold {frames} frames")
    recording = solver.Recording(fields["fps"], names, tuple(fields["phases"]), poses, fields["stats"],
                                 fields["scene_hash"])
    recording.ropes, recording.particle_groups = fields["ropes"], fields["particle_groups"]
    return recording


# ------------------------------------------------------------------------------------ where and when
def _blend_folder():
    """The absolute folder beside the saved .blend that holds its kept runs, or None (the .blend not saved)."""
    import bpy

    if not bpy.data.filepath:
        return None
    blend = point_cache.safe_name(os.path.splitext(os.path.basename(bpy.data.filepath))[0])
    return bpy.path.abspath(f"//{point_cache.CACHE_FOLDER}/{blend}")


RUN_PREFIX = "resume-"  # a kept run's folder: the prefix, then its scene's resume_id


def _run_folder_name(scene):
    return RUN_PREFIX + point_cache.safe_name(scene.quadric.resume_id)


def folder(scene):
    """The absolute folder of the scene's kept run on disk, or None (the .blend not saved, or no run kept yet)."""
    above = _blend_folder()
    if above is None or not scene.quadric.resume_id:
        return None
    return os.path.join(above, _run_folder_name(scene))


def write_later(scene, resume_points):
    """Queue the run to be written to the scene's folder, a few MB a timer tick (at once in the background);
    nothing if the .blend is not saved yet or the run is queued there already. Returns the Writer or None."""
    target = folder(scene)
    if target is None:
        return None
    # the snapshots taken now: Clear Bake may empty the run's while this writes
    return _queued(Writer(target, resume_points.token,
                          write_steps(target, resume_points, dict(resume_points.snapshots))))


def copy_later(source, scene):
    """Queue a copy of the run in the folder ``source`` (the file's folder before it was saved under another name)
    to the scene's folder, a file a timer tick (at once in the background). Returns the Writer or None."""
    target = folder(scene)
    run = _read_json(os.path.join(source, RUN))
    if target is None or target == source or not run:
        return None
    return _queued(Writer(target, run.get("token"), copy_steps(source, target, run)))


def _queued(writer):
    """Queue the writer (after those of other folders; in place of an earlier run's for its folder), unless its run
    is queued for that folder already."""
    import bpy

    if any(w.target == writer.target and w.token == writer.token for w in _queue):
        return None
    for older in [w for w in _queue if w.target == writer.target]:  # superseded by this run
        older.cancel()
    _queue.append(writer)
    if bpy.app.background:
        wait()
    elif not bpy.app.timers.is_registered(_tick):
        bpy.app.timers.register(_tick, first_interval=0.0)
    return writer


def _tick():
    """The timer: the first queued writer goes on for a tick's budget; None (no more calls) once none is left."""
    if _queue and not _queue[0].stepper.advance():
        _queue.pop(0)
    return 0.0 if _queue else None


def wait():
    """Write everything queued at once (the background, tests)."""
    while _queue:
        _queue.pop(0).stepper.finish()


class Writer:
    """One run written into its folder (write_steps or copy_steps) a step at a time."""

    def __init__(self, target, token, steps):
        self.target, self.token = target, token
        self.stepper = ticks.Stepper(_reporting(steps, target))

    def cancel(self):
        """Stop now (the array being written is dropped) and leave the queue."""
        self.stepper.cancel()
        if self in _queue:
            _queue.remove(self)


def _reporting(steps, target):
    """The steps, a failure printed (a full or read-only disk, or a bug) rather than raised into the timer, which
    would stop every write queued after it: the run stays kept in memory."""
    try:
        yield from steps
    except Exception as exc:
        if not isinstance(exc, OSError):
            traceback.print_exc()
        print(f"Quadric Dynamics: the kept run could not be written to {target}: {exc}")


def write_steps(target, resume_points, snapshots=None):
    """Steps that write the run's files (its snapshots: ``snapshots`` if given) into ``target`` (made if needed),
    CHUNK bytes a step, then run.json naming them, then delete the files of an earlier run there."""
    os.makedirs(target, exist_ok=True)
    tag = uuid.uuid4().hex[:8]
    conv_file, recording_file = f"conv-{tag}.npz", f"recording-{tag}.npz"
    arrays = {}
    # the Conversion's tree and its JSON grow with the scene (10-25 ms each at 2,000 bodies in one step): an item
    # of its long lists a step
    conv = yield from flatten_steps(resume_points.conv, arrays)
    text = yield from json_steps(conv)
    yield from _save_arrays_steps(os.path.join(target, conv_file), text, arrays)
    recording = resume_points.recording
    if isinstance(recording, StoredRecording):  # read from disk: copied (a .blend saved under another name)
        shutil.copyfile(recording.path, os.path.join(target, recording_file))
    else:
        arrays = {}
        tree = flatten({name: getattr(recording, name) for name in _RECORDING}, arrays)
        yield from _save_arrays_steps(os.path.join(target, recording_file), json.dumps(tree), arrays)
    names = {}
    for index, snapshot in sorted((resume_points.snapshots if snapshots is None else snapshots).items()):
        if isinstance(snapshot, StoredSnapshot) and os.path.dirname(snapshot.path) == target:
            name = os.path.basename(snapshot.path)  # read from this folder, still here
        elif isinstance(snapshot, StoredSnapshot):
            name = f"snapshot-{index}-{tag}.npz"  # another .blend's folder (Save As)
            shutil.copyfile(snapshot.path, os.path.join(target, name))
        else:
            name = f"snapshot-{index}-{tag}.npz"
            arrays = {}
            yield from _save_arrays_steps(os.path.join(target, name), json.dumps(flatten(snapshot, arrays)), arrays)
        names[str(index)] = name
        yield
    run = dict(format=FORMAT, version=VERSION, token=resume_points.token, scene=resume_points.scene[0],
               settings=list(resume_points.settings), offset=resume_points.offset, stride=resume_points.stride,
               frames=recording.frames, conv=conv_file, recording=recording_file, snapshots=names)
    _commit(target, run)


def copy_steps(source, target, run):
    """Steps that copy the run ``run`` (its run.json, read) from the folder ``source`` into ``target``, a file a
    step, run.json last."""
    os.makedirs(target, exist_ok=True)
    for name in [run["conv"], run["recording"], *run["snapshots"].values()]:
        shutil.copyfile(_member(source, name), _member(target, name))
        yield
    _commit(target, run)


def _commit(target, run):
    """Write run.json in one replace, then delete the files it does not name (an earlier run's)."""
    part = os.path.join(target, f"{RUN}.part")
    with open(part, "w", encoding="utf-8") as handle:
        json.dump(run, handle, indent=1)
    os.replace(part, os.path.join(target, RUN))
    used = {RUN, run["conv"], run["recording"], *run["snapshots"].values()}
    for name in os.listdir(target):
        if name not in used:
            os.remove(os.path.join(target, name))


def read_run(scene):
    """The scene's run.json as a dict, None where there is none, {} where it cannot be read (read_steps says why)."""
    target = folder(scene)
    return None if target is None else _read_json(os.path.join(target, RUN))


def _read_json(path):
    """run.json at ``path`` as a dict, None where there is none, {} where it cannot be read."""
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            run = json.load(handle)
    except (OSError, ValueError):
        return {}
    return run if isinstance(run, dict) else {}


def written(scene, resume_points):
    """Whether the scene's folder holds this run already (run.json of its token)."""
    run = read_run(scene)
    return run is not None and run.get("token") == resume_points.token


def remove(scene):
    """Delete the scene's kept run on disk; returns whether there was one."""
    return _delete(folder(scene))


def prune(scenes):
    """Delete the kept runs beside the saved .blend that no scene of ``scenes`` (the file's) has an id for: those of
    deleted scenes, up to a hundred MB each. Returns their folders."""
    above = _blend_folder()
    if above is None or not os.path.isdir(above):
        return []
    held = {_run_folder_name(scene) for scene in scenes if scene.quadric.resume_id}
    doomed = [os.path.join(above, name) for name in sorted(os.listdir(above))
              if name.startswith(RUN_PREFIX) and name not in held]
    return [target for target in doomed if _delete(target)]


def _delete(target):
    """Cancel the writers of the run folder ``target`` and delete it, and the folders above it once empty; returns
    whether it was there."""
    for writer in [w for w in _queue if w.target == target]:
        writer.cancel()
    if target is None or not os.path.isdir(target):
        return False
    shutil.rmtree(target, ignore_errors=True)
    for above in (os.path.dirname(target), os.path.dirname(os.path.dirname(target))):  # <blend>/, quadric_cache/
        try:
            os.rmdir(above)  # once empty
        except OSError:
            break
    return True


def _member(target, name):
    """The path of a file run.json names: a plain name in its own folder, nothing elsewhere."""
    if not isinstance(name, str) or os.path.basename(name) != name or name in ("", ".", ".."):
        raise ValueError(f"run.json names {name!r}, not a file of its folder")
    return os.path.join(target, name)


def read_steps(scene, solver, make_points):
    """Steps (addon/ticks.py) that read the scene's kept run from disk: run.json and the Conversion (its Recording
    and snapshots are read in the worker thread of the run that continues it). Returns ``make_points(conv)``
    filled in (a resume.ResumePoints), or None where no run is on disk; StoredRunError where one is but cannot be
    read."""
    from . import convert

    target = folder(scene)
    path = os.path.join(target, RUN) if target is not None else None
    if path is None or not os.path.isfile(path):
        return None
    yield "reading the kept run", 0, 1
    try:
        with open(path, encoding="utf-8") as handle:
            run = json.load(handle)
        if run.get("format") != FORMAT or run.get("version") != VERSION:
            raise ValueError(f"it is not a kept run of version {VERSION}")
        tree, arrays = _load_arrays(_member(target, run["conv"]))
        classes = {cls.__name__: cls for cls in (convert.Conversion, convert.BodyBinding, convert.RopeBinding,
                                                 convert.GroupBinding)}
        conv = unflatten(tree, arrays, classes=classes, solver=solver)
        points = make_points(conv)
        if list(points.settings) != run["settings"]:
            raise ValueError("its settings are not its Conversion's")
        points.offset, points.stride, points.token = int(run["offset"]), int(run["stride"]), run["token"]
        points.snapshots = {int(k): StoredSnapshot(_member(target, name))
                            for k, name in run["snapshots"].items()}
        points.recording = StoredRecording(_member(target, run["recording"]), int(run["frames"]))
    except StoredRunError:
        raise
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:  # (JSON of the wrong shape too)
        raise StoredRunError(f"the kept run in '{target}' cannot be read ({type(exc).__name__}: {exc}); "
                             "Simulate again") from exc
    return points
