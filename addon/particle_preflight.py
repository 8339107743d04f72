"""Check Scene for particle groups, soft bodies and force fields: what would stop Simulate, and what it leaves out.

Reads the groups as the conversion does (addon/particle_groups.py) and plans the fields' forces as it does
(addon/force_fields.py), so that every note the conversion would make is listed here first, and runs the solver's
own checks of the groups (quadric_solver/particles/groups.py, plain numpy), so that its errors come before any compile.
Returns (kind, message, objects, severity) tuples; preflight.py makes them Problems.
"""
import math

from . import force_fields, particle_groups


def _error(kind, message, name):
    return (kind, message, (name,) if name else (), 'ERROR')


def _warning(kind, message, names=()):
    return (kind, message, tuple(names), 'WARNING')


def _setting_errors(obj):
    """Settings that must be positive, naming the object and the field."""
    s = obj.quadric.particles
    found = []
    if obj.quadric.role == 'SOFT_BODY':
        for field, unit in (("total_mass", "kg"), ("stiffness", "N/m")):
            value = getattr(s, field)
            if not (math.isfinite(value) and value > 0.0):
                found.append(f"'{obj.name}': {field} must be positive, got {value:g} {unit}")
    elif s.source != 'PARTICLE_SYSTEM' and not (math.isfinite(s.mass) and s.mass > 0.0):
        found.append(f"'{obj.name}': mass must be positive, got {s.mass:g} kg")
    return found


def _solver_check(spec, obj):
    """The solver's own check of a group's arguments (the FieldError it would raise), '' when it passes."""
    from quadric_solver.particles.groups import check_mass_spring, check_particles
    from quadric_solver.validate import FieldError

    s = obj.quadric.particles
    try:
        if spec.kind == 'SOFT_BODY':
            check_mass_spring(f"soft body '{spec.object_name}'", spec.positions, spec.edges, spec.mass,
                              s.stiffness, s.damping, s.bending, spec.pinned, None, spec.radius)
        else:
            check_particles(f"particles '{spec.object_name}'", spec.positions, spec.velocities, spec.mass,
                            spec.radius, spec.pinned, bool(s.particle_collisions), spec.birth_times,
                            spec.lifetimes)
    except FieldError as exc:
        return str(exc)
    return ""


def _stability(spec, obj, dt, fps, integrator):
    """A warning when the soft body's springs may be too stiff for the explicit step ('' otherwise; never with
    the implicit integrator, which is stable at any step)."""
    s = obj.quadric.particles
    if integrator == 'IMPLICIT_EULER':
        return ""
    limit = particle_groups.step_limit(spec, float(s.stiffness), float(s.damping), float(s.bending))
    if dt < limit:
        return ""
    needed = math.ceil(1.0 / (fps * limit))
    return (f"'{obj.name}': its springs may diverge at this step ({dt * 1000:.3g} ms; the explicit step stays "
            f"stable under {limit * 1000:.3g} ms for its stiffness {s.stiffness:g} N/m, damping {s.damping:g} N s/m "
            f"and mass): use {needed} substeps or more, lower the stiffness, or choose the Implicit Euler "
            f"particle integrator")


def check(context, scene, by_role, dt, fps):
    """Problems of the scene's particle groups, soft bodies and force fields, as (kind, message, objects,
    severity) tuples; call at the first frame of the range."""
    groups = by_role['PARTICLES'] + by_role['SOFT_BODY']
    found = []
    specs = []
    if groups:
        depsgraph = context.evaluated_depsgraph_get()
    for obj in groups:
        errors = _setting_errors(obj)
        try:
            spec = particle_groups.read_group(obj, depsgraph, scene, scene.frame_current)
        except particle_groups.GroupError as exc:
            errors.append(str(exc))
            spec = None
        if spec is not None and not errors:
            problem = _solver_check(spec, obj)
            if problem:
                errors.append(problem)
        found += [_error('PARTICLES', message, obj.name) for message in errors]
        if spec is None:
            continue
        specs.append(spec)
        found += [_warning('PARTICLES', f"'{obj.name}': {note}", (obj.name,)) for note in spec.notes]
        if spec.kind == 'SOFT_BODY' and not errors:
            unstable = _stability(spec, obj, dt, fps, scene.quadric.particle_integrator)
            if unstable:
                found.append(_warning('PARTICLES', unstable, (obj.name,)))
    if groups and by_role['ROPE']:
        found.append(_warning('SCENE', "particles and soft bodies collide with colliders and Quadric bodies, not "
                                       "with ropes: ropes pass through them (and they through ropes)"))
    fields = force_fields.scene_fields(scene, context.view_layer)
    if fields and (groups or by_role['BODY'] or by_role['ROPE']):
        plan = force_fields.plan_forces(fields, [spec.field_weight for spec in specs],
                                        force_fields.body_weight(scene) if by_role['BODY'] else None,
                                        force_fields.rope_weight if by_role['ROPE'] else None)
        found += [_warning('FIELD', force_fields.describe(note), (note[0],)) for note in plan.notes]
    return found
