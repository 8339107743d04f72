"""The settings of a particle group or soft body, stored on its object as ``obj.quadric.particles``.

Kept apart from properties.py's body, collider and rope settings; the bake bookkeeping at the end (the cache file
and the object that plays it) is what Clear Bake undoes.
"""
import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty, FloatVectorProperty, PointerProperty, StringProperty

SOURCE_ITEMS = [
    ('VERTICES', "Mesh Vertices", "One particle at each vertex of the mesh, modifiers applied"),
    ('PARTICLE_SYSTEM', "Particle System", "The particles a Blender particle system emits: its count, emitter "
                                           "distribution, start velocity, size and mass, each born at its birth "
                                           "frame and gone after its lifetime"),
    ('POINT_CLOUD', "Point Cloud", "One particle at each point of a point cloud, with its radius"),
]


class QuadricParticleSettings(bpy.types.PropertyGroup):
    # Particles
    source: EnumProperty(name="Source", items=SOURCE_ITEMS, default='VERTICES',
                         description="Where the particles come from")
    particle_system: StringProperty(name="Particle System",
                                    description="The particle system whose particles are simulated (Particle System "
                                                "source); empty: the object's active one")
    mass: FloatProperty(name="Mass", default=0.01, min=0.0, soft_min=1e-6, soft_max=10.0, unit='MASS', precision=4,
                        description="Mass of each particle in kg (a particle system's own Mass is used instead); "
                                    "typical 1e-6 (a sand grain) to 0.01 (a pebble) to 1")
    initial_velocity: FloatVectorProperty(
        name="Initial Velocity", size=3, subtype='VELOCITY', unit='VELOCITY',
        description="Velocity of every particle at the first frame in m/s, world axes, unless the geometry has a "
                    "'velocity' point attribute; typical 0 to 10")
    particle_collisions: BoolProperty(name="Collide with Each Other", default=False,
                                      description="The particles collide with each other and with the particles of "
                                                  "other groups that do (needs a radius above 0)")
    # Particles and soft bodies
    radius: FloatProperty(name="Radius", default=0.02, min=0.0, soft_max=0.5, unit='LENGTH', precision=4,
                          description="Distance each particle or soft-body vertex keeps from colliders in m (a "
                                      "particle system's Size and a point cloud's radii are used instead); also the "
                                      "size of the drawn spheres; typical 0 (points) to 0.001 (sand) to 0.05")
    # Soft bodies
    total_mass: FloatProperty(name="Total Mass", default=1.0, min=0.0, soft_min=1e-4, soft_max=100.0, unit='MASS',
                              description="Mass of the whole soft body in kg, spread over its vertices along its "
                                          "edges; typical 0.1 (a scarf) to 1 (a bed sheet) to 20 (a tarpaulin)")
    stiffness: FloatProperty(name="Stiffness", default=1000.0, min=0.0, soft_min=1.0, soft_max=1e6,
                             description="Stiffness of each edge's spring in N/m; typical 100 (stretchy knit) to "
                                         "1e4 (canvas). Stiffer springs need more substeps (Check Scene says how "
                                         "many)")
    damping: FloatProperty(name="Damping", default=1.0, min=0.0, soft_max=100.0,
                           description="Damping of each edge's spring along its length in N s/m; typical 0.1 to 10")
    bending: FloatProperty(name="Bending", default=0.0, min=0.0, soft_max=1e5,
                           description="Stiffness in N/m of the springs across second neighbours (vertices joined "
                                       "through a common neighbour), which resist folding; typical 0 (silk) to a "
                                       "tenth of the stiffness (felt)")
    pin_group: StringProperty(name="Pin Group",
                              description="Vertex group of the vertices that stay where they are at the first frame "
                                          "(weight 0.5 or more), or move with the object where it is animated or "
                                          "parented to something that moves; empty: none")
    # Bake bookkeeping
    cache_path: StringProperty(name="Point Cache",
                               description="The baked point cache (PC2) this group plays, as Blender stores it "
                                           "(relative to the .blend)")
    output_object: PointerProperty(name="Particles Object", type=bpy.types.Object,
                                   description="The object that plays the baked particles: a point per particle, "
                                               "with a sphere instanced on each")


CLASSES = (QuadricParticleSettings,)
