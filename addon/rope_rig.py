"""Rope rigs: sample a curve at uniform arc length, build an armature (one bone per segment) and a
skinned edge-chain mesh (Armature -> Skin -> Subdivision modifiers)."""
import bpy
import numpy as np
from mathutils import Vector


class RopeError(ValueError):
    pass


def curve_point_count(obj):
    if obj.type == 'CURVE':
        if not obj.data.splines:
            return 0
        spline = obj.data.splines[0]
        return len(spline.bezier_points) if spline.type == 'BEZIER' else len(spline.points)
    if obj.type == 'CURVES':
        return len(obj.data.curves[0].points) if len(obj.data.curves) else 0
    raise RopeError(f"'{obj.name}' is not a curve (it is {obj.type.lower()}); select curve objects to make ropes")


def curve_polyline(context, obj):
    """World-space polyline of the first spline of a curve object, as Blender evaluates it."""
    n = curve_point_count(obj)
    if n < 2:
        raise RopeError(f"'{obj.name}': a rope curve needs at least 2 points, it has {n}")
    if obj.type == 'CURVES':
        spline = obj.data.curves[0]
        pts = np.array([p.position for p in spline.points], dtype=np.float64)
    else:
        # Evaluate a centre-line copy: no bevel or extrusion, first spline only.
        data = obj.data.copy()
        data.bevel_depth = 0.0
        data.extrude = 0.0
        data.bevel_mode = 'ROUND'
        data.bevel_object = None
        data.taper_object = None
        for spline in list(data.splines)[1:]:
            data.splines.remove(spline)
        tmp = bpy.data.objects.new("_quadric_tmp_curve", data)
        context.scene.collection.objects.link(tmp)
        try:
            depsgraph = context.evaluated_depsgraph_get()
            depsgraph.update()
            ev = tmp.evaluated_get(depsgraph)
            mesh = ev.to_mesh()
            pts = np.empty(3 * len(mesh.vertices))
            mesh.vertices.foreach_get("co", pts)
            pts = pts.reshape(-1, 3)
            ev.to_mesh_clear()
        finally:
            bpy.data.objects.remove(tmp)
            bpy.data.curves.remove(data)
        if data_is_cyclic(obj) and len(pts):
            pts = np.vstack([pts, pts[:1]])
    mw = np.array(obj.matrix_world)
    pts = pts @ mw[:3, :3].T + mw[:3, 3]
    keep = np.concatenate([[True], np.linalg.norm(np.diff(pts, axis=0), axis=1) > 1e-12])
    return pts[keep]


def data_is_cyclic(obj):
    return obj.type == 'CURVE' and obj.data.splines and obj.data.splines[0].use_cyclic_u


def resample(points, segments):
    """Nodes at uniform arc length along a polyline: segments + 1 points."""
    seg = np.linalg.norm(np.diff(points, axis=0), axis=1)
    s = np.concatenate([[0.0], np.cumsum(seg)])
    if s[-1] <= 0.0:
        raise RopeError("curve has zero length")
    targets = np.linspace(0.0, s[-1], segments + 1)
    return np.stack([np.interp(targets, s, points[:, k]) for k in range(3)], axis=1)


def arc_length(points):
    return float(np.linalg.norm(np.diff(points, axis=0), axis=1).sum())


def build_rig(context, name, nodes, radius, material=None):
    """Create the armature + skin mesh for rest nodes (n, 3) in world space; returns (armature, mesh)."""
    scene = context.scene
    collection = context.collection or scene.collection
    arm_data = bpy.data.armatures.new(name + " Rig")
    arm = bpy.data.objects.new(name + " Rig", arm_data)
    arm_data.display_type = 'STICK'
    collection.objects.link(arm)
    view_layer = context.view_layer
    prev_active = view_layer.objects.active
    if context.mode != 'OBJECT':
        bpy.ops.object.mode_set(mode='OBJECT')
    view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode='EDIT')
    try:
        for j in range(len(nodes) - 1):
            eb = arm_data.edit_bones.new(bone_name(j))
            eb.head = Vector(nodes[j])
            eb.tail = Vector(nodes[j + 1])
            eb.use_connect = False
            eb.use_deform = True
    finally:
        bpy.ops.object.mode_set(mode='OBJECT')
    for pb in arm.pose.bones:
        pb.rotation_mode = 'QUATERNION'

    mesh_data = bpy.data.meshes.new(name)
    n = len(nodes)
    mesh_data.from_pydata([tuple(p) for p in nodes], [(i, i + 1) for i in range(n - 1)], [])
    mesh_data.update()
    mesh = bpy.data.objects.new(name, mesh_data)
    collection.objects.link(mesh)
    mesh.parent = arm
    for j in range(n - 1):
        group = mesh.vertex_groups.new(name=bone_name(j))
        group.add([j], 1.0, 'REPLACE')
    # The last node rides on the tail of the last bone.
    mesh.vertex_groups[bone_name(n - 2)].add([n - 1], 1.0, 'REPLACE')
    mod = mesh.modifiers.new("Armature", 'ARMATURE')
    mod.object = arm
    mod.use_vertex_groups = True
    mesh.modifiers.new("Skin", 'SKIN')
    subsurf = mesh.modifiers.new("Subdivision", 'SUBSURF')
    subsurf.levels = 1
    subsurf.render_levels = 2
    set_radius(mesh, radius)
    if material is not None:
        mesh_data.materials.append(material)
    mesh_data.polygons.foreach_set("use_smooth", [True] * len(mesh_data.polygons))
    view_layer.objects.active = prev_active
    return arm, mesh


def set_radius(mesh, radius):
    layer = mesh.data.skin_vertices[0] if len(mesh.data.skin_vertices) else mesh.data.skin_vertices.new()
    for i, v in enumerate(layer.data):
        v.radius = (radius, radius)
        v.use_root = i == 0


def bone_name(j):
    return f"Seg.{j:03d}"
