"""Impulses on rope nodes, passed on to the body a node is attached to (shared by the rope solvers).

The solvers hand these helpers a small tuple of the arrays they touch (NodeImpulse), built once per sweep:
reading fields of the large rope Model and State tuples inside per-node loops is costly in compiled code.
"""
from typing import NamedTuple

import numpy as np
from numba import njit

from ..math3d import JIT, cross


class NodeImpulse(NamedTuple):
    node_attachment: np.ndarray   # (Nn,) int64 attachment of each node, -1 if none
    node_velocity: np.ndarray     # (Nn, 3)
    node_w: np.ndarray            # (Nn, 3, 3) inverse mass seen by constraints (combined with the body if tied)
    att_body: np.ndarray          # (A,) int64
    att_split: np.ndarray         # (A, 3, 3) share of a node impulse the body takes
    att_kb: np.ndarray            # (A, 3, 3) body point inverse mass
    att_lever: np.ndarray         # (A, 3)
    att_body_inv_inertia: np.ndarray  # (A, 3, 3) world frame


@njit(**JIT)
def node_impulse_arrays(model, state):
    return NodeImpulse(model.node_attachment, state.node_velocity, state.work_node_w, model.att_body,
                       state.work_att_split, state.work_att_kb, state.work_att_lever, state.work_att_body_inv_inertia)


@njit(**JIT, inline="always")
def apply_node_impulse(imp, node, px, py, pz, body_linear_velocity, body_angular_velocity, body_inv_mass):
    a = imp.node_attachment[node]
    velocity = imp.node_velocity
    if a < 0:
        w = imp.node_w[node]
        velocity[node, 0] += w[0, 0] * px + w[0, 1] * py + w[0, 2] * pz
        velocity[node, 1] += w[1, 0] * px + w[1, 1] * py + w[1, 2] * pz
        velocity[node, 2] += w[2, 0] * px + w[2, 1] * py + w[2, 2] * pz
        return
    split = imp.att_split[a]
    bx = split[0, 0] * px + split[0, 1] * py + split[0, 2] * pz
    by = split[1, 0] * px + split[1, 1] * py + split[1, 2] * pz
    bz = split[2, 0] * px + split[2, 1] * py + split[2, 2] * pz
    kb = imp.att_kb[a]
    velocity[node, 0] += kb[0, 0] * bx + kb[0, 1] * by + kb[0, 2] * bz
    velocity[node, 1] += kb[1, 0] * bx + kb[1, 1] * by + kb[1, 2] * bz
    velocity[node, 2] += kb[2, 0] * bx + kb[2, 1] * by + kb[2, 2] * bz
    apply_body_impulse(imp, a, bx, by, bz, body_linear_velocity, body_angular_velocity, body_inv_mass)


@njit(**JIT, inline="always")
def apply_body_impulse(imp, a, px, py, pz, body_linear_velocity, body_angular_velocity, body_inv_mass):
    b = imp.att_body[a]
    wb = body_inv_mass[b]
    body_linear_velocity[b, 0] += wb * px
    body_linear_velocity[b, 1] += wb * py
    body_linear_velocity[b, 2] += wb * pz
    lever = imp.att_lever[a]
    tx, ty, tz = cross(lever[0], lever[1], lever[2], px, py, pz)
    ii = imp.att_body_inv_inertia[a]
    body_angular_velocity[b, 0] += ii[0, 0] * tx + ii[0, 1] * ty + ii[0, 2] * tz
    body_angular_velocity[b, 1] += ii[1, 0] * tx + ii[1, 1] * ty + ii[1, 2] * tz
    body_angular_velocity[b, 2] += ii[2, 0] * tx + ii[2, 1] * ty + ii[2, 2] * tz
