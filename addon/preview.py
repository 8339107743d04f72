"""Live preview: while a run goes on, its newest finished frame is shown on the bodies' objects and the ropes'
bones, and scrubbing the timeline over the finished frames shows each; ending it puts back every transform,
rotation mode and action it changed, so only the bake that follows changes the file.

The frames come from the job's FinishedFrames (addon/job.py), copied in the worker as each frame ends. The
modal timer shows at most one frame per tick (`advance`), a frame-change handler the scrubbed one. While the
preview is live the objects' actions (an earlier bake's) are taken off, or their fcurves would override the
shown pose on every frame change. Particle groups and soft bodies are not previewed: their point caches are
written once the run ends.
"""
import bpy
import numpy as np

from ..solver import rotations
from . import bake
from . import keyframes_compat as kc

_live = None  # the LivePreview being shown (the frame-change handler and the timer read it)

_OBJECT_FIELDS = ("location", "rotation_quaternion", "rotation_euler", "rotation_axis_angle")


def _saved(item):
    """What the preview may change on an object or pose bone: rotation mode, then the values of every mode
    (setting a mode converts the rotation, so all of them are put back after it)."""
    return item.rotation_mode, [tuple(getattr(item, name)) for name in _OBJECT_FIELDS]


def _restore(item, saved):
    mode, values = saved
    item.rotation_mode = mode
    for name, value in zip(_OBJECT_FIELDS, values):
        setattr(item, name, value)


class LivePreview:
    def __init__(self, scene, conv, job):
        self.scene = scene
        self.frame_start = conv.frame_start
        self.job = job
        self.shown = -1          # the frame index shown (-1: none yet)
        self.follow = True       # show the newest frame; False while the timeline is on an earlier finished one
        objects = dict(bpy.data.objects.items())
        bound = [(b, objects.get(b.object_name)) for b in conv.bodies]
        bound = [(b, obj) for b, obj in bound if obj is not None]
        self.bodies = [obj for _, obj in bound]
        self.index = np.array([b.index for b, _ in bound], dtype=np.int64)
        self.offset_location = np.array([b.offset_location for b, _ in bound], dtype=np.float64).reshape(-1, 3)
        self.offset_rotation = np.array([b.offset_rotation for b, _ in bound], dtype=np.float64).reshape(-1, 4)
        self.ropes = [(objects[r.armature_name], r) for r in conv.ropes if r.armature_name in objects]
        self._saved = []  # (object or pose bone, saved values)
        self._actions = []  # (ID, what detach_action returned)
        for obj in self.bodies + [arm for arm, _ in self.ropes]:
            self._actions.append((obj, kc.detach_action(obj)))
            self._saved.append((obj, _saved(obj)))
        for arm, rope in self.ropes:
            for name in rope.bone_names:
                bone = arm.pose.bones[name]
                self._saved.append((bone, _saved(bone)))
                bone.rotation_mode = 'QUATERNION'
        for obj in self.bodies:
            obj.rotation_mode = 'QUATERNION'

    def frames_done(self):
        live = self.job.live
        return 0 if live is None else live.count

    def target(self):
        """The frame index to show: the newest finished, or the scrubbed one."""
        done = self.frames_done()
        if not done:
            return -1
        if self.follow:
            return done - 1
        return min(self.scene.frame_current - self.frame_start, done - 1)

    def advance(self):
        """Show the frame to show if it is not shown yet; True if one was applied."""
        frame = self.target()
        if frame < 0 or frame == self.shown:
            return False
        self.show(frame)
        return True

    def scrub(self, frame_current):
        """The timeline moved: follow the newest frame unless it is on an earlier finished one."""
        k = frame_current - self.frame_start
        self.follow = not 0 <= k < self.frames_done() - 1
        self.advance()

    def show(self, k):
        """Apply finished frame k to the objects and bones (passing over those deleted meanwhile)."""
        try:
            self._apply(k)
        except ReferenceError:
            self._drop_deleted()
            self._apply(k)

    def _drop_deleted(self):
        def alive(item):
            try:
                return bool(item.name)
            except ReferenceError:
                return False

        keep = [j for j, obj in enumerate(self.bodies) if alive(obj)]
        self.bodies = [self.bodies[j] for j in keep]
        self.index, self.offset_location, self.offset_rotation = (
            self.index[keep], self.offset_location[keep], self.offset_rotation[keep])
        self.ropes = [(arm, rope) for arm, rope in self.ropes if alive(arm)]

    def _apply(self, k):
        live = self.job.live
        poses = live.body_poses[k, self.index]
        if len(poses):
            rot = rotations.mul(poses[:, 3:], rotations.conj(self.offset_rotation))
            loc = poses[:, :3] - rotations.rotate(rot, self.offset_location)
            for obj, location, rotation in zip(self.bodies, loc.tolist(), rot.tolist()):
                obj.location = location
                obj.rotation_quaternion = rotation
        for arm, rope in self.ropes:
            locs, rots = bake.bone_local_poses(arm, rope.bone_names, live.rope_nodes[rope.index][k:k + 1],
                                               live.rope_segments[rope.index][k:k + 1])
            for j, name in enumerate(rope.bone_names):
                bone = arm.pose.bones[name]
                bone.location = locs[0, j].tolist()
                bone.rotation_quaternion = rots[0, j].tolist()
        self.shown = k

    def end(self):
        """Put back what the preview changed (objects deleted meanwhile are passed over)."""
        for item, saved in reversed(self._saved):
            try:
                _restore(item, saved)
            except ReferenceError:
                pass
        for obj, held in self._actions:
            try:
                kc.reattach_action(obj, held)
            except ReferenceError:
                pass


def start(context, conv, job):
    """Begin previewing a started job's frames in the context's scene (ending any preview still live)."""
    global _live
    end()
    _live = LivePreview(context.scene, conv, job)
    bpy.app.handlers.frame_change_post.append(_on_frame_change)
    return _live


def live():
    return _live


def advance():
    """The timer's part: show at most one frame (the newest finished, or the scrubbed one)."""
    return _live is not None and _live.advance()


def end():
    """Stop previewing: restore the objects, remove the handler. Safe to call when nothing is live."""
    global _live
    if _on_frame_change in bpy.app.handlers.frame_change_post:
        bpy.app.handlers.frame_change_post.remove(_on_frame_change)
    preview, _live = _live, None
    if preview is not None:
        preview.end()


def _on_frame_change(scene, depsgraph=None):
    if _live is not None and scene == _live.scene:
        _live.scrub(scene.frame_current)
