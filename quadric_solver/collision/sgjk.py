"""Penetration of two overlapping convex shapes by shifted GJK ("SGJK"): a local minimum of the penetration depth
found with plain GJK distance queries only.

With C = A - B holding the origin, the depth along a unit n is C's support h_C(n), and the penetration depth
is its minimum over n. SGJK keeps a point p outside C, on the ray from the origin along n, a margin beyond C's
supporting plane there (p = (h_C(n) + margin) n), and asks GJK for the point q of C nearest to p (GJK on the
pair with B moved by p). The direction p - q is C's outward normal at q; it becomes the next n. At a fixed
point q lies on the ray along n on C's supporting plane: the condition for a minimum of h_C on the sphere, so
the depth is a local minimum (the global one for smooth, nearly round pairs; a face's for polytopes). Steps
that would raise the depth are bisected back towards n, so the search descends from the warm start and stays
in its basin. Each step is one GJK, so it costs more than EPA from scratch, but warm-started from the last substep's normal it
converges in one or two, and it never builds a polytope: it is the option for curved shapes, where EPA needs
many facets.
"""
import numpy as np
from numba import njit

from ..math3d import JIT
from .gjk import SEPARATED, gjk, pair_support

MAX_STEPS = 32
MARGIN = 0.25  # of the pair's size: how far outside C the probe point stays
HALVINGS = 8  # bisections of a step towards the new normal before the search stops


@njit(**JIT)
def sgjk(kinds, params, hull_vertices, positions, rotations, nx, ny, nz, tolerance, scale, support_row, simplex,
         weights):
    """(depth, nx, ny, nz): from the guess n (from A to B), a local minimum over unit n of the depth h_C(n) of
    overlapping shapes, to within the tolerance; the depth is h_C at the returned n, as epa's.

    support_row (1, 9), simplex (4, 9) and weights (4,): scratch.
    """
    length = np.sqrt(nx * nx + ny * ny + nz * nz)
    if length == 0.0:
        nx, ny, nz, length = positions[1, 0] - positions[0, 0], positions[1, 1] - positions[0, 1], \
            positions[1, 2] - positions[0, 2], 1.0
        length = np.sqrt(nx * nx + ny * ny + nz * nz)
        if length == 0.0:
            nx, ny, nz, length = 0.0, 0.0, 1.0, 1.0
    nx, ny, nz = nx / length, ny / length, nz / length
    moved = positions.copy()
    margin = MARGIN * scale
    depth = _depth(kinds, params, hull_vertices, positions, rotations, nx, ny, nz, support_row)
    for _ in range(MAX_STEPS):
        # p = (h + margin) n; C - p = A - (B + p): B moved by p
        shift = depth + margin
        moved[1, 0] = positions[1, 0] + shift * nx
        moved[1, 1] = positions[1, 1] + shift * ny
        moved[1, 2] = positions[1, 2] + shift * nz
        verdict, _, _, ux, uy, uz = gjk(kinds, params, hull_vertices, moved, rotations, nx, ny, nz, tolerance,
                                        simplex, weights)
        if verdict != SEPARATED:
            break  # p touches C within the tolerance: n is as good as this search gets
        # a descent step: towards the new normal only as far as the depth falls, so that a deep overlap (where
        # the step can overshoot into another minimum's basin) stays in the basin of the warm start
        moved_on = False
        for _ in range(HALVINGS):
            trial = _depth(kinds, params, hull_vertices, positions, rotations, ux, uy, uz, support_row)
            if trial < depth:
                moved_on = True
                break
            ux, uy, uz = nx + ux, ny + uy, nz + uz
            length = np.sqrt(ux * ux + uy * uy + uz * uz)
            ux, uy, uz = ux / length, uy / length, uz / length
        if not moved_on:
            break
        change = (ux - nx) * (ux - nx) + (uy - ny) * (uy - ny) + (uz - nz) * (uz - nz)
        nx, ny, nz, depth = ux, uy, uz, trial
        # h_C is stationary at the minimum, so a normal within sqrt(tolerance / scale) of it gives the depth
        # within about the tolerance
        if change * scale <= tolerance:
            break
    return depth, nx, ny, nz


@njit(**JIT, inline="always")
def _depth(kinds, params, hull_vertices, positions, rotations, nx, ny, nz, support_row):
    """h_C(n): C's support along the unit n."""
    pair_support(kinds, params, hull_vertices, positions, rotations, nx, ny, nz, support_row, 0)
    return support_row[0, 0] * nx + support_row[0, 1] * ny + support_row[0, 2] * nz
