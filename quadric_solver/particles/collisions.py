"""Particles against the static colliders (planes, box walls, tubes), resolved after the integrator's step.

A particle of radius r that ends the step closer than r to a collider (or through it) is projected back onto
the surface along the collider's normal, so a resting particle does not sink. Its velocity then gets an
impulse: the normal approach speed u is replaced by e u away from the collider (e = 0 below the
restitution threshold), and the tangential velocity loses up to mu times that normal change (Coulomb
friction: a particle sliding under gravity slows at mu g). The friction's change of velocity moves the
particle back too, by h times that change, as if the step had ended with the new velocity (x1 = x0 + h v1,
as in symplectic Euler), but never behind where it started the step: otherwise a particle held by static
friction would still creep by its tangential acceleration times h^2 every step. Materials combine as the
bodies' do: friction by geometric mean, restitution by maximum.

Box walls are one-sided rectangles and tubes are open inside: only a particle that started the step in front
of the wall (or inside the tube) collides with it, so one leaving through the open top, or passing outside,
does not.
"""
import numpy as np
from numba import njit

from ..math3d import JIT
from ..model import STATIC_PLANE, STATIC_TUBE, STATIC_WALL


@njit(**JIT, inline="always")
def resolve_contact(y, y0, size, i, nx, ny, nz, depth, friction, restitution, threshold, h):
    """Move particle i by depth along the unit normal n and give it the contact impulse (module docstring): the
    response to any immovable collider (mesh_contacts.py uses it too)."""
    y[3 * i] += depth * nx
    y[3 * i + 1] += depth * ny
    y[3 * i + 2] += depth * nz
    j = size + 3 * i
    vx, vy, vz = y[j], y[j + 1], y[j + 2]
    normal = vx * nx + vy * ny + vz * nz
    if normal >= 0.0:
        return
    change = -(1.0 + (restitution if -normal > threshold else 0.0)) * normal
    y[j] = vx + change * nx
    y[j + 1] = vy + change * ny
    y[j + 2] = vz + change * nz
    tx, ty, tz = vx - normal * nx, vy - normal * ny, vz - normal * nz
    slide = np.sqrt(tx * tx + ty * ty + tz * tz)
    if slide == 0.0:
        return
    # the friction's change of velocity, -min(1, mu change / slide) t, applied to the velocity and, times h but
    # at most back to the start of the step along t, to the position
    lost = min(1.0, friction * change / slide)
    y[j] -= lost * tx
    y[j + 1] -= lost * ty
    y[j + 2] -= lost * tz
    moved = ((y[3 * i] - y0[3 * i]) * tx + (y[3 * i + 1] - y0[3 * i + 1]) * ty
             + (y[3 * i + 2] - y0[3 * i + 2]) * tz) / slide
    back = min(h * lost * slide, max(0.0, moved)) / slide
    y[3 * i] -= back * tx
    y[3 * i + 1] -= back * ty
    y[3 * i + 2] -= back * tz


@njit(**JIT, inline="always")
def group_surface(model, particle_model, g):
    """(radius, friction, restitution) of group g: what its contacts with colliders and bodies read."""
    material = particle_model.group_material[g]
    return particle_model.group_radius[g], model.material_friction[material], model.material_restitution[material]


@njit(**JIT)
def collide_particles(model, particle_model, state, h, restitution_threshold):
    """Resolve the contacts of every movable particle with every static collider; returns how many there were.

    model: the scene's Model (static colliders and materials); h: the step; the start positions are in
    state.work_start.
    """
    size = 3 * particle_model.n_particles
    y, y0 = state.y, state.work_start
    inv_mass = state.inv_mass
    group_start = particle_model.group_start
    kinds, points, normals = model.static_kind, model.static_point, model.static_normal
    axes_u, axes_v, sizes = model.static_u, model.static_v, model.static_size
    static_material = model.static_material
    friction, restitution = model.material_friction, model.material_restitution
    contacts = 0
    for g in range(group_start.shape[0] - 1):
        radius, mu, e = group_surface(model, particle_model, g)
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
                    resolve_contact(y, y0, size, i, nx, ny, nz, depth, np.sqrt(mu * friction[static_material[s]]),
                             max(e, restitution[static_material[s]]), restitution_threshold, h)
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
                    resolve_contact(y, y0, size, i, -rx / radial, -ry / radial, -rz / radial, depth,
                             np.sqrt(mu * friction[static_material[s]]), max(e, restitution[static_material[s]]),
                             restitution_threshold, h)
                    # friction's move along the curved wall takes it out by (move)^2 / 2R: onto the wall again
                    dx, dy, dz = y[3 * i] - px, y[3 * i + 1] - py, y[3 * i + 2] - pz
                    along = dx * nx + dy * ny + dz * nz
                    rx, ry, rz = dx - along * nx, dy - along * ny, dz - along * nz
                    radial = np.sqrt(rx * rx + ry * ry + rz * rz)
                    if radial > sizes[s, 0] - radius:
                        scale = (sizes[s, 0] - radius) / radial - 1.0
                        y[3 * i] += scale * rx
                        y[3 * i + 1] += scale * ry
                        y[3 * i + 2] += scale * rz
                    contacts += 1
    return contacts
