"""Per-object and per-scene settings stored in the .blend file."""
import bpy
from bpy.props import (BoolProperty, EnumProperty, FloatProperty, FloatVectorProperty, IntProperty,
                       PointerProperty, StringProperty)

ROLE_ITEMS = [
    ('NONE', "None", "Not part of the simulation"),
    ('BODY', "Body", "A quadric (ellipsoid) body"),
    ('COLLIDER', "Collider", "A static plane, tube or box container"),
    ('ROPE', "Rope", "A Cosserat rope rig"),
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
COLLIDER_KIND_ITEMS = [
    ('PLANE', "Plane", "Infinite ground plane through the object, normal along its local Z"),
    ('TUBE', "Tube", "Open hollow cylinder along local Z; its inner wall collides"),
    ('BOX', "Box", "Open-top box container; its inner walls collide"),
]
END_MODE_ITEMS = [
    ('FREE', "Free", "The end hangs free"),
    ('PIN', "Pinned", "The end stays where it is and may turn"),
    ('CLAMP', "Clamped", "The end stays where it is and keeps its direction"),
    ('NEAREST', "Nearest Body", "Tied to the nearest quadric body"),
    ('OBJECT', "Object", "Tied to a chosen object (an animated one drags the rope)"),
]


class QuadricObjectSettings(bpy.types.PropertyGroup):
    role: EnumProperty(name="Role", items=ROLE_ITEMS, default='NONE')

    # Body
    body_type: EnumProperty(name="Type", items=BODY_TYPE_ITEMS, default='DYNAMIC')
    mass_mode: EnumProperty(name="Mass From", items=MASS_MODE_ITEMS, default='DENSITY')
    density: FloatProperty(name="Density", default=1000.0, min=1e-6, soft_max=20000.0, unit='NONE',
                           description="Density in kg/m^3")
    mass: FloatProperty(name="Mass", default=1.0, min=1e-9, unit='MASS')
    initial_velocity: FloatVectorProperty(name="Initial Velocity", size=3, subtype='VELOCITY', unit='VELOCITY')
    initial_angular_velocity: FloatVectorProperty(name="Initial Spin", size=3, subtype='XYZ',
                                                  description="Initial angular velocity in rad/s (world axes)")
    semi_axes: FloatVectorProperty(name="Semi-axes", size=3, min=0.0, subtype='XYZ_LENGTH', unit='LENGTH',
                                   default=(0.5, 0.5, 0.5))
    fitted_volume: FloatProperty(name="Mesh Volume", min=0.0, unit='VOLUME')
    fit_method: StringProperty(name="Fit")
    # Principal frame relative to the object's origin (object axes, unscaled), kept so the
    # baked mesh moves exactly with the body.
    offset_location: FloatVectorProperty(name="Principal Offset", size=3, subtype='TRANSLATION')
    offset_rotation: FloatVectorProperty(name="Principal Rotation", size=4, subtype='QUATERNION',
                                         default=(1.0, 0.0, 0.0, 0.0))
    shape_empty: PointerProperty(name="Shape", type=bpy.types.Object,
                                 description="Empty showing the fitted ellipsoid; scale or rotate it to edit the shape")

    # Contact material (bodies, colliders and ropes)
    friction: FloatProperty(name="Friction", default=0.5, min=0.0, soft_max=2.0)
    rolling_friction: FloatProperty(name="Rolling Friction", default=0.0, min=0.0, soft_max=0.2,
                                    description="Rolling resistance (length, m)")
    spinning_friction: FloatProperty(name="Spinning Friction", default=0.0, min=0.0, soft_max=0.2,
                                     description="Torsional friction (length, m)")
    restitution: FloatProperty(name="Restitution", default=0.0, min=0.0, max=1.0)

    # Collider
    collider_kind: EnumProperty(name="Kind", items=COLLIDER_KIND_ITEMS, default='PLANE')

    # Rope (stored on the rope's armature)
    rope_mesh: PointerProperty(name="Rope Mesh", type=bpy.types.Object)
    rope_source: PointerProperty(name="Source Curve", type=bpy.types.Object)
    rope_radius: FloatProperty(name="Radius", default=0.02, min=1e-5, soft_max=0.5, unit='LENGTH')
    rope_density: FloatProperty(name="Density", default=1200.0, min=1e-6, description="kg/m^3")
    rope_young_modulus: FloatProperty(name="Young's Modulus", default=5e4, min=1e-3, description="Pa")
    rope_shear_modulus: FloatProperty(name="Shear Modulus", default=1e5, min=1e-3, description="Pa")
    rope_damping: FloatProperty(name="Damping", default=0.1, min=0.0, soft_max=10.0)
    start_mode: EnumProperty(name="Start", items=END_MODE_ITEMS, default='PIN')
    end_mode: EnumProperty(name="End", items=END_MODE_ITEMS, default='FREE')
    start_object: PointerProperty(name="Start Object", type=bpy.types.Object)
    end_object: PointerProperty(name="End Object", type=bpy.types.Object)

    # Bake bookkeeping, so Clear Bake can restore what was there
    is_baked: BoolProperty(name="Baked", default=False)
    bake_action: PointerProperty(type=bpy.types.Action)
    orig_action: PointerProperty(type=bpy.types.Action)
    orig_location: FloatVectorProperty(size=3)
    orig_rotation_mode: StringProperty(default='XYZ')
    orig_rotation_quaternion: FloatVectorProperty(size=4, default=(1.0, 0.0, 0.0, 0.0))
    orig_rotation_euler: FloatVectorProperty(size=3)
    orig_rotation_axis_angle: FloatVectorProperty(size=4, default=(0.0, 0.0, 1.0, 0.0))


class QuadricSceneSettings(bpy.types.PropertyGroup):
    substeps: IntProperty(name="Substeps", default=10, min=1, soft_max=100,
                          description="Solver steps per frame")
    use_scene_range: BoolProperty(name="Use Scene Frame Range", default=True)
    frame_start: IntProperty(name="Start", default=1)
    frame_end: IntProperty(name="End", default=250)
    # the solver's velocity_sweeps; the property keeps its first name so saved files keep their value
    iterations: IntProperty(name="Velocity Sweeps", default=0, min=0, soft_max=100,
                            description="The contact solver's velocity sweeps per substep, at most (0: solver default)")
    status: StringProperty(name="Last Result", default="", description="Outcome of the last simulation")


CLASSES = (QuadricObjectSettings, QuadricSceneSettings)


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
