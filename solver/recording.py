"""Recording: per-frame results of a run (frames only, not substeps)."""
from __future__ import annotations

import json

import numpy as np

RECORDING_FORMAT = "quadric-dynamics-recording"


class Recording:
    """Body poses and statistics per frame; frame 0 is the initial state.

    body_poses: (frames, N, 7) position and quaternion (w, x, y, z)
    stats: dict of per-frame arrays: contacts, max_penetration, kinetic_energy,
        and phase_seconds (frames, phases) with the phase names in ``phases``.
    """

    def __init__(self, fps: float, body_names: list, phases: tuple, body_poses=None, stats=None):
        self.fps = float(fps)
        self.body_names = list(body_names)
        self.phases = tuple(phases)
        self.body_poses = body_poses if body_poses is not None else np.zeros((0, len(body_names), 7))
        self.stats = stats if stats is not None else {
            "contacts": np.zeros(0, dtype=np.int64), "max_penetration": np.zeros(0),
            "kinetic_energy": np.zeros(0), "phase_seconds": np.zeros((0, len(phases)))}
        self.ropes: list[dict] = []  # ROPE HOOK: per-rope name, nodes (F, n, 3), segments (F, n-1, 4)

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
        recording = Recording(self.fps, self.body_names, self.phases, self.body_poses[:frames], stats)
        recording.ropes = [dict(name=r["name"], nodes=r["nodes"][:frames], segments=r["segments"][:frames])
                           for r in self.ropes]
        return recording

    def save(self, path) -> None:
        meta = dict(format=RECORDING_FORMAT, version=1, fps=self.fps, body_names=self.body_names,
                    phases=list(self.phases), rope_names=[r["name"] for r in self.ropes])
        arrays = {f"stats_{key}": value for key, value in self.stats.items()}
        for k, rope in enumerate(self.ropes):
            arrays[f"rope{k}_nodes"] = rope["nodes"]
            arrays[f"rope{k}_segments"] = rope["segments"]
        with open(path, "wb") as handle:
            np.savez_compressed(handle, meta=np.array(json.dumps(meta)), body_poses=self.body_poses, **arrays)

    @classmethod
    def load(cls, path) -> "Recording":
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            if meta.get("format") != RECORDING_FORMAT:
                raise ValueError(f"{path}: not a Quadric Dynamics recording")
            stats = {key[len("stats_"):]: data[key] for key in data.files if key.startswith("stats_")}
            recording = cls(meta["fps"], meta["body_names"], tuple(meta["phases"]), data["body_poses"], stats)
            recording.ropes = [dict(name=name, nodes=data[f"rope{k}_nodes"], segments=data[f"rope{k}_segments"])
                               for k, name in enumerate(meta.get("rope_names", []))]
            return recording
