"""Blender-side halves of the add-on tests, run in a fresh `python` with the bpy module.

    python tests/addon/blender_scenarios.py SCENARIO OUT.json [ARGS...]

HOME and BLENDER_USER_RESOURCES are set by the caller (conftest.py) before bpy
is imported, and the extension is already installed there. Each scenario
drives the add-on the way a user or script would and writes what it measured
to OUT.json; the assertions live in the test files.
"""
import contextlib
import gc
import hashlib
import ctypes
import importlib
import json
import math
import os
import sys
import tempfile
import traceback

import bpy
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from scripts.bake import exit_process  # noqa: E402

PKG = "bl_ext.user_default.quadric_dynamics"


def enable():
    import addon_utils

    addon_utils.enable(PKG, default_set=True)
    assert hasattr(bpy.types.Object, "quadric"), "extension did not register"


def mod(name):
    return importlib.import_module(f"{PKG}.addon.{name}")


def select_only(*objs):
    for o in bpy.context.view_layer.objects:
        o.select_set(False)
    for o in objs:
        o.select_set(True)
    if objs:
        bpy.context.view_layer.objects.active = objs[0]


def op_error(fn, **kwargs):
    """Run an operator expected to fail; return its error text ('' if it did not fail)."""
    try:
        result = fn(**kwargs)
    except RuntimeError as exc:
        return str(exc)
    return f"no error, returned {sorted(result)}"


def empty_scene():
    bpy.ops.wm.read_factory_settings(use_empty=True)
    enable()
    scene = bpy.context.scene
    scene.render.fps = 24
    scene.render.fps_base = 1.0
    return scene


# ----------------------------------------------------------------------------- scenarios
def scenario_install(out, zip_path):
    result = bpy.ops.extensions.package_install_files(filepath=zip_path, repo="user_default",
                                                      enable_on_install=True)
    runtime = mod("runtime")
    return dict(result=sorted(result), registered=hasattr(bpy.types.Object, "quadric"),
                numba_cache=runtime.numba_cache_dir(),
                extension_user_dir=bpy.utils.extension_path_user(PKG, create=False),
                extension_dir=str(__import__("pathlib").Path(importlib.import_module(PKG).__file__).parent))


def scenario_solver_package(out):
    """Where the enabled add-on's quadric_solver comes from; whether disabling forgets it; and which copy enabling
    again registers after this checkout's copy (the repository root is on sys.path) was imported."""
    import addon_utils

    res = dict(extension_dir=os.path.dirname(importlib.import_module(PKG).__file__),
               enabled=sys.modules["quadric_solver"].__file__,
               job_module=mod("job").CompileWatcher.__module__)
    addon_utils.disable(PKG, default_set=True)
    res["left_after_disable"] = sorted(m for m in sys.modules if m.split(".")[0] == "quadric_solver")
    import quadric_solver as other

    res["other"] = other.__file__
    enable()
    res["enabled_again"] = sys.modules["quadric_solver"].__file__
    return res


class CheckingLayout:
    """Stands in for UILayout (panels cannot draw without a window): checks every property and
    operator a panel names exists, and records what it would show."""

    def __init__(self, log):
        self.log = log

    def __getattr__(self, name):  # row(), column(), box(), separator(), label(), progress(), ...
        return lambda *args, **kwargs: CheckingLayout(self.log) if name in ("row", "column", "box", "split") else None

    def __setattr__(self, name, value):
        if name == "log":
            object.__setattr__(self, name, value)

    def prop(self, data, name, **kwargs):
        assert name in data.bl_rna.properties, f"panel draws missing property {name!r} of {data!r}"
        self.log.append(("prop", name))

    def operator(self, idname, **kwargs):
        category, op = idname.split(".")
        assert hasattr(getattr(bpy.ops, category), op), f"panel shows missing operator {idname}"
        self.log.append(("operator", idname))
        return OperatorProps(idname, self.log)

    def prop_search(self, data, name, search_data, search_name, **kwargs):
        assert name in data.bl_rna.properties, f"panel draws missing property {name!r} of {data!r}"
        assert hasattr(search_data, search_name), f"panel searches missing {search_name!r} of {search_data!r}"
        self.log.append(("prop", name))

    def menu(self, idname, **kwargs):
        assert hasattr(bpy.types, idname), f"panel shows missing menu {idname}"
        self.log.append(("menu", idname))

    def progress(self, factor=0.0, type='BAR', text=""):
        self.log.append(("progress", text, factor))


class OperatorProps:
    """Stands in for the properties a layout.operator() returns: checks the operator has each one set."""

    def __init__(self, idname, log):
        object.__setattr__(self, "idname", idname)
        object.__setattr__(self, "log", log)

    def __setattr__(self, name, value):
        category, op = self.idname.split(".")
        rna = getattr(getattr(bpy.ops, category), op).get_rna_type()
        assert name in rna.properties, f"panel sets missing property {name!r} of operator {self.idname}"
        self.log.append(("operator_property", self.idname, name, value))


@contextlib.contextmanager
def captured_reports():
    """The operator reports Blender prints to stdout in background mode ('Info: ...'), as a list of lines."""
    lines = []
    sys.stdout.flush()
    saved = os.dup(1)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 1)
        try:
            yield lines
        finally:
            sys.stdout.flush()
            ctypes.CDLL(None).fflush(None)
            os.dup2(saved, 1)
            os.close(saved)
            tmp.seek(0)
            lines.extend(tmp.read().decode(errors="replace").splitlines())


def draw_panels(objects):
    """Run every panel's draw() for each object as the active one; returns what was drawn."""
    ui = mod("ui")
    drawn = []
    for obj in objects:
        bpy.context.view_layer.objects.active = obj
        for cls in ui.CLASSES:
            log = []
            fake = type("P", (), {"layout": CheckingLayout(log)})()
            if hasattr(cls, "poll") and not cls.poll(bpy.context):
                continue
            cls.draw(fake, bpy.context)
            drawn.extend(log)
    return drawn


def scenario_fit_and_errors(out):
    scene = empty_scene()
    res = {}
    # Fitting: UV sphere scaled (1, 2, 3), rotated and moved.
    bpy.ops.mesh.primitive_uv_sphere_add(segments=64, ring_count=32, radius=1.0, location=(0.5, -1.0, 2.0),
                                         rotation=(0.4, -0.3, 1.1))
    sphere = bpy.context.object
    sphere.name = "Egg"
    sphere.scale = (1.0, 2.0, 3.0)
    select_only(sphere)
    res["add_body"] = sorted(bpy.ops.quadric.add_body())
    s = sphere.quadric
    display = s.shape_display
    res["fitted_shape"] = s.fitted_shape
    res["semi_axes"] = list(s.semi_axes)
    res["fit_method"] = s.fit_method
    bpy.context.view_layer.update()
    # Fitted axes in the object's own frame (columns of the display's rotation, expressed in object axes).
    obj_rot = np.array(sphere.matrix_world.to_quaternion().to_matrix())
    display_rot = np.array(display.matrix_world.to_3x3())
    res["axes_in_object_frame"] = (obj_rot.T @ display_rot).tolist()
    res["display_center"] = list(display.matrix_world.translation)
    res["object_location"] = list(sphere.location)
    res["display"] = dict(type=display.type, display_type=display.display_type, selectable=not display.hide_select,
                          follows=display.constraints[0].target.name, render=not display.hide_render)

    # Editing the semi-axes in the panel edits the body, and its display follows.
    s.semi_axes = tuple(1.5 * x for x in s.semi_axes)
    conv = mod("convert").build_scene(mod("runtime").get_solver(), bpy.context)
    res["semi_axes_after_edit"] = list(conv.scene.bodies[0]["semi_axes"])
    co = np.array([v.co for v in display.data.vertices])
    res["display_extent_after_edit"] = (0.5 * np.ptp(co, axis=0)).tolist()
    s.semi_axes = tuple(x / 1.5 for x in s.semi_axes)

    # Bad selections.
    bpy.ops.object.empty_add(location=(5, 5, 5))
    lamp = bpy.context.object
    lamp.name = "NotAMesh"
    select_only(lamp)
    res["err_non_mesh_body"] = op_error(bpy.ops.quadric.add_body)
    res["err_non_mesh_collider"] = op_error(bpy.ops.quadric.add_collider)
    res["err_non_curve_rope"] = op_error(bpy.ops.quadric.make_rope)
    bpy.ops.mesh.primitive_plane_add(location=(8, 0, 0))
    plane = bpy.context.object
    plane.name = "FlatPlane"
    select_only(plane)
    res["err_open_flat_body"] = op_error(bpy.ops.quadric.add_body)
    bpy.ops.mesh.primitive_cube_add(location=(-8, 0, 0))
    flat = bpy.context.object
    flat.name = "SquashedCube"
    flat.scale = (1.0, 1.0, 0.0)
    select_only(flat)
    res["err_zero_volume_body"] = op_error(bpy.ops.quadric.add_body)
    data = bpy.data.curves.new("OnePointCurve", 'CURVE')
    data.splines.new('POLY')  # a new poly spline has a single point
    curve = bpy.data.objects.new("OnePointCurve", data)
    scene.collection.objects.link(curve)
    res["one_point_count"] = len(curve.data.splines[0].points)
    select_only(curve)
    res["err_short_curve"] = op_error(bpy.ops.quadric.make_rope)
    select_only()
    res["err_empty_selection"] = op_error(bpy.ops.quadric.add_body)

    # Overlapping bodies at the start: the solver's check, surfaced with the object's name.
    for o in (lamp, plane, flat, curve):
        bpy.data.objects.remove(o)
    bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=3, radius=1.0, location=(0.5, -1.0, 2.5))
    other = bpy.context.object
    other.name = "Intruder"
    select_only(other)
    bpy.ops.quadric.add_body()
    res["err_overlap"] = op_error(bpy.ops.quadric.simulate)
    res["status_after_overlap"] = scene.quadric.status
    res["fcurves_after_failed"] = len(mod("blender_compat").fcurves_of(sphere))

    # Panels draw for a body, a collider and an object outside the simulation.
    bpy.ops.mesh.primitive_plane_add(location=(0, 0, -3))
    floor = bpy.context.object
    select_only(floor)
    bpy.ops.quadric.add_collider()
    bpy.ops.mesh.primitive_cube_add(location=(9, 9, 9))
    res["panels"] = draw_panels([sphere, floor, bpy.context.object])
    return res


def build_bake_scene():
    """Ground plane, a dropped sphere, a rotated box with its origin away from its centroid, an animated pusher."""
    scene = empty_scene()
    scene.frame_start, scene.frame_end = 1, 40
    scene.quadric.substeps = 8
    bpy.ops.mesh.primitive_plane_add(size=20.0, location=(0, 0, 0))
    ground = bpy.context.object
    ground.name = "Ground"
    select_only(ground)
    bpy.ops.quadric.add_collider()

    bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=3, radius=0.3, location=(0.0, 0.0, 1.0))
    ball = bpy.context.object
    ball.name = "Ball"
    ball.rotation_mode = 'XYZ'
    ball.rotation_euler = (0.2, 0.1, 0.3)
    ball.quadric.initial_velocity = (0.5, 0.0, 0.0)
    ball.quadric.initial_angular_velocity = (0.0, 3.0, 1.0)

    bpy.ops.mesh.primitive_cube_add(size=1.0, location=(1.5, 0.5, 1.2))
    brick = bpy.context.object
    brick.name = "Brick"
    brick.scale = (0.6, 0.3, 0.2)
    brick.data.transform(__import__("mathutils").Matrix.Translation((0.4, -0.2, 0.3)))  # origin off the centroid
    brick.rotation_mode = 'AXIS_ANGLE'
    brick.rotation_axis_angle = (0.7, 0.3, 0.5, 0.8)

    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.25, location=(-2.0, 0.0, 0.26))
    pusher = bpy.context.object
    pusher.name = "Pusher"
    pusher.keyframe_insert("location", frame=1)
    pusher.location = (0.5, 0.0, 0.26)
    pusher.keyframe_insert("location", frame=40)

    select_only(ball, brick)
    bpy.ops.quadric.add_body(shape='ELLIPSOID')
    select_only(pusher)
    bpy.ops.quadric.add_body(body_type='ANIMATED')
    return scene, [ball, brick]


def moving_empty(name, start, end, last_frame):
    """An empty keyed at ``start`` on frame 1 and ``end`` on ``last_frame``, moving linearly between."""
    bpy.ops.object.empty_add(location=start)
    empty = bpy.context.object
    empty.name = name
    empty.keyframe_insert("location", frame=1)
    empty.location = end
    empty.keyframe_insert("location", frame=last_frame)
    for fc in mod("blender_compat").fcurves_of(empty):
        for kp in fc.keyframe_points:
            kp.interpolation = 'LINEAR'
    return empty


def keyframe_dump(objs):
    compat = mod("blender_compat")
    out = {}
    for o in objs:
        for fc in compat.fcurves_of(o):
            f, v = compat.read_keyframes(fc)
            out[f"{o.name}|{fc.data_path}|{fc.array_index}"] = [f.tolist(), v.tolist()]
    return out


def evaluated_tracks(scene, objs, binding):
    """fcurve values at every frame and the shape displays' world matrices, per baked body."""
    compat = mod("blender_compat")
    frames = list(range(scene.frame_start, scene.frame_end + 1))
    res = {}
    empties = {}
    for o in objs:
        b = binding[o.name]
        loc = [[compat.find_fcurve(o, "location", k).evaluate(f) for k in range(3)] for f in frames]
        rot = [[compat.find_fcurve(o, "rotation_quaternion", k).evaluate(f) for k in range(4)] for f in frames]
        res[o.name] = dict(index=b.index, offset_location=list(map(float, b.offset_location)),
                           offset_rotation=list(map(float, b.offset_rotation)), location=loc, rotation=rot,
                           empty_matrix=[])
        empties[o.name] = o.quadric.shape_display
    for f in frames:
        scene.frame_set(f)
        for o in objs:
            res[o.name]["empty_matrix"].append([list(r) for r in empties[o.name].matrix_world])
    return res


# What a bake keeps on an object for Clear Bake and for the panel (properties.py, Bake bookkeeping)
BAKE_FIELDS = ("is_baked", "bake_action", "orig_action", "orig_location", "orig_rotation_mode",
               "orig_rotation_quaternion", "orig_rotation_euler", "orig_rotation_axis_angle", "instance_hidden",
               "orig_hide_viewport", "orig_hide_render", "bake_fingerprint")


def bake_fields_set(objs):
    """{object name: the bake fields set on it}, only objects with any."""
    found = {o.name: [f for f in BAKE_FIELDS if o.quadric.is_property_set(f)] for o in objs}
    return {name: fields for name, fields in found.items() if fields}


def scenario_bake(out, blend_path):
    scene, bodies = build_bake_scene()
    ops = mod("operators")
    originals = {o.name: dict(location=list(o.location), rotation_mode=o.rotation_mode,
                              rotation_euler=list(o.rotation_euler),
                              rotation_axis_angle=list(o.rotation_axis_angle)) for o in bodies}
    bpy.ops.wm.save_as_mainfile(filepath=blend_path)
    res = dict(originals=originals, fields_before=bake_fields_set(scene.objects))

    # 1. The operator, as a script calls it (EXEC_DEFAULT).
    res["simulate"] = sorted(bpy.ops.quadric.simulate())
    res["status"] = scene.quadric.status
    res["operator_keys"] = keyframe_dump(bodies)

    # 2. The same job the operator runs, keeping its Recording to compare with the baked fcurves.
    ctx = bpy.context
    job = ops.prepare_job(ctx)
    job.run_sync()
    res["job_state"] = job.state
    res["finish"] = sorted(ops.finish_job(ctx, job))
    binding = {b.object_name: b for b in job.conv.bodies}
    res["recording"] = job.recording.body_poses.tolist()
    res["frame_start"] = job.conv.frame_start
    res["tracks"] = evaluated_tracks(scene, bodies, binding)
    res["job_keys"] = keyframe_dump(bodies)
    # The animated body: its own keyframes drive it (not baked), the solver follows them.
    pusher = bpy.data.objects["Pusher"]
    pusher_index = next(i for i, b in enumerate(job.conv.scene.bodies) if b["name"] == "Pusher")
    res["pusher_recorded"] = job.recording.body_poses[:, pusher_index].tolist()
    res["pusher_animated"] = []
    for f in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(f)
        res["pusher_animated"].append(list(pusher.quadric.shape_display.matrix_world.translation))
    res["pusher_baked"] = pusher.quadric.is_baked
    res["rotation_modes_baked"] = {o.name: o.rotation_mode for o in bodies}

    # 3. Cancel through the cancel flag (what Esc sets) after 5 frames: those frames are kept as a partial bake.
    job = ops.prepare_job(ctx, on_progress=lambda done, total: done >= 5 and job.cancel())
    job.start()
    res["cancel_state"] = job.wait(timeout=300)
    res["cancel_message"] = job.message
    res["cancel_finish"] = sorted(ops.finish_job(ctx, job))
    res["cancel_status"] = scene.quadric.status
    res["cancel_partial_end"] = scene.quadric.partial_bake_end
    res["cancel_keys"] = keyframe_dump(bodies)
    res["threading_layer"] = importlib.import_module("numba").threading_layer()  # what the worker ran on
    before = keyframe_dump(bodies)

    # 4. A run that goes non-finite: the ball gets an infinite velocity after the scene was validated
    #    (Blender's own properties cannot hold one), so the solver diverges in its first substep.
    job = ops.prepare_job(ctx)
    target = next(i for i, b in enumerate(job.conv.scene.bodies) if b["name"] == "Brick")
    job.conv.scene.bodies[target]["velocity"] = (math.inf, 0.0, 0.0)
    # What the solver itself says about this scene, for the add-on's report to be checked against.
    solver = mod("runtime").get_solver()
    try:
        solver.Simulation(job.conv.scene, dt=job.conv.dt).run(frames=job.conv.frames, fps=job.conv.fps,
                                                              substeps=job.conv.substeps)
        res["solver_diverged"] = None
    except solver.SimulationDiverged as exc:
        res["solver_diverged"] = dict(frame=exc.frame, body=exc.body, body_name=exc.body_name)
    res["diverge_state"] = job.run_sync()
    res["diverge_message"] = job.message
    res["diverge_finish"] = sorted(ops.finish_job(ctx, job))
    res["diverge_status"] = scene.quadric.status
    res["diverge_keys_unchanged"] = keyframe_dump(bodies) == before

    res["diverge_partial_end"] = scene.quadric.partial_bake_end

    # 4b. A run that diverges after some frames: the Brick's velocity made infinite in the worker once 5 frames
    #     (the start pose and 4 steps) are done, so the solver finds a non-finite state in the next frame.
    def poison(done, total):
        if done == 5:
            job._sim.state.linear_velocity[target] = math.inf  # (the live arrays, not a copy)

    job = ops.prepare_job(ctx, on_progress=poison)
    res["late_diverge_state"] = job.run_sync()
    res["late_diverge_message"] = job.message
    res["late_diverge_finish"] = sorted(ops.finish_job(ctx, job))
    res.update(late_diverge_status=scene.quadric.status, late_diverge_partial_end=scene.quadric.partial_bake_end,
               late_diverge_keys=keyframe_dump(bodies))

    # 5. Clear Bake restores transforms, rotation modes and drops the bake actions, the fields that kept them and
    #    the kept run (Bake from Current Frame's).
    kept = mod("resume").points(scene)
    res["kept_before_clear"] = [kept.conv.frame_start, kept.recording.frames, len(kept.snapshots)]
    res["fields_baked"] = bake_fields_set(scene.objects)
    with captured_reports() as reports:
        res["clear"] = sorted(bpy.ops.quadric.clear_bake())
    res["clear_reports"] = reports
    res["kept_after_clear"] = mod("resume").points(scene) is not None
    res["kept_snapshots_after_clear"] = len(kept.snapshots)  # released, though this still holds the object
    res["fields_after_clear"] = bake_fields_set(scene.objects)
    res["partial_end_after_clear"] = scene.quadric.partial_bake_end
    res["after_clear"] = {o.name: dict(location=list(o.location), rotation_mode=o.rotation_mode,
                                       rotation_euler=list(o.rotation_euler),
                                       rotation_axis_angle=list(o.rotation_axis_angle),
                                       fcurves=len(mod("blender_compat").fcurves_of(o)),
                                       is_baked=o.quadric.is_baked) for o in bodies}
    res["bake_actions_left"] = [a.name for a in bpy.data.actions if a.name.startswith("QuadricBake")]
    return res


def scenario_rope(out):
    """A rope pinned at one end swinging down, and one dragged by an animated empty; both baked."""
    scene = empty_scene()
    scene.frame_start, scene.frame_end = 1, 30
    scene.quadric.substeps = 10
    data = bpy.data.curves.new("Swing", 'CURVE')
    data.dimensions = '3D'
    spline = data.splines.new('POLY')
    spline.points.add(1)
    spline.points[0].co = (0.0, 0.0, 2.0, 1.0)
    spline.points[1].co = (1.0, 0.0, 2.0, 1.0)
    swing = bpy.data.objects.new("Swing", data)
    scene.collection.objects.link(swing)
    select_only(swing)
    res = dict(make_rope=sorted(bpy.ops.quadric.make_rope(segments=10, radius=0.02, start_mode='PIN',
                                                          end_mode='FREE')))
    arm = bpy.context.object
    res["bones"] = len(arm.data.bones)
    # By segment length instead of count: a 1 m curve in 0.25 m segments (then removed again).
    probe = bpy.data.objects.new("Probe", data.copy())
    scene.collection.objects.link(probe)
    select_only(probe)
    bpy.ops.quadric.make_rope(use_segment_length=True, segment_length=0.25, radius=0.02)
    probe_rig = bpy.context.object
    res["bones_by_length"] = len(probe_rig.data.bones)
    res["bone_lengths_by_length"] = [b.length for b in probe_rig.data.bones]
    for o in (probe_rig.quadric.rope_mesh, probe_rig, probe):
        bpy.data.objects.remove(o)
    res["modifiers"] = [m.type for m in arm.quadric.rope_mesh.modifiers]
    res["radius"] = 0.02

    handle = moving_empty("Handle", (0.0, 2.0, 1.0), (0.0, 2.5, 1.0), 30)
    data2 = data.copy()
    dragged = bpy.data.objects.new("Dragged", data2)
    dragged.location = (0.0, 2.0, -1.0)
    scene.collection.objects.link(dragged)
    select_only(dragged)
    bpy.ops.quadric.make_rope(segments=10, radius=0.02, start_mode='OBJECT', start_object="Handle", end_mode='FREE')
    arm2 = bpy.context.object

    # A ball hanging from a rope whose lower end is tied to the nearest body.
    bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=3, radius=0.1, location=(0.0, -2.0, 1.0))
    ball = bpy.context.object
    ball.name = "HangingBall"
    select_only(ball)
    bpy.ops.quadric.add_body()
    data3 = bpy.data.curves.new("Hanger", 'CURVE')
    data3.dimensions = '3D'
    sp = data3.splines.new('POLY')
    sp.points.add(1)
    sp.points[0].co = (0.3, -2.0, 1.8, 1.0)
    sp.points[1].co = (0.0, -2.0, 1.12, 1.0)
    hanger = bpy.data.objects.new("Hanger", data3)
    scene.collection.objects.link(hanger)
    select_only(hanger)
    bpy.ops.quadric.make_rope(segments=8, radius=0.01, start_mode='PIN', end_mode='NEAREST')

    ops = mod("operators")
    job = ops.prepare_job(bpy.context)
    job.run_sync()
    res["job_state"], res["job_message"] = job.state, job.message
    if job.state == 'DONE':
        b = next(i for i, body in enumerate(job.conv.scene.bodies) if body["name"] == "HangingBall")
        r = next(x.index for x in job.conv.ropes if x.armature_name.startswith("Hanger"))
        res["ball_poses"] = job.recording.body_poses[:, b].tolist()
        res["hanger_end"] = job.recording.rope_nodes(r)[:, -1].tolist()
        res["hanger_start"] = job.recording.rope_nodes(r)[:, 0].tolist()
    res["finish"] = sorted(ops.finish_job(bpy.context, job))
    if job.state != 'DONE':
        return res
    ropes = {r.armature_name: r.index for r in job.conv.ropes if not r.armature_name.startswith("Hanger")}
    res["recorded_nodes"] = {name: job.recording.rope_nodes(i).tolist() for name, i in ropes.items()}
    dg = bpy.context.evaluated_depsgraph_get()
    res["heads"], res["tails"], res["skin"], res["handle"] = {}, {}, {}, []
    for a in (arm, arm2):
        res["heads"][a.name], res["tails"][a.name], res["skin"][a.name] = [], [], []
    for f in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(f)
        res["handle"].append(list(handle.matrix_world.translation))
        for a in (arm, arm2):
            bones = mod("convert").rope_bones(a)
            res["heads"][a.name].append([list(a.matrix_world @ a.pose.bones[b.name].head) for b in bones])
            res["tails"][a.name].append(list(a.matrix_world @ a.pose.bones[bones[-1].name].tail))
            if f in (scene.frame_start, scene.frame_end):
                mesh_obj = a.quadric.rope_mesh
                ev = mesh_obj.evaluated_get(dg)
                me = ev.to_mesh()
                co = np.empty(3 * len(me.vertices))
                me.vertices.foreach_get("co", co)
                mw = np.array(mesh_obj.matrix_world)
                co = co.reshape(-1, 3) @ mw[:3, :3].T + mw[:3, 3]
                res["skin"][a.name].append(co.tolist())
                ev.to_mesh_clear()
    return res


def scenario_export(out, blend_path, json_path):
    bpy.ops.wm.open_mainfile(filepath=blend_path)
    enable()
    return dict(result=sorted(bpy.ops.quadric.export_scene(filepath=json_path)))


def scenario_import(out, blend_path, npz_path, *names):
    bpy.ops.wm.open_mainfile(filepath=blend_path)
    enable()
    result = sorted(bpy.ops.quadric.import_recording(filepath=npz_path))
    objs = [bpy.data.objects[n] for n in names]
    return dict(result=result, keys=keyframe_dump(objs))


def scenario_import_checks(out):
    """Import Recording with recordings of the exported scene, of other bodies and of a changed scene, and a cut file.

    The recordings hold the exported scene's first poses (no simulation, so no kernel compiles): what is
    checked is which recordings the operator accepts and what it says about the others.
    """
    scene, (ball, brick) = build_bake_scene()
    folder = os.path.dirname(os.path.abspath(out))
    exported_path = os.path.join(folder, "scene.json")
    res = dict(export=sorted(bpy.ops.quadric.export_scene(filepath=exported_path)))
    solver = mod("runtime").get_solver()
    exported = solver.Scene.load(exported_path)

    def still_recording(source, name, frames=3):
        poses = np.array([list(b["position"]) + list(b["orientation"]) for b in source.bodies])
        stats = dict(contacts=np.zeros(frames, dtype=np.int64), max_penetration=np.zeros(frames),
                     kinetic_energy=np.zeros(frames), phase_seconds=np.zeros((frames, 0)))
        recording = solver.Recording(24.0, [b["name"] for b in source.bodies], (), np.tile(poses, (frames, 1, 1)),
                                     stats, source.content_hash())
        path = os.path.join(folder, name)
        recording.save(path)
        return path

    same = still_recording(exported, "same.npz")
    with open(same, "rb") as handle, open(os.path.join(folder, "cut.npz"), "wb") as cut:
        cut.write(handle.read()[:-200])
    res["cut"] = op_error(bpy.ops.quadric.import_recording, filepath=os.path.join(folder, "cut.npz"))
    renamed = solver.Scene.load(exported_path)
    renamed.bodies[[b["name"] for b in renamed.bodies].index("Brick")]["name"] = "Brick.001"
    res["other_bodies"] = op_error(bpy.ops.quadric.import_recording, filepath=still_recording(renamed, "other.npz"))
    friction = ball.quadric.friction
    ball.quadric.friction = 0.1
    res["changed"] = op_error(bpy.ops.quadric.import_recording, filepath=same)
    res["baked_after_refusals"] = [o.quadric.is_baked for o in (ball, brick)]
    res["changed_ignored"] = sorted(bpy.ops.quadric.import_recording(filepath=same, ignore_scene_changes=True))
    bpy.ops.quadric.clear_bake()
    ball.quadric.friction = friction
    res["matching"] = sorted(bpy.ops.quadric.import_recording(filepath=same))
    res["baked"] = [o.quadric.is_baked for o in (ball, brick)]

    # Clicked, the file browser hands the file to quadric.bake_recording_file, which goes a step a tick (a budget
    # of zero): Esc while it reads the scene, then to its end, then a refusal
    ticks, ctx = mod("ticks"), bpy.context
    # and Export Scene's to quadric.write_scene_file: Esc while it reads writes nothing; to its end, the same file
    budget, ticks.TICK_BUDGET = ticks.TICK_BUDGET, 0.0
    clicked_path, once_path = os.path.join(folder, "clicked.json"), os.path.join(folder, "once.json")
    bpy.ops.quadric.export_scene(filepath=once_path)
    op, reports = ticked_operator("QUADRIC_OT_write_scene_file", ctx, filepath=clicked_path)
    op.modal(ctx, Event('TIMER', op._timer))
    res["export_esc"] = dict(result=sorted(op.modal(ctx, Event('ESC'))), reports=reports,
                             written=os.path.exists(clicked_path))
    op, reports = ticked_operator("QUADRIC_OT_write_scene_file", ctx, filepath=clicked_path)
    res["export_ticked"] = dict(results=tick_to_end(op, ctx), reports=reports,
                                same_file=open(clicked_path).read() == open(once_path).read())
    ticks.TICK_BUDGET = budget
    keys_once = keyframe_dump([ball, brick])
    bpy.ops.quadric.clear_bake()
    objects_before = sorted(o.name for o in bpy.data.objects)
    budget, ticks.TICK_BUDGET = ticks.TICK_BUDGET, 0.0
    op, reports = ticked_operator("QUADRIC_OT_bake_recording_file", ctx, filepath=same, ignore_scene_changes=False)
    for _ in range(2):
        op.modal(ctx, Event('TIMER', op._timer))
    res["esc"] = dict(result=sorted(op.modal(ctx, Event('ESC'))), reports=reports,
                      baked=[o.quadric.is_baked for o in (ball, brick)],
                      same_objects=sorted(o.name for o in bpy.data.objects) == objects_before)
    op, reports = ticked_operator("QUADRIC_OT_bake_recording_file", ctx, filepath=same, ignore_scene_changes=False)
    res["ticked"] = dict(results=tick_to_end(op, ctx), reports=reports, baked=[o.quadric.is_baked for o in (ball, brick)],
                         same_keys=keyframe_dump([ball, brick]) == keys_once, keys=len(keys_once))
    ball.quadric.friction = 0.1
    op, reports = ticked_operator("QUADRIC_OT_bake_recording_file", ctx, filepath=same, ignore_scene_changes=False)
    res["ticked_refused"] = dict(results=tick_to_end(op, ctx), reports=reports)
    ball.quadric.friction = friction
    ticks.TICK_BUDGET = budget
    return res


MATERIAL_SETTINGS = {  # what scenario_materials sets on each object (Blender stores the floats in single precision)
    "Floor": dict(friction=0.7, rolling_friction=0.0, spinning_friction=0.0, restitution=0.0),
    "Bouncy": dict(friction=0.9, rolling_friction=0.003, spinning_friction=0.004, restitution=0.8, mass_mode='MASS',
                   mass=2.5),
    "Dull": dict(friction=0.2, rolling_friction=0.001, spinning_friction=0.002, restitution=0.3,
                 mass_mode='DENSITY', density=400.0),
}


def scenario_materials(out):
    """Two balls, each with its own material and one weighed by mass, the other by density, dropped 1 m onto a
    floor with a third material: what the conversion and the solver's Model make of the properties, and the
    heights the balls then have at every frame (120 fps, so a rebound's apex is sampled within g / 8 / 120^2)."""
    scene = empty_scene()
    scene.render.fps = 120
    scene.frame_start, scene.frame_end = 1, 120
    scene.quadric.substeps = 8
    bpy.ops.mesh.primitive_plane_add(size=10.0)
    floor = bpy.context.object
    floor.name = "Floor"
    select_only(floor)
    bpy.ops.quadric.add_collider()
    for name, x in (("Bouncy", -0.5), ("Dull", 0.5)):
        bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=3, radius=0.1, location=(x, 0.0, 1.1))
        bpy.context.object.name = name
        select_only(bpy.context.object)
        bpy.ops.quadric.add_body()
    for name, settings in MATERIAL_SETTINGS.items():
        for key, value in settings.items():
            setattr(bpy.data.objects[name].quadric, key, value)

    solver = mod("runtime").get_solver()
    conv = mod("convert").build_scene(solver, bpy.context)
    model = importlib.import_module("quadric_solver.model").build_model(conv.scene)

    def material(index):
        return dict(friction=model.material_friction[index], rolling_friction=model.material_rolling[index],
                    spinning_friction=model.material_spinning[index],
                    restitution=model.material_restitution[index])

    res = dict(settings=MATERIAL_SETTINGS, planes=[p["name"] for p in conv.scene.planes],
               floor=material(model.static_material[0]))
    for i, body in enumerate(conv.scene.bodies):
        s = bpy.data.objects[body["name"]].quadric
        res[body["name"]] = dict(index=i, semi_axes=list(body["semi_axes"]), position=list(body["position"]),
                                 mass=model.mass[i], inertia=list(model.inertia_local[i]),
                                 material=material(model.body_material[i]), fitted_volume=s.fitted_volume,
                                 fitted_semi_axes=list(s.semi_axes))
    job = mod("operators").prepare_job(bpy.context)
    res["job_state"] = job.run_sync()
    res["job_message"] = job.message
    res["heights"] = {name: job.recording.body_poses[:, res[name]["index"], 2].tolist() for name in ("Bouncy", "Dull")}
    res["fps"], res["dt"] = conv.fps, conv.dt
    return res


def scenario_colliders(out):
    """Add Collider with kind TUBE on a cylinder and BOX on a cube, both scaled, turned and moved: the containers
    the conversion makes of them (a body inside the box, since a scene needs one)."""
    empty_scene()
    bpy.ops.mesh.primitive_cylinder_add(vertices=32, radius=0.4, depth=1.2, location=(1.0, 2.0, 0.6),
                                        rotation=(0.3, 0.0, 0.0))
    tube = bpy.context.object
    tube.name = "Pipe"
    tube.scale = (1.25, 1.25, 1.5)
    bpy.ops.mesh.primitive_cube_add(size=1.0, location=(-2.0, 0.0, 0.5), rotation=(0.0, 0.0, 0.4))
    box = bpy.context.object
    box.name = "Crate"
    box.scale = (1.5, 0.8, 0.5)
    bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=2, radius=0.1, location=(-2.0, 0.0, 0.5))
    select_only(bpy.context.object)
    bpy.ops.quadric.add_body()
    bpy.context.view_layer.update()
    res = {}
    for obj, kind in ((tube, 'TUBE'), (box, 'BOX')):
        select_only(obj)
        res[obj.name] = dict(result=sorted(bpy.ops.quadric.add_collider(kind=kind)), role=obj.quadric.role,
                             kind=obj.quadric.collider_kind, auto=mod("convert").detect_collider_kind(obj))
    conv = mod("convert").build_scene(mod("runtime").get_solver(), bpy.context)
    res["planes"] = [p["name"] for p in conv.scene.planes]
    res["tubes"] = conv.scene.tubes
    res["boxes"] = conv.scene.boxes
    return res


def scenario_read_keys(out, blend_path, *names):
    bpy.ops.wm.open_mainfile(filepath=blend_path)
    enable()
    objs = [bpy.data.objects[n] for n in names]
    return dict(keys=keyframe_dump(objs), status=bpy.context.scene.quadric.status)


# ------------------------------------------------------------------- pre-flight check
OVERLAP_LAYOUT = {  # icospheres of radius 0.1 over a floor plane at z = 0: three overlapping pairs, one sunk in
    "PairA1": (0.0, 0.0, 0.5), "PairA2": (0.15, 0.0, 0.5),          # the floor, two bodies clear of everything
    "PairB1": (1.0, 0.0, 0.5), "PairB2": (1.0, 0.17, 0.5),
    "PairC1": (2.0, 0.0, 0.5), "PairC2": (2.06, 0.04, 0.53),
    "Sunk": (3.0, 0.0, 0.06),
    "Free1": (4.0, 0.0, 0.5), "Free2": (4.0, 0.0, 0.75),
}


def build_overlap_scene():
    scene = empty_scene()
    scene.frame_start, scene.frame_end = 1, 20
    bpy.ops.mesh.primitive_plane_add(size=20.0)
    floor = bpy.context.object
    floor.name = "Floor"
    select_only(floor)
    bpy.ops.quadric.add_collider()
    bodies = []
    for name, location in OVERLAP_LAYOUT.items():
        bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=3, radius=0.1, location=location)
        bpy.context.object.name = name
        bodies.append(bpy.context.object)
    select_only(*bodies)
    bpy.ops.quadric.add_body()
    return scene, bodies


# the solver's modules that never import numba (the add-on's checks use them before anything compiles)
NUMPY_ONLY = ("quadric_solver.rotations", "quadric_solver.mesh", "quadric_solver.validate",
              "quadric_solver.particles", "quadric_solver.particles.groups", "quadric_solver.precompile")


def kernel_modules():
    """numba and the solver's modules that import it (anything of the solver but its package and NUMPY_ONLY)."""
    return sorted(m for m in sys.modules if m == "numba" or m.startswith("numba.")
                  or (m.startswith("quadric_solver.") and m not in NUMPY_ONLY))


def body_centres(names):
    """Each body's ellipsoid centre in world space (re-read by name: undo replaces the objects)."""
    bpy.context.view_layer.update()
    return {n: list(bpy.data.objects[n].quadric.shape_display.matrix_world.translation) for n in names}


def scenario_preflight(out):
    """Check Scene on three overlapping pairs and a body sunk in the floor, then Resolve Overlaps, undo, redo."""
    scene, bodies = build_overlap_scene()
    names = [b.name for b in bodies]
    res = dict(kernels_at_start=kernel_modules(), radii={b.name: list(b.quadric.semi_axes) for b in bodies},
               centres=body_centres(names))
    res["check_error"] = op_error(bpy.ops.quadric.check_scene)
    res["problems"] = [dict(kind=p.kind, message=p.message, objects=list(p.objects), depth=p.depth)
                       for p in mod("preflight").check(bpy.context)]
    res["panel_problems"] = [(p.kind, p.message) for p in scene.quadric.problems]
    res["status"] = scene.quadric.status
    res["panel"] = draw_panels([bodies[0]])

    window = bpy.context.window_manager.windows[0]
    with bpy.context.temp_override(window=window):
        bpy.ops.ed.undo_push(message="before Resolve Overlaps")
        with captured_reports() as reports:
            # as a click does: undo=True lets Blender push the operator's undo step (if it has the UNDO flag)
            res["resolve"] = sorted(bpy.ops.quadric.resolve_overlaps('EXEC_DEFAULT', True))
    res["resolve_reports"] = reports
    res["resolved"] = body_centres(names)
    res["check_after_resolve"] = op_error(bpy.ops.quadric.check_scene)
    res["panel_after_resolve"] = len(scene.quadric.problems)
    with bpy.context.temp_override(window=window):
        bpy.ops.ed.undo()
    res["after_undo"] = body_centres(names)
    res["check_after_undo"] = op_error(bpy.ops.quadric.check_scene)
    with bpy.context.temp_override(window=window):
        bpy.ops.ed.redo()
    res["after_redo"] = body_centres(names)
    res["kernels_at_end"] = kernel_modules()
    return res


def ticked_operator(name, ctx, **props):
    """An operator (``name``, a TickedOperator, with the properties ``props``) as invoke() leaves it after a click,
    with its methods (bpy has no window to click in); and the reports it makes."""
    import types

    cls = getattr(bpy.types, name)
    reports = []
    op = types.SimpleNamespace(_timer=ctx.window_manager.event_timer_add(0.1), bl_label=cls.bl_label,
                               report=lambda kind, msg: reports.append((sorted(kind), msg)), **props)
    for method in ("steps", "done", "modal", "cancel", "_status", "_end", "_targets"):
        if hasattr(cls, method):
            setattr(op, method, getattr(cls, method).__get__(op))
    op._stepper = mod("ticks").Stepper(op.steps(ctx))
    return op, reports


def scenario_preflight_ticks(out):
    """Check Scene and Resolve Overlaps as a click runs them (modal, through the timer), a body a step with a
    budget of zero, against the same at once; Esc in the middle of each; and which heavy units a tick holds when
    only ALONE ends ticks."""
    scene, bodies = build_overlap_scene()
    scene.frame_current = 7  # the check reads the range's first frame and comes back
    names = [b.name for b in bodies]
    ticks, preflight, overlaps = mod("ticks"), mod("preflight"), mod("overlaps")
    ctx = bpy.context
    placed = {b.name: tuple(b.location) for b in bodies}

    def put_back():
        for b in bodies:
            b.location = placed[b.name]
        ctx.view_layer.update()

    def shown():
        return [[p.kind, p.message] for p in scene.quadric.problems]

    res = dict(once=[[p.kind, p.message] for p in preflight.check(ctx)], centres=body_centres(names))
    bpy.ops.quadric.resolve_overlaps()
    res["resolved_once"] = body_centres(names)
    put_back()
    scene.quadric.problems.clear()
    budget, ticks.TICK_BUDGET, preflight.READ_STEP = ticks.TICK_BUDGET, 0.0, 1

    # 1. Check Scene, then Resolve Overlaps, a step a tick.
    op, reports = ticked_operator("QUADRIC_OT_check_scene", ctx)
    res.update(check_results=tick_to_end(op, ctx), check_shown=shown(), check_reports=reports,
               check_frame=scene.frame_current)
    op, reports = ticked_operator("QUADRIC_OT_resolve_overlaps", ctx)
    res.update(resolve_results=tick_to_end(op, ctx), resolved_ticked=body_centres(names), resolve_reports=reports,
               resolve_shown=shown(), resolve_frame=scene.frame_current)

    # 2. Esc while the check reads the bodies: the panel keeps what it showed, the frame is put back.
    put_back()
    preflight.store(scene, preflight.check(ctx))
    res["check_esc_before"] = [shown(), scene.quadric.status]
    op, reports = ticked_operator("QUADRIC_OT_check_scene", ctx)
    for _ in range(3):
        op.modal(ctx, Event('TIMER', op._timer))
    res.update(check_esc_progress=list(op._stepper.progress), check_esc=sorted(op.modal(ctx, Event('ESC'))),
               check_esc_shown=shown(), check_esc_status=scene.quadric.status, check_esc_reports=reports,
               check_esc_frame=scene.frame_current)

    # 3. Esc before Resolve Overlaps moved anything, and once it has committed to the moves.
    op, reports = ticked_operator("QUADRIC_OT_resolve_overlaps", ctx)
    while "separating" not in op._stepper.progress[0]:
        assert sorted(op.modal(ctx, Event('TIMER', op._timer))) == ['RUNNING_MODAL']
    res.update(early_esc=sorted(op.modal(ctx, Event('ESC'))), early_esc_centres=body_centres(names),
               early_esc_reports=reports, early_esc_frame=scene.frame_current)
    op, reports = ticked_operator("QUADRIC_OT_resolve_overlaps", ctx)
    while not op._stepper.committed:
        assert sorted(op.modal(ctx, Event('TIMER', op._timer))) == ['RUNNING_MODAL']
    res["late_esc"] = sorted(op.modal(ctx, Event('ESC')))
    res.update(late_end=tick_to_end(op, ctx), late_esc_centres=body_centres(names))

    # 4. Only ALONE ends a tick: which heavy units each tick of a click holds (every pair measured; the moves).
    put_back()
    ticks.TICK_BUDGET, preflight.READ_STEP = 1e9, 1000
    heavy = []
    measure, move = overlaps.candidate_pairs, preflight._translate
    overlaps.candidate_pairs = lambda *a, **k: (heavy.append("pairs"), measure(*a, **k))[1]
    preflight._translate = lambda *a: (heavy.append("move"), move(*a))[1]
    per_tick = {}
    for key, name in (("check", "QUADRIC_OT_check_scene"), ("resolve", "QUADRIC_OT_resolve_overlaps")):
        op, _ = ticked_operator(name, ctx)
        per_tick[key] = []
        while True:
            del heavy[:]
            result = sorted(op.modal(ctx, Event('TIMER', op._timer)))
            per_tick[key].append(sorted(set(heavy)) + (["pairs"] if heavy.count("pairs") > 1 else []))
            if result != ['RUNNING_MODAL']:
                break
            assert len(per_tick[key]) < 1000
    overlaps.candidate_pairs, preflight._translate = measure, move
    res.update(per_tick=per_tick, heavy_resolved=body_centres(names))
    ticks.TICK_BUDGET = budget
    return res


def quadric_fields(obj):
    """An object's Quadric settings and fit, but for the datablocks they point to (its display differs by name)."""
    s = obj.quadric
    return {p.identifier: (list(v) if hasattr(v, "__len__") and not isinstance(v, str) else v)
            for p in s.bl_rna.properties if p.type not in ('POINTER', 'COLLECTION') and p.identifier != "rna_type"
            for v in [getattr(s, p.identifier)]}


def scenario_add_body_ticks(out):
    """Add Quadric Body as a click runs it (modal, through the timer), with a budget of zero, on copies of meshes
    made bodies at once by a script's call; Esc while it fits; and the order it reads and changes things in."""
    scene = empty_scene()
    ticks, body_shape = mod("ticks"), mod("body_shape")
    ctx = bpy.context
    made = []
    for k, (add, kwargs) in enumerate(((bpy.ops.mesh.primitive_ico_sphere_add, dict(subdivisions=2, radius=0.1)),
                                       (bpy.ops.mesh.primitive_cube_add, dict(size=0.2)),
                                       (bpy.ops.mesh.primitive_cylinder_add, dict(radius=0.1, depth=0.3)))):
        add(location=(k * 0.5, 0.0, 0.3), rotation=(0.3 * k, 0.2, 0.0), **kwargs)
        made.append(bpy.context.object)
    made[1].scale = (1.0, 2.0, 0.5)
    copies = []
    for obj in made:
        copy = obj.copy()
        copy.data = obj.data.copy()
        scene.collection.objects.link(copy)
        copies.append(copy)
    select_only(*made)
    res = dict(once=sorted(bpy.ops.quadric.add_body()), once_fields=[quadric_fields(o) for o in made])
    objects_before = sorted(o.name for o in bpy.data.objects)
    select_only(*copies)
    budget, ticks.TICK_BUDGET = ticks.TICK_BUDGET, 0.0
    props = dict(body_type='DYNAMIC', shape='AUTO', use_collection=False, collection="")

    # 1. Esc while it fits: nothing became a body, nothing was made.
    op, reports = ticked_operator("QUADRIC_OT_add_body", ctx, **props)
    for _ in range(2):
        op.modal(ctx, Event('TIMER', op._timer))
    res.update(esc_progress=list(op._stepper.progress), esc=sorted(op.modal(ctx, Event('ESC'))), esc_reports=reports,
               esc_roles=[o.quadric.role for o in copies], esc_objects=sorted(o.name for o in bpy.data.objects))

    # 2. A step a tick to the end, every mesh read before the first body is made.
    order = []
    fit, store = body_shape.fit, body_shape.apply_fit
    body_shape.fit = lambda context, obj, *a: (order.append(("fit", obj.name)), fit(context, obj, *a))[1]
    body_shape.apply_fit = lambda obj, *a: (order.append(("make", obj.name)), store(obj, *a))[1]
    op, reports = ticked_operator("QUADRIC_OT_add_body", ctx, **props)
    res["ticked_results"] = tick_to_end(op, ctx)
    body_shape.fit, body_shape.apply_fit = fit, store
    res["displays"] = [[o.name, body_shape.display_owner(o.quadric.shape_display).name,
                        [[c.name, c.type, c.target.name, c.use_scale_x, c.use_scale_y, c.use_scale_z]
                         for c in o.quadric.shape_display.constraints]] for o in made + copies]
    res.update(order=order, ticked_reports=reports, ticked_fields=[quadric_fields(o) for o in copies],
               objects_before=objects_before, objects_after=sorted(o.name for o in bpy.data.objects),
               copies=[o.name for o in copies])
    ticks.TICK_BUDGET = budget

    # 3. Each display's mesh (and a hull body's hull mesh) against Mesh.from_pydata of the same shape, and its flags.
    bpy.ops.mesh.primitive_cone_add(vertices=7, radius1=0.1, depth=0.2, location=(3.0, 0.0, 0.3))
    cone = bpy.context.object
    select_only(cone)
    res["cone_add"] = sorted(bpy.ops.quadric.add_body(shape='CONVEX_HULL'))
    found = body_shape.fit(ctx, cone, 'CONVEX_HULL')  # the same mesh and matrix: the same hull again

    def geometry(mesh):
        return dict(co=[list(v.co) for v in mesh.vertices], faces=[list(p.vertices) for p in mesh.polygons],
                    edges=sorted(sorted(e.vertices) for e in mesh.edges))

    def reference(vertices, faces):
        mesh = bpy.data.meshes.new("Reference")
        mesh.from_pydata(np.asarray(vertices).tolist(), [], [[int(i) for i in f] for f in faces])
        return geometry(mesh)

    res["display_meshes"] = {}
    for o in made + copies + [cone]:
        display = o.quadric.shape_display
        kind, params, hull, faces = body_shape.shape_of(o)
        c = display.constraints["Quadric Shape"]
        res["display_meshes"][o.name] = dict(
            kind=kind, made=geometry(display.data), reference=reference(*mod("shapes").display_mesh(kind, params,
                                                                                                    hull, faces)),
            flags=[display.display_type, display.hide_render, display.hide_select, display.data.users],
            inverse=[list(row) for row in c.inverse_matrix])
    res["hull"] = dict(made=geometry(cone.quadric.hull_mesh), reference=reference(found.hull_vertices,
                                                                                  found.hull_faces))
    # Fit Shape on a body whose mesh grew: the hull mesh it replaces is deleted
    old = cone.quadric.hull_mesh
    diameter = lambda mesh: max((a.co - b.co).length for a in mesh.vertices for b in mesh.vertices)  # noqa: E731
    old_name, old_size = old.name, diameter(old)
    cone.data.transform(__import__("mathutils").Matrix.Scale(1.5, 4))
    select_only(cone)
    res["refit"] = sorted(bpy.ops.quadric.fit_shape())
    new = cone.quadric.hull_mesh
    res["refit_hull"] = dict(old_kept=old_name in bpy.data.meshes and bpy.data.meshes[old_name] != new,
                             same=new.name == old_name, growth=diameter(new) / old_size,
                             hull_meshes=sorted(m.name for m in bpy.data.meshes if m.name.startswith("Cone Hull")))

    # bodies of one shape made together share one display mesh; one edited gets its own, and removing one
    # keeps the mesh the others show
    bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=2, radius=0.1, location=(5.0, 0.0, 0.3))
    twins = [bpy.context.object]
    for k in range(1, 3):
        twins.append(twins[0].copy())
        scene.collection.objects.link(twins[-1])
        twins[-1].location = (5.0 + k, 0.0, 0.3)
    select_only(*twins)
    res["twins_add"] = sorted(bpy.ops.quadric.add_body())
    meshes = [t.quadric.shape_display.data for t in twins]
    res["twins"] = dict(distinct=len({m.as_pointer() for m in meshes}), users=meshes[0].users,
                        params=[list(body_shape.shape_of(t)[1]) for t in twins])

    def extent(mesh):
        return np.ptp([list(v.co) for v in mesh.vertices], axis=0).tolist()

    before = extent(meshes[0])
    twins[1].quadric.semi_axes = tuple(1.5 * x for x in twins[1].quadric.semi_axes)
    d0, d1, d2 = (t.quadric.shape_display.data for t in twins)
    res["twins_edited"] = dict(own=d1 != d0, others_shared=d0 == d2, users=[d0.users, d1.users], before=before,
                               extent0=extent(d0), extent1=extent(d1))
    select_only(twins[0])
    res["twins_remove"] = sorted(bpy.ops.quadric.remove())
    res["twins_after_remove"] = dict(kept=twins[2].quadric.shape_display.data == d0, users=d0.users,
                                     extent=extent(twins[2].quadric.shape_display.data))
    res["memo"] = fit_memo_part(scene, body_shape)
    return res


def fit_memo_part(scene, body_shape):
    """Linked duplicates of a lumpy mesh (as hulls) and of a cube (as boxes), turned and placed at random under
    one uneven scale, fitted by fit_steps and each by itself: (fit_shape calls, each family's world points of the
    two fits). One duplicate has another scale and one a modifier: those are fitted by themselves."""
    fitting, ops = mod("fitting"), mod("operators")
    rng = np.random.default_rng(7)
    bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=1, radius=0.1, location=(0.0, 3.0, 0.3))
    lumpy = bpy.context.object
    for v in lumpy.data.vertices:
        v.co *= rng.uniform(0.7, 1.3)
    bpy.ops.mesh.primitive_cube_add(size=0.2, location=(0.0, 4.0, 0.3))
    cube = bpy.context.object
    groups = {}
    for family, source in (("CONVEX_HULL", lumpy), ("BOX", cube)):
        objs = [source] + [source.copy() for _ in range(4)]
        for k, obj in enumerate(objs):
            if k:
                scene.collection.objects.link(obj)
            obj.location = rng.uniform(-2.0, 2.0, 3)
            obj.rotation_euler = rng.uniform(-np.pi, np.pi, 3)
            obj.scale = (0.5, 0.7, 1.2)
        objs[3].scale = (0.5, 0.7, 1.3)  # another scale
        objs[4].modifiers.new("Weld", 'WELD')  # evaluated into another mesh, as far as the memo can tell
        groups[family] = objs
    bpy.context.view_layer.update()
    calls = []
    shape_fit = fitting.fit_shape

    def counted(*args, **kwargs):
        calls.append(args[3])
        return shape_fit(*args, **kwargs)

    def world_points(found):
        if found.kind == 5:  # a hull: its vertices
            local = found.hull_vertices
        else:  # a box: its corners
            local = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * found.params[:3]
        return np.round(found.center + local @ found.rotation.T, 9).tolist()

    res = {}
    fitting.fit_shape = counted
    try:
        for family, objs in groups.items():
            calls.clear()
            fits, problems = mod("ticks").drain(ops.fit_steps(bpy.context, objs, family))
            memo_calls = list(calls)
            alone = [body_shape.fit(bpy.context, obj, family) for obj in objs]
            res[family] = dict(calls=memo_calls, problems=problems, objects=[o.name for o in objs],
                               kinds=[[f.kind for _, f in fits], [f.kind for f in alone]],
                               params=[[f.params.tolist() for _, f in fits], [f.params.tolist() for f in alone]],
                               memo=[world_points(f) for _, f in fits], alone=[world_points(f) for f in alone])
    finally:
        fitting.fit_shape = shape_fit
    return res


def scenario_check_problems(out):
    """Check Scene on every other kind of problem at once: a flat body, a dynamic body under an unevenly scaled
    parent, a zero density,
    a rope whose curve folds back, a rope tied to no object, a flat box collider, an empty frame range."""
    scene = empty_scene()
    scene.frame_start, scene.frame_end = 5, 5
    bodies = {}
    for name, location in (("Flat", (0, 0, 1)), ("Child", (1, 0, 1)), ("Weightless", (2, 0, 1))):
        bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=2, radius=0.1, location=location)
        bpy.context.object.name = name
        bodies[name] = bpy.context.object
    select_only(*bodies.values())
    bpy.ops.quadric.add_body()
    bodies["Flat"].quadric.semi_axes[2] = 0.0  # a zero axis typed into the panel
    bpy.ops.object.empty_add(location=(1, 0, 2))
    bpy.context.object.name = "Holder"
    bpy.context.object.scale = (1.0, 2.0, 1.0)  # a rigid body cannot follow an uneven scale
    bodies["Child"].parent = bpy.context.object
    bodies["Weightless"].quadric.density = 0.0
    bpy.ops.mesh.primitive_cube_add(location=(0, 5, 0))
    crate = bpy.context.object
    crate.name = "Crate"
    select_only(crate)
    bpy.ops.quadric.add_collider(kind='BOX')
    crate.scale = (1.0, 0.0, 1.0)
    data = bpy.data.curves.new("Hairpin", 'CURVE')
    data.dimensions = '3D'
    spline = data.splines.new('POLY')
    spline.points.add(2)
    for k, co in enumerate([(0, 0, 3), (1, 0, 3), (0, 0, 3.0001)]):
        spline.points[k].co = (*co, 1.0)
    hairpin = bpy.data.objects.new("Hairpin", data)
    scene.collection.objects.link(hairpin)
    select_only(hairpin)
    bpy.ops.quadric.make_rope(segments=8, radius=0.01)
    data2 = data.copy()
    data2.splines[0].points[2].co = (1, 1, 3, 1)
    loose = bpy.data.objects.new("Loose", data2)
    scene.collection.objects.link(loose)
    select_only(loose)
    bpy.ops.quadric.make_rope(segments=8, radius=0.01, end_mode='OBJECT', end_object="Holder")
    bpy.context.object.quadric.end_object = None  # the object it was tied to, unset afterwards
    return dict(check_error=op_error(bpy.ops.quadric.check_scene),
                problems=[dict(kind=p.kind, message=p.message, objects=list(p.objects))
                          for p in mod("preflight").check(bpy.context)],
                simulate_error=op_error(bpy.ops.quadric.simulate), kernels=kernel_modules())


def object_state():
    """Everything a failed simulation must leave as it was: transforms, animation, bake flags, datablocks."""
    compat = mod("blender_compat")
    return dict(objects={o.name: dict(matrix=[list(r) for r in o.matrix_world], baked=o.quadric.is_baked,
                                      action=o.animation_data.action.name if o.animation_data and
                                      o.animation_data.action else None, fcurves=len(compat.fcurves_of(o)))
                         for o in bpy.data.objects},
                counts={k: len(getattr(bpy.data, k)) for k in ("objects", "actions", "meshes", "collections")})


def scenario_simulate_overlaps(out):
    """Simulate on the overlapping scene: it must stop before the solver loads, listing every overlap."""
    scene, _ = build_overlap_scene()
    before = object_state()
    bpy.ops.quadric.simulate.get_rna_type()  # (operator lookups load nothing)
    import time

    started = time.perf_counter()
    error = op_error(bpy.ops.quadric.simulate)
    seconds = time.perf_counter() - started
    return dict(error=error, seconds=seconds, unchanged=object_state() == before, kernels=kernel_modules(),
                status=scene.quadric.status, panel_problems=len(scene.quadric.problems))


def scenario_check_thousand(out, count):
    """Check Scene on a grid of ``count`` ellipsoids of random shape and orientation (no two within reach),
    with three overlapping pairs and one body sunk in the floor planted among them; how long it takes."""
    import time

    count = int(count)
    scene = empty_scene()
    bpy.ops.mesh.primitive_plane_add(size=200.0)
    bpy.context.object.name = "Floor"
    select_only(bpy.context.object)
    bpy.ops.quadric.add_collider()
    mesh = bpy.data.meshes.new("Pebble")
    mesh.from_pydata([(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)], [], [(0, 1, 2), (0, 1, 3), (0, 2, 3), (1, 2, 3)])
    rng = np.random.default_rng(11)
    side = int(np.ceil(count ** (1 / 3)))
    spacing = 0.25  # semi-axes are at most 0.1: bounding spheres never reach each other
    objs = []
    for k in range(count):
        obj = bpy.data.objects.new(f"Pebble.{k:04d}", mesh)
        scene.collection.objects.link(obj)
        i, j, layer = k % side, (k // side) % side, k // side ** 2
        obj.location = (i * spacing, j * spacing, 0.2 + layer * spacing)
        obj.rotation_euler = tuple(rng.uniform(0.0, 2.0 * np.pi, 3))
        s = obj.quadric
        s.role = 'BODY'
        s.semi_axes = tuple(rng.uniform(0.03, 0.1, 3))
        s.fitted_volume = 4.0 / 3.0 * np.pi * float(np.prod(s.semi_axes))
        objs.append(obj)
    planted = {}
    for k in (10, 500, 900):  # overlapping pairs: two spheres of 0.06, centres 0.1 apart (0.02 deep)
        a, b = objs[k], objs[k + 1]
        a.quadric.semi_axes = b.quadric.semi_axes = (0.06, 0.06, 0.06)
        b.location = a.location + __import__("mathutils").Vector((0.1, 0.0, 0.0))
        planted[(a.name, b.name)] = 0.02
    sunk = objs[300]
    sunk.quadric.semi_axes = (0.05, 0.05, 0.05)
    sunk.location.z = 0.03
    planted[(sunk.name, "Floor")] = 0.02
    bpy.context.view_layer.update()
    started = time.perf_counter()
    error = op_error(bpy.ops.quadric.check_scene)
    operator_seconds = time.perf_counter() - started
    started = time.perf_counter()
    problems = mod("preflight").check(bpy.context)
    check_seconds = time.perf_counter() - started
    return dict(error=error, operator_seconds=operator_seconds, check_seconds=check_seconds,
                problems=[dict(objects=list(p.objects), depth=p.depth, kind=p.kind) for p in problems],
                planted=[[*names, depth] for names, depth in planted.items()], kernels=kernel_modules())


# --------------------------------------------------------------------------- instanced output
def datablock_names():
    """Every datablock's name by kind: what a bake may add and Clear Bake must remove again."""
    return {kind: sorted(getattr(bpy.data, kind).keys())
            for kind in ("objects", "meshes", "node_groups", "collections", "actions")}


def instance_matrices(points):
    """{source object name: world matrix} of the instances the points object makes, from the evaluated depsgraph."""
    depsgraph = bpy.context.evaluated_depsgraph_get()
    found = {}
    for inst in depsgraph.object_instances:
        if inst.is_instance and inst.parent is not None and inst.parent.original == points:
            name = inst.instance_object.original.name
            assert name not in found, f"'{name}' instanced twice"
            found[name] = [list(row) for row in inst.matrix_world]
    return found


def instance_frames(scene, points, frames):
    res = {}
    for f in frames:
        scene.frame_set(f)
        res[str(f)] = instance_matrices(points)
    return res


def visibility(objs):
    return {o.name: [o.hide_viewport, o.hide_render] for o in objs}


def files_under(folder):
    return sorted(os.path.relpath(os.path.join(d, f), folder) for d, _, fs in os.walk(folder) for f in fs)


def bindings_of(conv):
    """What a test needs to place each body's object from the recording itself."""
    return {b.object_name: dict(index=b.index, offset_location=list(map(float, b.offset_location)),
                                offset_rotation=list(map(float, b.offset_rotation)),
                                scale=list(bpy.data.objects[b.object_name].scale)) for b in conv.bodies}


def scenario_instances(out, blend_path, usd_path):
    """The bake scene baked as instances: through the job (keeping its Recording), the depsgraph's instances at
    several frames, the cache file, Clear Bake, undo and redo of the operator, a failing bake, Export USD."""
    scene, bodies = build_bake_scene()
    scene.quadric.bake_output = 'INSTANCES'
    folder = os.path.dirname(blend_path)
    ops, instances, point_cache = mod("operators"), mod("instances"), mod("point_cache")
    displays = [o.quadric.shape_display for o in bodies]
    names = [o.name for o in bodies + displays]  # undo replaces the objects: read them again by name
    bpy.ops.wm.save_as_mainfile(filepath=blend_path)
    before = datablock_names()
    res = dict(visibility_before=visibility(bodies + displays), files_before=files_under(folder))

    # 1. The job, as the operator runs it, keeping the Recording to compare with.
    ctx = bpy.context
    job = ops.prepare_job(ctx)
    job.run_sync()
    with captured_reports() as reports:
        res["finish"] = sorted(ops.finish_job(ctx, job))
    res["finish_reports"] = reports
    res["status"] = scene.quadric.status
    points = scene.quadric.instance_points
    res["points"] = points.name
    res["recording"] = job.recording.body_poses.tolist()
    res["frame_start"] = job.conv.frame_start
    res["bindings"] = bindings_of(job.conv)
    res["new"] = {kind: sorted(set(names) - set(before[kind])) for kind, names in datablock_names().items()}
    res["points_matrix"] = [list(row) for row in points.matrix_world]
    cache = points.modifiers[instances.CACHE_MODIFIER]
    res["cache_settings"] = dict(forward=cache.forward_axis, up=cache.up_axis, flip=sorted(cache.flip_axis)
                                 if isinstance(cache.flip_axis, set) else [i for i, f in enumerate(cache.flip_axis)
                                                                          if f], filepath=cache.filepath)
    path = bpy.path.abspath(cache.filepath)
    data, start, rate = point_cache.read_pc2(path)
    res["pc2"] = dict(shape=list(data.shape), start=start, rate=rate)
    res["files_baked"] = files_under(folder)
    res["visibility_baked"] = visibility(bodies + displays)
    last = scene.frame_start + len(res["recording"]) - 1
    frames = [scene.frame_start, scene.frame_start + 1, (scene.frame_start + last) // 2, last]
    res["instances"] = instance_frames(scene, points, frames)
    scene.frame_set(scene.frame_start)
    depsgraph = bpy.context.evaluated_depsgraph_get()
    res["evaluated_objects"] = sorted(o.original.name for o in depsgraph.objects)
    res["panel"] = draw_panels([bodies[0]])

    # 2. Export USD: the point instancer, read back with pxr in another process (tests/addon/usd_instancer.py).
    with captured_reports() as reports:
        res["usd_export"] = sorted(bpy.ops.quadric.export_usd(filepath=usd_path))
    res["usd_reports"] = reports
    res["usd_point_instancer"] = mod("blender_compat").USD_POINT_INSTANCER
    res["bpy_site_packages"] = os.path.join(bpy.utils.resource_path('LOCAL'), "python", "lib",
                                            f"python{sys.version_info.major}.{sys.version_info.minor}",
                                            "site-packages")

    # 3. Clear Bake: no datablock or file of the bake is left, and the bodies show as they did. An object made
    #    after the bake, the scene's last, is not what the report names.
    res["fields_baked"] = bake_fields_set(bodies + displays)
    marker = bpy.data.objects.new("Zz Marker", None)
    scene.collection.objects.link(marker)
    with captured_reports() as reports:
        res["clear"] = sorted(bpy.ops.quadric.clear_bake())
    res["clear_reports"] = reports
    res["last_object_at_clear"] = list(scene.objects)[-1].name
    bpy.data.objects.remove(marker)
    res["fields_after_clear"] = bake_fields_set(bodies + displays)
    res["after_clear"] = datablock_names()
    res["before"] = before
    res["files_after_clear"] = files_under(folder)
    res["visibility_after_clear"] = visibility(bodies + displays)
    res["pointers_after_clear"] = [x is None for x in instances.current(scene)]

    # 4. The operator as a click runs it (one undo step): undo removes the bake, redo brings it back.
    window = bpy.context.window_manager.windows[0]
    with bpy.context.temp_override(window=window):
        bpy.ops.ed.undo_push(message="before Simulate")
        res["simulate"] = sorted(bpy.ops.quadric.simulate('EXEC_DEFAULT', True))
    res["after_simulate"] = datablock_names()["objects"]
    with bpy.context.temp_override(window=window):
        bpy.ops.ed.undo()
    res["after_undo"] = datablock_names()
    res["visibility_after_undo"] = visibility([bpy.data.objects[n] for n in names])
    with bpy.context.temp_override(window=window):
        bpy.ops.ed.redo()
    scene = bpy.context.scene
    points = scene.quadric.instance_points
    res["after_redo_points"] = points.name if points is not None else None
    res["after_redo"] = instance_frames(scene, points, [last]) if points is not None else {}
    bodies, displays = [bpy.data.objects[n] for n in names[:2]], [bpy.data.objects[n] for n in names[2:]]
    res["visibility_after_redo"] = visibility(bodies + displays)
    bpy.ops.quadric.clear_bake()

    # 5. A bake that fails mid-way (Blender does not instance a source: the order lookup raises) leaves the file as
    #    it was, with its earlier instanced bake in place.
    job = ops.prepare_job(ctx)
    job.run_sync()
    ops.finish_job(ctx, job)
    ops.finish_job(ctx, job)
    points = scene.quadric.instance_points  # a bake over a bake: the names stay the same
    res["rebake_names"] = [points.name, points.data.name, scene.quadric.instance_nodes.name,
                           scene.quadric.instance_sources.name, scene.quadric.instance_sources.children[0].name[:-2]]
    kept = dict(blocks=datablock_names(), files=files_under(folder), visibility=visibility(bodies),
                points=scene.quadric.instance_points.name, instances=instance_matrices(scene.quadric.instance_points))
    real = instances._child_order

    def refuse(context, points, objects):
        real(context, points, objects)
        raise instances.InstanceBakeError(f"instanced bake '{points.name}': Blender did not instance "
                                          f"'{objects[-1].name}'")

    instances._child_order = refuse
    try:
        res["failed_finish"] = sorted(ops.finish_job(ctx, job))
    finally:
        instances._child_order = real
    res["failed_status"] = scene.quadric.status
    res["failed_kept"] = kept == dict(blocks=datablock_names(), files=files_under(folder),
                                      visibility=visibility(bodies), points=scene.quadric.instance_points.name,
                                      instances=instance_matrices(scene.quadric.instance_points))
    bpy.ops.quadric.clear_bake()

    # 6. A cache folder that cannot be made (a file stands where it goes): nothing changes, the error says where.
    blocker = os.path.join(folder, point_cache.CACHE_FOLDER)
    for name in os.listdir(blocker) if os.path.isdir(blocker) else []:
        os.rmdir(os.path.join(blocker, name))
    if os.path.isdir(blocker):
        os.rmdir(blocker)
    with open(blocker, "w") as handle:
        handle.write("not a folder")
    untouched = dict(blocks=datablock_names(), visibility=visibility(bodies + displays))
    res["blocked_finish"] = sorted(ops.finish_job(ctx, job))
    res["blocked_status"] = scene.quadric.status
    res["blocked_untouched"] = untouched == dict(blocks=datablock_names(), visibility=visibility(bodies + displays))
    res["blocked_files"] = files_under(folder)
    os.remove(blocker)

    # 7. Poses that are not finite are refused by name before anything is written.
    bad = job.recording.body_poses.copy()
    target = next(b for b in job.conv.bodies if b.object_name == "Brick")
    bad[3, target.index, 0] = math.nan

    class Bad:
        body_poses = bad

    try:
        mod("bake").bake_recording(ctx, job.conv, Bad)
        res["nan_error"] = ""
    except ValueError as exc:
        res["nan_error"] = str(exc)
    res["nan_files"] = files_under(folder)
    return res


def mesh_co(obj):
    """A mesh object's vertices as stored (float32, the object's axes)."""
    co = np.empty(3 * len(obj.data.vertices), dtype=np.float32)
    obj.data.vertices.foreach_get("co", co)
    return co.reshape(-1, 3)


def instance_bake_state(scene):
    """An instanced bake as the file holds it: the cache's samples (not its file name), the points mesh, the
    instances Blender makes at a few frames."""
    points = scene.quadric.instance_points
    data, start, rate = mod("point_cache").read_pc2(bpy.path.abspath(points.modifiers[mod("instances").CACHE_MODIFIER]
                                                                     .filepath))
    scale = np.empty(3 * len(points.data.vertices), dtype=np.float32)
    points.data.attributes[mod("instances").SCALE].data.foreach_get("vector", scale)
    return dict(samples=data.tolist(), start=start, rate=rate, co=mesh_co(points).tolist(), scale=scale.tolist(),
                names=[points.name, points.data.name, scene.quadric.instance_nodes.name,
                       scene.quadric.instance_sources.name],
                instances=instance_frames(scene, points, [scene.frame_start, scene.frame_start + 7]))


def scenario_instances_chunks(out, blend_path):
    """Bake To Instances after a run through the modal operator's timer, one step a tick (a budget of zero, a
    frame of the cache a step), against the same bake at once; Esc and the Cancel button in the middle leave
    the file (with an earlier bake) as it was; Esc once the bake has committed lets it finish."""
    scene, bodies = build_bake_scene()
    scene.quadric.bake_output = 'INSTANCES'
    folder = os.path.dirname(blend_path)
    bpy.ops.wm.save_as_mainfile(filepath=blend_path)
    ops, ticks, instances = mod("operators"), mod("ticks"), mod("instances")
    ctx = bpy.context
    displays = [o.quadric.shape_display for o in bodies]
    job = ops.prepare_job(ctx)
    job.run_sync()
    res = dict(frames=len(job.recording.body_poses))
    before = datablock_names()
    ticks.TICK_BUDGET, instances.MARKER_ROWS = 0.0, 2  # two bodies: one frame of the cache a step

    def operator():
        op, reports = operator_for(job, ctx.window_manager.event_timer_add(0.1))
        ops.active_job = job
        return op, reports

    # 1. A tick at a time, then at once.
    op, _ = operator()
    res["ticked_results"] = tick_to_end(op, ctx)
    res["ticked_status"] = scene.quadric.status
    res["ticked"] = instance_bake_state(scene)
    bpy.ops.quadric.clear_bake()
    res["cleared"] = datablock_names() == before
    res["one_shot_finish"] = sorted(ops.finish_job(ctx, job))
    res["one_shot"] = instance_bake_state(scene)

    def kept_state():
        points = scene.quadric.instance_points
        return dict(blocks=datablock_names(), files=files_under(folder), visibility=visibility(bodies + displays),
                    points=[points.name, points.hide_viewport], instances=instance_matrices(points),
                    status=[o.quadric.instance_hidden for o in bodies])

    def tick_until_written(op, frames):
        """Timer events until the steps have written ``frames`` frames of the cache; what each returned."""
        results = []
        while op._bake is None or op._bake.progress[:2] < ("writing the instances' point cache", frames):
            results.append(sorted(op.modal(ctx, Event('TIMER', op._timer))))
            assert results[-1] == ['RUNNING_MODAL'] and len(results) < 1000, results
        return results

    # 2. Esc after a few frames of the cache, the bake at once still in place.
    kept = kept_state()
    op, reports = operator()
    res["mid_results"] = tick_until_written(op, 3)
    res["mid_progress"] = list(op._bake.progress)
    res["mid_previous_hidden"] = scene.quadric.instance_points.hide_viewport  # beside the new one meanwhile
    res["mid_files"] = files_under(folder)
    res["esc"] = sorted(op.modal(ctx, Event('ESC')))
    res["esc_reports"], res["esc_status"] = reports, scene.quadric.status
    res["esc_active_job"] = ops.active_job is not None
    res["esc_kept"], res["esc_before"], res["esc_after"] = kept == kept_state(), kept, kept_state()

    # 2b. Esc once the datablocks are built and the depsgraph rebuilt, before the instance order is read.
    op, _ = operator()
    while op._bake is None or op._bake.progress[0] != "reading the instances' order":
        assert sorted(op.modal(ctx, Event('TIMER', op._timer))) == ['RUNNING_MODAL'] and op._bake.units < 1000
    res["built_blocks"] = len(bpy.data.objects) - len(kept["blocks"]["objects"])  # the new points object
    res["built_esc"] = sorted(op.modal(ctx, Event('ESC')))
    res["built_kept"] = kept == kept_state()

    # 2c. The step that builds the datablocks begins a tick of its own, however much budget is left.
    stepper = ticks.Stepper(mod("bake").bake_recording_steps(ctx, job.conv, job.recording))
    alone = [stepper.advance(budget=1e9), list(stepper.progress), datablock_names() == kept["blocks"]]
    alone += [stepper.advance(budget=0.0), list(stepper.progress), datablock_names() == kept["blocks"]]
    res["alone"] = alone + [stepper.cancel(), kept == kept_state()]

    # 3. The Cancel button in the middle.
    op, _ = operator()
    tick_until_written(op, 1)
    res["button"] = sorted(bpy.ops.quadric.cancel())
    res["button_tick"] = sorted(op.modal(ctx, Event('TIMER', op._timer)))
    res["button_kept"] = kept == kept_state()

    # 4. Esc once the bake has committed (the new cache in place, the earlier bake removed): it finishes.
    op, _ = operator()
    ticked = []
    while op._bake is None or not op._bake.committed:
        ticked.append(sorted(op.modal(ctx, Event('TIMER', op._timer))))
        assert ticked[-1] == ['RUNNING_MODAL'] and len(ticked) < 1000, ticked
    res["late_esc"] = sorted(op.modal(ctx, Event('ESC')))
    res["late_end"] = tick_to_end(op, ctx)
    res["late"] = instance_bake_state(scene)
    return res


def keyframe_bake_state(objs, arm):
    """A keyframe bake as the file holds it: every action's name, each object's and bone's transform, rotation mode,
    action and slot, the originals kept for Clear Bake, and every fcurve's keys."""
    kept = {o.name: dict(baked=o.quadric.is_baked, action=getattr(o.quadric.bake_action, "name", None),
                         original=[o.quadric.orig_rotation_mode, list(o.quadric.orig_location),
                                   getattr(o.quadric.orig_action, "name", None)]) for o in objs + [arm]}
    return dict(blocks=datablock_names(), transforms=transforms(objs + [arm], list(arm.pose.bones)), kept=kept,
                keys=keyframe_dump(objs + [arm]))


def scenario_keyframes_chunks(out):
    """Bake To Keyframes (bodies and a rope) after a run through the modal operator's timer, a step a tick (a
    budget of zero), against the same bake at once; Esc in the middle leaves the file (with an earlier bake) as it
    was; Esc once it has committed lets it finish."""
    scene, bodies = build_bake_scene()
    select_only(make_curve("Swing", [(3.0, 0.0, 2.0), (4.0, 0.0, 2.0)]))
    bpy.ops.quadric.make_rope(segments=4, radius=0.02, start_mode='PIN', end_mode='FREE')
    arm = bpy.context.object
    ops, ticks = mod("operators"), mod("ticks")
    ctx = bpy.context
    job = ops.prepare_job(ctx)
    job.run_sync()
    before = keyframe_bake_state(bodies, arm)
    ticks.TICK_BUDGET = 0.0

    def operator():
        op, reports = operator_for(job, ctx.window_manager.event_timer_add(0.1))
        ops.active_job = job
        return op, reports

    # 1. A tick at a time, then at once.
    op, _ = operator()
    res = dict(ticked_results=tick_to_end(op, ctx), ticked_status=scene.quadric.status,
               ticked=keyframe_bake_state(bodies, arm))
    bpy.ops.quadric.clear_bake()
    res["before"], res["cleared"] = before, keyframe_bake_state(bodies, arm)
    res["one_shot_finish"] = sorted(ops.finish_job(ctx, job))
    res["one_shot"] = keyframe_bake_state(bodies, arm)

    # 2. Esc while the keys are written, the bake at once still in place: nothing changes.
    op, reports = operator()
    progress = []
    while op._bake is None or op._bake.progress[:2] < ("writing the keyframes", 2):
        assert sorted(op.modal(ctx, Event('TIMER', op._timer))) == ['RUNNING_MODAL'] and len(progress) < 1000
        progress.append(list(op._bake.progress))
    res["mid_progress"] = progress
    res["mid_actions"] = len(bpy.data.actions) - len(res["one_shot"]["blocks"]["actions"])
    res["esc"] = sorted(op.modal(ctx, Event('ESC')))
    res["esc_status"] = scene.quadric.status
    res["esc_active_job"] = ops.active_job is not None
    res["esc_kept"] = keyframe_bake_state(bodies, arm) == res["one_shot"]

    # 3. Esc once it has committed: it finishes, as the bake at once.
    op, _ = operator()
    while op._bake is None or not op._bake.committed:
        assert sorted(op.modal(ctx, Event('TIMER', op._timer))) == ['RUNNING_MODAL']
    res["late_esc"] = sorted(op.modal(ctx, Event('ESC')))
    res["late_end"] = tick_to_end(op, ctx)
    res["late"] = keyframe_bake_state(bodies, arm)
    return res


def scenario_start_chunks(out):
    """Simulate's start (Check Scene and the conversion) through the modal operator's timer, a step a tick (a budget
    of zero, a body a step), against the same start at once; Esc and the Cancel button in the middle leave the file
    and the current frame as they were."""
    scene, bodies = build_bake_scene()
    scene.frame_current = 7
    ops, ticks, preflight, convert = mod("operators"), mod("ticks"), mod("preflight"), mod("convert")
    ctx = bpy.context
    once = ops.prepare_job(ctx).conv
    res = dict(once=[once.scene.content_hash(), bindings_of(once)])
    ticks.TICK_BUDGET, preflight.READ_STEP, convert.CONVERT_STEP = 0.0, 1, 1
    watched = bodies + [bpy.data.objects["Pusher"]]
    before = [datablock_names(), transforms(watched, []), scene.frame_current]

    def starting():
        op, reports = operator_for(None, ctx.window_manager.event_timer_add(0.1))
        op._start = ops.active_job = ops.StartingJob(ops.prepare_steps(ctx, op))
        return op, reports

    # 1. A tick at a time until the run starts.
    op, _ = starting()
    results, shown = [], []
    while op._start is not None:
        results.append(sorted(op.modal(ctx, Event('TIMER', op._timer))))
        shown.append(ops.active_job.describe())
        assert len(results) < 1000
    res.update(results=results, shown=shown, started=op._job.state, timer=op._timer.time_step)
    res["ticked"] = [op._job.conv.scene.content_hash(), bindings_of(op._job.conv)]
    bodies_list = op._job.conv.scene.bodies
    res["held_while_running"] = gc.get_freeze_count()
    res["conversion_collected_meanwhile"] = any(o is bodies_list for o in gc.get_objects())
    op.cancel(ctx)  # (as when Blender closes) the run is not what this checks
    op._job.wait(120)
    res["held_after_run"] = gc.get_freeze_count()
    res["conversion_collected_after"] = any(o is bodies_list for o in gc.get_objects())
    res["after_run"] = [datablock_names(), transforms(watched, []), scene.frame_current] == before

    # 2. Esc while the bodies are converted; 3. the Cancel button while the scene is checked.
    for key, label, stop in (("esc", "converting the bodies", lambda op: op.modal(ctx, Event('ESC'))),
                             ("button", "checking the bodies", None)):
        op, reports = starting()
        while label not in ops.active_job.describe():
            assert sorted(op.modal(ctx, Event('TIMER', op._timer))) == ['RUNNING_MODAL']
        res[f"{key}_frame_meanwhile"] = scene.frame_current
        if stop is None:
            bpy.ops.quadric.cancel()
            stop = (lambda op: op.modal(ctx, Event('TIMER', op._timer)))
        res[key] = sorted(stop(op))
        res[f"{key}_status"] = scene.quadric.status
        res[f"{key}_kept"] = [datablock_names(), transforms(watched, []), scene.frame_current] == before
        res[f"{key}_active_job"] = ops.active_job is not None
        res[f"{key}_held_after"] = gc.get_freeze_count()

    # 4. Steps of any number of bodies: each frame change (the range's first frame, each sampled frame, the way
    #    back) and the animated body's conversion still begin a step, so a tick holds at most one of them.
    preflight.READ_STEP = convert.CONVERT_STEP = 1000
    changes = []
    handler = lambda scene, *_: changes.append(scene.frame_current)
    bpy.app.handlers.frame_change_post.append(handler)
    op, _ = starting()
    per_tick = []
    while op._start is not None:
        seen = len(changes)
        op.modal(ctx, Event('TIMER', op._timer))
        per_tick.append([len(changes) - seen, ops.active_job.describe() if op._start is not None else ""])
        assert len(per_tick) < 1000
    bpy.app.handlers.frame_change_post.remove(handler)
    res["large_steps"] = dict(per_tick=per_tick, changes=len(changes),
                              ticked=[op._job.conv.scene.content_hash(), bindings_of(op._job.conv)])
    op.cancel(ctx)
    op._job.wait(120)
    return res


def scenario_instances_render(out):
    """Cycles renders of a glowing cube baked as an instance that leaves the camera's view at frame 2: the centre
    and corner pixels before the bake, at frame 1 (the instance there, its source hidden) and at frame 2
    (neither)."""
    scene = empty_scene()
    bpy.ops.mesh.primitive_cube_add(size=2.0)
    cube = bpy.context.object
    material = bpy.data.materials.new("Glow")
    material.use_nodes = True
    glow = material.node_tree.nodes.new('ShaderNodeEmission')
    glow.inputs["Strength"].default_value = 5.0
    material.node_tree.links.new(glow.outputs[0], material.node_tree.nodes["Material Output"].inputs[0])
    cube.data.materials.append(material)
    bpy.ops.object.camera_add(location=(0.0, 0.0, 10.0))  # looks down -Z at the cube
    scene.camera = bpy.context.object
    scene.render.engine = 'CYCLES'
    scene.cycles.device, scene.cycles.samples = 'CPU', 1
    scene.render.resolution_x = scene.render.resolution_y = 16
    scene.render.filepath = os.path.join(os.path.dirname(out), "render.png")

    def centre():
        """(centre pixel, corner pixel: the background), mean of the colour channels."""
        bpy.ops.render.render(write_still=True)
        image = bpy.data.images.load(scene.render.filepath, check_existing=False)
        pixels = np.array(image.pixels[:]).reshape(16, 16, 4)
        bpy.data.images.remove(image)
        return float(pixels[8, 8, :3].mean()), float(pixels[0, 0, :3].mean())

    res = dict(before=centre())
    poses = np.zeros((2, 1, 7))
    poses[:, 0, 3] = 1.0
    poses[1, 0, 0] = 100.0  # frame 2: far out of view
    mod("instances").bake_instances(bpy.context, [cube], 1, poses, np.zeros((1, 3)), [[1.0, 0.0, 0.0, 0.0]])
    res["hidden"] = [cube.hide_viewport, cube.hide_render]
    scene.frame_set(1)
    res["frame1"] = centre()
    scene.frame_set(2)
    res["frame2"] = centre()
    return res


def scenario_instances_many(out, count):
    """``count`` pebbles on a grid over a floor, baked as instances over a few frames: how many objects that adds,
    and every instance's matrix against the Recording."""
    import time

    count = int(count)
    scene = empty_scene()
    scene.frame_start, scene.frame_end = 1, 3
    scene.quadric.substeps = 2
    scene.quadric.bake_output = 'INSTANCES'
    bpy.ops.mesh.primitive_plane_add(size=200.0)
    select_only(bpy.context.object)
    bpy.ops.quadric.add_collider()
    rng = np.random.default_rng(5)
    side = int(np.ceil(count ** 0.5))
    meshes = []
    for k in range(4):  # a few pebble shapes, shared as real scenes share them
        bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=1, radius=1.0)
        shape = bpy.context.object
        meshes.append(shape.data)
        bpy.data.objects.remove(shape)
    for k in range(count):
        obj = bpy.data.objects.new(f"Pebble.{k:04d}", meshes[k % len(meshes)])
        scene.collection.objects.link(obj)
        obj.location = ((k % side) * 0.3, (k // side) * 0.3, 0.2)
        obj.rotation_euler = tuple(rng.uniform(0.0, 2.0 * np.pi, 3))
        obj.scale = tuple(rng.uniform(0.04, 0.1, 3))
        obj.quadric.role = 'BODY'
        obj.quadric.semi_axes = tuple(obj.scale)
    bpy.context.view_layer.update()
    before = datablock_names()
    ops = mod("operators")
    job = ops.prepare_job(bpy.context)
    job.run_sync()
    started = time.perf_counter()
    res = dict(finish=sorted(ops.finish_job(bpy.context, job)), status=scene.quadric.status)
    res["bake_seconds"] = time.perf_counter() - started
    res["new_objects"] = sorted(set(datablock_names()["objects"]) - set(before["objects"]))
    res["recording"] = job.recording.body_poses.tolist()
    res["frame_start"] = job.conv.frame_start
    res["bindings"] = bindings_of(job.conv)
    res["instances"] = instance_frames(scene, scene.quadric.instance_points, [1, 2, 3])
    return res


# ------------------------------------------------------------------------------ shapes
def mesh_volume(obj):
    """Blender's own measure of an object's evaluated mesh volume, in world units."""
    import bmesh

    bm = bmesh.new()
    try:
        bm.from_object(obj, bpy.context.evaluated_depsgraph_get())
        bm.transform(obj.matrix_world)
        return bm.calc_volume()
    finally:
        bm.free()


def world_vertices(obj):
    bpy.context.view_layer.update()
    return [list(obj.matrix_world @ v.co) for v in obj.data.vertices]


def shape_fields(settings):
    return dict(semi_axes=list(settings.semi_axes), exponents=list(settings.exponents),
                half_extents=list(settings.half_extents), radius=settings.radius, half_height=settings.half_height)


ROUND_TRIP = {  # a mesh for each shape family, fitted with it explicitly
    'ELLIPSOID': lambda: bpy.ops.mesh.primitive_uv_sphere_add(radius=0.5, location=(0, 10, 1)),
    'SUPERELLIPSOID': lambda: bpy.ops.mesh.primitive_cube_add(size=1.0, location=(2, 10, 1)),
    'BOX': lambda: bpy.ops.mesh.primitive_cube_add(size=1.0, location=(4, 10, 1), scale=(1.0, 0.5, 0.25)),
    'CYLINDER': lambda: bpy.ops.mesh.primitive_cylinder_add(radius=0.3, depth=1.0, location=(6, 10, 1)),
    'CAPSULE': lambda: bpy.ops.mesh.primitive_cylinder_add(radius=0.3, depth=1.5, location=(8, 10, 1)),
    'CONVEX_HULL': lambda: bpy.ops.mesh.primitive_torus_add(major_radius=0.5, minor_radius=0.2,
                                                            location=(10, 10, 1)),
}


def scenario_shapes(out, export_path):
    """Add Quadric Body's Auto choice on Blender's primitives; Check Scene on the default cube resting on the
    default plane; the panel's box half extents in the solver's Scene; every family exported with its mass; a
    convex hull's bake placed by the solver's shape offset."""
    import time

    scene = empty_scene()
    scene.frame_start, scene.frame_end = 1, 5
    bpy.ops.mesh.primitive_plane_add()
    plane = bpy.context.object
    select_only(plane)
    bpy.ops.quadric.add_collider()
    made = {}
    for name, add in (("Cube", lambda: bpy.ops.mesh.primitive_cube_add(location=(0, 0, 1))),
                      ("Can", lambda: bpy.ops.mesh.primitive_cylinder_add(location=(4, 0, 1))),
                      ("Ball", lambda: bpy.ops.mesh.primitive_uv_sphere_add(location=(8, 0, 1)))):
        add()
        made[name] = bpy.context.object
        made[name].name = name
    select_only(*made.values())
    started = time.perf_counter()
    res = dict(add_body=sorted(bpy.ops.quadric.add_body()), add_seconds=time.perf_counter() - started)
    res["auto"] = {name: obj.quadric.fitted_shape for name, obj in made.items()}
    res["fields"] = {name: shape_fields(obj.quadric) for name, obj in made.items()}
    res["notes"] = {name: obj.quadric.fit_note for name, obj in made.items()}
    cube = made["Cube"]
    res["cube_display"] = world_vertices(cube.quadric.shape_display)

    # Check Scene: the cube rests exactly on the plane (depth 0); sunk 0.3 m into it, it is reported
    res["check"] = [p.message for p in mod("preflight").check(bpy.context)]
    res["check_operator"] = op_error(bpy.ops.quadric.check_scene)
    res["kernels_after_check"] = kernel_modules()
    cube.location.z = 0.7
    res["sunk"] = [dict(message=p.message, depth=p.depth) for p in mod("preflight").check(bpy.context)]
    cube.location.z = 1.0

    # the panel's half extents are what the solver receives (and the mass follows the box's volume)
    solver = mod("runtime").get_solver()
    cube.quadric.half_extents = (1.0, 0.5, 0.25)
    body = next(b for b in mod("convert").build_scene(solver, bpy.context).scene.bodies if b["name"] == "Cube")
    res["edited"] = dict(shape=body["shape"], half_extents=list(body["half_extents"]), mass=body["mass"],
                         position=list(body["position"]), orientation=list(body["orientation"]),
                         display=world_vertices(cube.quadric.shape_display))

    # every family, exported to a scene file with its mass, and loaded again
    for obj in list(made.values()):
        bpy.data.objects.remove(obj)
    families = {}
    for family, add in ROUND_TRIP.items():
        add()
        obj = bpy.context.object
        obj.name = family.title()
        select_only(obj)
        bpy.ops.quadric.add_body(shape=family)
        obj.quadric.density = 1234.0
        families[family] = dict(name=obj.name, fitted_shape=obj.quadric.fitted_shape, mesh_volume=mesh_volume(obj),
                                fields=shape_fields(obj.quadric),
                                hull_vertices=len(obj.quadric.hull_mesh.vertices) if obj.quadric.hull_mesh else 0)
    res["export"] = sorted(bpy.ops.quadric.export_scene(filepath=export_path))
    exported = mod("convert").build_scene(solver, bpy.context).scene
    loaded = solver.Scene.load(export_path)
    res["same_hash"] = loaded.content_hash() == exported.content_hash()
    for family, found in families.items():
        i = next(k for k, b in enumerate(loaded.bodies) if b["name"] == found["name"])
        b = loaded.bodies[i]
        props = loaded.body_shape(i).mass_properties(1.0)
        found.update(shape=b["shape"], mass=b["mass"], shape_volume=props.volume,
                     params={k: b[k] for k in ("semi_axes", "exponents", "half_extents", "radius", "half_height")
                             if k in b})
    res["families"] = families

    # a convex hull (of the torus) with its origin off its centroid, turned: baked from a Recording made here
    hull = bpy.data.objects[families['CONVEX_HULL']["name"]]
    hull.data.transform(__import__("mathutils").Matrix.Translation((0.3, -0.2, 0.1)))
    hull.rotation_euler = (0.3, -0.5, 1.2)
    hull.scale = (1.2, 1.2, 1.2)
    select_only(hull)
    res["refit"] = sorted(bpy.ops.quadric.fit_shape())
    for name in list(families):
        if name != 'CONVEX_HULL':
            bpy.data.objects.remove(bpy.data.objects[families[name]["name"]])
    conv = mod("convert").build_scene(solver, bpy.context)
    index = next(k for k, b in enumerate(conv.scene.bodies) if b["name"] == hull.name)
    rng = np.random.default_rng(4)
    poses = np.zeros((conv.frames, len(conv.scene.bodies), 7))
    poses[:, :, :3] = rng.uniform(-2.0, 2.0, (conv.frames, len(conv.scene.bodies), 3))
    q = rng.normal(size=(conv.frames, len(conv.scene.bodies), 4))
    poses[:, :, 3:] = q / np.linalg.norm(q, axis=2, keepdims=True)
    recording = solver.Recording(conv.fps, [b["name"] for b in conv.scene.bodies], (), poses)
    res["baked"] = mod("bake").bake_recording(bpy.context, conv, recording)
    offset = conv.scene.shape_offset(index)
    res["hull"] = dict(poses=poses[:, index].tolist(), shape_offset=[list(offset[0]), list(offset[1])],
                       offset_location=list(hull.quadric.offset_location),
                       offset_rotation=list(hull.quadric.offset_rotation), scale=list(hull.scale),
                       object_matrix=[], display_matrix=[])
    for f in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(f)
        res["hull"]["object_matrix"].append([list(r) for r in hull.matrix_world])
        res["hull"]["display_matrix"].append([list(r) for r in hull.quadric.shape_display.matrix_world])
    return res


def default_cube_on_plane(frames):
    scene = empty_scene()
    scene.frame_start, scene.frame_end = 1, frames
    bpy.ops.mesh.primitive_plane_add()
    select_only(bpy.context.object)
    bpy.ops.quadric.add_collider()
    bpy.ops.mesh.primitive_cube_add(location=(0.0, 0.0, 1.0))
    cube = bpy.context.object
    select_only(cube)
    bpy.ops.quadric.add_body()
    return scene, cube


def scenario_cube_rests(out):
    """The default cube resting on the default plane, simulated for two seconds and baked."""
    scene, cube = default_cube_on_plane(48)
    res = dict(fitted_shape=cube.quadric.fitted_shape, simulate=op_error(bpy.ops.quadric.simulate))
    res["status"] = scene.quadric.status
    scene.frame_set(scene.frame_end)
    res["final_location"] = list(cube.matrix_world.translation)
    res["final_rotation"] = list(cube.matrix_world.to_quaternion())
    res["baked"] = cube.quadric.is_baked
    return res



# ---------------------------------------------------------------------------- mesh colliders
def add_bowl(name, location, rotation, scale):
    """The lower half of a UV sphere (32 segments, 16 rings, radius 1), turned, scaled and moved."""
    import bmesh

    bpy.ops.mesh.primitive_uv_sphere_add(segments=32, ring_count=16, radius=1.0, location=location,
                                         rotation=rotation)
    obj = bpy.context.object
    obj.name = name
    obj.scale = scale
    bm = bmesh.new()
    bm.from_mesh(obj.data)
    bmesh.ops.delete(bm, geom=[v for v in bm.verts if v.co.z > 1e-6], context='VERTS')
    bm.to_mesh(obj.data)
    bm.free()
    return obj


def add_stairs(name, location):
    """Three blocks in one mesh, each a step higher and further back: 1 m wide (x), 0.3 m deep (y), their tops
    (the treads) 0.2, 0.4 and 0.6 m above the object's origin; the first block's front at y = -0.15, each riser
    0.3 m behind the last."""
    import bmesh
    from mathutils import Matrix

    mesh = bpy.data.meshes.new(name)
    bm = bmesh.new()
    for k in range(3):
        bmesh.ops.create_cube(bm, size=1.0, matrix=Matrix.LocRotScale((0.0, 0.3 * k, 0.1 + 0.1 * k), None,
                                                                      (1.0, 0.3, 0.2 + 0.2 * k)))
    bm.to_mesh(mesh)
    bm.free()
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    obj.location = location
    return obj


def edit_mesh(obj, change):
    """Run change(bm) on the object's mesh data through bmesh."""
    import bmesh

    bm = bmesh.new()
    bm.from_mesh(obj.data)
    result = change(bm)
    bm.to_mesh(obj.data)
    bm.free()
    obj.data.update()
    return result


def expected_mesh(obj, local=None):
    """What the conversion should make of a mesh collider, worked out apart from it with mathutils: the mesh's
    vertices (or ``local``, in the object's axes) through matrix_world; for each loop triangle the world normal
    of its face as Blender displays it (the face normal through the inverse transpose), and how far the
    triangle's own plane is turned from its face's (a quad need not be flat), in radians."""
    from mathutils import Vector, geometry

    matrix = obj.matrix_world
    normal_matrix = matrix.to_3x3().inverted().transposed()
    mesh = obj.data
    mesh.calc_loop_triangles()
    points = [matrix @ v.co for v in mesh.vertices] if local is None else [matrix @ Vector(p) for p in local]
    normals, turned = [], []
    for t in mesh.loop_triangles:
        face = np.array((normal_matrix @ mesh.polygons[t.polygon_index].normal).normalized(), dtype=np.float64)
        own = np.array(geometry.normal(*(points[i] for i in t.vertices)), dtype=np.float64)
        normals.append(face.tolist())
        # in double: the angles are as small as 1e-4 rad, whose cosine single precision rounds to 1
        turned.append(math.atan2(np.linalg.norm(np.cross(own, face)), abs(own @ face)))
    return dict(vertices=[list(p) for p in points], normals=normals, turned=turned,
                triangles=[list(t.vertices) for t in mesh.loop_triangles],
                faces=len(mesh.polygons), corners=sum(len(p.vertices) for p in mesh.polygons))


def scenario_mesh_colliders(out):
    """Mesh colliders: Add Collider's Auto choice on a bowl, a terrain, terraces made by a modifier, stairs, an
    open-top box, a cube, a cylinder and a plane; Check Scene on a mesh without faces, one with a face turned
    over and a body sunk in the terrain; Resolve Overlaps; and the solver Scene the conversion makes of a
    bowl, a mirrored bowl and a terrain with an Array modifier."""
    import bmesh

    scene = empty_scene()
    scene.frame_start, scene.frame_end = 1, 10
    made = {}
    made["Bowl"] = add_bowl("Bowl", (3.0, -2.0, 1.0), (0.3, 0.2, 0.5), (1.5, 1.0, 0.8))
    made["Mirrored"] = add_bowl("Mirrored", (9.0, -2.0, 1.0), (0.0, -0.4, 1.2), (-1.2, 0.9, 0.7))
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=8, y_subdivisions=6, size=4.0, location=(-4.0, 1.0, 0.2),
                                    rotation=(0.0, 0.0, 0.7))
    terrain = made["Terrain"] = bpy.context.object
    terrain.name = "Terrain"
    bump = min(terrain.data.vertices, key=lambda v: (v.co.x - 0.5) ** 2 + (v.co.y - 0.5) ** 2)
    bump.co.z += 0.5
    array = terrain.modifiers.new("Array", 'ARRAY')
    array.count = 2
    array.relative_offset_displace = (1.0, 0.0, 0.0)
    bpy.ops.mesh.primitive_plane_add(size=2.0, location=(0.0, 12.0, 0.0))
    terraces = made["Terraces"] = bpy.context.object  # flat itself, steps with its modifier
    terraces.name = "Terraces"
    steps = terraces.modifiers.new("Steps", 'ARRAY')
    steps.count = 3
    steps.use_relative_offset, steps.use_constant_offset = False, True
    steps.constant_offset_displace = (2.0, 0.0, 0.3)
    made["Stairs"] = add_stairs("Stairs", (0.0, 20.0, 0.0))
    bpy.ops.mesh.primitive_cube_add(size=1.0, location=(0.0, 30.0, 0.5))
    made["Tray"] = bpy.context.object
    made["Tray"].name = "Tray"
    edit_mesh(made["Tray"], lambda bm: bmesh.ops.delete(bm, geom=[f for f in bm.faces if f.normal.z > 0.5],
                                                        context='FACES_ONLY'))
    bpy.ops.mesh.primitive_cube_add(size=1.0, location=(0.0, 40.0, 0.5))
    made["Crate"] = bpy.context.object
    made["Crate"].name = "Crate"
    bpy.ops.mesh.primitive_cylinder_add(vertices=32, location=(0.0, 50.0, 0.5))
    made["Pipe"] = bpy.context.object
    made["Pipe"].name = "Pipe"
    bpy.ops.mesh.primitive_plane_add(location=(0.0, 60.0, -5.0))
    made["Floor"] = bpy.context.object
    made["Floor"].name = "Floor"
    res = dict(auto={}, data_kind={})
    for name, obj in made.items():
        select_only(obj)
        result = bpy.ops.quadric.add_collider()
        res["auto"][name] = obj.quadric.collider_kind if result == {'FINISHED'} else sorted(result)
        res["data_kind"][name] = mod("convert").detect_collider_kind(obj)  # the mesh without its modifiers
    for name in ("Terraces", "Stairs", "Tray", "Crate", "Pipe", "Floor"):
        made[name].quadric.role = 'NONE'  # only their kind was asked

    # Check Scene: a mesh without faces, a grid with one inner face turned over, a body sunk in the terrain
    loose = bpy.data.meshes.new("Loose")
    loose.from_pydata([(0, 0, 0), (1, 0, 0), (0, 1, 0.5)], [(0, 1)], [])
    made["Loose"] = bpy.data.objects.new("Loose", loose)
    scene.collection.objects.link(made["Loose"])
    select_only(made["Loose"])
    res["add_loose"] = sorted(bpy.ops.quadric.add_collider(kind='MESH'))
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=4, y_subdivisions=4, size=2.0, location=(-20.0, 0.0, 0.0))
    patchwork = made["Patchwork"] = bpy.context.object
    patchwork.name = "Patchwork"

    def turn_inner_face(bm):
        inner = next(f for f in bm.faces if all(len(e.link_faces) == 2 for e in f.edges))
        bmesh.ops.reverse_faces(bm, faces=[inner])
        return len(inner.edges)

    res["turned_edges"] = edit_mesh(patchwork, turn_inner_face)
    select_only(patchwork)
    res["add_patchwork"] = sorted(bpy.ops.quadric.add_collider(kind='MESH'))
    bpy.context.view_layer.update()
    # a pebble over the terrain's first copy, away from its bump, its centre 0.1 above the terrain's plane
    bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=3, radius=0.15,
                                          location=terrain.matrix_world @ __import__("mathutils").Vector(
                                              (-1.5, -1.0, 0.1)))
    pebble = bpy.context.object
    pebble.name = "Pebble"
    select_only(pebble)
    bpy.ops.quadric.add_body()
    res["pebble"] = dict(semi_axes=list(pebble.quadric.semi_axes), centre=body_centres(["Pebble"])["Pebble"],
                         terrain_z=terrain.matrix_world.translation.z)
    res["check_error"] = op_error(bpy.ops.quadric.check_scene)
    res["problems"] = [dict(kind=p.kind, message=p.message, objects=list(p.objects), depth=p.depth,
                            severity=p.severity) for p in mod("preflight").check(bpy.context)]
    res["panel_problems"] = [(p.severity, p.message) for p in scene.quadric.problems]
    res["kernels_after_check"] = kernel_modules()
    res["panel"] = draw_panels([made["Bowl"]])
    try:
        mod("convert").build_scene(mod("runtime").get_solver(), bpy.context)
        res["convert_loose"] = "no error"
    except ValueError as exc:
        res["convert_loose"] = str(exc)
    bpy.data.objects.remove(made.pop("Loose"))

    # Resolve Overlaps lifts the pebble off the terrain; then only the warning is left
    res["resolve"] = sorted(bpy.ops.quadric.resolve_overlaps())
    res["resolved_centre"] = body_centres(["Pebble"])["Pebble"]
    with captured_reports() as reports:
        res["check_after_resolve"] = op_error(bpy.ops.quadric.check_scene)
    res["check_reports"] = reports

    # the solver's Scene
    made["Bowl"].quadric.friction = 0.75
    conv = mod("convert").build_scene(mod("runtime").get_solver(), bpy.context)
    res["warnings"] = conv.warnings
    res["scene_meshes"] = {m["name"]: dict(vertices=m["vertices"], triangles=m["triangles"],
                                           material=m["material"]) for m in conv.scene.meshes}
    res["materials"] = [dict(friction=m.friction, restitution=m.restitution) for m in conv.scene.materials]
    res["friction"] = {name: made[name].quadric.friction for name in ("Bowl", "Mirrored", "Terrain")}
    local = [list(v.co) for v in terrain.data.vertices]
    width = float(np.ptp([p[0] for p in local]))  # the Array's relative offset: one width of the grid along x
    res["expected"] = {name: expected_mesh(made[name]) for name in ("Bowl", "Mirrored", "Patchwork")}
    res["expected"]["Terrain"] = expected_mesh(terrain, local + [[x + width, y, z] for x, y, z in local])
    res["terrain_width"] = width
    res["determinants"] = {name: made[name].matrix_world.to_3x3().determinant() for name in ("Bowl", "Mirrored")}
    return res


def scenario_mesh_bowl_and_stairs(out):
    """End to end on mesh colliders: a ball released in a bowl whose faces are turned inwards, the same in that
    bowl mirrored (scale -1 in x) from the mirrored start, and a cube dropped onto stairs; each collider made by
    Add Collider (Auto), all simulated and baked by Simulate. The bowls sit at x = -2 and x = +2, so the
    mirrored half of the scene is the other with every x negated, exactly (the starts are sums of powers of
    two)."""
    import bmesh

    scene = empty_scene()
    scene.frame_start, scene.frame_end = 1, 192  # 8 s at 24 fps
    scene.quadric.substeps = 10

    def inward(bm):
        bmesh.ops.reverse_faces(bm, faces=bm.faces[:])

    bowl = add_bowl("Bowl", (-2.0, 0.0, 0.0), (0.0, 0.0, 0.0), (1.0, 1.0, 1.0))
    mirrored = add_bowl("Mirrored", (2.0, 0.0, 0.0), (0.0, 0.0, 0.0), (-1.0, 1.0, 1.0))
    for obj in (bowl, mirrored):
        edit_mesh(obj, inward)  # its fronts face the inside: the normals point at the bowl's centre
    stairs = add_stairs("Stairs", (0.0, 3.0, 0.0))
    res = dict(auto={})
    for obj in (bowl, mirrored, stairs):
        select_only(obj)
        result = bpy.ops.quadric.add_collider()
        res["auto"][obj.name] = obj.quadric.collider_kind if result == {'FINISHED'} else sorted(result)

    balls = []
    for name, x in (("Ball", -2.0 + 0.375), ("MirroredBall", 2.0 - 0.375)):
        bpy.ops.mesh.primitive_ico_sphere_add(radius=0.1, location=(x, 0.0, -0.3125))
        balls.append(bpy.context.object)
        balls[-1].name = name
    bpy.ops.mesh.primitive_cube_add(size=0.2, location=(0.0, 3.335, 0.55))  # 15 mm before the riser, 5 cm up
    cube = bpy.context.object
    cube.name = "Cube"
    select_only(*balls, cube)
    res["add_body"] = sorted(bpy.ops.quadric.add_body())
    res["fitted"] = {o.name: o.quadric.fitted_shape for o in (*balls, cube)}
    res["fitted_semi_axes"] = list(balls[0].quadric.semi_axes)
    radius = sum(res["fitted_semi_axes"]) / 3.0
    for ball in balls:
        # the icosphere's fitted ellipsoid is a sphere up to single-precision rounding, in a principal frame
        # that is then arbitrary and the same for both balls, so not mirrored: made an exact sphere, each
        # ball is its own mirror image
        ball.quadric.semi_axes = (radius, radius, radius)
        ball.quadric.rolling_friction = 0.005
    cube.quadric.initial_velocity = (0.0, 0.3, 0.0)  # towards the riser behind the middle tread

    res["simulate"] = op_error(bpy.ops.quadric.simulate)
    res["status"] = scene.quadric.status
    bodies = (*balls, cube)
    res["baked"] = {o.name: o.quadric.is_baked for o in bodies}
    compat = mod("blender_compat")
    res["keyframes"] = {o.name: len(compat.read_keyframes(compat.find_fcurve(o, "location", 0))[0])
                        if o.quadric.is_baked else 0 for o in bodies}
    res["offset_location"] = {o.name: list(o.quadric.offset_location) for o in bodies}
    # each body's frame (its shape display) at every frame
    res["centres"], res["axes"] = {o.name: [] for o in bodies}, {o.name: [] for o in bodies}
    for f in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(f)
        for o in bodies:
            matrix = o.quadric.shape_display.matrix_world
            res["centres"][o.name].append(list(matrix.translation))
            res["axes"][o.name].append([list(row) for row in matrix.to_3x3()])
    scene.frame_set(scene.frame_start)
    # what the solver was given: the colliders' triangles, the bodies' sizes, and the slop they make
    solver = mod("runtime").get_solver()
    conv = mod("convert").build_scene(solver, bpy.context)
    res["fps"], res["dt"] = conv.fps, conv.dt
    res["meshes"] = {m["name"]: dict(vertices=m["vertices"], triangles=m["triangles"]) for m in conv.scene.meshes}
    res["bodies"] = {b["name"]: dict(shape=b["shape"], semi_axes=b.get("semi_axes"),
                                     half_extents=b.get("half_extents"), position=list(b["position"]))
                     for b in conv.scene.bodies}
    res["slop"] = solver.Simulation(conv.scene, dt=conv.dt).settings.slop
    return res


# ------------------------------------------------------------------------- workflow
MATERIAL_FIELDS = ("friction", "restitution", "rolling_friction", "spinning_friction", "mass_mode", "density")
ROPE_FIELDS = ("rope_radius", "rope_density", "rope_damping", "rope_young_modulus", "rope_shear_modulus")


def settings_of(obj, fields):
    return {f: getattr(obj.quadric, f) for f in fields}


def menu_entries(menu_cls):
    """The preset files a preset menu lists (its draw run against a checking layout)."""
    log = []
    fake = type("M", (), {"layout": CheckingLayout(log), "bl_idname": menu_cls.__name__,
                          "preset_subdir": menu_cls.preset_subdir, "preset_operator": menu_cls.preset_operator,
                          "path_menu": bpy.types.Menu.path_menu})()
    menu_cls.draw(fake, bpy.context)
    return [entry[3] for entry in log if entry[0] == "operator_property" and entry[2] == "filepath"]


def make_curve(name, points):
    data = bpy.data.curves.new(name, 'CURVE')
    data.dimensions = '3D'
    spline = data.splines.new('POLY')
    spline.points.add(len(points) - 1)
    for k, co in enumerate(points):
        spline.points[k].co = (*co, 1.0)
    obj = bpy.data.objects.new(name, data)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def scenario_presets(out):
    """Built-in material and rope presets through the preset menus; a user preset saved and applied."""
    empty_scene()
    menus = mod("preset_menus")
    bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=2, radius=0.1)
    marble = bpy.context.object
    marble.name = "Marble"
    select_only(marble)
    bpy.ops.quadric.add_body()
    marble.quadric.mass_mode = 'MASS'
    res = dict(material_menu=menu_entries(menus.QUADRIC_MT_material_presets),
               rope_menu=menu_entries(menus.QUADRIC_MT_rope_presets), before=settings_of(marble, MATERIAL_FIELDS))
    glass = next(f for f in res["material_menu"] if os.path.basename(f) == "glass_marbles.py")
    res["glass_file"] = open(glass).read()
    res["glass_result"] = sorted(bpy.ops.script.execute_preset(filepath=glass,
                                                               menu_idname="QUADRIC_MT_material_presets"))
    res["glass"] = settings_of(marble, MATERIAL_FIELDS)
    res["menu_label"] = menus.QUADRIC_MT_material_presets.bl_label

    # a user preset: saved by the + operator into the user's presets folder, listed, applied
    folder = bpy.utils.user_resource('SCRIPTS', path=os.path.join("presets", menus.MATERIAL_SUBDIR))
    user_file = os.path.join(folder, bpy.path.clean_name("Test Mix") + ".py")  # as AddPresetBase names it
    if os.path.exists(user_file):
        os.remove(user_file)
    mix = dict(friction=0.33, restitution=0.44, rolling_friction=0.0022, spinning_friction=0.0011, density=1234.0)
    for key, value in mix.items():
        setattr(marble.quadric, key, value)
    res["add_result"] = sorted(bpy.ops.quadric.material_preset_add(name="Test Mix"))
    res["user_file_exists"] = os.path.exists(user_file)
    res["user_listed"] = user_file in menu_entries(menus.QUADRIC_MT_material_presets)
    bpy.ops.script.execute_preset(filepath=glass, menu_idname="QUADRIC_MT_material_presets")
    bpy.ops.script.execute_preset(filepath=user_file, menu_idname="QUADRIC_MT_material_presets")
    res["mix_set"], res["mix_read"] = mix, settings_of(marble, MATERIAL_FIELDS)
    if os.path.exists(user_file):
        os.remove(user_file)

    # a rope preset on a rope's rig: the rig's settings, and the skin mesh follows the radius
    make_curve("Cable", [(0, 0, 1), (1, 0, 1)])
    select_only(bpy.data.objects["Cable"])
    bpy.ops.quadric.make_rope(segments=6, radius=0.02)
    rig = bpy.context.object
    steel = next(f for f in res["rope_menu"] if os.path.basename(f) == "steel_cable.py")
    res["steel_file"] = open(steel).read()
    res["steel_result"] = sorted(bpy.ops.script.execute_preset(filepath=steel, menu_idname="QUADRIC_MT_rope_presets"))
    res["steel"] = settings_of(rig, ROPE_FIELDS)
    res["skin_radii"] = [list(v.radius) for v in rig.quadric.rope_mesh.data.skin_vertices[0].data]
    res["panel"] = draw_panels([marble, rig])
    return res


def scenario_workflow(out):
    """Copy from Active, adding a collection, Remove from Simulation on a body and on a rope."""
    scene = empty_scene()
    res = {}
    made = {}
    for name, x in (("Source", 0.0), ("Body", 1.0), ("Plain", 2.0)):
        bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=2, radius=0.1, location=(x, 0, 1))
        bpy.context.object.name = name
        made[name] = bpy.context.object
    bpy.ops.object.empty_add(location=(3, 0, 1))
    bpy.context.object.name = "Lamp"
    select_only(made["Source"], made["Body"])
    bpy.ops.quadric.add_body()
    source = made["Source"].quadric
    source.body_type, source.mass_mode, source.density = 'STATIC', 'DENSITY', 2650.0
    source.friction, source.restitution, source.rolling_friction, source.spinning_friction = 0.7, 0.4, 0.003, 0.001
    select_only(made["Source"], made["Body"], made["Plain"], bpy.data.objects["Lamp"])
    with captured_reports() as reports:
        res["copy"] = sorted(bpy.ops.quadric.copy_from_active())
    res["copy_reports"] = reports
    res["copied"] = {n: dict(role=made[n].quadric.role, **settings_of(made[n], MATERIAL_FIELDS + ("body_type",)))
                     for n in made}
    res["lamp_role"] = bpy.data.objects["Lamp"].quadric.role
    res["plain_has_shape"] = made["Plain"].quadric.shape_display is not None

    # clicked (a step a tick, a budget of zero): Esc while it fits the plain meshes changes nothing; then to its end
    ticks, ctx = mod("ticks"), bpy.context
    extra = {}
    for name, x in (("Body2", 4.0), ("Plain2", 5.0), ("Plain3", 6.0)):
        bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=2, radius=0.1, location=(x, 0, 1))
        bpy.context.object.name = name
        extra[name] = bpy.context.object
    select_only(extra["Body2"])
    bpy.ops.quadric.add_body()
    extra["Body2"].quadric.friction = 0.2

    def settings():
        return {n: dict(role=o.quadric.role, **settings_of(o, MATERIAL_FIELDS + ("body_type",)))
                for n, o in extra.items()}

    before, objects_before = settings(), sorted(o.name for o in bpy.data.objects)
    select_only(made["Source"], *extra.values())
    budget, ticks.TICK_BUDGET = ticks.TICK_BUDGET, 0.0
    op, reports = ticked_operator("QUADRIC_OT_copy_from_active", ctx)
    op.modal(ctx, Event('TIMER', op._timer))
    res["copy_esc"] = dict(result=sorted(op.modal(ctx, Event('ESC'))), reports=reports, unchanged=settings() == before,
                           same_objects=sorted(o.name for o in bpy.data.objects) == objects_before)
    ops = mod("operators")
    copy_step, ops.COPY_STEP = ops.COPY_STEP, 1  # an object's settings copied a step
    op, reports = ticked_operator("QUADRIC_OT_copy_from_active", ctx)
    res["copy_ticked"] = dict(results=tick_to_end(op, ctx), reports=reports, copied=settings())
    ticks.TICK_BUDGET, ops.COPY_STEP = budget, copy_step

    # a whole collection: its meshes not yet in the simulation become bodies
    pebbles = bpy.data.collections.new("Pebbles")
    scene.collection.children.link(pebbles)
    inner = bpy.data.collections.new("Small Pebbles")
    pebbles.children.link(inner)
    for k in range(4):
        bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=1, radius=0.05, location=(k * 0.2, 2, 1))
        obj = bpy.context.object
        obj.name = f"Pebble.{k}"
        for coll in list(obj.users_collection):
            coll.objects.unlink(obj)
        (inner if k == 3 else pebbles).objects.link(obj)
    pebbles.objects.link(made["Body"])  # already a body: left as it is
    bpy.ops.object.empty_add(location=(0, 3, 1))
    marker = bpy.context.object
    marker.name = "Marker"
    for coll in list(marker.users_collection):
        coll.objects.unlink(marker)
    pebbles.objects.link(marker)
    made["Body"].quadric.friction = 0.25
    select_only()
    with captured_reports() as reports:
        res["collection"] = sorted(bpy.ops.quadric.add_body(use_collection=True, collection="Pebbles"))
    res["collection_reports"] = reports
    res["pebbles"] = {o.name: o.quadric.role for o in pebbles.all_objects}
    res["body_friction_kept"] = made["Body"].quadric.friction
    beans = bpy.data.collections.new("Beans")
    scene.collection.children.link(beans)
    bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=1, radius=0.05, location=(0, 4, 1))
    bean = bpy.context.object
    bean.name = "Bean"
    for coll in list(bean.users_collection):
        coll.objects.unlink(bean)
    beans.objects.link(bean)
    layer = bpy.context.view_layer.layer_collection.children["Beans"]
    bpy.context.view_layer.active_layer_collection = layer
    res["active_collection"] = sorted(bpy.ops.quadric.add_body(use_collection=True))
    res["bean_role"] = bean.quadric.role

    # Remove from Simulation acts on the object the panel shows, not on the selection
    make_curve("Line", [(0, -2, 1), (1, -2, 1)])
    select_only(bpy.data.objects["Line"])
    bpy.ops.quadric.make_rope(segments=5, radius=0.01)
    rig = bpy.context.object
    rig_name, mesh_name = rig.name, rig.quadric.rope_mesh.name
    res["curve_hidden_as_rope"] = bpy.data.objects["Line"].hide_get()
    panel = draw_panels([made["Body"]])
    res["panel_remove"] = [e for e in panel if e[0] == "operator_property" and e[1] == "quadric.remove"]
    res["panel"] = panel
    body_shape = made["Body"].quadric.shape_display.name
    select_only(made["Plain"])
    with captured_reports() as reports:
        res["remove_body"] = sorted(bpy.ops.quadric.remove(object="Body"))
        res["remove_rope"] = sorted(bpy.ops.quadric.remove(object=rig_name))
    res["remove_reports"] = reports
    res["after_remove"] = dict(body_role=made["Body"].quadric.role, body_shape_left=body_shape in bpy.data.objects,
                               plain_role=made["Plain"].quadric.role, rig_left=rig_name in bpy.data.objects,
                               mesh_left=mesh_name in bpy.data.objects,
                               curve_hidden=bpy.data.objects["Line"].hide_get(),
                               curve_hide_render=bpy.data.objects["Line"].hide_render)
    res["remove_nothing"] = op_error(bpy.ops.quadric.remove, object="Lamp")

    # Remove from Simulation on the selection: every pebble of the collection at once
    pebbles = [o for o in bpy.data.objects if o.name.startswith("Pebble.") and o.quadric.role == 'BODY']
    displays = [o.quadric.shape_display for o in pebbles]
    ours = dict(objects=[d.name for d in displays], meshes=[m.name for o, d in zip(pebbles, displays)
                                                           for m in (d.data, o.quadric.hull_mesh) if m is not None])
    select_only(*pebbles)
    with captured_reports() as reports:
        res["remove_many"] = sorted(bpy.ops.quadric.remove())
    res.update(remove_many_reports=reports, remove_many_ours=ours, remove_many_roles=[o.quadric.role for o in pebbles],
               remove_many_left=dict(objects=[n for n in ours["objects"] if n in bpy.data.objects],
                                     meshes=[n for n in ours["meshes"] if n in bpy.data.meshes]),
               remove_many_own_meshes=[o.data.name in bpy.data.meshes for o in pebbles])
    return res


def scenario_tooltips(out):
    """The description, type, unit and subtype of every property the add-on registers."""
    res = {}
    settings = bpy.types.Object.bl_rna.properties["quadric"].fixed_type
    for owner, struct in (("object", settings), ("scene", bpy.types.Scene.bl_rna.properties["quadric"].fixed_type),
                          ("particles", settings.properties["particles"].fixed_type)):
        for prop in struct.properties:
            if prop.identifier == "rna_type":
                continue
            res[f"{owner}.{prop.identifier}"] = dict(description=prop.description, type=prop.type,
                                                     unit=getattr(prop, "unit", "NONE"),
                                                     subtype=getattr(prop, "subtype", "NONE"))
    return res


# ---------------------------------------------------------------------------- first use
def scenario_first_use(out):
    """The first Simulate after installing (run in a fresh user folder): the default cube on the default plane.

    Records where the kernels came from (the prebuilt cache's note, kernels compiled), and the times.
    """
    scene, cube = default_cube_on_plane(24)
    ops = mod("operators")
    started = __import__("time").perf_counter()
    res = dict(simulate=sorted(bpy.ops.quadric.simulate()))
    res["seconds"] = __import__("time").perf_counter() - started
    job = ops.last_job
    res.update(status=scene.quadric.status, prebuilt_note=mod("runtime").prebuilt_note,
               kernels_compiled=job.kernels_compiled, compiled=job.compiled,
               first_frame_seconds=job.first_frame_seconds,
               cpu_name=os.environ.get("NUMBA_CPU_NAME"), cache_root=mod("runtime").numba_cache_dir())
    scene.frame_set(scene.frame_end)
    res["final_z"] = cube.matrix_world.translation.z
    return res


class Event:
    """Stands in for the events Blender hands a modal operator (bpy has no window to make real ones)."""

    def __init__(self, kind, timer=None):
        self.type, self.value, self.timer = kind, 'PRESS', timer


def operator_for(job, timer=None):
    """The modal Simulate operator's state as invoke() leaves it, with its methods; and the reports it makes."""
    import types

    reports = []
    op = types.SimpleNamespace(_job=job, _timer=timer, _start=None, _bake=None, _bake_cancels=0,
                               report=lambda kind, msg: reports.append((sorted(kind), msg)))
    for name in ("_status", "_cleanup", "release", "modal", "_start_tick", "_begin", "_retime", "_bake_tick",
                 "cancel"):
        setattr(op, name, getattr(bpy.types.QUADRIC_OT_simulate, name).__get__(op))
    return op, reports


def tick_to_end(op, ctx, limit=100000):
    """Timer events to the modal operator until it ends; what each returned."""
    results = []
    while not results or results[-1] == ['RUNNING_MODAL']:
        results.append(sorted(op.modal(ctx, Event('TIMER', op._timer))))
        assert len(results) < limit, "the operator does not end"
    return results


def scenario_simulate_control(out):
    """The modal operator's decisions without a window (bpy has none): what the timer shows in each phase, Esc
    while compiling (control back at once, the worker left to finish), and closing while simulating (no wait)."""
    import threading

    scene, cube = default_cube_on_plane(24)
    ops = mod("operators")
    ctx = bpy.context
    res = {}

    # Phases as numba's compile events and the frame callback set them, read by the timer and the panel.
    job = ops.prepare_job(ctx)
    job.state = 'RUNNING'
    res["describe_starting"] = job.describe()
    job._on_kernel(37, "collision.gjk.support")
    res["describe_compiling"] = job.describe()
    op, reports = operator_for(job)
    ops.active_job = job
    res["esc_while_compiling"] = sorted(op.modal(ctx, Event('ESC')))
    res["esc_reports"] = reports
    res["esc_cancelled_flag"] = job.cancelled
    res["esc_active_job_cleared"] = ops.active_job is None
    res["esc_status"] = scene.quadric.status

    # A real run whose worker is held inside a frame: Esc while simulating waits for the frame, closing does not.
    release = threading.Event()
    job = ops.prepare_job(ctx, on_progress=lambda done, total: done >= 2 and release.wait(60))  # past the start pose
    job.start()
    for _ in range(6000):
        if job.phase == 'SIMULATING':
            break
        __import__("time").sleep(0.01)
    res["phase_in_frame"] = job.phase
    res["describe_simulating"] = job.describe()
    op, reports = operator_for(job)
    ops.active_job = job
    res["esc_while_simulating"] = sorted(op.modal(ctx, Event('ESC')))
    op.cancel(ctx)  # what Blender calls when the window closes or a file loads
    res["worker_running_after_cancel"] = job._thread.is_alive() and job.state == 'RUNNING'
    release.set()
    res["worker_state"] = job.wait(timeout=120)
    res["keys_after"] = len(mod("blender_compat").fcurves_of(cube))

    # A run held once 5 frames are done: the panel shows the time left, from the frames timed since the first.
    release = threading.Event()
    job = ops.prepare_job(ctx, on_progress=lambda done, total: done >= 5 and release.wait(60))
    job.start()
    for _ in range(6000):
        if job.frames_done >= 5:
            break
        __import__("time").sleep(0.01)
    ops.active_job = job
    clock = __import__("time").perf_counter
    at_first = job.started + job.first_frame_seconds
    earliest = (24 - 5) * (clock() - at_first) / (5 - 2)  # the rate since the first simulated frame, in 3 frames
    res["panel_while_running"] = [list(x) for x in draw_panels([cube]) if x[0] == "progress"]
    res["time_left_bounds"] = [earliest, (24 - 5) * (clock() - at_first) / (5 - 2)]
    ops.active_job = None
    release.set()
    job.wait(timeout=120)
    return res


def transforms(objs, bones):
    """Everything the live preview may change: objects' and pose bones' rotation modes and values, and actions."""
    compat = mod("blender_compat")
    res = {}
    for item in list(objs) + list(bones):
        entry = dict(mode=item.rotation_mode, location=list(item.location),
                     quaternion=list(item.rotation_quaternion), euler=list(item.rotation_euler),
                     axis_angle=list(item.rotation_axis_angle))
        anim = getattr(item, "animation_data", None)
        if isinstance(item, bpy.types.Object):
            entry["action"] = anim.action.name if anim is not None and anim.action is not None else None
            if compat.SLOTTED and anim is not None and anim.action_slot is not None:
                entry["slot"] = anim.action_slot.identifier
        res[item.name if isinstance(item, bpy.types.Object) else f"{item.id_data.name}:{item.name}"] = entry
    return res


def world_frames(objs, arm):
    """Each body's principal frame in world space (its object's matrix times the binding's offset) and the rope's
    bone heads, as Blender evaluates them now."""
    bpy.context.view_layer.update()
    res = {}
    for obj in objs:
        loc, rot, _ = obj.matrix_world.decompose()
        res[obj.name] = dict(location=list(loc), rotation=list(rot))
    res["bone_heads"] = [list(arm.matrix_world @ bone.head) for bone in arm.pose.bones]
    return res


def held_job(ctx, hold_at):
    """A started job whose worker waits once ``hold_at`` frames are done, the live preview on and the modal
    operator polling it: (job, operator, the gate that lets the worker go on)."""
    import threading

    ops, preview = mod("operators"), mod("preview")
    gate, reached = threading.Event(), threading.Event()

    def hold(done, total):
        if done == hold_at:
            reached.set()
            gate.wait(120)

    job = ops.prepare_job(ctx, on_progress=hold)
    ops.active_job = job
    job.start()
    preview.start(ctx, job.conv, job)
    op, _ = operator_for(job, ctx.window_manager.event_timer_add(0.1))
    reached.wait(300)
    return job, op, gate


def scenario_live_preview(out):
    """The live preview through the modal operator's timer and the timeline, with the worker held at chosen
    frames: the poses shown, scrubbing, and the file left as it was when the run is cancelled or ends."""
    scene, bodies = build_bake_scene()
    rope_curve = make_curve("Swing", [(3.0, 0.0, 2.0), (4.0, 0.0, 2.0)])
    select_only(rope_curve)
    bpy.ops.quadric.make_rope(segments=6, radius=0.02, start_mode='PIN', end_mode='FREE')
    arm = bpy.context.object
    res = dict(first_bake=sorted(bpy.ops.quadric.simulate()))  # the preview must hold these bakes' actions off
    bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=2, radius=0.2, location=(-1.0, 1.5, 0.8))
    pebble = bpy.context.object
    pebble.name = "Pebble"
    pebble.rotation_mode = 'YZX'
    pebble.rotation_euler = (0.4, -0.2, 1.1)
    select_only(pebble)
    bpy.ops.quadric.add_body(shape='ELLIPSOID')
    objs = bodies + [pebble]
    bones = list(arm.pose.bones)
    scene.frame_set(7)
    ops, preview = mod("operators"), mod("preview")
    mod("ticks").TICK_BUDGET = 1e9  # a frame a tick however busy the machine (a budget's steps: preview_chunks)
    ctx = bpy.context
    handlers = len(bpy.app.handlers.frame_change_post)
    res["handlers_before"] = handlers

    # 1. Cancelled (the window closes) while the preview shows frame 3: everything as it was, nothing baked. A
    #    body deleted meanwhile is passed over.
    bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=1, radius=0.2, location=(2.0, -2.0, 0.5))
    extra = bpy.context.object
    select_only(extra)
    bpy.ops.quadric.add_body(shape='ELLIPSOID')
    before = transforms(objs + [arm], bones)
    job, op, gate = held_job(ctx, 4)
    res["cancel_tick"] = sorted(op.modal(ctx, Event('TIMER', op._timer)))
    res["cancel_shown"] = preview.live().shown
    res["cancel_moved"] = transforms(objs + [arm], bones) != before
    bpy.data.objects.remove(extra)
    scene.frame_set(job.conv.frame_start + 1)
    res["shown_after_delete"] = preview.live().shown
    op.cancel(ctx)
    res["cancel_restored"] = transforms(objs + [arm], bones) == before
    res["cancel_after"], res["cancel_before"] = transforms(objs + [arm], bones), before
    res["cancel_handlers"] = len(bpy.app.handlers.frame_change_post)
    gate.set()
    job.wait(300)

    # 2. A run held after 9 frames: the timer shows the newest, the timeline scrubs over the finished ones.
    before = transforms(objs + [arm], bones)
    job, op, gate = held_job(ctx, 9)
    start = job.conv.frame_start
    res["frame_start"] = start
    res["bindings"] = {b.object_name: dict(index=b.index, offset_location=list(b.offset_location),
                                           offset_rotation=list(b.offset_rotation)) for b in job.conv.bodies}
    res["rope_index"] = job.conv.ropes[0].index
    ticks = []
    for _ in range(2):  # the second tick finds nothing new to show
        t0 = __import__("time").perf_counter()
        res.setdefault("ticks", []).append(sorted(op.modal(ctx, Event('TIMER', op._timer))))
        ticks.append(__import__("time").perf_counter() - t0)
        res.setdefault("shown", []).append(preview.live().shown)
    res["tick_seconds"] = ticks  # for the record, never asserted
    res["newest"] = world_frames(objs, arm)
    scene.frame_set(start + 3)
    res["scrubbed_frame"] = preview.live().shown
    res["scrubbed"] = world_frames(objs, arm)
    scene.frame_set(start + 30)  # beyond the finished frames: back to the newest
    res["beyond_frame"] = preview.live().shown
    scene.frame_set(7)
    gate.set()
    job.wait(300)
    res["job_state"] = job.state
    res["recording"] = job.recording.body_poses.tolist()
    res["rope_nodes"] = job.recording.rope_nodes(job.conv.ropes[0].index).tolist()
    res["live_equal"] = bool((job.live.body_poses == job.recording.body_poses).all())
    end_ticks = tick_to_end(op, ctx)  # the first ends the run and restores, then the bake (a tick's budget each)
    res["end_tick"], res["end_ticks_before"] = end_ticks[-1], end_ticks[:-1]
    res["end_handlers"] = len(bpy.app.handlers.frame_change_post)
    res["end_live"] = preview.live() is not None
    res["baked_after_end"] = {o.name: o.quadric.is_baked for o in objs + [arm]}
    res["pebble_originals"] = dict(mode=pebble.quadric.orig_rotation_mode,
                                   location=list(pebble.quadric.orig_location),
                                   euler=list(pebble.quadric.orig_rotation_euler))
    res["pebble_before"] = before["Pebble"]
    res["stats"] = {key: np.asarray(value).tolist() for key, value in job.recording.stats.items()
                    if key != "phase_seconds"}
    res["stored_stats"] = ops.run_stats_summary(scene)

    # 3. The stale-bake indicator of a baked body.
    stale = mod("stale")
    ball = bodies[0]
    scene.frame_set(12)
    res["stale_fresh"] = stale.why_stale(ball, scene.frame_current)
    ball.quadric.friction += 0.1
    res["stale_friction"] = stale.why_stale(ball, scene.frame_current)
    ball.quadric.friction -= 0.1
    res["stale_friction_back"] = stale.why_stale(ball, scene.frame_current)
    ball.location.x += 0.5
    res["stale_moved"] = stale.why_stale(ball, scene.frame_current)
    scene.frame_set(13)
    res["stale_after_frame_change"] = stale.why_stale(ball, scene.frame_current)
    ball.quadric.semi_axes[0] *= 1.1
    res["stale_shape"] = stale.why_stale(ball, scene.frame_current)
    res["stale_unbaked"] = stale.why_stale(bpy.data.objects["Ground"], scene.frame_current)
    return res


def build_preview_scene():
    """The particle bake scene's grains and sheet, six pebbles and a rope: everything the live preview shows."""
    scene, grains, sheet = build_particle_bake_scene()
    scene.frame_end = 16
    pebbles = []
    for k in range(6):
        bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=1, radius=0.1, location=(-2.0 + 0.3 * k, 2.0, 0.5))
        bpy.context.object.name = f"Pebble.{k}"
        bpy.context.object.rotation_euler = (0.3 * k, 0.1, 0.0)
        pebbles.append(bpy.context.object)
    select_only(*pebbles)
    bpy.ops.quadric.add_body(shape='ELLIPSOID')
    select_only(make_curve("Swing", [(-1.0, -2.0, 2.0), (0.0, -2.0, 2.0)]))
    bpy.ops.quadric.make_rope(segments=4, radius=0.02, start_mode='PIN', end_mode='FREE')
    return scene, pebbles, bpy.context.object, grains, sheet


def scenario_preview_chunks(out):
    """The live preview a tick's budget at a time (a budget of zero: one body, rope or group per tick) against
    showing the frame at once; particle groups and soft bodies shown; cancelling puts everything back. Then,
    after a bake, with the particles kept every few frames only (the newest through the worker's handoff)."""
    scene, pebbles, arm, grains, sheet = build_preview_scene()
    ops, preview, ticks, job_mod, particle_bake, point_cache = (mod(n) for n in ("operators", "preview", "ticks",
                                                                                 "job", "particle_bake",
                                                                                 "point_cache"))
    ctx = bpy.context
    bones = list(arm.pose.bones)
    res = dict(problems=[(p.severity, p.message) for p in mod("preflight").check(ctx)])

    def everything():
        """All the preview may change: transforms, actions, datablocks, vertices, modifiers' visibility."""
        return dict(transforms=transforms(pebbles + [arm], bones), blocks=datablock_names(),
                    node_groups=sorted(bpy.data.node_groups.keys()),
                    vertices={o.name: mesh_co(o).tolist() for o in bpy.data.objects if o.type == 'MESH'},
                    modifiers={o.name: [(m.name, m.show_viewport) for m in o.modifiers] for o in bpy.data.objects})

    def shown(live):
        """What the viewport shows: the objects' transforms as stored, the bones', each group's points."""
        bpy.context.view_layer.update()
        displays = {g.binding.object_name: g.target for g in live.groups}
        return dict(objects={o.name: [o.rotation_mode, list(o.location), list(o.rotation_quaternion)]
                             for o in pebbles},
                    bones={b.name: [list(b.location), list(b.rotation_quaternion)] for b in bones},
                    matrices={o.name: [list(r) for r in o.matrix_world] for o in pebbles},
                    bone_heads=[list(arm.matrix_world @ b.head) for b in bones],
                    grains=mesh_co(displays["Grains"]).tolist(), grains_drawn=instance_positions(
                        displays["Grains"]).tolist(),
                    sheet=mesh_co(sheet).tolist(), sheet_drawn=evaluated_vertices(sheet).tolist(),
                    sheet_bounds=[list(corner) for corner in sheet.evaluated_get(
                        bpy.context.evaluated_depsgraph_get()).bound_box])

    def expected(job, frames):
        """The Recording's poses and points at those frames, the points as their displays play them."""
        rec, groups = job.recording, {b.object_name: b for b in job.conv.groups}
        return {str(k): dict(
            poses={b.object_name: rec.body_poses[k, b.index].tolist() for b in job.conv.bodies},
            rope=rec.rope_nodes(job.conv.ropes[0].index)[k].tolist(),
            grains=np.asarray(rec.particles(groups["Grains"].index)[k], dtype=np.float32).tolist(),
            sheet=point_cache.local_positions(groups["Sheet"], rec.particles(groups["Sheet"].index)[k])
            .astype(np.float32).tolist(),
            sheet_world=rec.particles(groups["Sheet"].index)[k].tolist()) for k in frames}

    # 1. No bake yet: the grains get a particles object made for the preview.
    before = everything()
    ticks.TICK_BUDGET, preview.CHUNK = 0.0, 1
    job, op, gate = held_job(ctx, 6)  # frames 0-5 finished
    live = preview.live()
    res["bindings"] = {b.object_name: dict(index=b.index, offset_location=list(b.offset_location),
                                           offset_rotation=list(b.offset_rotation)) for b in job.conv.bodies}
    res["sheet_matrix"] = np.asarray(next(b for b in job.conv.groups if b.object_name == "Sheet").matrix).tolist()
    res["frame_start"] = job.conv.frame_start
    moved, results = [], []
    while live.shown != 5 and len(results) < 1000:
        was = {o.name: list(o.location) for o in pebbles}
        results.append(sorted(op.modal(ctx, Event('TIMER', op._timer))))
        moved.append(sum(list(o.location) != was[o.name] for o in pebbles))
    res["chunk_results"], res["chunk_moved"], res["chunk_shown"] = results, moved, live.shown
    res["chunked"] = shown(live)
    res["made_display"] = [g.made for g in live.groups if g.binding.object_name == "Grains"]
    live.show(2)
    live.show(5)  # at once, after another frame
    res["one_shot"] = shown(live)
    op.cancel(ctx)
    res["cancel_before"], res["cancel_after"] = before, everything()
    gate.set()
    job.wait(300)
    res["expected"] = expected(job, [5])

    # 2. After a bake: its particles object and the sheet's Mesh Cache (held off meanwhile) show the run; the
    #    particles are kept every 4th frame, the newest handed over apart.
    ticks.TICK_BUDGET, preview.CHUNK = 1e9, 64  # a frame a tick, however busy the machine
    res["bake"] = sorted(bpy.ops.quadric.simulate())
    before = everything()
    job_mod.FinishedFrames.PARTICLE_BUDGET = 2000  # bytes: 16 frames x 37 points x 12 bytes need 4x that
    job, op, gate = held_job(ctx, 7)  # frames 0-6 finished: 6 is not a kept one
    live = preview.live()
    results = []
    while live.shown != 6 and len(results) < 1000:
        results.append(sorted(op.modal(ctx, Event('TIMER', op._timer))))
    res["stride"] = job.live.particle_stride
    res["reused_display"] = [(g.made, g.target.name) for g in live.groups if g.binding.object_name == "Grains"]
    res["output"] = grains.quadric.particles.output_object.name
    res["cache_held"] = sheet.modifiers[particle_bake.CACHE_MODIFIER].show_viewport
    res["newest"] = shown(live)
    scene.frame_set(job.conv.frame_start + 5)  # the timeline on frame index 5: particles kept at 4
    res["scrubbed_shown"] = live.shown
    res["scrubbed"] = shown(live)
    scene.frame_set(scene.frame_start)
    op.cancel(ctx)
    res["cancel2_before"], res["cancel2_after"] = before, everything()
    gate.set()
    job.wait(300)
    res["expected2"] = expected(job, [4, 5, 6])
    return res


def scenario_bake_resume(out):
    """Bake from Current Frame: a run cancelled after 15 frames, continued from frame 10, against the whole run;
    and the refusals (no run kept, a frame the run did not reach, a changed setting)."""
    scene, bodies = build_bake_scene()
    ops, resume = mod("operators"), mod("resume")
    ctx = bpy.context
    res = dict(whole=sorted(bpy.ops.quadric.simulate()))
    res["whole_keys"] = keyframe_dump(bodies)
    bpy.ops.quadric.clear_bake()  # which drops the run kept for Bake from Current Frame
    scene.frame_set(10)
    res["no_run_error"] = op_error(bpy.ops.quadric.bake_resume)

    job = ops.prepare_job(ctx, on_progress=lambda done, total: done >= 15 and job.cancel())
    job.run_sync()
    res["partial_state"] = job.state
    res["partial_finish"] = sorted(ops.finish_job(ctx, job))
    res["partial_end"] = scene.quadric.partial_bake_end
    res["partial_keys"] = keyframe_dump(bodies)
    kept = resume.points(scene)
    res["kept_frames"] = kept.recording.frames
    res["kept_snapshots"] = sorted(kept.snapshots)

    scene.frame_set(20)
    res["beyond_error"] = op_error(bpy.ops.quadric.bake_resume)
    ball = bodies[0]
    ball.quadric.friction += 0.1
    scene.frame_set(10)
    res["changed_error"] = op_error(bpy.ops.quadric.bake_resume)
    ball.quadric.friction -= 0.1
    res["keys_after_refusals"] = keyframe_dump(bodies)

    # The run is kept by the scene's own id, not its name: it is continued below under a new name.
    first_name = scene.name
    scene.name = "Renamed"
    res["renamed_kept"] = resume.points(scene) is kept
    res["resume"] = sorted(bpy.ops.quadric.bake_resume())
    job = ops.last_job
    res["resumed_from"] = job.continues[1].frames  # frames kept from before the snapshot
    res["resumed_frames"] = job.recording.frames
    res["status"] = scene.quadric.status
    res["partial_end_after"] = scene.quadric.partial_bake_end
    res["resumed_keys"] = keyframe_dump(bodies)

    # A new scene of the first name has no run; nor has a copy (which copies the id) until it keeps its own, and
    # clearing the copy's bake leaves the original's run.
    kept = resume.points(scene)
    newcomer = bpy.data.scenes.new(first_name)
    res["newcomer"] = [first_name, newcomer.name, resume.points(newcomer) is None, resume.points(scene) is kept]
    copy = scene.copy()
    res["copy"] = [copy.quadric.resume_id == scene.quadric.resume_id != "", resume.points(copy) is None,
                   resume.points(scene) is kept]
    scene.name = "Renamed again"  # after the copy was made
    res["renamed_after_copy"] = [resume.points(scene) is kept, resume.points(copy) is None]
    own = resume.ResumePoints(kept.conv)
    resume.keep(copy, own, kept.recording)
    res["copy_kept"] = [copy.quadric.resume_id != scene.quadric.resume_id, resume.points(copy) is own,
                        resume.points(scene) is kept]
    window = bpy.context.window_manager.windows[0]
    window.scene = copy
    with bpy.context.temp_override(window=window), captured_reports() as reports:
        cleared = [bpy.context.scene.name == copy.name, sorted(bpy.ops.quadric.clear_bake())]
    window.scene = scene
    res["copy_cleared"] = cleared + [resume.points(copy) is None, resume.points(scene) is kept, reports]
    bpy.data.scenes.remove(copy)
    resume.keep(scene, kept, kept.recording)  # the copy's run, its scene gone, is dropped
    res["runs_left"] = len(resume._kept)
    return res


def scenario_bake_resume_saved(out):
    """Bake from Current Frame after the .blend was saved and opened again in a new session (the kept runs in
    memory dropped): the run cancelled after 15 frames, read from beside the file, continued from frame 10 against
    the whole run; a snapshot or run.json damaged on disk; a run kept before the file was first saved; Clear Bake."""
    scene, bodies = build_bake_scene()
    ops, resume, resume_files = mod("operators"), mod("resume"), mod("resume_files")
    names = [b.name for b in bodies]
    out = os.path.join(os.path.dirname(out), "saved")  # ``out`` is the result's file
    os.makedirs(out)
    path = os.path.join(out, "pile.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    res = dict(whole=sorted(bpy.ops.quadric.simulate()))
    folder = resume_files.folder(bpy.context.scene)
    res["whole_unsaved"] = os.path.exists(folder)  # written when the file is saved
    bpy.ops.wm.save_mainfile()
    res["whole_keys"] = keyframe_dump(bodies)
    res["whole_folder"] = [folder.startswith(os.path.join(out, "quadric_cache", "pile", "resume-")),
                           sorted(os.listdir(folder))]
    with captured_reports() as reports:
        bpy.ops.quadric.clear_bake()
    res["clear"] = [os.path.exists(folder), os.path.exists(os.path.join(out, "quadric_cache")), reports]

    def partial():
        job = ops.prepare_job(bpy.context, on_progress=lambda done, total: done >= 15 and job.cancel())
        job.run_sync()
        ops.finish_job(bpy.context, job)
        return keyframe_dump([bpy.data.objects[n] for n in names])

    res["partial_keys"] = partial()
    bpy.ops.wm.save_mainfile()
    res["partial_files"] = sorted(os.listdir(folder))
    bpy.ops.wm.save_mainfile()
    res["files_after_save"] = sorted(os.listdir(folder))  # the run was there already: not written again

    def new_session(blend=path):
        resume._kept.clear()  # what a new Blender session starts with
        bpy.ops.wm.open_mainfile(filepath=blend)
        bpy.context.scene.frame_set(10)
        return [bpy.data.objects[n] for n in names]

    # saved under another name, its run untouched since it was opened (not read into memory): copied beside it
    new_session()
    copy = os.path.join(out, "copy.blend")
    bpy.ops.wm.save_as_mainfile(filepath=copy)
    copied = resume_files.folder(bpy.context.scene)
    res["copied"] = [copied != folder, sorted(os.listdir(copied)) == sorted(os.listdir(folder))]

    bodies = new_session()
    res["available"] = [resume.available(bpy.context.scene), resume.points(bpy.context.scene) is None]
    res["resume"] = sorted(bpy.ops.quadric.bake_resume())
    job = ops.last_job
    res["from_disk"] = [type(job.continues[0]).__name__, job.continues[1].frames, job.recording.frames]
    res["resumed_keys"] = keyframe_dump(bodies)

    # damaged on disk: the snapshot it would continue from, then run.json; each refused, nothing changed
    bpy.ops.wm.save_mainfile()
    before = keyframe_dump(new_session())
    snapshot = os.path.join(folder, resume_files.read_run(bpy.context.scene)["snapshots"]["9"])
    with open(snapshot, "r+b") as handle:
        handle.truncate(100)
    with captured_reports() as reports:
        res["damaged_snapshot"] = [op_error(bpy.ops.quadric.bake_resume), bpy.context.scene.quadric.status]
    res["damaged_snapshot_reports"] = reports
    res["damaged_snapshot_keys"] = keyframe_dump([bpy.data.objects[n] for n in names]) == before
    new_session()
    with open(os.path.join(folder, resume_files.RUN), "w") as handle:
        handle.write("{not json")
    res["damaged_run"] = op_error(bpy.ops.quadric.bake_resume)
    res["damaged_run_keys"] = keyframe_dump([bpy.data.objects[n] for n in names]) == before
    bodies = new_session(copy)  # the copy's run, its own files
    res["copy_resume"] = sorted(bpy.ops.quadric.bake_resume())
    res["copy_keys"] = keyframe_dump(bodies)

    # a run kept before the file was first saved goes beside it when it is saved
    scene, bodies = build_bake_scene()
    job = ops.prepare_job(bpy.context)
    job.run_sync()
    ops.finish_job(bpy.context, job)
    unsaved = [resume_files.folder(scene), resume.points(scene) is not None]
    second = os.path.join(out, "second.blend")
    bpy.ops.wm.save_as_mainfile(filepath=second)
    folder = resume_files.folder(bpy.context.scene)
    res["saved_later"] = unsaved + [folder.startswith(os.path.join(out, "quadric_cache", "second")),
                                    sorted(os.listdir(folder))]

    # a deleted scene's run goes when the file is saved without it
    kept = resume.points(scene)
    copy = scene.copy()
    resume.keep(copy, resume.ResumePoints(kept.conv), kept.recording)  # an id and a run of its own
    bpy.ops.wm.save_mainfile()
    copy_folder = resume_files.folder(copy)
    res["deleted_scene"] = [copy_folder != folder, os.path.isdir(copy_folder), os.path.isdir(folder)]
    bpy.data.scenes.remove(copy)
    bpy.ops.wm.save_mainfile()
    res["deleted_scene"] += [os.path.exists(copy_folder), os.path.isdir(folder), resume.available(scene)]
    return res


# ------------------------------------------------------------------ particles, soft bodies, force fields
def points_mesh(name, points, velocities=None):
    """A mesh object of loose vertices (world = local), with a 'velocity' point attribute if given."""
    mesh = bpy.data.meshes.new(name)
    mesh.vertices.add(len(points))
    mesh.vertices.foreach_set("co", np.asarray(points, dtype=np.float32).ravel())
    if velocities is not None:
        attribute = mesh.attributes.new("velocity", 'FLOAT_VECTOR', 'POINT')
        attribute.data.foreach_set("vector", np.asarray(velocities, dtype=np.float32).ravel())
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def add_emitter(name, location, rotation, count, normal_factor, size, mass):
    """A 0.5 m plane emitting ``count`` particles from its faces at frame 1, straight out along its normal."""
    bpy.ops.mesh.primitive_plane_add(size=0.5, location=location, rotation=rotation)
    emitter = bpy.context.object
    emitter.name = name
    emitter.modifiers.new("Particles", 'PARTICLE_SYSTEM')
    settings = emitter.particle_systems[0].settings
    settings.count, settings.normal_factor, settings.particle_size, settings.mass = count, normal_factor, size, mass
    settings.factor_random = 0.0
    settings.frame_start = settings.frame_end = 1.0  # all born at the first frame
    return emitter


# one field per case: its type and the settings it gets (each acting alone on the same particles)
FIELD_CASES = {
    "force": dict(type='FORCE', location=(0.5, -0.3, 0.2), strength=2.5, flow=0.4),
    "gravitation": dict(type='FORCE', location=(-0.4, 0.2, 0.1), strength=3.0, use_gravity_falloff=True),
    "wind": dict(type='WIND', location=(3.0, 1.0, 0.0), rotation=(0.3, -0.5, 0.2), strength=4.0, flow=0.7),
    "vortex": dict(type='VORTEX', location=(0.2, 0.1, -0.1), rotation=(0.4, 0.1, 0.0), strength=1.5),
    "point_vortex": dict(type='VORTEX', shape='POINT', location=(0.1, -0.2, 0.0), rotation=(0.0, 0.3, 0.5),
                         strength=-2.0),
    "harmonic": dict(type='HARMONIC', location=(0.1, 0.2, 0.3), strength=3.0, harmonic_damping=0.4,
                     rest_length=0.5),
    "drag": dict(type='DRAG', quadratic_drag=0.6, linear_drag=0.8),
    "turbulence": dict(type='TURBULENCE', strength=2.0, size=0.5, flow=0.3, seed=7),
    "magnet": dict(type='MAGNET', strength=5.0),
}
FIELD_STEP = 1e-3


def step_forces(solver, conv, step=FIELD_STEP):
    """Each group's force per particle (n, 3), m (v1 - v0) / h over one symplectic Euler step: exactly the force
    at the start, as v1 = v0 + h f(x0, v0) / m."""
    sim = solver.Simulation(conv.scene, dt=step)
    before = [sim.state.particle_velocities(g).copy() for g in range(len(conv.scene.particles))]
    sim.step()
    forces = []
    for g, spec in enumerate(conv.scene.particles):
        mass = np.reshape(spec["mass"], (-1, 1)) if np.ndim(spec["mass"]) else spec["mass"]
        forces.append(((sim.state.particle_velocities(g) - before[g]) / step * mass).tolist())
    return forces


def scenario_particle_fields(out):
    """Each kind of Blender force field alone on particles made from a mesh's vertices (and on particles of a
    particle system that weighs the wind by half), read back as the force of one step; a particle system's
    particles as emitted; its gravity weight."""
    scene = empty_scene()
    scene.use_gravity = False
    scene.frame_start, scene.frame_end = 1, 3
    rng = np.random.default_rng(5)
    points = rng.uniform(-1.0, 1.0, size=(8, 3))
    velocities = rng.normal(size=(8, 3))
    cloud = points_mesh("Cloud", points, velocities)
    select_only(cloud)
    res = dict(add=sorted(bpy.ops.quadric.add_particles(source='VERTICES', mass=2.0, radius=0.0)))
    emitter = add_emitter("Emitter", (0.0, 0.0, 3.0), (0.4, 0.0, 0.3), count=20, normal_factor=2.0, size=0.03,
                          mass=0.5)
    settings = emitter.particle_systems[0].settings
    settings.effector_weights.wind = 0.5
    before = dict(frame_start=settings.frame_start, frame_end=settings.frame_end, lifetime=settings.lifetime)
    counts = (len(bpy.data.objects), len(bpy.data.particles), len(bpy.data.meshes))
    select_only(emitter)
    res["add_emitter"] = sorted(bpy.ops.quadric.add_particles())
    res["emitter_source"] = emitter.quadric.particles.source
    solver = mod("runtime").get_solver()
    convert = mod("convert")
    res["cases"] = {}
    for name, case in FIELD_CASES.items():
        case = dict(case)
        bpy.ops.object.effector_add(type=case.pop("type"), location=case.pop("location", (0.0, 0.0, 0.0)),
                                    rotation=case.pop("rotation", (0.0, 0.0, 0.0)))
        field_obj = bpy.context.object
        for key, value in case.items():
            setattr(field_obj.field, key, value)
        bpy.context.view_layer.update()
        conv = convert.build_scene(solver, bpy.context)
        res["cases"][name] = dict(
            type=field_obj.field.type, matrix=[list(r) for r in field_obj.matrix_world],
            field={k: getattr(field_obj.field, k) for k in ("strength", "flow", "shape", "harmonic_damping",
                                                           "rest_length", "linear_drag", "quadratic_drag", "size",
                                                           "seed", "use_gravity_falloff")},
            forces=step_forces(solver, conv), warnings=conv.warnings,
            solver_forces=[f for f in conv.scene.forces])
        bpy.data.objects.remove(field_obj)
    res["groups"] = [dict(name=g["name"], positions=g["positions"], velocities=g["velocities"], mass=g["mass"],
                          radius=g["radius"]) for g in conv.scene.particles]
    res["emitter_matrix"] = [list(r) for r in emitter.matrix_world]
    res["settings_after"] = dict(frame_start=settings.frame_start, frame_end=settings.frame_end,
                                 lifetime=settings.lifetime)
    res["settings_before"] = before
    res["counts"] = [counts, (len(bpy.data.objects), len(bpy.data.particles), len(bpy.data.meshes))]
    # gravity, weighed by a quarter for the particle system's particles
    scene.use_gravity = True
    settings.effector_weights.gravity = 0.25
    conv = convert.build_scene(solver, bpy.context)
    res["gravity"] = list(scene.gravity)
    res["gravity_forces"] = step_forces(solver, conv)
    return res


def scenario_particle_point_cloud(out):
    """A point cloud, moved and scaled by 2, added as particles: its points, radii and 'velocity' attribute in world
    space. (Its own scenario: Blender 4.2 and 4.4 cannot convert a mesh to a point cloud, which this one needs.)"""
    empty_scene()
    targets = bpy.ops.object.convert.get_rna_type().properties["target"].enum_items
    res = dict(convertible='POINTCLOUD' in targets.keys())
    if not res["convertible"]:
        return res
    solver = mod("runtime").get_solver()
    convert = mod("convert")
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=2, y_subdivisions=2, size=1.0)
    bpy.ops.object.convert(target='POINTCLOUD')
    cloud = bpy.context.object
    cloud.name = "Points"
    n = len(cloud.data.points)
    cloud.data.points.foreach_set("radius", np.linspace(0.01, 0.02, n).astype(np.float32))
    attribute = cloud.data.attributes.new("velocity", 'FLOAT_VECTOR', 'POINT')
    attribute.data.foreach_set("vector", np.tile([0.0, 0.0, 1.5], n).astype(np.float32))
    cloud.location, cloud.scale = (1.0, 2.0, 3.0), (2.0, 2.0, 2.0)
    select_only(cloud)
    res["add_cloud"] = sorted(bpy.ops.quadric.add_particles())
    conv = convert.build_scene(solver, bpy.context)
    local = np.empty(3 * n, dtype=np.float32)
    cloud.data.points.foreach_get("co", local)
    res["cloud"] = dict(local=local.reshape(n, 3).tolist(), matrix=[list(r) for r in cloud.matrix_world],
                        source=cloud.quadric.particles.source, group=conv.scene.particles[-1],
                        warnings=conv.warnings)
    return res


def scenario_parented_bodies(out):
    """Dynamic bodies under parents: one under a turned, uniformly scaled empty, one under an empty that moves;
    simulated and baked as Simulate does, then read back through their world matrices at every frame."""
    scene = empty_scene()
    scene.frame_start, scene.frame_end = 1, 25
    scene.quadric.substeps = 10
    bpy.ops.object.empty_add(location=(1.0, 2.0, 3.0), rotation=(0.3, 0.2, 0.5))
    mount = bpy.context.object
    mount.name, mount.scale = "Mount", (2.0, 2.0, 2.0)
    carrier = moving_empty("Carrier", (5.0, 0.0, 4.0), (7.0, 0.0, 4.0), 25)
    scene.frame_set(1)
    children = {}
    for name, parent, location in (("Hung", mount, (1.0, 2.0, 5.0)), ("Carried", carrier, (5.0, 0.0, 5.0))):
        bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=2, radius=0.1, location=location)
        child = bpy.context.object
        child.name = name
        select_only(child)
        bpy.ops.quadric.add_body()
        child.parent = parent
        child.matrix_parent_inverse = parent.matrix_world.inverted()  # keep its place, as Ctrl+P does
        children[name] = child
    bpy.context.view_layer.update()
    res = dict(start={n: list(c.matrix_world.translation) for n, c in children.items()},
               own_before={n: list(c.location) for n, c in children.items()},
               problems=[p.message for p in mod("preflight").check(bpy.context)])
    ops = mod("operators")
    job = ops.prepare_job(bpy.context)
    job.run_sync()
    res["state"], res["message"] = job.state, job.message
    if job.state != 'DONE':
        return res
    res["finish"] = sorted(ops.finish_job(bpy.context, job))
    index = {b["name"]: i for i, b in enumerate(job.conv.scene.bodies)}
    res["recorded"] = {n: job.recording.body_poses[:, index[n], :3].tolist() for n in children}
    res["offsets"] = {b.object_name: list(b.offset_location) for b in job.conv.bodies}
    res["played"] = {n: [] for n in children}
    res["parents_played"] = {n: [] for n in children}
    for f in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(f)
        for n, c in children.items():
            res["played"][n].append(list(c.matrix_world.translation))
            res["parents_played"][n].append(c.parent.name)
    res["world_scale"] = {n: list(c.matrix_world.to_scale()) for n, c in children.items()}
    scene.frame_set(scene.frame_start)
    bpy.ops.quadric.clear_bake()
    res["own_after_clear"] = {n: list(c.location) for n, c in children.items()}
    return res


def scenario_fields_on_bodies_and_ropes(out):
    """A Wind field (its Z along +Y) on a Quadric body and a free rope, without gravity; the scene's rigid body
    world weighs wind by half, as it does for Blender's own rigid bodies. Simulated as Simulate does."""
    scene = empty_scene()
    scene.use_gravity = False
    scene.frame_start, scene.frame_end = 1, 13
    scene.quadric.substeps = 10
    bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=3, radius=0.1, location=(0.0, 0.0, 1.0))
    ball = bpy.context.object
    ball.name = "Pushed"
    select_only(ball)
    bpy.ops.quadric.add_body()
    data = bpy.data.curves.new("Line", 'CURVE')
    data.dimensions = '3D'
    spline = data.splines.new('POLY')
    spline.points.add(1)
    spline.points[0].co = (0.0, 2.0, 1.0, 1.0)
    spline.points[1].co = (1.0, 2.0, 1.0, 1.0)
    line = bpy.data.objects.new("Line", data)
    scene.collection.objects.link(line)
    select_only(line)
    bpy.ops.quadric.make_rope(segments=6, radius=0.01, start_mode='FREE', end_mode='FREE')
    bpy.ops.rigidbody.world_add()
    scene.rigidbody_world.effector_weights.wind = 0.5
    bpy.ops.object.effector_add(type='WIND', location=(0.0, -3.0, 1.0), rotation=(-math.pi / 2, 0.0, 0.0))
    wind = bpy.context.object
    wind.field.strength = 2.0
    wind.field.flow = 0.0
    bpy.context.view_layer.update()
    ops = mod("operators")
    job = ops.prepare_job(bpy.context)
    job.run_sync()
    res = dict(state=job.state, message=job.message, warnings=job.conv.warnings,
               forces=list(job.conv.scene.forces), wind_axis=list(wind.matrix_world.col[2])[:3],
               strength=wind.field.strength, h=1.0 / (job.conv.fps * job.conv.substeps), substeps=job.conv.substeps)
    if job.state != 'DONE':
        return res
    solver = mod("runtime").get_solver()
    b = next(i for i, body in enumerate(job.conv.scene.bodies) if body["name"] == "Pushed")
    res["mass"] = float(solver.Simulation(job.conv.scene).model.mass[b])
    rope = job.conv.scene.ropes[0]
    res["rope_mu"] = rope["density"] * math.pi * rope["radius"] ** 2
    res["rope_damping"] = rope["damping"]
    res["ball"] = job.recording.body_poses[:, b, :3].tolist()
    res["rope"] = job.recording.rope_nodes(0).tolist()
    res["finish"] = sorted(ops.finish_job(bpy.context, job))
    return res


def sheet_mesh(name, columns, rows, spacing, location):
    """A vertical sheet of quads in the object's XZ plane, its top row at the object's origin: vertex
    (row r, column c) at (c spacing, 0, -r spacing), numbered row by row."""
    verts = [(c * spacing, 0.0, -r * spacing) for r in range(rows) for c in range(columns)]
    faces = [(r * columns + c, r * columns + c + 1, (r + 1) * columns + c + 1, (r + 1) * columns + c)
             for r in range(rows - 1) for c in range(columns - 1)]
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(verts, [], faces)
    obj = bpy.data.objects.new(name, mesh)
    obj.location = location
    bpy.context.scene.collection.objects.link(obj)
    return obj


def instance_positions(obj):
    """World positions of the instances a particles object draws, through the evaluated depsgraph (float32)."""
    depsgraph = bpy.context.evaluated_depsgraph_get()
    found = [np.array(i.matrix_world, dtype=np.float32)[:3, 3] for i in depsgraph.object_instances
             if i.is_instance and i.parent is not None and i.parent.original == obj]
    return np.array(found).reshape(-1, 3)


def evaluated_vertices(obj):
    """The evaluated mesh's vertices in the object's axes (float32), modifiers applied."""
    evaluated = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    mesh = evaluated.to_mesh()
    co = np.empty(3 * len(mesh.vertices), dtype=np.float32)
    mesh.vertices.foreach_get("co", co)
    evaluated.to_mesh_clear()
    return co.reshape(-1, 3)


def group_state():
    """What a bake of particles and soft bodies changes in the .blend: objects, their modifiers and meshes,
    the groups' bake settings, node groups."""
    return dict(objects={o.name: dict(modifiers=[(m.name, m.type) for m in o.modifiers],
                                      vertices=len(o.data.vertices) if o.type == 'MESH' else None,
                                      cache=o.quadric.particles.cache_path,
                                      output=getattr(o.quadric.particles.output_object, "name", None))
                         for o in bpy.data.objects},
                counts={k: len(getattr(bpy.data, k)) for k in ("objects", "meshes", "node_groups")})


GRAINS = [(x, y, z) for x in (-0.2, 0.0, 0.2) for y in (-0.2, 0.2) for z in (1.0, 1.5)]
SHEET = dict(columns=5, rows=5, spacing=0.15, location=(3.0, 0.0, 2.0), total_mass=0.25, stiffness=100.0,
             damping=1.0)


def build_particle_bake_scene():
    """A ground plane; grains made from a mesh's vertices, dropped from 1 and 1.5 m; a vertical sheet pinned
    along its top row by a vertex group (one vertex below at weight 0.3, not pinned)."""
    scene = empty_scene()
    scene.frame_start, scene.frame_end = 1, 48
    scene.quadric.substeps = 20
    bpy.ops.mesh.primitive_plane_add(size=20.0)
    ground = bpy.context.object
    ground.name = "Ground"
    select_only(ground)
    bpy.ops.quadric.add_collider(kind='PLANE')
    grains = points_mesh("Grains", GRAINS)
    select_only(grains)
    bpy.ops.quadric.add_particles(source='VERTICES', mass=0.01, radius=0.02)
    sheet = sheet_mesh("Sheet", SHEET["columns"], SHEET["rows"], SHEET["spacing"], SHEET["location"])
    pins = sheet.vertex_groups.new(name="Pins")
    pins.add(list(range(SHEET["columns"])), 1.0, 'REPLACE')
    pins.add([SHEET["columns"] + 2], 0.3, 'REPLACE')
    select_only(sheet)
    bpy.ops.quadric.make_soft_body(total_mass=SHEET["total_mass"], stiffness=SHEET["stiffness"],
                                   damping=SHEET["damping"], radius=0.0, pin_group="Pins")
    return scene, grains, sheet


def scenario_particle_bake(out, blend_path):
    """End to end: grains fall onto a plane collider and a sheet hangs from its pins; baked to point caches,
    played back through the evaluated depsgraph, cleared; a cancelled run, a failed cache write, and undo."""
    scene, grains, sheet = build_particle_bake_scene()
    bpy.ops.wm.save_as_mainfile(filepath=blend_path)
    ops = mod("operators")
    res = dict(problems=[(p.severity, p.message) for p in mod("preflight").check(bpy.context)],
               panel=draw_panels([grains, sheet]))
    ctx = bpy.context
    job = ops.prepare_job(ctx)
    res["job_state"] = job.run_sync()
    res["finish"] = sorted(ops.finish_job(ctx, job))
    res["status"] = scene.quadric.status
    rec, conv = job.recording, job.conv
    binding = {b.object_name: b for b in conv.groups}
    res["frame_start"], res["fps"], res["dt"] = conv.frame_start, conv.fps, conv.dt
    res["grains"] = rec.particles(binding["Grains"].index).tolist()
    res["sheet"] = rec.particles(binding["Sheet"].index).tolist()
    res["sheet_spec"] = {k: conv.scene.particles[binding["Sheet"].index][k] for k in ("vertices", "edges",
                                                                                      "pinned", "mass")}
    res["sheet_matrix"] = [list(r) for r in sheet.matrix_world]
    output = grains.quadric.particles.output_object
    res["output"] = dict(name=output.name, modifiers=[(m.name, m.type) for m in output.modifiers],
                         matrix=[list(r) for r in output.matrix_world])
    res["sheet_modifiers"] = [(m.name, m.type, getattr(m, "filepath", "")) for m in sheet.modifiers]
    res["cache_paths"] = [grains.quadric.particles.cache_path, sheet.quadric.particles.cache_path]
    files = [bpy.path.abspath(p) for p in res["cache_paths"]]
    res["files_exist"] = [os.path.isfile(f) for f in files]
    res["played_grains"], res["played_sheet"] = [], []
    for f in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(f)
        res["played_grains"].append(instance_positions(output).tolist())
        res["played_sheet"].append(evaluated_vertices(sheet).tolist())
    scene.frame_set(scene.frame_start)

    # a bake that fails after its caches were written (here the bodies' part raises) keeps the earlier bake's
    # caches as they were, and leaves no staged file behind
    def digest(path):
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()

    kept = [digest(f) for f in files]
    job = ops.prepare_job(ctx, on_progress=lambda done, total: done >= 5 and job.cancel())
    job.start()
    job.wait(timeout=600)
    bake_module, real = mod("bake"), mod("bake").bake_recording_steps

    def refuse(context, conv, rec):
        raise ValueError("instanced bake 'Points': refused by the test")
        yield  # noqa: the steps of a bake that fails at once

    bake_module.bake_recording_steps = refuse
    try:
        res["failed_finish"] = sorted(ops.finish_job(ctx, job))
    finally:
        bake_module.bake_recording_steps = real
    res["failed_status"] = scene.quadric.status
    res["failed_caches_kept"] = [digest(f) for f in files] == kept
    res["failed_leftovers"] = sorted(os.listdir(os.path.dirname(files[0])))

    # Clear Bake: the caches, their modifier and the particles object go
    res["clear"] = sorted(bpy.ops.quadric.clear_bake())
    res["after_clear"] = dict(files=[os.path.exists(f) for f in files],
                              folder=os.path.exists(os.path.dirname(files[0])),
                              output_left=res["output"]["name"] in bpy.data.objects,
                              sheet_modifiers=[m.name for m in bpy.data.objects["Sheet"].modifiers],
                              cache_paths=[o.quadric.particles.cache_path for o in (grains, sheet)])
    # a cancelled run keeps its finished frames as a partial bake: five samples in each cache
    job = ops.prepare_job(ctx, on_progress=lambda done, total: done >= 5 and job.cancel())
    job.start()
    res["cancel_state"] = job.wait(timeout=600)
    res["cancel_finish"] = sorted(ops.finish_job(ctx, job))
    res["cancel_partial_end"] = scene.quadric.partial_bake_end
    read_pc2 = mod("point_cache").read_pc2
    res["cancel_samples"] = [read_pc2(bpy.path.abspath(o.quadric.particles.cache_path))[0].shape[0]
                             for o in (grains, sheet)]
    res["cancel_same_start"] = bool(np.array_equal(job.recording.particles(binding["Grains"].index),
                                                   rec.particles(binding["Grains"].index)[:5]))
    bpy.ops.quadric.clear_bake()
    before = group_state()
    # a cache that cannot be written (a file where its folder would go) changes nothing and says why
    blocker = os.path.join(os.path.dirname(blend_path), "quadric_cache")
    with open(blocker, "w") as handle:
        handle.write("in the way")
    with captured_reports() as reports:
        res["blocked"] = op_error(bpy.ops.quadric.simulate)
    res["blocked_reports"] = reports
    res["blocked_status"] = scene.quadric.status
    res["blocked_unchanged"] = group_state() == before
    os.remove(blocker)
    # Simulate as a click does (one undo step): undo takes the bake back, redo brings it again
    window = bpy.context.window_manager.windows[0]
    with bpy.context.temp_override(window=window):
        bpy.ops.ed.undo_push(message="before Simulate")
        res["simulate"] = sorted(bpy.ops.quadric.simulate('EXEC_DEFAULT', True))
    res["after_simulate"] = group_state()
    with bpy.context.temp_override(window=window):
        bpy.ops.ed.undo()
    res["after_undo"] = group_state()
    res["before_simulate"] = before
    with bpy.context.temp_override(window=window):
        bpy.ops.ed.redo()
    res["after_redo"] = group_state()
    # a Recording simulated elsewhere bakes the same way (Import Recording), here the first run's
    scene = bpy.context.scene  # (undo replaced it)
    bpy.ops.quadric.clear_bake()
    npz = os.path.join(os.path.dirname(blend_path), "grains.npz")
    rec.save(npz)
    res["import"] = sorted(bpy.ops.quadric.import_recording(filepath=npz))
    scene.frame_set(scene.frame_end)
    res["imported_last_frame"] = instance_positions(bpy.data.objects["Grains"].quadric.particles.output_object).tolist()
    return res


def scenario_particle_checks(out):
    """Check Scene and the operators on bad particle groups, soft bodies and fields: each problem named."""
    scene = empty_scene()
    scene.quadric.substeps = 1
    res = {}
    bpy.ops.object.empty_add(location=(5, 5, 5))
    lamp = bpy.context.object
    lamp.name = "Lamp"
    select_only(lamp)
    res["err_particles_of_empty"] = op_error(bpy.ops.quadric.add_particles)
    res["err_soft_body_of_empty"] = op_error(bpy.ops.quadric.make_soft_body)
    loose = points_mesh("Loose", [(0, 0, 1), (1, 0, 1)])
    select_only(loose)
    res["err_soft_body_without_edges"] = op_error(bpy.ops.quadric.make_soft_body)
    sheet = sheet_mesh("Sheet", 3, 3, 0.1, (0.0, 2.0, 1.0))
    select_only(sheet)
    res["err_missing_pin_group"] = op_error(bpy.ops.quadric.make_soft_body, pin_group="Pins")
    res["err_zero_mass_particles"] = op_error(bpy.ops.quadric.add_particles, source='VERTICES', mass=0.0)
    hair = add_emitter("Hairy", (0.0, -2.0, 1.0), (0.0, 0.0, 0.0), count=10, normal_factor=1.0, size=0.01, mass=1.0)
    hair.particle_systems[0].settings.type = 'HAIR'
    select_only(hair)
    res["err_hair"] = op_error(bpy.ops.quadric.add_particles)

    # accepted by the operators, then broken in the panel
    grains = points_mesh("Heavy", [(0, 0, 1), (0.1, 0, 1)])
    select_only(grains)
    bpy.ops.quadric.add_particles(source='VERTICES')
    grains.quadric.particles.mass = 0.0
    select_only(sheet)
    res["make_soft_body"] = sorted(bpy.ops.quadric.make_soft_body(stiffness=1e6, total_mass=0.1))
    stiff = sheet
    sheet2 = sheet_mesh("Unpinned", 3, 3, 0.1, (0.0, 4.0, 1.0))
    select_only(sheet2)
    bpy.ops.quadric.make_soft_body()
    sheet2.quadric.particles.pin_group = "Gone"
    bpy.ops.mesh.primitive_uv_sphere_add(location=(0.0, 0.0, -2.0))
    bowl = bpy.context.object
    bowl.name = "Bowl"
    select_only(bowl)
    bpy.ops.quadric.add_collider(kind='MESH')
    bpy.ops.mesh.primitive_ico_sphere_add(radius=0.1, location=(3.0, 0.0, 1.0))
    body = bpy.context.object
    body.name = "Pebble"
    select_only(body)
    bpy.ops.quadric.add_body()
    for name, kind, settings in (("Gusty", 'WIND', dict(noise=0.5)), ("Magnet", 'MAGNET', {}),
                                 ("Fading", 'FORCE', dict(falloff_power=2.0))):
        bpy.ops.object.effector_add(type=kind, location=(0.0, 0.0, 3.0))
        bpy.context.object.name = name
        for key, value in settings.items():
            setattr(bpy.context.object.field, key, value)
    res["stiffness_set"] = stiff.quadric.particles.stiffness
    res["check_error"] = op_error(bpy.ops.quadric.check_scene)
    res["problems"] = [dict(kind=p.kind, message=p.message, objects=list(p.objects), severity=p.severity)
                       for p in mod("preflight").check(bpy.context)]
    scene.quadric.particle_integrator = 'IMPLICIT_EULER'  # stable at any step: no substeps to ask for
    res["implicit_problems"] = [p.message for p in mod("preflight").check(bpy.context)]
    scene.quadric.particle_integrator = 'SYMPLECTIC_EULER'
    res["simulate_error"] = op_error(bpy.ops.quadric.simulate)
    res["kernels"] = kernel_modules()
    res["panel"] = draw_panels([grains, stiff])
    return res


def scenario_particle_contacts(out):
    """Grains falling onto a mesh collider (a subdivided grid), a static box body and a dynamic box resting on the
    grid: Check Scene, then Simulate's job; the grains' and bodies' last positions."""
    scene = empty_scene()
    scene.frame_start, scene.frame_end = 1, 36
    scene.quadric.substeps = 10
    def added(primitive, name, **settings):
        """A mesh primitive (bpy.ops.mesh.primitive_<primitive>_add) of this name, the only one selected."""
        getattr(bpy.ops.mesh, f"primitive_{primitive}_add")(**settings)
        bpy.context.object.name = name
        select_only(bpy.context.object)
        return bpy.context.object

    added("grid", "Floor", x_subdivisions=4, y_subdivisions=4, size=2.0, location=(0.0, 0.0, 0.0))
    bpy.ops.quadric.add_collider(kind='MESH')
    block = added("cube", "Block", size=0.4, location=(3.0, 0.0, 0.2))
    bpy.ops.quadric.add_body(shape='BOX')
    block.quadric.body_type = 'STATIC'
    added("cube", "Crate", size=0.4, location=(0.5, 0.5, 0.2))
    bpy.ops.quadric.add_body(shape='BOX')
    grains = points_mesh("Grains", [(-0.5, -0.5, 0.6), (-0.3, 0.3, 0.8), (3.05, 0.02, 0.9), (0.45, 0.55, 0.9)])
    select_only(grains)
    bpy.ops.quadric.add_particles(source='VERTICES', mass=0.01, radius=0.02)
    ops = mod("operators")
    res = dict(problems=[dict(severity=p.severity, message=p.message) for p in mod("preflight").check(bpy.context)])
    ctx = bpy.context
    job = ops.prepare_job(ctx)
    res["job_state"] = job.run_sync()
    res["finish"] = sorted(ops.finish_job(ctx, job))
    rec, conv = job.recording, job.conv
    index = {b.object_name: b.index for b in conv.groups}["Grains"]
    res["grains"] = rec.particles(index)[-1].tolist()
    res["grains_frame_before"] = rec.particles(index)[-2].tolist()
    res["bodies"] = {name: rec.body_poses[-1, k].tolist() for k, name in enumerate(rec.body_names)}
    res["h"] = 1.0 / (conv.fps * scene.quadric.substeps)
    return res


def keyed_cloth(name, columns, rows, location, keys):
    """A vertical sheet (sheet_mesh) pinned along its top row by the vertex group "Pins", keyed per frame in
    ``keys`` {frame: (location, rotation_euler)} with linear interpolation, made a soft body."""
    cloth = sheet_mesh(name, columns, rows, 0.1, location)
    cloth.vertex_groups.new(name="Pins").add(list(range(columns)), 1.0, 'REPLACE')
    for frame, (where, turn) in keys.items():
        cloth.location, cloth.rotation_euler = where, turn
        cloth.keyframe_insert("location", frame=frame)
        cloth.keyframe_insert("rotation_euler", frame=frame)
    for fc in mod("blender_compat").fcurves_of(cloth):
        for kp in fc.keyframe_points:
            kp.interpolation = 'LINEAR'
    return cloth


def scenario_pinned_cloth_follows(out, blend_path):
    """A flag keyed to move and turn, and a scarf parented to an empty that moves, both pinned along their top
    rows, and beads (particles made from a mesh's vertices) hanging from the same empty by two pinned vertices:
    simulated and baked as Simulate does, then played back; the recorded and the played vertices, and the
    objects' world matrices and mesh vertices at every frame."""
    scene = empty_scene()
    scene.frame_start, scene.frame_end = 1, 24
    scene.quadric.substeps = 10
    flag = keyed_cloth("Flag", 4, 3, (0.0, 0.0, 2.0), {1: ((0.0, 0.0, 2.0), (0.0, 0.0, 0.0)),
                                                         24: ((0.6, 0.3, 2.4), (0.0, 0.0, 0.7))})
    hand = moving_empty("Hand", (2.0, 0.0, 2.0), (2.5, -0.5, 1.5), 24)
    scarf = sheet_mesh("Scarf", 3, 3, 0.1, (2.0, 0.0, 2.0))
    scarf.vertex_groups.new(name="Pins").add([0, 1, 2], 1.0, 'REPLACE')
    scarf.parent = hand
    scarf.matrix_parent_inverse = hand.matrix_world.inverted()
    bpy.context.view_layer.update()
    for cloth in (flag, scarf):
        select_only(cloth)
        bpy.ops.quadric.make_soft_body(total_mass=0.1, stiffness=200.0, damping=0.5, radius=0.0, pin_group="Pins")
    beads = points_mesh("Beads", [(2.0, 1.0, 2.0), (2.2, 1.0, 2.0), (2.0, 1.0, 1.7), (2.2, 1.0, 1.5)])
    beads.vertex_groups.new(name="Pins").add([0, 1], 1.0, 'REPLACE')
    beads.parent = hand
    beads.matrix_parent_inverse = hand.matrix_world.inverted()
    select_only(beads)
    bpy.ops.quadric.add_particles(source='VERTICES', mass=0.01, radius=0.0)
    beads.quadric.particles.pin_group = "Pins"
    bpy.ops.wm.save_as_mainfile(filepath=blend_path)
    ops = mod("operators")
    res = dict(problems=[(p.severity, p.message) for p in mod("preflight").check(bpy.context)])
    job = ops.prepare_job(bpy.context)
    res["job_state"] = job.run_sync()
    res["finish"] = sorted(ops.finish_job(bpy.context, job))
    res["warnings"] = job.conv.warnings
    binding = {b.object_name: b for b in job.conv.groups}
    for cloth in (flag, scarf, beads):
        co = np.empty(3 * len(cloth.data.vertices), dtype=np.float32)
        cloth.data.vertices.foreach_get("co", co)
        spec = job.conv.scene.particles[binding[cloth.name].index]
        res[cloth.name] = dict(recorded=job.recording.particles(binding[cloth.name].index).tolist(),
                               co=co.reshape(-1, 3).tolist(), pinned=spec["pinned"],
                               track=spec.get("track") is not None, matrices=[], played=[],
                               modifiers=[m.type for m in cloth.modifiers])
    for f in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(f)
        for cloth in (flag, scarf, beads):
            res[cloth.name]["matrices"].append([list(r) for r in cloth.matrix_world])
        for cloth in (flag, scarf):
            res[cloth.name]["played"].append(evaluated_vertices(cloth).tolist())
        res["Beads"]["played"].append(instance_positions(beads.quadric.particles.output_object).tolist())
    return res


def scenario_particle_births(out, blend_path):
    """A particle system emitting 19 particles from frame 3 to 41, one every 2 frames, each living 12 frames less
    up to 40 % at random, simulated over frames 1 to 30 and baked; Blender's own birth times and lifetimes, the
    group the add-on made, the recording, and the instances drawn at every frame."""
    scene = empty_scene()
    scene.frame_start, scene.frame_end = 1, 30
    scene.quadric.substeps = 10
    emitter = add_emitter("Spout", (0.0, 0.0, 2.0), (0.0, 0.0, 0.0), count=19, normal_factor=1.0, size=0.02,
                          mass=0.01)
    settings = emitter.particle_systems[0].settings
    settings.frame_start, settings.frame_end = 3.0, 41.0
    settings.lifetime, settings.lifetime_random = 12.0, 0.4
    select_only(emitter)
    res = dict(add=sorted(bpy.ops.quadric.add_particles()))
    bpy.ops.wm.save_as_mainfile(filepath=blend_path)
    particles = emitter.evaluated_get(bpy.context.evaluated_depsgraph_get()).particle_systems[0].particles
    res["blender"] = dict(birth=[p.birth_time for p in particles], lifetime=[p.lifetime for p in particles])
    res["problems"] = [(p.severity, p.message) for p in mod("preflight").check(bpy.context)]
    ops = mod("operators")
    job = ops.prepare_job(bpy.context)
    res["job_state"] = job.run_sync()
    res["finish"] = sorted(ops.finish_job(bpy.context, job))
    res["warnings"] = job.conv.warnings
    index = job.conv.groups[0].index
    res["group"] = {k: job.conv.scene.particles[index][k] for k in ("positions", "velocities", "birth_times",
                                                                      "lifetimes")}
    res["recorded"] = job.recording.particles(index).tolist()
    res["fps"], res["h"], res["gravity"] = job.conv.fps, job.conv.dt, list(job.conv.scene.gravity)
    res["emitter_matrix"] = [list(r) for r in emitter.matrix_world]
    output = emitter.quadric.particles.output_object
    res["drawn"] = []
    for f in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(f)
        res["drawn"].append(instance_positions(output).tolist())
    return res


SCENARIOS = {name[len("scenario_"):]: fn for name, fn in globals().items() if name.startswith("scenario_")}


def main():
    name, out = sys.argv[1], sys.argv[2]
    if name != "install":
        enable()
    try:
        result = SCENARIOS[name](out, *sys.argv[3:])
    except Exception:
        traceback.print_exc()
        return 1
    with open(out, "w") as fh:
        json.dump(result, fh)
    return 0


if __name__ == "__main__":
    exit_process(main())
