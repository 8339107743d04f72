"""Check Scene: every problem that would stop a simulation, found at once, before anything compiles.

Reads the scene as the conversion (addon/convert.py) will, at the first frame of
the range: each body's shape, the static colliders, the ropes' rest nodes
and the settings. The geometry is plain numpy (addon/overlaps.py); nothing here
imports the solver's numba kernels, so the check takes well under a second even
before the first compile. Resolve Overlaps moves the bodies the check finds
overlapping by the least it can.
"""
import contextlib
import math
from dataclasses import dataclass

import numpy as np
from mathutils import Vector

from quadric_solver import rotations
from quadric_solver.mesh import mesh_topology
from . import body_shape, convert, overlaps, particle_preflight, shapes
from .properties import frame_range
from .ticks import ALONE, COMMITTED, drain

# quadric_solver/ropes/model.py refuses a drawn curve that turns back by more than this at a node
MAX_KINK_DEGREES = 175.0
READ_STEP = 32  # bodies read per step of check_steps (0.06 to 0.3 ms each)
SHOWN_IN_PANEL = 8


@dataclass
class Problem:
    kind: str            # 'OVERLAP' (Resolve Overlaps can fix it), 'BODY', 'COLLIDER', 'ROPE', 'PARTICLES', 'FIELD'
    #                      or 'SCENE'
    message: str
    objects: tuple = ()  # names of the objects involved
    depth: float = 0.0   # overlaps: how deep, in metres
    severity: str = 'ERROR'  # 'ERROR' stops the simulation; a 'WARNING' (it may not do what is meant) does not


def errors(problems):
    """The problems that stop a simulation."""
    return [p for p in problems if p.severity == 'ERROR']


@dataclass
class Layout:
    """What the check read: the bodies it can measure and the static colliders, in the solver's layout."""
    bodies: list          # objects, sorted by name
    centers: np.ndarray   # (N, 3)
    rotation: np.ndarray  # (N, 3, 3) columns are the shapes' axes
    semi_axes: np.ndarray  # (N, 3) semi-axes of ellipsoids, half-widths of the other shapes
    movable: np.ndarray   # (N,) dynamic bodies
    colliders: list       # (object, label) per collider
    statics: overlaps.Statics
    problems: list
    shapes: overlaps.Shapes = None


@contextlib.contextmanager
def at_frame(scene, frame):
    """Evaluate the scene at ``frame`` and go back to the current frame afterwards."""
    current = scene.frame_current
    if current != frame:
        scene.frame_set(frame)
    try:
        yield
    finally:
        if scene.frame_current != current:
            scene.frame_set(current)


def _body_problems(obj, kind, hull, center):
    """(what is wrong with a body, whether it has a shape to measure)."""
    s = obj.quadric
    name = obj.name
    found = []
    problem = convert.shape_problem(obj, kind, hull)
    if not np.all(np.isfinite(center)):
        found.append(f"'{name}': its location or rotation is not finite")
    elif problem:
        found.append(problem + ("; set it in the body's panel or fit the shape again (a flat mesh makes a better "
                                "collider)" if "zero" in problem else ""))
    measurable = not found
    value, field, unit = (s.mass, "mass", "kg") if s.mass_mode == 'MASS' else (s.density, "density", "kg/m^3")
    if not (math.isfinite(value) and value > 0.0):
        found.append(f"'{name}': {field} must be positive, got {value:g} {unit}")
    if s.body_type == 'DYNAMIC' and obj.parent is not None:
        problem = convert.similarity_problem(convert.parent_space(obj))
        if problem:
            found.append(f"'{name}': its parent '{obj.parent.name}' is {problem}, which a rigid body cannot "
                         "follow; apply the parent's scale or clear the parent (Alt+P > Clear and Keep "
                         "Transformation)")
    return found, measurable


def _read_bodies(objs):
    """Steps (addon/ticks.py) that read the bodies, READ_STEP a step; returns what read_scene_steps keeps of them."""
    bodies, centers, quats, widths, movable, problems = [], [], [], [], [], []
    kinds, params, hulls = [], [], []
    for k, obj in enumerate(objs):
        if k % READ_STEP == 0:  # also before the first: the frame change before it evaluates the scene
            yield "checking the bodies", k, len(objs)
        s = obj.quadric
        matrix = obj.matrix_world.copy() if s.body_type == 'ANIMATED' else convert.initial_matrix_world(obj)
        center, q = body_shape.shape_pose(obj, matrix)
        kind, row, hull, _ = body_shape.shape_of(obj)
        found, measurable = _body_problems(obj, kind, hull, center)
        problems.extend(Problem('BODY', msg, (obj.name,)) for msg in found)
        if not measurable:
            continue
        bodies.append(obj)
        centers.append(center)
        quats.append(q)
        widths.append(shapes.half_widths(kind, row, hull))
        movable.append(s.body_type == 'DYNAMIC')
        kinds.append(kind)
        params.append(row)
        hulls.append(hull)
    rotation = rotations.to_matrix(np.array(quats).reshape(-1, 4)) if quats else np.zeros((0, 3, 3))
    found = overlaps.Shapes(np.array(kinds, dtype=np.int64), np.array(params).reshape(-1, shapes.PARAMS),
                            tuple(hulls))
    return (bodies, np.array(centers).reshape(-1, 3), rotation, np.array(widths).reshape(-1, 3),
            np.array(movable, dtype=bool), problems, found)


def _mesh_problems(obj, vertices, triangles):
    """(errors, warnings) of a mesh collider's evaluated mesh, naming the object."""
    name = obj.name
    if not len(triangles):
        return [f"'{name}': mesh collider has no faces; a mesh collider collides by its faces (give it some, or "
                "choose another kind)"], []
    if not np.all(np.isfinite(vertices)):
        return [f"'{name}': its location, rotation, scale or vertices are not finite"], []
    topology = mesh_topology(np.asarray(vertices, dtype=np.float64).reshape(-1, 3),
                             np.asarray(triangles, dtype=np.int64).reshape(-1, 3))
    if not topology.usable.any():
        return [f"'{name}': mesh collider's faces all have zero area"], []
    flipped = topology.flipped_edges
    if flipped:
        return [], [f"'{name}': {flipped} edge{'s' if flipped != 1 else ''} of the mesh collider join faces whose "
                    "normals point opposite ways; bodies pass through a face from behind, so recalculate its "
                    "normals (Mesh > Normals > Recalculate Outside, or Inside for a bowl)"]
    return [], []


def _read_colliders(objs, depsgraph=None):
    planes, boxes, tubes, meshes, colliders, problems = [], [], [], [], [], []
    for obj in objs:
        kind = obj.quadric.collider_kind
        g = convert.collider_geometry(obj, kind, depsgraph)
        if not all(np.all(np.isfinite(g[k])) for k in ("center", "half", "z_axis")):
            problems.append(Problem('COLLIDER', f"'{obj.name}': its location, rotation or scale is not finite",
                                    (obj.name,)))
            continue
        owner = len(colliders)
        if kind == 'PLANE':
            planes.append((owner, g["center"], g["z_axis"]))
            label = "plane"
        elif kind == 'TUBE':
            radius, length = 0.5 * (g["half"][0] + g["half"][1]), 2.0 * g["half"][2]
            if min(radius, length) <= 0.0:
                field = "radius" if radius <= 0.0 else "length"
                problems.append(Problem('COLLIDER', f"'{obj.name}': tube collider has zero {field}; scale the "
                                                    "object up", (obj.name,)))
                continue
            tubes.append((owner, g["center"], g["z_axis"], radius, length))
            label = "tube"
        elif kind == 'MESH':
            vertices, triangles = convert.collider_mesh(obj, depsgraph)
            stop, warn = _mesh_problems(obj, vertices, triangles)
            problems += [Problem('COLLIDER', msg, (obj.name,)) for msg in stop]
            problems += [Problem('COLLIDER', msg, (obj.name,), severity='WARNING') for msg in warn]
            if stop:
                continue
            meshes.append((owner, vertices, triangles))
            label = "mesh"
        else:
            if g["half"].min() <= 0.0:
                axis = "xyz"[int(np.argmin(g["half"]))]
                problems.append(Problem('COLLIDER', f"'{obj.name}': box collider has zero size along local {axis}; "
                                                    "scale the object up", (obj.name,)))
                continue
            boxes.append((owner, g["center"], g["half"], rotations.to_matrix(g["rotation"])))
            label = "box container"
        colliders.append((obj, label))
    return colliders, overlaps.statics(planes, boxes, tubes, meshes), problems


def _rope_problems(arm, n_bodies):
    s = arm.quadric
    label = f"rope '{arm.name}'"
    found = []
    if arm.type != 'ARMATURE' or not len(arm.data.bones):
        return [f"{label}: its rig has no bones; remove it and make the rope again from its curve"]
    nodes = convert.rope_rest_nodes(arm)
    lengths = np.linalg.norm(np.diff(nodes, axis=0), axis=1)
    scale = max(float(np.max(np.abs(nodes))), 1.0) if np.all(np.isfinite(nodes)) else math.inf
    if not math.isfinite(scale):
        found.append(f"{label}: its bones are not finite")
    elif np.any(lengths <= 1e-9 * scale):
        k = int(np.argmax(lengths <= 1e-9 * scale))
        found.append(f"{label}: nodes {k} and {k + 1} coincide (a segment of zero length); make the rope again "
                     "from its curve")
    else:
        tangents = np.diff(nodes, axis=0) / lengths[:, None]
        folds = np.flatnonzero(np.sum(tangents[1:] * tangents[:-1], axis=1)
                               < math.cos(math.radians(MAX_KINK_DEGREES)))
        if folds.size:
            found.append(f"{label}: its curve folds back on itself at node {folds[0] + 1} (a turn of more than "
                         f"{MAX_KINK_DEGREES:g} degrees); smooth the curve there or use more segments")
    for field in ("rope_radius", "rope_density", "rope_young_modulus", "rope_shear_modulus"):
        value = getattr(s, field)
        if not (math.isfinite(value) and value > 0.0):
            found.append(f"{label}: {field} must be positive, got {value:g}")
    for end, mode, target, field in (("start", s.start_mode, s.start_object, "start_object"),
                                     ("end", s.end_mode, s.end_object, "end_object")):
        if mode == 'OBJECT' and target is None:
            found.append(f"{label}: its {end} is tied to an object but {field} is empty; choose one")
        elif mode == 'NEAREST' and not n_bodies:
            found.append(f"{label}: its {end} is tied to the nearest body, but the scene has no Quadric body")
    return found


def read_scene_steps(context, scene=None):
    """Steps for timer ticks (addon/ticks.py) that read the Layout of the scene's quadric objects at the first frame
    of the range, with the problems found while reading (everything but overlaps); closed between them, it goes
    back to the current frame."""
    scene = scene or context.scene
    if context.view_layer is not None:
        context.view_layer.update()  # world matrices as shown, also after a script's edits
    by_role = convert.simulated_by_role(scene)
    problems = []
    start, end = frame_range(scene)
    if end - start + 1 < 2:
        problems.append(Problem('SCENE', f"frame range {start}-{end} is empty; it needs at least 2 frames"))
    if not (by_role['BODY'] or by_role['ROPE'] or by_role['PARTICLES'] or by_role['SOFT_BODY']):
        problems.append(Problem('SCENE', convert.NOTHING_TO_SIMULATE))
    with at_frame(scene, start):
        bodies, centers, rotation, semi, movable, found, body_shapes = yield from _read_bodies(by_role['BODY'])
        problems += found
        depsgraph = context.evaluated_depsgraph_get() if by_role['COLLIDER'] else None
        colliders, statics, found = _read_colliders(by_role['COLLIDER'], depsgraph)
        problems += found
        for arm in by_role['ROPE']:
            problems += [Problem('ROPE', msg, (arm.name,)) for msg in _rope_problems(arm, len(by_role['BODY']))]
        fps = convert.scene_fps(scene)
        problems += [Problem(kind, message, objects, severity=severity) for kind, message, objects, severity
                     in particle_preflight.check(context, scene, by_role, 1.0 / (fps * scene.quadric.substeps), fps)]
    return Layout(bodies, centers, rotation, semi, movable, colliders, statics, problems, body_shapes)


def _overlap_problems(layout, found):
    """Problems for the overlaps found (body pairs, and bodies in static colliders)."""
    names = [o.name for o in layout.bodies]
    share = f"more than {overlaps.OVERLAP_TOLERANCE:.0%} of"
    problems = []
    for a, b, depth in zip(found.a, found.b, found.depth):
        if a >= 0:
            message = (f"'{names[a]}' overlaps '{names[b]}' by {depth:.3g} m ({share} the smaller one's smallest "
                       "semi-axis)")
            involved = (names[a], names[b])
        else:
            collider, label = layout.colliders[layout.statics.owner[-1 - a]]
            message = (f"'{names[b]}' overlaps {label} '{collider.name}' by {depth:.3g} m ({share} its smallest "
                       "semi-axis)")
            involved = (names[b], collider.name)
        problems.append(Problem('OVERLAP', message, involved, float(depth)))
    return problems


def find_overlaps(layout):
    """All body pairs, and dynamic bodies against static colliders, overlapping beyond the solver's tolerance."""
    pairs = overlaps.body_overlaps(layout.centers, layout.rotation, layout.semi_axes, shapes=layout.shapes)
    walls = overlaps.static_overlaps(layout.centers, layout.rotation, layout.semi_axes, layout.statics,
                                     layout.movable, shapes=layout.shapes)
    return overlaps.Overlaps(*(np.concatenate([x, y]) for x, y in zip(pairs, walls)))


def check(context, scene=None):
    """Every problem the simulation would stop at, then the warnings, as a list of Problems (empty when the
    scene is fine)."""
    return drain(check_steps(context, scene))


def check_steps(context, scene=None):
    """check cut into steps for timer ticks (addon/ticks.py): the bodies read a few at a time, then the overlaps
    measured (numpy, all pairs at once)."""
    layout = yield from read_scene_steps(context, scene)
    yield "checking for overlaps", 0, 1
    yield ALONE  # all pairs at once: 20 to 25 ms for 2,000 bodies
    found = layout.problems + _overlap_problems(layout, find_overlaps(layout))
    return errors(found) + [p for p in found if p.severity != 'ERROR']


def _translate(obj, delta):
    """Move an object by a world-space delta, at its start pose (the one Clear Bake restores, if baked)."""
    local = Vector(delta)
    if obj.parent is not None:
        local = (obj.parent.matrix_world @ obj.matrix_parent_inverse).to_3x3().inverted_safe() @ local
    s = obj.quadric
    if s.is_baked:
        s.orig_location = Vector(s.orig_location) + local
    else:
        obj.location = obj.location + local


def resolve(context, scene=None):
    """Move dynamic bodies out of every overlap the check reports; see resolve_steps."""
    return drain(resolve_steps(context, scene))


def resolve_steps(context, scene=None):
    """Resolve Overlaps cut into steps for timer ticks (addon/ticks.py): the scene read and the moves found a few
    bodies or a pass a step, changing nothing; then every body moved in one step (COMMITTED), and the scene
    checked again.

    Returns ([(name, world delta)], largest move first; [why each overlap left could not be resolved];
    the problems the check finds afterwards).
    """
    scene = scene or context.scene
    layout = yield from read_scene_steps(context, scene)
    moved, left = yield from overlaps.separate_steps(layout.centers, layout.rotation, layout.semi_axes,
                                                     layout.movable, layout.statics, shapes=layout.shapes)
    changes = []
    yield ALONE
    yield COMMITTED
    for k in np.flatnonzero(np.any(moved != 0.0, axis=1)):
        _translate(layout.bodies[k], moved[k])
        changes.append((layout.bodies[k].name, moved[k]))
    changes.sort(key=lambda item: -float(np.linalg.norm(item[1])))
    stuck = []
    for a, b, problem in zip(left.a, left.b, _overlap_problems(layout, left)):
        if layout.movable[b] or (a >= 0 and layout.movable[a]):
            stuck.append(f"{problem.message}: still there after {overlaps.SEPARATE_PASSES} passes (wedged in?)")
        else:
            stuck.append(f"{problem.message}: neither is a dynamic body, move one by hand")
    yield ALONE  # the check below reads the scene again, which Blender re-evaluates after the moves
    problems = yield from check_steps(context, scene)
    return changes, stuck, problems


def describe_move(delta):
    """'2.5 cm up', '1.2 mm along (0.6, 0.8, 0)': how far and which way a body moved."""
    distance = float(np.linalg.norm(delta))
    size = f"{distance * 100:.3g} cm" if distance >= 0.01 else f"{distance * 1000:.3g} mm"
    unit = np.asarray(delta) / distance
    for axis, (word_plus, word_minus) in enumerate((("+x", "-x"), ("+y", "-y"), ("up", "down"))):
        if abs(unit[axis]) > 0.999:
            return f"{size} {word_plus if unit[axis] > 0 else word_minus}"
    return f"{size} along ({unit[0]:.2f}, {unit[1]:.2f}, {unit[2]:.2f})"


def store(scene, problems):
    """Keep the problems on the scene for the panel; the status line names how many and the first."""
    qs = scene.quadric
    qs.problems.clear()
    for p in problems:
        item = qs.problems.add()
        item.message, item.kind, item.severity = p.message, p.kind, p.severity
    if problems:
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        qs.status = f"Check: {problems[0].message}{more}"


def report(op, problems):
    """One error or warning per problem, then, if there are errors, a summary (the status bar shows the last):
    a script gets the errors in its RuntimeError."""
    for p in problems:
        op.report({p.severity}, p.message)
    stopping = len(errors(problems))
    if stopping:
        op.report({'ERROR'}, f"Check Scene found {stopping} problem{'s' if stopping != 1 else ''}; the "
                             "Quadric panel lists them")
