"""Live preview: while a run goes on, its newest finished frame is shown on the bodies' objects, the ropes' bones
and the particle groups' and soft bodies' points, and scrubbing the timeline over the finished frames shows
each; ending it puts back every transform, rotation mode, action, vertex and modifier it changed, and deletes
what it made, so only the bake that follows changes the file.

The frames come from the job's FinishedFrames (addon/job.py), copied in the worker as each frame ends; the main
thread never waits for the worker. The modal timer shows the frame to show a tick's budget at a time
(ticks.TICK_BUDGET): the bodies in chunks, then each rope, then each group, so a frame of thousands of objects is
shown over as many ticks as it takes (the frame is finished before a newer one is begun; a scrub begins the
scrubbed one at once). Bodies are written in bulk: location and rotation_quaternion of all objects at once
(``bpy.data.objects.foreach_set``, which sets no update), then each shown object is tagged for its transform
(``update_tag``), about a microsecond each, where assigning the two properties took four. While the preview is
live the objects' actions (an earlier bake's) are taken off, or their fcurves would override the shown pose on
every frame change.

A group's points are written into the mesh of what displays it: a soft body's own mesh (in its axes, as its
point cache plays them; not a mesh other objects share, nor one with shape keys, whose keys would override the
vertices); a particle group's particles object from an earlier bake when it has as many points, else a particles
object made for the preview (particle_display) and deleted after. The Mesh Cache modifier of an earlier bake is
held off meanwhile.
"""
import bpy
import numpy as np

from quadric_solver import rotations
from . import bake, particle_bake, particle_display
from . import blender_compat as compat
from . import ticks

_live = None  # the LivePreview being shown (the frame-change handler and the timer read it)

_OBJECT_FIELDS = ("location", "rotation_quaternion", "rotation_euler", "rotation_axis_angle")
# what the preview changes on a body's object, and the width of each in a foreach array; the mode first: setting
# it (foreach_set too) converts the rotation into the new mode's values, which the saved ones then replace
_BODY_FIELDS = (("rotation_mode", 1), ("location", 3), ("rotation_quaternion", 4), ("rotation_euler", 3),
                ("rotation_axis_angle", 4))
_TRANSFORM = {'OBJECT'}  # update_tag: the object's transform changed
_POSE = {'DATA'}         # update_tag: an armature's pose changed
CHUNK = 64               # bodies tagged between two looks at the clock


def _saved(item):
    """What the preview may change on a pose bone: rotation mode, then the values of every mode (setting a mode
    converts the rotation, so all of them are put back after it)."""
    return item.rotation_mode, [tuple(getattr(item, name)) for name in _OBJECT_FIELDS]


def _restore(item, saved):
    mode, values = saved
    item.rotation_mode = mode
    for name, value in zip(_OBJECT_FIELDS, values):
        setattr(item, name, value)


def _alive(item):
    try:
        return bool(item.name)
    except ReferenceError:
        return False


def _key(obj):
    return obj.session_uid if compat.SESSION_UID else obj.name


def _all_keys():
    objects = bpy.data.objects
    if not compat.SESSION_UID:
        return np.array(objects.keys())
    keys = np.empty(len(objects), dtype=np.int64)
    objects.foreach_get("session_uid", keys)
    return keys


def _read(name, width):
    """A property of every object in bpy.data.objects, one row each (float32; rotation_mode as int32)."""
    objects = bpy.data.objects
    values = np.empty(len(objects) * width, dtype=np.int32 if name == "rotation_mode" else np.float32)
    objects.foreach_get(name, values)
    return values.reshape(len(objects), width)


def _write(name, values):
    bpy.data.objects.foreach_set(name, values.ravel())


class _Slots:
    """Where some objects sit in bpy.data.objects, whose foreach arrays are in that order: found by session_uid
    (or name), again only when the collection changed."""

    def __init__(self, objects):
        self.keys = np.array([_key(obj) for obj in objects])
        self.slots = np.full(len(self.keys), -1, dtype=np.int64)
        self._all = None

    def find(self):
        """Each object's slot, -1 for one deleted since."""
        keys = _all_keys()
        if self._all is not None and len(keys) == len(self._all) and np.array_equal(keys, self._all):
            return self.slots
        self._all = keys
        if not len(keys) or not len(self.keys):
            self.slots = np.full(len(self.keys), -1, dtype=np.int64)
            return self.slots
        order = np.argsort(keys, kind="stable")
        at = np.searchsorted(keys[order], self.keys).clip(0, len(keys) - 1)
        self.slots = np.where(keys[order][at] == self.keys, order[at], -1)
        return self.slots

    def keep(self, kept):
        self.keys, self.slots = self.keys[kept], self.slots[kept]


class _Frame:
    """A finished frame being shown, part by part over as many ticks as it takes."""

    def __init__(self, k, location, rotation):
        self.k = k
        self.location, self.rotation = location, rotation  # float32 (n, 3), (n, 4): the bodies' objects
        self.body = self.rope = self.group = 0  # how many of each are shown


def _set_positions(mesh, positions):
    """Write a mesh's vertex positions (float32, in one call) and tell Blender they changed.

    Through the "position" attribute: ``vertices.foreach_set("co")`` goes vertex by vertex (15 ms for 100,000
    points, against 0.6). The attribute's foreach_set invalidates nothing, and Mesh.update leaves the bounds
    cached: assigning one vertex its own position tags them all as changed (bounds and normals)."""
    attribute = mesh.attributes.get("position")
    if attribute is None or attribute.data_type != 'FLOAT_VECTOR' or attribute.domain != 'POINT':
        mesh.vertices.foreach_set("co", np.ravel(positions))
    else:
        attribute.data.foreach_set("vector", np.ravel(positions))
        if len(mesh.vertices):
            vertex = mesh.vertices[0]
            vertex.co = vertex.co
    mesh.update()


class _Points:
    """A particle group or soft body shown during the preview (the module's docstring)."""

    def __init__(self, number, binding, source):
        self.number = number     # its place in FinishedFrames.groups
        self.binding = binding
        self.source = source
        self.target = None       # the object whose mesh shows the points
        self.made = False        # the target was made for the preview
        self.made_group = False  # and with it the shared node group
        self.saved = None        # the target mesh's vertices before the preview
        self.held = None         # (Mesh Cache modifier, its show_viewport) held off
        self.note = ""           # why it is not previewed
        if binding.kind == 'SOFT_BODY':
            mesh = source.data
            if mesh.users > 1:
                self.note = f"its mesh '{mesh.name}' is shared with other objects"
            elif mesh.shape_keys is not None:
                self.note = "its mesh has shape keys"
            else:
                self._take(source)
        else:
            output = source.quadric.particles.output_object
            if output is not None and output.type == 'MESH' and output.data.users == 1 and \
                    len(output.data.vertices) == len(binding.radii):
                self._take(output)

    def _take(self, target):
        mesh = target.data
        self.target = target
        self.saved = np.empty(3 * len(mesh.vertices), dtype=np.float32)
        mesh.vertices.foreach_get("co", self.saved)
        modifier = target.modifiers.get(particle_bake.CACHE_MODIFIER)
        if modifier is not None and modifier.type == 'MESH_CACHE' and modifier.show_viewport:
            self.held = modifier, modifier.show_viewport
            modifier.show_viewport = False

    def show(self, live, k):
        """Write frame k's points (or the kept frame before it); False when it is being written (next tick)."""
        if self.note:
            return True
        got = live.particles(self.number, k)
        if got is None:
            return False
        positions = got[1]
        if self.target is None:  # a particle group without a particles object that fits: make one
            self.made_group = bpy.data.node_groups.get(particle_display.NODE_GROUP) is None
            self.target = particle_display.particles_object(self.source, None, positions, self.binding.radii)
            self.made = True
            return True
        _set_positions(self.target.data, positions)
        return True

    def end(self):
        """Put back the vertices and the modifier, or delete what was made."""
        if self.target is None:
            return
        try:
            if self.made:
                particle_display.remove_object(self.target)
                group = bpy.data.node_groups.get(particle_display.NODE_GROUP)
                if self.made_group and group is not None and group.users == 0:
                    bpy.data.node_groups.remove(group)
                return
            _set_positions(self.target.data, self.saved)
            if self.held is not None:
                self.held[0].show_viewport = self.held[1]
        except ReferenceError:  # deleted meanwhile
            pass


class LivePreview:
    def __init__(self, scene, conv, job):
        self.scene = scene
        self.frame_start = conv.frame_start
        self.job = job
        self.shown = -1          # the frame index shown (-1: none yet)
        self.follow = True       # show the newest frame; False while the timeline is on an earlier finished one
        self._frame = None       # the _Frame being shown
        self.writes = 0          # calls of advance that wrote part of a frame
        self.frames_completed = 0  # frames shown whole
        objects = dict(bpy.data.objects.items())
        bound = [(b, objects.get(b.object_name)) for b in conv.bodies]
        bound = [(b, obj) for b, obj in bound if obj is not None]
        self.bodies = [obj for _, obj in bound]
        self.index = np.array([b.index for b, _ in bound], dtype=np.int64)
        self.offset_location = np.array([b.offset_location for b, _ in bound], dtype=np.float64).reshape(-1, 3)
        self.offset_rotation = np.array([b.offset_rotation for b, _ in bound], dtype=np.float64).reshape(-1, 4)
        self.ropes = [(objects[r.armature_name], r) for r in conv.ropes if r.armature_name in objects]
        self._actions = []  # (ID, what detach_action returned)
        for obj in self.bodies + [arm for arm, _ in self.ropes]:
            self._actions.append((obj, compat.detach_action(obj)))
        self._slots = _Slots(self.bodies)
        slots = self._slots.find()
        self._body_saved = {name: _read(name, width)[slots] for name, width in _BODY_FIELDS}
        self._tags = [obj.update_tag for obj in self.bodies]
        self._saved = []  # (object or pose bone, saved values): the ropes' armatures and bones
        for arm, rope in self.ropes:
            self._saved.append((arm, _saved(arm)))
            for name in rope.bone_names:
                bone = arm.pose.bones[name]
                self._saved.append((bone, _saved(bone)))
                bone.rotation_mode = 'QUATERNION'
        self._bone_slots = [np.array([list(arm.pose.bones.keys()).index(name) for name in rope.bone_names])
                            for arm, rope in self.ropes]
        for obj in self.bodies:
            obj.rotation_mode = 'QUATERNION'
        self.groups = [_Points(number, b, objects[b.object_name]) for number, b in enumerate(conv.groups)
                       if b.object_name in objects]
        self.notes = [f"'{g.source.name}' is not previewed: {g.note}" for g in self.groups if g.note]

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

    def advance(self, budget=None):
        """Go on showing the frame to show for about ``budget`` seconds (ticks.TICK_BUDGET); True if anything was
        written.

        A frame begun is finished first while following the run (a newer frame waits for it); a scrub to
        another frame begins that one at once."""
        frame = self.target()
        if self._frame is None or (self._frame.k != frame and not self.follow):
            if frame < 0 or (frame == self.shown and self._frame is None):
                return False
            self._frame = self._begin(frame)
        self.writes += 1
        if self._show(self._frame, ticks.Deadline(ticks.TICK_BUDGET if budget is None else budget)):
            self.shown, self._frame = self._frame.k, None
            self.frames_completed += 1
        return True

    def scrub(self, frame_current):
        """The timeline moved: follow the newest frame unless it is on an earlier finished one."""
        k = frame_current - self.frame_start
        self.follow = not 0 <= k < self.frames_done() - 1
        self.advance()

    def show(self, k):
        """Show finished frame k at once (scripts and tests; the timer goes a budget at a time)."""
        self._frame = None
        frame = self._begin(k)
        while not self._show(frame, ticks.Deadline(float("inf"))):
            pass
        self.shown = k

    def _begin(self, k):
        poses = self.job.live.body_poses[k, self.index]
        rot = rotations.mul(poses[:, 3:], rotations.conj(self.offset_rotation))
        loc = poses[:, :3] - rotations.rotate(rot, self.offset_location)
        return _Frame(k, loc.astype(np.float32), rot.astype(np.float32))

    def _keep_bodies(self, kept, frame):
        """Pass over the bodies whose objects were deleted meanwhile (kept: a mask of the others)."""
        self.bodies = [obj for obj, keep in zip(self.bodies, kept) if keep]
        self._tags = [tag for tag, keep in zip(self._tags, kept) if keep]
        self.index, self.offset_location, self.offset_rotation = (
            self.index[kept], self.offset_location[kept], self.offset_rotation[kept])
        self._body_saved = {name: values[kept] for name, values in self._body_saved.items()}
        self._slots.keep(kept)
        frame.body = int(kept[:frame.body].sum())
        frame.location, frame.rotation = frame.location[kept], frame.rotation[kept]

    def _show(self, frame, deadline):
        """Write the parts of ``frame`` not written yet until the deadline; True once all are."""
        live = self.job.live
        if frame.body < len(self.bodies):
            slots = self._slots.find()
            if (slots < 0).any():
                self._keep_bodies(slots >= 0, frame)
                slots = self._slots.slots
            i0 = i = frame.body
            try:
                while i < len(self.bodies):
                    j = min(len(self.bodies), i + CHUNK)
                    for tag in self._tags[i:j]:
                        tag(refresh=_TRANSFORM)
                    i = j
                    if deadline.passed():
                        break
            except ReferenceError:  # an object replaced (undo) or deleted: pass over it, write them next tick
                self._keep_bodies(np.array([_alive(obj) for obj in self.bodies], dtype=bool), frame)
                return False
            for name, values in (("location", frame.location), ("rotation_quaternion", frame.rotation)):
                every = _read(name, values.shape[1])
                every[slots[i0:i]] = values[i0:i]
                _write(name, every)
            frame.body = i
            if deadline.passed():
                return frame.body == len(self.bodies) and not self.ropes and not self.groups
        while frame.rope < len(self.ropes):
            try:
                self._show_rope(frame.rope, live, frame.k)
                frame.rope += 1
            except ReferenceError:  # its armature was deleted meanwhile
                del self.ropes[frame.rope], self._bone_slots[frame.rope]
            if deadline.passed():
                return frame.rope == len(self.ropes) and not self.groups
        while frame.group < len(self.groups):
            try:
                if not self.groups[frame.group].show(live, frame.k):
                    return False
                frame.group += 1
            except ReferenceError:  # its object was deleted meanwhile
                del self.groups[frame.group]
            if deadline.passed():
                return frame.group == len(self.groups)
        return True

    def _show_rope(self, r, live, k):
        arm, rope = self.ropes[r]
        locs, rots = bake.bone_local_poses(arm, rope.bone_names, live.rope_nodes[rope.index][k:k + 1],
                                           live.rope_segments[rope.index][k:k + 1])
        bones = arm.pose.bones
        for name, values in (("location", locs[0]), ("rotation_quaternion", rots[0])):
            every = np.empty(len(bones) * values.shape[1], dtype=np.float32)
            bones.foreach_get(name, every)
            every = every.reshape(len(bones), values.shape[1])
            every[self._bone_slots[r]] = values
            bones.foreach_set(name, every.ravel())
        arm.update_tag(refresh=_POSE)

    def end(self):
        """Put back what the preview changed (objects deleted meanwhile are passed over)."""
        slots = self._slots.find()
        alive = slots >= 0
        for name, width in _BODY_FIELDS:
            every = _read(name, width)
            every[slots[alive]] = self._body_saved[name][alive]
            _write(name, every)
        for tag, keep in zip(self._tags, alive):
            try:
                if keep:
                    tag(refresh=_TRANSFORM)
            except ReferenceError:
                pass
        for item, saved in reversed(self._saved):
            try:
                _restore(item, saved)
            except ReferenceError:
                pass
        for obj, held in self._actions:
            try:
                compat.reattach_action(obj, held)
            except ReferenceError:
                pass
        for group in self.groups:
            group.end()


def start(context, conv, job):
    """Begin previewing a started job's frames in the context's scene (ending any preview still live)."""
    global _live
    end()
    _live = LivePreview(context.scene, conv, job)
    bpy.app.handlers.frame_change_post.append(_on_frame_change)
    return _live


def live():
    return _live


def advance(budget=None):
    """The timer's part: go on showing the frame to show (the newest finished, or the scrubbed one) for about
    ``budget`` seconds (ticks.TICK_BUDGET)."""
    return _live is not None and _live.advance(budget)


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
