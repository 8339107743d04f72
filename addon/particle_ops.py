"""Operators Add Particles and Make Soft Body: mark objects as particle groups or soft bodies, with their settings.

They check what the simulation will need (a mesh with vertices or edges, an emitter particle system, a point
cloud, a pin group that exists, positive masses) and report each object's problem by name; the geometry itself
is read when the scene is converted (addon/particle_groups.py), so later edits of the mesh are simulated.
"""
import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty, StringProperty

from . import particle_groups
from .particle_properties import SOURCE_ITEMS


def _selected(context):
    from .operators import is_shape_display, rope_rig_of

    return [o for o in (context.selected_objects or []) if not is_shape_display(o) and rope_rig_of(o) is None]


def auto_source(obj):
    """POINT_CLOUD for a point cloud, PARTICLE_SYSTEM for a mesh with one, else VERTICES."""
    if obj.type == 'POINTCLOUD':
        return 'POINT_CLOUD'
    if obj.type == 'MESH' and len(obj.particle_systems):
        return 'PARTICLE_SYSTEM'
    return 'VERTICES'


def source_problem(obj, source):
    """Why ``obj`` cannot give particles from ``source`` (naming it), '' if it can."""
    if source == 'POINT_CLOUD':
        if obj.type != 'POINTCLOUD':
            return f"'{obj.name}' is not a point cloud (it is {obj.type.lower()})"
        return "" if len(obj.data.points) else f"'{obj.name}': its point cloud has no points"
    if obj.type != 'MESH':
        return f"'{obj.name}' is not a mesh or a point cloud (it is {obj.type.lower()}); particles are made from those"
    if source == 'VERTICES':
        return "" if len(obj.data.vertices) else f"'{obj.name}': its mesh has no vertices to make particles of"
    try:
        psys = particle_groups.particle_system_of(obj)
    except particle_groups.GroupError as exc:
        return str(exc)
    if psys.settings.type != 'EMITTER':
        return f"'{obj.name}': particle system '{psys.name}' is hair; only emitter particles are simulated"
    return ""


def _plural(count, what):
    return what if count == 1 else (what[:-1] + "ies" if what.endswith("y") else what + "s")


def _report(op, done, problems, what):
    for message in problems:
        op.report({'WARNING'} if done else {'ERROR'}, message)
    if done:
        op.report({'INFO'}, f"{len(done)} {_plural(len(done), what)}: "
                            + ", ".join(f"'{o.name}'" for o in done[:5]) + (", ..." if len(done) > 5 else ""))
    return {'FINISHED'} if done else {'CANCELLED'}


class QUADRIC_OT_add_particles(bpy.types.Operator):
    """Make particles of the selected objects: a mesh's vertices, its particle system's particles, or a point
    cloud's points. Baked, they play from a point cache drawn as spheres on points"""
    bl_idname = "quadric.add_particles"
    bl_label = "Add Particles"
    bl_options = {'REGISTER', 'UNDO'}

    source: EnumProperty(name="Source", default='AUTO', items=[
        ('AUTO', "Auto", "A point cloud's points, a mesh's particle system if it has one, else its vertices")]
        + SOURCE_ITEMS, description="Where the particles come from")
    mass: FloatProperty(name="Mass", default=0.01, min=0.0, soft_min=1e-6, soft_max=10.0, unit='MASS',
                        precision=4, description="Mass of each particle in kg (a particle system's own Mass is "
                                                 "used instead); typical 1e-6 (a sand grain) to 0.01 (a pebble)")
    radius: FloatProperty(name="Radius", default=0.02, min=0.0, soft_max=0.5, unit='LENGTH', precision=4,
                          description="Distance each particle keeps from colliders in m, and the size drawn (a "
                                      "particle system's Size and a point cloud's radii are used instead); typical "
                                      "0 to 0.05")
    particle_collisions: BoolProperty(name="Collide with Each Other", default=False,
                                      description="The particles collide with each other (needs a radius above 0)")

    @classmethod
    def poll(cls, context):
        return context.mode == 'OBJECT'

    def execute(self, context):
        objs = _selected(context)
        if not objs:
            self.report({'ERROR'}, "select a mesh (its vertices or particle system) or a point cloud to make "
                                   "particles")
            return {'CANCELLED'}
        problems, done = [], []
        for obj in objs:
            source = auto_source(obj) if self.source == 'AUTO' else self.source
            problem = source_problem(obj, source)
            if not problem and self.mass <= 0.0 and source != 'PARTICLE_SYSTEM':
                problem = f"'{obj.name}': mass must be positive, got {self.mass:g} kg"
            if not problem and self.particle_collisions and self.radius <= 0.0 and source == 'VERTICES':
                problem = f"'{obj.name}': particle_collisions needs a radius above 0 (points never touch)"
            if problem:
                problems.append(problem)
                continue
            s = obj.quadric.particles
            obj.quadric.role = 'PARTICLES'
            s.source = source
            s.mass, s.radius, s.particle_collisions = self.mass, self.radius, self.particle_collisions
            if source == 'PARTICLE_SYSTEM':
                s.particle_system = particle_groups.particle_system_of(obj).name
            done.append(obj)
        return _report(self, done, problems, "particle group")


class QUADRIC_OT_make_soft_body(bpy.types.Operator):
    """Make the selected meshes soft bodies (cloth, nets, soft shapes): every edge a damped spring, the vertices
    of a pin group held in place. Baked, a Mesh Cache modifier plays them"""
    bl_idname = "quadric.make_soft_body"
    bl_label = "Make Soft Body / Cloth"
    bl_options = {'REGISTER', 'UNDO'}

    total_mass: FloatProperty(name="Total Mass", default=1.0, min=0.0, soft_min=1e-4, soft_max=100.0, unit='MASS',
                              description="Mass of the whole soft body in kg, spread along its edges; typical 0.1 "
                                          "(a scarf) to 1 (a bed sheet)")
    stiffness: FloatProperty(name="Stiffness", default=1000.0, min=0.0, soft_min=1.0, soft_max=1e6,
                             description="Stiffness of each edge's spring in N/m; typical 100 (knit) to 1e4 (canvas)")
    damping: FloatProperty(name="Damping", default=1.0, min=0.0, soft_max=100.0,
                           description="Damping of each edge's spring in N s/m; typical 0.1 to 10")
    bending: FloatProperty(name="Bending", default=0.0, min=0.0, soft_max=1e5,
                           description="Stiffness in N/m of springs across second neighbours, resisting folds; "
                                       "typical 0 to a tenth of the stiffness")
    radius: FloatProperty(name="Radius", default=0.01, min=0.0, soft_max=0.5, unit='LENGTH', precision=4,
                          description="Distance the vertices keep from colliders in m; typical 0 to 0.02")
    pin_group: StringProperty(name="Pin Group", description="Vertex group of the vertices held in place, or carried "
                                                            "along where the object moves (weight 0.5 or more); "
                                                            "empty: none")

    @classmethod
    def poll(cls, context):
        return context.mode == 'OBJECT'

    def execute(self, context):
        objs = _selected(context)
        if not objs:
            self.report({'ERROR'}, "select one or more meshes to make soft bodies")
            return {'CANCELLED'}
        problems, done = [], []
        for obj in objs:
            if obj.type != 'MESH':
                problems.append(f"'{obj.name}' is not a mesh (it is {obj.type.lower()}); soft bodies are made "
                                "from meshes")
            elif not len(obj.data.edges):
                problems.append(f"'{obj.name}': its mesh has no edges; a soft body's springs are its edges")
            elif self.pin_group and obj.vertex_groups.get(self.pin_group) is None:
                problems.append(f"'{obj.name}': pin_group '{self.pin_group}' is not one of its vertex groups")
            elif self.total_mass <= 0.0 or self.stiffness <= 0.0:
                field, value = ("total_mass", self.total_mass) if self.total_mass <= 0.0 else \
                    ("stiffness", self.stiffness)
                problems.append(f"'{obj.name}': {field} must be positive, got {value:g}")
            else:
                s = obj.quadric.particles
                obj.quadric.role = 'SOFT_BODY'
                s.total_mass, s.stiffness, s.damping = self.total_mass, self.stiffness, self.damping
                s.bending, s.radius, s.pin_group = self.bending, self.radius, self.pin_group
                done.append(obj)
        return _report(self, done, problems, "soft body")


CLASSES = (QUADRIC_OT_add_particles, QUADRIC_OT_make_soft_body)


def register():
    for cls in CLASSES:
        bpy.utils.register_class(cls)


def unregister():
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
