"""State: everything that changes during a run, plus preallocated work buffers.

``State`` is the public, cheap-to-copy part (poses, velocities, time, the
contact cache used for warm starting). ``Workspace`` holds per-substep scratch
arrays sized for the model; buffers that depend on the number of contacts grow
geometrically when a frame overflows them.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .collision.carried_contacts import LOCAL_WIDTH
from .collision.patches import PATCH
from .contact.push_sweeps import PUSH_WIDTH
from .contact.rows import AUX_WIDTH, RESPONSE_WIDTH, ROW_DTYPE, ROW_WIDTH
from .contact.solve_order import order_bucket_count

# cached impulse layout (world frame): normal, friction vector (3), rolling vector (3), spinning
IMPULSE_WIDTH = 8


class BodyState(NamedTuple):
    position: np.ndarray          # (N, 3)
    orientation: np.ndarray       # (N, 4) w, x, y, z
    linear_velocity: np.ndarray   # (N, 3)
    angular_velocity: np.ndarray  # (N, 3) world frame
    time: np.ndarray              # (1,) simulated seconds
    # contact cache of the last substep, sorted by key (warm starting and warm normals)
    cache_key: np.ndarray         # (C,) int64
    cache_normal: np.ndarray      # (C, 3)
    cache_impulse: np.ndarray     # (C, IMPULSE_WIDTH)
    cache_count: np.ndarray       # (1,) int64
    # each contact's points held by its bodies, and its pair's pose then (collision/carried_contacts.py); (0, W) in
    # scenes of ellipsoids alone, whose pairs are always measured
    cache_local: np.ndarray       # (C, LOCAL_WIDTH)


class Workspace(NamedTuple):
    """Per-substep scratch arrays, grouped by the phase that writes them."""
    # phase 1, forces (forces.py): body frames, bounding boxes, the velocities before the prediction
    rotation: np.ndarray          # (N, 3, 3)
    shape: np.ndarray             # (N, 3, 3) R diag(a^2) R^T
    inv_inertia_world: np.ndarray  # (N, 3, 3)
    half_extent: np.ndarray       # (N, 3) world AABB half sizes, grown by the reach
    reach: np.ndarray             # (N,) contact margin plus distance travelled this substep
    turn: np.ndarray              # (N,) radians turned this substep at the body's spin
    start_linear: np.ndarray      # (N, 3) velocities before this substep's prediction, restored on a buffer overflow
    start_angular: np.ndarray     # (N, 3)
    # phase 2, broad phase (collision/broadphase.py): the hashed grid and the candidate pairs
    bucket_start: np.ndarray      # (T + 1,) int64 broad-phase grid: first entry of each hash bucket
    bucket_body: np.ndarray       # (N,) int64 bodies in bucket order
    bucket_key: np.ndarray        # (N,) int64 their packed grid cells
    bucket_box: np.ndarray        # (N, 6) their box centres and half sizes
    bucket_fill: np.ndarray       # (T,) int64
    pair_a: np.ndarray            # (P,) int64
    pair_b: np.ndarray            # (P,) int64
    pair_origin: np.ndarray       # (N, 3) positions when the pair list was built
    pair_extent: np.ndarray       # (N, 3) box half sizes plus skin used for that build
    pair_list: np.ndarray         # (2,) int64: pairs in the list, 1 if it may be reused
    moved_body: np.ndarray        # (N,) int64 bodies that left their built boxes this substep
    body_moved: np.ndarray        # (N,) bool flags of the bodies in moved_body (all False between updates)
    # phase 3, narrow phase (collision/driver.py): per pair, then the contacts
    pair_depth: np.ndarray        # (P,) narrow-phase result per pair, -inf if no contact
    pair_normal: np.ndarray       # (P, 3)
    pair_point: np.ndarray        # (P, 3)
    pair_witness: np.ndarray      # (P, 3) unit normal a pair was last found with (zeros: none), see collision/driver.py
    pair_patch: np.ndarray        # (P, PATCH - 1, 4) a patch's further points (x, y, z, depth); (0, ...) without BodyShapes
    pair_patch_count: np.ndarray  # (P,) int64 how many of them
    pair_source: np.ndarray       # (P,) int64 cache row a pair's contacts were carried from; -1 measured, -2 neither
    contact_a: np.ndarray         # (C,) int64 body index, or -1 - static id
    contact_b: np.ndarray         # (C,) int64 body index
    contact_key: np.ndarray       # (C,) int64
    contact_normal: np.ndarray    # (C, 3) from A to B
    contact_point: np.ndarray     # (C, 3)
    contact_depth: np.ndarray     # (C,)
    contact_local: np.ndarray     # (C, LOCAL_WIDTH) as cache_local, for the contacts of pairs of shapes; (0, W) without
    # phase 4, solve order (contact/solve_order.py); rows, impulses, solve_* velocities go by slot / solve index
    slab_bounds: np.ndarray       # (slabs - 1,) split positions along x, kept between substeps
    body_slab: np.ndarray         # (N,) int64 slab of each body
    solve_body: np.ndarray        # (N,) int64 body -> solve index
    solve_origin: np.ndarray      # (N,) int64 solve index -> body
    body_colours: np.ndarray      # (N, 2) int64 bit mask of colours used at each body, in its slab / the boundary
    body_colour_block: np.ndarray  # (N, 2) int64 the colour block that set body_colours
    order_counts: np.ndarray      # (order_bucket_count,) int64 counting-sort buckets of the solve order
    contact_class: np.ndarray     # (C,) int64 class of each contact (its slab, or slabs for the boundary)
    contact_slot: np.ndarray      # (C,) int64 contact -> slot
    slot_contact: np.ndarray      # (C,) int32 slot -> contact (the per-slot indices are int32: less to stream)
    slot_a: np.ndarray            # (C,) int32 solve index of body A, or -1 - static id
    slot_b: np.ndarray            # (C,) int32 solve index of body B
    slot_cache: np.ndarray        # (C,) int32 row of last substep's cache, -1 if new
    slab_start: np.ndarray        # (slabs + 2,) int64 first slot of each slab, the boundary class, the end
    # phase 4, prepare (contact/prepare.py)
    contact_row: np.ndarray       # (C, ROW_WIDTH) float32: directions, Jacobians, masses, targets (see contact/rows.py)
    contact_response: np.ndarray  # (C, RESPONSE_WIDTH) inverse masses and I^-1 (r x d)
    contact_aux: np.ndarray       # (C, AUX_WIDTH) rolling and spinning terms
    slot_depth: np.ndarray        # (C,) float32 signed depth per slot (overlap > 0)
    slot_bounce: np.ndarray       # (C,) normal velocity restitution asks for per slot (0: none)
    slot_rebound: np.ndarray      # (C,) rebound speed a bounce from a gap still owes after the move (0: none)
    # phase 4, warm start and velocity sweeps (contact/warm_start.py, velocity.py)
    contact_impulse: np.ndarray   # (C, 3) accumulated normal and friction impulses along this substep's frame
    contact_twist_impulse: np.ndarray  # (C, 3) accumulated rolling and spinning impulses
    solve_linear: np.ndarray      # (N, 3) velocities in solve numbering
    solve_angular: np.ndarray     # (N, 3)
    sweep_change: np.ndarray      # (slabs + 1,) largest velocity change of the last sweep per slab and boundary
    # phases 4 and 7, split impulses and position correction (contact/push_sweeps.py)
    slot_push: np.ndarray         # (C,) float32 push target per slot (split impulses, correction)
    solve_pseudo_linear: np.ndarray   # (N, 3) split-impulse velocities in solve numbering
    solve_pseudo_angular: np.ndarray  # (N, 3)
    pseudo_linear: np.ndarray     # (N, 3) split-impulse velocities
    pseudo_angular: np.ndarray    # (N, 3)
    push_slot: np.ndarray         # (C,) int32 slots the pushes sweep, per class from its first slot
    gap_slot: np.ndarray          # (C,) int32 gaps the pushes might close, per class from its first slot
    push_count: np.ndarray        # (2, slabs + 1) int64 per class: slots listed to push, gaps that might close
    push_row: np.ndarray          # (C, PUSH_WIDTH) the listed slots' terms, in push_slot's order (see contact/push_sweeps.py)
    push_body: np.ndarray         # (C, 2) int32 their bodies A and B in solve numbering
    body_pushed: np.ndarray       # (N,) bool per solve index: a body of a listed contact (only they get pushes)
    body_level: np.ndarray        # (N,) int32 per solve index: contacts between it and an immovable body (see
                                  #   support_levels; the position correction's shares)
    level_start: np.ndarray       # (N + 1,) int64 first entry of each body's neighbours in level_adjacent
    level_adjacent: np.ndarray    # (2C,) int32 movable neighbours of each body, by contact
    level_queue: np.ndarray       # (N,) int32 bodies in the order their level was found
    # phase 6, integrate (integrate.py)
    start_position: np.ndarray    # (N, 3) poses before the integrate phase (for the position correction)
    start_orientation: np.ndarray  # (N, 4)
    body_travel: np.ndarray       # (N,) bound on how far any surface point moved in the integrate phase
    body_energy: np.ndarray       # (N,) kinetic energy after the last substep (0 for non-dynamic bodies)
    # the whole substep (step.py)
    counters: np.ndarray          # (11,) int64, slots named in step.py (PAIRS, CONTACTS, ... PARTS_RUN)
    phase_seconds: np.ndarray     # (N_PHASES,) seconds per phase, indices named in step.py (FORCES, ...)
    step_stats: np.ndarray        # (2,) after the last substep: max penetration, kinetic energy


def new_body_state(bodies: list, capacity: int, patches: bool = False) -> BodyState:
    """``patches``: room to carry contacts (scenes with shapes other than ellipsoids)."""
    n = len(bodies)
    return BodyState(
        position=np.array([b["position"] for b in bodies], dtype=np.float64).reshape(n, 3),
        orientation=np.array([b["orientation"] for b in bodies], dtype=np.float64).reshape(n, 4),
        linear_velocity=np.array([b["velocity"] for b in bodies], dtype=np.float64).reshape(n, 3),
        angular_velocity=np.array([b["angular_velocity"] for b in bodies], dtype=np.float64).reshape(n, 3),
        time=np.zeros(1),
        cache_key=np.full(capacity, -1, dtype=np.int64),
        cache_normal=np.zeros((capacity, 3)),
        cache_impulse=np.zeros((capacity, IMPULSE_WIDTH)),
        cache_count=np.zeros(1, dtype=np.int64),
        cache_local=np.zeros((capacity if patches else 0, LOCAL_WIDTH)),
    )


def copy_body_state(state: BodyState) -> BodyState:
    """Deep copy."""
    return BodyState(*[np.array(field, copy=True) for field in state])


def grow_cache(state: BodyState, capacity: int) -> BodyState:
    """Same state with contact-cache arrays of a larger capacity."""
    count = int(state.cache_count[0])
    key = np.full(capacity, -1, dtype=np.int64)
    normal = np.zeros((capacity, 3))
    impulse = np.zeros((capacity, IMPULSE_WIDTH))
    key[:count] = state.cache_key[:count]
    normal[:count] = state.cache_normal[:count]
    impulse[:count] = state.cache_impulse[:count]
    local = np.zeros((capacity if len(state.cache_local) else 0, LOCAL_WIDTH))
    if len(local):
        local[:count] = state.cache_local[:count]
    return state._replace(cache_key=key, cache_normal=normal, cache_impulse=impulse, cache_local=local)


def hash_table_size(n_bodies: int) -> int:
    size = 64
    while size < 2 * n_bodies:
        size *= 2
    return size


def new_workspace(n_bodies: int, pair_capacity: int, contact_capacity: int, n_phases: int,
                  slabs: int, patches: bool = False) -> Workspace:
    """Scratch for the substeps; ``patches``: room for contact patches (scenes with shapes other than ellipsoids).

    Every pair has a patch count (the narrow phase clears it whenever it is given BodyShapes, ellipsoids too)."""
    n = n_bodies
    patch_pairs = pair_capacity if patches else 0
    c = contact_capacity
    table = hash_table_size(n)
    return Workspace(
        rotation=np.zeros((n, 3, 3)), shape=np.zeros((n, 3, 3)), inv_inertia_world=np.zeros((n, 3, 3)),
        half_extent=np.zeros((n, 3)), reach=np.zeros(n), turn=np.zeros(n), pseudo_linear=np.zeros((n, 3)), pseudo_angular=np.zeros((n, 3)),
        start_linear=np.zeros((n, 3)), start_angular=np.zeros((n, 3)),
        start_position=np.zeros((n, 3)), start_orientation=np.zeros((n, 4)),
        body_travel=np.zeros(n),
        bucket_start=np.zeros(table + 1, dtype=np.int64), bucket_body=np.zeros(n, dtype=np.int64),
        bucket_key=np.zeros(n, dtype=np.int64), bucket_box=np.zeros((n, 6)),
        bucket_fill=np.zeros(table, dtype=np.int64),
        pair_a=np.zeros(pair_capacity, dtype=np.int64), pair_b=np.zeros(pair_capacity, dtype=np.int64),
        pair_depth=np.zeros(pair_capacity), pair_normal=np.zeros((pair_capacity, 3)),
        pair_point=np.zeros((pair_capacity, 3)), pair_witness=np.zeros((pair_capacity, 3)),
        pair_patch=np.zeros((patch_pairs, PATCH - 1, 4)), pair_patch_count=np.zeros(pair_capacity, dtype=np.int64),
        pair_source=np.full(pair_capacity, -2, dtype=np.int64),
        body_energy=np.zeros(n), pair_origin=np.zeros((n, 3)), pair_extent=np.zeros((n, 3)), pair_list=np.zeros(2, dtype=np.int64),
        moved_body=np.zeros(n, dtype=np.int64), body_moved=np.zeros(n, dtype=np.bool_),
        contact_a=np.zeros(c, dtype=np.int64), contact_b=np.zeros(c, dtype=np.int64),
        contact_key=np.zeros(c, dtype=np.int64), contact_normal=np.zeros((c, 3)),
        contact_point=np.zeros((c, 3)), contact_depth=np.zeros(c),
        contact_local=np.zeros((c if patches else 0, LOCAL_WIDTH)),
        contact_impulse=np.zeros((c, 3)), contact_twist_impulse=np.zeros((c, 3)),
        contact_row=np.zeros((c, ROW_WIDTH), dtype=ROW_DTYPE), contact_response=np.zeros((c, RESPONSE_WIDTH)),
        contact_aux=np.zeros((c, AUX_WIDTH)),
        slot_depth=np.zeros(c, dtype=ROW_DTYPE), slot_push=np.zeros(c, dtype=ROW_DTYPE), slot_bounce=np.zeros(c),
        slot_rebound=np.zeros(c),
        slab_bounds=np.full(slabs - 1, np.inf), body_slab=np.zeros(n, dtype=np.int64), solve_body=np.zeros(n, dtype=np.int64),
        solve_origin=np.zeros(n, dtype=np.int64), body_colours=np.zeros((n, 2), dtype=np.int64),
        body_colour_block=np.zeros((n, 2), dtype=np.int64), order_counts=np.zeros(order_bucket_count(slabs, c), dtype=np.int64),
        contact_class=np.zeros(c, dtype=np.int64),
        solve_linear=np.zeros((n, 3)), solve_angular=np.zeros((n, 3)),
        solve_pseudo_linear=np.zeros((n, 3)), solve_pseudo_angular=np.zeros((n, 3)),
        contact_slot=np.zeros(c, dtype=np.int64), slot_contact=np.zeros(c, dtype=np.int32),
        slot_a=np.zeros(c, dtype=np.int32), slot_b=np.zeros(c, dtype=np.int32),
        slot_cache=np.zeros(c, dtype=np.int32), slab_start=np.zeros(slabs + 2, dtype=np.int64),
        sweep_change=np.zeros(slabs + 1), push_slot=np.zeros(c, dtype=np.int32),
        gap_slot=np.zeros(c, dtype=np.int32),
        push_count=np.zeros((2, slabs + 1), dtype=np.int64), push_row=np.zeros((c, PUSH_WIDTH)),
        push_body=np.zeros((c, 2), dtype=np.int32), body_pushed=np.zeros(n, dtype=np.bool_),
        body_level=np.zeros(n, dtype=np.int32), level_start=np.zeros(n + 1, dtype=np.int64),
        level_adjacent=np.zeros(2 * c, dtype=np.int32), level_queue=np.zeros(n, dtype=np.int32),
        counters=np.zeros(11, dtype=np.int64),
        phase_seconds=np.zeros(n_phases),
        step_stats=np.zeros(2),
    )
