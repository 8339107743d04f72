"""Panels: Properties editor > Physics tab (per object) and the 3D viewport sidebar tab "Quadric"."""
import bpy

from . import body_shape, instances, operators, particle_ui, preflight, resume, run_stats, stale
from .preset_menus import draw_preset_row
from .properties import frame_range


def draw_progress(layout):
    job = operators.active_job
    if job is None:
        return False
    state, done, total = job.poll()
    factor = done / total if total else 0.0
    text = job.describe()
    if hasattr(layout, "progress"):  # Blender 4.0+
        layout.progress(factor=factor, type='BAR', text=text)
    else:
        layout.label(text=f"{text} ({factor:.0%})")
    layout.operator("quadric.cancel", icon='CANCEL')
    return True


def draw_scene_settings(layout, context):
    scene = context.scene
    qs = scene.quadric
    col = layout.column(align=True)
    col.prop(qs, "substeps")
    col.prop(qs, "iterations")
    col.prop(qs, "particle_integrator")
    col.prop(qs, "bake_output")
    col.prop(qs, "use_scene_range")
    if not qs.use_scene_range:
        row = col.row(align=True)
        row.prop(qs, "frame_start")
        row.prop(qs, "frame_end")
    start, end = frame_range(scene)
    col.label(text=f"Frames {start}-{end}", icon='TIME')
    if not draw_progress(layout):
        row = layout.row(align=True)
        row.scale_y = 1.4
        row.operator("quadric.simulate", icon='PHYSICS')
        if resume.available(scene):
            row.operator("quadric.bake_resume", text="From Current Frame", icon='PLAY')
        row = layout.row(align=True)
        row.operator("quadric.check_scene", icon='CHECKMARK')
        row.operator("quadric.clear_bake", icon='TRASH')
    if qs.status:
        layout.label(text=qs.status, icon='INFO')
    if qs.partial_bake_end:
        layout.label(text=f"Partial bake: frames {start}-{qs.partial_bake_end} (Simulate again for all)",
                     icon='ERROR')
    if qs.run_stats.frames and operators.active_job is None:
        col = layout.column(align=True)
        for k, line in enumerate(run_stats.describe(operators.run_stats_summary(scene))):
            col.label(text=line, icon='GRAPH' if k == 0 else 'BLANK1')
    if instances.cache_missing(scene):
        layout.label(text="The instances' point cache file is missing: bake again", icon='ERROR')
    draw_problems(layout, qs)
    row = layout.row(align=True)
    row.operator("quadric.export_scene", text="Export Scene", icon='EXPORT')
    row.operator("quadric.import_recording", text="Import Recording", icon='IMPORT')
    layout.operator("quadric.export_usd", icon='EXPORT')


def draw_problems(layout, qs):
    """What the last Check Scene found, with Resolve Overlaps when some of it is overlaps."""
    count = len(qs.problems)
    if not count:
        return
    box = layout.box()
    col = box.column(align=True)
    col.label(text=f"{count} problem{'s' if count != 1 else ''} found:", icon='ERROR')
    for item in list(qs.problems)[:preflight.SHOWN_IN_PANEL]:
        col.label(text=item.message if item.severity == 'ERROR' else f"Warning: {item.message}")
    if count > preflight.SHOWN_IN_PANEL:
        col.label(text=f"... and {count - preflight.SHOWN_IN_PANEL} more (Info editor)")
    if any(item.kind == 'OVERLAP' for item in qs.problems):
        box.operator("quadric.resolve_overlaps", icon='MOD_PHYSICS')


def draw_add_buttons(layout):
    col = layout.column(align=True)
    col.operator("quadric.add_body", icon='MESH_UVSPHERE')
    whole = col.operator("quadric.add_body", text="Add Collection as Bodies", icon='OUTLINER_COLLECTION')
    whole.use_collection = True
    col.operator("quadric.add_collider", icon='MOD_PHYSICS')
    col.operator("quadric.make_rope", icon='CURVE_PATH')
    particle_ui.draw_add_buttons(col)


SHAPE_FIELDS = {'ELLIPSOID': ("semi_axes",), 'SUPERELLIPSOID': ("semi_axes", "exponents"), 'BOX': ("half_extents",),
                'CYLINDER': ("radius", "half_height"), 'CAPSULE': ("radius", "half_height"), 'CONVEX_HULL': ()}


def draw_shape(col, obj):
    """The Shape choice and the parameters of the fitted shape: exactly what the solver gets."""
    s = obj.quadric
    col.prop(s, "shape")
    family = s.bl_rna.properties["fitted_shape"].enum_items[s.fitted_shape].name
    if s.shape == 'AUTO':
        col.label(text=f"Fitted: {family}", icon='MESH_ICOSPHERE')
    if s.fit_note:  # Auto's scores, or why the last fit failed
        col.label(text=s.fit_note)
    for field in SHAPE_FIELDS[s.fitted_shape]:
        col.prop(s, field)
    if s.fitted_shape == 'CONVEX_HULL':
        hull = s.hull_mesh
        col.label(text=f"Hull: {len(hull.vertices)} vertices" if hull is not None else "Hull: missing, fit again",
                  icon='MESH_DATA' if hull is not None else 'ERROR')
    if not s.fit_closed:
        col.label(text="Open mesh: mass from the shape's volume", icon='ERROR')
    if body_shape.changed_since_fit(obj):
        col.label(text="Mesh or scale changed since the fit", icon='ERROR')
    col.operator("quadric.fit_shape", icon='MOD_MESHDEFORM').object = obj.name


def draw_object_settings(layout, obj):
    s = obj.quadric
    if s.role == 'NONE':
        layout.label(text="Not in the Quadric simulation")
        return
    layout.prop(s, "role")
    col = layout.column()
    if s.role == 'BODY':
        col.prop(s, "body_type")
        col.prop(s, "mass_mode")
        col.prop(s, "density" if s.mass_mode == 'DENSITY' else "mass")
        draw_shape(col, obj)
        if s.body_type == 'DYNAMIC':
            col.prop(s, "initial_velocity")
            col.prop(s, "initial_angular_velocity")
    elif s.role == 'COLLIDER':
        col.prop(s, "collider_kind")
        if s.collider_kind == 'MESH':
            col.label(text="Faces collide on the side their normals point to", icon='NORMALS_FACE')
    elif s.role == 'ROPE':
        draw_preset_row(col, "rope")
        col.prop(s, "rope_radius")
        col.prop(s, "rope_density")
        col.prop(s, "rope_young_modulus")
        col.prop(s, "rope_shear_modulus")
        col.prop(s, "rope_damping")
        for mode, target in (("start_mode", "start_object"), ("end_mode", "end_object")):
            col.prop(s, mode)
            if getattr(s, mode) == 'OBJECT':
                col.prop(s, target)
    elif s.role in ('PARTICLES', 'SOFT_BODY'):
        particle_ui.draw_settings(col, obj)
    box = layout.box()
    box.label(text="Contact")
    if s.role in ('BODY', 'COLLIDER'):
        draw_preset_row(box, "material")
    box.prop(s, "friction")
    box.prop(s, "rolling_friction")
    box.prop(s, "spinning_friction")
    box.prop(s, "restitution")
    if s.is_baked:
        layout.label(text="Baked", icon='KEYINGSET')
    why = stale.why_stale(obj, bpy.context.scene.frame_current)
    if why:
        layout.label(text=why, icon='ERROR')
    if s.instance_hidden:
        layout.label(text="Baked as instances: hidden, its instances move in its place", icon='HIDE_ON')
    layout.operator("quadric.copy_from_active", icon='PASTEDOWN')
    layout.operator("quadric.remove", icon='X').object = obj.name


class QUADRIC_PT_physics(bpy.types.Panel):
    bl_label = "Quadric Dynamics"
    bl_space_type = 'PROPERTIES'
    bl_region_type = 'WINDOW'
    bl_context = "physics"

    @classmethod
    def poll(cls, context):
        return context.object is not None

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        obj = context.object
        if obj.quadric.role == 'NONE':
            draw_add_buttons(layout)
        else:
            draw_object_settings(layout, obj)


class QUADRIC_PT_physics_scene(bpy.types.Panel):
    bl_label = "Simulation"
    bl_space_type = 'PROPERTIES'
    bl_region_type = 'WINDOW'
    bl_context = "physics"
    bl_parent_id = "QUADRIC_PT_physics"

    def draw(self, context):
        self.layout.use_property_split = True
        draw_scene_settings(self.layout, context)


class QUADRIC_PT_sidebar(bpy.types.Panel):
    bl_label = "Quadric Dynamics"
    bl_space_type = 'VIEW_3D'
    bl_region_type = 'UI'
    bl_category = "Quadric"

    def draw(self, context):
        layout = self.layout
        draw_add_buttons(layout)
        layout.separator()
        draw_scene_settings(layout, context)


class QUADRIC_PT_sidebar_object(bpy.types.Panel):
    bl_label = "Active Object"
    bl_space_type = 'VIEW_3D'
    bl_region_type = 'UI'
    bl_category = "Quadric"
    bl_parent_id = "QUADRIC_PT_sidebar"

    @classmethod
    def poll(cls, context):
        return context.object is not None

    def draw(self, context):
        self.layout.use_property_split = True
        draw_object_settings(self.layout, context.object)


def draw_status_bar(self, context):
    job = operators.active_job
    if job is not None:
        self.layout.label(text=f"Quadric: {job.describe()}", icon='PHYSICS')


CLASSES = (QUADRIC_PT_physics, QUADRIC_PT_physics_scene, QUADRIC_PT_sidebar, QUADRIC_PT_sidebar_object)


def register():
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    bpy.types.STATUSBAR_HT_header.append(draw_status_bar)


def unregister():
    bpy.types.STATUSBAR_HT_header.remove(draw_status_bar)
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
