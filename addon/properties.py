"""Per-object and per-scene settings stored in the .blend file."""
import bpy
from bpy.props import (BoolProperty, CollectionProperty, EnumProperty, FloatProperty, FloatVectorProperty, IntProperty,
                       PointerProperty, StringProperty)

from .particle_properties import QuadricParticleSettings

ROLE_ITEMS = [
    ('NONE', "None", "Not part of the simulation"),
    ('BODY', "Body", "A rigid body of a convex shape fitted to the mesh"),
    ('COLLIDER', "Collider", "A static plane, tube, box container or mesh"),
    ('ROPE', "Rope", "A Cosserat rope rig"),
    ('PARTICLES', "Particles", "A particle group: a mesh's vertices, a particle system's particles or a point cloud"),
    ('SOFT_BODY', "Soft Body", "A mass-spring cloth or soft body: the mesh's edges are damped springs"),
]
BODY_TYPE_ITEMS = [
    ('DYNAMIC', "Dynamic", "Moved by the simulation"),
    ('STATIC', "Static", "Fixed in place"),
    ('ANIMATED', "Animated", "Follows its own animation and pushes other bodies"),
]
MASS_MODE_ITEMS = [
    ('DENSITY', "Density", "Mass from density times the mesh volume"),
    ('MASS', "Mass", "Total mass given directly"),
]
FAMILY_ITEMS = [
    ('ELLIPSOID', "Ellipsoid", "The ellipsoid with the mesh's volume and inertia (an open mesh: its bounding box's)"),
    ('SUPERELLIPSOID', "Superellipsoid", "A rounded box or rounded cylinder: the bounding box's semi-axes, with the "
                                         "roundness that matches the mesh's volume and inertia"),
    ('BOX', "Box", "The mesh's oriented bounding box"),
    ('CYLINDER', "Cylinder", "The smallest cylinder about one of the mesh's axes that holds it"),
    ('CAPSULE', "Capsule", "A cylinder with hemispherical caps that holds the mesh (pills, rods, limbs)"),
    ('CONVEX_HULL', "Convex Hull", "The mesh's convex hull: any convex shape, exactly; dents and holes are filled"),
]
SHAPE_ITEMS = [('AUTO', "Auto", "Fit every shape and take the simplest that matches the mesh's convex hull "
                                "within half a percent of the best; the convex hull when none comes within 3 %")]
SHAPE_ITEMS += FAMILY_ITEMS
COLLIDER_KIND_ITEMS = [
    ('PLANE', "Plane", "Infinite ground plane through the object, normal along its local Z"),
    ('TUBE', "Tube", "Open hollow cylinder along local Z; its inner wall collides"),
    ('BOX', "Box", "Open-top box container; its inner walls collide"),
    ('MESH', "Mesh", "Any mesh (terrain, bowl, stairs), modifiers applied: its faces collide on their front side, "
                     "the side their normals point to"),
]
BAKE_OUTPUT_ITEMS = [
    ('KEYFRAMES', "Keyframes", "Location and rotation keyframes on every body's object (editable in the Graph "
                               "Editor; slow to play beyond a few thousand bodies)"),
    ('INSTANCES', "Instances", "One points object that instances every body's object, moved by a point cache "
                               "file beside the .blend (Blender plays it natively; for thousands of bodies)"),
]
END_MODE_ITEMS = [
    ('FREE', "Free", "The end hangs free"),
    ('PIN', "Pinned", "The end stays where it is and may turn"),
    ('CLAMP', "Clamped", "The end stays where it is and keeps its direction"),
    ('NEAREST', "Nearest Body", "Tied to the nearest quadric body"),
    ('OBJECT', "Object", "Tied to a chosen object (an animated one drags the rope)"),
]


# What Copy from Active and the presets copy: the contact material, a body's type and mass, a rope's stiffness
MATERIAL_FIELDS = ("friction", "restitution", "rolling_friction", "spinning_friction")
BODY_FIELDS = ("body_type", "mass_mode", "density", "mass", "initial_velocity", "initial_angular_velocity")
ROPE_STIFFNESS_FIELDS = ("rope_radius", "rope_density", "rope_damping", "rope_young_modulus", "rope_shear_modulus")
ROPE_FIELDS = ROPE_STIFFNESS_FIELDS + ("start_mode", "end_mode", "start_object", "end_object")


def end_mode_property(end, default):
    """What holds one end of a rope ('start' or 'end'): on the rope's rig and in Make Rope."""
    return EnumProperty(name=end.title(), items=END_MODE_ITEMS, default=default,
                        description=f"What holds the rope's {'first' if end == 'start' else 'last'} node")


def _shape_changed(settings, context):
    """A new Shape choice refits the body to its mesh (unless it already has that family)."""
    from . import body_shape

    body_shape.shape_setting_changed(settings, context)


def _shape_edited(settings, context):
    """The shape's parameters changed: redraw its display."""
    from . import body_shape

    body_shape.parameters_changed(settings)


def _rope_radius_changed(settings, context):
    """Keep a rope's skin mesh as thick as the simulated rope (a preset or Copy from Active changes it)."""
    mesh = settings.rope_mesh
    if settings.role == 'ROPE' and mesh is not None and mesh.type == 'MESH' and settings.rope_radius > 0.0:
        from .rope_rig import set_radius

        set_radius(mesh, settings.rope_radius)


class QuadricObjectSettings(bpy.types.PropertyGroup):
    role: EnumProperty(name="Role", items=ROLE_ITEMS, default='NONE',
                       description="What the object is in the Quadric simulation")

    # Body
    body_type: EnumProperty(name="Type", items=BODY_TYPE_ITEMS, default='DYNAMIC',
                            description="Dynamic bodies move, static ones stay, animated ones follow their keyframes")
    mass_mode: EnumProperty(name="Mass From", items=MASS_MODE_ITEMS, default='DENSITY',
                            description="Weigh the body by its density and mesh volume, or give its mass")
    density: FloatProperty(name="Density", default=1000.0, min=0.0, soft_min=1.0, soft_max=20000.0,
                           description="Density in kg/m^3; typical 100 (foam) to 1000 (water, beans ~1250) "
                                       "to 2650 (stone, sand) to 7850 (steel)")
    mass: FloatProperty(name="Mass", default=1.0, min=0.0, soft_min=1e-6, soft_max=1000.0, unit='MASS',
                        description="Total mass in kg; typical 0.001 (a bean) to 1 (a brick) to 100")
    initial_velocity: FloatVectorProperty(
        name="Initial Velocity", size=3, subtype='VELOCITY', unit='VELOCITY',
        description="Velocity at the first frame in m/s, world axes; typical 0 to 10")
    initial_angular_velocity: FloatVectorProperty(
        name="Initial Spin", size=3, subtype='XYZ',
        description="Angular velocity at the first frame in rad/s, world axes; typical 0 to 20 (3 turns a second)")
    shape: EnumProperty(name="Shape", items=SHAPE_ITEMS, default='AUTO', update=_shape_changed,
                        description="The body's collision shape, fitted to its mesh; changing it fits the mesh again")
    fitted_shape: EnumProperty(name="Fitted Shape", items=FAMILY_ITEMS, default='ELLIPSOID',
                               description="The shape the parameters below describe: what the simulation uses "
                                           "(Auto's choice)")
    semi_axes: FloatVectorProperty(name="Semi-axes", size=3, min=0.0, subtype='XYZ_LENGTH', unit='LENGTH',
                                   default=(0.5, 0.5, 0.5), update=_shape_edited,
                                   description="Half-lengths of the ellipsoid's or superellipsoid's axes in m, "
                                               "along the shape's own axes; typical 0.001 (sand) to 1")
    exponents: FloatVectorProperty(name="Roundness", size=2, min=0.1, max=2.0, default=(1.0, 1.0),
                                   update=_shape_edited,
                                   description="Superellipsoid exponents (dimensionless; e1 along its z, e2 "
                                               "across it): 1 is round, 0.1 almost square, 2 a sharp diamond; "
                                               "typical 0.1 to 1 (0.2: a rounded box)")
    half_extents: FloatVectorProperty(name="Half Extents", size=3, min=0.0, subtype='XYZ_LENGTH', unit='LENGTH',
                                      default=(0.5, 0.5, 0.5), update=_shape_edited,
                                      description="Half the box's size along each of its axes in m; typical 0.01 "
                                                  "(a die) to 1")
    radius: FloatProperty(name="Radius", default=0.5, min=0.0, unit='LENGTH', update=_shape_edited,
                          description="Radius of the cylinder or capsule in m; typical 0.005 (a pill) to 0.5")
    half_height: FloatProperty(name="Half Height", default=0.5, min=0.0, unit='LENGTH', update=_shape_edited,
                               description="Half the length of the cylinder along its axis in m (of a capsule: "
                                           "of its straight part, between its caps' centres); typical 0.005 to 1")
    hull_mesh: PointerProperty(name="Hull", type=bpy.types.Mesh,
                               description="The convex hull's vertices and faces in the shape's frame (made by the "
                                           "fit; fit the shape again to change it)")
    fitted_volume: FloatProperty(name="Mesh Volume", min=0.0, unit='VOLUME',
                                 description="Volume of the mesh when it was fitted, m^3 (density x volume = mass)")
    fitted_shape_volume: FloatProperty(name="Shape Volume", min=0.0, unit='VOLUME',
                                       description="Volume of the fitted shape, m^3: resizing the shape scales the "
                                                   "mass by its volume over this one")
    fit_method: StringProperty(name="Fit", description="How the shape was fitted: INERTIA, BOUNDING_BOX, "
                                                       "ENCLOSING, VOLUME_INERTIA, SUPPORT or HULL")
    fit_closed: BoolProperty(name="Closed Mesh", default=True,
                             description="The mesh was closed when fitted (an open one has no volume: the mass is "
                                         "the shape's volume times the density)")
    fit_note: StringProperty(name="Fit Scores", description="Auto's support gap per shape, per cent of the mesh's "
                                                            "half-width (0 would be its convex hull exactly)")
    fit_dimensions: FloatVectorProperty(name="Fitted Dimensions", size=3, subtype='XYZ_LENGTH', unit='LENGTH',
                                        description="The object's dimensions when its shape was fitted, m: when "
                                                    "they change the shape does not follow until fitted again")
    # The shape's frame relative to the object's origin (object axes, unscaled), kept so the
    # baked mesh moves exactly with the body.
    offset_location: FloatVectorProperty(name="Shape Offset", size=3, subtype='TRANSLATION', update=_shape_edited,
                                         description="The shape's centre from the object's origin, in the object's "
                                                     "unscaled axes, m (set by the fit)")
    offset_rotation: FloatVectorProperty(name="Shape Rotation", size=4, subtype='QUATERNION',
                                         default=(1.0, 0.0, 0.0, 0.0), update=_shape_edited,
                                         description="The shape's axes relative to the object's, quaternion "
                                                     "(w, x, y, z) (set by the fit)")
    shape_display: PointerProperty(name="Shape Display", type=bpy.types.Object,
                                   description="Wire mesh showing the shape the simulation uses (drawn from the "
                                               "settings above; editing it changes nothing)")

    # Contact material (bodies, colliders and ropes)
    friction: FloatProperty(name="Friction", default=0.5, min=0.0, soft_max=2.0,
                            description="Coulomb sliding friction coefficient (dimensionless); typical 0.05 (ice) to "
                                        "0.5 (sand, stone) to 1 (rubber). Two surfaces combine by geometric mean")
    rolling_friction: FloatProperty(name="Rolling Friction", default=0.0, min=0.0, soft_max=0.2, unit='LENGTH',
                                    precision=5,
                                    description="Rolling resistance arm in m: rolling is resisted by a torque up to "
                                                "this times the normal force; typical 0 to 0.001 (glass 1e-5, "
                                                "gravel 0.003). Surfaces combine by maximum")
    spinning_friction: FloatProperty(name="Spinning Friction", default=0.0, min=0.0, soft_max=0.2, unit='LENGTH',
                                     precision=5,
                                     description="Spinning resistance arm in m: spinning about the contact normal is "
                                                 "resisted by a torque up to this times the normal force; typical "
                                                 "0 to 0.001. Surfaces combine by maximum")
    restitution: FloatProperty(name="Restitution", default=0.0, min=0.0, max=1.0,
                               description="Coefficient of restitution (dimensionless, 0 to 1): rebound speed over "
                                           "impact speed; typical 0.2 (wood on sand) to 0.8 (rubber) to 0.9 (glass). "
                                           "Surfaces combine by maximum")

    # Collider
    collider_kind: EnumProperty(name="Kind", items=COLLIDER_KIND_ITEMS, default='PLANE',
                                description="Shape of the static collider")

    # Rope (stored on the rope's armature)
    rope_mesh: PointerProperty(name="Rope Mesh", type=bpy.types.Object,
                               description="The skinned mesh the rope's bones deform")
    rope_source: PointerProperty(name="Source Curve", type=bpy.types.Object,
                                 description="The curve the rope was made from (hidden while the rope exists)")
    rope_radius: FloatProperty(name="Radius", default=0.02, min=0.0, soft_min=1e-4, soft_max=0.5, unit='LENGTH',
                               precision=4, update=_rope_radius_changed,
                               description="Rope radius in m, for its mass, stiffness and contacts; typical 0.0002 "
                                           "(thread) to 0.005 (climbing rope) to 0.05 (hawser)")
    rope_density: FloatProperty(name="Density", default=1200.0, min=0.0, soft_min=1.0, soft_max=10000.0,
                                description="Mass per volume of the rope's cross-section in kg/m^3 (mass per "
                                            "metre / (pi r^2)); typical 500 (yarn) to 1100 (nylon) to 5000 "
                                            "(steel wire rope)")
    rope_young_modulus: FloatProperty(name="Young's Modulus", default=5e4, min=0.0, soft_min=1.0, soft_max=1e11,
                                      description="Bending stiffness as a Young's modulus in Pa (bending stiffness "
                                                  "E pi r^4 / 4). Stranded ropes bend far more easily than solid "
                                                  "rods: typical 1e3 (chain) to 1e5 (cotton rope) to 1e9 (steel "
                                                  "cable)")
    rope_shear_modulus: FloatProperty(name="Shear Modulus", default=1e5, min=0.0, soft_min=1.0, soft_max=1e11,
                                      description="Twisting stiffness as a shear modulus in Pa (torsional stiffness "
                                                  "G pi r^4 / 2); typically 0.4 times Young's modulus")
    rope_damping: FloatProperty(name="Damping", default=0.1, min=0.0, soft_max=10.0,
                                description="Velocity damping rate in 1/s, standing in for air drag; typical 0.01 "
                                            "(steel cable) to 0.1 (rope) to 5 (thread)")
    start_mode: end_mode_property("start", 'PIN')
    end_mode: end_mode_property("end", 'FREE')
    start_object: PointerProperty(name="Start Object", type=bpy.types.Object,
                                  description="Object the start is tied to (Start: Object)")
    end_object: PointerProperty(name="End Object", type=bpy.types.Object,
                                description="Object the end is tied to (End: Object)")

    # Particles and soft bodies (addon/particle_properties.py)
    particles: PointerProperty(type=QuadricParticleSettings,
                               description="Settings of a particle group or soft body and its baked point cache")

    # Bake bookkeeping, so Clear Bake can restore what was there
    is_baked: BoolProperty(name="Baked", default=False, description="The object carries a Quadric bake")
    bake_action: PointerProperty(type=bpy.types.Action, description="The action the bake wrote")
    orig_action: PointerProperty(type=bpy.types.Action, description="The action the object had before the bake")
    orig_location: FloatVectorProperty(size=3, subtype='TRANSLATION',
                                       description="Location before the bake, m (Clear Bake restores it)")
    orig_rotation_mode: StringProperty(default='XYZ', description="Rotation mode before the bake")
    orig_rotation_quaternion: FloatVectorProperty(size=4, default=(1.0, 0.0, 0.0, 0.0),
                                                  description="Rotation (quaternion) before the bake")
    orig_rotation_euler: FloatVectorProperty(size=3, description="Rotation (Euler, radians) before the bake")
    orig_rotation_axis_angle: FloatVectorProperty(size=4, default=(0.0, 0.0, 1.0, 0.0),
                                                  description="Rotation (axis and angle) before the bake")
    # An instanced bake hides its source objects (and their shape displays); Clear Bake shows them as they were
    instance_hidden: BoolProperty(name="Hidden by Instanced Bake", default=False,
                                  description="An instanced bake hid the object: its instances move in its place")
    orig_hide_viewport: BoolProperty(description="Disabled in viewports before the instanced bake hid it")
    orig_hide_render: BoolProperty(description="Disabled in renders before the instanced bake hid it")
    bake_fingerprint: StringProperty(description="The start pose and settings the bake was simulated from "
                                                 "(addon/stale.py): the panel says when they changed since")


# the solver's integrators (quadric_solver/particles/integrators.py), as Simulation(integrator=...) names them
# lower-case
PARTICLE_INTEGRATOR_ITEMS = [
    ('SYMPLECTIC_EULER', "Symplectic Euler", "First order, keeps the energy of springs and orbits over long runs; "
                                             "the default"),
    ('EULER', "Euler", "Explicit Euler: first order, gains energy; for comparison"),
    ('MIDPOINT', "Midpoint", "Second order (Blender's particle default)"),
    ('RK4', "Runge-Kutta 4", "Fourth order: accurate smooth motion, four force evaluations a step"),
    ('IMPLICIT_EULER', "Implicit Euler", "Stable for stiff cloth at any step, with some damping; solves a linear "
                                         "system each step"),
]


class QuadricProblem(bpy.types.PropertyGroup):
    message: StringProperty(name="Problem", description="What Check Scene found")
    kind: StringProperty(name="Kind", description="OVERLAP, BODY, COLLIDER, ROPE, PARTICLES, FIELD or SCENE")
    severity: StringProperty(name="Severity", default='ERROR',
                             description="ERROR (stops the simulation) or WARNING (it runs, maybe not as meant)")


class QuadricRunStats(bpy.types.PropertyGroup):
    """The last baked run's statistics per frame, summarised (addon/run_stats.py)."""
    frames: IntProperty(name="Frames", description="Frames in the summarised run (0: no run yet)")
    contacts_min: IntProperty(name="Fewest Contacts", description="Fewest contacts in a frame")
    contacts_max: IntProperty(name="Most Contacts", description="Most contacts in a frame")
    contacts_final: IntProperty(name="Last Contacts", description="Contacts in the last frame")
    overlap_min: FloatProperty(name="Least Overlap", unit='LENGTH',
                               description="Smallest deepest overlap of a frame, m")
    overlap_max: FloatProperty(name="Peak Overlap", unit='LENGTH', description="Deepest overlap of the run, m")
    overlap_final: FloatProperty(name="Last Overlap", unit='LENGTH', description="Deepest overlap in the last frame, m")
    overlap_frame: IntProperty(name="Peak Overlap Frame", description="The frame of the deepest overlap")
    energy_min: FloatProperty(name="Least Kinetic Energy", description="Least kinetic energy of a frame, J")
    energy_max: FloatProperty(name="Most Kinetic Energy", description="Most kinetic energy of a frame, J")
    energy_final: FloatProperty(name="Last Kinetic Energy", description="Kinetic energy in the last frame, J")


class QuadricSceneSettings(bpy.types.PropertyGroup):
    substeps: IntProperty(name="Substeps", default=10, min=1, soft_max=100,
                          description="Solver steps per frame; typical 10 (pebbles) to 40 (fast or small bodies, "
                                      "stiff ropes)")
    use_scene_range: BoolProperty(name="Use Scene Frame Range", default=True,
                                  description="Simulate the scene's frame range rather than the range below")
    frame_start: IntProperty(name="Start", default=1, description="First frame simulated (the start pose)")
    frame_end: IntProperty(name="End", default=250, description="Last frame simulated")
    # the solver's velocity_sweeps; the property keeps its first name so saved files keep their value
    iterations: IntProperty(name="Velocity Sweeps", default=0, min=0, soft_max=100,
                            description="The contact solver's velocity sweeps per substep, at most (0: solver "
                                        "default, 8); typical 4 to 30 (tall stacks need more)")
    particle_integrator: EnumProperty(
        name="Particle Integrator", default='SYMPLECTIC_EULER', items=PARTICLE_INTEGRATOR_ITEMS,
        description="How particles and soft bodies are stepped (bodies and ropes keep their own)")
    bake_output: EnumProperty(name="Bake To", default='KEYFRAMES', items=BAKE_OUTPUT_ITEMS,
                              description="What Simulate writes for the bodies (ropes always bake to bone keyframes)")
    instance_points: PointerProperty(name="Instances", type=bpy.types.Object,
                                     description="The points object of the instanced bake (Clear Bake deletes it)")
    instance_sources: PointerProperty(name="Instance Sources", type=bpy.types.Collection,
                                      description="The collection of the objects the instanced bake instances")
    instance_nodes: PointerProperty(name="Instance Nodes", type=bpy.types.NodeTree,
                                    description="The Geometry Nodes group that places the instanced bake's bodies")
    status: StringProperty(name="Last Result", default="", description="Outcome of the last simulation or check")
    partial_bake_end: IntProperty(name="Partial Bake Until", default=0,
                                  description="Last frame of a bake kept from a cancelled or diverged run (0: the "
                                              "bake, if any, is whole)")
    problems: CollectionProperty(type=QuadricProblem, description="What the last Check Scene found")
    run_stats: PointerProperty(type=QuadricRunStats, description="The last baked run's statistics, summarised")
    resume_id: StringProperty(options={'HIDDEN'}, description="Names the scene's kept run for Bake from Current "
                                                              "Frame (addon/resume.py), made at its first run")


CLASSES = (QuadricParticleSettings, QuadricObjectSettings, QuadricProblem, QuadricRunStats, QuadricSceneSettings)


def register():
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    bpy.types.Object.quadric = PointerProperty(type=QuadricObjectSettings)
    bpy.types.Scene.quadric = PointerProperty(type=QuadricSceneSettings)


def unregister():
    del bpy.types.Scene.quadric
    del bpy.types.Object.quadric
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)


def frame_range(scene):
    qs = scene.quadric
    if qs.use_scene_range:
        return scene.frame_start, scene.frame_end
    return qs.frame_start, qs.frame_end
