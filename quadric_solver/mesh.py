"""Triangle meshes for static colliders: checks, and the topology that contact needs (numpy only).

A triangle's front is the side from which its corners run counter-clockwise (Blender's
convention); bodies collide with its front only. Each edge is *active* where a body may touch
it with a normal that is not a face normal: on the mesh's boundary, where two triangles meet
at a convex fold of more than ACTIVE_FOLD, or where the mesh is not a consistently wound
2-manifold. Flat and concave edges are inactive: a body touching one meets the face beside it,
so a box sliding over a finely triangulated floor feels the floor, not the seams (the ghost
bumps of per-triangle contact). A corner is active where an active edge ends.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .validate import FieldError, array, index_rows

# a fold between two triangles sharper than this (radians) makes their common edge active, as Jolt's
# active edges do: below it a body rolling over the fold dips by at most radius (1 - cos(fold / 2))
ACTIVE_FOLD = np.radians(5.0)
DEGENERATE_AREA = 1e-12  # a triangle smaller than this fraction of the squared mesh size is left out


class MeshTopology(NamedTuple):
    normal: np.ndarray          # (T, 3) unit front normals (zero for degenerate triangles)
    usable: np.ndarray          # (T,) bool: not degenerate
    neighbour: np.ndarray       # (T, 3) int64: the triangle across edge k (corners k, k+1), -1 for none
    edge_active: np.ndarray     # (T, 3) bool
    corner_active: np.ndarray   # (T, 3) bool
    corner_owner: np.ndarray    # (T, 3) int64: the lowest usable triangle at corner k's vertex
    flipped_edges: int          # edges whose two triangles are wound against each other


def check_mesh(owner: str, vertices, triangles) -> tuple[np.ndarray, np.ndarray]:
    """(V, 3) float64 vertices and (T, 3) int64 triangles, checked; FieldError naming ``owner`` and the field."""
    points = array(owner, "vertices", vertices, (None, 3), "a (V, 3) array of numbers")
    rows = index_rows(owner, "triangles", triangles, len(points), 3, "vertex", "there are")
    if len(rows) == 0:
        raise FieldError(owner, "triangles", "must hold at least one triangle, got none")
    repeated = np.flatnonzero((rows[:, 0] == rows[:, 1]) | (rows[:, 1] == rows[:, 2]) | (rows[:, 2] == rows[:, 0]))
    if repeated.size:
        k = int(repeated[0])
        raise FieldError(owner, f"triangles[{k}]", f"uses a vertex twice: {rows[k].tolist()}")
    return points, rows


def mesh_topology(vertices: np.ndarray, triangles: np.ndarray) -> MeshTopology:
    """Normals, neighbours and active edges and corners of a checked mesh (see the module docstring)."""
    n = len(triangles)
    corners = vertices[triangles]
    cross = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    area2 = np.linalg.norm(cross, axis=1)
    size = np.ptp(vertices, axis=0).max() if len(vertices) else 0.0
    usable = area2 > 2.0 * DEGENERATE_AREA * size * size
    normal = np.zeros((n, 3))
    normal[usable] = cross[usable] / area2[usable, None]
    # directed edges 3t + k from corner k to corner k + 1 of the usable triangles, grouped by their vertex pair
    start = triangles.reshape(-1)
    end = triangles[:, [1, 2, 0]].reshape(-1)
    edge_ids = np.flatnonzero(np.repeat(usable, 3))
    low, high = np.minimum(start, end)[edge_ids], np.maximum(start, end)[edge_ids]
    order = np.lexsort((high, low))
    edge_ids, low, high = edge_ids[order], low[order], high[order]
    first = np.flatnonzero(np.r_[True, (low[1:] != low[:-1]) | (high[1:] != high[:-1])])
    count = np.diff(np.r_[first, len(edge_ids)])
    neighbour = np.full(3 * n, -1, dtype=np.int64)
    active = np.ones(3 * n, dtype=bool)
    pairs = first[count == 2]
    e, f = edge_ids[pairs], edge_ids[pairs + 1]
    te, tf = e // 3, f // 3
    consistent = start[e] == end[f]  # opposite directions: the two fronts are on the same side
    flipped = int(np.count_nonzero(~consistent))
    e, f, te, tf = e[consistent], f[consistent], te[consistent], tf[consistent]
    neighbour[e], neighbour[f] = tf, te
    # the fold at the edge: convex where f's far corner lies behind e's front
    far = vertices[triangles[tf, (f % 3 + 2) % 3]]
    behind = np.einsum("ij,ij->i", far - vertices[start[e]], normal[te]) < 0.0
    folded = np.einsum("ij,ij->i", normal[te], normal[tf]) < np.cos(ACTIVE_FOLD)
    active[e] = active[f] = behind & folded
    active[~np.repeat(usable, 3)] = False
    neighbour, active = neighbour.reshape(n, 3), active.reshape(n, 3)
    vertex_active = np.zeros(len(vertices), dtype=bool)
    vertex_active[start[active.reshape(-1)]] = True
    vertex_active[end[active.reshape(-1)]] = True
    owner = np.full(len(vertices), n, dtype=np.int64)
    usable_ids = np.flatnonzero(usable)
    for k in range(3):
        np.minimum.at(owner, triangles[usable_ids, k], usable_ids)
    return MeshTopology(normal=normal, usable=usable, neighbour=neighbour, edge_active=active,
                        corner_active=vertex_active[triangles] & usable[:, None], corner_owner=owner[triangles],
                        flipped_edges=flipped)
