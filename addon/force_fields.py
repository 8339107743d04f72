"""Blender's force fields -> the solver's force objects, as plain values, with a note for whatever is left out.

The forces are what Blender's effector code (effect.cc, do_physical_effector) gives a particle, with x the
particle, v its velocity, c the field object's origin, z its unit Z axis, s its Strength, r = x - c and r_perp
the part of r across z (measured in Blender 5.0.1, one Euler step of a particle system):

  Force      f = s r / |r|  (s r / |r|^3 with Gravitation)    Attractor(c, -s, falloff 0 or 2)
  Wind       f = s z                                          Wind(z, s)
  Vortex     f = s z x r - s^2 r_perp - v  (Plane, Line)      Vortex(c, z, s, falloff -1) + Drag(1)
             f = s |r| (z x r) / |z x r|   (Point)            Vortex(c, z, s, falloff -1)
  Harmonic   f = -s (|r| - L) r / |r| - 2 d sqrt|s| v         Attractor(c, s, -1) + Attractor(c, -s L, 0)
                                                              + Drag(2 d sqrt|s|)
  Drag       f = -(q + l |v|) v                               Drag(q)
  Turbulence f = s n(r / size), n Blender's noise              Turbulence(s, size, seed): the solver's curl noise

plus f = -flow v (Drag(flow)) for Force, Wind, Vortex and Turbulence. L is the Harmonic's Rest Length, d its
Damping; q and l are the Drag field's Quadratic and Linear settings: Blender's code applies the one called
Quadratic in proportion to the velocity, and the one called Linear to its square. Forces are in newtons per
particle, as the solver's are; a Quadric body feels them at its centre of mass (N per body) and a rope per
metre of its length (quadric_solver/particles/forces.py). Every factor Blender calls the falloff (Strength
weights, and distances when a falloff power, a maximum distance or a Z direction is set) multiplies s, flow and
the drag.

What the solver cannot do is listed as a note (a Check Scene warning) and left out or approximated, never
dropped silently: the vortex's pull s^2 r_perp towards its axis, the point vortex's |r| (taken across the axis),
the Drag field's l |v| v, falloffs over distance, noise, and shapes other than those above. Nothing here imports
the solver (Check Scene uses it before anything compiles): a force is a (solver class name, keywords) pair.
"""
import math
from dataclasses import dataclass, field

import numpy as np

SUPPORTED = ('FORCE', 'WIND', 'VORTEX', 'HARMONIC', 'DRAG', 'TURBULENCE')
# Blender's effector weights per field type (ParticleSettings.effector_weights)
WEIGHT_NAMES = {'FORCE': "force", 'WIND': "wind", 'VORTEX': "vortex", 'HARMONIC': "harmonic", 'DRAG': "drag",
                'TURBULENCE': "turbulence"}
# keeps the harmonic pull and the rigid swirl (falloff -1) exact down to a micrometre from the centre or axis
NEAR = 1e-6


@dataclass
class Plan:
    forces: list = field(default_factory=list)   # (solver class name, keyword arguments)
    notes: list = field(default_factory=list)    # (object name, message): what is left out or approximated


def scene_fields(scene, view_layer=None):
    """The objects whose force field acts in Blender: a field type set, in the view layer and not disabled in
    viewports (Blender's effectors are the view layer's enabled objects), sorted by name."""
    found = [o for o in scene.objects if o.field is not None and o.field.type != 'NONE' and not o.hide_viewport
             and (view_layer is None or view_layer.objects.get(o.name) is not None)]
    return sorted(found, key=lambda o: o.name)


def _unit_z(obj):
    matrix = np.array(obj.matrix_world, dtype=np.float64)
    axis = matrix[:3, 2]
    length = float(np.linalg.norm(axis))
    return axis / length if length > 0.0 else np.array([0.0, 0.0, 1.0])


def _falloff_left_out(f):
    """What of a field's falloff makes its strength depend on where a particle is ('' when nothing does)."""
    parts = []
    if f.z_direction != 'BOTH':
        parts.append(f"Z direction {'+Z' if f.z_direction == 'POSITIVE' else '-Z'} only")
    if f.falloff_power != 0.0:
        parts.append(f"falloff power {f.falloff_power:g}")
    if f.use_max_distance:
        parts.append(f"maximum distance {f.distance_max:g} m")
    if f.falloff_type in ('TUBE', 'CONE'):
        if f.radial_falloff != 0.0:
            parts.append(f"radial falloff power {f.radial_falloff:g}")
        if f.use_radial_max:
            parts.append("maximum radial distance")
    return ", ".join(parts)


def is_animated(obj):
    """Whether the object or a parent is keyed, driven or constrained (the field would move or change)."""
    while obj is not None:
        anim = obj.animation_data
        if anim is not None and (anim.action is not None or len(anim.drivers)):
            return True
        if len(obj.constraints):
            return True
        obj = obj.parent
    return False


def field_forces(obj, weight, note):
    """The solver forces (name, keywords without groups) of one field object at ``weight`` (> 0): Blender's
    falloff factor, the product of the strength weights. ``note(message)`` records what is left out."""
    f = obj.field
    kind = f.type
    c = tuple(float(x) for x in np.array(obj.matrix_world, dtype=np.float64)[:3, 3])
    z = tuple(float(x) for x in _unit_z(obj))
    s = float(f.strength) * weight
    forces = []
    label = kind.title()
    if kind in ('FORCE', 'WIND', 'VORTEX', 'HARMONIC') and f.shape in ('SURFACE', 'POINTS'):
        note(f"its {label} field's shape {f.shape.title()} is not simulated (the solver's fields act from the "
             "object's origin and Z axis); it is left out")
        return []
    if kind == 'FORCE':
        if f.shape != 'POINT':
            note(f"its Force field's shape {f.shape.title()} (a push away from a {f.shape.lower()}) is not "
                 "simulated; only the Point shape is; it is left out")
            return []
        gravitation = bool(f.use_gravity_falloff)
        forces.append(("Attractor", dict(point=c, strength=-s, falloff=2.0 if gravitation else 0.0,
                                         min_distance=NEAR)))
    elif kind == 'WIND':
        forces.append(("Wind", dict(direction=z, strength=s)))
    elif kind == 'VORTEX':
        forces.append(("Vortex", dict(point=c, axis=z, strength=s, falloff=-1.0, min_distance=NEAR)))
        if f.shape == 'POINT':
            note("its Point vortex turns particles by their distance from its axis, not from its origin as "
                 "Blender's does (the same in the field's XY plane)")
        else:
            forces.append(("Drag", dict(coefficient=1.0)))  # Blender's -v, which the falloff does not scale
            note(f"its vortex's pull towards its axis (strength^2 x distance: {s * s:.3g} N per m) is left out; "
                 "the swirl and its drag are simulated, so particles drift outwards")
    elif kind == 'HARMONIC':
        if f.shape != 'POINT':
            note(f"its Harmonic field's shape {f.shape.title()} is not simulated; only the Point shape is; it is "
                 "left out")
            return []
        forces.append(("Attractor", dict(point=c, strength=s, falloff=-1.0, min_distance=NEAR)))
        if f.rest_length != 0.0:
            forces.append(("Attractor", dict(point=c, strength=-s * float(f.rest_length), falloff=0.0,
                                             min_distance=NEAR)))
        damping = 2.0 * float(f.harmonic_damping) * math.sqrt(abs(float(f.strength)))
        if damping > 0.0:
            forces.append(("Drag", dict(coefficient=damping)))
    elif kind == 'DRAG':
        linear = min(float(f.quadratic_drag), 2.0) * weight  # Blender clamps both at 2
        if linear > 0.0:
            forces.append(("Drag", dict(coefficient=linear)))
        elif linear < 0.0:
            note(f"its negative drag ({linear:g}, which speeds particles up) is left out")
        if f.linear_drag != 0.0:
            note(f"its Linear Drag ({f.linear_drag:g}), which Blender applies as -Linear |v| v, in proportion to "
                 "the speed squared, is left out (the solver's drag is in proportion to the speed: Quadratic Drag, "
                 "as Blender applies it)")
    elif kind == 'TURBULENCE':
        size = float(f.size) if f.size > 0.0 else 1.0  # Blender's noise is unscaled at size 0
        forces.append(("Turbulence", dict(strength=s, size=size, seed=int(f.seed))))
        note("its turbulence is the solver's own smooth noise, of the same strength and size but another pattern "
             "than Blender's")
    if kind in ('FORCE', 'WIND', 'VORTEX', 'TURBULENCE') and f.flow != 0.0:
        if f.flow > 0.0:
            forces.append(("Drag", dict(coefficient=float(f.flow) * weight)))
        else:
            note(f"its negative flow ({f.flow:g}) is left out")
    if kind != 'DRAG' and f.noise > 0.0:
        note(f"its noise ({f.noise:g}: random changes of strength) is left out")
    return forces


def _merge_drags(forces):
    """One Drag of the summed coefficients in place of several (the same force, one row fewer per substep)."""
    drag = sum(kw["coefficient"] for name, kw in forces if name == "Drag")
    others = [(name, kw) for name, kw in forces if name != "Drag"]
    return others + ([("Drag", dict(coefficient=drag))] if drag > 0.0 else [])


def effector_weight(weights, obj):
    """Blender's strength weight of force field ``obj`` under EffectorWeights ``weights`` (a particle system's or
    the rigid body world's): All times the field type's, 0 outside its effector collection."""
    if weights.collection is not None and obj.name not in weights.collection.all_objects:
        return 0.0
    name = WEIGHT_NAMES.get(obj.field.type)
    return float(weights.all) * (float(getattr(weights, name)) if name else 1.0)


def body_weight(scene):
    """weight(field object) on the Quadric bodies: the rigid body world's effector weights where the scene has
    one (Blender's own rigid bodies feel the fields through them), else 1."""
    world = scene.rigidbody_world
    if world is None or world.effector_weights is None:
        return lambda obj: 1.0
    return lambda obj: effector_weight(world.effector_weights, obj)


def rope_weight(obj):
    """weight(field object) on the ropes: Blender has no rope to take a weight from, so every field acts fully."""
    return 1.0


def plan_forces(fields, groups, bodies=None, ropes=None):
    """The solver forces of the scene's fields on its particle groups, bodies and ropes.

    fields: field objects (scene_fields); groups: one callable per group, weight(field object) -> Blender's
    strength weight of that field on that group (0 when it does not act on it); bodies, ropes: one such callable
    for all the bodies (all the ropes), or None where the scene has none. A field acts on everything it has the
    same weight on through one set of forces, named by their groups, bodies and ropes (None: all of them)."""
    plan = Plan()
    for obj in fields:
        kind = obj.field.type
        notes = {}  # in order, each once, whatever the number of weights the field acts with
        if kind not in SUPPORTED:
            title = obj.field.bl_rna.properties["type"].enum_items[kind].name
            plan.notes.append((obj.name, f"its {title} field is not simulated (the solver has Force, Wind, Vortex, "
                                         "Turbulence, Drag and Harmonic); it is left out"))
            continue
        if not obj.field.apply_to_location:
            continue  # Blender applies no force to a particle's location: nothing to simulate
        left_out = _falloff_left_out(obj.field)
        if left_out:
            notes.setdefault(f"its falloff ({left_out}) is not simulated: it acts at full strength at every distance")
        if is_animated(obj):
            notes.setdefault("it is animated; the simulation uses its place and settings at the first frame")
        if obj.field.use_absorption:
            notes.setdefault("its absorption by colliders is left out")
        weights = [float(weight(obj)) for weight in groups]
        on_bodies = float(bodies(obj)) if bodies is not None else 0.0
        on_ropes = float(ropes(obj)) if ropes is not None else 0.0
        for w in sorted(set(weights) | {on_bodies, on_ropes}):
            if w == 0.0:
                continue
            acted = [g for g, gw in enumerate(weights) if gw == w]
            named = dict(groups=None if len(acted) == len(groups) else acted,
                         bodies=None if on_bodies == w else (), ropes=None if on_ropes == w else ())
            for name, kwargs in _merge_drags(field_forces(obj, w, notes.setdefault)):
                plan.forces.append((name, dict(kwargs, **named)))
        plan.notes.extend((obj.name, message) for message in notes)
    return plan


def describe(plan_note):
    """A note as Check Scene and Simulate report it: "Force field 'Wind': its noise (0.5: ...) is left out"."""
    name, message = plan_note
    return f"force field '{name}': {message}"
