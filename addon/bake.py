"""Recording -> fcurves: object location/rotation_quaternion for bodies, pose-bone channels for ropes; or, with
the scene's Bake To set to Instances, the bodies as one instanced points object (addon/instances.py).

Writing is bulk only (keyframe_points.add + foreach_set), so 1,000 bodies x 250
frames stays within a couple of seconds. Call `bake_recording` only after a
run succeeded: it is the one place that changes the Blender scene.
"""
import bpy
import numpy as np
from mathutils import Matrix

from ..solver import rotations
from . import instances
from . import keyframes_compat as kc
from .ticks import COMMITTED, drain

CLEAR_STEP = 256  # sources whose earlier keyframe bakes are cleared per step of an instanced bake
# Bone axes -> rope segment axes: the bone's Y (its length) is the segment's d3 (local z),
# bone X is d1, bone Z is -d2 (keeps a right-handed frame).
_BONE_IN_SEGMENT = rotations.from_matrix(np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]]))


def object_poses_from_body(body_poses, offset_location, offset_rotation):
    """Object (location, quaternion) per frame from body poses (F, 7) and the origin->principal offset."""
    rot = rotations.mul(body_poses[:, 3:], rotations.conj(offset_rotation)[None, :])
    rot = rotations.make_continuous(rot)
    loc = body_poses[:, :3] - rotations.rotate(rot, np.broadcast_to(offset_location, (len(rot), 3)))
    return loc, rot


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


def _drop_bake_action(obj):
    s = obj.quadric
    action = s.bake_action
    s.bake_action = None
    if action is not None:
        kc.assign_action(obj, None)
        if action.users == 0:
            bpy.data.actions.remove(action)


def _start_bake(obj):
    store_originals(obj)
    _drop_bake_action(obj)
    action, fcurves = kc.new_bake_action(obj, f"QuadricBake {obj.name}")
    obj.quadric.bake_action = action
    obj.quadric.is_baked = True
    return fcurves


def bake_body(obj, frames, body_poses, offset_location, offset_rotation):
    """Write location + rotation_quaternion fcurves for one object (body_poses: (F, 7))."""
    loc, rot = object_poses_from_body(np.asarray(body_poses, dtype=np.float64), offset_location, offset_rotation)
    _write_object_pose(obj, kc.KeyframeWriter(frames), loc, rot)


def _write_object_pose(obj, writer, loc, rot):
    fcurves = _start_bake(obj)
    obj.rotation_mode = 'QUATERNION'
    for k in range(3):
        writer.write(fcurves, "location", k, loc[:, k], group="Object Transforms")
    for k in range(4):
        writer.write(fcurves, "rotation_quaternion", k, rot[:, k], group="Object Transforms")


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


def bake_rope(arm, bone_names, frames, nodes, segments=None):
    nodes = np.asarray(nodes, dtype=np.float64)
    if segments is None:
        segments = segment_frames_from_nodes(arm, bone_names, nodes)
    locs, rots = bone_local_poses(arm, bone_names, nodes, np.asarray(segments, dtype=np.float64))
    fcurves = _start_bake(arm)
    writer = kc.KeyframeWriter(frames)
    for j, name in enumerate(bone_names):
        pb = arm.pose.bones[name]
        pb.rotation_mode = 'QUATERNION'
        base = f'pose.bones["{bpy.utils.escape_identifier(name)}"].'
        for k in range(3):
            writer.write(fcurves, base + "location", k, locs[:, j, k], group=name)
        for k in range(4):
            writer.write(fcurves, base + "rotation_quaternion", k, rots[:, j, k], group=name)


def bake_recording(context, conv, rec):
    """Bake a finished Recording for the bindings of a Conversion. Returns (bodies, ropes) baked.

    Body poses are converted for all bodies at once (one numpy pass), then written object by object, or all
    together as instances (scene.quadric.bake_output). An instanced bake that fails raises
    instances.InstanceBakeError (a ValueError naming the object) before anything changed.
    """
    return drain(bake_recording_steps(context, conv, rec))


def bake_recording_steps(context, conv, rec):
    """bake_recording cut into steps for timer ticks (addon/ticks.py): the instanced bake's (instances.py), which
    may be stopped between them, leaving the file as it was; then, committed, the sources' earlier keyframe
    bakes cleared some at a time, and each rope. Keyframes are written in one step: every new action makes
    Blender rebuild its dependency graph at the next redraw, so cutting them would cost a rebuild per tick."""
    n_frames = rec.body_poses.shape[0]
    frames = conv.frame_start + np.arange(n_frames)
    objects = dict(bpy.data.objects.items())  # bpy_prop_collection.get searches: 2,000 lookups took 80 ms
    as_instances = context.scene.quadric.bake_output == 'INSTANCES'
    n_bodies = n_ropes = 0
    bound = [(j, objects.get(b.object_name)) for j, b in enumerate(conv.bodies)]
    bound = [(j, obj) for j, obj in bound if obj is not None]  # others were deleted while the simulation ran
    if bound:
        index = np.array([conv.bodies[j].index for j, _ in bound])
        off_loc = np.array([conv.bodies[j].offset_location for j, _ in bound], dtype=np.float64)
        off_rot = np.array([conv.bodies[j].offset_rotation for j, _ in bound], dtype=np.float64)
        bodies = [obj for _, obj in bound]
        if as_instances:  # (the poses taken from their columns a few frames at a time)
            yield from instances.bake_instances_steps(context, bodies, conv.frame_start, rec.body_poses, off_loc,
                                                      off_rot, index)
            yield COMMITTED
            for k, obj in enumerate(bodies):
                clear_bake(obj)  # a keyframe bake from before would move the hidden source
                if k % CLEAR_STEP == CLEAR_STEP - 1:
                    yield "clearing the bodies' keyframes", k + 1, len(bodies)
        else:
            instances.clear_instances(context.scene)
            poses = np.asarray(rec.body_poses, dtype=np.float64)[:, index, :]
            rot = rotations.make_continuous(rotations.mul(poses[..., 3:], rotations.conj(off_rot)[None]), axis=0)
            loc = poses[..., :3] - rotations.rotate(rot, np.broadcast_to(off_loc, rot.shape[:-1] + (3,)))
            writer = kc.KeyframeWriter(frames)
            for j, obj in enumerate(bodies):
                parent_frames = conv.bodies[bound[j][0]].parent_frames
                if parent_frames is None:
                    _write_object_pose(obj, writer, loc[:, j], rot[:, j])
                else:
                    _write_object_pose(obj, writer, *in_parent_space(parent_frames[:n_frames], loc[:, j], rot[:, j]))
        n_bodies = len(bodies)
    else:
        instances.clear_instances(context.scene)  # no bodies left to instance
    yield COMMITTED
    for r in conv.ropes:
        arm = objects.get(r.armature_name)
        if arm is None:
            continue
        yield "baking the ropes", n_ropes, len(conv.ropes)
        segments = rec.rope_segments(r.index) if hasattr(rec, "rope_segments") else None
        bake_rope(arm, r.bone_names, frames, rec.rope_nodes(r.index), segments)
        n_ropes += 1
    return n_bodies, n_ropes


def clear_bake(obj):
    """Remove our bake from an object and restore its original transform, rotation mode and action."""
    s = obj.quadric
    if not s.is_baked:
        return False
    _drop_bake_action(obj)
    if s.orig_action is not None:
        kc.assign_action(obj, s.orig_action)
    s.orig_action = None
    obj.rotation_mode = s.orig_rotation_mode
    obj.location = s.orig_location
    obj.rotation_quaternion = s.orig_rotation_quaternion
    obj.rotation_euler = s.orig_rotation_euler
    obj.rotation_axis_angle = s.orig_rotation_axis_angle
    if obj.type == 'ARMATURE' and obj.pose:
        for pb in obj.pose.bones:
            pb.matrix_basis = Matrix.Identity(4)
    s.is_baked = False
    return True
