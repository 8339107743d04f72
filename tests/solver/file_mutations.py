"""Structure-aware mutations of scene and recording files, for the fuzz test and scripts/bench/fuzz_files.py.

A mutation is driven by ``choose(n)``, which returns an int in [0, n): in the test hypothesis draws
the choices (and shrinks a failure to the fewest), in the benchmark script a seeded random.Random.
The mutations know the files' structure: they delete keys and array members, swap types, put
indices out of range, insert NaN and huge values, duplicate list items, and truncate the bytes.
Only the public API is used, so the script also runs on older versions of the solver.
"""
import copy
import io
import json
import math
import os
import re
import tempfile
import warnings

import numpy as np

import quadric_solver as solver
from tests.helpers import line

HOSTILE = [math.nan, math.inf, -math.inf, 1e308, -1e308, 1e-320, 0, -1, 1, 999, -999, 10 ** 400, 0.5, "", "nope",
           "1.0", None, True, False, [], {}, [1, 2], [0, 0, 0], [[0, 0, 0]], {"x": 1}]
INDEX_KEYS = ("material", "pinned", "clamped", "attachments")
SCENE_OPERATIONS = ("delete", "replace", "swap_type", "out_of_range", "unknown_key", "duplicate", "truncate")
RECORDING_OPERATIONS = ("meta", "delete_member", "reshape", "nan", "retype", "unknown_member", "truncate",
                        "flip_byte")


def small_scene():
    """Bodies (one kinematic with a track), a rope tied to a body, a plane, a box and a tube, two materials."""
    scene = solver.Scene()
    rubber = solver.Material(friction=0.9, restitution=0.5)
    scene.add_plane(material=rubber, name="Ground")
    scene.add_box_container((2.0, 0.0, 0.5), (0.5, 0.5, 0.5), name="Crate")
    scene.add_tube((-2.0, 0.0, 0.5), (0.0, 0.0, 1.0), radius=0.4, length=1.0, name="Pipe")
    scene.add_ellipsoid((0.1, 0.08, 0.06), position=(0.0, 0.0, 0.3), name="Egg", material=rubber)
    scene.add_ellipsoid((0.1, 0.1, 0.1), position=(2.0, 0.0, 0.3), velocity=(0.0, 0.0, -1.0), name="Ball",
                        mass=2.0)
    mover = scene.add_ellipsoid((0.05, 0.05, 0.05), position=(0.5, 0.0, 0.3), name="Mover", kinematic=True)
    scene.set_kinematic_track(mover, [0.0, 1.0], [[0.5, 0, 0.3, 1, 0, 0, 0], [0.8, 0, 0.3, 1, 0, 0, 0]])
    points = line(4, (-0.6, 0.0, 0.8), (-0.2, 0.0, 0.8))
    scene.add_rope(points, pinned=(0,), name="Cable")
    scene.add_rope(points + [0.0, 0.5, 0.0], attachments=[(4, 0, (0.0, 0.0, 0.06))], name="Leash")
    return scene


def scene_document(scene):
    """The scene as a JSON tree (what Scene.save writes)."""
    return json.loads(json.dumps(scene.to_dict()))


def recording_members(scene, frames=4):
    """The members of a short recording of ``scene``'s run as saved, {name: array}, with meta as a dict."""
    recording = solver.Simulation(scene).run(frames=frames, fps=24, substeps=2)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "recording.npz")
        recording.save(path)
        with np.load(path, allow_pickle=False) as archive:
            members = {name: archive[name] for name in archive.files}
    members["meta"] = json.loads(str(members["meta"]))
    members["stats_phase_seconds"][:] = 1e-3  # timings vary from run to run; the mutations must not
    return members


# ------------------------------------------------------------------------------------------ trees
def _places(tree):
    """Every (container, key) of a JSON tree, depth first."""
    if isinstance(tree, dict):
        items = list(tree.items())
    elif isinstance(tree, list):
        items = list(enumerate(tree))
    else:
        return []
    places = []
    for key, child in items:
        places.append((tree, key))
        places.extend(_places(child))
    return places


def _index_places(tree):
    """Places of single values that index another list: material, pinned and clamped nodes, attachments."""
    places = []
    for container, key in _places(tree):
        if isinstance(container, dict) and key in INDEX_KEYS:
            places.extend([(container, key)] + _places(container[key]))
    return [(c, k) for c, k in places if not isinstance(c[k], (list, dict))]


def _swapped(value):
    """The same content as another JSON type."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return {str(k): item for k, item in enumerate(value)}
    if isinstance(value, dict):
        return list(value.values())
    return 0


def mutate_tree(tree, choose, operations):
    """Apply one mutation to a JSON tree in place; returns its name ('truncate' is left to the caller)."""
    operation = operations[choose(len(operations))]
    places = _places(tree)
    if operation == "truncate" or not places:
        return "truncate"
    container, key = places[choose(len(places))]
    if operation == "delete":
        del container[key]
    elif operation == "replace":
        container[key] = copy.deepcopy(HOSTILE[choose(len(HOSTILE))])
    elif operation == "swap_type":
        container[key] = _swapped(container[key])
    elif operation == "out_of_range":
        targets = _index_places(tree)
        if targets:
            container, key = targets[choose(len(targets))]
        container[key] = (999, -999, 3, -1, 1.5)[choose(5)]
    elif operation == "unknown_key":
        objects = [tree] + [c[k] for c, k in places if isinstance(c[k], dict)]
        objects[choose(len(objects))]["zz_unknown"] = 1
    elif operation == "duplicate":
        lists = [c[k] for c, k in places if isinstance(c[k], list) and c[k]]
        if lists:
            chosen = lists[choose(len(lists))]
            chosen.append(copy.deepcopy(chosen[choose(len(chosen))]))
    return operation


def _truncated(data: bytes, choose) -> bytes:
    return data[:choose(len(data))]


def mutated_scene_file(document, choose) -> tuple:
    """(bytes of a mutated scene file, names of the mutations): 1 to 3 mutations of a copy of ``document``."""
    tree = copy.deepcopy(document)
    names = [mutate_tree(tree, choose, SCENE_OPERATIONS) for _ in range(1 + choose(3))]
    data = json.dumps(tree, indent=1).encode("utf-8")
    if "truncate" in names:
        data = _truncated(data, choose)
    return data, names


def mutated_recording_file(members, choose) -> tuple:
    """(bytes of a mutated recording file, names of the mutations): 1 to 3 mutations of a copy of ``members``."""
    members = {name: copy.deepcopy(value) for name, value in members.items()}
    names = []
    for _ in range(1 + choose(3)):
        operation = RECORDING_OPERATIONS[choose(len(RECORDING_OPERATIONS))]
        names.append(operation)
        arrays = sorted(name for name in members if name != "meta")
        name = arrays[choose(len(arrays))] if arrays else None
        if operation == "meta" and isinstance(members.get("meta"), dict):
            names[-1] = "meta " + mutate_tree(members["meta"], choose, SCENE_OPERATIONS[:-1])
        elif operation == "delete_member":
            members.pop(name if choose(4) else "meta", None)
        elif operation == "reshape" and name and members[name].ndim:
            axis = choose(members[name].ndim)
            members[name] = np.delete(members[name], 0, axis=axis) if choose(2) else np.repeat(
                members[name], 2, axis=axis)
        elif operation == "nan" and name and members[name].size and members[name].dtype.kind == "f":
            flat = members[name].reshape(-1)
            with np.errstate(over="ignore"):
                flat[choose(flat.size)] = (math.nan, math.inf, -1e308)[choose(3)]
        elif operation == "retype" and name:
            value = members[name]
            members[name] = [value.astype(str), np.array([None] * 3, dtype=object), np.float64(7.0),
                             value.astype(np.float32) if value.dtype.kind in "biuf" else value][choose(4)]
        elif operation == "unknown_member":
            members["zz_unknown"] = np.zeros(3)
    meta = members.get("meta")
    if isinstance(meta, dict):
        members = {**members, "meta": np.array(json.dumps(meta))}
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **members)
    data = buffer.getvalue()
    if "truncate" in names:
        data = _truncated(data, choose)
    if "flip_byte" in names and data:
        k = choose(len(data))
        data = data[:k] + bytes([data[k] ^ 0xFF]) + data[k + 1:]
    return data, names


# --------------------------------------------------------------------------------------- outcomes
NAMES_A_PLACE = re.compile(r"\b(body|rope|plane|tube|box container|ellipsoid) ")


def outcome(action, path) -> tuple:
    """Run ``action()``; (the exception's type name or 'ok', whether it escaped, whether it is clear, message).

    An exception escapes unless it is a ValueError, the documented error type. It is clear if its message
    starts with the file's name (a SceneFileError, which names the JSON path too) or, for an error found
    while building a Simulation, names the body, rope or collider.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            action()
    except Exception as error:  # every kind counts: the point is to see which escape
        message = str(error)
        escaped = not isinstance(error, ValueError)
        clear = not escaped and (message.startswith(str(path)) or NAMES_A_PLACE.search(message) is not None)
        return type(error).__name__, escaped, clear, message
    return "ok", False, True, ""


def load_scene_and_build(path):
    """What `python -m quadric_solver run` does with a scene file before simulating."""
    solver.Simulation(solver.Scene.load(path))


def load_recording(path):
    solver.Recording.load(path)
