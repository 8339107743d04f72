"""Split impulses: overlap removed through pseudo-velocities, which never enter the real velocities."""
from numba import njit, prange

from ..math3d import JIT_PARALLEL, PARALLEL_CHUNKS, ZERO
from .push_sweeps import clear_pseudo, push_sweeps, set_targets


@njit(**JIT_PARALLEL)
def solve_split_impulses(slab_start, slabs, slot_a, slot_b, solve_origin, contact_row, contact_response, slot_depth,
                      slot_push, linear_velocity, angular_velocity, pseudo_linear, pseudo_angular, shape, swing_arm,
                      n_contacts, h, baumgarte, slop, max_sweeps, tolerance, sweep_change, push_slot, gap_slot,
                      push_count, push_row, push_body, body_pushed, body_level, serial):
    """Split impulses: push overlapping bodies apart through pseudo-velocities only (same order as the velocities).

    (body_level is unused here: these pushes turn the bodies and share by mass.)

    Each contact's overlap at the end of the substep is predicted from its
    depth, its normal velocity after the solve (solve numbering) and the spin
    of both bodies; the split impulses then push (with pseudo-velocities, which
    add no kinetic energy) until at most the slop plus (1 - baumgarte) of the
    present excess would remain. So they remove a fraction of old overlap, and
    all of the new overlap that a spinning body or an unconverged velocity
    solve would otherwise leave.

    The sweeps read only listed rows: each class lists in push_slot, from its
    first slot on (push_count[0] of them), the contacts with a positive
    target, and after the first sweep those whose gap the pushes could close.
    A contact left out would not resist pseudo-velocities driving its bodies
    together: in a 1,000-body drop that is how about four in five of the
    contacts deeper than 1% of the smallest semi-axis got there.

    The pushes turn bodies as well; where a body spins fast, its surface's
    second-order swing depends on that extra turn, so halfway through the
    sweeps the targets of the listed contacts are predicted again from the
    total turn.

    Like the velocity sweeps, they stop after the second once the last one
    changed no body's pseudo-velocity by more than ``tolerance`` (m/s).
    With ``serial``, everything runs in the calling thread, with the same result.
    Returns the sweeps run.
    """
    # zeroed in a serial helper: in a parallel function an array expression becomes a parfor of its
    # own, and one over a zero-size array crashed (a scene without bodies)
    clear_pseudo(pseudo_linear, pseudo_angular, body_pushed)
    if serial:
        spinning, largest = set_targets(ZERO, n_contacts, push_slot, False, slot_a, slot_b, solve_origin, contact_row,
                                         slot_depth, slot_push, push_row, linear_velocity, angular_velocity,
                                         pseudo_angular, shape, swing_arm, h, baumgarte, slop)
    else:
        chunks = min(n_contacts, PARALLEL_CHUNKS)
        spinning = 0
        largest = 0.0
        for k in prange(chunks):
            spun, top = set_targets(k * n_contacts // chunks, (k + 1) * n_contacts // chunks, push_slot, False,
                                     slot_a, slot_b, solve_origin, contact_row, slot_depth, slot_push, push_row,
                                     linear_velocity, angular_velocity, pseudo_angular, shape, swing_arm, h,
                                     baumgarte, slop)
            spinning += spun
            largest = max(largest, top)
    return push_sweeps(slab_start, slabs, slot_a, slot_b, solve_origin, contact_row, contact_response, slot_depth,
                        slot_push, linear_velocity, angular_velocity, pseudo_linear, pseudo_angular, shape, swing_arm,
                        h, baumgarte, slop, max_sweeps, tolerance, sweep_change, push_slot, gap_slot, push_count,
                        push_row, push_body, body_pushed, body_level, largest, False, spinning > 0, True, serial)
