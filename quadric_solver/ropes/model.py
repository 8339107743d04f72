"""Cosserat ropes: inextensible rods that bend and twist, pinned, clamped or tied to rigid bodies.

A rope of N nodes has N-1 segments. Nodes carry position and the lumped mass
m_i = 1/2 rho pi r^2 (l_{i-1} + l_i); each segment carries a unit quaternion (w, x, y, z) whose third
axis d3 follows the tangent, an angular velocity (world frame) and the inertia of a rigid cylinder.
Neighbouring segments are joined by bend-twist joints whose Darboux vector
u = (2 / l_bar) Im(conj(q_j) q_{j+1}) is driven towards the rest value of the drawn curve with stiffness
(E pi r^4/4, E pi r^4/4, G pi r^4/2). A clamped end adds a joint between the end segment and a fixed
frame at the end node (half a segment long), so a cantilever bends right from its root.

All ropes are concatenated into flat arrays (structure of arrays with per-rope offsets) so one compiled
call advances every rope: see rope_kernels.rope_substep.
"""
import math
from typing import NamedTuple

import numpy as np

from .. import rotations
from .kernels import BAND, first_non_finite_rope, max_length_error, rope_advance, rope_substep
from .spec import validate_rope_spec

__all__ = ["RopeModel", "RopeState", "FreeBodies", "build_ropes", "rope_substep", "rope_advance", "run_ropes",
           "rope_joint_moments", "max_length_error", "rope_frames_from_points", "rope_nodes", "rope_segments",
           "validate_rope_spec", "copy_rope_state", "first_non_finite_rope"]



class RopeModel(NamedTuple):
    """What does not change during a run. Offsets index the flat arrays per rope."""
    rope_node_start: np.ndarray   # (R+1,) int64
    rope_seg_start: np.ndarray    # (R+1,) int64
    rope_joint_start: np.ndarray  # (R+1,) int64; rope r has m+1 joint slots, slot 0 and m are the end clamps
    rope_row_start: np.ndarray    # (R+1,) int64; rows of the banded system, 3 (2m+1) per rope
    rope_radius: np.ndarray       # (R,)
    rope_damping: np.ndarray      # (R,) velocity damping rate 1/s
    rope_material: np.ndarray     # (R,) int64
    rope_clamped: np.ndarray      # (R, 2) int64: start / end clamped
    rope_friction: np.ndarray     # (R,) Coulomb friction of the rope's material
    node_mass: np.ndarray         # (Nn,)
    node_inv_mass: np.ndarray     # (Nn,) zero for pinned nodes
    node_attachment: np.ndarray   # (Nn,) int64 index into att_*, -1 if none
    seg_rest_length: np.ndarray   # (Ns,)
    seg_rope: np.ndarray          # (Ns,) int64 rope of each segment
    seg_inertia: np.ndarray       # (Ns, 3) principal, segment frame
    seg_inv_inertia: np.ndarray   # (Ns, 3)
    joint_rest_length: np.ndarray  # (Nj,) l_bar
    joint_rest_darboux: np.ndarray  # (Nj, 3)
    joint_stiffness: np.ndarray   # (Nj, 3) E I1, E I2, G J
    joint_damping: np.ndarray     # (Nj,) Kelvin-Voigt time, s
    joint_active: np.ndarray      # (Nj,) int64
    att_node: np.ndarray          # (A,) int64
    att_body: np.ndarray          # (A,) int64
    att_local: np.ndarray         # (A, 3) point in the body frame
    iterations: int               # outer iterations of attachments, contacts and the direct rope solve
    contact_iterations: int       # contact sweeps per outer iteration
    stretch_erp: float            # drift feedback of the stretch-shear rows
    attachment_erp: float
    length_erp: float             # error-reduction parameter of the inextensibility stabilisation
    length_iterations: int        # Newton passes of the stabilisation
    length_tolerance: float       # relative length error at which the stabilisation stops


class RopeState(NamedTuple):
    """Everything that changes; work_* arrays are preallocated scratch of the substep."""
    node_position: np.ndarray        # (Nn, 3)
    node_velocity: np.ndarray        # (Nn, 3)
    seg_orientation: np.ndarray      # (Ns, 4) w, x, y, z; third axis = tangent
    seg_angular_velocity: np.ndarray  # (Ns, 3) world frame
    clamp_orientation: np.ndarray    # (R, 2, 4) frames of the clamps at the start / end node
    seg_tension: np.ndarray          # (Ns,) tension of the last substep, N
    work_band: np.ndarray
    work_rhs: np.ndarray
    work_lambda: np.ndarray          # impulses of the banded solve accumulated over a substep's iterations
    work_seg_rot: np.ndarray
    work_seg_inv_inertia: np.ndarray
    work_seg_node_jac: np.ndarray
    work_seg_rot_jac: np.ndarray
    work_seg_err: np.ndarray
    work_joint_err: np.ndarray
    work_joint_jac: np.ndarray
    work_att_lever: np.ndarray
    work_att_body_inv_inertia: np.ndarray
    work_att_kb: np.ndarray
    work_att_eff_mass: np.ndarray
    work_att_split: np.ndarray
    work_att_node_w: np.ndarray
    work_node_w: np.ndarray
    work_dir: np.ndarray
    work_tri_diag: np.ndarray
    work_tri_off: np.ndarray
    work_tri_rhs: np.ndarray
    # contacts of the current substep (rope_contacts): rope point = (1 - t) x[nodes[0]] + t x[nodes[1]]
    contact_count: np.ndarray     # (2,) int64: contacts, contacts dropped for lack of room
    contact_kind: np.ndarray      # (C,) int64: static collider, body or rope segment
    contact_rope: np.ndarray      # (C,) int64
    contact_nodes: np.ndarray     # (C, 2) int64
    contact_t: np.ndarray         # (C, 2) along the rope segment and along the other segment
    contact_other: np.ndarray     # (C,) int64 static id, body or segment
    contact_normal: np.ndarray    # (C, 3) pushes the rope point away from the other side
    contact_point: np.ndarray     # (C, 3) point on the other side (bodies)
    contact_gap: np.ndarray       # (C,) distance between surfaces, negative when overlapping
    contact_friction: np.ndarray  # (C,)
    contact_impulse: np.ndarray   # (C, 4) normal, friction vector
    work_contact_center: np.ndarray
    work_contact_inv_inertia: np.ndarray
    grid_cell: np.ndarray         # (Ns, 3) int64
    grid_key: np.ndarray          # (Ns,) int64
    grid_bucket_start: np.ndarray  # (T+1,) int64
    grid_fill: np.ndarray         # (T,) int64
    grid_items: np.ndarray        # (Ns,) int64


def _relative_rotation(qa, qb):
    r = rotations.mul(rotations.conj(qa), qb)
    return -r if r[0] < 0.0 else r


def rope_frames_from_points(points):
    """Segment quaternions along a polyline by parallel transport (no twist; d3 = tangent)."""
    tangents = np.diff(points, axis=0)
    tangents /= np.linalg.norm(tangents, axis=1)[:, None]
    t0 = tangents[0]
    # any unit vector perpendicular to the first tangent starts the transport
    helper = np.array([1.0, 0.0, 0.0]) if abs(t0[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    d1 = np.cross(helper, t0)
    d1 /= np.linalg.norm(d1)
    d2 = np.cross(t0, d1)
    frames = np.empty((len(tangents), 4))
    frames[0] = rotations.from_matrix(np.column_stack([d1, d2, t0]))
    for j in range(1, len(tangents)):
        a, b = tangents[j - 1], tangents[j]
        # minimal rotation taking a to b: quaternion (1 + a.b, a x b), normalised
        turn = np.concatenate([[1.0 + a @ b], np.cross(a, b)])
        turn /= np.linalg.norm(turn)
        frames[j] = rotations.mul(turn, frames[j - 1])
        frames[j] /= np.linalg.norm(frames[j])
    return frames


# ----------------------------------------------------------------------------------------------
# building

def build_ropes(rope_specs, n_bodies=0, material_friction=None, iterations=4, contact_iterations=3, stretch_erp=1.0,
                attachment_erp=0.2, length_erp=1.0, length_iterations=4, length_tolerance=1e-9):
    """Validate rope specs (dicts of add_rope arguments) and build the flat (RopeModel, RopeState).

    material_friction: friction coefficient per material index (default 0.5 for every rope).
    """
    ropes = [validate_rope_spec(dict(spec), k, n_bodies) for k, spec in enumerate(rope_specs)]
    n_nodes = np.array([len(r["points"]) for r in ropes], dtype=np.int64)
    node_start = np.concatenate([[0], np.cumsum(n_nodes)]).astype(np.int64)
    seg_start = np.concatenate([[0], np.cumsum(n_nodes - 1)]).astype(np.int64)
    joint_start = np.concatenate([[0], np.cumsum(n_nodes)]).astype(np.int64)  # m + 1 = n slots per rope
    row_start = np.concatenate([[0], np.cumsum(3 * (2 * (n_nodes - 1) + 1))]).astype(np.int64)
    nn, ns, nj, nrows = int(node_start[-1]), int(seg_start[-1]), int(joint_start[-1]), int(row_start[-1])
    n_ropes = len(ropes)

    node_mass = np.zeros(nn)
    node_inv_mass = np.zeros(nn)
    node_attachment = np.full(nn, -1, dtype=np.int64)
    seg_rest_length = np.zeros(ns)
    seg_inertia = np.zeros((ns, 3))
    joint_rest_length = np.zeros(nj)
    joint_rest_darboux = np.zeros((nj, 3))
    joint_stiffness = np.zeros((nj, 3))
    joint_damping = np.zeros(nj)
    joint_active = np.zeros(nj, dtype=np.int64)
    clamped = np.zeros((n_ropes, 2), dtype=np.int64)
    positions = np.zeros((nn, 3))
    orientations = np.zeros((ns, 4))
    clamp_orientation = np.zeros((n_ropes, 2, 4))
    att_node, att_body, att_local = [], [], []

    for r, rope in enumerate(ropes):
        n0, s0, j0 = node_start[r], seg_start[r], joint_start[r]
        n = len(rope["points"])
        m = n - 1
        lengths = rope["lengths"]
        radius = rope["radius"]
        area = math.pi * radius ** 2
        positions[n0:n0 + n] = rope["points"]
        seg_rest_length[s0:s0 + m] = lengths
        seg_mass = rope["density"] * area * lengths
        node_mass[n0:n0 + n] = 0.5 * (np.concatenate([[0.0], seg_mass]) + np.concatenate([seg_mass, [0.0]]))
        node_inv_mass[n0:n0 + n] = 1.0 / node_mass[n0:n0 + n]
        node_inv_mass[n0 + np.array(rope["pinned"], dtype=np.int64)] = 0.0
        # rigid cylinder: (3 r^2 + l^2) m / 12 across, m r^2 / 2 along the axis
        seg_inertia[s0:s0 + m, 0] = seg_mass * (3.0 * radius ** 2 + lengths ** 2) / 12.0
        seg_inertia[s0:s0 + m, 1] = seg_inertia[s0:s0 + m, 0]
        seg_inertia[s0:s0 + m, 2] = 0.5 * seg_mass * radius ** 2
        frames = rope_frames_from_points(rope["points"])
        orientations[s0:s0 + m] = frames
        clamp_orientation[r, 0] = frames[0]
        clamp_orientation[r, 1] = frames[-1]
        bending = rope["young_modulus"] * math.pi * radius ** 4 / 4.0
        torsion = rope["shear_modulus"] * math.pi * radius ** 4 / 2.0
        joint_stiffness[j0:j0 + m + 1] = (bending, bending, torsion)
        joint_damping[j0:j0 + m + 1] = rope["internal_damping"]
        joint_rest_length[j0] = 0.5 * lengths[0]
        joint_rest_length[j0 + m] = 0.5 * lengths[-1]
        joint_rest_length[j0 + 1:j0 + m] = 0.5 * (lengths[:-1] + lengths[1:])
        joint_active[j0 + 1:j0 + m] = 1
        for slot in range(1, m):
            rel = _relative_rotation(frames[slot - 1], frames[slot])
            joint_rest_darboux[j0 + slot] = 2.0 / joint_rest_length[j0 + slot] * rel[1:]
        for end, node in ((0, 0), (1, n - 1)):
            if node in rope["clamped"]:
                clamped[r, end] = 1
                joint_active[j0 + (0 if end == 0 else m)] = 1
                node_inv_mass[n0 + node] = 0.0  # a clamp holds the position as well as the frame
        for node, body, local in rope["attachments"]:
            node_attachment[n0 + node] = len(att_node)
            att_node.append(n0 + node)
            att_body.append(body)
            att_local.append(local)

    seg_inv_inertia = np.zeros_like(seg_inertia)
    np.divide(1.0, seg_inertia, out=seg_inv_inertia, where=seg_inertia > 0.0)
    n_att = len(att_node)
    capacity = 32 * nn + 64  # contacts per substep; more are dropped and counted in contact_count[1]
    table = 1 << max(4, int(2 * max(ns, 1) - 1).bit_length())  # hash table of the contact grid, >= 2 Ns
    model = RopeModel(
        rope_node_start=node_start, rope_seg_start=seg_start, rope_joint_start=joint_start, rope_row_start=row_start,
        rope_radius=np.array([r["radius"] for r in ropes], dtype=np.float64),
        rope_damping=np.array([r["damping"] for r in ropes], dtype=np.float64),
        rope_material=np.array([r["material"] for r in ropes], dtype=np.int64),
        rope_clamped=clamped, rope_friction=np.array(
            [0.5 if material_friction is None else float(material_friction[r["material"]]) for r in ropes],
            dtype=np.float64),
        node_mass=node_mass, node_inv_mass=node_inv_mass, node_attachment=node_attachment,
        seg_rest_length=seg_rest_length,
        seg_rope=np.repeat(np.arange(n_ropes, dtype=np.int64), n_nodes - 1), seg_inertia=seg_inertia, seg_inv_inertia=seg_inv_inertia,
        joint_rest_length=joint_rest_length, joint_rest_darboux=joint_rest_darboux, joint_stiffness=joint_stiffness,
        joint_damping=joint_damping, joint_active=joint_active,
        att_node=np.array(att_node, dtype=np.int64), att_body=np.array(att_body, dtype=np.int64),
        att_local=np.array(att_local, dtype=np.float64).reshape(n_att, 3),
        iterations=int(iterations), contact_iterations=int(contact_iterations), stretch_erp=float(stretch_erp), attachment_erp=float(attachment_erp),
        length_erp=float(length_erp), length_iterations=int(length_iterations),
        length_tolerance=float(length_tolerance))
    state = RopeState(
        node_position=positions, node_velocity=np.zeros((nn, 3)), seg_orientation=orientations,
        seg_angular_velocity=np.zeros((ns, 3)), clamp_orientation=clamp_orientation, seg_tension=np.zeros(ns),
        work_band=np.zeros((nrows, BAND + 1)), work_rhs=np.zeros(nrows), work_lambda=np.zeros(nrows),
        work_seg_rot=np.zeros((ns, 3, 3)),
        work_seg_inv_inertia=np.zeros((ns, 3, 3)), work_seg_node_jac=np.zeros((ns, 3, 3)),
        work_seg_rot_jac=np.zeros((ns, 3, 3)), work_seg_err=np.zeros((ns, 3)), work_joint_err=np.zeros((nj, 3)),
        work_joint_jac=np.zeros((nj, 3, 3)), work_att_lever=np.zeros((n_att, 3)),
        work_att_body_inv_inertia=np.zeros((n_att, 3, 3)), work_att_kb=np.zeros((n_att, 3, 3)),
        work_att_eff_mass=np.zeros((n_att, 3, 3)), work_att_split=np.zeros((n_att, 3, 3)),
        work_att_node_w=np.zeros((n_att, 3, 3)), work_node_w=np.zeros((nn, 3, 3)), work_dir=np.zeros((ns, 3)), work_tri_diag=np.zeros(ns),
        work_tri_off=np.zeros(ns), work_tri_rhs=np.zeros(ns),
        contact_count=np.zeros(2, dtype=np.int64), contact_kind=np.zeros(capacity, dtype=np.int64),
        contact_rope=np.zeros(capacity, dtype=np.int64), contact_nodes=np.zeros((capacity, 2), dtype=np.int64),
        contact_t=np.zeros((capacity, 2)), contact_other=np.zeros(capacity, dtype=np.int64),
        contact_normal=np.zeros((capacity, 3)), contact_point=np.zeros((capacity, 3)), contact_gap=np.zeros(capacity),
        contact_friction=np.zeros(capacity), contact_impulse=np.zeros((capacity, 4)),
        work_contact_center=np.zeros((capacity, 3)), work_contact_inv_inertia=np.zeros((capacity, 3, 3)),
        grid_cell=np.zeros((ns, 3), dtype=np.int64), grid_key=np.zeros(ns, dtype=np.int64),
        grid_bucket_start=np.zeros(table + 1, dtype=np.int64), grid_fill=np.zeros(table, dtype=np.int64),
        grid_items=np.zeros(ns, dtype=np.int64))
    return model, state


def copy_rope_state(state):
    """A copy of the dynamic fields; the work_* scratch arrays are shared (they carry nothing between substeps)."""
    return state._replace(**{field: getattr(state, field).copy() for field in state._fields
                             if not field.startswith("work_")})


# ----------------------------------------------------------------------------------------------
# read-outs

def rope_nodes(model, state, r):
    """Node positions (n, 3) of rope r (a view)."""
    return state.node_position[model.rope_node_start[r]:model.rope_node_start[r + 1]]


def rope_segments(model, state, r):
    """Segment quaternions (n-1, 4) of rope r (a view)."""
    return state.seg_orientation[model.rope_seg_start[r]:model.rope_seg_start[r + 1]]


def rope_joint_moments(model, state, r):
    """Internal moments K (u - u0) at the m+1 joint slots of rope r, in the frame of the first segment of
    each joint (components: bending about d1, d2, twist about d3); inactive end slots are zero."""
    j0, s0 = model.rope_joint_start[r], model.rope_seg_start[r]
    m = model.rope_seg_start[r + 1] - s0
    moments = np.zeros((m + 1, 3))
    for slot in range(m + 1):
        jt = j0 + slot
        if not model.joint_active[jt]:
            continue
        qa = state.clamp_orientation[r, 0] if slot == 0 else state.seg_orientation[s0 + slot - 1]
        qb = state.clamp_orientation[r, 1] if slot == m else state.seg_orientation[s0 + slot]
        darboux = 2.0 / model.joint_rest_length[jt] * _relative_rotation(qa, qb)[1:]
        moments[slot] = model.joint_stiffness[jt] * (darboux - model.joint_rest_darboux[jt])
    return moments


class FreeBodies(NamedTuple):
    """Rigid-body arrays in the layout rope_substep takes (for stand-alone runs without the core)."""
    position: np.ndarray          # (N, 3)
    orientation: np.ndarray       # (N, 4) w, x, y, z
    linear_velocity: np.ndarray   # (N, 3)
    angular_velocity: np.ndarray  # (N, 3) world frame
    inv_mass: np.ndarray          # (N,)
    inv_inertia_local: np.ndarray  # (N, 3)

    @staticmethod
    def empty():
        return FreeBodies(np.zeros((0, 3)), np.zeros((0, 4)), np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0),
                          np.zeros((0, 3)))


def run_ropes(model, state, h, n_steps, gravity=(0.0, 0.0, -9.81), bodies=None, watch_nodes=(), trace_bodies=False):
    """Advance ropes (and free bodies under gravity, no contacts) by n_steps substeps in compiled code.

    Returns (node_trace (n_steps, len(watch_nodes), 3), body_trace (n_steps, N, 3) or None,
    largest relative segment length error seen after any step).
    """
    bodies = FreeBodies.empty() if bodies is None else bodies
    watch = np.asarray(watch_nodes, dtype=np.int64).reshape(-1)
    node_trace = np.zeros((n_steps if len(watch) else 0, len(watch), 3))
    body_trace = np.zeros((n_steps if trace_bodies else 0, len(bodies.inv_mass), 3))
    worst = rope_advance(model, state, float(h), int(n_steps), np.asarray(gravity, dtype=np.float64), *bodies,
                         watch, node_trace, body_trace)
    return node_trace, (body_trace if trace_bodies else None), worst
