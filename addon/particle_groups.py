"""Particle groups and soft bodies read from Blender (GroupSpec), and added to a solver.Scene with their forces.

A particle group comes from a mesh's vertices (modifiers applied), a Blender particle system's particles or a
point cloud's points; a soft body from a mesh's vertices and edges (the mesh data itself, so that a Mesh Cache
modifier first in its stack can play the bake). Everything is read at the first frame of the simulated range, in
world space, in bulk (foreach_get). Reading needs no solver: Check Scene reads the same specs.

A particle system's particles are born over its emission frames and die after their lifetimes, as Blender's are:
each keeps its birth time, its lifetime, and where and how fast Blender emits it (_emitted). A soft body whose object
moves (keyframes, a moving parent) gets its world matrix at every frame from the conversion (GroupSpec.matrices),
and its pinned vertices follow it (pin_track).
"""
import math
from dataclasses import dataclass, field

import bpy
import numpy as np

from . import force_fields
from .body_shape import rigid_track
from .properties import frame_range

ROLES = ('PARTICLES', 'SOFT_BODY')
PIN_WEIGHT = 0.5        # a pin group's vertices of at least this weight are pinned


class GroupError(ValueError):
    """A group that cannot be simulated; the message names the object and the setting."""


@dataclass
class GroupSpec:
    object_name: str
    kind: str                      # 'PARTICLES' or 'SOFT_BODY'
    positions: np.ndarray          # (n, 3) world space at the first frame
    velocities: np.ndarray = None  # (n, 3) or None (at rest)
    mass: object = 1.0             # particles: kg each (a float or n of them); soft bodies: the total
    radius: float = 0.0            # the distance kept from colliders
    radii: np.ndarray = None       # (n,) the size drawn at each particle
    edges: np.ndarray = None       # soft bodies: (m, 2)
    pinned: tuple = ()
    matrix: np.ndarray = None      # soft bodies: the object's world matrix at the first frame (4, 4)
    particle_system: object = None  # the ParticleSettings a group was emitted by (its effector weights)
    notes: list = field(default_factory=list)  # what is left out or approximated, in words
    birth_times: np.ndarray = None  # particles born over time: (n,) s after the first frame (add_particles)
    lifetimes: np.ndarray = None    # (n,) s, or None: for ever
    shown: tuple = None            # (birth, death) frames (n,) each between which a particle is drawn, or None
    matrices: list = None          # a soft body that moves: its world matrix (a Matrix) at each frame of the range

    @property
    def count(self):
        return len(self.positions)

    def field_weight(self, obj):
        """Blender's strength weight of force field ``obj`` on this group: a particle system's effector weights
        (All times the field type's, 0 outside its effector collection), else 1. A field never acts on the
        particles of its own object (as in Blender)."""
        if obj.name == self.object_name:
            return 0.0
        if self.particle_system is None:
            return 1.0
        return force_fields.effector_weight(self.particle_system.effector_weights, obj)


def _world(points, matrix):
    m = np.array(matrix, dtype=np.float64)
    return points @ m[:3, :3].T + m[:3, 3]


def _point_vectors(attributes, name, n):
    """A FLOAT_VECTOR point attribute as (n, 3) float64, or None when there is none."""
    attribute = attributes.get(name)
    if attribute is None or attribute.data_type != 'FLOAT_VECTOR' or attribute.domain != 'POINT':
        return None
    values = np.empty(3 * n, dtype=np.float32)
    attribute.data.foreach_get("vector", values)
    return values.reshape(n, 3).astype(np.float64)


def _velocities(obj, attributes, n, matrix, notes):
    """A 'velocity' point attribute if the geometry has one (in the object's axes and units, as its positions
    are: turned and scaled into the world's by ``matrix``), else the Initial Velocity (world axes, m/s)."""
    found = _point_vectors(attributes, "velocity", n)
    if found is not None:
        notes.append("its start velocities are its 'velocity' point attribute")
        return found @ np.array(matrix, dtype=np.float64)[:3, :3].T
    v = np.array(obj.quadric.particles.initial_velocity, dtype=np.float64)
    return np.tile(v, (n, 1)) if np.any(v != 0.0) else None


def _from_vertices(obj, depsgraph, notes):
    if obj.type != 'MESH':
        raise GroupError(f"'{obj.name}': Mesh Vertices needs a mesh, not a {obj.type.lower()}")
    evaluated = obj.evaluated_get(depsgraph)
    mesh = evaluated.to_mesh()
    try:
        n = len(mesh.vertices)
        if n == 0:
            raise GroupError(f"'{obj.name}': its mesh has no vertices to make particles of")
        co = np.empty(3 * n, dtype=np.float32)
        mesh.vertices.foreach_get("co", co)
        velocities = _velocities(obj, mesh.attributes, n, evaluated.matrix_world, notes)
        pinned = pinned_vertices(obj, mesh.vertices)
    finally:
        evaluated.to_mesh_clear()
    return _world(co.reshape(n, 3).astype(np.float64), evaluated.matrix_world), velocities, pinned


def _from_point_cloud(obj, depsgraph, notes):
    if obj.type != 'POINTCLOUD':
        raise GroupError(f"'{obj.name}': Point Cloud needs a point cloud object, not a {obj.type.lower()}")
    evaluated = obj.evaluated_get(depsgraph)
    cloud = evaluated.data
    n = len(cloud.points)
    if n == 0:
        raise GroupError(f"'{obj.name}': its point cloud has no points")
    co = np.empty(3 * n, dtype=np.float32)
    cloud.points.foreach_get("co", co)
    radii = np.empty(n, dtype=np.float32)
    cloud.points.foreach_get("radius", radii)
    velocities = _velocities(obj, cloud.attributes, n, evaluated.matrix_world, notes)
    scale = float(np.cbrt(abs(np.linalg.det(np.array(evaluated.matrix_world)[:3, :3]))))
    return _world(co.reshape(n, 3).astype(np.float64), evaluated.matrix_world), velocities, radii * scale


def particle_system_of(obj):
    """The particle system a group uses (its Particle System setting, else the active one); GroupError if none."""
    name = obj.quadric.particles.particle_system
    systems = obj.particle_systems if obj.type == 'MESH' else None
    if not systems:
        raise GroupError(f"'{obj.name}': it has no particle system (add one in the Particles properties, or "
                         "choose another source)")
    psys = systems.get(name) if name else systems.active
    if psys is None:
        raise GroupError(f"'{obj.name}': particle_system '{name}' does not exist (it has "
                         f"{', '.join(repr(p.name) for p in systems)})")
    return psys


@dataclass
class Emission:
    """Every particle a particle system emits over the simulated frames, as Blender emits it."""
    positions: np.ndarray   # (n, 3) world space, where each is born
    velocities: np.ndarray  # (n, 3) how fast
    sizes: np.ndarray       # (n,)
    births: np.ndarray      # (n,) frames (fractional)
    lifetimes: np.ndarray   # (n,) frames
    left_out: int           # born after the last frame, or dead before the first


def _emitted(obj, psys, scene, first, last):
    """The particles the system emits up to frame ``last`` that are still alive at ``first``: where and how fast
    each is born (its distribution, Normal, Object Align, Random and object velocity, on the emitter where it is
    at the birth's subframe), its size, birth frame and lifetime.

    A copy of the object and its particle settings, with every force on its particles off, plays the emission
    frame by frame (Blender simulates particles only frame after frame), so the user's own particle system, its
    cache and its settings are not touched; the copies are removed afterwards. Each particle is read at the
    first frame on or after its birth: free of forces, it has moved in a straight line since (until it died, at
    the end of its lifetime), by its velocity times the system's timestep per frame, which is taken off."""
    index = list(obj.particle_systems).index(psys)
    copy = obj.copy()
    settings = psys.settings.copy()
    nothing = bpy.data.collections.new("Quadric no colliders")
    current = scene.frame_current
    try:
        scene.collection.objects.link(copy)
        copy.particle_systems[index].settings = settings
        settings.physics_type = 'NEWTON'
        settings.effector_weights.all = 0.0
        settings.effector_weights.gravity = 0.0
        settings.drag_factor = settings.brownian_factor = settings.damping = 0.0
        settings.collision_collection = nothing
        cache = copy.particle_systems[index].point_cache
        begin = max(int(cache.frame_start), min(first, math.floor(settings.frame_start)))
        end = min(last, math.ceil(settings.frame_end))
        per_frame = float(settings.timestep)
        births = lives = sizes = positions = velocities = None
        read = None
        for frame in range(begin, max(begin, end) + 1):
            scene.frame_set(frame)
            particles = copy.evaluated_get(bpy.context.evaluated_depsgraph_get()).particle_systems[index].particles
            if births is None:
                n = len(particles)
                births, lives, sizes = (np.empty(n, dtype=np.float32) for _ in range(3))
                particles.foreach_get("birth_time", births)
                particles.foreach_get("lifetime", lives)
                particles.foreach_get("size", sizes)
                positions, velocities = np.zeros((n, 3)), np.zeros((n, 3))
                read = np.zeros(n, dtype=bool)
            due = ~read & (births <= frame)
            if not due.any():
                continue
            location, velocity = np.empty(3 * n, dtype=np.float32), np.empty(3 * n, dtype=np.float32)
            particles.foreach_get("location", location)
            particles.foreach_get("velocity", velocity)
            moved = np.minimum(frame - births[due].astype(np.float64), lives[due]) * per_frame
            velocities[due] = velocity.reshape(n, 3)[due]
            positions[due] = location.reshape(n, 3)[due] - velocities[due] * moved[:, None]
            read |= due
    finally:
        bpy.data.objects.remove(copy)
        bpy.data.particles.remove(settings)
        bpy.data.collections.remove(nothing)
        if scene.frame_current != current:
            scene.frame_set(current)
    if births is None:
        return Emission(np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0), np.zeros(0), np.zeros(0), 0)
    kept = read & (births.astype(np.float64) + lives > first)
    return Emission(positions[kept], velocities[kept], sizes[kept].astype(np.float64),
                    births[kept].astype(np.float64), lives[kept].astype(np.float64), int(len(births) - kept.sum()))


def _particle_system_notes(settings):
    """What of a particle system's settings the solver leaves out."""
    notes = []
    if settings.physics_type != 'NEWTON':
        notes.append(f"its physics {settings.physics_type.title()} is replaced by the solver's (Newtonian)")
    for attr, what in (("drag_factor", "drag"), ("brownian_factor", "Brownian motion"), ("damping", "damping")):
        if getattr(settings, attr) != 0.0:
            notes.append(f"its particle system's {what} ({getattr(settings, attr):g}) is left out (add a Drag "
                         "force field instead)" if attr == "drag_factor" else
                         f"its particle system's {what} ({getattr(settings, attr):g}) is left out")
    if settings.child_type != 'NONE':
        notes.append("its child particles are not simulated (only the parents)")
    if settings.size_random != 0.0:
        notes.append("its particles keep one collision radius, their mean size (each is drawn at its own size)")
    gravity = settings.effector_weights.gravity
    if gravity != 1.0 and settings.use_multiply_size_mass:
        notes.append(f"its gravity weight ({gravity:g}) is left out: its particles' masses differ")
    return notes


def _from_particle_system(obj, scene, first, last, fps, notes):
    """A particle system's group: its particles as emitted (_emitted), with their birth times (None where all are
    there from the first frame) and lifetimes in s after the first frame, and the frames between which each is
    drawn (Blender's Unborn and Dead display settings)."""
    psys = particle_system_of(obj)
    settings = psys.settings
    if settings.type != 'EMITTER':
        raise GroupError(f"'{obj.name}': particle system '{psys.name}' is {settings.type.lower()}; only emitter "
                         "particles are simulated")
    if settings.count < 1:
        raise GroupError(f"'{obj.name}': particle system '{psys.name}' emits no particles (count 0)")
    notes.extend(_particle_system_notes(settings))
    emitted = _emitted(obj, psys, scene, first, last)
    if not len(emitted.positions):
        raise GroupError(f"'{obj.name}': particle system '{psys.name}' emits no particles from frame {first} to "
                         f"{last} (are its emission frames outside them, or its emitter empty?)")
    if emitted.left_out:
        notes.append(f"{emitted.left_out} of its particles are born after the last frame or die before the first; "
                     "they are left out")
    early = emitted.births < first
    if early.any():
        notes.append(f"{int(early.sum())} of its particles are born before the first frame; they start at it, where "
                     "they were born")
    births = np.maximum(emitted.births, first)
    deaths = emitted.births + emitted.lifetimes
    mass = float(settings.mass)
    masses = mass * emitted.sizes if settings.use_multiply_size_mass else mass
    shown = (np.full_like(births, -np.inf) if settings.show_unborn else births,
             np.full_like(deaths, np.inf) if settings.use_dead else deaths)
    return (emitted.positions, emitted.velocities, emitted.sizes, masses, settings,
            (births - first) / fps if np.any(births > first) else None, (deaths - births) / fps, shown)


def read_group(obj, depsgraph, scene, frame):
    """The GroupSpec of a PARTICLES or SOFT_BODY object at the current frame (the first of the range).

    Raises GroupError naming the object and what is missing."""
    s = obj.quadric.particles
    notes = []
    if obj.quadric.role == 'SOFT_BODY':
        return _soft_body(obj, notes)
    velocities, system, radii, births, lifetimes, shown, pinned = None, None, None, None, None, None, ()
    mass = float(s.mass)
    if s.source == 'VERTICES':
        positions, velocities, pinned = _from_vertices(obj, depsgraph, notes)
    elif s.source == 'POINT_CLOUD':
        positions, velocities, radii = _from_point_cloud(obj, depsgraph, notes)
    else:
        from .convert import scene_fps  # (convert imports this module)

        positions, velocities, radii, mass, system, births, lifetimes, shown = _from_particle_system(
            obj, scene, frame, frame_range(scene)[1], scene_fps(scene), notes)
    if radii is None:
        radius = float(s.radius)
        radii = np.full(len(positions), radius)
    else:
        radius = float(np.mean(radii))
        if s.source == 'POINT_CLOUD' and np.ptp(radii) > 1e-6 * max(radius, 1e-12):
            notes.append(f"its points keep one collision radius, their mean {radius:.3g} m (each is drawn at its "
                         "own radius)")
    return GroupSpec(obj.name, 'PARTICLES', positions, velocities, mass, radius, radii, pinned=pinned,
                     particle_system=system, notes=notes, birth_times=births, lifetimes=lifetimes, shown=shown)


def pinned_vertices(obj, vertices=None):
    """Indices of the vertices (of its mesh, or ``vertices``: those of its evaluated mesh) in the object's pin group
    with weight >= PIN_WEIGHT; GroupError if the group is named but missing."""
    name = obj.quadric.particles.pin_group
    if not name:
        return ()
    group = obj.vertex_groups.get(name)
    if group is None:
        raise GroupError(f"'{obj.name}': pin_group '{name}' is not one of its vertex groups")
    index = group.index
    return tuple(v.index for v in (obj.data.vertices if vertices is None else vertices)
                 for g in v.groups if g.group == index and g.weight >= PIN_WEIGHT)


def _soft_body(obj, notes):
    if obj.type != 'MESH':
        raise GroupError(f"'{obj.name}': a soft body is made from a mesh, not a {obj.type.lower()}")
    mesh = obj.data
    n, m = len(mesh.vertices), len(mesh.edges)
    if m == 0:
        raise GroupError(f"'{obj.name}': its mesh has no edges; a soft body's springs are its edges")
    co = np.empty(3 * n, dtype=np.float32)
    mesh.vertices.foreach_get("co", co)
    edges = np.empty(2 * m, dtype=np.int64)
    mesh.edges.foreach_get("vertices", edges)
    matrix = np.array(obj.matrix_world, dtype=np.float64)
    pinned = pinned_vertices(obj)
    if force_fields.is_animated(obj) and not pinned:
        notes.append("it moves (it or a parent is animated) but has no pinned vertices to carry it: it starts where "
                     "it is at the first frame and moves on its own")
    s = obj.quadric.particles
    return GroupSpec(obj.name, 'SOFT_BODY', _world(co.reshape(n, 3).astype(np.float64), matrix), None,
                     float(s.total_mass), float(s.radius), np.full(n, float(s.radius)), edges.reshape(m, 2),
                     pinned, matrix, notes=notes)


def moves(obj):
    """Whether the object of a soft body, or of particles made from a mesh's vertices with a pin group, moves over
    the frames (it or a parent is keyed, driven or constrained): the conversion then samples its world matrix at
    every frame (GroupSpec.matrices), which the pins follow."""
    s = obj.quadric.particles
    pins = obj.quadric.role == 'SOFT_BODY' or (s.source == 'VERTICES' and bool(s.pin_group))
    return pins and force_fields.is_animated(obj)


def pin_track(spec, fps):
    """(times, poses) for Scene.set_pin_track: the rigid motion of a moving soft body's or particle group's object,
    which its pinned vertices follow, a pose per frame (times in s after the first); None if it has no pins or does not move. A
    scale that changes is noted: pins follow the motion, not the change of size."""
    if spec.matrices is None or not len(spec.pinned):
        return None
    locations, turns, scales = rigid_track(spec.matrices)
    if np.allclose(locations, locations[0], rtol=0.0, atol=1e-9) and np.allclose(turns, turns[0], rtol=0.0,
                                                                                  atol=1e-9):
        return None
    if np.abs(scales - scales[0]).max() > 1e-6 * np.abs(scales[0]).max():
        spec.notes.append("its scale changes over the frames; its pinned vertices follow its motion at its scale "
                          "of the first frame")
    return np.arange(len(locations)) / fps, np.concatenate([locations, turns], axis=1)


def step_limit(spec, stiffness, damping, bending):
    """The longest explicit (symplectic Euler) step that keeps a soft body's springs stable, in s.

    Per mode, x'' = -w^2 x - g x' is stable under symplectic Euler while h^2 w^2 + 2 h g < 4; the springs'
    damping is proportional to their stiffness (g = w^2 c / k), and w^2 is at most Gershgorin's bound of
    M^-1 K, the largest 2 sum(k) / m over the vertices. So this errs short, by up to about 2."""
    from quadric_solver.particles.groups import lumped_masses, second_neighbours

    n = spec.count
    masses = lumped_masses(spec.positions, spec.edges, spec.mass)
    load = np.zeros(n)
    np.add.at(load, spec.edges.ravel(), stiffness)
    if bending > 0.0:
        np.add.at(load, second_neighbours(n, spec.edges).ravel(), bending)
    free = np.ones(n, dtype=bool)
    free[list(spec.pinned)] = False
    if not free.any() or stiffness <= 0.0:
        return math.inf
    bound = float(np.max(2.0 * load[free] / masses[free]))
    ratio = damping / stiffness
    return -ratio + math.sqrt(ratio * ratio + 4.0 / bound)


def add_groups(solver, out, specs, materials, gravity, fps):
    """Add the groups to the solver Scene ``out`` (in order: group k is specs[k]). ``materials`` gives each
    group's solver.Material. A particle system's gravity weight becomes a force of (weight - 1) m g per
    particle, so that its particles fall as Blender's would; a moving soft body's pins follow it (pin_track)."""
    for spec, material in zip(specs, materials):
        obj = bpy.data.objects[spec.object_name]
        s = obj.quadric.particles
        if spec.kind == 'SOFT_BODY':
            g = out.add_mass_spring(spec.positions, spec.edges, mass=spec.mass, stiffness=float(s.stiffness),
                                    damping=float(s.damping), bending=float(s.bending), pinned=spec.pinned,
                                    material=material, name=spec.object_name, radius=spec.radius)
        else:
            g = out.add_particles(spec.positions, velocities=spec.velocities, mass=spec.mass, radius=spec.radius,
                                  material=material, name=spec.object_name, pinned=spec.pinned,
                                  particle_collisions=bool(s.particle_collisions), birth_times=spec.birth_times,
                                  lifetimes=spec.lifetimes)
        track = pin_track(spec, fps)
        if track is not None:
            out.set_pin_track(g, *track)
        weight = float(spec.particle_system.effector_weights.gravity) if spec.particle_system else 1.0
        g_norm = float(np.linalg.norm(gravity))
        if weight != 1.0 and g_norm > 0.0 and np.ndim(spec.mass) == 0:  # else noted by _particle_system_notes
            out.add_force(solver.Wind(direction=tuple(np.asarray(gravity) / g_norm),
                                      strength=(weight - 1.0) * spec.mass * g_norm, groups=[g], bodies=(), ropes=()))


def add_forces(solver, out, plan):
    """Add a force_fields.Plan's forces to the solver Scene."""
    for name, kwargs in plan.forces:
        out.add_force(getattr(solver, name)(**kwargs))
