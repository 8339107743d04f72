"""Blender objects -> solver.Scene, plus the bindings the bake needs to map results back.

Poses are read at the first frame of the simulated range. A body's shape is
what its settings say (addon/body_shape.py), placed at the object's location
and rotation; ellipsoids go in with add_ellipsoid, the other shapes with
add_body. The solver's body frame is the shape's frame, except for a convex
hull, whose body frame is its centre of mass and principal axes (the solver's
shape_offset); the binding keeps the body frame's offset from the object's
origin (in the object's unscaled axes), read back from the Scene, so the baked
object moves exactly with its body whatever the shape.

Planes, tubes and box containers are placed by their evaluated mesh's bounding
box; a mesh collider is its evaluated mesh in world space, in triangles that
face where its normals are shown (collider_mesh).

Particle groups and soft bodies are read by addon/particle_groups.py and the
scene's force fields become solver forces in addon/force_fields.py.
"""
import warnings
from collections import defaultdict
from dataclasses import dataclass, field

import bpy
import numpy as np
from mathutils import Matrix, Quaternion, Vector

from quadric_solver import rotations
from . import body_shape, force_fields, particle_groups, shapes
from .body_shape import rigid_parts, rigid_track
from .properties import frame_range
from .ticks import drain


class ConvertError(ValueError):
    pass


CONVERT_STEP = 16  # bodies converted per step of build_scene_steps (0.25 to 0.7 ms each; an animated one a step)
NOTHING_TO_SIMULATE = "nothing to simulate: add a Quadric body or particles, make a rope or a soft body first"


@dataclass
class BodyBinding:
    object_name: str
    index: int
    offset_location: np.ndarray   # the body frame's origin in the object's unscaled axes
    offset_rotation: np.ndarray   # the body frame's rotation relative to the object (w, x, y, z)
    parent_frames: np.ndarray = None  # (F, 4, 4) parent's world matrix @ parent inverse per frame; None: no parent


@dataclass
class RopeBinding:
    armature_name: str
    index: int
    bone_names: list


@dataclass
class GroupBinding:
    object_name: str
    index: int                    # the solver's group index
    kind: str                     # 'PARTICLES' or 'SOFT_BODY'
    matrix: np.ndarray = None     # a soft body's world matrix (4, 4) at the first frame, or (F, 4, 4) at each frame
                                  # when it moves: its cache plays in its axes
    radii: np.ndarray = None      # particles: the radius drawn at each
    shown: tuple = None           # particles born over time: (birth, death) frames (n,) each between which it is drawn


@dataclass
class Conversion:
    scene: object                 # solver.Scene
    bodies: list                  # BodyBinding for the dynamic bodies (the ones that get baked)
    ropes: list                   # RopeBinding
    frame_start: int
    frames: int
    fps: float
    substeps: int
    velocity_sweeps: int
    warnings: list = field(default_factory=list)
    groups: list = field(default_factory=list)  # GroupBinding: particle groups and soft bodies (point caches)
    integrator: str = "symplectic_euler"        # the particles' (Simulation(integrator=...))

    @property
    def dt(self):
        return 1.0 / (self.fps * self.substeps)


def scene_fps(scene):
    return scene.render.fps / scene.render.fps_base


def material_of(solver, obj):
    s = obj.quadric
    return solver.Material(friction=float(s.friction), rolling_friction=float(s.rolling_friction),
                           spinning_friction=float(s.spinning_friction), restitution=float(s.restitution))


def initial_matrix_world(obj):
    """The object's world matrix before any bake of ours (the stored originals when baked, under its parent's
    matrix as it is now)."""
    s = obj.quadric
    if not s.is_baked:
        return obj.matrix_world.copy()
    if obj.parent is not None:
        return parent_space(obj) @ _original_basis(obj)
    return _original_basis(obj)


def parent_space(obj):
    """The matrix that takes the object's own transform (matrix_basis) to world space: its parent's world
    matrix times its parent inverse (identity without a parent)."""
    if obj.parent is None:
        return Matrix.Identity(4)
    return obj.parent.matrix_world @ obj.matrix_parent_inverse


def similarity_problem(matrix):
    """'' if the 4x4 matrix is a rotation, a uniform scale and a translation; else what it is besides."""
    linear = np.array(matrix, dtype=np.float64)[:3, :3]
    gram = linear.T @ linear
    scale2 = np.trace(gram) / 3.0
    if scale2 <= 0.0 or np.linalg.det(linear) <= 0.0:
        return "mirrored or flattened"
    if np.max(np.abs(gram - scale2 * np.eye(3))) > 1e-6 * scale2:
        return "scaled unevenly or sheared"
    return ""


def _original_basis(obj):
    """The object's own transform from the originals stored at its first bake."""
    s = obj.quadric
    mode = s.orig_rotation_mode
    if mode == 'QUATERNION':
        rot = Quaternion(s.orig_rotation_quaternion).normalized().to_matrix()
    elif mode == 'AXIS_ANGLE':
        a = s.orig_rotation_axis_angle
        rot = Quaternion(Vector(a[1:]), a[0]).to_matrix()
    else:
        from mathutils import Euler
        rot = Euler(s.orig_rotation_euler, mode).to_matrix()
    return Matrix.LocRotScale(Vector(s.orig_location), rot, obj.scale)


def solver_shape(solver, kind, params, hull=None):
    """The solver's shape value of an add-on shape row (not used for ellipsoids: they keep add_ellipsoid)."""
    named = shapes.named(kind, params)
    if kind == shapes.SUPERELLIPSOID:
        return solver.Superellipsoid(named["semi_axes"], named["exponents"])
    if kind == shapes.BOX:
        return solver.Box(named["half_extents"])
    if kind in (shapes.CYLINDER, shapes.CAPSULE):
        return (solver.Cylinder if kind == shapes.CYLINDER else solver.Capsule)(named["radius"], named["half_height"])
    if kind == shapes.HULL:
        return solver.ConvexHull(hull)
    return solver.Ellipsoid(named["semi_axes"])


def body_mass_kwargs(obj, kind, params, hull=None, hull_faces=None):
    """Mass or density for the solver: the mass as given, or the density times the mesh's volume, scaled by
    the shape's volume over its volume when fitted if the user resized it."""
    s = obj.quadric
    if s.mass_mode == 'MASS':
        return dict(mass=float(s.mass))
    if s.fitted_volume > 0.0:
        ratio = 1.0
        if s.fitted_shape_volume > 0.0:
            ratio = shapes.volume(kind, params, hull, hull_faces) / s.fitted_shape_volume
        return dict(mass=float(s.density * s.fitted_volume * ratio))
    return dict(density=float(s.density))


def shape_problem(obj, kind, hull):
    """Why a body's shape cannot be simulated, naming the object and the field; '' if it can."""
    s = obj.quadric
    if kind == shapes.HULL:
        return "" if hull is not None else f"'{obj.name}': its convex hull is missing; fit its shape again"
    for name in shapes.FIELDS[kind]:
        value = np.atleast_1d(np.array(getattr(s, name), dtype=np.float64))
        if name == "exponents" or (np.all(np.isfinite(value)) and value.min() > 0.0):
            continue
        if len(value) == 3:
            return f"'{obj.name}': {name} {tuple(float(f'{x:.4g}') for x in value)} has a zero axis"
        return f"'{obj.name}': {name} must be positive, got {value[0]:.4g} m"
    return ""


def collider_geometry(obj, kind, depsgraph=None):
    """Local bounding box of a collider mesh (the evaluated one when a depsgraph is given, as Add Collider's Auto
    judges it), turned into world-space parameters for its kind."""
    loc, rot, scale = rigid_parts(obj.matrix_world)
    co = local_mesh(obj, depsgraph)[0] if obj.type == 'MESH' else np.zeros((0, 3))
    if len(co):
        co = co * scale
        lo, hi = co.min(axis=0), co.max(axis=0)
    else:
        lo, hi = -np.abs(scale), np.abs(scale)
    center = loc + rotations.rotate(rot, 0.5 * (lo + hi))
    half = 0.5 * (hi - lo)
    z_axis = rotations.rotate(rot, np.array([0.0, 0.0, 1.0]))
    return dict(center=center, half=half, rotation=rot, z_axis=z_axis, location=loc)


def local_mesh(obj, depsgraph=None):
    """Vertices (V, 3) in the object's axes and loop triangles (T, 3) of its mesh: the evaluated one (modifiers
    applied) when a depsgraph is given, else the mesh data itself. Empty arrays for an object without geometry."""
    source = obj.evaluated_get(depsgraph) if depsgraph is not None else obj
    if depsgraph is None:
        mesh = obj.data if obj.type == 'MESH' else None
    else:
        try:
            mesh = source.to_mesh()
        except RuntimeError:  # an empty, a light: no geometry
            mesh = None
    try:
        if mesh is None:
            return np.zeros((0, 3)), np.zeros((0, 3), dtype=np.int64)
        mesh.calc_loop_triangles()
        co = np.empty(3 * len(mesh.vertices))
        mesh.vertices.foreach_get("co", co)
        triangles = np.empty(3 * len(mesh.loop_triangles), dtype=np.int64)
        mesh.loop_triangles.foreach_get("vertices", triangles)
        return co.reshape(-1, 3), triangles.reshape(-1, 3)
    finally:
        if depsgraph is not None and mesh is not None:
            source.to_mesh_clear()


def collider_mesh(obj, depsgraph):
    """A mesh collider as the solver takes it: world-space vertices (V, 3) of the evaluated mesh and its
    triangles (T, 3), each wound counter-clockwise seen from the side its normal is displayed on. A mirrored
    object (negative determinant) reverses the winding of its transformed corners, so its triangles are turned
    back; its displayed normals (the inverse transpose of its matrix) keep pointing where they did."""
    co, triangles = local_mesh(obj, depsgraph)
    matrix = np.array(obj.matrix_world, dtype=np.float64)
    vertices = co @ matrix[:3, :3].T + matrix[:3, 3]
    if np.linalg.det(matrix[:3, :3]) < 0.0:
        triangles = triangles[:, [0, 2, 1]]
    return vertices, np.ascontiguousarray(triangles)


def _box_like(co, triangles):
    """Whether a mesh (in its object's axes) is a box container: each of its faces on a side of its bounding
    box, covering the floor and the four walls (a top may be there or not), none of its sides flat."""
    lo, hi = co.min(axis=0), co.max(axis=0)
    ext = hi - lo
    tol = 1e-5 * ext.max()  # Blender's single-precision coordinates round at 6e-8 of the size
    if ext.min() <= tol or not len(triangles):
        return False
    corners = co[triangles]
    area = 0.5 * np.linalg.norm(np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0]), axis=1)
    on_a_side = area <= 1e-12 * ext.max() ** 2  # triangles of no area may lie anywhere
    covered = np.zeros(6)
    for axis in range(3):
        for side, value in enumerate((lo[axis], hi[axis])):
            on = np.all(np.abs(corners[:, :, axis] - value) <= tol, axis=1)
            on_a_side |= on
            covered[2 * axis + side] = area[on].sum()
    sides = np.array([ext[1] * ext[2]] * 2 + [ext[0] * ext[2]] * 2 + [ext[0] * ext[1]] * 2)
    walls_and_floor = slice(0, 5)  # -x, +x, -y, +y, -z; the top (+z) is open or not
    return bool(on_a_side.all() and np.all(covered[walls_and_floor] >= (1.0 - 1e-4) * sides[walls_and_floor]))


def detect_collider_kind(obj, depsgraph=None):
    """PLANE for a flat mesh, TUBE for vertices on a circle around local Z, BOX for a box (its faces on its
    bounding box's sides, the floor and four walls covered), else MESH: any other mesh collides by its faces.

    The evaluated mesh (modifiers applied) is what is judged when a depsgraph is given, else the mesh data."""
    if obj.type != 'MESH':
        raise ConvertError(f"'{obj.name}' is not a mesh; colliders are made from meshes")
    co, triangles = local_mesh(obj, depsgraph)
    if len(co) < 3:
        raise ConvertError(f"'{obj.name}' has fewer than 3 vertices; a collider needs a mesh with faces")
    ext = np.ptp(co, axis=0)
    if ext[2] <= 1e-6 * max(ext.max(), 1e-12):
        return 'PLANE'
    r = np.hypot(co[:, 0] - 0.5 * (co[:, 0].max() + co[:, 0].min()), co[:, 1] - 0.5 * (co[:, 1].max() + co[:, 1].min()))
    if len(co) >= 12 and r.mean() > 0 and r.std() / r.mean() < 0.02:
        return 'TUBE'
    if _box_like(co, triangles):
        return 'BOX'
    if not len(triangles):
        raise ConvertError(f"'{obj.name}' has no faces; a mesh collider collides by its faces")
    return 'MESH'


def _parents_of_dynamic_bodies(bodies):
    """The parents of the dynamic bodies, whose world matrices the bake needs at every frame. A dynamic body
    may not hang from another simulated body (its bake would be moved twice) nor from a parent that would
    skew its shape (uneven scale)."""
    found = []
    simulated = {o.name for o in bodies if o.quadric.body_type == 'DYNAMIC'}
    for obj in bodies:
        if obj.quadric.body_type != 'DYNAMIC' or obj.parent is None:
            continue
        chain = obj.parent
        while chain is not None:
            if chain.name in simulated or chain.quadric.role == 'ROPE':
                raise ConvertError(f"'{obj.name}': a dynamic body cannot hang from the simulated '{chain.name}'; "
                                   "clear its parent (Alt+P > Clear and Keep Transformation)")
            chain = chain.parent
        problem = similarity_problem(parent_space(obj))
        if problem:
            raise ConvertError(f"'{obj.name}': its parent '{obj.parent.name}' is {problem}, which a rigid body "
                               "cannot follow; apply the parent's scale or clear the parent")
        if obj.parent not in found:
            found.append(obj.parent)
    return found


def _parent_frames(obj, parent_track):
    """(F, 4, 4): the body's parent space (parent_space) at each frame, from its parent's sampled matrices."""
    inverse = np.array(obj.matrix_parent_inverse, dtype=np.float64)
    frames = np.array([np.array(m, dtype=np.float64) @ inverse for m in parent_track])
    for k, matrix in enumerate(frames):
        problem = similarity_problem(matrix)
        if problem:
            raise ConvertError(f"'{obj.name}': its parent '{obj.parent.name}' is {problem} at frame offset {k}, "
                               "which a rigid body cannot follow; apply the parent's scale or clear the parent")
    return frames


def sample_track(scene, objects, frame_start, frames, fps):
    """World matrices of objects at each frame of the range: {name: [Matrix]}, frame restored afterwards."""
    return drain(sample_track_steps(scene, objects, frame_start, frames, fps))


def sample_track_steps(scene, objects, frame_start, frames, fps):
    """sample_track a frame a step, for timer ticks (addon/ticks.py): each frame_set evaluates the scene (8 to 28 ms
    with 2,000 bodies beside a few animated ones), so it begins a step, and so does the return to the frame."""
    if not objects:
        return {}
    current = scene.frame_current
    tracks = {o.name: [] for o in objects}
    try:
        for k in range(frames):
            yield "sampling the animated objects", k, frames
            scene.frame_set(frame_start + k)
            for o in objects:
                tracks[o.name].append(o.matrix_world.copy())
        yield "sampling the animated objects", frames, frames
    finally:
        scene.frame_set(current)
    return tracks


def rope_rest_nodes(arm):
    bones = rope_bones(arm)
    heads = [arm.matrix_world @ b.head_local for b in bones]
    heads.append(arm.matrix_world @ bones[-1].tail_local)
    return np.array(heads, dtype=np.float64)


def rope_bones(arm):
    return sorted(arm.data.bones, key=lambda b: b.name)


def simulated_by_role(scene):
    """The scene's objects with a Quadric role, by role ({role: [object]}, each sorted by name; [] for a role none
    has): each object's role read once (a read costs microseconds: a pass per role over 2,000 objects took 17 ms)."""
    found = defaultdict(list)
    for obj in sorted(scene.objects, key=lambda o: o.name):
        found[obj.quadric.role].append(obj)
    found.pop('NONE', None)
    return found


def build_scene(solver, context, scene=None):
    """Convert every quadric object of the Blender scene. Raises ConvertError with the object's name."""
    return drain(build_scene_steps(solver, context, scene))


def build_scene_steps(solver, context, scene=None):
    """build_scene cut into steps for timer ticks (addon/ticks.py): the animated objects sampled a frame a step, the
    bodies converted CONVERT_STEP a step (an animated one in a step of its own), then colliders, ropes and particles
    in one; closed between them, it goes back to the current frame."""
    scene = scene or context.scene
    if context.view_layer is not None:
        context.view_layer.update()  # world matrices as shown, also after a script's edits
    qs = scene.quadric
    start, end = frame_range(scene)
    frames = end - start + 1
    if frames < 2:
        raise ConvertError(f"frame range {start}-{end} is empty; it needs at least 2 frames")
    fps = scene_fps(scene)
    gravity = tuple(scene.gravity) if scene.use_gravity else (0.0, 0.0, 0.0)
    out = solver.Scene(gravity=gravity)
    conv = Conversion(out, [], [], start, frames, fps, qs.substeps, qs.iterations,
                      integrator=qs.particle_integrator.lower())

    by_role = simulated_by_role(scene)
    bodies, colliders, ropes = by_role['BODY'], by_role['COLLIDER'], by_role['ROPE']
    groups = sorted((o for role in particle_groups.ROLES for o in by_role[role]), key=lambda o: o.name)
    if not (bodies or ropes or groups):
        raise ConvertError(NOTHING_TO_SIMULATE)

    current = scene.frame_current
    if current != start:
        yield "converting the scene", 0, 1  # the frame change below evaluates the scene: a step of its own
        scene.frame_set(start)
    try:
        anchors = _rope_anchor_objects(ropes, bodies)
        animated = [o for o in bodies if o.quadric.body_type == 'ANIMATED'] + anchors
        parents = _parents_of_dynamic_bodies(bodies)
        carried = [o for o in groups if particle_groups.moves(o)]  # groups whose pins follow their object
        tracks = yield from sample_track_steps(scene, list(dict.fromkeys(animated + parents + carried)), start,
                                               frames, fps)
        if scene.frame_current != start:
            scene.frame_set(start)
        body_index = {}
        times = np.arange(frames) / fps
        in_step = CONVERT_STEP  # bodies' worth converted in this step: the first body begins one
        for k, obj in enumerate(bodies):
            s = obj.quadric
            animated = s.body_type == 'ANIMATED'
            if animated or in_step >= CONVERT_STEP:
                yield "converting the bodies", k, len(bodies)
                in_step = 0
            in_step += CONVERT_STEP if animated else 1  # its track, frame by frame: 2 to 3 ms for 96 frames
            parent_frames = None
            if s.body_type == 'DYNAMIC' and obj.parent is not None:
                parent_frames = _parent_frames(obj, tracks[obj.parent.name])
            mat0 = tracks[obj.name][0] if obj.name in tracks else initial_matrix_world(obj)
            i = _add_body(solver, out, obj, mat0)
            body_index[obj.name] = i
            if body_shape.changed_since_fit(obj):
                conv.warnings.append(f"'{obj.name}': its mesh or scale changed since its shape was fitted; the "
                                     f"simulation uses the {describe_shape(obj)} shown (Fit Shape fits it again)")
            # the body frame (the shape's, or a hull's centre of mass and principal axes) in the object's frame
            t0, r0, _ = rigid_parts(mat0)
            off_loc = rotations.rotate(rotations.conj(r0), np.array(out.bodies[i]["position"]) - t0)
            off_rot = rotations.mul(rotations.conj(r0), np.array(out.bodies[i]["orientation"]))
            if animated:
                loc, rot, _ = rigid_track(tracks[obj.name])
                poses = np.concatenate([loc + rotations.rotate(rot, np.broadcast_to(off_loc, loc.shape)),
                                        rotations.mul(rot, np.broadcast_to(off_rot, rot.shape))], axis=1)
                poses[:, 3:] = rotations.make_continuous(poses[:, 3:])
                out.set_kinematic_track(i, times, poses)
            elif s.body_type == 'DYNAMIC':
                conv.bodies.append(BodyBinding(obj.name, i, off_loc, off_rot, parent_frames))
        yield "converting the colliders, ropes and particles", 0, 1
        depsgraph = context.evaluated_depsgraph_get() if colliders else None
        for obj in colliders:
            _add_collider(solver, out, conv, obj, depsgraph)
        for arm in ropes:
            _add_rope(solver, out, conv, arm, body_index, tracks, times)
        specs = _add_groups(solver, out, conv, context, scene, groups, start, tracks) if groups else []
        _add_field_forces(solver, out, conv, context, scene, specs)
    finally:
        if scene.frame_current != current:
            scene.frame_set(current)
    return conv


def _add_groups(solver, out, conv, context, scene, objs, frame, tracks):
    """Add the particle groups and soft bodies; returns their specs (particle_groups.read_group). A moving soft
    body's or pinned particle group's sampled world matrices (``tracks``) carry its pins; a soft body's cache then
    plays in its axes at each frame (particles play in world space)."""
    depsgraph = context.evaluated_depsgraph_get()
    specs = [particle_groups.read_group(obj, depsgraph, scene, frame) for obj in objs]
    for spec in specs:
        spec.matrices = tracks.get(spec.object_name)
    materials = [material_of(solver, bpy.data.objects[spec.object_name]) for spec in specs]
    first = len(out.particles)
    particle_groups.add_groups(solver, out, specs, materials, out.gravity, conv.fps)
    for k, spec in enumerate(specs):
        moving = spec.kind == 'SOFT_BODY' and spec.matrices is not None
        matrix = np.array([np.array(m) for m in spec.matrices]) if moving else spec.matrix
        conv.groups.append(GroupBinding(spec.object_name, first + k, spec.kind, matrix,
                                        None if spec.kind == 'SOFT_BODY' else spec.radii, spec.shown))
        conv.warnings.extend(f"'{spec.object_name}': {note}" for note in spec.notes)
    return specs


def _add_field_forces(solver, out, conv, context, scene, specs):
    """Add the force fields acting on the particle groups (``specs``), bodies and ropes; their notes as warnings."""
    fields = force_fields.scene_fields(scene, context.view_layer)
    if not fields:
        return
    plan = force_fields.plan_forces(fields, [spec.field_weight for spec in specs],
                                    force_fields.body_weight(scene) if out.bodies else None,
                                    force_fields.rope_weight if out.ropes else None)
    particle_groups.add_forces(solver, out, plan)
    conv.warnings.extend(force_fields.describe(note) for note in plan.notes)


def describe_shape(obj):
    return shapes.NAMES[shapes.kind_of(obj.quadric.fitted_shape)]


def _add_body(solver, out, obj, mat0):
    """Add one body at its object's matrix; returns its index. Raises ConvertError naming the object."""
    s = obj.quadric
    kind, params, hull, faces = body_shape.shape_of(obj)
    problem = shape_problem(obj, kind, hull)
    if problem:
        raise ConvertError(problem)
    c, q = body_shape.shape_pose(obj, mat0)
    common = dict(position=tuple(c), orientation=tuple(q), velocity=tuple(s.initial_velocity),
                  angular_velocity=tuple(s.initial_angular_velocity), material=material_of(solver, obj),
                  fixed=s.body_type == 'STATIC', kinematic=s.body_type == 'ANIMATED', name=obj.name,
                  **body_mass_kwargs(obj, kind, params, hull, faces))
    if kind == shapes.ELLIPSOID:
        return out.add_ellipsoid(semi_axes=tuple(params[:3]), **common)
    return out.add_body(solver_shape(solver, kind, params, hull), **common)


def _rope_anchor_objects(ropes, bodies):
    """Non-body objects ropes are tied to: they become kinematic anchors following their animation."""
    names = {b.name for b in bodies}
    found = {}
    for arm in ropes:
        s = arm.quadric
        for mode, target in ((s.start_mode, s.start_object), (s.end_mode, s.end_object)):
            if mode == 'OBJECT':
                if target is None:
                    raise ConvertError(f"rope '{arm.name}': an end is tied to an object but none is chosen")
                if target.name not in names:
                    found[target.name] = target
    return list(found.values())


def _add_collider(solver, out, conv, obj, depsgraph):
    s = obj.quadric
    mat = material_of(solver, obj)
    if s.collider_kind == 'MESH':
        vertices, triangles = collider_mesh(obj, depsgraph)
        if not len(triangles):
            raise ConvertError(f"'{obj.name}': mesh collider has no faces; a mesh collider collides by its faces")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out.add_mesh_collider(vertices, triangles, material=mat, name=obj.name)
        conv.warnings.extend(str(w.message) for w in caught)
        return
    g = collider_geometry(obj, s.collider_kind, depsgraph)
    if s.collider_kind == 'PLANE':
        out.add_plane(point=tuple(g["center"]), normal=tuple(g["z_axis"]), material=mat, name=obj.name)
    elif s.collider_kind == 'TUBE':
        radius = 0.5 * (g["half"][0] + g["half"][1])
        out.add_tube(center=tuple(g["center"]), axis=tuple(g["z_axis"]), radius=float(radius),
                     length=float(2.0 * g["half"][2]), material=mat, name=obj.name)
    else:
        out.add_box_container(center=tuple(g["center"]), half_extents=tuple(g["half"]), material=mat,
                              name=obj.name, rotation=tuple(g["rotation"]))


def _body_size(body):
    """A body's mean half-width from its Scene entry, whatever its shape."""
    if "semi_axes" in body:
        return float(np.mean(body["semi_axes"]))
    if "half_extents" in body:
        return float(np.mean(body["half_extents"]))
    if "points" in body:
        return float(np.mean(np.ptp(np.array(body["points"]), axis=0))) / 2.0
    capsule = body["radius"] if body["shape"] == "capsule" else 0.0
    return (2.0 * body["radius"] + body["half_height"] + capsule) / 3.0


def _nearest_body(out, point):
    best, best_d = None, np.inf
    for i, b in enumerate(out.bodies):
        d = np.linalg.norm(np.array(b["position"]) - point) - _body_size(b)
        if d < best_d:
            best, best_d = i, d
    return best


def _add_rope(solver, out, conv, arm, body_index, tracks, times):
    s = arm.quadric
    if not hasattr(out, "add_rope"):
        raise ConvertError(f"rope '{arm.name}': this solver build has no ropes yet")
    nodes = rope_rest_nodes(arm)
    pinned, clamped, attachments = [], [], []
    for node, mode, target in ((0, s.start_mode, s.start_object), (len(nodes) - 1, s.end_mode, s.end_object)):
        if mode == 'PIN':
            pinned.append(node)
            continue
        if mode == 'CLAMP':
            clamped.append(node)
            continue
        if mode == 'FREE':
            continue
        if mode == 'NEAREST':
            b = _nearest_body(out, nodes[node])
            if b is None:
                raise ConvertError(f"rope '{arm.name}': an end is tied to the nearest body but there is none")
        elif target.name in body_index:
            b = body_index[target.name]
        else:
            inward = nodes[1] - nodes[0] if node == 0 else nodes[-2] - nodes[-1]
            b = _anchor_body(out, target, float(s.rope_radius), nodes[node], inward, tracks[target.name], times,
                             f"{target.name} ({arm.name} {'start' if node == 0 else 'end'})")
            if b is None:  # the object does not move: a pin is exact and cheaper
                pinned.append(node)
                continue
        body = out.bodies[b]
        local = rotations.rotate(rotations.conj(np.array(body["orientation"])), nodes[node] - np.array(body["position"]))
        attachments.append((node, b, tuple(local)))
    r = out.add_rope(nodes, radius=float(s.rope_radius), density=float(s.rope_density),
                     young_modulus=float(s.rope_young_modulus), shear_modulus=float(s.rope_shear_modulus),
                     damping=float(s.rope_damping), material=material_of(solver, arm), pinned=tuple(pinned),
                     attachments=attachments, name=arm.name, **({"clamped": tuple(clamped)} if clamped else {}))
    conv.ropes.append(RopeBinding(arm.name, r, [b.name for b in rope_bones(arm)]))


def _anchor_body(out, target, radius, node, inward, matrices, times, name):
    """A small kinematic body that carries a rope end along with an animated object; None if it never moves.

    The solver has no moving pins, so the end is tied to a kinematic ellipsoid following the object.
    It sits just beyond the rope's end (along the end tangent), not around the end node, so the rope
    does not start inside it; it keeps that offset in the object's frame as the object moves and turns.
    """
    loc, rot, _ = rigid_track(matrices)
    if np.allclose(loc, loc[0], atol=1e-9) and np.allclose(rot, rot[0], atol=1e-9):
        return None
    direction = np.asarray(inward, dtype=np.float64)
    direction = direction / np.linalg.norm(direction)
    center0 = np.asarray(node, dtype=np.float64) - 2.5 * radius * direction
    offset = rotations.rotate(rotations.conj(rot[0]), center0 - loc[0])  # in the object's axes
    poses = np.concatenate([loc + rotations.rotate(rot, np.broadcast_to(offset, loc.shape)), rot], axis=1)
    i = out.add_ellipsoid(semi_axes=(radius, radius, radius), position=tuple(poses[0, :3]),
                          orientation=tuple(poses[0, 3:]), kinematic=True, name=name)
    out.set_kinematic_track(i, times, poses)
    return i
