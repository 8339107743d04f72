"""The substep: eight named phases, each a function of (model, state, ws, settings, h), timed at its call site.

The narrow phase and position correction also take the bodies' shapes, the narrow phase the mesh colliders
(Simulation gives both in every scene it runs here; None is also accepted, as numba's branch pruning allows).

1. forces               forces.py: gravity, damping, force objects (particles/targets.py), kinematic
                        tracks; body frames and bounding boxes
2. broad_phase          collision/broadphase.py: hashed grid -> candidate pairs (reused within a skin)
3. narrow_phase         collision/driver.py, narrowphase.py: pre-tests, exact depth and normal -> contacts
4. contact_solve        contact/: solve order, prepare, warm start, velocity sweeps, restitution,
                        split impulses, store impulses
5. ropes                ropes/: rope contacts, internal constraints, pins and attachments
6. integrate            integrate.py, contact/restitution.py: poses, the rest of bounces that began
                        from a gap; non-finite check
7. position_correction  contact/position_correction.py: overlaps measured again with the new poses;
                        those the split impulses missed by more than the slop pushed apart in position
8. particles            particles/: force objects, the chosen ODE integrator, collisions with the static
                        colliders, mesh colliders, bodies (two-way) and between particles (scenes with particle
                        groups or mass-spring bodies)

A whole frame's substeps run inside compiled code; Python sees the arrays once
per frame. Phase times are accumulated with a monotonic clock read through a
tiny object-mode block (about a microsecond per read).
"""
import math
import time
import warnings
from typing import NamedTuple

import numba
from numba import njit
from numba.core.errors import NumbaWarning

from .collision.broadphase import update_pairs
from .collision.driver import collide
from .contact.solve_order import assign_slabs, gather_velocities, order_contacts, scatter_velocities
from .contact.position_correction import correct_positions
from .contact.prepare import prepare_contacts
from .contact.restitution import apply_restitution, finish_rebounds
from .contact.split_impulses import solve_split_impulses
from .contact.velocity import solve_velocities
from .contact.warm_start import scale_cached_impulses, store_impulses, warm_start
from .forces import predict_velocities, restore_velocities, update_body_frames
from .integrate import first_non_finite_body, integrate_positions
from .math3d import JIT, PARALLEL_CHUNKS, norm3
from .particles.substep import particle_substep
from .particles.targets import push_bodies
from .ropes.contacts import rope_collide
from .ropes.kernels import first_non_finite_rope, rope_substep
from .shapes.kinds import ELLIPSOID

# The phase clock's one-line object-mode block holds the GIL for about a microsecond per read;
# numba warns that such code cannot run in parallel, which is expected and harmless here.
warnings.filterwarnings("ignore", message=".*object mode won.t allow parallel execution",
                        category=NumbaWarning)

PHASES = ("forces", "broad_phase", "narrow_phase", "contact_solve", "ropes", "integrate", "position_correction",
          "particles")
# indices of ws.phase_seconds, in the order of PHASES
FORCES, BROAD_PHASE, NARROW_PHASE, CONTACT_SOLVE, ROPES, INTEGRATE, POSITION_CORRECTION, PARTICLES = range(len(PHASES))
# slots of ws.counters (int64), written by the compiled substeps and read by Simulation
PAIRS = 0              # candidate pairs of the last substep
CONTACTS = 1           # contacts of the last substep
VELOCITY_SWEEPS = 2    # velocity sweeps the last substep ran
DIVERGED_BODY = 3      # the first non-finite body (-1 - rope for a rope) after DIVERGED
SUBSTEPS_DONE = 4      # substeps completed in the last call (the state they left, after an overflow)
SPLIT_IMPULSE_SWEEPS = 5  # split-impulse sweeps the last substep ran
CORRECTION_SWEEPS = 6  # position-correction sweeps the last substep ran (0: none needed)
BOUNCES = 7            # contacts of the last substep that bounce (0: restitution has nothing to do)
PARTS = 8              # parts of the substep under way (0 between substeps); kept over an overflow to resume it
PARTS_DONE = 9         # parts of that substep completed
PARTS_RUN = 10         # parts run in the last call, all substeps (the substeps themselves where none was split)

OK, PAIR_OVERFLOW, CONTACT_OVERFLOW, DIVERGED = 0, 1, 2, 3
PARTICLE_DIVERGED = 4  # a particle became non-finite: its group and index in particle_state.diverged


class Settings(NamedTuple):
    velocity_sweeps: int       # phase 4's velocity sweeps per substep, at most
    split_impulse_sweeps: int  # phase 4's split-impulse sweeps per substep, at most
    margin: float
    pair_skin: float
    baumgarte: float
    slop: float
    restitution_threshold: float
    linear_damping: float
    angular_damping: float
    threads: int               # slabs of the contact solve that run in parallel (see contact/solve_order.py)
    sweep_tolerance: float     # velocity sweeps stop once none moves a body this far more in a substep (m)
    position_sweep_tolerance: float  # the same for the split impulses' and the correction's sweeps
    position_correction: bool  # phase 7 on or off
    correction_sweeps: int     # phase 7's sweeps per substep, at most
    serial_below: int          # a parallel loop over fewer bodies or contacts runs in the calling thread (parallel.py)
    max_turn: float            # radians a body in contact may turn in one part of a substep (0: never split)
    max_parts: int             # parts a substep is cut into, at most


@njit(cache=True, nogil=True)
def _clock():
    with numba.objmode(now="float64"):
        now = time.perf_counter()
    return now


# ---------------------------------------------------------------------------------------------------------
# The phases. Each takes (model, state, ws, settings, h) and returns OK or a stop code; the rope and particle
# phases also take the rope (particle) model and state, which exist only in scenes with ropes (particles). A
# phase that stops on an overflow has changed nothing but the velocity prediction, and undoes that, so the
# caller can grow the buffers and go on from the state at the start of the substep.

@njit(**JIT)
def forces(model, state, ws, settings, h, targets):
    """Phase 1 (forces.py): gravity, damping, force objects (``targets``, particles/targets.py) and kinematic
    tracks into the velocities; body frames, bounding boxes."""
    predict_velocities(model, state, h, settings.linear_damping, settings.angular_damping, ws.start_linear,
                       ws.start_angular)
    if targets.on_bodies:
        push_bodies(model, state, targets, h)
    update_body_frames(model, state, ws, settings.margin, h, model.n_bodies < settings.serial_below)
    return OK


@njit(**JIT)
def broad_phase(model, state, ws, settings, h):
    """Phase 2: candidate pairs from the hashed grid into ws.pair_a/pair_b; their count in ws.counters[PAIRS]."""
    serial = model.n_bodies < settings.serial_below
    n_pairs = update_pairs(state.position, ws.half_extent, model.dynamic, settings.pair_skin, ws,
                           1 if serial else PARALLEL_CHUNKS)
    if n_pairs < 0:
        restore_velocities(state, ws.start_linear, ws.start_angular)
        return PAIR_OVERFLOW
    ws.counters[PAIRS] = n_pairs
    return OK


@njit(**JIT)
def narrow_phase(model, state, ws, settings, h, shapes, meshes):
    """Phase 3: depth, normal and point of each touching pair into ws.contact_*; the count in ws.counters[CONTACTS].

    ``shapes``: the bodies' BodyShapes and ``meshes`` the MeshColliders (both may be None: ellipsoids only).
    """
    n_pairs = ws.counters[PAIRS]
    n_contacts = collide(model, state, ws, n_pairs, n_pairs < settings.serial_below, h, shapes, meshes)
    if n_contacts < 0:
        restore_velocities(state, ws.start_linear, ws.start_angular)
        return CONTACT_OVERFLOW
    ws.counters[CONTACTS] = n_contacts
    return OK


@njit(**JIT)
def contact_solve(model, state, ws, settings, h):
    """Phase 4: solve order, prepare, warm start, velocity sweeps, restitution, split impulses, store impulses.

    The velocities come out in state; the split impulses' pseudo-velocities in ws.pseudo_linear/angular.
    """
    n_contacts = ws.counters[CONTACTS]
    serial = n_contacts < settings.serial_below
    slabs = settings.threads
    assign_slabs(state.position, model.dynamic, slabs, ws)
    order_contacts(ws.contact_a, ws.contact_b, ws.contact_key, n_contacts, model.dynamic, slabs, state.cache_key,
                   state.cache_count[0], ws, serial)
    ws.counters[BOUNCES] = prepare_contacts(
        ws.slot_contact, ws.contact_a, ws.contact_b, ws.contact_normal, ws.contact_point, ws.contact_depth,
        ws.contact_row, ws.contact_response, ws.contact_aux, ws.slot_depth, ws.slot_bounce, ws.slot_rebound,
        state.position, state.linear_velocity, state.angular_velocity, model.inv_mass, ws.inv_inertia_world,
        model.body_material, model.static_material, model.material_friction, model.material_rolling,
        model.material_spinning, model.material_restitution, n_contacts, h, settings.restitution_threshold, serial)
    gather_velocities(ws.solve_origin, state.linear_velocity, state.angular_velocity, ws.solve_linear,
                      ws.solve_angular)
    warm_start(ws.slab_start, slabs, ws.slot_a, ws.slot_b, ws.slot_cache, ws.contact_row, ws.contact_response,
               ws.contact_aux, ws.contact_impulse, ws.contact_twist_impulse, state.cache_impulse, ws.solve_linear,
               ws.solve_angular, serial)
    ws.counters[VELOCITY_SWEEPS] = solve_velocities(
        ws.slab_start, slabs, ws.slot_a, ws.slot_b, ws.contact_row, ws.contact_response, ws.contact_aux,
        ws.contact_impulse, ws.contact_twist_impulse, ws.solve_linear, ws.solve_angular, settings.velocity_sweeps,
        settings.sweep_tolerance / h, ws.sweep_change, serial)
    if ws.counters[BOUNCES] > 0:
        apply_restitution(ws.slab_start, slabs, ws.slot_a, ws.slot_b, ws.contact_row, ws.contact_response,
                          ws.slot_bounce, ws.slot_rebound, ws.contact_impulse, ws.solve_linear, ws.solve_angular,
                          serial)
    ws.counters[SPLIT_IMPULSE_SWEEPS] = solve_split_impulses(
        ws.slab_start, slabs, ws.slot_a, ws.slot_b, ws.solve_origin, ws.contact_row, ws.contact_response, ws.slot_depth,
        ws.slot_push, ws.solve_linear, ws.solve_angular, ws.solve_pseudo_linear, ws.solve_pseudo_angular, ws.shape,
        model.swing_arm, n_contacts, h, settings.baumgarte, settings.slop, settings.split_impulse_sweeps,
        settings.position_sweep_tolerance / h, ws.sweep_change, ws.push_slot, ws.gap_slot, ws.push_count, ws.push_row,
        ws.push_body, ws.body_pushed, ws.body_level, serial)
    scatter_velocities(ws.solve_origin, ws.solve_linear, ws.solve_angular, state.linear_velocity,
                       state.angular_velocity)
    scatter_velocities(ws.solve_origin, ws.solve_pseudo_linear, ws.solve_pseudo_angular, ws.pseudo_linear,
                       ws.pseudo_angular)
    store_impulses(ws.contact_slot, ws.contact_key, ws.contact_normal, ws.contact_row, ws.contact_impulse,
                   ws.contact_twist_impulse, ws.contact_local, state.cache_key, state.cache_normal, state.cache_impulse,
                   state.cache_local, state.cache_count, n_contacts, serial)
    return OK


@njit(**JIT)
def ropes(model, state, ws, settings, h, rope_model, rope_state, targets):
    """Phase 5: rope contacts, then the ropes' internal constraints, pins and attachments, two-way with bodies.

    Returns OK, or DIVERGED with -1 - rope in ws.counters[DIVERGED_BODY].
    """
    rope_collide(rope_model, rope_state, model, state.position, state.orientation, ws.rotation, h)
    rope_substep(rope_model, rope_state, h, model.gravity, state.position, state.orientation,
                 state.linear_velocity, state.angular_velocity, model.inv_mass, model.inv_inertia_local, targets,
                 state.time[0])
    bad_rope = first_non_finite_rope(rope_model, rope_state)
    if bad_rope >= 0:
        ws.counters[DIVERGED_BODY] = -1 - bad_rope
        return DIVERGED
    return OK


@njit(**JIT)
def integrate(model, state, ws, settings, h):
    """Phase 6: poses from the velocities, the rest of bounces that began from a gap, the clock.

    Returns OK, or DIVERGED with the first non-finite body in ws.counters[DIVERGED_BODY].
    """
    integrate_positions(model, state, ws, h, model.n_bodies < settings.serial_below)
    if ws.counters[BOUNCES] > 0:
        finish_rebounds(ws.slot_contact, ws.contact_a, ws.contact_b, ws.contact_point, ws.contact_row, ws.slot_rebound,
                        ws.counters[CONTACTS], ws.start_position, ws.rotation, state.position, state.orientation,
                        state.linear_velocity, state.angular_velocity, model.inv_mass, model.inv_inertia_local,
                        model.mass, model.inertia_local, ws.body_energy)
    state.time[0] += h
    bad = first_non_finite_body(state)
    if bad >= 0:
        ws.counters[DIVERGED_BODY] = bad
        return DIVERGED
    return OK


@njit(**JIT)
def position_correction(model, state, ws, settings, h, shapes):
    """Phase 7: overlaps measured again with the new poses; those the split impulses missed pushed apart in position.

    It runs after every substep with contacts, also where the split impulses stopped early: they converge on
    a first-order prediction, which a fast-spinning box's corner outruns (docs/design-notes.md).
    """
    ws.counters[CORRECTION_SWEEPS] = 0
    if not (settings.position_correction and ws.counters[CONTACTS] > 0):
        return OK
    # the correction's sweeps stop once none moves a body a tenth of the slop more (ten times the
    # velocity sweeps' test): the finer test doubled its time for the same peak overlap (docs/design-notes.md)
    ws.counters[CORRECTION_SWEEPS] = correct_positions(
        ws.slab_start, settings.threads, ws.slot_a, ws.slot_b, ws.solve_origin, ws.contact_slot, ws.contact_row,
        ws.contact_response, ws.slot_depth, ws.slot_push, ws.start_position, ws.start_orientation, ws.body_travel,
        state.position, state.orientation, ws.solve_pseudo_linear, ws.solve_pseudo_angular, ws.shape, model.semi_axes,
        ws.counters[CONTACTS], h, settings.baumgarte, settings.slop, settings.correction_sweeps,
        10.0 * settings.position_sweep_tolerance / h, ws.sweep_change, ws.push_slot, ws.gap_slot, ws.push_count,
        ws.push_row, ws.push_body, ws.body_pushed, ws.body_level, ws.level_start, ws.level_adjacent, ws.level_queue,
        ws.counters[CONTACTS] < settings.serial_below, shapes)
    return OK


@njit(**JIT)
def particles(model, state, ws, settings, h, particle_model, particle_state, shapes, meshes):
    """Phase 8: particle groups and mass-spring bodies: forces, the chosen integrator, contacts.

    They feel the static and mesh colliders and the bodies where the body phases left them, and give the dynamic
    bodies their share of the impulses as velocity, which the next substep's body phases take up; not the ropes.
    ``state`` is the bodies' BodyState, or None in scenes of particles alone. Returns OK, or PARTICLE_DIVERGED
    with the group and particle in particle_state.diverged.
    """
    if particle_substep(model, particle_model, particle_state, h, settings.restitution_threshold, state, shapes,
                        meshes):
        return PARTICLE_DIVERGED
    return OK


# ---------------------------------------------------------------------------------------------------------
# The substep loop: the phases in order, each timed at its call site.

@njit(**JIT)
def _detection_phases(model, state, ws, settings, h, shapes, meshes, targets):
    """Phases 1 to 3, each timed into ws.phase_seconds. Returns OK or the first stop code."""
    times = ws.phase_seconds
    t0 = _clock()
    status = forces(model, state, ws, settings, h, targets)
    t1 = _clock()
    times[FORCES] += t1 - t0
    if status != OK:
        return status
    status = broad_phase(model, state, ws, settings, h)
    t2 = _clock()
    times[BROAD_PHASE] += t2 - t1
    if status != OK:
        return status
    status = narrow_phase(model, state, ws, settings, h, shapes, meshes)
    times[NARROW_PHASE] += _clock() - t2
    return status


@njit(**JIT)
def _position_phases(model, state, ws, settings, h, shapes):
    """Phases 6 and 7, each timed into ws.phase_seconds. Returns OK or DIVERGED."""
    times = ws.phase_seconds
    t5 = _clock()
    status = integrate(model, state, ws, settings, h)
    t6 = _clock()
    times[INTEGRATE] += t6 - t5
    if status != OK:
        return status
    status = position_correction(model, state, ws, settings, h, shapes)
    times[POSITION_CORRECTION] += _clock() - t6
    return status


@njit(**JIT)
def record_step_statistics(ws):
    """ws.step_stats = deepest contact of the last substep (0 if none overlaps), kinetic energy.

    The energy sums ws.body_energy, which the integrate phase fills.
    """
    deepest = 0.0
    for c in range(ws.counters[CONTACTS]):
        deepest = max(deepest, ws.contact_depth[c])
    ws.step_stats[0] = deepest
    ws.step_stats[1] = ws.body_energy.sum()


@njit(**JIT)
def split_parts(model, state, ws, settings, h, shapes):
    """Parts to cut this substep into, from the contacts its narrow phase found: enough that no body in contact
    turns more than settings.max_turn in one.

    The contact solve holds each contact's normal and points for the whole substep, a first-order prediction
    that a fast-spinning box's corner outruns (a box at 34 rad/s turns 0.14 rad in 1/240 s and ended that
    substep 11% of its half extent deep). An impact spins a body up within the substep, to about the pair's
    closing speed over the smaller bounding radius, so that counts as a spin too. Bodies in flight are left
    alone, their motion needs no cutting, and so are contacts of ellipsoids alone (with static colliders or
    each other): their contact points move smoothly as they turn, and their piles stay under 1% without.
    ``shapes``: the BodyShapes, or None (all ellipsoids).
    """
    if settings.max_turn <= 0.0 or settings.max_parts <= 1 or shapes is None:
        return 1
    fastest = 0.0
    linear, angular, radius = state.linear_velocity, state.angular_velocity, model.bounding_radius
    kind = shapes.kind
    for c in range(ws.counters[CONTACTS]):
        a, b = ws.contact_a[c], ws.contact_b[c]
        if kind[b] == ELLIPSOID and (a < 0 or kind[a] == ELLIPSOID):
            continue
        n = ws.contact_normal[c]
        closing = -(linear[b, 0] * n[0] + linear[b, 1] * n[1] + linear[b, 2] * n[2])  # normal from a to b
        smallest = radius[b]
        fastest = max(fastest, norm3(angular[b, 0], angular[b, 1], angular[b, 2]))
        if a >= 0:
            closing += linear[a, 0] * n[0] + linear[a, 1] * n[1] + linear[a, 2] * n[2]
            smallest = min(smallest, radius[a])
            fastest = max(fastest, norm3(angular[a, 0], angular[a, 1], angular[a, 2]))
        fastest = max(fastest, closing / smallest)
    turn = fastest * h / settings.max_turn
    if not turn > 1.0:  # also a non-finite spin: the integrate phase reports it
        return 1
    return min(math.ceil(turn), settings.max_parts)


@njit(**JIT)
def _response_phases(model, state, ws, settings, h, targets, rope_model, rope_state, shapes):
    """Phases 4 to 7 of a substep (or part) of length h whose contacts phases 1 to 3 found. Returns OK or a
    stop code."""
    t3 = _clock()
    status = contact_solve(model, state, ws, settings, h)
    ws.phase_seconds[CONTACT_SOLVE] += _clock() - t3
    if status != OK:
        return status
    if rope_model is not None:
        t4 = _clock()
        status = ropes(model, state, ws, settings, h, rope_model, rope_state, targets)
        ws.phase_seconds[ROPES] += _clock() - t4
        if status != OK:
            return status
    return _position_phases(model, state, ws, settings, h, shapes)


@njit(**JIT)
def run_substeps(model, state, ws, settings, h, substeps, targets, rope_model=None, rope_state=None,
                 particle_model=None, particle_state=None, shapes=None, meshes=None):
    """Advance a scene with bodies ``substeps`` substeps of length h. Returns OK or an overflow/divergence code.

    A substep whose contacts spin fast runs as equal parts (split_parts): its first part solves the contacts
    the whole substep's narrow phase found (a wider reach than the part needs), with the velocity prediction
    redone for the part; the others are substeps of their own. The warm start is scaled to the part's length
    and back. Particles (phase 8) take the whole substep once, after its parts.

    ws.counters[SUBSTEPS_DONE] holds the substeps completed; after an overflow the state is the one they left,
    and the parts of a split substep already done (ws.counters[PARTS], [PARTS_DONE]), which the next call,
    given a workspace with those two counters, finishes first.

    A scene without ropes (or particles) passes None for their model and state: numba prunes a branch on
    an argument that is None before it compiles, so such a scene never compiles the rope (particle) kernels.
    ``shapes`` (model.py's BodyShapes) and ``meshes`` (model.py's MeshColliders, empty in scenes without mesh
    colliders) are given in scenes of ellipsoids only and in scenes without bodies too, so that all share one
    compiled narrow phase (None still compiles, for kernels called directly). ``targets`` (particles/targets.py),
    the force objects on bodies and ropes, is always given, empty where there are none.
    """
    counters = ws.counters
    counters[PARTS_RUN] = 0
    for substep in range(substeps):
        counters[SUBSTEPS_DONE] = substep
        if counters[PARTS] == 0:  # not resuming a split substep that an overflow stopped
            status = _detection_phases(model, state, ws, settings, h, shapes, meshes, targets)
            if status != OK:
                return status
            parts = split_parts(model, state, ws, settings, h, shapes)
            if parts > 1:
                scale_cached_impulses(state.cache_impulse, state.cache_count, 1.0 / parts)
                t0 = _clock()
                restore_velocities(state, ws.start_linear, ws.start_angular)
                forces(model, state, ws, settings, h / parts, targets)
                ws.phase_seconds[FORCES] += _clock() - t0
            counters[PARTS] = parts
            counters[PARTS_DONE] = 0
            status = _response_phases(model, state, ws, settings, h / parts, targets, rope_model, rope_state, shapes)
            if status != OK:
                return status
            counters[PARTS_DONE] = 1
            counters[PARTS_RUN] += 1
        parts = counters[PARTS]
        while counters[PARTS_DONE] < parts:
            part = h / parts
            status = _detection_phases(model, state, ws, settings, part, shapes, meshes, targets)
            if status != OK:
                return status
            status = _response_phases(model, state, ws, settings, part, targets, rope_model, rope_state, shapes)
            if status != OK:
                return status
            counters[PARTS_DONE] += 1
            counters[PARTS_RUN] += 1
        if parts > 1:
            scale_cached_impulses(state.cache_impulse, state.cache_count, float(parts))
        counters[PARTS] = 0
        if particle_model is not None:  # once a substep, split or not: particles run as they would alone
            status = _timed_particles(model, state, ws, settings, h, particle_model, particle_state, shapes, meshes)
            if status != OK:
                return status
    counters[SUBSTEPS_DONE] = substeps
    record_step_statistics(ws)
    return OK


@njit(**JIT)
def _timed_particles(model, state, ws, settings, h, particle_model, particle_state, shapes, meshes):
    """Phase 8, timed into ws.phase_seconds."""
    t7 = _clock()
    status = particles(model, state, ws, settings, h, particle_model, particle_state, shapes, meshes)
    ws.phase_seconds[PARTICLES] += _clock() - t7
    return status


@njit(**JIT)
def run_particle_substeps(model, state, ws, settings, h, substeps, particle_model, particle_state, shapes=None,
                          meshes=None):
    """Advance a scene of particles only (no bodies, no ropes): phase 8 and the clock.

    Kept apart so that such scenes compile neither the body nor the rope kernels, nor the particles' contacts
    with bodies. ``shapes`` and ``meshes`` hold the mesh colliders' triangles, None where there are none.
    """
    for substep in range(substeps):
        ws.counters[SUBSTEPS_DONE] = substep
        status = _timed_particles(model, None, ws, settings, h, particle_model, particle_state, shapes, meshes)
        if status != OK:
            return status
        state.time[0] += h
    ws.counters[SUBSTEPS_DONE] = substeps
    ws.counters[PARTS_RUN] = substeps
    record_step_statistics(ws)
    return OK
