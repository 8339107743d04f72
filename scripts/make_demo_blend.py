"""Build the Quadric Dynamics demo .blend from code (no bake; scripts/bake.py does that).

    python scripts/make_demo_blend.py --output out/demo/pebbles.blend [--pebbles 300] [--seed 0]

The scene: a few hundred irregular pebble meshes stacked inside a tilted open
tube above a ground plane (they pour out of its lower end), two ropes over the
spot where the pile forms: one pinned at both ends, one tied to an animated
"Tractor" empty that drags it, and a light sled body, across the pile. A camera
and lights are set up for scripts/render_frames.py.

Runs under the bpy module; the add-on is found the way scripts/bake.py finds it.
"""
import argparse
import importlib.util
import math
import os
import sys

import bpy
import numpy as np
from mathutils import Matrix, Vector

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_bake_script():
    spec = importlib.util.spec_from_file_location("quadric_bake_script", os.path.join(ROOT, "scripts", "bake.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def select_only(*objs):
    for o in bpy.context.view_layer.objects:
        o.select_set(False)
    for o in objs:
        o.select_set(True)
    bpy.context.view_layer.objects.active = objs[0] if objs else None


def material(name, color, roughness=0.6, alpha=1.0, random_tint=False):
    mat = bpy.data.materials.new(name)
    mat.use_nodes = True
    nodes, links = mat.node_tree.nodes, mat.node_tree.links
    bsdf = nodes.get("Principled BSDF")
    bsdf.inputs["Base Color"].default_value = (*color, 1.0)
    bsdf.inputs["Roughness"].default_value = roughness
    if alpha < 1.0:
        bsdf.inputs["Alpha"].default_value = alpha
    if random_tint:  # every pebble a slightly different stone colour
        info = nodes.new("ShaderNodeObjectInfo")
        ramp = nodes.new("ShaderNodeValToRGB")
        ramp.color_ramp.elements[0].color = (0.23, 0.2, 0.17, 1.0)
        ramp.color_ramp.elements[1].color = (0.62, 0.57, 0.5, 1.0)
        links.new(info.outputs["Random"], ramp.inputs["Fac"])
        links.new(ramp.outputs["Color"], bsdf.inputs["Base Color"])
    return mat


def pebble_mesh(base_co, faces, rng, name):
    """An irregular pebble: a noisy, non-uniformly scaled icosphere (about 3-5 cm semi-axes)."""
    semi = rng.uniform([0.036, 0.03, 0.022], [0.046, 0.038, 0.032])
    noise = 1.0 + 0.12 * rng.standard_normal(len(base_co))
    co = base_co * noise[:, None]
    co = co / np.abs(co).max(axis=0) * semi
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(co.tolist(), [], faces)
    mesh.update()
    return mesh


def tube_frame(lower, upper):
    axis = (upper - lower) / np.linalg.norm(upper - lower)
    e1 = np.cross(axis, [0.0, 1.0, 0.0])
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(axis, e1)
    return axis, e1, e2


def build(args):
    bake_script = load_bake_script()
    bpy.ops.wm.read_factory_settings(use_empty=True)
    print(f"[demo] add-on: {bake_script.enable_addon(None)}", flush=True)
    rng = np.random.default_rng(args.seed)
    scene = bpy.context.scene
    scene.render.fps = 24
    scene.frame_start, scene.frame_end = 1, args.frames
    scene.quadric.substeps = 10

    # Ground.
    bpy.ops.mesh.primitive_plane_add(size=12.0)
    ground = bpy.context.object
    ground.name = "Ground"
    ground.data.materials.append(material("Ground", (0.2, 0.22, 0.18), roughness=0.9))
    select_only(ground)
    bpy.ops.quadric.add_collider(kind='PLANE')
    ground.quadric.friction = 0.7

    # The tilted tube the pebbles pour from (open at both ends, 35 degrees above horizontal).
    tilt = math.radians(35.0)
    radius, length = 0.3, 3.0
    lower = np.array([-0.6, 0.0, 0.55])
    upper = lower + length * np.array([-math.cos(tilt), 0.0, math.sin(tilt)])
    axis, e1, e2 = tube_frame(lower, upper)
    center = 0.5 * (lower + upper)
    bpy.ops.mesh.primitive_cylinder_add(vertices=48, radius=radius, depth=length, end_fill_type='NOTHING')
    tube = bpy.context.object
    tube.name = "Tube"
    tube.matrix_world = Matrix.LocRotScale(Vector(center), Vector((0, 0, 1)).rotation_difference(Vector(axis)),
                                           None)
    tube.data.materials.append(material("Tube", (0.55, 0.75, 0.9), roughness=0.15, alpha=0.25))
    select_only(tube)
    bpy.ops.quadric.add_collider()  # AUTO recognises the cylinder
    tube.quadric.friction = 0.3

    # Pebbles stacked inside the tube on a grid, the lowest first.
    bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=2, radius=1.0)
    ico = bpy.context.object
    base_co = np.array([v.co[:] for v in ico.data.vertices])
    faces = [tuple(p.vertices) for p in ico.data.polygons]
    bpy.data.objects.remove(ico)
    spacing = 0.105
    reach = radius - 0.055
    cross = [(b, c) for b in np.arange(-reach, reach + 1e-9, spacing) for c in np.arange(-reach, reach + 1e-9, spacing)
             if b * b + c * c <= reach * reach]
    slots = [lower + a * axis + b * e1 + c * e2
             for a in np.arange(0.08, length - 0.06, spacing) for b, c in cross]
    if len(slots) < args.pebbles:
        raise SystemExit(f"only {len(slots)} pebble slots in the tube, asked for {args.pebbles}")
    pebble_mat = material("Pebble", (0.5, 0.45, 0.4), roughness=0.7, random_tint=True)
    pebbles = bpy.data.collections.new("Pebbles")
    scene.collection.children.link(pebbles)
    objs = []
    for i in range(args.pebbles):
        obj = bpy.data.objects.new(f"Pebble.{i:03d}", pebble_mesh(base_co, faces, rng, f"Pebble.{i:03d}"))
        q = rng.normal(size=4)
        obj.rotation_mode = 'QUATERNION'
        obj.rotation_quaternion = q / np.linalg.norm(q)
        obj.location = slots[i] + rng.uniform(-0.004, 0.004, size=3)
        obj.data.materials.append(pebble_mat)
        pebbles.objects.link(obj)
        objs.append(obj)
    for poly_owner in objs:
        poly_owner.data.polygons.foreach_set("use_smooth", [True] * len(poly_owner.data.polygons))
    select_only(*objs)
    bpy.ops.quadric.add_body(shape='ELLIPSOID')
    for obj in objs:
        obj.quadric.density = 2600.0
        obj.quadric.friction = 0.6
        obj.quadric.rolling_friction = 0.002
        obj.quadric.shape_display.hide_set(True)

    # A light sled on the ground, dragged by the second rope.
    bpy.ops.mesh.primitive_uv_sphere_add(segments=24, ring_count=12, radius=1.0, location=(0.3, -1.1, 0.081))
    sled = bpy.context.object
    sled.name = "Sled"
    sled.scale = (0.22, 0.14, 0.08)
    sled.data.materials.append(material("Sled", (0.15, 0.3, 0.75), roughness=0.4))
    select_only(sled)
    bpy.ops.quadric.add_body(shape='ELLIPSOID')
    sled.quadric.density = 150.0
    sled.quadric.friction = 0.4
    sled.quadric.shape_display.hide_set(True)

    if args.ropes:
        material("Rope", (0.8, 0.25, 0.08), roughness=0.8)  # make_rope takes it by name
        # Rope 1: pinned at both ends on posts, across where the pebbles land.
        a = make_curve("RopeOverPile", [(-0.3, -0.9, 0.3), (-0.3, -0.3, 0.13), (-0.3, 0.3, 0.13), (-0.3, 0.9, 0.3)])
        select_only(a)
        bpy.ops.quadric.make_rope(segments=32, radius=0.015, start_mode='PIN', end_mode='PIN', material="Rope")
        # Rope 2: from a moving "Tractor" (an animated empty) over the pile to the sled, which it drags.
        tractor = bpy.data.objects.new("Tractor", None)
        tractor.empty_display_type = 'CUBE'
        tractor.empty_display_size = 0.08
        scene.collection.objects.link(tractor)
        tractor.location = (-0.1, 1.1, 0.35)
        tractor.keyframe_insert("location", frame=1)
        tractor.keyframe_insert("location", frame=50)
        tractor.location = (-0.3, 2.4, 0.35)
        tractor.keyframe_insert("location", frame=args.frames)
        b = make_curve("TetherToSled", [(-0.1, 1.1, 0.35), (-0.2, 0.3, 0.25), (0.05, -0.5, 0.16), (0.3, -0.93, 0.1)])
        select_only(b)
        bpy.ops.quadric.make_rope(segments=32, radius=0.012, start_mode='OBJECT', start_object="Tractor",
                                  end_mode='OBJECT', end_object="Sled", material="Rope")
        for rig in (o for o in scene.objects if o.quadric.role == 'ROPE'):
            rig.hide_set(True)

    # Camera and light.
    cam_data = bpy.data.cameras.new("Camera")
    cam_data.lens = 35
    cam = bpy.data.objects.new("Camera", cam_data)
    scene.collection.objects.link(cam)
    cam.location = (2.6, -3.0, 1.7)
    target = Vector((-0.3, 0.0, 0.2))
    cam.rotation_euler = (target - cam.location).to_track_quat('-Z', 'Y').to_euler()
    scene.camera = cam
    sun_data = bpy.data.lights.new("Sun", 'SUN')
    sun_data.energy = 3.5
    sun_data.angle = math.radians(8)
    sun = bpy.data.objects.new("Sun", sun_data)
    sun.rotation_euler = (math.radians(40), math.radians(15), math.radians(35))
    scene.collection.objects.link(sun)
    world = bpy.data.worlds.new("World")
    if not world.node_tree:  # Blender < 5 creates worlds without nodes
        world.use_nodes = True
    world.node_tree.nodes["Background"].inputs["Color"].default_value = (0.55, 0.62, 0.72, 1.0)
    world.node_tree.nodes["Background"].inputs["Strength"].default_value = 0.7
    scene.world = world
    scene.frame_set(1)
    return scene


def make_curve(name, points):
    data = bpy.data.curves.new(name, 'CURVE')
    data.dimensions = '3D'
    data.resolution_u = 12
    spline = data.splines.new('NURBS')
    spline.points.add(len(points) - 1)
    for p, co in zip(spline.points, points):
        p.co = (*co, 1.0)
    spline.use_endpoint_u = True
    spline.order_u = 3
    obj = bpy.data.objects.new(name, data)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def main():
    argv = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else sys.argv[1:]
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--output", required=True, help="where to save the .blend")
    ap.add_argument("--pebbles", type=int, default=300)
    ap.add_argument("--frames", type=int, default=150)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-ropes", dest="ropes", action="store_false", help="leave the two ropes out")
    args = ap.parse_args(argv)
    scene = build(args)
    out = os.path.abspath(args.output)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    bpy.ops.wm.save_as_mainfile(filepath=out)
    bodies = sum(o.quadric.role == 'BODY' for o in scene.objects)
    ropes = sum(o.quadric.role == 'ROPE' for o in scene.objects)
    print(f"[demo] saved {out}: {bodies} bodies, {ropes} ropes, frames 1-{scene.frame_end}", flush=True)
    return 0


if __name__ == "__main__":
    load_bake_script().exit_process(main())  # bpy 4.2 crashes in its own exit handler once the add-on registered
