"""Instanced output: a bake's bodies as one points object that Blender plays from a point cache on disk.

The points object's mesh has three vertices per body: the object's origin and the tips of its local x and y
axes, ``marker_length`` away. A PC2 file (point_cache.py) moves them frame by frame through Blender's Mesh
Cache modifier; a Geometry Nodes modifier takes the instances of the source objects (Collection Info over
collections of them) and sets instance i to the pose of vertex i and its markers (Axes to Rotation), with the
object's scale. Vertices are laid out in Blender's instance order, read back from the depsgraph. Playback is
Blender's own: no add-on code runs, a render farm needs no extension, and any number of bodies adds one object
(the points object) to the scene. docs/instances.md has the reasons.

``bake_instances`` builds everything before it changes anything the user made, and removes what it built if
a step fails, so a failed bake leaves the file as it was.
"""
import os
import uuid

import bpy
import numpy as np

from quadric_solver import rotations
from . import datablocks, point_cache
from .ticks import ALONE, drain

POINTS_NAME = "Quadric Instances"
SOURCES_NAME = "Quadric Instance Sources"
CACHE_MODIFIER = "Quadric Point Cache"
NODES_MODIFIER = "Quadric Instances"
FILE_PREFIX = "instances_"
# Per-vertex attributes of the points mesh (static: the Mesh Cache modifier moves positions only). Vertex i
# (i < N) is the origin of the object of instance i, N + i and 2 N + i the tips of its x and y axes.
SCALE = "quadric_scale"              # the object's scale (on its origin vertex)
X_MARKER, Y_MARKER = "quadric_x_marker", "quadric_y_marker"  # vertex indices of the body's axis markers
# Sources per collection. Blender fills a collection's object cache with a linear search per object
# (collection_object_cache_fill), and Collection Info grows its instances one by one: both quadratic in a
# collection's size. One collection of 100,000 objects took over 15 minutes to build the depsgraph; chunks of
# 1,000 take milliseconds (100 to 1,000 objects per chunk played 100,000 bodies equally fast).
CHUNK = 1000
MARKER_ROWS = 16384  # body-frames of the cache computed and written per step of a bake cut into timer ticks (ms)


class InstanceBakeError(ValueError):
    pass


def marker_length(reach):
    """Distance from a body's origin to its axis markers: a power of two at least ``reach`` (and 1 m).

    The rotation comes back from float32 differences (tip - origin) / length, whose error is about
    2^-24 (|origin| + length) / length: a length as large as the largest coordinate keeps that near 2^-23
    anywhere in the scene, and a power of two adds no rounding of its own.
    """
    return float(2.0 ** np.ceil(np.log2(max(float(reach), 1.0))))


def body_markers(offset_location, offset_rotation, length):
    """Each object's origin and axis tips in its body's frame (N, 3, 3): the points the cache moves.

    The object's pose is the body's times the inverse of its offset (bake.object_poses_from_body), so its
    origin sits at -R_off^T offset_location in the body frame and its x and y axes along R_off^T e_x, e_y.
    """
    r_off = rotations.to_matrix(np.asarray(offset_rotation, dtype=np.float64))  # (N, 3, 3)
    origin = -np.einsum("nji,nj->ni", r_off, np.asarray(offset_location, dtype=np.float64))
    return np.stack([origin, origin + length * r_off[:, 0, :], origin + length * r_off[:, 1, :]], axis=1)


def marker_positions(body_poses, local, chunk=8192):
    """World positions (F, K N, 3) float32 of body-fixed points ``local`` (N, K, 3) under body poses (F, N, 7):
    all bodies' first points, then all their second points, and so on (the vertex order of the points mesh).

    In place over chunks of about ``chunk`` body-frames, so every temporary stays in cache: 2,000 bodies x
    250 frames take about 30 ms, against 150 ms for the same formulas on whole arrays.
    """
    frames, n, _ = body_poses.shape
    k_points = local.shape[1]
    out = np.empty((frames, k_points, n, 3), dtype=np.float32)
    rows = max(1, chunk // max(n, 1))
    rot, t, a = np.empty((9, rows, n)), np.empty((rows, n)), np.empty((rows, n))
    lt = np.ascontiguousarray(np.moveaxis(local, 0, -1))  # (K, 3, N)
    for f0 in range(0, frames, rows):
        f1 = min(frames, f0 + rows)
        pose = body_poses[f0:f1]
        w, x, y, z = (pose[..., 3 + k] for k in range(4))
        r, t_, a_ = rot[:, :f1 - f0], t[:f1 - f0], a[:f1 - f0]
        for diagonal, (u, v) in ((0, (y, z)), (4, (x, z)), (8, (x, y))):  # 1 - 2 (u^2 + v^2)
            np.multiply(u, u, out=t_)
            np.multiply(v, v, out=a_)
            a_ += t_
            np.multiply(a_, -2.0, out=r[diagonal])
            r[diagonal] += 1.0
        for (minus, plus), (u, v, s, c) in (((1, 3), (x, y, w, z)), ((6, 2), (x, z, w, y)), ((5, 7), (y, z, w, x))):
            np.multiply(u, v, out=t_)  # r[minus] = 2 (uv - sc), r[plus] = 2 (uv + sc)
            np.multiply(s, c, out=a_)
            np.subtract(t_, a_, out=r[minus])
            np.add(t_, a_, out=r[plus])
            r[minus] *= 2.0
            r[plus] *= 2.0
        for k in range(k_points):
            for i in range(3):
                np.multiply(r[3 * i], lt[k, 0], out=a_)
                np.multiply(r[3 * i + 1], lt[k, 1], out=t_)
                a_ += t_
                np.multiply(r[3 * i + 2], lt[k, 2], out=t_)
                a_ += t_
                a_ += pose[..., i]
                out[f0:f1, k, :, i] = a_
    return out.reshape(frames, k_points * n, 3)


def current(scene):
    """The scene's instanced bake as (points object, sources collection, node group); Nones where absent.

    The sources collection holds the sources in child collections of at most CHUNK objects."""
    qs = scene.quadric
    return qs.instance_points, qs.instance_sources, qs.instance_nodes


def cache_path(points):
    """The point cache file an instanced bake's points object plays ('' if none), as Blender stores it."""
    modifier = points.modifiers.get(CACHE_MODIFIER) if points is not None else None
    return modifier.filepath if modifier is not None else ""


def cache_missing(scene):
    """True when the scene has an instanced bake whose point cache file is gone (an undo past its removal)."""
    points = scene.quadric.instance_points
    path = cache_path(points)
    return points is not None and not (path and os.path.exists(bpy.path.abspath(path)))


# ------------------------------------------------------------------------------------------ building
def _new_cache_file(scene):
    """(stored path, absolute path) for a new cache file: unique, tagged with the .blend's name."""
    stored_folder, folder = point_cache.cache_folder(scene)
    blend = os.path.splitext(os.path.basename(bpy.data.filepath))[0] or "unsaved"
    name = f"{FILE_PREFIX}{point_cache.safe_name(blend)}_{uuid.uuid4().hex[:8]}.pc2"
    return stored_folder + name, os.path.join(folder, name)


def _attribute(mesh, name, kind, values):
    """A new point attribute of the mesh, filled from ``values`` in one call."""
    attr = mesh.attributes.new(name, kind, 'POINT')
    attr.data.foreach_set("vector" if kind == 'FLOAT_VECTOR' else "value", np.ascontiguousarray(values).ravel())


def source_objects(sources):
    """The objects of an instanced bake's sources collection, chunk by chunk (never ``all_objects``, which
    fills the quadratic object cache of the whole collection)."""
    return [o for chunk in (sources.children if sources is not None else []) for o in chunk.objects]


def _node_group(chunks):
    """The Geometry Nodes group: the instances of every chunk collection (Collection Info, Separate Children),
    joined, each moved to the pose of the mesh vertex of its own index (instance i: vertex i and its markers).

    The instances are moved where Collection Info made them rather than placed on points (Instance on Points
    with Pick Instance): that node copies every reference into each result through a linear search, and with
    100,000 distinct objects a frame took 11 s. Every node used exists with these names and sockets from
    Blender 4.2 LTS on (Axes to Rotation and the matrix nodes came with 4.2); none differs up to 5.x.
    """
    tree = bpy.data.node_groups.new(POINTS_NAME, 'GeometryNodeTree')
    tree.interface.new_socket("Geometry", in_out='INPUT', socket_type='NodeSocketGeometry')
    tree.interface.new_socket("Geometry", in_out='OUTPUT', socket_type='NodeSocketGeometry')
    nodes, link = tree.nodes, tree.links.new

    def node(kind, x, y, **settings):
        n = nodes.new(kind)
        n.location = (x, y)
        for key, value in settings.items():
            setattr(n, key, value)
        return n

    group_in = node('NodeGroupInput', -1300, 0)
    index = node('GeometryNodeInputIndex', -1300, -200).outputs[0]
    position = node('GeometryNodeInputPosition', -1300, 300).outputs[0]

    def sample(value, at, data_type, x, y):
        """``value`` (a field on the mesh's vertices) at vertex ``at`` (a field on the instances)."""
        n = node('GeometryNodeSampleIndex', x, y, data_type=data_type, domain='POINT')
        link(group_in.outputs[0], n.inputs["Geometry"])
        link(value, n.inputs["Value"])
        link(at, n.inputs["Index"])
        return n.outputs[0]

    def attribute(name, data_type, y):
        n = node('GeometryNodeInputNamedAttribute', -1100, y, data_type=data_type)
        n.inputs["Name"].default_value = name
        return n.outputs["Attribute"]

    origin = sample(position, index, 'FLOAT_VECTOR', -600, 400)
    axes = []
    for k, name in enumerate((X_MARKER, Y_MARKER)):
        tip = sample(position, sample(attribute(name, 'INT', 200 - 250 * k), index, 'INT', -850, 200 - 250 * k),
                     'FLOAT_VECTOR', -600, 200 - 250 * k)
        axis = node('ShaderNodeVectorMath', -400, 200 - 250 * k, operation='SUBTRACT')
        link(tip, axis.inputs[0])
        link(origin, axis.inputs[1])
        axes.append(axis.outputs[0])
    rotation = node('FunctionNodeAxesToRotation', -200, 100, primary_axis='X', secondary_axis='Y')
    link(axes[0], rotation.inputs[0])
    link(axes[1], rotation.inputs[1])
    transform = node('FunctionNodeCombineTransform', 0, 200)
    link(origin, transform.inputs["Translation"])
    link(rotation.outputs[0], transform.inputs["Rotation"])
    link(sample(attribute(SCALE, 'FLOAT_VECTOR', -300), index, 'FLOAT_VECTOR', -600, -300),
         transform.inputs["Scale"])
    join = node('GeometryNodeJoinGeometry', 0, -300)
    for k, chunk in enumerate(chunks):
        collection = node('GeometryNodeCollectionInfo', -200, -500 - 200 * k)
        collection.inputs["Collection"].default_value = chunk
        collection.inputs["Separate Children"].default_value = True
        collection.inputs["Reset Children"].default_value = True
        link(collection.outputs[0], join.inputs[0])
    place = node('GeometryNodeSetInstanceTransform', 250, 0)
    link(join.outputs[0], place.inputs["Instances"])
    link(transform.outputs[0], place.inputs["Transform"])
    link(place.outputs[0], node('NodeGroupOutput', 450, 0).inputs[0])
    return tree


def _child_order(context, points, objects):
    """Index of each object among the joined instances Collection Info gives (Blender's order).

    Blender sorts a collection's children by name (natural, case-insensitive); rather than copy that rule,
    which could change between versions, the bake reads it back: before the cache plays, the evaluated
    depsgraph lists the points object's instances with their index (persistent_id[0]) and object.
    """
    depsgraph = context.evaluated_depsgraph_get()
    child = {}
    for inst in depsgraph.object_instances:
        if inst.is_instance and inst.parent is not None and inst.parent.original == points:
            child[inst.instance_object.original.name] = inst.persistent_id[0]
    missing = [o.name for o in objects if o.name not in child]
    if missing:
        raise InstanceBakeError(f"instanced bake '{points.name}': Blender did not instance '{missing[0]}'"
                                f"{f' and {len(missing) - 1} more' if len(missing) > 1 else ''} from the "
                                f"collection '{SOURCES_NAME}'")
    return np.array([child[o.name] for o in objects], dtype=np.int64)


def _build(context, objects, frame_start):
    """Points object (linked to the scene, its Mesh Cache modifier not yet pointed at a file), node group and
    sources collection; (points, sources, tree)."""
    n = len(objects)
    mesh = bpy.data.meshes.new(POINTS_NAME)
    points = sources = tree = None
    try:
        points = bpy.data.objects.new(POINTS_NAME, mesh)
        mesh.vertices.add(3 * n)
        for k, name in enumerate((X_MARKER, Y_MARKER)):
            _attribute(mesh, name, 'INT', np.tile(np.arange((k + 1) * n, (k + 2) * n, dtype=np.int32), 3))
        _attribute(mesh, SCALE, 'FLOAT_VECTOR', np.ones((3 * n, 3), dtype=np.float32))
        cache = points.modifiers.new(CACHE_MODIFIER, 'MESH_CACHE')  # first: it moves what the nodes read
        cache.cache_format = 'PC2'
        cache.frame_start = float(frame_start)  # scene frame frame_start plays the cache's first sample
        # positions as written: forward +Y, up +Z and no flips are the defaults (flip_axis is a set in 4.2, three
        # booleans in 5.0, so it is left alone)
        cache.forward_axis, cache.up_axis = 'POS_Y', 'POS_Z'
        cache.deform_mode, cache.time_mode, cache.play_mode = 'OVERWRITE', 'FRAME', 'SCENE'
        sources = bpy.data.collections.new(SOURCES_NAME)
        for start in range(0, n, CHUNK):
            chunk = bpy.data.collections.new(f"{SOURCES_NAME} {start // CHUNK + 1}")
            sources.children.link(chunk)
            for obj in objects[start:start + CHUNK]:
                chunk.objects.link(obj)
        tree = _node_group(sources.children)
        points.modifiers.new(NODES_MODIFIER, 'NODES').node_group = tree
        context.scene.collection.objects.link(points)
    except Exception:
        _remove_blocks(points, mesh, sources, tree)
        raise
    return points, sources, tree


def _remove_blocks(points, mesh, sources, tree):
    """Delete an instanced bake's datablocks (any of them may be None)."""
    if points is not None:
        mesh = points.data
        bpy.data.objects.remove(points)
    if mesh is not None and mesh.users == 0:
        bpy.data.meshes.remove(mesh)
    if tree is not None:
        bpy.data.node_groups.remove(tree)
    if sources is not None:
        for chunk in list(sources.children):
            bpy.data.collections.remove(chunk)
        bpy.data.collections.remove(sources)


# ------------------------------------------------------------------------------------- visibility
def _helpers(obj):
    """The objects hidden with a source: the body's shape display (it would stay behind at the start)."""
    display = obj.quadric.shape_display
    return [display] if display is not None else []


def _set_hidden(flags):
    """Set hide_viewport and hide_render of many objects at once: {object: (viewport, render)}."""
    datablocks.set_object_flags({"hide_viewport": {obj: v for obj, (v, _) in flags.items()},
                                 "hide_render": {obj: r for obj, (_, r) in flags.items()}})


def _hide_sources(objects):
    """Hide the sources (and their shape displays), keeping what they were for Clear Bake; returns those not
    hidden before (by an earlier instanced bake)."""
    flags, newly = {}, []
    for obj in objects:
        for o in [obj] + _helpers(obj):
            s = o.quadric
            if not s.instance_hidden:
                s.orig_hide_viewport, s.orig_hide_render = o.hide_viewport, o.hide_render
                s.instance_hidden = True
                newly.append(o)
            flags[o] = (True, True)
    _set_hidden(flags)
    return newly


def _show(objects):
    """Give hidden sources and displays back the visibility they had before the first instanced bake; the fields
    that kept it are unset (as before any bake)."""
    flags = {}
    for o in objects:
        s = o.quadric
        if s.instance_hidden:
            flags[o] = (s.orig_hide_viewport, s.orig_hide_render)
            for name in ("instance_hidden", "orig_hide_viewport", "orig_hide_render"):
                s.property_unset(name)
    _set_hidden(flags)


# ----------------------------------------------------------------------------------------- public
def bake_instances(context, objects, frame_start, body_poses, offset_location, offset_rotation, columns=None):
    """Bake body poses (F, N, 7), one column per object, as one instanced points object.

    ``offset_location`` and ``offset_rotation`` (N, 3), (N, 4) are each object's body frame relative to its
    origin (convert.BodyBinding); ``columns``, where given, the column of ``body_poses`` of each object (a
    Recording's poses of every body). Replaces the scene's previous instanced bake. Raises InstanceBakeError
    naming the object and the field when a pose is not finite, the cache cannot be written, or Blender does
    not instance a source; the scene, the data and the cache folder are then as they were.
    """
    return drain(bake_instances_steps(context, objects, frame_start, body_poses, offset_location, offset_rotation,
                                      columns))


def bake_instances_steps(context, objects, frame_start, body_poses, offset_location, offset_rotation,
                         columns=None):
    """bake_instances cut into steps for timer ticks (addon/ticks.py); returns the points object.

    The poses are checked a few frames a step (about MARKER_ROWS body-frames, each taken from its columns
    then: a copy of all poses at once took 70 ms for 2,000 bodies x 250 frames). One step, in a tick of its own,
    then makes every change Blender must rebuild its dependency graph's relations for (datablocks, the sources
    in their collections, hidden; a previous bake's points object hidden meanwhile) and has the graph rebuilt
    and evaluated in one call (evaluated_depsgraph_get). Each of those changes alone makes the next evaluation
    rebuild the whole graph, so they are made together, and the call cannot be cut: with 2,000 sources it takes
    0.26 to 0.35 s (the rebuild alone 0.14 to 0.26 s, as any rebuild of that scene; docs/instances.md), the
    rest of the step 30 to 40 ms. The next step reads the instance order from the evaluated graph and shows the
    first frame. The cache file is computed and written a few frames a step, and the last step puts it in place and
    removes the previous bake. Closed between two steps (Esc), or failing in one, it removes what it built,
    shows what it hid and deletes its file, so the file is as it was.
    """
    scene = context.scene
    body_poses = np.asarray(body_poses, dtype=np.float64)
    frames, n = body_poses.shape[0], len(objects)
    columns = np.arange(n) if columns is None else np.asarray(columns, dtype=np.int64)
    rows = max(1, MARKER_ROWS // max(n, 1))  # frames a step
    reach = 0.0
    for f0 in range(0, frames, rows):
        poses = body_poses[f0:f0 + rows, columns]
        finite = np.isfinite(poses).all(axis=2)
        if not finite.all():
            frame, j = (int(v[0]) for v in np.nonzero(~finite))
            raise InstanceBakeError(f"'{objects[j].name}': its simulated pose (location, rotation) is not finite "
                                    f"at frame {frame_start + f0 + frame}; nothing was baked")
        reach = max(reach, float(np.abs(poses[..., :3]).max(initial=0.0)))
        yield "checking the poses", min(frames, f0 + rows), frames
    offset_location = np.asarray(offset_location, dtype=np.float64).reshape(-1, 3)
    reach += np.linalg.norm(offset_location, axis=1).max(initial=0.0)
    local = body_markers(offset_location, offset_rotation, marker_length(reach))
    stored, path = _new_cache_file(scene)
    built, newly_hidden, writer, held = (None, None, None), [], None, None
    yield "building the instances", 0, frames
    yield ALONE  # the rebuild below takes a tick by itself
    try:
        built = points, sources, tree = _build(context, objects, frame_start)
        previous = current(scene)[0]
        if previous is not None and not previous.hide_viewport:  # its instances would show beside the new ones
            held = previous
            previous.hide_viewport = True
        newly_hidden = _hide_sources(objects)  # before the depsgraph runs, so that it is rebuilt once
        context.evaluated_depsgraph_get()  # the one rebuild: it cannot be cut (see the docstring)
        yield "reading the instances' order", 0, frames
        order = np.argsort(_child_order(context, points, objects))  # order[i]: the body of instance i
        local, columns = local[order], columns[order]
        mesh = points.data
        mesh.vertices.foreach_set("co", marker_positions(body_poses[:1, columns], local)[0].ravel())
        scale = np.ones((3 * n, 3), dtype=np.float32)
        scale[:n] = [tuple(objects[b].scale) for b in order]
        mesh.attributes[SCALE].data.foreach_set("vector", scale.ravel())
        mesh.update()
        yield "writing the instances' point cache", 0, frames
        try:
            writer = point_cache.PC2Writer(path, 3 * n, frames, start_frame=frame_start)
            for f0 in range(0, frames, rows):
                f1 = min(frames, f0 + rows)
                writer.write(marker_positions(body_poses[f0:f1, columns], local))
                yield "writing the instances' point cache", f1, frames
            writer.close()
        except (OSError, ValueError) as exc:
            raise InstanceBakeError(f"instanced bake '{POINTS_NAME}': cannot write its point cache (the "
                                    f"'{CACHE_MODIFIER}' modifier's file '{path}'): {exc}; nothing was baked") from exc
        points.modifiers[CACHE_MODIFIER].filepath = stored
    except BaseException as exc:  # a failure, or the steps closed (Esc): the file as it was
        if writer is not None:
            writer.abort()
            point_cache.remove_file(path)  # and the cache folders it made, once empty
        _remove_blocks(*built[:1], None, *built[1:])
        _show(newly_hidden)
        if held is not None:
            held.hide_viewport = False
        if isinstance(exc, InstanceBakeError) or not isinstance(exc, Exception):
            raise
        raise InstanceBakeError(f"instanced bake '{POINTS_NAME}' of {len(objects)} bodies failed: {exc}; "
                                "nothing was baked") from exc
    previous = current(scene)[1]
    kept = set(objects)
    dropped = [o for o in source_objects(previous) if o not in kept]
    clear_instances(scene, restore=[o for obj in dropped for o in [obj] + _helpers(obj)])
    names = [(points, POINTS_NAME), (points.data, POINTS_NAME), (tree, POINTS_NAME), (sources, SOURCES_NAME)]
    names += [(chunk, f"{SOURCES_NAME} {k + 1}") for k, chunk in enumerate(sources.children)]
    for block, name in names:
        block.name = name  # built beside the previous bake as "... .001": the names are free again now
    qs = scene.quadric
    qs.instance_points, qs.instance_sources, qs.instance_nodes = points, sources, tree
    return points


def clear_instances(scene, restore=None):
    """Remove the scene's instanced bake (points object, mesh, node group, sources collection, cache file) and
    show its sources again (only ``restore`` when given: a new bake keeps the others hidden). True if there was
    one."""
    points, sources, tree = current(scene)
    if points is None and sources is None and tree is None:
        return False
    if restore is None:
        restore = [o for obj in source_objects(sources) for o in [obj] + _helpers(obj)]
    path = cache_path(points)
    qs = scene.quadric
    qs.instance_points = qs.instance_sources = qs.instance_nodes = None
    _remove_blocks(points, None, sources, tree)
    _show(restore)
    if path:
        point_cache.remove_file(path)
    return True
