"""Impulses on rope nodes, passed on to the body a node is attached to (shared by the rope solvers)."""
from numba import njit

from .math3d import JIT, cross


@njit(**JIT)
def apply_node_impulse(model, state, node, px, py, pz, body_linear_velocity, body_angular_velocity, body_inv_mass):
    a = model.node_attachment[node]
    if a < 0:
        w = state.work_node_w[node]
        state.node_velocity[node, 0] += w[0, 0] * px + w[0, 1] * py + w[0, 2] * pz
        state.node_velocity[node, 1] += w[1, 0] * px + w[1, 1] * py + w[1, 2] * pz
        state.node_velocity[node, 2] += w[2, 0] * px + w[2, 1] * py + w[2, 2] * pz
        return
    split = state.work_att_split[a]
    bx = split[0, 0] * px + split[0, 1] * py + split[0, 2] * pz
    by = split[1, 0] * px + split[1, 1] * py + split[1, 2] * pz
    bz = split[2, 0] * px + split[2, 1] * py + split[2, 2] * pz
    kb = state.work_att_kb[a]
    state.node_velocity[node, 0] += kb[0, 0] * bx + kb[0, 1] * by + kb[0, 2] * bz
    state.node_velocity[node, 1] += kb[1, 0] * bx + kb[1, 1] * by + kb[1, 2] * bz
    state.node_velocity[node, 2] += kb[2, 0] * bx + kb[2, 1] * by + kb[2, 2] * bz
    apply_body_impulse(model, state, a, bx, by, bz, body_linear_velocity, body_angular_velocity, body_inv_mass)


@njit(**JIT)
def apply_body_impulse(model, state, a, px, py, pz, body_linear_velocity, body_angular_velocity, body_inv_mass):
    b = model.att_body[a]
    wb = body_inv_mass[b]
    body_linear_velocity[b, 0] += wb * px
    body_linear_velocity[b, 1] += wb * py
    body_linear_velocity[b, 2] += wb * pz
    tx, ty, tz = cross(state.work_att_lever[a, 0], state.work_att_lever[a, 1], state.work_att_lever[a, 2], px, py, pz)
    ii = state.work_att_body_inv_inertia[a]
    body_angular_velocity[b, 0] += ii[0, 0] * tx + ii[0, 1] * ty + ii[0, 2] * tz
    body_angular_velocity[b, 1] += ii[1, 0] * tx + ii[1, 1] * ty + ii[1, 2] * tz
    body_angular_velocity[b, 2] += ii[2, 0] * tx + ii[2, 1] * ty + ii[2, 2] * tz
