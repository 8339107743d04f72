"""Contact rows: the per-contact layout every contact pass reads, and the accessors they share.

Rows per contact, for relative velocity v = v_B + w_B x r_B - v_A - w_A x r_A:
  normal   n.v >= target,  0 <= lambda_n
  friction |(lambda_t1, lambda_t2)| <= mu lambda_n           (elliptic cone: projection on the disc)
  rolling  |(lambda_r1, lambda_r2)| <= mu_r lambda_n on t.(w_B - w_A)   (mu_r is a length)
  spinning |lambda_s| <= mu_s lambda_n on n.(w_B - w_A)                 (mu_s is a length)

Every term a sweep needs is computed once in prepare and stored per contact in
two flat rows, so the sweeps only stream through them; the hot loops take
plain arrays, never tuples of arrays:

* ``contact_row`` (float32): what a row reads: directions, the lever-arm
  Jacobians r x d, effective masses, bounds and targets;
* ``contact_response`` (float64): how an impulse changes the two bodies'
  velocities: inverse masses and I^-1 (r x d).

A large pile's sweeps stream these rows from memory (a 100,000-body pile has
about 100 MB of them; 150 MB as one row of 56 doubles), so their size sets the
cost there. Single precision is exact
enough for what a row reads (a velocity estimate to 1e-7); what it applies
stays double, and the directions are rounded to single precision before any
other term is computed from them, so an impulse changes the linear and angular
momentum of the two bodies by exactly opposite amounts.
"""
import numpy as np
from numba import njit

from ..math3d import JIT

# layout of ws.contact_row (float32): 3-vectors at these offsets, then scalars
N_, T1, T2 = 0, 3, 6                     # normal and tangents
AN, BN, AT1, BT1, AT2, BT2 = 9, 12, 15, 18, 21, 24          # r_A x d and r_B x d for d = n, t1, t2
MASS_N, MASS_T1, MASS_T2 = 27, 28, 29
TARGET, FRICTION, ROLLING, SPINNING = 30, 31, 32, 33
ROW_WIDTH = 34
ROW_DTYPE = np.float32
# layout of ws.contact_response (float64)
IAN, IBN, IAT1, IBT1, IAT2, IBT2 = 0, 3, 6, 9, 12, 15       # I^-1 (r x d)
INV_MASS_A, INV_MASS_B = 18, 19
RESPONSE_WIDTH = 20
# layout of ws.contact_aux (float64), the terms read and written only where rolling or spinning friction act
IA1, IB1, IA2, IB2, IAS, IBS = 0, 3, 6, 9, 12, 15           # I^-1 t1, I^-1 t2, I^-1 n (rolling, spinning)
MASS_R1, MASS_R2, MASS_S = 18, 19, 20
AUX_WIDTH = 21
# ws.contact_impulse: normal, t1, t2; ws.contact_twist_impulse: roll1, roll2, spin
# (scalars along this substep's frame; apart, so the sweeps stream only the first three)
# ws.slot_depth, ws.slot_push (float32): signed depth (overlap > 0) and the push target, a separating
# pseudo-velocity along n (split impulses, position correction). Apart from the rows: those passes read
# and write them for every contact, the velocity sweeps never.
# ws.slot_bounce (float64): the normal velocity restitution asks for, 0 for none (see prepare_contacts);
# ws.slot_rebound (float64): the rebound speed a bounce from a gap still owes after the move (finish_rebounds).


@njit(**JIT, inline="always")
def dot3(rows, c, k, x, y, z):
    return rows[c, k] * x + rows[c, k + 1] * y + rows[c, k + 2] * z


@njit(**JIT, inline="always")
def store3(rows, c, k, x, y, z):
    rows[c, k] = x
    rows[c, k + 1] = y
    rows[c, k + 2] = z


@njit(**JIT, inline="always")
def normal_velocity(rows, c, dvx, dvy, dvz, wbx, wby, wbz, wax, way, waz):
    """n.dv + w_B.(r_B x n) - w_A.(r_A x n) from velocities already loaded (dv = v_B - v_A; zeros for a static A).

    Callers load the bodies' velocities into locals first rather than pass the
    velocity arrays: numba keeps reference-count updates of arrays passed to
    an inlined helper that branches (as it would to skip a static side) inside
    the loop, and those are atomic and contended between threads.
    """
    return (dot3(rows, c, N_, dvx, dvy, dvz) + dot3(rows, c, BN, wbx, wby, wbz)
            - dot3(rows, c, AN, wax, way, waz))


@njit(**JIT, inline="always")
def row_apply(rows, response, c, lin, ang, a, b, d, ia, ib, impulse):
    """Apply impulse along direction d at the contact: +B, -A."""
    mb = response[c, INV_MASS_B] * impulse
    for k in range(3):
        lin[b, k] += mb * rows[c, d + k]
        ang[b, k] += impulse * response[c, ib + k]
    if a >= 0:
        ma = response[c, INV_MASS_A] * impulse
        for k in range(3):
            lin[a, k] -= ma * rows[c, d + k]
            ang[a, k] -= impulse * response[c, ia + k]


@njit(**JIT, inline="always")
def single(x):
    """x rounded to the nearest float32, as a float64."""
    return np.float64(np.float32(x))


@njit(**JIT, inline="always")
def body_velocity(lin, ang, body):
    return lin[body, 0], lin[body, 1], lin[body, 2], ang[body, 0], ang[body, 1], ang[body, 2]


@njit(**JIT, inline="always")
def row3(rows, c, k):
    return np.float64(rows[c, k]), np.float64(rows[c, k + 1]), np.float64(rows[c, k + 2])


@njit(**JIT)
def sweeps_settled(sweep_change, slabs, sweep, tolerance):
    """True after the second sweep once no class's last sweep changed a velocity by more than tolerance."""
    largest = 0.0
    for k in range(slabs + 1):
        largest = max(largest, sweep_change[k])
    return sweep >= 1 and largest <= tolerance
