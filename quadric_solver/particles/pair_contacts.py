"""Contacts between particles: those of groups added with particle_collisions=True and a radius > 0.

After the static colliders, the colliding particles are sorted into a hashed grid of cells two largest radii
wide, so that touching particles lie in neighbouring cells; each pair closer than the sum of its radii is
pushed apart along the line of centres (shared by inverse mass: a pinned particle does not move; one not there,
unborn or dead, is left out of the grid) and gets the
impulse of the static contacts (restitution above the threshold, combined by maximum; Coulomb friction,
combined by geometric mean, which also moves the step back as against the colliders). The pairs are resolved
one at a time in sweeps (Gauss-Seidel); the substep runs PAIR_SWEEPS of them, each followed by the static
colliders again, so that a push does not leave a particle in a wall. Ten sweeps keep a ten-layer pile within
5% of touching; deeper stacks are pressed closer.
"""
import numpy as np
from numba import njit

from ..math3d import JIT

PAIR_SWEEPS = 10  # a pile of ten layers stays within 5% of touching (4: 300 particles overlapped by 30%)


@njit(**JIT, inline="always")
def _cell_key(x, y, z, cell, mask):
    """The hash bucket of the grid cell holding (x, y, z)."""
    ix, iy, iz = np.int64(np.floor(x / cell)), np.int64(np.floor(y / cell)), np.int64(np.floor(z / cell))
    return ((ix * 73856093) ^ (iy * 19349663) ^ (iz * 83492791)) & mask


@njit(**JIT, inline="always")
def _in_grid(particle_model, state, i):
    """Whether particle i takes part in the pair contacts: it has a radius and is there (pinned ones are, as
    obstacles; unborn and dead ones, whose inverse mass only the state makes zero, are not)."""
    return particle_model.particle_radius[i] > 0.0 and (state.inv_mass[i] != 0.0
                                                         or particle_model.inv_mass[i] == 0.0)


@njit(**JIT)
def build_particle_grid(particle_model, state):
    """Sort the colliding particles by bucket: bucket b is work_grid_items[work_grid_start[b]:work_grid_start[b + 1]].

    The cells are two largest radii wide, so touching particles lie in neighbouring cells.
    """
    cell = 2.0 * particle_model.largest_radius
    mask = state.work_grid_fill.shape[0] - 1
    y, radius = state.y, particle_model.particle_radius
    start, fill, items = state.work_grid_start, state.work_grid_fill, state.work_grid_items
    for b in range(start.shape[0]):
        start[b] = 0
    for i in range(radius.shape[0]):
        if _in_grid(particle_model, state, i):
            start[_cell_key(y[3 * i], y[3 * i + 1], y[3 * i + 2], cell, mask) + 1] += 1
    for b in range(1, start.shape[0]):
        start[b] += start[b - 1]
    for b in range(fill.shape[0]):
        fill[b] = start[b]
    for i in range(radius.shape[0]):
        if _in_grid(particle_model, state, i):
            key = _cell_key(y[3 * i], y[3 * i + 1], y[3 * i + 2], cell, mask)
            items[fill[key]] = i
            fill[key] += 1


@njit(**JIT, inline="always")
def _resolve_pair(y, y0, size, i, j, wi, wj, radius, friction, restitution, threshold, h):
    """Push i and j apart to the sum of their radii and give them the contact impulse; True if they touched."""
    dx, dy, dz = y[3 * i] - y[3 * j], y[3 * i + 1] - y[3 * j + 1], y[3 * i + 2] - y[3 * j + 2]
    distance = np.sqrt(dx * dx + dy * dy + dz * dz)
    if distance >= radius or distance == 0.0:
        return False
    nx, ny, nz = dx / distance, dy / distance, dz / distance
    share = (radius - distance) / (wi + wj)
    y[3 * i] += share * wi * nx
    y[3 * i + 1] += share * wi * ny
    y[3 * i + 2] += share * wi * nz
    y[3 * j] -= share * wj * nx
    y[3 * j + 1] -= share * wj * ny
    y[3 * j + 2] -= share * wj * nz
    a, b = size + 3 * i, size + 3 * j
    rx, ry, rz = y[a] - y[b], y[a + 1] - y[b + 1], y[a + 2] - y[b + 2]
    normal = rx * nx + ry * ny + rz * nz
    if normal >= 0.0:
        return True
    change = -(1.0 + (restitution if -normal > threshold else 0.0)) * normal  # of the relative normal speed
    tx, ty, tz = rx - normal * nx, ry - normal * ny, rz - normal * nz
    slide = np.sqrt(tx * tx + ty * ty + tz * tz)
    lost = min(1.0, friction * change / slide) if slide > 0.0 else 0.0
    # the relative velocity changes by change n - lost t, shared by inverse mass
    dx, dy, dz = (change * nx - lost * tx) / (wi + wj), (change * ny - lost * ty) / (wi + wj), \
        (change * nz - lost * tz) / (wi + wj)
    y[a] += wi * dx
    y[a + 1] += wi * dy
    y[a + 2] += wi * dz
    y[b] -= wj * dx
    y[b + 1] -= wj * dy
    y[b + 2] -= wj * dz
    if lost == 0.0:
        return True
    # as against the colliders (collisions.py): the friction moves the step back by h times its change of the
    # relative velocity, at most to where the pair's relative sliding started, shared by inverse mass
    moved = ((y[3 * i] - y0[3 * i] - y[3 * j] + y0[3 * j]) * tx + (y[3 * i + 1] - y0[3 * i + 1] - y[3 * j + 1]
             + y0[3 * j + 1]) * ty + (y[3 * i + 2] - y0[3 * i + 2] - y[3 * j + 2] + y0[3 * j + 2]) * tz) / slide
    back = min(h * lost * slide, max(0.0, moved)) / slide / (wi + wj)
    y[3 * i] -= wi * back * tx
    y[3 * i + 1] -= wi * back * ty
    y[3 * i + 2] -= wi * back * tz
    y[3 * j] += wj * back * tx
    y[3 * j + 1] += wj * back * ty
    y[3 * j + 2] += wj * back * tz
    return True


@njit(**JIT)
def sweep_particle_pairs(model, particle_model, state, h, restitution_threshold):
    """One sweep over the pairs of colliding particles in the grid (build_particle_grid); returns how many touched.

    The grid holds the positions from before the sweeps: pushes move particles far less than a cell.
    """
    cell = 2.0 * particle_model.largest_radius
    mask = state.work_grid_fill.shape[0] - 1
    y, y0, start, items = state.y, state.work_start, state.work_grid_start, state.work_grid_items
    size = 3 * particle_model.n_particles
    radius, inv_mass, group = particle_model.particle_radius, state.inv_mass, particle_model.particle_group
    material = particle_model.group_material
    friction, restitution = model.material_friction, model.material_restitution
    touching = 0
    for slot in range(start[start.shape[0] - 1]):
        i = items[slot]
        cx = np.int64(np.floor(y[3 * i] / cell))
        cy = np.int64(np.floor(y[3 * i + 1] / cell))
        cz = np.int64(np.floor(y[3 * i + 2] / cell))
        for ox in range(-1, 2):
            for oy in range(-1, 2):
                for oz in range(-1, 2):
                    key = (((cx + ox) * 73856093) ^ ((cy + oy) * 19349663) ^ ((cz + oz) * 83492791)) & mask
                    for other in range(start[key], start[key + 1]):
                        j = items[other]
                        if j <= i or inv_mass[i] + inv_mass[j] == 0.0:
                            continue  # each pair once (cells that share a bucket come twice: harmless)
                        mi, mj = material[group[i]], material[group[j]]
                        if _resolve_pair(y, y0, size, i, j, inv_mass[i], inv_mass[j], radius[i] + radius[j],
                                         np.sqrt(friction[mi] * friction[mj]), max(restitution[mi], restitution[mj]),
                                         restitution_threshold, h):
                            touching += 1
    return touching
