"""Warm start and store: last substep's impulses applied at the start, this substep's kept for the next."""
from numba import njit, prange

from ..math3d import JIT, JIT_PARALLEL, PARALLEL_CHUNKS, ZERO
from .rows import (IA1, IA2, IAN, IAS, IAT1, IAT2, IB1, IB2, IBN, IBS, IBT1, IBT2, INV_MASS_A, INV_MASS_B, N_,
                   ROLLING, SPINNING, T1, T2, dot3)


@njit(**JIT)
def _warm_start_range(start, end, slot_a, slot_b, slot_cache, contact_row, contact_response, contact_aux,
                      contact_impulse, contact_twist_impulse, cache_impulse, linear_velocity, angular_velocity):
    """Cached impulses of slots start..end, on this substep's frames, applied to each body once (summed)."""
    rows = contact_row
    response = contact_response
    aux = contact_aux
    twist = contact_twist_impulse
    lin = linear_velocity
    ang = angular_velocity
    for c in range(start, end):
        j = slot_cache[c]
        if j < 0:
            for k in range(3):
                contact_impulse[c, k] = 0.0
                twist[c, k] = 0.0
            continue
        ln = cache_impulse[j, 0]
        l1 = dot3(rows, c, T1, cache_impulse[j, 1], cache_impulse[j, 2], cache_impulse[j, 3])
        l2 = dot3(rows, c, T2, cache_impulse[j, 1], cache_impulse[j, 2], cache_impulse[j, 3])
        r1 = dot3(rows, c, T1, cache_impulse[j, 4], cache_impulse[j, 5], cache_impulse[j, 6])
        r2 = dot3(rows, c, T2, cache_impulse[j, 4], cache_impulse[j, 5], cache_impulse[j, 6])
        spin = cache_impulse[j, 7]
        contact_impulse[c, 0] = ln
        contact_impulse[c, 1] = l1
        contact_impulse[c, 2] = l2
        twist[c, 0] = r1
        twist[c, 1] = r2
        twist[c, 2] = spin
        # the rolling and spinning terms exist only where those coefficients are non-zero
        rolling = rows[c, ROLLING] > 0.0
        spinning = rows[c, SPINNING] > 0.0
        a = slot_a[c]
        b = slot_b[c]
        mb = response[c, INV_MASS_B]
        ma = response[c, INV_MASS_A]
        for k in range(3):
            p = ln * rows[c, N_ + k] + l1 * rows[c, T1 + k] + l2 * rows[c, T2 + k]
            turn_b = ln * response[c, IBN + k] + l1 * response[c, IBT1 + k] + l2 * response[c, IBT2 + k]
            turn_a = ln * response[c, IAN + k] + l1 * response[c, IAT1 + k] + l2 * response[c, IAT2 + k]
            if rolling:
                turn_b += r1 * aux[c, IB1 + k] + r2 * aux[c, IB2 + k]
                turn_a += r1 * aux[c, IA1 + k] + r2 * aux[c, IA2 + k]
            if spinning:
                turn_b += spin * aux[c, IBS + k]
                turn_a += spin * aux[c, IAS + k]
            lin[b, k] += mb * p
            ang[b, k] += turn_b
            if a >= 0:
                lin[a, k] -= ma * p
                ang[a, k] -= turn_a


@njit(**JIT_PARALLEL)
def warm_start(slab_start, slabs, slot_a, slot_b, slot_cache, contact_row, contact_response, contact_aux,
               contact_impulse, contact_twist_impulse, cache_impulse, linear_velocity, angular_velocity, serial):
    """Take the impulses of contacts that existed last substep (cache row slot_cache), re-projected on the new frame.

    The slabs in parallel, then the boundary; with ``serial``, all in slot order in the calling thread.
    """
    if not serial:
        for k in prange(slabs):
            _warm_start_range(slab_start[k], slab_start[k + 1], slot_a, slot_b, slot_cache, contact_row,
                              contact_response, contact_aux, contact_impulse, contact_twist_impulse, cache_impulse,
                              linear_velocity, angular_velocity)
    _warm_start_range(slab_start[0] if serial else slab_start[slabs], slab_start[slabs + 1], slot_a, slot_b,
                      slot_cache, contact_row, contact_response, contact_aux, contact_impulse, contact_twist_impulse,
                      cache_impulse, linear_velocity, angular_velocity)


@njit(**JIT)
def scale_cached_impulses(cache_impulse, cache_count, factor):
    """Cached impulses times ``factor``: the next substep is ``factor`` times as long as the one that stored them.

    A resting contact's impulse grows with the substep (it carries the weight for that long), so a warm start
    across a change of substep length takes the impulses at the new length; unscaled, a split substep's first
    part would start from several times the impulse its contacts need.
    """
    for c in range(cache_count[0]):
        for k in range(cache_impulse.shape[1]):
            cache_impulse[c, k] *= factor


@njit(**JIT_PARALLEL)
def store_impulses(contact_slot, contact_key, contact_normal, contact_row, contact_impulse, contact_twist_impulse,
                   contact_local, cache_key, cache_normal, cache_impulse, cache_local, cache_count, n_contacts, serial):
    """Contacts of this substep become the warm-start cache of the next, in key order (world-frame impulses), with
    their held points (collision/carried_contacts.py; none in scenes of ellipsoids alone).

    Parallel chunks of contacts; with ``serial``, one chunk in the calling thread.
    """
    cache_count[0] = n_contacts
    if serial:
        _store_range(ZERO, n_contacts, contact_slot, contact_key, contact_normal, contact_row, contact_impulse,
                     contact_twist_impulse, contact_local, cache_key, cache_normal, cache_impulse, cache_local)
        return
    chunks = min(n_contacts, PARALLEL_CHUNKS)
    for k in prange(chunks):
        _store_range(k * n_contacts // chunks, (k + 1) * n_contacts // chunks, contact_slot, contact_key,
                     contact_normal, contact_row, contact_impulse, contact_twist_impulse, contact_local, cache_key,
                     cache_normal, cache_impulse, cache_local)


@njit(**JIT)
def _store_range(start, end, contact_slot, contact_key, contact_normal, contact_row, contact_impulse,
                 contact_twist_impulse, contact_local, cache_key, cache_normal, cache_impulse, cache_local):
    held = contact_local.shape[0] > 0
    for c in range(start, end):
        s = contact_slot[c]
        if held:
            for k in range(contact_local.shape[1]):
                cache_local[c, k] = contact_local[c, k]
        cache_key[c] = contact_key[c]
        cache_impulse[c, 0] = contact_impulse[s, 0]
        for k in range(3):
            cache_normal[c, k] = contact_normal[c, k]
            cache_impulse[c, 1 + k] = contact_impulse[s, 1] * contact_row[s, T1 + k] + contact_impulse[s, 2] * contact_row[s, T2 + k]
            cache_impulse[c, 4 + k] = (contact_twist_impulse[s, 0] * contact_row[s, T1 + k]
                                       + contact_twist_impulse[s, 1] * contact_row[s, T2 + k])
        cache_impulse[c, 7] = contact_twist_impulse[s, 2]
