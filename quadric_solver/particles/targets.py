"""Force objects on rigid bodies and rope nodes: packed once per run, applied in the velocity predictions of
the bodies (step.py's forces phase) and of the ropes (ropes/kernels.py), after gravity and damping.

A dynamic body feels each field at its centre of mass, as a force in newtons; a rope node feels the field
times its share of the rope's length (half of each segment beside it), since forces on ropes are per metre
(forces.py). Drag, f = -c v, is taken implicitly, v <- (v + h F / m) / (1 + h c / m), so a large coefficient
on a light body or node slows it to rest but never reverses it, whatever the step; for constant F the body
ends at the terminal velocity F / c. Fixed and kinematic bodies and pinned nodes feel nothing.

Every scene with bodies passes its FieldTargets, empty where no force acts, rather than None: adding a wind to a
pile then reuses the compiled substep loop (and the prebuilt cache) instead of compiling another one.
"""
from typing import NamedTuple

import numpy as np
from numba import njit

from ..math3d import JIT
from ..model import DYNAMIC
from .fields import FIELD_WIDTH, field_force
from .model import field_row


class FieldTargets(NamedTuple):
    field_kind: np.ndarray    # (F,) int64 fields.WIND, VORTEX, TURBULENCE, ATTRACTOR
    field_param: np.ndarray   # (F, FIELD_WIDTH)
    field_body: np.ndarray    # (F, B) 1.0 where field f acts on body b, else 0.0
    field_node: np.ndarray    # (F, Nn) the node's share of its rope's length (m) where field f acts, else 0.0
    body_drag: np.ndarray     # (B,) summed Drag coefficients on each body (N s/m)
    node_drag: np.ndarray     # (Nn,) summed Drag coefficients on each node's share of its rope (N s/m)
    on_bodies: bool           # some force acts on a dynamic body
    on_ropes: bool            # some force acts on a movable rope node


def _chosen(selection, count: int) -> np.ndarray:
    """(count,) 1.0 for the indices a force's bodies or ropes name (None: all of them)."""
    on = np.zeros(count)
    on[list(range(count)) if selection is None else list(selection)] = 1.0
    return on


def _rows(rows: list, width: int) -> np.ndarray:
    """(len(rows), width) float64, also when either is 0."""
    out = np.zeros((len(rows), width))
    for k, row in enumerate(rows):
        out[k] = row
    return out


def build_field_targets(scene, model, rope_model) -> FieldTargets:
    """The FieldTargets of the scene's forces on its bodies and rope nodes (empty where there are none)."""
    n_bodies = model.n_bodies
    if rope_model is not None and scene.ropes:
        n_nodes = rope_model.node_mass.shape[0]
        node_length = np.zeros(n_nodes)
        node_rope = np.zeros(n_nodes, dtype=np.int64)
        for r in range(len(scene.ropes)):
            n0, n1 = rope_model.rope_node_start[r], rope_model.rope_node_start[r + 1]
            s0, s1 = rope_model.rope_seg_start[r], rope_model.rope_seg_start[r + 1]
            lengths = rope_model.seg_rest_length[s0:s1]
            node_length[n0:n1] = 0.5 * (np.concatenate([[0.0], lengths]) + np.concatenate([lengths, [0.0]]))
            node_rope[n0:n1] = r
        movable_node = rope_model.node_inv_mass > 0.0
    else:
        n_nodes = 0
        node_length = np.zeros(0)
        node_rope = np.zeros(0, dtype=np.int64)
        movable_node = np.zeros(0, dtype=np.bool_)
    dynamic_body = np.asarray(model.body_kind) == DYNAMIC
    kinds, params, on_body, on_node = [], [], [], []
    body_drag = np.zeros(n_bodies)
    node_drag = np.zeros(n_nodes)
    for force in scene.forces:
        if force["type"] == "springs":
            continue
        bodies = _chosen(force["bodies"], n_bodies)
        nodes = _chosen(force["ropes"], len(scene.ropes))[node_rope] * node_length
        if force["type"] == "drag":
            body_drag += force["coefficient"] * bodies
            node_drag += force["coefficient"] * nodes
            continue
        kind, row = field_row(force)
        kinds.append(kind)
        params.append(row)
        on_body.append(bodies)
        on_node.append(nodes)
    on_bodies = any(np.any((b > 0.0) & dynamic_body) for b in [*on_body, body_drag])
    on_ropes = any(np.any((w > 0.0) & movable_node) for w in [*on_node, node_drag])
    return FieldTargets(
        field_kind=np.array(kinds, dtype=np.int64).reshape(-1),
        field_param=np.array(params, dtype=np.float64).reshape(-1, FIELD_WIDTH),
        field_body=_rows(on_body, n_bodies), field_node=_rows(on_node, n_nodes),
        body_drag=body_drag, node_drag=node_drag, on_bodies=bool(on_bodies), on_ropes=bool(on_ropes))


@njit(**JIT)
def push_bodies(model, state, targets, h):
    """The fields' impulses h F and the implicit drag on every dynamic body's linear velocity (module docstring)."""
    t = state.time[0]
    kinds, param, on = targets.field_kind, targets.field_param, targets.field_body
    for i in range(model.n_bodies):
        if model.body_kind[i] != DYNAMIC:
            continue
        x, y, z = state.position[i, 0], state.position[i, 1], state.position[i, 2]
        _push(state.linear_velocity, i, model.inv_mass[i], targets.body_drag[i], kinds, param, on, x, y, z, t, h)


@njit(**JIT)
def push_rope_nodes(node_position, node_velocity, node_inv_mass, targets, t, h):
    """The same for every movable rope node, with each field scaled by the node's share of its rope."""
    kinds, param, on = targets.field_kind, targets.field_param, targets.field_node
    for i in range(node_inv_mass.shape[0]):
        if node_inv_mass[i] == 0.0:
            continue
        x, y, z = node_position[i, 0], node_position[i, 1], node_position[i, 2]
        _push(node_velocity, i, node_inv_mass[i], targets.node_drag[i], kinds, param, on, x, y, z, t, h)


@njit(**JIT, inline="always")
def _push(velocity, i, inv_mass, drag, kinds, param, on, x, y, z, t, h):
    """velocity[i] <- (velocity[i] + h inv_mass sum_f on[f, i] F_f(x)) / (1 + h inv_mass drag)."""
    fx = fy = fz = 0.0
    for f in range(kinds.shape[0]):
        weight = on[f, i]
        if weight != 0.0:
            ax, ay, az = field_force(kinds[f], param, f, x, y, z, t)
            fx += weight * ax
            fy += weight * ay
            fz += weight * az
    scale = 1.0 / (1.0 + h * inv_mass * drag)
    velocity[i, 0] = (velocity[i, 0] + h * inv_mass * fx) * scale
    velocity[i, 1] = (velocity[i, 1] + h * inv_mass * fy) * scale
    velocity[i, 2] = (velocity[i, 2] + h * inv_mass * fz) * scale
