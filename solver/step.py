"""The substep: a fixed sequence of named, timed phases, compiled as one loop.

1. forces      gravity, damping, kinematic tracks; body frames and AABBs
2. broad_phase uniform hashed grid -> candidate pairs (reused while bodies stay within a skin)
3. narrow_phase pre-tests, exact depth and normal -> contacts
4. contact_solve solve order (slabs, colours), prepare, warm start, sequential impulses,
                split impulses, store
5. ropes       (ROPE HOOK) rope internal constraints, pins, attachments, contacts
6. integrate   positions and orientations, the rest of bounces that began from a gap;
               non-finite check
7. position_correction  overlaps measured again with the new poses; the ones the split
                impulses missed by more than the slop are pushed apart in position only

A whole frame's substeps run inside compiled code; Python sees the arrays once
per frame. Phase times are accumulated with a monotonic clock read through a
tiny object-mode block (about a microsecond per read).
"""
import time
import warnings
from typing import NamedTuple

import numba
from numba import njit
from numba.core.errors import NumbaWarning

from .collision.broadphase import update_pairs
from .collision.driver import collide
from .contact.position_correction import correct_positions
from .contact.prepare import prepare_contacts
from .contact.restitution import apply_restitution, finish_rebounds
from .contact.split_impulses import solve_penetration
from .contact.velocity import solve_velocities
from .contact.warm_start import store_impulses, warm_start
from .integrate import (first_non_finite_body, integrate_positions, predict_velocities, restore_velocities,
                        update_body_frames)
from .math3d import JIT, PARALLEL_CHUNKS
from .ropes.contacts import rope_collide
from .ropes.kernels import first_non_finite_rope, rope_substep
from .contact.solve_order import assign_slabs, gather_velocities, order_contacts, scatter_velocities

# The phase clock's one-line object-mode block holds the GIL for about a microsecond per read;
# numba warns that such code cannot run in parallel, which is expected and harmless here.
warnings.filterwarnings("ignore", message=".*object mode won.t allow parallel execution",
                        category=NumbaWarning)

PHASES = ("forces", "broad_phase", "narrow_phase", "contact_solve", "ropes", "integrate", "position_correction")
# indices of ws.phase_seconds, in the order of PHASES
FORCES, BROAD_PHASE, NARROW_PHASE, CONTACT_SOLVE, ROPES, INTEGRATE, POSITION_CORRECTION = range(len(PHASES))
# slots of ws.counters (int64), written by the compiled substeps and read by Simulation
PAIRS = 0              # candidate pairs of the last substep
CONTACTS = 1           # contacts of the last substep
VELOCITY_SWEEPS = 2    # velocity sweeps the last substep ran
DIVERGED_BODY = 3      # the first non-finite body (-1 - rope for a rope) after DIVERGED
SUBSTEPS_DONE = 4      # substeps completed in the last call (the state they left, after an overflow)
PUSH_SWEEPS = 5        # split-impulse sweeps the last substep ran
CORRECTION_SWEEPS = 6  # position-correction sweeps the last substep ran (0: none needed)
BOUNCES = 7            # contacts of the last substep that bounce (0: restitution has nothing to do)

OK, PAIR_OVERFLOW, CONTACT_OVERFLOW, DIVERGED = 0, 1, 2, 3


class Settings(NamedTuple):
    iterations: int
    position_iterations: int
    margin: float
    pair_skin: float
    baumgarte: float
    slop: float
    restitution_threshold: float
    linear_damping: float
    angular_damping: float
    threads: int              # slabs of the contact solve that run in parallel (see solve_order)
    sweep_tolerance: float    # velocity sweeps stop once none moves a body this far more in a substep (m)
    position_correction: bool  # phase 7 on or off
    correction_iterations: int  # its sweeps, at most
    serial_below: int         # a parallel loop over fewer bodies or contacts runs in the calling thread (parallel.py)


@njit(cache=True, nogil=True)
def _clock():
    with numba.objmode(now="float64"):
        now = time.perf_counter()
    return now


@njit(**JIT)
def _body_phases(model, state, ws, settings, h, dynamic):
    """Phases 1 to 4 for the bodies. Returns OK or an overflow code; times go to ws.phase_seconds[FORCES:ROPES].

    An overflow comes before anything but the velocity prediction has changed
    the state; that is undone, so the state is still the one at the start of
    the substep and the caller can grow the buffers and carry on from there.
    """
    times = ws.phase_seconds
    serial = model.n_bodies < settings.serial_below
    t0 = _clock()
    predict_velocities(model, state, h, settings.linear_damping, settings.angular_damping, ws.start_linear,
                       ws.start_angular)
    update_body_frames(model, state, ws, settings.margin, h, serial)
    t1 = _clock()
    n_pairs = update_pairs(state.position, ws.half_extent, dynamic, settings.pair_skin, ws,
                           1 if serial else PARALLEL_CHUNKS)
    if n_pairs < 0:
        restore_velocities(state, ws.start_linear, ws.start_angular)
        return PAIR_OVERFLOW
    t2 = _clock()
    n_contacts = collide(model, state, ws, n_pairs, n_pairs < settings.serial_below)
    if n_contacts < 0:
        restore_velocities(state, ws.start_linear, ws.start_angular)
        return CONTACT_OVERFLOW
    t3 = _clock()
    serial = n_contacts < settings.serial_below
    slabs = settings.threads
    assign_slabs(state.position, dynamic, slabs, ws)
    order_contacts(ws.contact_a, ws.contact_b, ws.contact_key, n_contacts, dynamic, slabs, state.cache_key,
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
        ws.contact_impulse, ws.contact_twist_impulse, ws.solve_linear, ws.solve_angular, settings.iterations,
        settings.sweep_tolerance / h, ws.sweep_change, serial)
    if ws.counters[BOUNCES] > 0:
        apply_restitution(ws.slab_start, slabs, ws.slot_a, ws.slot_b, ws.contact_row, ws.contact_response,
                          ws.slot_bounce, ws.slot_rebound, ws.contact_impulse, ws.solve_linear, ws.solve_angular,
                          serial)
    ws.counters[PUSH_SWEEPS] = solve_penetration(
        ws.slab_start, slabs, ws.slot_a, ws.slot_b, ws.solve_origin, ws.contact_row, ws.contact_response, ws.slot_depth,
        ws.slot_push, ws.solve_linear, ws.solve_angular, ws.solve_pseudo_linear, ws.solve_pseudo_angular, ws.shape,
        model.swing_arm, n_contacts, h, settings.baumgarte, settings.slop, settings.position_iterations,
        settings.sweep_tolerance / h, ws.sweep_change, ws.push_slot, ws.gap_slot, ws.push_count, ws.push_row,
        ws.push_body, ws.body_pushed, ws.body_level, serial)
    scatter_velocities(ws.solve_origin, ws.solve_linear, ws.solve_angular, state.linear_velocity,
                       state.angular_velocity)
    scatter_velocities(ws.solve_origin, ws.solve_pseudo_linear, ws.solve_pseudo_angular, ws.pseudo_linear,
                       ws.pseudo_angular)
    store_impulses(ws.contact_slot, ws.contact_key, ws.contact_normal, ws.contact_row, ws.contact_impulse,
                   ws.contact_twist_impulse, state.cache_key, state.cache_normal, state.cache_impulse,
                   state.cache_count, n_contacts, serial)
    t4 = _clock()
    times[FORCES] += t1 - t0
    times[BROAD_PHASE] += t2 - t1
    times[NARROW_PHASE] += t3 - t2
    times[CONTACT_SOLVE] += t4 - t3
    ws.counters[PAIRS] = n_pairs
    ws.counters[CONTACTS] = n_contacts
    return OK


@njit(**JIT)
def _integrate_phase(model, state, ws, settings, h):
    """Phases 6 and 7. Returns OK, or DIVERGED with the body in ws.counters[DIVERGED_BODY]."""
    t5 = _clock()
    integrate_positions(model, state, ws, h, model.n_bodies < settings.serial_below)
    if ws.counters[BOUNCES] > 0:
        finish_rebounds(ws.slot_contact, ws.contact_a, ws.contact_b, ws.contact_point, ws.contact_row, ws.slot_rebound,
                        ws.counters[CONTACTS], ws.start_position, ws.rotation, state.position, state.orientation,
                        state.linear_velocity, state.angular_velocity, model.inv_mass, model.inv_inertia_local,
                        model.mass, model.inertia_local, ws.body_energy)
    state.time[0] += h
    bad = first_non_finite_body(state)
    t6 = _clock()
    ws.phase_seconds[INTEGRATE] += t6 - t5
    if bad >= 0:
        ws.counters[DIVERGED_BODY] = bad
        return DIVERGED
    ws.counters[CORRECTION_SWEEPS] = 0
    # the split impulses stop early once converged; then their aim holds and nothing is left to correct.
    # The correction's sweeps stop once none moves a body a tenth of the slop more (ten times the velocity
    # sweeps' test): in the 1,000 pile (measured when the correction was first written) the finer test took
    # about twice as long (0.05 s against 0.03 s over the 2 s) for the same peak overlap (0.83% against 0.84%).
    if (settings.position_correction and ws.counters[CONTACTS] > 0
            and ws.counters[PUSH_SWEEPS] >= settings.position_iterations):
        ws.counters[CORRECTION_SWEEPS] = correct_positions(
            ws.slab_start, settings.threads, ws.slot_a, ws.slot_b, ws.solve_origin, ws.contact_row, ws.contact_response,
            ws.slot_depth, ws.slot_push, ws.start_position, ws.start_orientation, ws.body_travel, state.position,
            state.orientation, ws.solve_pseudo_linear, ws.solve_pseudo_angular, ws.shape, model.semi_axes,
            ws.counters[CONTACTS], h, settings.baumgarte, settings.slop, settings.correction_iterations, 10.0 *
            settings.sweep_tolerance / h, ws.sweep_change, ws.push_slot, ws.gap_slot, ws.push_count, ws.push_row,
            ws.push_body, ws.body_pushed, ws.body_level, ws.level_start, ws.level_adjacent, ws.level_queue,
            ws.counters[CONTACTS] < settings.serial_below)
        ws.phase_seconds[POSITION_CORRECTION] += _clock() - t6
    return OK


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
def run_substeps(model, state, ws, settings, h, substeps):
    """Advance a scene without ropes ``substeps`` substeps of length h. Returns OK or an overflow/divergence code.

    ws.counters[SUBSTEPS_DONE] holds the substeps completed; after an overflow the state is the one they left.

    Kept apart from run_substeps_with_ropes so scenes without ropes never compile the rope kernels.
    """
    dynamic = model.inv_mass > 0.0
    for substep in range(substeps):
        ws.counters[SUBSTEPS_DONE] = substep
        status = _body_phases(model, state, ws, settings, h, dynamic)
        if status != OK:
            return status
        status = _integrate_phase(model, state, ws, settings, h)
        if status != OK:
            return status
    ws.counters[SUBSTEPS_DONE] = substeps
    record_step_statistics(ws)
    return OK


@njit(**JIT)
def run_substeps_with_ropes(model, state, ws, settings, h, substeps, rope_model, rope_state):
    """run_substeps plus phase 5: rope internal constraints, pins, attachments and rope contacts."""
    dynamic = model.inv_mass > 0.0
    for substep in range(substeps):
        ws.counters[SUBSTEPS_DONE] = substep
        status = _body_phases(model, state, ws, settings, h, dynamic)
        if status != OK:
            return status
        t4 = _clock()
        rope_collide(rope_model, rope_state, model, state.position, state.orientation, ws.rotation, h)
        rope_substep(rope_model, rope_state, h, model.gravity, state.position, state.orientation,
                     state.linear_velocity, state.angular_velocity, model.inv_mass, model.inv_inertia_local)
        bad_rope = first_non_finite_rope(rope_model, rope_state)
        ws.phase_seconds[ROPES] += _clock() - t4
        if bad_rope >= 0:
            ws.counters[DIVERGED_BODY] = -1 - bad_rope
            return DIVERGED
        status = _integrate_phase(model, state, ws, settings, h)
        if status != OK:
            return status
    ws.counters[SUBSTEPS_DONE] = substeps
    record_step_statistics(ws)
    return OK
