"""The checks of particle groups and mass-spring bodies, and what follows from them (lumped masses, bending springs).

Scene.add_particles and Scene.add_mass_spring pass their arguments here; every FieldError names the group
(``particles 'Sparks' (group 0)``) and the field. Nothing here needs numba.
"""
from __future__ import annotations

import numpy as np

from ..validate import FieldError, array, flag, index_rows, integer, number


def group_label(kind: str, index: int, name) -> str:
    """How errors name a group: ``particles 'Sparks' (group 0)`` or ``mass-spring (group 2)``."""
    return f"{kind} {name!r} (group {index})" if name else f"{kind} (group {index})"


def _points(owner: str, field: str, value, n=None) -> np.ndarray:
    """(n, 3) finite numbers, n >= 1."""
    what = "an (n, 3) array of numbers" if n is None else f"an ({n}, 3) array of numbers, one row per particle"
    points = array(owner, field, value, (n, 3), what)
    if points.shape[0] < 1:
        raise FieldError(owner, field, "must hold at least one point, got none")
    return points


def _masses(owner: str, value, n: int) -> np.ndarray | float:
    """One positive mass or n of them: a float or a float64 array."""
    if np.ndim(value) == 0:
        return number(owner, "mass", value, positive=True)
    masses = array(owner, "mass", value, (n,), f"one number or {n} numbers (one per particle)")
    bad = np.flatnonzero(~(masses > 0.0))
    if bad.size:
        raise FieldError(owner, "mass", f"must be positive, got mass[{bad[0]}] = {masses[bad[0]]:g}")
    return masses


def _indices(owner: str, field: str, value, n: int) -> list:
    """Sorted distinct particle indices given as one index or a list of them; negative ones count from the end."""
    values = value.tolist() if isinstance(value, np.ndarray) else value
    if not isinstance(values, (list, tuple, range)):
        values = [values]
    return sorted({integer(owner, field, v, -n, n - 1, "a particle index") % n for v in values})


def index_pairs(owner: str, field: str, value, n, what: str, holder: str = "there are") -> np.ndarray:
    """An (m, 2) int64 array of pairs of two different indices from 0 to n - 1 (n None: any >= 0); ``what``
    names an index in errors ('vertex'), ``holder`` what has n of them ('group 2 has')."""
    pairs = index_rows(owner, field, value, n, 2, what, holder)
    same = np.flatnonzero(pairs[:, 0] == pairs[:, 1])
    if same.size:
        k = int(same[0])
        raise FieldError(owner, f"{field}[{k}]", f"joins {what} {pairs[k, 0]} to itself")
    return pairs


def _times(owner: str, field: str, value, n: int, positive: bool) -> list | float:
    """n times in s, >= 0 (> 0 if ``positive``), or one for all where a single number is allowed (positive)."""
    if positive and np.ndim(value) == 0:
        return number(owner, field, value, positive=True)
    times = array(owner, field, value, (n,), f"{'one number or ' if positive else ''}{n} times in s (one per particle)")
    bad = np.flatnonzero(~(times > 0.0) if positive else times < 0.0)
    if bad.size:
        k = int(bad[0])
        raise FieldError(owner, field, f"must be {'positive' if positive else '>= 0'}, got {field}[{k}] = "
                                       f"{times[k]:g}")
    return times.tolist()


def check_particles(owner: str, positions, velocities, mass, radius, pinned, particle_collisions, birth_times=None,
                    lifetimes=None) -> dict:
    """The checked arguments of Scene.add_particles as plain values (lists and floats); birth_times and lifetimes
    only where given, so that groups without them keep their file content."""
    points = _points(owner, "positions", positions)
    n = points.shape[0]
    speeds = np.zeros((n, 3)) if velocities is None else _points(owner, "velocities", velocities, n)
    masses = _masses(owner, mass, n)
    radius = number(owner, "radius", radius, minimum=0.0)
    collide = flag(owner, "particle_collisions", particle_collisions)
    if collide and radius == 0.0:
        raise FieldError(owner, "particle_collisions", "needs a radius > 0 (points never touch)")
    values = dict(positions=points.tolist(), velocities=None if velocities is None else speeds.tolist(),
                  mass=masses if isinstance(masses, float) else masses.tolist(), radius=radius,
                  pinned=_indices(owner, "pinned", pinned, n), particle_collisions=collide)
    for field, value, positive in (("birth_times", birth_times, False), ("lifetimes", lifetimes, True)):
        if value is None:
            continue
        if values["pinned"]:
            raise FieldError(owner, field, "cannot be given for a group with pinned particles (a pinned particle "
                                           "is there from the start)")
        values[field] = _times(owner, field, value, n, positive)
    return values


def check_mass_spring(owner: str, vertices, edges, mass, stiffness, damping, bending, pinned, velocities,
                      radius) -> dict:
    """The checked arguments of Scene.add_mass_spring as plain values (lists and floats)."""
    points = _points(owner, "vertices", vertices)
    n = points.shape[0]
    pairs = index_pairs(owner, "edges", edges, n, "vertex")
    if pairs.shape[0] == 0:
        raise FieldError(owner, "edges", "must hold at least one edge, got none")
    key = np.sort(pairs, axis=1)
    _, first, counts = np.unique(key, axis=0, return_index=True, return_counts=True)
    if np.any(counts > 1):
        k = int(np.sort(first[counts > 1])[0])
        raise FieldError(owner, "edges", f"join vertices {key[k, 0]} and {key[k, 1]} more than once")
    lengths = np.linalg.norm(points[pairs[:, 0]] - points[pairs[:, 1]], axis=1)
    scale = max(float(np.max(np.abs(points))), 1.0)
    short = np.flatnonzero(~(lengths > 1e-9 * scale))
    if short.size:
        k = int(short[0])
        raise FieldError(owner, f"edges[{k}]", f"joins vertices {pairs[k, 0]} and {pairs[k, 1]}, which coincide")
    masses = _masses(owner, mass, n)
    if isinstance(masses, float):
        loose = np.setdiff1d(np.arange(n), pairs.ravel())
        if loose.size:
            raise FieldError(owner, "mass", f"is a total spread over the vertices by their edges, but vertex "
                                            f"{loose[0]} has no edge; give one mass per vertex instead")
    speeds = np.zeros((n, 3)) if velocities is None else _points(owner, "velocities", velocities, n)
    return dict(vertices=points.tolist(), edges=pairs.tolist(),
                mass=masses if isinstance(masses, float) else masses.tolist(),
                stiffness=number(owner, "stiffness", stiffness, positive=True),
                damping=number(owner, "damping", damping, minimum=0.0),
                bending=number(owner, "bending", bending, minimum=0.0),
                pinned=_indices(owner, "pinned", pinned, n),
                velocities=None if velocities is None else speeds.tolist(),
                radius=number(owner, "radius", radius, minimum=0.0))


def lumped_masses(vertices: np.ndarray, edges: np.ndarray, total: float) -> np.ndarray:
    """A total mass spread over the vertices by their incident edge lengths: each edge gives half its share of
    the total length to each end, as a uniform string or wire frame of that mass would."""
    lengths = np.linalg.norm(vertices[edges[:, 0]] - vertices[edges[:, 1]], axis=1)
    share = np.zeros(len(vertices))
    np.add.at(share, edges[:, 0], 0.5 * lengths)
    np.add.at(share, edges[:, 1], 0.5 * lengths)
    return total * share / lengths.sum()


def second_neighbours(n: int, edges: np.ndarray) -> np.ndarray:
    """Pairs (i, k), i < k, at graph distance exactly two: joined through a common neighbour, not by an edge.

    On a chain these are i and i + 2, on a quad grid the diagonals and the vertices two apart along the rows.
    """
    neighbours = [set() for _ in range(n)]
    for a, b in edges:
        neighbours[a].add(int(b))
        neighbours[b].add(int(a))
    pairs = set()
    for j in range(n):
        around = sorted(neighbours[j])
        for x, i in enumerate(around):
            for k in around[x + 1:]:
                if k not in neighbours[i]:
                    pairs.add((i, k))
    return np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2)
