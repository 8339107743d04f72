"""Recording -> fcurves: object location/rotation_quaternion for bodies, pose-bone channels for ropes; or, with
the scene's Bake To set to Instances, the bodies as one instanced points object (addon/instances.py).

Writing is bulk only (keyframe_points.add + foreach_set), so 1,000 bodies x 250
frames stays within a couple of seconds, and in steps of a timer tick's budget
(bake_recording_steps). Call `bake_recording` only after a run succeeded: it is
the one place that changes the Blender scene.
"""
from functools import partial

import bpy
import numpy as np
from mathutils import Matrix

from quadric_solver import rotations
from . import datablocks, instances
from . import blender_compat as compat
from .ticks import ALONE, COMMITTED, drain

CLEAR_STEP = 256  # sources whose earlier keyframe bakes are cleared per step of an instanced bake
# Bone axes -> rope segment axes: the bone's Y (its length) is the segment's d3 (local z),
# bone X is d1, bone Z is -d2 (keeps a right-handed frame).
_BONE_IN_SEGMENT = rotations.from_matrix(np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]]))


def object_poses_from_body(body_poses, offset_location, offset_rotation):
    """Object (location, quaternion) per frame from body poses (F, 7) and the origin->principal offset; or of
    several bodies, (F, n, 7) and offsets (n, 3), (n, 4)."""
    rot = rotations.mul(body_poses[..., 3:], rotations.conj(offset_rotation)[None])
    rot = rotations.make_continuous(rot, axis=0)
    loc = body_poses[..., :3] - rotations.rotate(rot, np.broadcast_to(offset_location, rot.shape[:-1] + (3,)))
    return loc, rot


class ChunkedPoses:
    """Bodies' object poses (object_poses_from_body) for body columns ``index`` of (F, N, 7) poses, computed a
    CHUNK of bodies at a time when first asked for, so that each fits in a step (2,000 bodies x 250 frames at once
    took 0.28 s)."""
    CHUNK = 64

    def __init__(self, body_poses, index, offset_location, offset_rotation):
        self.body_poses, self.index = body_poses, index
        self.offset_location, self.offset_rotation = offset_location, offset_rotation
        self.chunk, self.poses = -1, None

    def __call__(self, j):
        """(location (F, 3), quaternion (F, 4)) of body ``j`` (of ``index``)."""
        chunk, k = divmod(j, self.CHUNK)
        if chunk != self.chunk:
            part = slice(chunk * self.CHUNK, (chunk + 1) * self.CHUNK)
            poses = np.asarray(self.body_poses[:, self.index[part]], dtype=np.float64)
            self.poses = object_poses_from_body(poses, self.offset_location[part], self.offset_rotation[part])
            self.chunk = chunk
        loc, rot = self.poses
        return loc[:, k], rot[:, k]


def in_parent_space(parent_frames, loc, rot):
    """A parented object's own (location, quaternion) per frame from its world ones: parent_frames (F, 4, 4) are
    its parent space (convert.parent_space) at each frame, each a rotation R, a uniform scale s and a
    translation t, so the own location is R^T (x - t) / s and the own rotation R^T r."""
    linear = parent_frames[:, :3, :3]
    scale = np.cbrt(np.linalg.det(linear))
    turn = linear / scale[:, None, None]
    own_loc = np.einsum("fji,fj->fi", turn, loc - parent_frames[:, :3, 3]) / scale[:, None]
    parent_rot = np.array([rotations.from_matrix(m) for m in turn])
    own_rot = rotations.make_continuous(rotations.mul(rotations.conj(parent_rot), rot))
    return own_loc, own_rot


# What an object's keyframe bake keeps for Clear Bake: unset once restored, so that nothing of a cleared bake stays
ORIGINALS = ("orig_action", "orig_location", "orig_rotation_mode", "orig_rotation_quaternion", "orig_rotation_euler",
             "orig_rotation_axis_angle")


def store_originals(obj):
    s = obj.quadric
    if s.is_baked:
        return  # keep the pre-bake originals through re-bakes
    s.orig_location = obj.location
    s.orig_rotation_mode = obj.rotation_mode
    s.orig_rotation_quaternion = obj.rotation_quaternion
    s.orig_rotation_euler = obj.rotation_euler
    s.orig_rotation_axis_angle = obj.rotation_axis_angle
    anim = obj.animation_data
    s.orig_action = anim.action if anim else None


def _drop_bake_action(obj, dropped):
    """Take our bake action off the object, into the list ``dropped`` for datablocks.remove_unused."""
    s = obj.quadric
    action = s.bake_action
    s.bake_action = None
    if action is not None:
        compat.assign_action(obj, None)
        dropped.append(action)


def object_channels(obj, loc, rot):
    """An object's keyed channels from its (location, quaternion) per frame: (channels, what turns by quaternion),
    each channel (data_path, index, group, values per frame)."""
    group = "Object Transforms"
    return ([("location", k, group, loc[:, k]) for k in range(3)] +
            [("rotation_quaternion", k, group, rot[:, k]) for k in range(4)]), [obj]


def build_keyframes(targets, frames):
    """Steps that build each target's bake action, unassigned: targets are (object, channels) where channels()
    gives object_channels' pair. Returns what assign_keyframes puts in place; closed before that (Esc), it removes
    what it made, leaving the file as it was.

    Blender rebuilds its dependency graph's relations at the next redraw after an F-curve is added to any action,
    or an action assigned (0.1 to 0.3 s for 2,000 objects, its own work, after the tick): so the actions, slots and
    strips (which change no relation) are made and the keys filled a few targets a step, but every F-curve is added
    in one step and every action assigned in another (assign_keyframes), two rebuilds in all."""
    writer = compat.KeyframeWriter(frames)
    built = []  # (object, action, slot, fcurves, channels, what turns by quaternion)
    try:
        for k, (obj, channels) in enumerate(targets):
            action, slot, fcurves = compat.new_unassigned_action(obj, f"QuadricBake {obj.name}")
            built.append((obj, action, slot, fcurves) + channels())
            yield "preparing the keyframes", k + 1, len(targets)
        yield ALONE
        curves = [[writer.new(fcurves, path, index, group) for path, index, group, _ in channels]
                  for _, _, _, fcurves, channels, _ in built]
        for k, (fcs, (_, _, _, _, channels, _)) in enumerate(zip(curves, built)):
            yield "writing the keyframes", k, len(built)
            for fc, channel in zip(fcs, channels):
                writer.fill(fc, channel[3])
    except BaseException:
        datablocks.remove_unused([action for _, action, *_ in built])
        raise
    return [(obj, action, slot, turning) for obj, action, slot, _, _, turning in built]


def assign_keyframes(built):
    """Put the actions build_keyframes made on their objects in one step (one rebuild of Blender's relations),
    each object's earlier bake replaced and its pre-bake transform kept."""
    dropped = []
    for obj, _, _, _ in built:
        store_originals(obj)
        _drop_bake_action(obj, dropped)
    datablocks.remove_unused(dropped)
    for obj, action, slot, turning in built:
        name = f"QuadricBake {obj.name}"
        if action.name != name:  # the dropped action's name, free again
            action.name = name
        compat.assign_bake_action(obj, action, slot)
        obj.quadric.bake_action = action
        obj.quadric.is_baked = True
        for item in turning:
            item.rotation_mode = 'QUATERNION'


def bone_local_poses(arm, bone_names, nodes, segments):
    """Pose-bone (location, quaternion) per frame and bone from rope nodes (F, n, 3) and segment quats (F, n-1, 4).

    Bones are unparented, so the pose basis is rest^-1 * target, in armature space.
    """
    inv_world = arm.matrix_world.inverted_safe()
    a_loc, a_rot, _ = (np.array(x) for x in inv_world.decompose())
    heads_arm = rotations.rotate(a_rot, nodes[:, :-1, :]) + a_loc
    seg_arm = rotations.mul(a_rot, segments)
    target_rot = rotations.mul(seg_arm, _BONE_IN_SEGMENT)
    bones = [arm.data.bones[name] for name in bone_names]
    inv_rest = rotations.conj(np.array([b.matrix_local.to_quaternion() for b in bones]))
    rest_head = np.array([b.head_local for b in bones])
    locs = rotations.rotate(inv_rest[None], heads_arm - rest_head[None])
    rots = rotations.make_continuous(rotations.mul(inv_rest[None], target_rot), axis=0)
    return locs, rots


def segment_frames_from_nodes(arm, bone_names, nodes):
    """Segment quaternions when the recording has none: the rest frame swung onto each segment's tangent."""
    rest_q = []
    for name in bone_names:
        bone = arm.data.bones[name]
        world = arm.matrix_world @ bone.matrix_local
        q_bone = np.array(world.to_quaternion())
        rest_q.append(rotations.mul(q_bone, rotations.conj(_BONE_IN_SEGMENT)))
    rest_q = np.array(rest_q)
    tangents = np.diff(nodes, axis=1)
    rest_t = rotations.rotate(rest_q, np.array([0.0, 0.0, 1.0]))
    swing = rotations.between(np.broadcast_to(rest_t, tangents.shape), tangents)
    return rotations.mul(swing, np.broadcast_to(rest_q, swing.shape))


def rope_channels(arm, bone_names, nodes, segments=None):
    """A rope's keyed pose-bone channels from its nodes (F, n, 3) and segment quaternions (F, n-1, 4; None: from
    the nodes), as object_channels gives an object's."""
    nodes = np.asarray(nodes, dtype=np.float64)
    if segments is None:
        segments = segment_frames_from_nodes(arm, bone_names, nodes)
    locs, rots = bone_local_poses(arm, bone_names, nodes, np.asarray(segments, dtype=np.float64))
    channels, turning = [], []
    for j, name in enumerate(bone_names):
        turning.append(arm.pose.bones[name])
        base = f'pose.bones["{bpy.utils.escape_identifier(name)}"].'
        channels += [(base + "location", k, name, locs[:, j, k]) for k in range(3)]
        channels += [(base + "rotation_quaternion", k, name, rots[:, j, k]) for k in range(4)]
    return channels, turning


def bake_rope(arm, bone_names, frames, nodes, segments=None):
    assign_keyframes(drain(build_keyframes([(arm, lambda: rope_channels(arm, bone_names, nodes, segments))],
                                           frames)))


def bake_recording(context, conv, rec):
    """Bake a finished Recording for the bindings of a Conversion. Returns (bodies, ropes) baked.

    Body poses are converted for all bodies at once (one numpy pass), then written object by object, or all
    together as instances (scene.quadric.bake_output). An instanced bake that fails raises
    instances.InstanceBakeError (a ValueError naming the object) before anything changed.
    """
    return drain(bake_recording_steps(context, conv, rec))


def bake_recording_steps(context, conv, rec):
    """bake_recording cut into steps for timer ticks (addon/ticks.py). Keyframes: the bodies' and ropes' actions
    built unassigned a few objects a step (build_keyframes), which may be stopped between them, leaving the file as
    it was; then, committed, an instanced bake from before removed and every action assigned at once. Instances:
    the instanced bake's steps (instances.py), likewise; then, committed, the sources' earlier keyframe bakes
    cleared some at a time, and the ropes' keyframes built and assigned."""
    n_frames = rec.body_poses.shape[0]
    frames = conv.frame_start + np.arange(n_frames)
    objects = dict(bpy.data.objects.items())  # bpy_prop_collection.get searches: 2,000 lookups took 80 ms
    as_instances = context.scene.quadric.bake_output == 'INSTANCES'
    bound = [(j, objects.get(b.object_name)) for j, b in enumerate(conv.bodies)]
    bound = [(j, obj) for j, obj in bound if obj is not None]  # others were deleted while the simulation ran
    bodies = [obj for _, obj in bound]
    targets = []
    if bound:
        index = np.array([conv.bodies[j].index for j, _ in bound])
        off_loc = np.array([conv.bodies[j].offset_location for j, _ in bound], dtype=np.float64)
        off_rot = np.array([conv.bodies[j].offset_rotation for j, _ in bound], dtype=np.float64)
        if as_instances:  # (the poses taken from their columns a few frames at a time)
            yield from instances.bake_instances_steps(context, bodies, conv.frame_start, rec.body_poses, off_loc,
                                                      off_rot, index)
            yield COMMITTED
            dropped = []
            for k, obj in enumerate(bodies):
                clear_bake(obj, dropped)  # a keyframe bake from before would move the hidden source
                if k % CLEAR_STEP == CLEAR_STEP - 1:
                    yield "clearing the bodies' keyframes", k + 1, len(bodies)
            datablocks.remove_unused(dropped)
        else:
            poses = ChunkedPoses(rec.body_poses, index, off_loc, off_rot)
            targets = [(obj, partial(_body_channels, obj, conv.bodies[b].parent_frames, poses, j))
                       for j, (b, obj) in enumerate(bound)]
    ropes = [(objects.get(r.armature_name), r) for r in conv.ropes]
    ropes = [(arm, r) for arm, r in ropes if arm is not None]
    for arm, r in ropes:
        segments = rec.rope_segments(r.index) if hasattr(rec, "rope_segments") else None
        targets.append((arm, partial(rope_channels, arm, r.bone_names, rec.rope_nodes(r.index), segments)))
    built = yield from build_keyframes(targets, frames)
    yield ALONE
    yield COMMITTED
    if not (as_instances and bound):
        instances.clear_instances(context.scene)  # keyframes now, or no bodies left to instance
    assign_keyframes(built)
    return len(bodies), len(ropes)


def _body_channels(obj, parent_frames, poses, j):
    """object_channels of bake_recording_steps' body ``j`` from its world pose (ChunkedPoses), or in its parent's
    space."""
    loc, rot = poses(j)
    if parent_frames is None:
        return object_channels(obj, loc, rot)
    return object_channels(obj, *in_parent_space(parent_frames[:len(loc)], loc, rot))


def clear_bakes(objs):
    """clear_bake of each object, the bake actions deleted together; the names of those that had a bake."""
    dropped = []
    cleared = [obj.name for obj in objs if clear_bake(obj, dropped)]
    datablocks.remove_unused(dropped)
    return cleared


def clear_bake(obj, dropped=None):
    """Remove our bake from an object and restore its original transform, rotation mode and action; the fields that
    kept them are unset (as before any bake). Returns whether it had one. With ``dropped`` (a list), the bake action
    is left there for datablocks.remove_unused instead of deleted now."""
    s = obj.quadric
    if not s.is_baked:
        return False
    own = dropped is None
    dropped = [] if own else dropped
    _drop_bake_action(obj, dropped)
    if s.orig_action is not None:
        compat.assign_action(obj, s.orig_action)
    obj.rotation_mode = s.orig_rotation_mode
    obj.location = s.orig_location
    obj.rotation_quaternion = s.orig_rotation_quaternion
    obj.rotation_euler = s.orig_rotation_euler
    obj.rotation_axis_angle = s.orig_rotation_axis_angle
    if obj.type == 'ARMATURE' and obj.pose:
        for pb in obj.pose.bones:
            pb.matrix_basis = Matrix.Identity(4)
    for name in ("is_baked", "bake_action") + ORIGINALS:
        s.property_unset(name)
    if own:
        datablocks.remove_unused(dropped)
    return True
