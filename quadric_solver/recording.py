"""Recording: per-frame results of a run (frames only, not substeps), saved as a .npz archive.

The archive holds ``meta`` (a JSON string: format, version, fps, names, the scene's content hash)
and one array per quantity. Loading checks it against that schema: a SceneFileError names the file
and the member (``meta.fps``, ``body_poses``) with what was expected and what was found.
"""
from __future__ import annotations

import json
import warnings

import numpy as np

from .validate import (SceneFileError, array, at, describe, file_header, file_list, file_object, number,
                       write_atomically)

RECORDING_FORMAT = "quadric-dynamics-recording"
RECORDING_VERSION = 2  # version 1 files have no meta.scene_sha256
STATS = ("contacts", "max_penetration", "kinetic_energy", "phase_seconds")


class Recording:
    """Body poses and statistics per frame; frame 0 is the initial state.

    body_poses: (frames, N, 7) position and quaternion (w, x, y, z)
    stats: dict of per-frame arrays: contacts, max_penetration, kinetic_energy,
        and phase_seconds (frames, phases) with the phase names in ``phases``.
    scene_hash: ``Scene.content_hash()`` of the simulated scene (None in recordings of version 1).
    ropes: per rope, its name, nodes (F, n, 3) and segments (F, n-1, 4);
    particle_groups: per particle group or mass-spring body, its name and positions (F, n, 3).
    """

    def __init__(self, fps: float, body_names: list, phases: tuple, body_poses=None, stats=None, scene_hash=None):
        self.fps = float(fps)
        self.body_names = list(body_names)
        self.phases = tuple(phases)
        self.body_poses = body_poses if body_poses is not None else np.zeros((0, len(body_names), 7))
        self.stats = stats if stats is not None else {
            "contacts": np.zeros(0, dtype=np.int64), "max_penetration": np.zeros(0),
            "kinetic_energy": np.zeros(0), "phase_seconds": np.zeros((0, len(phases)))}
        self.scene_hash = scene_hash
        self.ropes: list[dict] = []  # per rope: name, nodes (F, n, 3), segments (F, n-1, 4)
        self.particle_groups: list[dict] = []  # per group: name, positions (F, n, 3)

    def particles(self, group: int) -> np.ndarray:
        """Particle positions of group ``group`` (a particle group or mass-spring body) per frame: (frames, n, 3)."""
        return self.particle_groups[group]["positions"]

    def rope_nodes(self, rope: int) -> np.ndarray:
        """Node positions of rope ``rope`` per frame: (frames, n, 3)."""
        return self.ropes[rope]["nodes"]

    def rope_segments(self, rope: int) -> np.ndarray:
        """Segment quaternions (w, x, y, z) per frame, third axis along the segment: (frames, n-1, 4)."""
        return self.ropes[rope]["segments"]

    @property
    def frames(self) -> int:
        return self.body_poses.shape[0]

    @property
    def times(self) -> np.ndarray:
        return np.arange(self.frames) / self.fps

    def truncated(self, frames: int) -> "Recording":
        """The first ``frames`` frames (used to hand back finished frames of a failed run)."""
        stats = {key: value[:frames] for key, value in self.stats.items()}
        recording = Recording(self.fps, self.body_names, self.phases, self.body_poses[:frames], stats,
                              self.scene_hash)
        recording.ropes = [dict(name=r["name"], nodes=r["nodes"][:frames], segments=r["segments"][:frames])
                           for r in self.ropes]
        recording.particle_groups = [dict(name=g["name"], positions=g["positions"][:frames])
                                     for g in self.particle_groups]
        return recording

    def mismatches(self, scene) -> list:
        """How the bodies, ropes and particle groups of this recording differ from ``scene``'s, one line each
        ([] if they match)."""
        problems = []
        for kind, recorded, expected in (
                ("bodies", self.body_names, [body["name"] for body in scene.bodies]),
                ("ropes", [r["name"] for r in self.ropes], [rope["name"] for rope in scene.ropes]),
                ("particle groups", [g["name"] for g in self.particle_groups],
                 [group["name"] for group in scene.particles])):
            if recorded == expected:
                continue
            missing = [name for name in expected if name not in recorded]
            extra = [name for name in recorded if name not in expected]
            if missing:
                problems.append(f"{kind} of the scene missing from the recording: {_names(missing)}")
            if extra:
                problems.append(f"{kind} in the recording that the scene does not have: {_names(extra)}")
            if not missing and not extra:
                problems.append(f"{kind} in another order: the recording has {_names(recorded)}, "
                                f"the scene {_names(expected)}")
        for k, (recorded, rope) in enumerate(zip(self.ropes, scene.ropes)):
            if recorded["name"] == rope["name"] and recorded["nodes"].shape[1] != len(rope["points"]):
                problems.append(f"rope {k} ({rope['name']!r}) has {recorded['nodes'].shape[1]} nodes in the "
                                f"recording but {len(rope['points'])} in the scene")
        for k, (recorded, group) in enumerate(zip(self.particle_groups, scene.particles)):
            n = len(group["positions"] if group["kind"] == "particles" else group["vertices"])
            if recorded["name"] == group["name"] and recorded["positions"].shape[1] != n:
                problems.append(f"{scene.group_label(k)} has {recorded['positions'].shape[1]} particles in the "
                                f"recording but {n} in the scene")
        return problems

    def save(self, path) -> None:
        """Write the .npz archive; the file is replaced whole, so a failed save keeps the previous one."""
        meta = dict(format=RECORDING_FORMAT, version=RECORDING_VERSION, fps=self.fps, body_names=self.body_names,
                    phases=list(self.phases), rope_names=[r["name"] for r in self.ropes],
                    scene_sha256=self.scene_hash)
        if self.particle_groups:  # only where there are any, as older readers warn about keys they do not know
            meta["particle_names"] = [g["name"] for g in self.particle_groups]
        arrays = {f"stats_{key}": value for key, value in self.stats.items()}
        for k, rope in enumerate(self.ropes):
            arrays[f"rope{k}_nodes"] = rope["nodes"]
            arrays[f"rope{k}_segments"] = rope["segments"]
        for k, group in enumerate(self.particle_groups):
            arrays[f"particles{k}_positions"] = group["positions"]
        write_atomically(path, lambda handle: np.savez_compressed(
            handle, meta=np.array(json.dumps(meta)), body_poses=self.body_poses, **arrays))

    @classmethod
    def load(cls, path) -> "Recording":
        """Read a recording written by ``save``; SceneFileError names the file and the member of a problem."""
        members = _read_archive(path)
        meta = _read_meta(path, members)
        names = meta["body_names"]
        poses = members.get("body_poses")
        frames = poses.shape[0] if poses is not None and poses.ndim == 3 else 0
        _member(path, members, "body_poses", (frames, len(names), 7), f"(frames, {len(names)} bodies, 7) poses")
        stats = {key: _member(path, members, f"stats_{key}",
                              (frames, len(meta["phases"])) if key == "phase_seconds" else (frames,),
                              f"{frames} frames of {key}") for key in STATS}
        recording = cls(meta["fps"], names, tuple(meta["phases"]), poses, stats, meta["scene_sha256"])
        for k, name in enumerate(meta["rope_names"]):
            nodes = _member(path, members, f"rope{k}_nodes", (frames, None, 3), f"{frames} frames of (n, 3) nodes")
            n = nodes.shape[1]
            if n < 2:
                raise SceneFileError(path, f"rope{k}_nodes", f"must hold at least 2 nodes per frame, got {n}")
            segments = _member(path, members, f"rope{k}_segments", (frames, n - 1, 4),
                               f"{frames} frames of {n - 1} segment quaternions")
            recording.ropes.append(dict(name=name, nodes=nodes, segments=segments))
        for k, name in enumerate(meta["particle_names"]):
            positions = _member(path, members, f"particles{k}_positions", (frames, None, 3),
                                f"{frames} frames of (n, 3) particle positions")
            recording.particle_groups.append(dict(name=name, positions=positions))
        known = {"meta", "body_poses", *(f"stats_{key}" for key in STATS),
                 *(f"rope{k}_{part}" for k in range(len(meta["rope_names"])) for part in ("nodes", "segments")),
                 *(f"particles{k}_positions" for k in range(len(meta["particle_names"])))}
        for member in members:
            if member not in known:
                warnings.warn(f"{path}: {member} is not a known member of a recording; ignored", stacklevel=2)
        return recording


def _names(names) -> str:
    return ", ".join(repr(name) for name in names)


def _read_archive(path) -> dict:
    """Every array of the archive; SceneFileError if it is no readable .npz archive (OSError if it cannot be opened)."""
    with open(path, "rb") as handle:
        # a damaged archive can fail in numpy's or zipfile's parsers in many ways: all of them mean the same here
        try:
            archive = np.load(handle, allow_pickle=False)
        except Exception as error:
            raise SceneFileError(path, "", f"not a readable recording (.npz archive; truncated or damaged?): "
                                           f"{error}") from None
        if not isinstance(archive, np.lib.npyio.NpzFile):
            raise SceneFileError(path, "", "not a recording: a single .npy array, not an .npz archive")
        members = {}
        with archive:
            for name in archive.files:
                try:
                    members[name] = archive[name]
                except Exception as error:
                    raise SceneFileError(path, name, f"cannot be read (truncated or damaged?): {error}") from None
    return members


def _read_meta(path, members) -> dict:
    """The checked ``meta`` JSON of an archive."""
    if "meta" not in members:
        raise SceneFileError(path, "meta", "is missing: not a Quadric Dynamics recording")
    raw = members["meta"]
    if raw.shape != () or raw.dtype.kind != "U":
        raise SceneFileError(path, "meta", f"must be a JSON string, got a {raw.dtype} array of shape {raw.shape}")
    try:
        data = json.loads(str(raw))
    except (ValueError, RecursionError) as error:
        raise SceneFileError(path, "meta", f"is not valid JSON: {error}") from None
    version = file_header(path, "meta", data, RECORDING_FORMAT, RECORDING_VERSION, "recording")
    meta = file_object(path, "meta", data, ("format", "version", "fps", "body_names", "phases"),
                       ("rope_names", "scene_sha256", "particle_names"))
    if version >= 2 and "scene_sha256" not in meta:
        raise SceneFileError(path, "meta.scene_sha256", "is missing")
    meta.setdefault("scene_sha256", None)
    with at(path, "meta"):
        meta["fps"] = number("meta", "fps", meta["fps"], positive=True)
    for key, allowed, what in (("body_names", (str, type(None)), "a name or null"),
                               ("phases", (str,), "a phase name"),
                               ("rope_names", (str, type(None)), "a name or null"),
                               ("particle_names", (str, type(None)), "a name or null")):
        for k, item in enumerate(file_list(path, f"meta.{key}", meta.setdefault(key, []))):
            if not isinstance(item, allowed):
                raise SceneFileError(path, f"meta.{key}[{k}]", f"must be {what}, got {describe(item)}")
    digest = meta.get("scene_sha256")
    if digest is not None and not (isinstance(digest, str) and len(digest) == 64
                                   and all(c in "0123456789abcdef" for c in digest)):
        raise SceneFileError(path, "meta.scene_sha256", f"must be 64 hex digits or null, got {describe(digest)}")
    return meta


def _member(path, members, name, shape, what) -> np.ndarray:
    """The array ``name`` as stored, checked to be finite numbers of ``shape`` (None: any length there)."""
    if name not in members:
        raise SceneFileError(path, name, "is missing")
    with at(path, ""):
        array("recording", name, members[name], shape, what)
    return members[name]
