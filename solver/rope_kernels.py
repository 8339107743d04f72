"""Compiled kernels of the Cosserat rope substep (see solver/rope.py for the model).

Unknowns per rope: node velocities v_i and segment angular velocities w_j (world frame).
Constraints, ordered along the rope so that the system matrix is banded:

    block 0        clamp joint at the start (inactive unless that end is clamped)
    block 2j+1     stretch-shear S_j: d1.dx/l = d2.dx/l = 0, |dx|/l = 1      (hard, 3 rows; dx = x_{j+1} - x_j)
    block 2j       bend-twist joint between segment j-1 and j: Darboux - rest  (compliant, 3 rows)
    block 2m       clamp joint at the end

Bend-twist is implicit (compliance form of backward Euler, Deul et al. 2018 style direct solve): one
banded Cholesky factorisation per rope and substep solves stretch, shear, d3 coupling, bending and
twisting together, so a stiff cable is as stable as a floppy one. Inextensibility is then made exact
with the tridiagonal (J M^-1 J^T) lambda = -J v system (Thomas algorithm) and a Newton stabilisation
pass on the predicted positions.
"""
import math

import numpy as np
from numba import njit

from .math3d import JIT, cross, quat_mul, quat_to_matrix, rotate_by_rotation_vector
from .rope_contacts import prepare_rope_contacts, solve_rope_contacts
from .rope_impulses import apply_body_impulse, apply_node_impulse

BAND = 8  # scalar half-bandwidth: blocks couple to blocks two away, 3 rows each -> 3*2+2
S_REGULARISATION = 1e-9  # relative compliance on hard rows that pins can make dependent


# ----------------------------------------------------------------------------------------------
# small dense helpers (3x3, written into preallocated arrays)

@njit(**JIT)
def _inverse3(a, out):
    """out = a^-1 for a 3x3 matrix; returns False when a is singular."""
    c00 = a[1, 1] * a[2, 2] - a[1, 2] * a[2, 1]
    c01 = a[1, 2] * a[2, 0] - a[1, 0] * a[2, 2]
    c02 = a[1, 0] * a[2, 1] - a[1, 1] * a[2, 0]
    det = a[0, 0] * c00 + a[0, 1] * c01 + a[0, 2] * c02
    scale = 0.0
    for i in range(3):
        for j in range(3):
            scale = max(scale, abs(a[i, j]))
    if scale == 0.0 or abs(det) <= 1e-14 * scale * scale * scale:
        return False
    inv = 1.0 / det
    out[0, 0] = c00 * inv
    out[1, 0] = c01 * inv
    out[2, 0] = c02 * inv
    out[0, 1] = (a[0, 2] * a[2, 1] - a[0, 1] * a[2, 2]) * inv
    out[1, 1] = (a[0, 0] * a[2, 2] - a[0, 2] * a[2, 0]) * inv
    out[2, 1] = (a[0, 1] * a[2, 0] - a[0, 0] * a[2, 1]) * inv
    out[0, 2] = (a[0, 1] * a[1, 2] - a[0, 2] * a[1, 1]) * inv
    out[1, 2] = (a[0, 2] * a[1, 0] - a[0, 0] * a[1, 2]) * inv
    out[2, 2] = (a[0, 0] * a[1, 1] - a[0, 1] * a[1, 0]) * inv
    return True


@njit(**JIT)
def _world_inverse_inertia(rot, inv_inertia_local, out):
    """out = R diag(inv_inertia_local) R^T."""
    for i in range(3):
        for j in range(3):
            s = 0.0
            for k in range(3):
                s += rot[i, k] * inv_inertia_local[k] * rot[j, k]
            out[i, j] = s


@njit(**JIT)
def _point_inverse_mass(inv_mass, inv_inertia_world, rx, ry, rz, out):
    """Inverse mass matrix of a body point at lever arm r: m^-1 I - [r]x I^-1 [r]x."""
    skew = ((0.0, -rz, ry), (rz, 0.0, -rx), (-ry, rx, 0.0))
    for i in range(3):
        for j in range(3):
            s = 0.0
            for k in range(3):
                for l in range(3):
                    s += skew[i][k] * inv_inertia_world[k, l] * skew[j][l]
            out[i, j] = s + (inv_mass if i == j else 0.0)


# ----------------------------------------------------------------------------------------------
# banded Cholesky on rows [r0, r0 + n) of band storage ab[row, d] = A[row, row - d]

@njit(**JIT)
def _band_add(ab, r0, k, l, m):
    """Add the 3x3 block m at block position (k, l) of a symmetric matrix (lower triangle stored)."""
    if k < l:
        for a in range(3):
            for b in range(3):
                row = 3 * l + a
                col = 3 * k + b
                if row >= col:
                    ab[r0 + row, row - col] += m[b, a]
    else:
        for a in range(3):
            for b in range(3):
                row = 3 * k + a
                col = 3 * l + b
                if row >= col:
                    ab[r0 + row, row - col] += m[a, b]


@njit(**JIT)
def _band_factor(ab, r0, n):
    for i in range(n):
        jmin = max(0, i - BAND)
        diag0 = ab[r0 + i, 0]
        for j in range(jmin, i + 1):
            s = ab[r0 + i, i - j]
            for k in range(max(jmin, j - BAND), j):
                s -= ab[r0 + i, i - k] * ab[r0 + j, j - k]
            if j == i:
                floor = 1e-13 * diag0 if diag0 > 0.0 else 1e-300
                ab[r0 + i, 0] = math.sqrt(max(s, floor))
            else:
                ab[r0 + i, i - j] = s / ab[r0 + j, 0]


@njit(**JIT)
def _band_solve(ab, r0, n, x):
    """Solve L L^T y = x in place on x[r0:r0+n]."""
    for i in range(n):
        s = x[r0 + i]
        for k in range(max(0, i - BAND), i):
            s -= ab[r0 + i, i - k] * x[r0 + k]
        x[r0 + i] = s / ab[r0 + i, 0]
    for i in range(n - 1, -1, -1):
        s = x[r0 + i]
        for k in range(i + 1, min(n, i + BAND + 1)):
            s -= ab[r0 + k, k - i] * x[r0 + k]
        x[r0 + i] = s / ab[r0 + i, 0]


# ----------------------------------------------------------------------------------------------
# per-substep preparation

@njit(**JIT)
def _relative_rotation(qa, qb):
    """conj(qa) * qb, sign chosen for the shortest arc."""
    rw, rx, ry, rz = quat_mul(qa[0], -qa[1], -qa[2], -qa[3], qb[0], qb[1], qb[2], qb[3])
    if rw < 0.0:
        return -rw, -rx, -ry, -rz
    return rw, rx, ry, rz


@njit(**JIT)
def _prepare_segments(model, state, h):
    """Frames, inverse inertia and the stretch-shear rows of every segment.

    Geometric stiffness: a segment under tension T resists turning with the stiffness T l (about d1, d2).
    Left explicit, it makes a light rope under a heavy load blow up once h sqrt(T l / I) > 2, because the
    shear rows slave the sideways motion of the nodes to the segment's rotation. Backward Euler of that
    stiffness (Andrews, Teichmann and Kry 2017, applied to the segment rather than the nodes) is
    (I + h^2 T l) w+ = I w + torque impulses, with last substep's tension; it vanishes at rest, so static
    equilibria are unchanged.

    The three rows of S_j are written in a basis that keeps tension off the segment: two shear rows
    d1 . dx / l = 0, d2 . dx / l = 0 (d3 along the chord; they couple the segment's rotation) and one stretch
    row |dx| / l - 1 = 0 along the chord c (nodes only). A tension therefore pulls the nodes along the chord
    and never twists a light segment, which keeps heavy loads on light ropes stable.
    """
    rot = state.work_seg_rot
    inertia_local = np.empty(3)
    for r in range(model.rope_radius.shape[0]):
        n0 = model.rope_node_start[r]
        s0 = model.rope_seg_start[r]
        for s in range(s0, model.rope_seg_start[r + 1]):
            quat_to_matrix(state.seg_orientation[s], rot[s])
            inv_l = 1.0 / model.seg_rest_length[s]
            inertia_local[0] = model.seg_inv_inertia[s, 0]
            inertia_local[1] = model.seg_inv_inertia[s, 1]
            inertia_local[2] = model.seg_inv_inertia[s, 2]
            tension = state.seg_tension[s]
            if tension > 0.0:
                for k in range(2):
                    bend_inertia = model.seg_inertia[s, k]
                    augmented = bend_inertia + h * h * tension * model.seg_rest_length[s]
                    inertia_local[k] = 1.0 / augmented
                    # I w carried into (I + h^2 T l) w+: scale the angular velocity about d_k
                    ex = rot[s, 0, k]
                    ey = rot[s, 1, k]
                    ez = rot[s, 2, k]
                    w = state.seg_angular_velocity[s]
                    along = (w[0] * ex + w[1] * ey + w[2] * ez) * (bend_inertia / augmented - 1.0)
                    w[0] += along * ex
                    w[1] += along * ey
                    w[2] += along * ez
            _world_inverse_inertia(rot[s], inertia_local, state.work_seg_inv_inertia[s])
            a = n0 + s - s0
            dx = state.node_position[a + 1, 0] - state.node_position[a, 0]
            dy = state.node_position[a + 1, 1] - state.node_position[a, 1]
            dz = state.node_position[a + 1, 2] - state.node_position[a, 2]
            length = math.sqrt(dx * dx + dy * dy + dz * dz)
            state.work_dir[s, 0] = dx / length
            state.work_dir[s, 1] = dy / length
            state.work_dir[s, 2] = dz / length
            node_jac = state.work_seg_node_jac[s]
            rot_jac = state.work_seg_rot_jac[s]
            for k in range(2):
                ex = rot[s, 0, k]
                ey = rot[s, 1, k]
                ez = rot[s, 2, k]
                node_jac[k, 0] = ex * inv_l
                node_jac[k, 1] = ey * inv_l
                node_jac[k, 2] = ez * inv_l
                cx, cy, cz = cross(ex, ey, ez, dx, dy, dz)
                rot_jac[k, 0] = cx * inv_l
                rot_jac[k, 1] = cy * inv_l
                rot_jac[k, 2] = cz * inv_l
                state.work_seg_err[s, k] = (ex * dx + ey * dy + ez * dz) * inv_l
            node_jac[2, 0] = state.work_dir[s, 0] * inv_l
            node_jac[2, 1] = state.work_dir[s, 1] * inv_l
            node_jac[2, 2] = state.work_dir[s, 2] * inv_l
            rot_jac[2, :] = 0.0
            state.work_seg_err[s, 2] = length * inv_l - 1.0


@njit(**JIT)
def _add_product(ab, r0, kp, kq, jp, w, jq, sign, block):
    """Band-add sign * Jp W Jq^T at block position (kp, kq)."""
    for i in range(3):
        for k in range(3):
            acc = 0.0
            for l in range(3):
                t = 0.0
                for u in range(3):
                    t += w[l, u] * jq[k, u]
                acc += jp[i, l] * t
            block[i, k] = sign * acc
    _band_add(ab, r0, kp, kq, block)


@njit(**JIT)
def _joint_frames(model, state, r, slot):
    """The two quaternions a joint slot connects (clamp frames at the two ends)."""
    s0 = model.rope_seg_start[r]
    m = model.rope_seg_start[r + 1] - s0
    if slot == 0:
        return state.clamp_orientation[r, 0], state.seg_orientation[s0]
    if slot == m:
        return state.seg_orientation[s0 + m - 1], state.clamp_orientation[r, 1]
    return state.seg_orientation[s0 + slot - 1], state.seg_orientation[s0 + slot]


@njit(**JIT)
def _prepare_joints(model, state):
    """Darboux error C = Omega - Omega0 and the Jacobian G R_a^T of each active joint."""
    rot_a = np.empty((3, 3))
    for r in range(model.rope_radius.shape[0]):
        j0 = model.rope_joint_start[r]
        nj = model.rope_joint_start[r + 1] - j0
        for slot in range(nj):
            jt = j0 + slot
            if model.joint_active[jt] == 0:
                continue
            qa, qb = _joint_frames(model, state, r, slot)
            rw, rx, ry, rz = _relative_rotation(qa, qb)
            inv_len = 1.0 / model.joint_rest_length[jt]
            state.work_joint_err[jt, 0] = 2.0 * inv_len * rx - model.joint_rest_darboux[jt, 0]
            state.work_joint_err[jt, 1] = 2.0 * inv_len * ry - model.joint_rest_darboux[jt, 1]
            state.work_joint_err[jt, 2] = 2.0 * inv_len * rz - model.joint_rest_darboux[jt, 2]
            # d Omega / dt = G R_a^T (w_b - w_a), G = (rw I - [r_v]x) / l
            g = ((rw, rz, -ry), (-rz, rw, rx), (ry, -rx, rw))
            quat_to_matrix(qa, rot_a)
            for i in range(3):
                for k in range(3):
                    acc = 0.0
                    for l in range(3):
                        acc += g[i][l] * rot_a[k, l]
                    state.work_joint_jac[jt, i, k] = acc * inv_len


@njit(**JIT)
def _prepare_nodes(model, state):
    """Node inverse mass as a 3x3 matrix (attachments turn it into a point inverse mass with their body)."""
    for i in range(model.node_inv_mass.shape[0]):
        w = model.node_inv_mass[i]
        for a in range(3):
            for b in range(3):
                state.work_node_w[i, a, b] = w if a == b else 0.0


@njit(**JIT)
def _prepare_attachments(model, state, body_position, body_orientation, body_inv_mass, body_inv_inertia_local):
    """Lever arms and mass matrices of every attachment.

    An attached node (inverse mass W) and its body (point inverse mass K_b) move together at that point, so
    the rope solves use their combined point inverse mass K = K_b (W + K_b)^-1 W; an impulse P on the node
    is split into P_b = (W + K_b)^-1 W P for the body and K_b P_b for the node (equal point velocities).
    """
    rot = np.empty((3, 3))
    tmp = np.empty((3, 3))
    for a in range(model.att_node.shape[0]):
        node = model.att_node[a]
        b = model.att_body[a]
        quat_to_matrix(body_orientation[b], rot)
        lx = model.att_local[a, 0]
        ly = model.att_local[a, 1]
        lz = model.att_local[a, 2]
        for i in range(3):
            state.work_att_lever[a, i] = rot[i, 0] * lx + rot[i, 1] * ly + rot[i, 2] * lz
        _world_inverse_inertia(rot, body_inv_inertia_local[b], state.work_att_body_inv_inertia[a])
        kb = state.work_att_kb[a]
        _point_inverse_mass(body_inv_mass[b], state.work_att_body_inv_inertia[a],
                            state.work_att_lever[a, 0], state.work_att_lever[a, 1], state.work_att_lever[a, 2], kb)
        wn = state.work_att_node_w[a]
        wn[:, :] = state.work_node_w[node]
        for i in range(3):
            for j in range(3):
                tmp[i, j] = kb[i, j] + wn[i, j]
        if not _inverse3(tmp, state.work_att_eff_mass[a]):  # node pinned and body fixed: nothing can move
            state.work_att_eff_mass[a, :, :] = 0.0
        _matmul3(state.work_att_eff_mass[a], wn, state.work_att_split[a])
        _matmul3(kb, state.work_att_split[a], state.work_node_w[node])


@njit(**JIT)
def _matmul3(a, b, out):
    for i in range(3):
        for j in range(3):
            acc = 0.0
            for k in range(3):
                acc += a[i, k] * b[k, j]
            out[i, j] = acc


@njit(**JIT)
def _node_inverse_mass_quadratic(model, state, node, ax, ay, az, bx, by, bz):
    """a^T W b for the inverse mass W of a node (combined with its body when attached)."""
    w = state.work_node_w[node]
    return (ax * (w[0, 0] * bx + w[0, 1] * by + w[0, 2] * bz)
            + ay * (w[1, 0] * bx + w[1, 1] * by + w[1, 2] * bz)
            + az * (w[2, 0] * bx + w[2, 1] * by + w[2, 2] * bz))


# ----------------------------------------------------------------------------------------------
# phases of the substep

@njit(**JIT)
def _predict_velocities(model, state, h, gravity):
    for r in range(model.rope_radius.shape[0]):
        decay = 1.0 / (1.0 + h * model.rope_damping[r])
        for i in range(model.rope_node_start[r], model.rope_node_start[r + 1]):
            if model.node_inv_mass[i] == 0.0:
                state.node_velocity[i, :] = 0.0
                continue
            for c in range(3):
                # damp the old velocity only, so that damping never weakens gravity at rest
                state.node_velocity[i, c] = state.node_velocity[i, c] * decay + h * gravity[c]
        for s in range(model.rope_seg_start[r], model.rope_seg_start[r + 1]):
            for c in range(3):
                state.seg_angular_velocity[s, c] *= decay


@njit(**JIT)
def _solve_attachments(model, state, h, body_position, body_linear_velocity, body_angular_velocity, body_inv_mass):
    """Sequential impulses: node velocity = body point velocity, with position drift fed back."""
    beta = model.attachment_erp / h
    for a in range(model.att_node.shape[0]):
        node = model.att_node[a]
        b = model.att_body[a]
        rx = state.work_att_lever[a, 0]
        ry = state.work_att_lever[a, 1]
        rz = state.work_att_lever[a, 2]
        wx, wy, wz = cross(body_angular_velocity[b, 0], body_angular_velocity[b, 1], body_angular_velocity[b, 2],
                           rx, ry, rz)
        ex = state.node_velocity[node, 0] - body_linear_velocity[b, 0] - wx
        ex += beta * (state.node_position[node, 0] - body_position[b, 0] - rx)
        ey = state.node_velocity[node, 1] - body_linear_velocity[b, 1] - wy
        ey += beta * (state.node_position[node, 1] - body_position[b, 1] - ry)
        ez = state.node_velocity[node, 2] - body_linear_velocity[b, 2] - wz
        ez += beta * (state.node_position[node, 2] - body_position[b, 2] - rz)
        em = state.work_att_eff_mass[a]
        px = -(em[0, 0] * ex + em[0, 1] * ey + em[0, 2] * ez)
        py = -(em[1, 0] * ex + em[1, 1] * ey + em[1, 2] * ez)
        pz = -(em[2, 0] * ex + em[2, 1] * ey + em[2, 2] * ez)
        wn = state.work_att_node_w[a]
        state.node_velocity[node, 0] += wn[0, 0] * px + wn[0, 1] * py + wn[0, 2] * pz
        state.node_velocity[node, 1] += wn[1, 0] * px + wn[1, 1] * py + wn[1, 2] * pz
        state.node_velocity[node, 2] += wn[2, 0] * px + wn[2, 1] * py + wn[2, 2] * pz
        apply_body_impulse(model, state, a, -px, -py, -pz, body_linear_velocity, body_angular_velocity, body_inv_mass)


@njit(**JIT)
def _assemble_rope_system(model, state, r, h):
    """Band matrix J W J^T + compliance of one rope (rows 3 * blocks)."""
    ab = state.work_band
    r0 = model.rope_row_start[r]
    nrows = model.rope_row_start[r + 1] - r0
    n0 = model.rope_node_start[r]
    s0 = model.rope_seg_start[r]
    j0 = model.rope_joint_start[r]
    m = model.rope_seg_start[r + 1] - s0
    for i in range(nrows):
        for d in range(BAND + 1):
            ab[r0 + i, d] = 0.0
    block = np.empty((3, 3))
    jac = np.empty((3, 3, 3))
    ks = np.empty(3, dtype=np.int64)
    # nodes: J = +N_{a-1} on S_{a-1}, -N_a on S_a (N: the node rows of the stretch-shear block)
    for a in range(m + 1):
        node = n0 + a
        w3 = state.work_node_w[node]
        if a > 0:
            _add_product(ab, r0, 2 * a - 1, 2 * a - 1, state.work_seg_node_jac[s0 + a - 1], w3,
                         state.work_seg_node_jac[s0 + a - 1], 1.0, block)
        if a < m:
            _add_product(ab, r0, 2 * a + 1, 2 * a + 1, state.work_seg_node_jac[s0 + a], w3,
                         state.work_seg_node_jac[s0 + a], 1.0, block)
        if 0 < a < m:
            _add_product(ab, r0, 2 * a - 1, 2 * a + 1, state.work_seg_node_jac[s0 + a - 1], w3,
                         state.work_seg_node_jac[s0 + a], -1.0, block)
    # segments: shear rows on S_j, +G R_a^T on joint slot j (segment is the 'b' side), -G R_a^T on slot j+1
    for j in range(m):
        seg = s0 + j
        jac[0, :, :] = state.work_seg_rot_jac[seg]
        ks[0] = 2 * j + 1
        nk = 1
        if model.joint_active[j0 + j] != 0:
            jac[nk, :, :] = state.work_joint_jac[j0 + j]
            ks[nk] = 2 * j
            nk += 1
        if model.joint_active[j0 + j + 1] != 0:
            for i in range(3):
                for k in range(3):
                    jac[nk, i, k] = -state.work_joint_jac[j0 + j + 1, i, k]
            ks[nk] = 2 * j + 2
            nk += 1
        for p in range(nk):
            for q in range(p, nk):
                _add_product(ab, r0, ks[p], ks[q], jac[p], state.work_seg_inv_inertia[seg], jac[q], 1.0, block)
    # compliance of joints (implicit Euler: 1 / (h^2 k + h c)), regularisation of stretch-shear rows
    for slot in range(m + 1):
        jt = j0 + slot
        base = 3 * (2 * slot)
        if model.joint_active[jt] == 0:
            for c in range(3):
                ab[r0 + base + c, 0] = 1.0
            continue
        for c in range(3):
            k = model.joint_rest_length[jt] * model.joint_stiffness[jt, c]
            ab[r0 + base + c, 0] += 1.0 / (h * h * k + h * model.joint_damping[jt] * k)
    for j in range(m):
        base = 3 * (2 * j + 1)
        trace = ab[r0 + base, 0] + ab[r0 + base + 1, 0] + ab[r0 + base + 2, 0]
        if trace == 0.0:
            for c in range(3):
                ab[r0 + base + c, 0] = 1.0
        else:
            for c in range(3):
                ab[r0 + base + c, 0] += S_REGULARISATION * trace
    _band_factor(ab, r0, nrows)


@njit(**JIT)
def _rope_rhs(model, state, r, h):
    """-J u - stabilisation, for the current velocities."""
    rhs = state.work_rhs
    r0 = model.rope_row_start[r]
    n0 = model.rope_node_start[r]
    s0 = model.rope_seg_start[r]
    j0 = model.rope_joint_start[r]
    m = model.rope_seg_start[r + 1] - s0
    beta = model.stretch_erp / h
    for j in range(m):
        seg = s0 + j
        a = n0 + j
        nj = state.work_seg_node_jac[seg]
        rj = state.work_seg_rot_jac[seg]
        dvx = state.node_velocity[a + 1, 0] - state.node_velocity[a, 0]
        dvy = state.node_velocity[a + 1, 1] - state.node_velocity[a, 1]
        dvz = state.node_velocity[a + 1, 2] - state.node_velocity[a, 2]
        wx = state.seg_angular_velocity[seg, 0]
        wy = state.seg_angular_velocity[seg, 1]
        wz = state.seg_angular_velocity[seg, 2]
        base = r0 + 3 * (2 * j + 1)
        for c in range(3):
            rate = nj[c, 0] * dvx + nj[c, 1] * dvy + nj[c, 2] * dvz + rj[c, 0] * wx + rj[c, 1] * wy + rj[c, 2] * wz
            rhs[base + c] = -rate - beta * state.work_seg_err[seg, c]
    for slot in range(m + 1):
        jt = j0 + slot
        base = r0 + 3 * (2 * slot)
        if model.joint_active[jt] == 0:
            rhs[base:base + 3] = 0.0
            continue
        # relative angular velocity w_b - w_a (clamp frames do not move)
        dx = 0.0
        dy = 0.0
        dz = 0.0
        if slot < m:
            dx += state.seg_angular_velocity[s0 + slot, 0]
            dy += state.seg_angular_velocity[s0 + slot, 1]
            dz += state.seg_angular_velocity[s0 + slot, 2]
        if slot > 0:
            dx -= state.seg_angular_velocity[s0 + slot - 1, 0]
            dy -= state.seg_angular_velocity[s0 + slot - 1, 1]
            dz -= state.seg_angular_velocity[s0 + slot - 1, 2]
        g = state.work_joint_jac[jt]
        for c in range(3):
            k = model.joint_rest_length[jt] * model.joint_stiffness[jt, c]
            gamma = h * h * k + h * model.joint_damping[jt] * k
            rate = g[c, 0] * dx + g[c, 1] * dy + g[c, 2] * dz
            # the compliance term sees the impulse already applied in earlier iterations of this substep
            rhs[base + c] = -rate - (h * k / gamma) * state.work_joint_err[jt, c] - state.work_lambda[base + c] / gamma


@njit(**JIT)
def _apply_rope_impulses(model, state, r, h, body_linear_velocity, body_angular_velocity, body_inv_mass):
    lam = state.work_rhs
    r0 = model.rope_row_start[r]
    n0 = model.rope_node_start[r]
    s0 = model.rope_seg_start[r]
    j0 = model.rope_joint_start[r]
    m = model.rope_seg_start[r + 1] - s0
    for a in range(m + 1):
        px = 0.0
        py = 0.0
        pz = 0.0
        if a > 0:  # + N_{a-1}^T lambda_{S_{a-1}}
            nj = state.work_seg_node_jac[s0 + a - 1]
            base = r0 + 3 * (2 * a - 1)
            px += nj[0, 0] * lam[base] + nj[1, 0] * lam[base + 1] + nj[2, 0] * lam[base + 2]
            py += nj[0, 1] * lam[base] + nj[1, 1] * lam[base + 1] + nj[2, 1] * lam[base + 2]
            pz += nj[0, 2] * lam[base] + nj[1, 2] * lam[base + 1] + nj[2, 2] * lam[base + 2]
        if a < m:  # - N_a^T lambda_{S_a}
            nj = state.work_seg_node_jac[s0 + a]
            base = r0 + 3 * (2 * a + 1)
            px -= nj[0, 0] * lam[base] + nj[1, 0] * lam[base + 1] + nj[2, 0] * lam[base + 2]
            py -= nj[0, 1] * lam[base] + nj[1, 1] * lam[base + 1] + nj[2, 1] * lam[base + 2]
            pz -= nj[0, 2] * lam[base] + nj[1, 2] * lam[base + 1] + nj[2, 2] * lam[base + 2]
        apply_node_impulse(model, state, n0 + a, px, py, pz, body_linear_velocity, body_angular_velocity, body_inv_mass)
    for j in range(m):
        seg = s0 + j
        base = r0 + 3 * (2 * j + 1)
        # the stretch row's impulse (a negative lambda pulls the ends together) feeds the geometric stiffness
        state.seg_tension[seg] -= lam[base + 2] / (model.seg_rest_length[seg] * h)
        rj = state.work_seg_rot_jac[seg]
        tx = rj[0, 0] * lam[base] + rj[1, 0] * lam[base + 1]
        ty = rj[0, 1] * lam[base] + rj[1, 1] * lam[base + 1]
        tz = rj[0, 2] * lam[base] + rj[1, 2] * lam[base + 1]
        if model.joint_active[j0 + j] != 0:
            g = state.work_joint_jac[j0 + j]
            jb = r0 + 3 * (2 * j)
            tx += g[0, 0] * lam[jb] + g[1, 0] * lam[jb + 1] + g[2, 0] * lam[jb + 2]
            ty += g[0, 1] * lam[jb] + g[1, 1] * lam[jb + 1] + g[2, 1] * lam[jb + 2]
            tz += g[0, 2] * lam[jb] + g[1, 2] * lam[jb + 1] + g[2, 2] * lam[jb + 2]
        if model.joint_active[j0 + j + 1] != 0:
            g = state.work_joint_jac[j0 + j + 1]
            jb = r0 + 3 * (2 * j + 2)
            tx -= g[0, 0] * lam[jb] + g[1, 0] * lam[jb + 1] + g[2, 0] * lam[jb + 2]
            ty -= g[0, 1] * lam[jb] + g[1, 1] * lam[jb + 1] + g[2, 1] * lam[jb + 2]
            tz -= g[0, 2] * lam[jb] + g[1, 2] * lam[jb + 1] + g[2, 2] * lam[jb + 2]
        ii = state.work_seg_inv_inertia[seg]
        state.seg_angular_velocity[seg, 0] += ii[0, 0] * tx + ii[0, 1] * ty + ii[0, 2] * tz
        state.seg_angular_velocity[seg, 1] += ii[1, 0] * tx + ii[1, 1] * ty + ii[1, 2] * tz
        state.seg_angular_velocity[seg, 2] += ii[2, 0] * tx + ii[2, 1] * ty + ii[2, 2] * tz


@njit(**JIT)
def _thomas_pass(model, state, r, h, predicted, erp, body_linear_velocity, body_angular_velocity, body_inv_mass):
    """One exact solve of the tridiagonal inextensibility system; returns the largest relative length error.

    predicted=False: directions of the current segments, rhs = -J v (velocity constraint).
    predicted=True:  directions of the end-of-step segments x + h v, rhs = -erp C(x + h v) / h (Newton step).
    """
    n0 = model.rope_node_start[r]
    s0 = model.rope_seg_start[r]
    m = model.rope_seg_start[r + 1] - s0
    direction = state.work_dir
    diag = state.work_tri_diag
    off = state.work_tri_off
    rhs = state.work_tri_rhs
    worst = 0.0
    for j in range(m):
        seg = s0 + j
        a = n0 + j
        dx = state.node_position[a + 1, 0] - state.node_position[a, 0]
        dy = state.node_position[a + 1, 1] - state.node_position[a, 1]
        dz = state.node_position[a + 1, 2] - state.node_position[a, 2]
        dvx = state.node_velocity[a + 1, 0] - state.node_velocity[a, 0]
        dvy = state.node_velocity[a + 1, 1] - state.node_velocity[a, 1]
        dvz = state.node_velocity[a + 1, 2] - state.node_velocity[a, 2]
        if predicted:
            dx += h * dvx
            dy += h * dvy
            dz += h * dvz
        length = math.sqrt(dx * dx + dy * dy + dz * dz)
        direction[seg, 0] = dx / length
        direction[seg, 1] = dy / length
        direction[seg, 2] = dz / length
        if predicted:
            err = length - model.seg_rest_length[seg]
            worst = max(worst, abs(err) / model.seg_rest_length[seg])
            rhs[seg] = -erp * err / h
        else:
            rhs[seg] = -(dvx * direction[seg, 0] + dvy * direction[seg, 1] + dvz * direction[seg, 2])
    if predicted and worst < model.length_tolerance:
        return worst
    for j in range(m):
        seg = s0 + j
        a = n0 + j
        ux = direction[seg, 0]
        uy = direction[seg, 1]
        uz = direction[seg, 2]
        # a taut straight rope between two pins has dependent rows: a relative compliance keeps pivots positive
        diag[seg] = (1.0 + S_REGULARISATION) * (
            _node_inverse_mass_quadratic(model, state, a, ux, uy, uz, ux, uy, uz)
            + _node_inverse_mass_quadratic(model, state, a + 1, ux, uy, uz, ux, uy, uz))
        if j + 1 < m:
            off[seg] = -_node_inverse_mass_quadratic(model, state, a + 1, ux, uy, uz, direction[seg + 1, 0],
                                                     direction[seg + 1, 1], direction[seg + 1, 2])
        if diag[seg] == 0.0:  # both ends immovable
            diag[seg] = 1.0
            rhs[seg] = 0.0
            if j + 1 < m:
                off[seg] = 0.0
            if j > 0:
                off[seg - 1] = 0.0
    # Thomas algorithm (symmetric, diagonally dominant): forward elimination, back substitution
    for j in range(1, m):
        seg = s0 + j
        factor = off[seg - 1] / diag[seg - 1]
        diag[seg] -= factor * off[seg - 1]
        rhs[seg] -= factor * rhs[seg - 1]
    rhs[s0 + m - 1] /= diag[s0 + m - 1]
    for j in range(m - 2, -1, -1):
        seg = s0 + j
        rhs[seg] = (rhs[seg] - off[seg] * rhs[seg + 1]) / diag[seg]
    # a negative lambda pulls the two ends together: tension
    for j in range(m):
        state.seg_tension[s0 + j] -= rhs[s0 + j] / h
    # node impulse: +lambda_{j-1} u_{j-1} - lambda_j u_j
    for a in range(m + 1):
        px = 0.0
        py = 0.0
        pz = 0.0
        if a > 0:
            seg = s0 + a - 1
            px += rhs[seg] * direction[seg, 0]
            py += rhs[seg] * direction[seg, 1]
            pz += rhs[seg] * direction[seg, 2]
        if a < m:
            seg = s0 + a
            px -= rhs[seg] * direction[seg, 0]
            py -= rhs[seg] * direction[seg, 1]
            pz -= rhs[seg] * direction[seg, 2]
        apply_node_impulse(model, state, n0 + a, px, py, pz, body_linear_velocity, body_angular_velocity, body_inv_mass)
    return worst


@njit(**JIT)
def _integrate(model, state, h):
    for i in range(model.node_inv_mass.shape[0]):
        for c in range(3):
            state.node_position[i, c] += h * state.node_velocity[i, c]
    for s in range(model.seg_rest_length.shape[0]):
        rotate_by_rotation_vector(state.seg_orientation[s], h * state.seg_angular_velocity[s, 0],
                                  h * state.seg_angular_velocity[s, 1], h * state.seg_angular_velocity[s, 2])


@njit(**JIT)
def rope_substep(rope_model, rope_state, h, gravity, body_position, body_orientation, body_linear_velocity,
                 body_angular_velocity, body_inv_mass, body_inv_inertia_local):
    """Advance every rope by h; rope impulses on attached bodies change the body velocity arrays in place.

    The caller integrates the bodies afterwards (their gravity is the caller's too).
    """
    model = rope_model
    state = rope_state
    n_ropes = model.rope_radius.shape[0]
    if n_ropes == 0:
        return
    _predict_velocities(model, state, h, gravity)
    _prepare_segments(model, state, h)
    _prepare_nodes(model, state)
    _prepare_joints(model, state)
    _prepare_attachments(model, state, body_position, body_orientation, body_inv_mass, body_inv_inertia_local)
    for r in range(n_ropes):
        _assemble_rope_system(model, state, r, h)
    state.seg_tension[:] = 0.0  # re-accumulated from this substep's impulses
    prepare_rope_contacts(model, state, body_position, body_orientation, body_inv_inertia_local)
    state.work_lambda[:] = 0.0
    for it in range(model.iterations):
        _solve_attachments(model, state, h, body_position, body_linear_velocity, body_angular_velocity, body_inv_mass)
        for sweep in range(model.contact_iterations):
            solve_rope_contacts(model, state, h, body_linear_velocity, body_angular_velocity, body_inv_mass)
        for r in range(n_ropes):
            r0 = model.rope_row_start[r]
            _rope_rhs(model, state, r, h)
            _band_solve(state.work_band, r0, model.rope_row_start[r + 1] - r0, state.work_rhs)
            for row in range(r0, model.rope_row_start[r + 1]):
                state.work_lambda[row] += state.work_rhs[row]
            _apply_rope_impulses(model, state, r, h, body_linear_velocity, body_angular_velocity, body_inv_mass)
    # contacts get the last word on velocities before inextensibility, which only acts along the rope
    for sweep in range(model.contact_iterations):
        solve_rope_contacts(model, state, h, body_linear_velocity, body_angular_velocity, body_inv_mass)
    for r in range(n_ropes):
        _thomas_pass(model, state, r, h, False, 1.0, body_linear_velocity, body_angular_velocity, body_inv_mass)
        for it in range(model.length_iterations):
            worst = _thomas_pass(model, state, r, h, True, model.length_erp, body_linear_velocity,
                                 body_angular_velocity, body_inv_mass)
            if worst < model.length_tolerance:
                break
    _integrate(model, state, h)


@njit(**JIT)
def first_non_finite_rope(rope_model, rope_state):
    """Index of the first rope with a non-finite node position or velocity, or -1."""
    for r in range(rope_model.rope_radius.shape[0]):
        for i in range(rope_model.rope_node_start[r], rope_model.rope_node_start[r + 1]):
            for c in range(3):
                if not (math.isfinite(rope_state.node_position[i, c]) and math.isfinite(rope_state.node_velocity[i, c])):
                    return r
    return -1


@njit(**JIT)
def max_length_error(rope_model, rope_state):
    """Largest relative deviation of a segment length from its rest length, over all ropes."""
    worst = 0.0
    for r in range(rope_model.rope_radius.shape[0]):
        for s in range(rope_model.rope_seg_start[r], rope_model.rope_seg_start[r + 1]):
            a = rope_model.rope_node_start[r] + s - rope_model.rope_seg_start[r]
            dx = rope_state.node_position[a + 1, 0] - rope_state.node_position[a, 0]
            dy = rope_state.node_position[a + 1, 1] - rope_state.node_position[a, 1]
            dz = rope_state.node_position[a + 1, 2] - rope_state.node_position[a, 2]
            rest = rope_model.seg_rest_length[s]
            worst = max(worst, abs(math.sqrt(dx * dx + dy * dy + dz * dz) - rest) / rest)
    return worst


@njit(**JIT)
def rope_advance(rope_model, rope_state, h, n_steps, gravity, body_position, body_orientation, body_linear_velocity,
                 body_angular_velocity, body_inv_mass, body_inv_inertia_local, watch_nodes, node_trace, body_trace):
    """Stand-alone driver: n_steps substeps of ropes with free bodies (gravity, no contacts).

    node_trace (n_steps, len(watch_nodes), 3) and body_trace (n_steps, n_bodies, 3) receive positions after each
    step when their first dimension is n_steps (pass empty arrays to skip). Returns the largest relative
    segment length error seen after any step.
    """
    worst = 0.0
    for step in range(n_steps):
        for b in range(body_inv_mass.shape[0]):
            if body_inv_mass[b] > 0.0:
                for c in range(3):
                    body_linear_velocity[b, c] += h * gravity[c]
        rope_substep(rope_model, rope_state, h, gravity, body_position, body_orientation, body_linear_velocity,
                     body_angular_velocity, body_inv_mass, body_inv_inertia_local)
        for b in range(body_inv_mass.shape[0]):
            for c in range(3):
                body_position[b, c] += h * body_linear_velocity[b, c]
            rotate_by_rotation_vector(body_orientation[b], h * body_angular_velocity[b, 0],
                                      h * body_angular_velocity[b, 1], h * body_angular_velocity[b, 2])
        if node_trace.shape[0] == n_steps:
            for k in range(watch_nodes.shape[0]):
                node_trace[step, k, :] = rope_state.node_position[watch_nodes[k]]
        if body_trace.shape[0] == n_steps:
            body_trace[step, :, :] = body_position
        worst = max(worst, max_length_error(rope_model, rope_state))
    return worst
