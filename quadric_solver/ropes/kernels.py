"""Compiled kernels of the Cosserat rope substep (see quadric_solver/rope.py for the model).

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

from ..particles.targets import push_rope_nodes
from ..math3d import JIT, cross, quat_mul, quat_to_matrix, rotate_by_rotation_vector, world_inverse_inertia
from .contacts import prepare_rope_contacts, solve_rope_contacts
from .impulses import apply_body_impulse, apply_node_impulse, node_impulse_arrays

BAND = 8  # scalar half-bandwidth: blocks couple to blocks two away, 3 rows each -> 3*2+2
S_REGULARISATION = 1e-9  # relative compliance on hard rows that pins can make dependent


# ----------------------------------------------------------------------------------------------
# small dense helpers (3x3, written into preallocated arrays)

@njit(**JIT, inline="always")
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


@njit(**JIT, inline="always")
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

@njit(**JIT, inline="always")
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

@njit(**JIT, inline="always")
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
    rope_radius = model.rope_radius
    rope_node_start = model.rope_node_start
    rope_seg_start = model.rope_seg_start
    seg_rest_length = model.seg_rest_length
    seg_inv_inertia = model.seg_inv_inertia
    seg_inertia = model.seg_inertia
    work_seg_rot = state.work_seg_rot
    seg_orientation = state.seg_orientation
    seg_tension = state.seg_tension
    seg_angular_velocity = state.seg_angular_velocity
    work_seg_inv_inertia = state.work_seg_inv_inertia
    node_position = state.node_position
    work_dir = state.work_dir
    work_seg_node_jac = state.work_seg_node_jac
    work_seg_rot_jac = state.work_seg_rot_jac
    work_seg_err = state.work_seg_err
    rot = work_seg_rot
    inertia_local = np.empty(3)
    for r in range(rope_radius.shape[0]):
        n0 = rope_node_start[r]
        s0 = rope_seg_start[r]
        for s in range(s0, rope_seg_start[r + 1]):
            quat_to_matrix(seg_orientation[s], rot[s])
            inv_l = 1.0 / seg_rest_length[s]
            inertia_local[0] = seg_inv_inertia[s, 0]
            inertia_local[1] = seg_inv_inertia[s, 1]
            inertia_local[2] = seg_inv_inertia[s, 2]
            tension = seg_tension[s]
            if tension > 0.0:
                for k in range(2):
                    bend_inertia = seg_inertia[s, k]
                    augmented = bend_inertia + h * h * tension * seg_rest_length[s]
                    inertia_local[k] = 1.0 / augmented
                    # I w carried into (I + h^2 T l) w+: scale the angular velocity about d_k
                    ex = rot[s, 0, k]
                    ey = rot[s, 1, k]
                    ez = rot[s, 2, k]
                    w = seg_angular_velocity[s]
                    along = (w[0] * ex + w[1] * ey + w[2] * ez) * (bend_inertia / augmented - 1.0)
                    w[0] += along * ex
                    w[1] += along * ey
                    w[2] += along * ez
            world_inverse_inertia(rot[s], inertia_local, work_seg_inv_inertia[s])
            a = n0 + s - s0
            dx = node_position[a + 1, 0] - node_position[a, 0]
            dy = node_position[a + 1, 1] - node_position[a, 1]
            dz = node_position[a + 1, 2] - node_position[a, 2]
            length = math.sqrt(dx * dx + dy * dy + dz * dz)
            work_dir[s, 0] = dx / length
            work_dir[s, 1] = dy / length
            work_dir[s, 2] = dz / length
            node_jac = work_seg_node_jac[s]
            rot_jac = work_seg_rot_jac[s]
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
                work_seg_err[s, k] = (ex * dx + ey * dy + ez * dz) * inv_l
            node_jac[2, 0] = work_dir[s, 0] * inv_l
            node_jac[2, 1] = work_dir[s, 1] * inv_l
            node_jac[2, 2] = work_dir[s, 2] * inv_l
            rot_jac[2, :] = 0.0
            work_seg_err[s, 2] = length * inv_l - 1.0


@njit(**JIT, inline="always")
def _add_product(ab, r0, kp, kq, jp, w, jq, sign, block):
    """Band-add sign * Jp W Jq^T at block position (kp, kq)."""
    for k in range(3):  # W Jq^T, column by column
        t0 = w[0, 0] * jq[k, 0] + w[0, 1] * jq[k, 1] + w[0, 2] * jq[k, 2]
        t1 = w[1, 0] * jq[k, 0] + w[1, 1] * jq[k, 1] + w[1, 2] * jq[k, 2]
        t2 = w[2, 0] * jq[k, 0] + w[2, 1] * jq[k, 1] + w[2, 2] * jq[k, 2]
        for i in range(3):
            block[i, k] = sign * (jp[i, 0] * t0 + jp[i, 1] * t1 + jp[i, 2] * t2)
    _band_add(ab, r0, kp, kq, block)


@njit(**JIT)
def _prepare_joints(model, state):
    """Darboux error C = Omega - Omega0 and the Jacobian G R_a^T of each active joint."""
    rope_radius = model.rope_radius
    rope_joint_start = model.rope_joint_start
    joint_active = model.joint_active
    joint_rest_length = model.joint_rest_length
    joint_rest_darboux = model.joint_rest_darboux
    rope_seg_start = model.rope_seg_start
    work_joint_err = state.work_joint_err
    work_seg_rot_ = state.work_seg_rot
    work_joint_jac = state.work_joint_jac
    seg_orientation = state.seg_orientation
    clamp_orientation = state.clamp_orientation
    rot_a = np.empty((3, 3))
    for r in range(rope_radius.shape[0]):
        j0 = rope_joint_start[r]
        nj = rope_joint_start[r + 1] - j0
        for slot in range(nj):
            jt = j0 + slot
            if joint_active[jt] == 0:
                continue
            # the two frames this slot joins; the end slots join a segment to its clamp frame
            s0 = rope_seg_start[r]
            qa = clamp_orientation[r, 0] if slot == 0 else seg_orientation[s0 + slot - 1]
            qb = clamp_orientation[r, 1] if slot == nj - 1 else seg_orientation[s0 + slot]
            rw, rx, ry, rz = _relative_rotation(qa, qb)
            inv_len = 1.0 / joint_rest_length[jt]
            work_joint_err[jt, 0] = 2.0 * inv_len * rx - joint_rest_darboux[jt, 0]
            work_joint_err[jt, 1] = 2.0 * inv_len * ry - joint_rest_darboux[jt, 1]
            work_joint_err[jt, 2] = 2.0 * inv_len * rz - joint_rest_darboux[jt, 2]
            # d Omega / dt = G R_a^T (w_b - w_a), G = (rw I - [r_v]x) / l, rows (rw, rz, -ry), (-rz, rw, rx),
            # (ry, -rx, rw); R_a of a segment is already in work_seg_rot
            if slot == 0:
                quat_to_matrix(qa, rot_a)
                rot = rot_a
            else:
                rot = work_seg_rot_[rope_seg_start[r] + slot - 1]
            jac = work_joint_jac[jt]
            for k in range(3):
                r0 = rot[k, 0] * inv_len
                r1 = rot[k, 1] * inv_len
                r2 = rot[k, 2] * inv_len
                jac[0, k] = rw * r0 + rz * r1 - ry * r2
                jac[1, k] = -rz * r0 + rw * r1 + rx * r2
                jac[2, k] = ry * r0 - rx * r1 + rw * r2


@njit(**JIT)
def _prepare_nodes(model, state):
    """Node inverse mass as a 3x3 matrix (attachments turn it into a point inverse mass with their body)."""
    node_inv_mass = model.node_inv_mass
    work_node_w = state.work_node_w
    for i in range(node_inv_mass.shape[0]):
        w = node_inv_mass[i]
        for a in range(3):
            for b in range(3):
                work_node_w[i, a, b] = w if a == b else 0.0


@njit(**JIT)
def _prepare_attachments(model, state, body_position, body_orientation, body_inv_mass, body_inv_inertia_local):
    """Lever arms and mass matrices of every attachment.

    An attached node (inverse mass W) and its body (point inverse mass K_b) move together at that point, so
    the rope solves use their combined point inverse mass K = K_b (W + K_b)^-1 W; an impulse P on the node
    is split into P_b = (W + K_b)^-1 W P for the body and K_b P_b for the node (equal point velocities).
    """
    att_node = model.att_node
    att_body = model.att_body
    att_local = model.att_local
    work_att_lever = state.work_att_lever
    work_att_body_inv_inertia = state.work_att_body_inv_inertia
    work_att_kb = state.work_att_kb
    work_att_node_w = state.work_att_node_w
    work_node_w = state.work_node_w
    work_att_eff_mass = state.work_att_eff_mass
    work_att_split = state.work_att_split
    rot = np.empty((3, 3))
    tmp = np.empty((3, 3))
    for a in range(att_node.shape[0]):
        node = att_node[a]
        b = att_body[a]
        quat_to_matrix(body_orientation[b], rot)
        lx = att_local[a, 0]
        ly = att_local[a, 1]
        lz = att_local[a, 2]
        for i in range(3):
            work_att_lever[a, i] = rot[i, 0] * lx + rot[i, 1] * ly + rot[i, 2] * lz
        world_inverse_inertia(rot, body_inv_inertia_local[b], work_att_body_inv_inertia[a])
        kb = work_att_kb[a]
        _point_inverse_mass(body_inv_mass[b], work_att_body_inv_inertia[a],
                            work_att_lever[a, 0], work_att_lever[a, 1], work_att_lever[a, 2], kb)
        wn = work_att_node_w[a]
        wn[:, :] = work_node_w[node]
        for i in range(3):
            for j in range(3):
                tmp[i, j] = kb[i, j] + wn[i, j]
        if not _inverse3(tmp, work_att_eff_mass[a]):  # node pinned and body fixed: nothing can move
            work_att_eff_mass[a, :, :] = 0.0
        _matmul3(work_att_eff_mass[a], wn, work_att_split[a])
        _matmul3(kb, work_att_split[a], work_node_w[node])


@njit(**JIT, inline="always")
def _matmul3(a, b, out):
    for i in range(3):
        for j in range(3):
            acc = 0.0
            for k in range(3):
                acc += a[i, k] * b[k, j]
            out[i, j] = acc


@njit(**JIT, inline="always")
def _node_inverse_mass_quadratic(node_w, node, ax, ay, az, bx, by, bz):
    """a^T W b for the inverse mass W of a node (combined with its body when attached)."""
    w = node_w[node]
    return (ax * (w[0, 0] * bx + w[0, 1] * by + w[0, 2] * bz)
            + ay * (w[1, 0] * bx + w[1, 1] * by + w[1, 2] * bz)
            + az * (w[2, 0] * bx + w[2, 1] * by + w[2, 2] * bz))


@njit(**JIT)
def _predict_velocities(model, state, h, gravity):
    rope_radius = model.rope_radius
    rope_damping = model.rope_damping
    rope_node_start = model.rope_node_start
    node_inv_mass = model.node_inv_mass
    rope_seg_start = model.rope_seg_start
    node_velocity = state.node_velocity
    seg_angular_velocity = state.seg_angular_velocity
    for r in range(rope_radius.shape[0]):
        decay = 1.0 / (1.0 + h * rope_damping[r])
        for i in range(rope_node_start[r], rope_node_start[r + 1]):
            if node_inv_mass[i] == 0.0:
                node_velocity[i, :] = 0.0
                continue
            for c in range(3):
                # damp the old velocity only, so that damping never weakens gravity at rest
                node_velocity[i, c] = node_velocity[i, c] * decay + h * gravity[c]
        for s in range(rope_seg_start[r], rope_seg_start[r + 1]):
            for c in range(3):
                seg_angular_velocity[s, c] *= decay


@njit(**JIT)
def _solve_attachments(model, state, h, body_position, body_linear_velocity, body_angular_velocity, body_inv_mass):
    """Sequential impulses: node velocity = body point velocity, with position drift fed back."""
    imp = node_impulse_arrays(model, state)
    attachment_erp = model.attachment_erp
    att_node = model.att_node
    att_body = model.att_body
    work_att_lever = state.work_att_lever
    node_velocity = state.node_velocity
    node_position = state.node_position
    work_att_eff_mass = state.work_att_eff_mass
    work_att_node_w = state.work_att_node_w
    beta = attachment_erp / h
    for a in range(att_node.shape[0]):
        node = att_node[a]
        b = att_body[a]
        rx = work_att_lever[a, 0]
        ry = work_att_lever[a, 1]
        rz = work_att_lever[a, 2]
        wx, wy, wz = cross(body_angular_velocity[b, 0], body_angular_velocity[b, 1], body_angular_velocity[b, 2],
                           rx, ry, rz)
        ex = node_velocity[node, 0] - body_linear_velocity[b, 0] - wx
        ex += beta * (node_position[node, 0] - body_position[b, 0] - rx)
        ey = node_velocity[node, 1] - body_linear_velocity[b, 1] - wy
        ey += beta * (node_position[node, 1] - body_position[b, 1] - ry)
        ez = node_velocity[node, 2] - body_linear_velocity[b, 2] - wz
        ez += beta * (node_position[node, 2] - body_position[b, 2] - rz)
        em = work_att_eff_mass[a]
        px = -(em[0, 0] * ex + em[0, 1] * ey + em[0, 2] * ez)
        py = -(em[1, 0] * ex + em[1, 1] * ey + em[1, 2] * ez)
        pz = -(em[2, 0] * ex + em[2, 1] * ey + em[2, 2] * ez)
        wn = work_att_node_w[a]
        node_velocity[node, 0] += wn[0, 0] * px + wn[0, 1] * py + wn[0, 2] * pz
        node_velocity[node, 1] += wn[1, 0] * px + wn[1, 1] * py + wn[1, 2] * pz
        node_velocity[node, 2] += wn[2, 0] * px + wn[2, 1] * py + wn[2, 2] * pz
        apply_body_impulse(imp, a, -px, -py, -pz, body_linear_velocity, body_angular_velocity, body_inv_mass)


@njit(**JIT)
def _assemble_rope_system(model, state, r, h):
    """Band matrix J W J^T + compliance of one rope (rows 3 * blocks)."""
    rope_row_start = model.rope_row_start
    rope_node_start = model.rope_node_start
    rope_seg_start = model.rope_seg_start
    rope_joint_start = model.rope_joint_start
    joint_active = model.joint_active
    joint_rest_length = model.joint_rest_length
    joint_stiffness = model.joint_stiffness
    joint_damping = model.joint_damping
    work_band = state.work_band
    work_node_w = state.work_node_w
    work_seg_node_jac = state.work_seg_node_jac
    work_seg_rot_jac = state.work_seg_rot_jac
    work_joint_jac = state.work_joint_jac
    work_seg_inv_inertia = state.work_seg_inv_inertia
    ab = work_band
    r0 = rope_row_start[r]
    nrows = rope_row_start[r + 1] - r0
    n0 = rope_node_start[r]
    s0 = rope_seg_start[r]
    j0 = rope_joint_start[r]
    m = rope_seg_start[r + 1] - s0
    for i in range(nrows):
        for d in range(BAND + 1):
            ab[r0 + i, d] = 0.0
    block = np.empty((3, 3))
    jac = np.empty((3, 3, 3))
    ks = np.empty(3, dtype=np.int64)
    # nodes: J = +N_{a-1} on S_{a-1}, -N_a on S_a (N: the node rows of the stretch-shear block)
    for a in range(m + 1):
        node = n0 + a
        w3 = work_node_w[node]
        if a > 0:
            _add_product(ab, r0, 2 * a - 1, 2 * a - 1, work_seg_node_jac[s0 + a - 1], w3,
                         work_seg_node_jac[s0 + a - 1], 1.0, block)
        if a < m:
            _add_product(ab, r0, 2 * a + 1, 2 * a + 1, work_seg_node_jac[s0 + a], w3,
                         work_seg_node_jac[s0 + a], 1.0, block)
        if 0 < a < m:
            _add_product(ab, r0, 2 * a - 1, 2 * a + 1, work_seg_node_jac[s0 + a - 1], w3,
                         work_seg_node_jac[s0 + a], -1.0, block)
    # segments: shear rows on S_j, +G R_a^T on joint slot j (segment is the 'b' side), -G R_a^T on slot j+1
    for j in range(m):
        seg = s0 + j
        jac[0, :, :] = work_seg_rot_jac[seg]
        ks[0] = 2 * j + 1
        nk = 1
        if joint_active[j0 + j] != 0:
            jac[nk, :, :] = work_joint_jac[j0 + j]
            ks[nk] = 2 * j
            nk += 1
        if joint_active[j0 + j + 1] != 0:
            for i in range(3):
                for k in range(3):
                    jac[nk, i, k] = -work_joint_jac[j0 + j + 1, i, k]
            ks[nk] = 2 * j + 2
            nk += 1
        for p in range(nk):
            for q in range(p, nk):
                _add_product(ab, r0, ks[p], ks[q], jac[p], work_seg_inv_inertia[seg], jac[q], 1.0, block)
    # compliance of joints (implicit Euler: 1 / (h^2 k + h c)), regularisation of stretch-shear rows
    for slot in range(m + 1):
        jt = j0 + slot
        base = 3 * (2 * slot)
        if joint_active[jt] == 0:
            for c in range(3):
                ab[r0 + base + c, 0] = 1.0
            continue
        for c in range(3):
            k = joint_rest_length[jt] * joint_stiffness[jt, c]
            ab[r0 + base + c, 0] += 1.0 / (h * h * k + h * joint_damping[jt] * k)
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
    rope_row_start = model.rope_row_start
    rope_node_start = model.rope_node_start
    rope_seg_start = model.rope_seg_start
    rope_joint_start = model.rope_joint_start
    stretch_erp = model.stretch_erp
    joint_active = model.joint_active
    joint_rest_length = model.joint_rest_length
    joint_stiffness = model.joint_stiffness
    joint_damping = model.joint_damping
    work_rhs = state.work_rhs
    work_seg_node_jac = state.work_seg_node_jac
    work_seg_rot_jac = state.work_seg_rot_jac
    node_velocity = state.node_velocity
    seg_angular_velocity = state.seg_angular_velocity
    work_seg_err = state.work_seg_err
    work_joint_jac = state.work_joint_jac
    work_joint_err = state.work_joint_err
    work_lambda = state.work_lambda
    rhs = work_rhs
    r0 = rope_row_start[r]
    n0 = rope_node_start[r]
    s0 = rope_seg_start[r]
    j0 = rope_joint_start[r]
    m = rope_seg_start[r + 1] - s0
    beta = stretch_erp / h
    for j in range(m):
        seg = s0 + j
        a = n0 + j
        nj = work_seg_node_jac[seg]
        rj = work_seg_rot_jac[seg]
        dvx = node_velocity[a + 1, 0] - node_velocity[a, 0]
        dvy = node_velocity[a + 1, 1] - node_velocity[a, 1]
        dvz = node_velocity[a + 1, 2] - node_velocity[a, 2]
        wx = seg_angular_velocity[seg, 0]
        wy = seg_angular_velocity[seg, 1]
        wz = seg_angular_velocity[seg, 2]
        base = r0 + 3 * (2 * j + 1)
        for c in range(3):
            rate = nj[c, 0] * dvx + nj[c, 1] * dvy + nj[c, 2] * dvz + rj[c, 0] * wx + rj[c, 1] * wy + rj[c, 2] * wz
            rhs[base + c] = -rate - beta * work_seg_err[seg, c]
    for slot in range(m + 1):
        jt = j0 + slot
        base = r0 + 3 * (2 * slot)
        if joint_active[jt] == 0:
            rhs[base:base + 3] = 0.0
            continue
        # relative angular velocity w_b - w_a (clamp frames do not move)
        dx = 0.0
        dy = 0.0
        dz = 0.0
        if slot < m:
            dx += seg_angular_velocity[s0 + slot, 0]
            dy += seg_angular_velocity[s0 + slot, 1]
            dz += seg_angular_velocity[s0 + slot, 2]
        if slot > 0:
            dx -= seg_angular_velocity[s0 + slot - 1, 0]
            dy -= seg_angular_velocity[s0 + slot - 1, 1]
            dz -= seg_angular_velocity[s0 + slot - 1, 2]
        g = work_joint_jac[jt]
        for c in range(3):
            k = joint_rest_length[jt] * joint_stiffness[jt, c]
            gamma = h * h * k + h * joint_damping[jt] * k
            rate = g[c, 0] * dx + g[c, 1] * dy + g[c, 2] * dz
            # the compliance term sees the impulse already applied in earlier iterations of this substep
            rhs[base + c] = -rate - (h * k / gamma) * work_joint_err[jt, c] - work_lambda[base + c] / gamma


@njit(**JIT)
def _apply_rope_impulses(model, state, r, h, body_linear_velocity, body_angular_velocity, body_inv_mass):
    imp = node_impulse_arrays(model, state)
    rope_row_start = model.rope_row_start
    rope_node_start = model.rope_node_start
    rope_seg_start = model.rope_seg_start
    rope_joint_start = model.rope_joint_start
    seg_rest_length = model.seg_rest_length
    joint_active = model.joint_active
    work_rhs = state.work_rhs
    work_seg_node_jac = state.work_seg_node_jac
    seg_tension = state.seg_tension
    work_seg_rot_jac = state.work_seg_rot_jac
    work_joint_jac = state.work_joint_jac
    work_seg_inv_inertia = state.work_seg_inv_inertia
    seg_angular_velocity = state.seg_angular_velocity
    lam = work_rhs
    r0 = rope_row_start[r]
    n0 = rope_node_start[r]
    s0 = rope_seg_start[r]
    j0 = rope_joint_start[r]
    m = rope_seg_start[r + 1] - s0
    for a in range(m + 1):
        px = 0.0
        py = 0.0
        pz = 0.0
        if a > 0:  # + N_{a-1}^T lambda_{S_{a-1}}
            nj = work_seg_node_jac[s0 + a - 1]
            base = r0 + 3 * (2 * a - 1)
            px += nj[0, 0] * lam[base] + nj[1, 0] * lam[base + 1] + nj[2, 0] * lam[base + 2]
            py += nj[0, 1] * lam[base] + nj[1, 1] * lam[base + 1] + nj[2, 1] * lam[base + 2]
            pz += nj[0, 2] * lam[base] + nj[1, 2] * lam[base + 1] + nj[2, 2] * lam[base + 2]
        if a < m:  # - N_a^T lambda_{S_a}
            nj = work_seg_node_jac[s0 + a]
            base = r0 + 3 * (2 * a + 1)
            px -= nj[0, 0] * lam[base] + nj[1, 0] * lam[base + 1] + nj[2, 0] * lam[base + 2]
            py -= nj[0, 1] * lam[base] + nj[1, 1] * lam[base + 1] + nj[2, 1] * lam[base + 2]
            pz -= nj[0, 2] * lam[base] + nj[1, 2] * lam[base + 1] + nj[2, 2] * lam[base + 2]
        apply_node_impulse(imp, n0 + a, px, py, pz, body_linear_velocity, body_angular_velocity, body_inv_mass)
    for j in range(m):
        seg = s0 + j
        base = r0 + 3 * (2 * j + 1)
        # the stretch row's impulse (a negative lambda pulls the ends together) feeds the geometric stiffness
        seg_tension[seg] -= lam[base + 2] / (seg_rest_length[seg] * h)
        rj = work_seg_rot_jac[seg]
        tx = rj[0, 0] * lam[base] + rj[1, 0] * lam[base + 1]
        ty = rj[0, 1] * lam[base] + rj[1, 1] * lam[base + 1]
        tz = rj[0, 2] * lam[base] + rj[1, 2] * lam[base + 1]
        if joint_active[j0 + j] != 0:
            g = work_joint_jac[j0 + j]
            jb = r0 + 3 * (2 * j)
            tx += g[0, 0] * lam[jb] + g[1, 0] * lam[jb + 1] + g[2, 0] * lam[jb + 2]
            ty += g[0, 1] * lam[jb] + g[1, 1] * lam[jb + 1] + g[2, 1] * lam[jb + 2]
            tz += g[0, 2] * lam[jb] + g[1, 2] * lam[jb + 1] + g[2, 2] * lam[jb + 2]
        if joint_active[j0 + j + 1] != 0:
            g = work_joint_jac[j0 + j + 1]
            jb = r0 + 3 * (2 * j + 2)
            tx -= g[0, 0] * lam[jb] + g[1, 0] * lam[jb + 1] + g[2, 0] * lam[jb + 2]
            ty -= g[0, 1] * lam[jb] + g[1, 1] * lam[jb + 1] + g[2, 1] * lam[jb + 2]
            tz -= g[0, 2] * lam[jb] + g[1, 2] * lam[jb + 1] + g[2, 2] * lam[jb + 2]
        ii = work_seg_inv_inertia[seg]
        seg_angular_velocity[seg, 0] += ii[0, 0] * tx + ii[0, 1] * ty + ii[0, 2] * tz
        seg_angular_velocity[seg, 1] += ii[1, 0] * tx + ii[1, 1] * ty + ii[1, 2] * tz
        seg_angular_velocity[seg, 2] += ii[2, 0] * tx + ii[2, 1] * ty + ii[2, 2] * tz


@njit(**JIT)
def _thomas_pass(model, state, r, h, predicted, erp, body_linear_velocity, body_angular_velocity, body_inv_mass):
    """One exact solve of the tridiagonal inextensibility system; returns the largest relative length error.

    predicted=False: directions of the current segments, rhs = -J v (velocity constraint).
    predicted=True:  directions of the end-of-step segments x + h v, rhs = -erp C(x + h v) / h (Newton step).
    """
    imp = node_impulse_arrays(model, state)
    node_w = state.work_node_w
    rope_node_start = model.rope_node_start
    rope_seg_start = model.rope_seg_start
    seg_rest_length = model.seg_rest_length
    length_tolerance = model.length_tolerance
    work_dir = state.work_dir
    work_tri_diag = state.work_tri_diag
    work_tri_off = state.work_tri_off
    work_tri_rhs = state.work_tri_rhs
    node_position = state.node_position
    node_velocity = state.node_velocity
    seg_tension = state.seg_tension
    n0 = rope_node_start[r]
    s0 = rope_seg_start[r]
    m = rope_seg_start[r + 1] - s0
    direction = work_dir
    diag = work_tri_diag
    off = work_tri_off
    rhs = work_tri_rhs
    worst = 0.0
    for j in range(m):
        seg = s0 + j
        a = n0 + j
        dx = node_position[a + 1, 0] - node_position[a, 0]
        dy = node_position[a + 1, 1] - node_position[a, 1]
        dz = node_position[a + 1, 2] - node_position[a, 2]
        dvx = node_velocity[a + 1, 0] - node_velocity[a, 0]
        dvy = node_velocity[a + 1, 1] - node_velocity[a, 1]
        dvz = node_velocity[a + 1, 2] - node_velocity[a, 2]
        if predicted:
            dx += h * dvx
            dy += h * dvy
            dz += h * dvz
        length = math.sqrt(dx * dx + dy * dy + dz * dz)
        direction[seg, 0] = dx / length
        direction[seg, 1] = dy / length
        direction[seg, 2] = dz / length
        if predicted:
            err = length - seg_rest_length[seg]
            worst = max(worst, abs(err) / seg_rest_length[seg])
            rhs[seg] = -erp * err / h
        else:
            rhs[seg] = -(dvx * direction[seg, 0] + dvy * direction[seg, 1] + dvz * direction[seg, 2])
    if predicted and worst < length_tolerance:
        return worst
    for j in range(m):
        seg = s0 + j
        a = n0 + j
        ux = direction[seg, 0]
        uy = direction[seg, 1]
        uz = direction[seg, 2]
        # a taut straight rope between two pins has dependent rows: a relative compliance keeps pivots positive
        diag[seg] = (1.0 + S_REGULARISATION) * (
            _node_inverse_mass_quadratic(node_w, a, ux, uy, uz, ux, uy, uz)
            + _node_inverse_mass_quadratic(node_w, a + 1, ux, uy, uz, ux, uy, uz))
        if j + 1 < m:
            off[seg] = -_node_inverse_mass_quadratic(node_w, a + 1, ux, uy, uz, direction[seg + 1, 0],
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
        seg_tension[s0 + j] -= rhs[s0 + j] / h
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
        apply_node_impulse(imp, n0 + a, px, py, pz, body_linear_velocity, body_angular_velocity, body_inv_mass)
    return worst


@njit(**JIT)
def _integrate(model, state, h):
    node_inv_mass = model.node_inv_mass
    seg_rest_length = model.seg_rest_length
    node_position = state.node_position
    node_velocity = state.node_velocity
    seg_orientation = state.seg_orientation
    seg_angular_velocity = state.seg_angular_velocity
    for i in range(node_inv_mass.shape[0]):
        for c in range(3):
            node_position[i, c] += h * node_velocity[i, c]
    for s in range(seg_rest_length.shape[0]):
        rotate_by_rotation_vector(seg_orientation[s], h * seg_angular_velocity[s, 0],
                                  h * seg_angular_velocity[s, 1], h * seg_angular_velocity[s, 2])


@njit(**JIT)
def rope_substep(rope_model, rope_state, h, gravity, body_position, body_orientation, body_linear_velocity,
                 body_angular_velocity, body_inv_mass, body_inv_inertia_local, targets=None, t=0.0):
    """Advance every rope by h; rope impulses on attached bodies change the body velocity arrays in place.

    The caller integrates the bodies afterwards (their gravity is the caller's too). ``targets``: the force
    objects acting on rope nodes (particles/targets.py) at time t, or None (the stand-alone driver).
    """
    model = rope_model
    state = rope_state
    n_ropes = model.rope_radius.shape[0]
    if n_ropes == 0:
        return
    _predict_velocities(model, state, h, gravity)
    if targets is not None and targets.on_ropes:
        push_rope_nodes(state.node_position, state.node_velocity, model.node_inv_mass, targets, t, h)
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
    rope_radius = rope_model.rope_radius
    rope_node_start = rope_model.rope_node_start
    node_position = rope_state.node_position
    node_velocity = rope_state.node_velocity
    for r in range(rope_radius.shape[0]):
        for i in range(rope_node_start[r], rope_node_start[r + 1]):
            for c in range(3):
                if not (math.isfinite(node_position[i, c]) and math.isfinite(node_velocity[i, c])):
                    return r
    return -1


@njit(**JIT)
def max_length_error(rope_model, rope_state):
    """Largest relative deviation of a segment length from its rest length, over all ropes."""
    rope_radius = rope_model.rope_radius
    rope_seg_start = rope_model.rope_seg_start
    rope_node_start = rope_model.rope_node_start
    seg_rest_length = rope_model.seg_rest_length
    node_position = rope_state.node_position
    worst = 0.0
    for r in range(rope_radius.shape[0]):
        for s in range(rope_seg_start[r], rope_seg_start[r + 1]):
            a = rope_node_start[r] + s - rope_seg_start[r]
            dx = node_position[a + 1, 0] - node_position[a, 0]
            dy = node_position[a + 1, 1] - node_position[a, 1]
            dz = node_position[a + 1, 2] - node_position[a, 2]
            rest = seg_rest_length[s]
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
    node_position = rope_state.node_position
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
                node_trace[step, k, :] = node_position[watch_nodes[k]]
        if body_trace.shape[0] == n_steps:
            body_trace[step, :, :] = body_position
        worst = max(worst, max_length_error(rope_model, rope_state))
    return worst
