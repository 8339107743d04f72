"""Particles against the static colliders (planes, box walls, tubes), resolved after the integrator's step.

A particle of radius r that ends the step closer than r to a collider (or through it) is projected back onto
the surface along the collider's normal, so a resting particle does not sink. Its velocity then gets an
impulse: the normal approach speed u is replaced by e u away from the collider (e = 0 below the
restitution threshold), and the tangential velocity loses up to mu times that normal change (Coulomb
friction: a particle sliding under gravity slows at mu g). Materials combine as the bodies' do: friction by
geometric mean, restitution by maximum.

Box walls are one-sided rectangles and tubes are open inside: only a particle that started the step in front
of the wall (or inside the tube) collides with it, so one leaving through the open top, or passing outside,
does not.
"""
import numpy as np
from numba import njit

from ..math3d import JIT
from ..model import STATIC_PLANE, STATIC_TUBE, STATIC_WALL


@njit(**JIT, inline="always")
def _resolve(y, size, i, nx, ny, nz, depth, friction, restitution, threshold):
    """Move particle i by depth along the unit normal n and give it the contact impulse (module docstring)."""
    y[3 * i] += depth * nx
    y[3 * i + 1] += depth * ny
    y[3 * i + 2] += depth * nz
    j = size + 3 * i
    vx, vy, vz = y[j], y[j + 1], y[j + 2]
    normal = vx * nx + vy * ny + vz * nz
    if normal >= 0.0:
        return
    change = -(1.0 + (restitution if -normal > threshold else 0.0)) * normal
    vx += change * nx
    vy += change * ny
    vz += change * nz
    along = vx * nx + vy * ny + vz * nz
    tx, ty, tz = vx - along * nx, vy - along * ny, vz - along * nz
    slide = np.sqrt(tx * tx + ty * ty + tz * tz)
    if slide > 0.0:
        keep = max(0.0, 1.0 - friction * change / slide)
        vx, vy, vz = along * nx + keep * tx, along * ny + keep * ty, along * nz + keep * tz
    y[j], y[j + 1], y[j + 2] = vx, vy, vz


@njit(**JIT)
def collide_particles(model, particle_model, state, restitution_threshold):
    """Resolve the contacts of every movable particle with every static collider; returns how many there were.

    model: the scene's Model (static colliders and materials); the start positions are in state.work_start.
    """
    size = 3 * particle_model.n_particles
    y, y0 = state.y, state.work_start
    inv_mass = particle_model.inv_mass
    group_start = particle_model.group_start
    kinds, points, normals = model.static_kind, model.static_point, model.static_normal
    axes_u, axes_v, sizes = model.static_u, model.static_v, model.static_size
    static_material = model.static_material
    friction, restitution = model.material_friction, model.material_restitution
    contacts = 0
    for g in range(group_start.shape[0] - 1):
        radius = particle_model.group_radius[g]
        mu = friction[particle_model.group_material[g]]
        e = restitution[particle_model.group_material[g]]
        for i in range(group_start[g], group_start[g + 1]):
            if inv_mass[i] == 0.0:
                continue
            for s in range(kinds.shape[0]):
                kind = kinds[s]
                px, py, pz = points[s, 0], points[s, 1], points[s, 2]
                nx, ny, nz = normals[s, 0], normals[s, 1], normals[s, 2]
                dx, dy, dz = y[3 * i] - px, y[3 * i + 1] - py, y[3 * i + 2] - pz
                if kind == STATIC_PLANE or kind == STATIC_WALL:
                    depth = radius - (dx * nx + dy * ny + dz * nz)
                    if depth <= 0.0:
                        continue
                    if kind == STATIC_WALL:
                        start_side = (y0[3 * i] - px) * nx + (y0[3 * i + 1] - py) * ny + (y0[3 * i + 2] - pz) * nz
                        if start_side < -radius:
                            continue  # it was behind the wall: outside the box
                        if abs(dx * axes_u[s, 0] + dy * axes_u[s, 1] + dz * axes_u[s, 2]) > sizes[s, 0] or \
                                abs(dx * axes_v[s, 0] + dy * axes_v[s, 1] + dz * axes_v[s, 2]) > sizes[s, 1]:
                            continue
                    _resolve(y, size, i, nx, ny, nz, depth, np.sqrt(mu * friction[static_material[s]]),
                             max(e, restitution[static_material[s]]), restitution_threshold)
                    contacts += 1
                elif kind == STATIC_TUBE:
                    along = dx * nx + dy * ny + dz * nz
                    if abs(along) > sizes[s, 1]:
                        continue
                    rx, ry, rz = dx - along * nx, dy - along * ny, dz - along * nz
                    radial = np.sqrt(rx * rx + ry * ry + rz * rz)
                    depth = radial - (sizes[s, 0] - radius)
                    if depth <= 0.0 or radial < 1e-12:
                        continue
                    sx, sy, sz = y0[3 * i] - px, y0[3 * i + 1] - py, y0[3 * i + 2] - pz
                    start_along = sx * nx + sy * ny + sz * nz
                    sx, sy, sz = sx - start_along * nx, sy - start_along * ny, sz - start_along * nz
                    if sx * sx + sy * sy + sz * sz >= sizes[s, 0] * sizes[s, 0]:
                        continue  # it was outside the tube
                    _resolve(y, size, i, -rx / radial, -ry / radial, -rz / radial, depth,
                             np.sqrt(mu * friction[static_material[s]]), max(e, restitution[static_material[s]]),
                             restitution_threshold)
                    contacts += 1
    return contacts
