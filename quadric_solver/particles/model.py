"""ParticleModel and ParticleState: the particle groups, mass-spring bodies and force objects of a scene as flat
arrays (structure of arrays, every group in one run of particle indices), like the ropes' model and state.

Groups are numbered as the scene added them (particles and mass-spring bodies share the numbering); group g
owns particles group_start[g] to group_start[g + 1] - 1. The state is one flat vector y = [x (3n); v (3n)], the
particle system's state in Witkin and Baraff's sense (system.py).

Springs of every kind are rows of one table, computed by one behaviour function (behaviour.py): the Springs
force objects, the edges of mass-spring bodies, and their bending springs across second neighbours.

A particle is movable while its inverse mass in the state is above zero: the model's (zero for pinned particles),
also zero while it is unborn or dead (births.py). Pinned particles of a group with a pin track follow it (pins.py).
Every scene has the same fields, empty where it has no tracks or births, so that they compile nothing new.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import rotations
from .fields import ATTRACTOR, FIELD_WIDTH, TURBULENCE, VORTEX, WIND
from .groups import lumped_masses, second_neighbours
from .integrators import INTEGRATORS

# the implicit step's conjugate gradients stop at this residual, relative to the right-hand side
CG_TOLERANCE = 1e-10
CG_MAX_ITERATIONS = 500
# slots of ParticleState.counters, written by the compiled substep
CONTACTS = 0        # particle-collider contacts of the last substep
CG_ITERATIONS = 1   # conjugate-gradient iterations of the last implicit step
PAIRS = 2           # touching particle pairs of the last substep


class ParticleModel(NamedTuple):
    """What does not change during a run."""
    n_particles: int
    integrator: int                 # index into integrators.INTEGRATORS
    gravity: np.ndarray             # (3,)
    group_start: np.ndarray         # (G+1,) int64
    group_radius: np.ndarray        # (G,) distance kept from colliders
    group_material: np.ndarray      # (G,) int64 scene material
    mass: np.ndarray                # (n,)
    inv_mass: np.ndarray            # (n,) zero for pinned particles (the kernels read the state's)
    particle_group: np.ndarray      # (n,) int64
    particle_radius: np.ndarray     # (n,) radius against other particles; 0: no particle contacts
    largest_radius: float           # of particle_radius
    particle_drag: np.ndarray       # (n,) summed coefficients of the Drag forces on each particle (N s/m)
    field_kind: np.ndarray          # (F,) int64 fields.WIND, VORTEX, TURBULENCE, ATTRACTOR
    field_param: np.ndarray         # (F, FIELD_WIDTH) see fields.py
    field_group: np.ndarray         # (F, G) bool: the field acts on the group
    spring_index: np.ndarray        # (S, 2) int64 particles a, b
    spring_param: np.ndarray        # (S, 1) rest length
    spring_stiffness: np.ndarray    # (S,) N/m
    spring_damping: np.ndarray      # (S,) N s/m
    cg_tolerance: float
    cg_max_iterations: int
    birth_time: np.ndarray          # (n,) s: before it a particle is not there (births.py); 0 for most
    death_time: np.ndarray          # (n,) s: from it on it is gone; inf for most
    lifecycle: bool                 # some particle is born after the start or dies
    pin_track_offsets: np.ndarray   # (G+1,) int64 into pin_track_times/poses (tracks.py); empty range: no track
    pin_track_times: np.ndarray     # (K,)
    pin_track_poses: np.ndarray     # (K, 7) x, y, z, w, qx, qy, qz
    tracked_pin: np.ndarray         # (P,) int64 the pinned particles of groups with a track, by group
    tracked_pin_local: np.ndarray   # (P, 3) their places in their track's frame


class ParticleState(NamedTuple):
    """What changes; work_* arrays are the substep's scratch (preallocated, shared by copies)."""
    y: np.ndarray                   # (6n,) positions then velocities
    time: np.ndarray                # (1,) seconds
    diverged: np.ndarray            # (2,) int64: group and particle that became non-finite (-1: none)
    counters: np.ndarray            # (3,) int64, slots CONTACTS, CG_ITERATIONS and PAIRS
    inv_mass: np.ndarray            # (n,) the model's, zero while a particle is unborn or dead: what kernels read
    work_start: np.ndarray          # (6n,) the state at the start of the substep
    work_y: np.ndarray              # (6n,) trial states of the integrators
    work_k1: np.ndarray             # (6n,) derivatives
    work_k2: np.ndarray
    work_k3: np.ndarray
    work_k4: np.ndarray
    work_force: np.ndarray          # (3n,)
    work_value: np.ndarray          # (S,) spring behaviour functions C of the last force evaluation
    work_grad: np.ndarray           # (S, 2, 3) and their gradients
    work_r: np.ndarray              # (3n,) conjugate gradients: residual, direction, preconditioned residual,
    work_p: np.ndarray              #   matrix times direction, Jacobi diagonal, solution
    work_z: np.ndarray
    work_q: np.ndarray
    work_diag: np.ndarray
    work_dv: np.ndarray
    work_grid_start: np.ndarray     # (T+1,) int64 particle contacts' hashed grid: first item of each bucket
    work_grid_fill: np.ndarray      # (T,) int64
    work_grid_items: np.ndarray     # (colliding particles,) int64 particle indices by bucket


def _spring_rows(rows, a, b, rest, stiffness, damping):
    rows.append((np.column_stack([a, b]).astype(np.int64), np.asarray(rest, dtype=np.float64),
                 np.full(len(a), stiffness), np.full(len(a), damping)))


def build_particles(scene, integrator: str = "symplectic_euler"):
    """(ParticleModel, ParticleState) of the scene's particle groups and forces (checked when they were added)."""
    specs = scene.particles
    sizes = [len(s["positions"] if s["kind"] == "particles" else s["vertices"]) for s in specs]
    group_start = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n, groups = int(group_start[-1]), len(specs)
    position = np.zeros((n, 3))
    velocity = np.zeros((n, 3))
    mass = np.zeros(n)
    inv_mass = np.zeros(n)
    particle_group = np.zeros(n, dtype=np.int64)
    particle_radius = np.zeros(n)
    springs = []  # (index (m, 2), rest (m,), stiffness (m,), damping (m,))
    birth, death = np.zeros(n), np.full(n, np.inf)
    track_offsets = np.zeros(groups + 1, dtype=np.int64)
    track_times, track_poses, tracked, local = [], [], [], []
    for g, spec in enumerate(specs):
        s, e = group_start[g], group_start[g + 1]
        points = np.array(spec["positions"] if spec["kind"] == "particles" else spec["vertices"], dtype=np.float64)
        position[s:e] = points
        if spec["velocities"] is not None:
            velocity[s:e] = spec["velocities"]
        if spec["kind"] == "mass_spring":
            edges = np.array(spec["edges"], dtype=np.int64).reshape(-1, 2)
            given = spec["mass"]
            mass[s:e] = lumped_masses(points, edges, given) if np.ndim(given) == 0 else given
            rest = np.linalg.norm(points[edges[:, 0]] - points[edges[:, 1]], axis=1)
            _spring_rows(springs, s + edges[:, 0], s + edges[:, 1], rest, spec["stiffness"], spec["damping"])
            if spec["bending"] > 0.0:
                # bending springs relax as fast as the edges: the same damping per unit stiffness
                across = second_neighbours(e - s, edges)
                rest = np.linalg.norm(points[across[:, 0]] - points[across[:, 1]], axis=1)
                _spring_rows(springs, s + across[:, 0], s + across[:, 1], rest, spec["bending"],
                             spec["damping"] * spec["bending"] / spec["stiffness"])
        else:
            mass[s:e] = spec["mass"]
        inv_mass[s:e] = 1.0 / mass[s:e]
        particle_group[s:e] = g
        if spec.get("particle_collisions"):
            particle_radius[s:e] = spec["radius"]
        pinned = s + np.asarray(spec["pinned"], dtype=np.int64)
        inv_mass[pinned] = 0.0
        velocity[pinned] = 0.0
        if spec.get("birth_times") is not None:
            birth[s:e] = spec["birth_times"]
        if spec.get("lifetimes") is not None:
            death[s:e] = birth[s:e] + np.asarray(spec["lifetimes"], dtype=np.float64)
        track = spec.get("track")
        if track:
            first = np.asarray(track["poses"][0], dtype=np.float64)
            tracked.append(pinned)
            # where they were added is where they are at the first pose: x = p + R(q) local
            local.append((position[pinned] - first[:3]) @ rotations.to_matrix(first[3:]))
            track_times.extend(track["times"])
            track_poses.extend(track["poses"])
        track_offsets[g + 1] = len(track_times)

    drag = np.zeros(n)
    kinds, params, acts_on = [], [], []
    for force in scene.forces:
        on = np.zeros(groups, dtype=np.bool_)
        on[list(range(groups)) if force.get("groups") is None else force["groups"]] = True
        kind = force["type"]
        if kind == "drag":
            for g in np.flatnonzero(on):
                drag[group_start[g]:group_start[g + 1]] += force["coefficient"]
        elif kind == "springs":
            s = group_start[force["group"]]
            pairs = np.array(force["pairs"], dtype=np.int64).reshape(-1, 2) + s
            rest = (np.linalg.norm(position[pairs[:, 0]] - position[pairs[:, 1]], axis=1)
                    if force["rest_lengths"] is None else force["rest_lengths"])
            _spring_rows(springs, pairs[:, 0], pairs[:, 1], rest, force["stiffness"], force["damping"])
        else:
            field_kind, row = field_row(force)
            kinds.append(field_kind)
            params.append(row)
            acts_on.append(on)

    index = np.concatenate([r[0] for r in springs]) if springs else np.zeros((0, 2), dtype=np.int64)
    n_springs = len(index)
    model = ParticleModel(
        n_particles=n, integrator=INTEGRATORS.index(integrator),
        gravity=np.array(scene.gravity, dtype=np.float64), group_start=group_start,
        group_radius=np.array([s["radius"] for s in specs], dtype=np.float64).reshape(groups),
        group_material=np.array([s["material"] for s in specs], dtype=np.int64).reshape(groups),
        mass=mass, inv_mass=inv_mass, particle_group=particle_group, particle_radius=particle_radius,
        largest_radius=float(particle_radius.max()) if n else 0.0, particle_drag=drag,
        field_kind=np.array(kinds, dtype=np.int64).reshape(-1),
        field_param=np.array(params, dtype=np.float64).reshape(-1, FIELD_WIDTH),
        field_group=np.array(acts_on, dtype=np.bool_).reshape(-1, groups),
        spring_index=index,
        spring_param=(np.concatenate([r[1] for r in springs]) if springs else np.zeros(0)).reshape(n_springs, 1),
        spring_stiffness=np.concatenate([r[2] for r in springs]) if springs else np.zeros(0),
        spring_damping=np.concatenate([r[3] for r in springs]) if springs else np.zeros(0),
        cg_tolerance=CG_TOLERANCE, cg_max_iterations=CG_MAX_ITERATIONS,
        birth_time=birth, death_time=death, lifecycle=bool(np.any(birth > 0.0) or np.any(np.isfinite(death))),
        pin_track_offsets=track_offsets, pin_track_times=np.array(track_times, dtype=np.float64).reshape(-1),
        pin_track_poses=np.array(track_poses, dtype=np.float64).reshape(-1, 7),
        tracked_pin=np.concatenate(tracked).astype(np.int64) if tracked else np.zeros(0, dtype=np.int64),
        tracked_pin_local=np.ascontiguousarray(np.concatenate(local)).reshape(-1, 3) if local else np.zeros((0, 3)))
    y = np.concatenate([position.ravel(), velocity.ravel()])
    colliding = int(np.count_nonzero(particle_radius))
    table = 1 << max(4, (2 * colliding - 1).bit_length())  # hash buckets of the particle contacts: >= 2 per particle
    state = ParticleState(
        y=y, time=np.zeros(1), diverged=np.full(2, -1, dtype=np.int64), counters=np.zeros(3, dtype=np.int64),
        inv_mass=np.where(birth > 0.0, 0.0, inv_mass),
        work_start=np.zeros(6 * n), work_y=np.zeros(6 * n), work_k1=np.zeros(6 * n), work_k2=np.zeros(6 * n),
        work_k3=np.zeros(6 * n), work_k4=np.zeros(6 * n), work_force=np.zeros(3 * n),
        work_value=np.zeros(n_springs), work_grad=np.zeros((n_springs, 2, 3)), work_r=np.zeros(3 * n),
        work_p=np.zeros(3 * n),
        work_z=np.zeros(3 * n), work_q=np.zeros(3 * n), work_diag=np.zeros(3 * n), work_dv=np.zeros(3 * n),
        work_grid_start=np.zeros(table + 1, dtype=np.int64), work_grid_fill=np.zeros(table, dtype=np.int64),
        work_grid_items=np.zeros(colliding, dtype=np.int64))
    return model, state


def copy_particle_state(state: ParticleState) -> ParticleState:
    """A copy of the changing fields; the work_* scratch is shared (it carries nothing between substeps)."""
    return state._replace(**{field: getattr(state, field).copy() for field in state._fields
                             if not field.startswith("work_")})


def particle_positions(model: ParticleModel, state: ParticleState, group: int) -> np.ndarray:
    """Positions (n, 3) of group ``group`` (a view into the state)."""
    s, e = model.group_start[group], model.group_start[group + 1]
    return state.y[3 * s:3 * e].reshape(-1, 3)


def particle_velocities(model: ParticleModel, state: ParticleState, group: int) -> np.ndarray:
    """Velocities (n, 3) of group ``group`` (a view into the state)."""
    s, e = model.group_start[group], model.group_start[group + 1]
    n = model.n_particles
    return state.y[3 * n + 3 * s:3 * n + 3 * e].reshape(-1, 3)


def group_of(model: ParticleModel, particle: int):
    """(group, index within the group) of a particle."""
    group = int(np.searchsorted(model.group_start, particle, side="right") - 1)
    return group, int(particle - model.group_start[group])


def field_row(force: dict):
    """(kind, param row) of a field force's file value (wind, vortex, turbulence or attractor), as fields.py reads
    them."""
    kind = force["type"]
    row = np.zeros(FIELD_WIDTH)
    if kind == "wind":
        values = [*force["direction"], force["strength"], force["turbulence"], force["size"], force["seed"],
                  force["gust_speed"]]
        code = WIND
    elif kind == "vortex":
        values = [*force["point"], *force["axis"], force["strength"], force["falloff"], force["min_distance"]]
        code = VORTEX
    elif kind == "turbulence":
        values = [*force["flow"], force["strength"], force["size"], force["seed"]]
        code = TURBULENCE
    else:
        values = [*force["point"], force["strength"], force["falloff"], force["min_distance"]]
        code = ATTRACTOR
    row[:len(values)] = values
    return code, row
