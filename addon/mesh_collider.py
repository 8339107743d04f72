"""A mesh collider's triangles as the solver takes them, in plain numpy (no bpy, no numba).

Check Scene reads mesh colliders before the solver loads, so this repeats, in a few lines, the two
rules of solver/shapes/mesh.py that it reports on (tests/addon/test_overlaps.py checks they agree):
a triangle's front is the side from which its corners run counter-clockwise, and one of less than
DEGENERATE_AREA times the mesh's squared size is left out; an edge whose two triangles run the same
way along it joins triangles that face opposite ways (the solver warns: bodies leak through there).
"""
from typing import NamedTuple

import numpy as np

DEGENERATE_AREA = 1e-12  # solver/shapes/mesh.py's DEGENERATE_AREA


class Triangles(NamedTuple):
    """A mesh collider's usable (not degenerate) triangles, for the overlap check."""
    corners: np.ndarray  # (T, 3, 3) world-space corners, counter-clockwise seen from the front
    normal: np.ndarray   # (T, 3) unit front normals
    lo: np.ndarray       # (T, 3) bounding boxes
    hi: np.ndarray


def front_normals(vertices, triangles):
    """Unit front normals (T, 3) of the triangles (zero where degenerate) and whether each is usable (T,)."""
    vertices = np.asarray(vertices, dtype=np.float64).reshape(-1, 3)
    triangles = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
    corners = vertices[triangles]
    cross = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    area2 = np.linalg.norm(cross, axis=1)
    size = float(np.ptp(vertices, axis=0).max()) if len(vertices) else 0.0
    usable = area2 > 2.0 * DEGENERATE_AREA * size * size
    normal = np.zeros((len(triangles), 3))
    normal[usable] = cross[usable] / area2[usable, None]
    return normal, usable


def flipped_edges(triangles, usable):
    """How many edges join two usable triangles that face opposite ways (both run the same way along it)."""
    triangles = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)[np.asarray(usable, dtype=bool)]
    start, end = triangles.reshape(-1), triangles[:, [1, 2, 0]].reshape(-1)
    low, high = np.minimum(start, end), np.maximum(start, end)
    order = np.lexsort((high, low))
    low, high, forward = low[order], high[order], (start < end)[order]
    first = np.flatnonzero(np.r_[True, (low[1:] != low[:-1]) | (high[1:] != high[:-1])])
    count = np.diff(np.r_[first, len(low)])
    pairs = first[count == 2]  # edges of more than two triangles are no manifold: the solver leaves them be
    return int(np.count_nonzero(forward[pairs] == forward[pairs + 1]))


def usable_triangles(vertices, triangles):
    """The Triangles the solver keeps of a mesh."""
    vertices = np.asarray(vertices, dtype=np.float64).reshape(-1, 3)
    normal, usable = front_normals(vertices, triangles)
    corners = vertices[np.asarray(triangles, dtype=np.int64).reshape(-1, 3)[usable]]
    return Triangles(corners, normal[usable], corners.min(axis=1), corners.max(axis=1))
