"""Operators: add bodies / colliders / ropes, copy settings, check the scene and resolve overlaps, simulate (modal
or synchronous), clear, export, import, remove."""
import os
import time

import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty, StringProperty
from bpy_extras.io_utils import ExportHelper, ImportHelper

from . import (bake, blender_compat, body_shape, convert, fitting, instances, particle_bake, point_cache,
               preflight, preview, resume, resume_files, rope_rig, run_stats, runtime, shapes, stale, ticks)
from .job import SimulationJob
from .properties import (BODY_FIELDS, BODY_TYPE_ITEMS, MATERIAL_FIELDS, ROPE_FIELDS, SHAPE_ITEMS, end_mode_property,
                         frame_range)

COPY_STEP = 500  # objects Copy from Active writes a step: about 35 us each (2,000 took 70 to 80 ms at once)

# The one running modal simulation (the panel and status bar read it), and the last job started (for scripts).
active_job = None
last_job = None


def _named_or_selected(operator, context):
    """The object the operator's ``object`` names (the panel's), else the selection; None (reported) if the
    named object does not exist."""
    if not operator.object:
        return _selected(context)
    obj = bpy.data.objects.get(operator.object)
    if obj is None:
        operator.report({'ERROR'}, f"object '{operator.object}' does not exist")
        return None
    return [obj]


def _selected(context):
    return list(context.selected_objects or [])


def _report_problems(op, problems, done):
    """Report per-object problems: an error when nothing could be done, warnings otherwise."""
    for msg in problems:
        op.report({'WARNING'} if done else {'ERROR'}, msg)


# --------------------------------------------------------------------------- bodies
def rope_rig_of(obj):
    """The rope rig a rope's skinned mesh belongs to, else None."""
    parent = obj.parent
    if parent is not None and parent.quadric.role == 'ROPE' and parent.quadric.rope_mesh == obj:
        return parent
    return None


def is_shape_display(obj):
    return body_shape.display_owner(obj) is not None


def fit_steps(context, objs, shape=None):
    """Steps (addon/ticks.py) that fit each object's shape (``shape``: a family or 'AUTO'; default: its Shape
    setting), an object a step, changing nothing; returns ([(object, ShapeFit)], why the others failed).

    Every mesh is read before any becomes a body: a body's display changes the scene, and reading the next mesh
    then waits for Blender to evaluate the scene again (33 ms an object among 300, most of Add Body's time).
    Linked duplicates are fitted once (body_shape.FitMemo)."""
    fits, problems = [], []
    memo = body_shape.FitMemo()
    for k, obj in enumerate(objs):
        try:
            fits.append((obj, memo.fit(context, obj, shape)))
        except fitting.FitError as exc:
            problems.append(str(exc))
        yield "fitting the shapes", k + 1, len(objs)
    return fits, problems


def fit_then_commit(context, objs, shape=None):
    """fit_steps, then the step that begins a tick of its own and may no longer be stopped: the making of the
    bodies that follows (in one step, see QUADRIC_OT_add_body.steps)."""
    fits, problems = yield from fit_steps(context, objs, shape)
    yield ticks.ALONE
    yield ticks.COMMITTED
    return fits, problems


def store_fits(op, fits):
    """body_shape.apply_fit of each (object, fit) of fit_steps, reporting the fits' warnings; returns the objects."""
    batch = body_shape.DisplayBatch()
    offsets = zip(*body_shape.fit_offsets(*zip(*fits))) if fits else ()
    try:
        for (obj, found), offset in zip(fits, offsets):
            body_shape.apply_fit(obj, found, batch, offset)
            if found.warning:
                op.report({'WARNING'}, found.warning)
    finally:
        batch.finish()
    return [obj for obj, _ in fits]


def make_bodies(op, fits, body_type, shape=None):
    """Mark each object fitted by fit_steps as a body (``shape``, a family or 'AUTO', kept as its Shape setting
    where given) and store its fit; returns the objects."""
    for obj, _ in fits:
        s = obj.quadric
        with body_shape.quiet():
            s.role = 'BODY'
            s.body_type = body_type
            if shape is not None:
                s.shape = shape
    return store_fits(op, fits)


def describe_fit(obj):
    """'box', or 'box (auto)': what a body was fitted with, for reports."""
    s = obj.quadric
    family = shapes.NAMES[shapes.kind_of(s.fitted_shape)]
    return f"{family} (auto)" if s.shape == 'AUTO' else family


class QUADRIC_OT_add_body(ticks.TickedOperator, bpy.types.Operator):
    """Make the selected meshes (or every mesh of a collection) quadric bodies: fit each one's shape (Auto: the
    simplest shape that matches the mesh)"""
    bl_idname = "quadric.add_body"
    bl_label = "Add Quadric Body"
    bl_options = {'REGISTER', 'UNDO'}

    body_type: EnumProperty(name="Type", items=BODY_TYPE_ITEMS, default='DYNAMIC',
                            description="Dynamic bodies move, static ones stay, animated ones follow their keyframes")
    shape: EnumProperty(name="Shape", items=SHAPE_ITEMS, default='AUTO',
                        description="The collision shape to fit to each mesh")
    use_collection: BoolProperty(name="Whole Collection", default=False,
                                 description="Add every mesh of a collection (and of its child collections) that is "
                                             "not yet in the simulation, instead of the selected objects")
    collection: StringProperty(name="Collection",
                               description="The collection to add with Whole Collection (empty: the active one)")

    @classmethod
    def poll(cls, context):
        return context.mode == 'OBJECT'

    def _targets(self, context):
        """(objects to fit, how many were passed over, where they came from); None after reporting why not."""
        if not self.use_collection:
            return [o for o in _selected(context) if not is_shape_display(o)], 0, "selection"
        if self.collection:
            coll = bpy.data.collections.get(self.collection)
            if coll is None:
                self.report({'ERROR'}, f"collection '{self.collection}' does not exist")
                return None
        else:
            coll = context.view_layer.active_layer_collection.collection
        objs = [o for o in coll.all_objects if o.type == 'MESH' and rope_rig_of(o) is None
                and not is_shape_display(o)]
        new = [o for o in objs if o.quadric.role == 'NONE']
        return new, len(objs) - len(new), f"collection '{coll.name}'"

    def steps(self, context):
        """The shapes fitted an object a step (Esc stops it, nothing changed), then every body made in one step:
        each display made in a tick of its own would have Blender rebuild its relations after each tick."""
        targets = self._targets(context)
        if targets is None:
            return None
        objs, passed_over, source = targets
        if not objs and self.use_collection:
            self.report({'ERROR'}, f"nothing to add from the {source}: it has no mesh not yet in the simulation")
            return None
        if not objs:
            self.report({'ERROR'}, "select one or more mesh objects to make quadric bodies")
            return None
        fits, problems = yield from fit_then_commit(context, objs, self.shape)
        return make_bodies(self, fits, self.body_type, self.shape), problems, passed_over, source

    def done(self, context, result):
        if result is None:
            return {'CANCELLED'}
        fitted, problems, passed_over, source = result
        done = len(fitted)
        _report_problems(self, problems, done)
        if not done:
            return {'CANCELLED'}
        skipped = f"; {passed_over} already in the simulation" if passed_over else ""
        shown = ", ".join(f"'{o.name}' {describe_fit(o)}" for o in fitted[:5]) + (", ..." if done > 5 else "")
        self.report({'INFO'}, f"{done} quadric bod{'y' if done == 1 else 'ies'} added from the {source}{skipped}: "
                              f"{shown}")
        return {'FINISHED'}


class QUADRIC_OT_fit_shape(ticks.TickedOperator, bpy.types.Operator):
    """Fit the shape of the selected bodies to their meshes again, with each one's Shape setting (after scaling
    the object or editing its mesh)"""
    bl_idname = "quadric.fit_shape"
    bl_label = "Fit Shape"
    bl_options = {'REGISTER', 'UNDO'}

    object: StringProperty(name="Object", description="The body to fit (the panel passes the one it shows); "
                                                      "empty: the selected bodies")

    def steps(self, context):
        """As Add Quadric Body's: every mesh fitted first, a step each, then every fit stored in one step."""
        objs = _named_or_selected(self, context)
        if objs is None:
            return None
        bodies = [o for o in objs if o.quadric.role == 'BODY']
        if not bodies:
            self.report({'ERROR'}, "select one or more quadric bodies to fit their shapes again")
            return None
        fits, problems = yield from fit_then_commit(context, bodies)
        return problems, store_fits(self, fits)

    def done(self, context, result):
        if result is None:
            return {'CANCELLED'}
        problems, done = result
        _report_problems(self, problems, len(done))
        if not done:
            return {'CANCELLED'}
        self.report({'INFO'}, "fitted " + ", ".join(f"'{o.name}' as {describe_fit(o)}" for o in done))
        return {'FINISHED'}


# ------------------------------------------------------------------- copy settings
def copy_settings_steps(op, context, source, targets):
    """Steps that copy the source's settings (its role's: material, mass, body type or rope stiffness) onto the
    targets of its role, as Add Quadric Body's do: the meshes not yet in the simulation fitted a step each (Esc
    stops it, nothing changed), then, committed, made bodies and the settings copied COPY_STEP objects a step.
    Returns (source name, role, fields, bodies made, objects copied to, why others were skipped)."""
    src = source.quadric
    role = src.role
    fields = MATERIAL_FIELDS + {'BODY': BODY_FIELDS, 'ROPE': ROPE_FIELDS}.get(role, ())
    plain = [o for o in targets if o.quadric.role == 'NONE' and o.type == 'MESH'] if role == 'BODY' else []
    fits, skipped = yield from fit_then_commit(context, plain)
    made = make_bodies(op, fits, src.body_type)
    values = [(name, getattr(src, name)) for name in fields]
    copied = []
    for k, obj in enumerate(targets):
        if obj.quadric.role != role:
            if obj not in plain:
                what = "not in the simulation" if obj.quadric.role == 'NONE' else f"a {obj.quadric.role.lower()}"
                skipped.append(f"'{obj.name}': it is {what}, not a {role.lower()}")
            continue
        for name, value in values:
            setattr(obj.quadric, name, value)
        copied.append(obj)
        if len(copied) % COPY_STEP == 0:
            yield "copying the settings", k + 1, len(targets)
    return source.name, role, fields, made, copied, skipped


class QUADRIC_OT_copy_from_active(ticks.TickedOperator, bpy.types.Operator):
    """Copy the active object's Quadric settings (type, mass, material, rope stiffness) to the selected objects;
    selected meshes not yet in the simulation become bodies"""
    bl_idname = "quadric.copy_from_active"
    bl_label = "Copy from Active"
    bl_options = {'REGISTER', 'UNDO'}

    @classmethod
    def poll(cls, context):
        obj = context.active_object
        return context.mode == 'OBJECT' and obj is not None and obj.quadric.role != 'NONE'

    def steps(self, context):
        source = context.active_object
        targets = []
        for obj in _selected(context):
            obj = rope_rig_of(obj) or obj
            if obj != source and not is_shape_display(obj) and obj not in targets:
                targets.append(obj)
        return (yield from copy_settings_steps(self, context, source, targets))

    def done(self, context, result):
        source, role, fields, made, copied, skipped = result
        for msg in skipped:
            self.report({'WARNING'}, f"skipped {msg}")
        if not copied:
            self.report({'ERROR'}, f"no selected {role.lower()} to copy '{source}' settings to"
                                   + ("; select more objects" if not skipped else ""))
            return {'CANCELLED'}
        made_text = f" ({len(made)} made bodies first)" if made else ""
        self.report({'INFO'}, f"copied {', '.join(fields)} from '{source}' to {len(copied)} "
                              f"object{'s' if len(copied) != 1 else ''}{made_text}")
        return {'FINISHED'}


# ------------------------------------------------------------------------ colliders
class QUADRIC_OT_add_collider(bpy.types.Operator):
    """Make the selected meshes static colliders: a ground plane, an open tube, an open-top box or the mesh itself"""
    bl_idname = "quadric.add_collider"
    bl_label = "Add Collider"
    bl_options = {'REGISTER', 'UNDO'}

    kind: EnumProperty(name="Kind", default='AUTO', description="Shape of the collider", items=[
        ('AUTO', "Auto", "Recognise the mesh: flat -> plane, circular -> tube, a box's floor and walls -> box, "
                         "otherwise mesh"),
        ('PLANE', "Plane", "Ground plane through the object, normal along local Z"),
        ('TUBE', "Tube", "Open hollow cylinder along local Z"),
        ('BOX', "Box", "Open-top box container"),
        ('MESH', "Mesh", "The mesh itself (terrain, bowl, stairs): its faces collide on the side their normals "
                         "point to"),
    ])

    def execute(self, context):
        objs = _selected(context)
        if not objs:
            self.report({'ERROR'}, "select a mesh to make a collider")
            return {'CANCELLED'}
        problems, done = [], 0
        depsgraph = context.evaluated_depsgraph_get() if self.kind == 'AUTO' else None
        for obj in objs:
            if obj.type != 'MESH':
                problems.append(f"'{obj.name}' is not a mesh (it is {obj.type.lower()}); colliders are made from meshes")
                continue
            try:
                kind = convert.detect_collider_kind(obj, depsgraph) if self.kind == 'AUTO' else self.kind
            except convert.ConvertError as exc:
                problems.append(str(exc))
                continue
            obj.quadric.role = 'COLLIDER'
            obj.quadric.collider_kind = kind
            done += 1
            self.report({'INFO'}, f"'{obj.name}' is a {kind.lower()} collider")
        _report_problems(self, problems, done)
        return {'FINISHED'} if done else {'CANCELLED'}


# ---------------------------------------------------------------------------- ropes
class QUADRIC_OT_make_rope(bpy.types.Operator):
    """Turn the selected curves into simulated ropes (armature + skinned mesh)"""
    bl_idname = "quadric.make_rope"
    bl_label = "Make Rope"
    bl_options = {'REGISTER', 'UNDO'}

    use_segment_length: BoolProperty(name="By Segment Length", default=False,
                                     description="Choose the segment length instead of the segment count")
    segments: IntProperty(name="Segments", default=24, min=1, soft_max=200,
                          description="Segments (bones) along the rope; typical 10 to 100 (more bend more smoothly "
                                      "and cost more)")
    segment_length: FloatProperty(name="Segment Length", default=0.1, min=1e-4, unit='LENGTH',
                                  description="Length of each segment in m (By Segment Length); typical 2 to 10 "
                                              "rope radii")
    radius: FloatProperty(name="Radius", default=0.02, min=1e-5, soft_max=0.5, unit='LENGTH',
                          description="Rope radius in m; typical 0.0002 (thread) to 0.005 (climbing rope) to 0.05")
    density: FloatProperty(name="Density", default=1200.0, min=1e-6,
                           description="Mass per volume of the rope's cross-section in kg/m^3; typical 500 (yarn) "
                                       "to 1100 (nylon) to 5000 (steel wire rope)")
    young_modulus: FloatProperty(name="Young's Modulus", default=5e4, min=1e-3,
                                 description="Bending stiffness as a Young's modulus in Pa; typical 1e3 (chain) to "
                                             "1e5 (cotton rope) to 1e9 (steel cable)")
    friction: FloatProperty(name="Friction", default=0.5, min=0.0,
                            description="Coulomb friction coefficient of the rope's surface (dimensionless); typical "
                                        "0.2 (steel, nylon) to 0.6 (cotton, rubber)")
    start_mode: end_mode_property("start", 'PIN')
    end_mode: end_mode_property("end", 'FREE')
    start_object: StringProperty(name="Start Object", description="Object the start is tied to (Start mode Object)")
    end_object: StringProperty(name="End Object", description="Object the end is tied to (End mode Object)")
    material: StringProperty(name="Material", description="Render material for the rope mesh (default: the curve's)")

    def execute(self, context):
        objs = _selected(context)
        if not objs:
            self.report({'ERROR'}, "select one or more curve objects to make ropes")
            return {'CANCELLED'}
        targets = {}
        for label, mode, name in (("start", self.start_mode, self.start_object), ("end", self.end_mode, self.end_object)):
            if mode == 'OBJECT':
                target = bpy.data.objects.get(name)
                if target is None:
                    self.report({'ERROR'}, f"rope {label} is tied to object '{name}', which does not exist")
                    return {'CANCELLED'}
                targets[label] = target
        mat = bpy.data.materials.get(self.material) if self.material else None
        if self.material and mat is None:
            self.report({'ERROR'}, f"material '{self.material}' does not exist")
            return {'CANCELLED'}
        problems, made = [], []
        for obj in objs:
            try:
                pts = rope_rig.curve_polyline(context, obj)
                length = rope_rig.arc_length(pts)
                if length <= 0.0:
                    raise rope_rig.RopeError(f"'{obj.name}': curve has zero length")
                n = max(1, round(length / self.segment_length)) if self.use_segment_length else self.segments
                nodes = rope_rig.resample(pts, n)
            except rope_rig.RopeError as exc:
                problems.append(str(exc))
                continue
            material = mat or (obj.data.materials[0] if obj.type == 'CURVE' and len(obj.data.materials) else None)
            arm, mesh = rope_rig.build_rig(context, obj.name + " Rope", nodes, self.radius, material)
            s = arm.quadric
            s.role = 'ROPE'
            s.rope_mesh = mesh
            s.rope_source = obj
            s.rope_radius = self.radius
            s.rope_density = self.density
            s.rope_young_modulus = self.young_modulus
            s.friction = self.friction
            s.start_mode, s.end_mode = self.start_mode, self.end_mode
            s.start_object = targets.get("start")
            s.end_object = targets.get("end")
            obj.hide_set(True)
            obj.hide_render = True
            made.append(arm)
        _report_problems(self, problems, len(made))
        if not made:
            return {'CANCELLED'}
        for o in context.selected_objects:
            o.select_set(False)
        for arm in made:
            arm.select_set(True)
        context.view_layer.objects.active = made[-1]
        self.report({'INFO'}, f"{len(made)} rope{'s' if len(made) != 1 else ''} made")
        return {'FINISHED'}


# ------------------------------------------------------------------------- simulate
def _console_progress(done, total, _last=[0.0]):
    now = time.perf_counter()
    if done == total or now - _last[0] > 1.0:
        _last[0] = now
        print(f"[quadric] frame {done}/{total}", flush=True)


def prepare_job(context, op=None, on_progress=None):
    """Check and convert the scene and return a SimulationJob, or None after reporting why not.

    Check Scene runs first (plain numpy, before the solver is loaded or compiled), so every overlap and bad
    setting is reported at once, in a second, rather than the first of them after the compile.
    """
    return ticks.drain(prepare_steps(context, op, on_progress))


def prepare_steps(context, op=None, on_progress=None):
    """prepare_job cut into steps for the modal operator's timer ticks (addon/ticks.py): Check Scene's and the
    conversion's. Closed between them, it has changed nothing but the problems Check Scene keeps."""
    problems = yield from preflight.check_steps(context)
    preflight.store(context.scene, problems)
    if op is not None:
        preflight.report(op, problems)
    if preflight.errors(problems):
        return None
    yield "converting the scene", 0, 1
    try:
        solver = runtime.get_solver(copy=False)  # the worker copies the prebuilt kernels (job.prepare)
        conv = yield from convert.build_scene_steps(solver, context)
    except ValueError as exc:  # ConvertError, or the solver's validation naming the object
        if op is not None:
            op.report({'ERROR'}, str(exc))
        context.scene.quadric.status = f"Error: {exc}"
        return None
    # the check has already warned about these objects (a mesh collider's wrongly wound faces, which the solver
    # warns about again while converting)
    warned = {f"'{p.objects[0]}'" for p in problems if p.severity == 'WARNING' and p.objects}
    for w in conv.warnings:
        if op is not None and not any(name in w for name in warned):
            op.report({'WARNING'}, w)
    global last_job
    folders = point_cache.cache_folder(context.scene)
    stage = ((lambda c, rec: particle_bake.write_caches(None, c, rec, folders)) if conv.groups else None)
    last_job = SimulationJob(solver, conv, on_progress=on_progress,
                             resume_points=resume.ResumePoints(conv), stage=stage, prepare=runtime.copy_prebuilt)
    return last_job


def prepare_resumed_steps(context, op=None, on_progress=None):
    """A SimulationJob that continues the scene's last run from the current frame (addon/resume.py), or None after
    reporting why it cannot: no run kept, the scene changed since, or the frame is not one the run finished. Cut
    into steps for timer ticks, as prepare_steps (ticks.drain runs them at once)."""
    scene = context.scene

    def refuse(why):
        scene.quadric.status = f"Cannot bake from frame {scene.frame_current}: {why}"
        if op is not None:
            op.report({'ERROR'}, scene.quadric.status)

    try:
        kept = yield from resume.read_steps(scene, runtime.get_solver(copy=False))
    except resume_files.StoredRunError as exc:
        refuse(str(exc))
        return None
    if kept is None:
        refuse("no run of this scene is kept (runs are kept until Blender quits, and beside the .blend once it is "
               "saved): Simulate first")
        return None
    job = yield from prepare_steps(context, op, on_progress)
    if job is None:
        return None
    conv = job.conv
    changed = kept.matches(conv)
    if changed:
        refuse(f"{changed} since the run it would continue: Simulate again")
        return None
    index = scene.frame_current - conv.frame_start
    start = kept.resumable(index) if index < conv.frames else None
    if start is None:
        last = conv.frame_start + kept.recording.frames - 1
        refuse(f"the kept run covers frames {conv.frame_start}-{last} of the range {conv.frame_start}-"
               f"{conv.frame_start + conv.frames - 1}")
        return None
    whole, rest, snapshot, before, points = resume.continued(conv, kept, start)
    job.conv, job.frames_total = rest, rest.frames
    job.resume_points, job.continues = points, (snapshot, before, whole)
    return job


def bake_all(context, conv, rec, op=None, staged=None):
    """Bake a Recording: the particles' point-cache files first, staged (a failure there changes nothing), then
    bodies (keyframes or instances, bake.bake_recording) and ropes, then the caches put in place and the
    modifiers and objects that play them. Returns (bodies, ropes, groups) baked, or None after reporting why
    nothing was (the earlier bake's caches kept). staged: the job's particle_bake.write_caches result or the
    error it raised, where the worker wrote the caches already (SimulationJob.stage)."""
    return ticks.drain(bake_all_steps(context, conv, rec, op, staged))


def bake_all_steps(context, conv, rec, op=None, staged=None):
    """bake_all cut into steps for timer ticks (addon/ticks.py); closed before it commits (Esc), the staged
    caches are discarded and the file is as it was."""
    scene = context.scene
    try:
        if isinstance(staged, Exception):
            raise staged
        written = staged if staged is not None else particle_bake.write_caches(scene, conv, rec)
    except (OSError, ValueError) as exc:
        message = f"could not write the point caches ({exc}); nothing was baked"
        scene.quadric.status = message
        if op is not None:
            op.report({'ERROR'}, message)
        return None
    try:
        nb, nr = yield from bake.bake_recording_steps(context, conv, rec)
    except BaseException as exc:  # the earlier bake's point caches stay as they were
        particle_bake.discard_caches(written)
        if not isinstance(exc, ValueError):
            raise
        # an instanced bake that failed has undone itself and names the object
        scene.quadric.status = f"Error: {exc}"
        if op is not None:
            op.report({'ERROR'}, str(exc))
        return None
    try:
        particle_bake.commit_caches(written)
    except OSError as exc:
        particle_bake.discard_caches(written)
        message = f"could not put the point caches in place ({exc})"
        scene.quadric.status = f"Error: {message}"
        if op is not None:
            op.report({'ERROR'}, message)
        return None
    names = [b.object_name for b in conv.bodies] + [r.armature_name for r in conv.ropes]
    stale.remember([bpy.data.objects[name] for name in names if name in bpy.data.objects])
    store_run_stats(scene, run_stats.summarize(rec.stats, conv.frame_start))
    return nb, nr, particle_bake.attach_caches(conv, rec, written)


def store_run_stats(scene, summary):
    """Keep a run's summarised statistics on the scene for the panel (zeros where the run had no frame)."""
    stored = scene.quadric.run_stats
    for name in stored.bl_rna.properties.keys():
        if name not in ("rna_type", "name"):
            setattr(stored, name, summary.get(name, 0))


def run_stats_summary(scene):
    """The scene's stored summary as run_stats.summarize returns it."""
    stored = scene.quadric.run_stats
    return {name: getattr(stored, name) for name in stored.bl_rna.properties.keys() if name not in ("rna_type", "name")}


def describe_bake(scene, bodies, ropes, groups):
    """'baked 3 bodies and 1 ropes', with the instanced bake's object and the particle groups where there are."""
    as_instances = scene.quadric.instance_points is not None and scene.quadric.bake_output == 'INSTANCES'
    what = f"{bodies} bodies as instances of '{scene.quadric.instance_points.name}'" if as_instances else \
        f"{bodies} bodies"
    if not groups:
        return f"baked {what} and {ropes} ropes"
    parts = [what] * bool(bodies) + [f"{ropes} ropes"] * bool(ropes)
    parts.append(f"{groups} particle group{'s' if groups != 1 else ''} or soft bod{'ies' if groups != 1 else 'y'}")
    return "baked " + (", ".join(parts[:-1]) + " and " if len(parts) > 1 else "") + parts[-1]


def bake_and_report_steps(context, conv, rec, op=None, source="", staged=None):
    """Steps of bake_all_steps, then say what was written (status and report); the message, or None after
    reporting why nothing was baked."""
    scene = context.scene
    counts = yield from bake_all_steps(context, conv, rec, op, staged)
    if counts is None:
        return None
    msg = f"{describe_bake(scene, *counts)} {source}".rstrip()
    scene.quadric.status = msg
    if op is not None:
        op.report({'INFO'}, msg)
        if scene.quadric.bake_output == 'INSTANCES' and counts[0] and not bpy.data.filepath:
            op.report({'WARNING'}, "the file is not saved, so the instances' point cache is in Blender's temporary "
                                   "folder, which is deleted when Blender quits: save the file and bake again")
    return msg


def finish_job(context, job, op=None):
    """Bake a finished job (main thread, one undo step) or report why nothing changed. A cancelled or diverged
    run's finished frames are baked too, marked partial."""
    return ticks.drain(finish_steps(context, job, op))


def finish_steps(context, job, op=None):
    """finish_job cut into steps for the modal operator's timer ticks (addon/ticks.py); returns the operator's
    result."""
    scene = context.scene
    if job.resume_points is not None:
        resume.keep(scene, job.resume_points, job.recording)
    if job.state != 'DONE':
        kept = job.recording.body_poses.shape[0] if job.recording is not None else 0
        # kept >= 2: frames beyond the start pose
        counts = (yield from bake_all_steps(context, job.conv, job.recording, op)) if kept >= 2 else None
        if counts is not None:
            scene.quadric.partial_bake_end = job.conv.frame_start + kept - 1
            message = (f"{job.message}; kept frames {job.conv.frame_start}-{scene.quadric.partial_bake_end} as a "
                       "partial bake")
        else:
            message = f"{job.message}; nothing was baked"
        scene.quadric.status = message
        if op is not None:
            op.report({'WARNING'} if job.state == 'CANCELLED' else {'ERROR'}, message)
        return {'FINISHED'} if counts is not None else {'CANCELLED'}
    compiled = (f", compiled {job.kernels_compiled} solver kernels in {job.compile_seconds:.0f} s, kept for next "
                "time" if job.compile_seconds >= 1.0 else "")  # not the few numba compiles in every process
    msg = yield from bake_and_report_steps(context, job.conv, job.recording, op,
                                           f"over {job.conv.frames} frames (simulated in {job.seconds:.1f} s"
                                           f"{compiled})", job.stage_error or job.staged)
    if msg is None:
        return {'CANCELLED'}
    scene.quadric.partial_bake_end = 0
    return {'FINISHED'}


def cancelled_while_compiling(job):
    if job.phase == 'COMPILING':
        return (f"cancelled while compiling the solver ({job.kernels_compiled} kernels so far); the compile "
                "finishes in the background and is kept for the next Simulate. Nothing was baked")
    return "cancelled while loading the solver; nothing was baked"


def _tag_redraw(context):
    wm = context.window_manager
    for window in wm.windows:
        for area in window.screen.areas:
            if area.type in {'PROPERTIES', 'VIEW_3D'}:
                area.tag_redraw()


def timer_tick(context, job):
    """What the modal timer does on the main thread while the worker runs: True while still running.

    Kept small so Blender's UI never waits on it: three numbers read, and a tick's budget (ticks.TICK_BUDGET) of
    showing the finished frame by the live preview (addon/preview.py).
    """
    state, done, total = job.poll()
    if state != 'RUNNING':
        return False
    preview.advance()
    context.window_manager.progress_update(done)
    if context.workspace is not None:
        context.workspace.status_text_set(f"Quadric Dynamics: {job.describe()}  (Esc to cancel)")
    _tag_redraw(context)
    return True


RUN_INTERVAL = 0.1  # s between the modal timer's ticks while the worker runs (ticks.TICK_INTERVAL before and after)


class StartingJob:
    """What the panel, the status bar and the Cancel button see while Simulate's start (prepare_steps) runs, a
    tick's budget at a time, before there is a SimulationJob."""

    def __init__(self, steps):
        self.stepper = ticks.Stepper(steps)
        self.cancel_requests = 0
        ticks.hold_from_collector()  # what Blender and the add-on hold, out of the collections in the ticks

    def poll(self):
        _, done, total = self.stepper.progress
        return 'RUNNING', done, total

    def describe(self):
        what, done, total = self.stepper.progress
        return f"Starting: {what} ({done}/{total})" if what else "Starting: checking the scene"

    def cancel(self):
        self.cancel_requests += 1


class SimulationRun:
    """What Simulate and Bake from Current Frame share: a job (from ``prepare_steps``) run synchronously, or in a worker
    polled by a modal timer with the live preview, then baked. Blender cannot register a subclass of a registered
    operator, so both derive from this."""
    _job = None
    _timer = None
    _start = None        # a StartingJob while the scene is checked and converted, before the run
    _bake = None         # a ticks.Stepper of the bake once the run has ended
    _bake_cancels = 0    # the job's cancel requests when the bake began

    @classmethod
    def poll(cls, context):
        return context.scene is not None and active_job is None

    def execute(self, context):
        job = ticks.drain(self.prepare_steps(context, self,
                                             on_progress=_console_progress if bpy.app.background else None))
        if job is None:
            return {'CANCELLED'}
        job.run_sync()
        return finish_job(context, job, self)

    def invoke(self, context, event):
        global active_job
        if bpy.app.background or context.window is None:
            return self.execute(context)
        self._start = active_job = StartingJob(self.prepare_steps(context, self))
        wm = context.window_manager
        self._timer = wm.event_timer_add(ticks.TICK_INTERVAL, window=context.window)
        wm.modal_handler_add(self)
        self._status(context, active_job.describe())
        return {'RUNNING_MODAL'}

    def _begin(self, context, job):
        """Start the prepared job in its worker, with the live preview, polled at RUN_INTERVAL."""
        global active_job
        self._job = active_job = job
        job.start()
        for note in preview.start(context, job.conv, job).notes:
            self.report({'INFO'}, note)
        ticks.hold_from_collector()  # and the conversion, kept until the bake
        self._retime(context, RUN_INTERVAL)
        context.window_manager.progress_begin(0, job.frames_total)
        self._status(context, "starting")

    def _retime(self, context, interval):
        """The modal timer, now every ``interval`` seconds."""
        if self._timer is not None and self._timer.time_step != interval:
            wm = context.window_manager
            wm.event_timer_remove(self._timer)
            self._timer = wm.event_timer_add(interval, window=context.window)

    def _start_tick(self, context, event):
        """Simulate's start (prepare_steps: Check Scene, the conversion) a tick's budget at a time. Esc or the
        Cancel button stop it, the file as it was (but the problems Check Scene keeps); other input is ignored
        meanwhile, as during the bake."""
        start = self._start
        if (event.type == 'ESC' and event.value == 'PRESS') or start.cancel_requests:
            start.stepper.cancel()
            self._cleanup(context)
            msg = "Simulate cancelled while checking and converting the scene: nothing was simulated"
            context.scene.quadric.status = msg
            self.report({'WARNING'}, msg)
            return {'CANCELLED'}
        if event.type != 'TIMER':
            return {'RUNNING_MODAL'}
        if event.timer is not self._timer:
            return {'PASS_THROUGH'}
        if ticks.advance_or_clean_up(start.stepper, lambda: self._cleanup(context)):
            self._status(context, start.describe())
            _tag_redraw(context)
            return {'RUNNING_MODAL'}
        self._start = None
        if start.stepper.result is None:  # Check Scene or the conversion reported why
            self._cleanup(context)
            return {'CANCELLED'}
        self._begin(context, start.stepper.result)
        return {'RUNNING_MODAL'}

    def _status(self, context, text):
        if context.workspace is not None:
            context.workspace.status_text_set(f"Quadric Dynamics: {text}  (Esc to cancel)" if text else None)

    def _cleanup(self, context):
        global active_job
        preview.end()  # the file as it was
        wm = context.window_manager
        if self._timer is not None:
            wm.event_timer_remove(self._timer)
            self._timer = None
        wm.progress_end()
        self._status(context, None)
        active_job = None
        ticks.release_to_collector()
        _tag_redraw(context)

    def modal(self, context, event):
        job = self._job
        if self._start is not None:
            return self._start_tick(context, event)
        if self._bake is not None:
            return self._bake_tick(context, event)
        if event.type == 'ESC' and event.value == 'PRESS':
            job.cancel()
            if job.state == 'RUNNING' and job.phase != 'SIMULATING':  # a compile cannot stop: it goes on, is kept
                return self.release(context, job)
            self._status(context, "cancelling")  # the worker stops at the end of this frame
            return {'RUNNING_MODAL'}
        if event.type != 'TIMER' or event.timer is not self._timer:
            return {'PASS_THROUGH'}
        if job.cancelled and job.state == 'RUNNING' and job.phase != 'SIMULATING':  # the Cancel button
            return self.release(context, job)
        if timer_tick(context, job):
            return {'PASS_THROUGH'}
        preview.end()  # before any bake: the file as it was, but for the bake
        self._retime(context, ticks.TICK_INTERVAL)
        self._bake = ticks.Stepper(finish_steps(context, job, self))
        self._bake_cancels = job.cancel_requests
        return self._bake_tick(context, None)

    def _bake_tick(self, context, event):
        """The bake after the run, a tick's budget (ticks.TICK_BUDGET) at a time. Esc or the Cancel button stop
        it before it commits, leaving the file as it was; other input is ignored meanwhile (an undo in the middle
        would take the data it is building away)."""
        job, bake = self._job, self._bake
        if (event is not None and event.type == 'ESC' and event.value == 'PRESS') or \
                job.cancel_requests != self._bake_cancels:
            self._bake_cancels = job.cancel_requests
            if bake.cancel():
                self._cleanup(context)
                msg = f"bake cancelled after the run ({job.message or 'finished'}): nothing was baked"
                context.scene.quadric.status = msg
                self.report({'WARNING'}, msg)
                return {'CANCELLED'}
            self._status(context, "finishing the bake")
            return {'RUNNING_MODAL'}
        if event is not None and event.type != 'TIMER':
            return {'RUNNING_MODAL'}
        if event is not None and event.timer is not self._timer:
            return {'PASS_THROUGH'}
        if ticks.advance_or_clean_up(bake, lambda: self._cleanup(context)):
            what, done, total = bake.progress
            self._status(context, f"baking: {what} ({done}/{total})" if what else "baking")
            _tag_redraw(context)
            return {'RUNNING_MODAL'}
        self._cleanup(context)
        return bake.result

    def release(self, context, job):
        """Give control back at once after Esc while the solver loads or compiles (see job.py)."""
        self._cleanup(context)
        msg = cancelled_while_compiling(job)
        context.scene.quadric.status = msg
        self.report({'WARNING'}, msg)
        return {'CANCELLED'}

    def cancel(self, context):  # Blender closing the window or loading a file: never wait for the worker
        if self._start is not None:
            self._start.stepper.cancel()
        if self._job is not None:
            self._job.cancel()
        if self._bake is not None and not self._bake.cancel():
            self._bake.finish()  # it has committed: the rest of the bake, at once
        self._cleanup(context)


class QUADRIC_OT_simulate(SimulationRun, bpy.types.Operator):
    """Simulate the scene's frame range and bake bodies and ropes to keyframes (Esc cancels)"""
    bl_idname = "quadric.simulate"
    bl_label = "Simulate and Bake"
    bl_options = {'REGISTER', 'UNDO'}

    prepare_steps = staticmethod(prepare_steps)


class QUADRIC_OT_bake_resume(SimulationRun, bpy.types.Operator):
    """Simulate and bake from the current frame on, continuing this session's last run of the unchanged scene
    from a state it kept; the frames before stay as they are (Esc cancels)"""
    bl_idname = "quadric.bake_resume"
    bl_label = "Bake from Current Frame"
    bl_options = {'REGISTER', 'UNDO'}

    prepare_steps = staticmethod(prepare_resumed_steps)


class QUADRIC_OT_check_scene(ticks.TickedOperator, bpy.types.Operator):
    """List every problem that would stop the simulation (overlapping bodies, flat shapes, parents, masses, bad
    rope curves), at once and without compiling the solver"""
    bl_idname = "quadric.check_scene"
    bl_label = "Check Scene"
    bl_options = {'REGISTER'}

    @classmethod
    def poll(cls, context):
        return context.scene is not None

    def steps(self, context):
        started = time.perf_counter()
        problems = yield from preflight.check_steps(context)
        return problems, time.perf_counter() - started

    def done(self, context, result):
        problems, seconds = result
        preflight.store(context.scene, problems)
        preflight.report(self, problems)
        if problems:  # errors, or warnings only (the status line shows the first)
            return {'FINISHED'}
        msg = f"Check Scene: no problems ({seconds:.2f} s)"
        context.scene.quadric.status = msg
        self.report({'INFO'}, msg)
        return {'FINISHED'}


class QUADRIC_OT_resolve_overlaps(ticks.TickedOperator, bpy.types.Operator):
    """Move dynamic bodies out of the overlaps Check Scene reports, each by the least it can: lifted off floors,
    pushed apart along the contact normal"""
    bl_idname = "quadric.resolve_overlaps"
    bl_label = "Resolve Overlaps"
    bl_options = {'REGISTER', 'UNDO'}

    @classmethod
    def poll(cls, context):
        return context.scene is not None and context.mode == 'OBJECT' and active_job is None

    def steps(self, context):
        return preflight.resolve_steps(context)

    def done(self, context, result):
        changes, left, problems = result
        preflight.store(context.scene, problems)
        if not changes and not left:
            self.report({'INFO'}, "no overlaps to resolve")
            return {'CANCELLED'}
        shown = ", ".join(f"'{name}' {preflight.describe_move(delta)}" for name, delta in changes[:10])
        more = f" and {len(changes) - 10} more" if len(changes) > 10 else ""
        for why in left:
            self.report({'WARNING'}, f"could not resolve {why}")
        if changes:
            self.report({'INFO'}, f"moved {len(changes)} bod{'y' if len(changes) == 1 else 'ies'}: {shown}{more}")
        if not changes:
            return {'CANCELLED'}
        context.scene.quadric.status = f"Resolve Overlaps moved {len(changes)} bodies"
        return {'FINISHED'}


class QUADRIC_OT_cancel(bpy.types.Operator):
    """Stop the running simulation (its finished frames are baked, marked partial), or the instanced bake after
    it (nothing is baked)"""
    bl_idname = "quadric.cancel"
    bl_label = "Cancel Simulation"

    @classmethod
    def poll(cls, context):
        return active_job is not None

    def execute(self, context):
        active_job.cancel()
        return {'FINISHED'}


class QUADRIC_OT_clear_bake(bpy.types.Operator):
    """Remove the baked keyframes and restore the original transforms and rotation modes; delete an instanced
    bake (its points object, node group, collection and point cache file) and show its bodies again; delete the
    point caches of particles and soft bodies, with their Mesh Cache modifiers and particle objects"""
    bl_idname = "quadric.clear_bake"
    bl_label = "Clear Bake"
    bl_options = {'REGISTER', 'UNDO'}

    def execute(self, context):
        scene = context.scene
        points = scene.quadric.instance_points
        name = points.name if points is not None else ""
        objects = list(scene.objects)
        keyframed = set(bake.clear_bakes(objects))
        n = 0
        for obj in objects:
            try:
                had_keys = obj.name in keyframed
            except ReferenceError:  # a group's particles object, deleted with its group's bake
                continue
            n += had_keys | particle_bake.clear(obj)
            obj.quadric.property_unset("bake_fingerprint")  # (addon/stale.py) of a bake no longer there
        cleared = instances.clear_instances(scene)
        dropped = resume.forget(scene)  # Bake from Current Frame would bake its kept frames again
        scene.quadric.status = ""
        scene.quadric.partial_bake_end = 0
        also = f" and deleted the instanced bake '{name}'" if cleared and name else \
            " and the instanced bake" if cleared else ""
        also += f"; dropped {dropped}" if dropped else ""
        self.report({'INFO'}, f"cleared the bake of {n} object{'s' if n != 1 else ''}{also}")
        return {'FINISHED'}


def hand_to_ticked(op, run, **props):
    """From a file browser's execute, where an operator cannot go modal, run a TickedOperator (``run``: its bpy.ops
    function) as a click does, a tick at a time; a script's call runs it at once. Its errors become ``op``'s."""
    try:
        result = run('INVOKE_DEFAULT', **props)
    except RuntimeError as exc:
        op.report({'ERROR'}, str(exc).removeprefix("Error: ").strip())
        return {'CANCELLED'}
    return {'FINISHED'} if result & {'FINISHED', 'RUNNING_MODAL'} else {'CANCELLED'}


class QUADRIC_OT_export_scene(bpy.types.Operator, ExportHelper):
    """Write the simulation scene to a JSON file for `python -m quadric_solver run`"""
    bl_idname = "quadric.export_scene"
    bl_label = "Export Quadric Scene"
    filename_ext = ".json"
    filter_glob: StringProperty(default="*.json", options={'HIDDEN'})

    def execute(self, context):
        return hand_to_ticked(self, bpy.ops.quadric.write_scene_file, filepath=self.filepath)


class QUADRIC_OT_write_scene_file(ticks.TickedOperator, bpy.types.Operator):
    """Write the simulation scene to a JSON file, a tick at a time (Export Quadric Scene)"""
    bl_idname = "quadric.write_scene_file"
    bl_label = "Export Quadric Scene"
    bl_options = {'REGISTER', 'INTERNAL'}
    filepath: StringProperty(name="File", subtype='FILE_PATH', description="The scene file (.json) to write")

    def steps(self, context):
        """The scene read a few bodies a step (Esc stops it), then written."""
        try:
            conv = yield from convert.build_scene_steps(runtime.get_solver(), context)
            yield ticks.ALONE
            conv.scene.save(self.filepath)
        except (ValueError, OSError) as exc:
            self.report({'ERROR'}, str(exc))
            return None
        return conv

    def done(self, context, conv):
        if conv is None:
            return {'CANCELLED'}
        cmd = (f"python -m quadric_solver run {os.path.basename(self.filepath)} -o recording.npz "
               f"--frames {conv.frames} --fps {conv.fps:g} --substeps {conv.substeps}")
        self.report({'INFO'}, f"wrote {self.filepath}; simulate it with: {cmd}")
        return {'FINISHED'}


class QUADRIC_OT_export_usd(bpy.types.Operator, ExportHelper):
    """Write the scene over the simulated frames to USD for other applications: an instanced bake becomes a
    point instancer with positions and orientations per frame, keyframed bodies and ropes animated prims"""
    bl_idname = "quadric.export_usd"
    bl_label = "Export USD"
    filename_ext = ".usd"
    filter_glob: StringProperty(default="*.usd;*.usda;*.usdc", options={'HIDDEN'})

    def execute(self, context):
        scene = context.scene
        start, end = frame_range(scene)
        saved = scene.frame_start, scene.frame_end
        options = dict(filepath=self.filepath, export_animation=True, evaluation_mode='RENDER',
                       **blender_compat.usd_export_options())
        try:
            scene.frame_start, scene.frame_end = start, end  # Blender's exporter writes the scene's range
            result = bpy.ops.wm.usd_export(**options)
        except RuntimeError as exc:
            self.report({'ERROR'}, f"USD export to '{self.filepath}' failed: {exc}")
            return {'CANCELLED'}
        finally:
            scene.frame_start, scene.frame_end = saved
        if 'FINISHED' not in result:
            self.report({'ERROR'}, f"Blender's USD exporter did not write '{self.filepath}'")
            return {'CANCELLED'}
        self.report({'INFO'}, f"wrote frames {start}-{end} to {self.filepath}")
        if instances.current(scene)[0] is not None and not blender_compat.USD_POINT_INSTANCER:
            self.report({'WARNING'}, f"Blender {bpy.app.version_string} writes each instance of the instanced "
                                     "bake as a prim of its own, not one point instancer (Blender 4.5 or later does)")
        return {'FINISHED'}


def recording_mismatch(scene, rec, name, ignore_scene_changes=False):
    """Why a Recording cannot be baked onto this scene ('' if it can): other bodies or ropes, or another scene."""
    problems = rec.mismatches(scene)
    if problems:
        return f"{name} does not match this scene: {'; '.join(problems)}. Export the scene again and re-run it"
    if rec.scene_hash is not None and rec.scene_hash != scene.content_hash() and not ignore_scene_changes:
        return (f"{name} was simulated from another version of this scene (a body, collider, rope, setting or the "
                "frame range changed since it was exported). Export the scene again and re-run it, or import "
                "with Ignore Scene Changes")
    return ""


class QUADRIC_OT_import_recording(bpy.types.Operator, ImportHelper):
    """Bake a recording simulated elsewhere (from an exported scene of this file)"""
    bl_idname = "quadric.import_recording"
    bl_label = "Import Quadric Recording"
    bl_options = {'REGISTER'}  # the bake's own operator makes the undo step
    filename_ext = ".npz"
    filter_glob: StringProperty(default="*.npz", options={'HIDDEN'})
    ignore_scene_changes: BoolProperty(
        name="Ignore Scene Changes", default=False,
        description="Bake a recording of the same bodies and ropes even if the scene changed since it was exported")

    def execute(self, context):
        return hand_to_ticked(self, bpy.ops.quadric.bake_recording_file, filepath=self.filepath,
                              ignore_scene_changes=self.ignore_scene_changes)


class QUADRIC_OT_bake_recording_file(ticks.TickedOperator, bpy.types.Operator):
    """Bake a recording file onto the scene it was simulated from, a tick at a time (Import Quadric Recording)"""
    bl_idname = "quadric.bake_recording_file"
    bl_label = "Bake Quadric Recording"
    bl_options = {'REGISTER', 'UNDO', 'INTERNAL'}
    filepath: StringProperty(name="File", subtype='FILE_PATH', description="The recording (.npz) to bake")
    ignore_scene_changes: BoolProperty(
        name="Ignore Scene Changes", default=False,
        description="Bake a recording of the same bodies and ropes even if the scene changed since it was exported")

    def steps(self, context):
        """The scene read a few bodies a step, the recording read and checked against it, then baked (Esc stops
        it until the bake commits, leaving the file as it was)."""
        name = os.path.basename(self.filepath)
        try:
            solver = runtime.get_solver()
            conv = yield from convert.build_scene_steps(solver, context)
            yield ticks.ALONE
            rec = solver.Recording.load(self.filepath)
        except (ValueError, OSError) as exc:
            self.report({'ERROR'}, str(exc))
            return None
        problem = recording_mismatch(conv.scene, rec, name, self.ignore_scene_changes)
        if problem:
            self.report({'ERROR'}, problem)
            return None
        return (yield from bake_and_report_steps(context, conv, rec, self, f"from {name}"))

    def done(self, context, result):
        return {'FINISHED'} if result is not None else {'CANCELLED'}


def remove_rope(arm):
    """Delete a rope's rig (armature and skinned mesh) and show its curve again. Returns the curve, if any."""
    s = arm.quadric
    curve, mesh = s.rope_source, s.rope_mesh
    bake.clear_bake(arm)
    for obj in (mesh, arm):
        if obj is None:
            continue
        data = obj.data
        bpy.data.objects.remove(obj)
        if data is not None and data.users == 0:
            (bpy.data.meshes if isinstance(data, bpy.types.Mesh) else bpy.data.armatures).remove(data)
    if curve is not None:
        curve.hide_render = False
        try:
            curve.hide_set(False)
        except RuntimeError:  # not in this view layer
            curve.hide_viewport = False
    return curve


def remove_from_simulation(obj, dropped, doomed):
    """Take one object out of the simulation; returns what was done, in words. Its bake action goes into the list
    ``dropped`` and its display into ``doomed``, for the caller to delete with the others' (addon/datablocks.py)."""
    s = obj.quadric
    role = s.role
    if role == 'ROPE':
        name = obj.name
        curve = remove_rope(obj)
        shown = f" and showed its curve '{curve.name}' again" if curve is not None else ""
        return f"removed rope '{name}' (its rig and mesh){shown}"
    baked = bake.clear_bake(obj, dropped) | particle_bake.clear(obj)
    parts = ["cleared its bake"] if baked else []
    if body_shape.remove_display(obj, doomed):
        parts.append("deleted its shape display")
    s.role = 'NONE'
    return f"took {role.lower()} '{obj.name}' out of the simulation" + (f" ({', '.join(parts)})" if parts else "")


class QUADRIC_OT_remove(bpy.types.Operator):
    """Take this object out of the simulation: a body loses its bake and shape display, a rope's rig is deleted
    and its curve shown again"""
    bl_idname = "quadric.remove"
    bl_label = "Remove from Simulation"
    bl_options = {'REGISTER', 'UNDO'}

    object: StringProperty(name="Object", description="The object to take out (the panel passes the one it "
                                                      "shows); empty: the selected objects")

    def execute(self, context):
        objs = _named_or_selected(self, context)
        if objs is None:
            return {'CANCELLED'}
        targets = []
        for obj in objs:
            obj = rope_rig_of(obj) or obj
            if obj.quadric.role != 'NONE' and obj not in targets:
                targets.append(obj)
        if not targets:
            names = ", ".join(f"'{o.name}'" for o in objs) or "nothing is selected"
            self.report({'ERROR'}, f"not in the Quadric simulation: {names}")
            return {'CANCELLED'}
        dropped, doomed = [], []
        for obj in targets:
            self.report({'INFO'}, remove_from_simulation(obj, dropped, doomed))
        body_shape.delete_displays(doomed, also=dropped)
        return {'FINISHED'}


CLASSES = (QUADRIC_OT_add_body, QUADRIC_OT_fit_shape, QUADRIC_OT_copy_from_active, QUADRIC_OT_add_collider,
           QUADRIC_OT_make_rope, QUADRIC_OT_check_scene, QUADRIC_OT_resolve_overlaps, QUADRIC_OT_simulate,
           QUADRIC_OT_bake_resume, QUADRIC_OT_cancel,
           QUADRIC_OT_clear_bake, QUADRIC_OT_export_scene, QUADRIC_OT_write_scene_file, QUADRIC_OT_export_usd,
           QUADRIC_OT_import_recording, QUADRIC_OT_bake_recording_file, QUADRIC_OT_remove)


@bpy.app.handlers.persistent
def _before_save(*_):
    resume.before_save()


@bpy.app.handlers.persistent
def _after_save(*_):
    """The kept runs go beside the saved .blend (addon/resume_files.py), a step a timer tick."""
    resume.save_all()


HANDLERS = (("save_pre", _before_save), ("save_post", _after_save))


def register():
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    for name, handler in HANDLERS:
        getattr(bpy.app.handlers, name).append(handler)


def unregister():
    for name, handler in HANDLERS:
        if handler in getattr(bpy.app.handlers, name):
            getattr(bpy.app.handlers, name).remove(handler)
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
