"""Particles against rigid bodies, two-way: resolved after the integrator's step, with the bodies where the
substep's body phases left them.

Broad phase: the bodies' world boxes (their shape's box turned into the world, grown by the largest particle
radius) are entered into a hashed grid, each body into every cell its box covers; a particle looks only at the
bodies listed in its own cell's bucket, so the cost is one lookup per particle plus the cells the bodies cover,
not particles x bodies. The cell is the median body box's width, doubled while the bodies would fill more than
CELLS_PER_BODY cells each on average (one huge body, a floor slab, must not fill the grid).

Narrow phase: the particle's position in the body's frame against the shape's signed distance
(collision/point_distance.py: closed forms for ellipsoids, boxes, cylinders and capsules; GJK/EPA for
superellipsoids and hulls). A particle of radius r nearer than r to the surface (or inside) touches it, with the
surface's outward normal n at the nearest point c.

Response, per contact, one at a time (Gauss-Seidel over a particle's bodies):
- position: the particle alone is projected out along n to distance r. The body is not moved: a position push on
  a body resting on a floor would drive it into the floor, which only the body phases can answer. The body feels
  the particle through its velocity, so a resting particle weighs on it with m g.
- velocity: the relative velocity u = v_p - (v_b + w_b x (c - x_b)) at the contact point gets the normal impulse
  that turns an approach speed -u_n into e (-u_n) (e = 0 below the restitution threshold), J_n = -(1 + e) u_n / k_n,
  with k_n = 1/m_p + 1/m_b + (r x n).I^-1 (r x n) the inverse mass the contact sees, and a Coulomb friction impulse
  up to mu J_n that at most stops the sliding (k_t likewise along the sliding direction). The particle takes
  +P / m_p, a dynamic body -P / m_b and -I^-1 (r x P): linear momentum is conserved exactly, angular momentum
  about any point too where the impulse acts through the particle's centre (no friction, or r = 0). Fixed and
  kinematic bodies have no inverse mass: they are obstacles that move with their velocity, and the response is
  that of the static colliders (collisions.py) in the body's moving frame.
- friction moves the particle back by h times its change of velocity, as against the static colliders, but
  never behind where it started sliding relative to the body's surface.
Materials combine as elsewhere: friction by geometric mean, restitution by maximum.

Limits: a particle is tested against the bodies' poses at the end of the substep only, so one faster than the
body's thickness per substep can pass through it, and one found deep inside leaves by the nearest face.
"""
import numpy as np
from numba import njit

from ..collision.broadphase import cell_hash
from ..collision.point_distance import ellipsoid_distance, point_distance
from ..math3d import JIT, cross, mat_t_vec, mat_vec, quat_to_matrix, world_inverse_inertia
from .collisions import group_surface

CELLS_PER_BODY = 32  # the grid's cell grows until the bodies' boxes cover at most this many cells per body


@njit(**JIT)
def _body_frames(model, bodies, shapes, grow, rotation, inv_inertia, low, high):
    """Each body's rotation, world inverse inertia and world box grown by ``grow``."""
    for b in range(model.n_bodies):
        quat_to_matrix(bodies.orientation[b], rotation[b])
        world_inverse_inertia(rotation[b], model.inv_inertia_local[b], inv_inertia[b])
        for k in range(3):
            if shapes is None:  # ellipsoids: the exact box, sqrt of the shape matrix's diagonal
                half = np.sqrt((rotation[b, k, 0] * model.semi_axes[b, 0]) ** 2
                               + (rotation[b, k, 1] * model.semi_axes[b, 1]) ** 2
                               + (rotation[b, k, 2] * model.semi_axes[b, 2]) ** 2)
            else:
                size = shapes.size[b]
                half = (abs(rotation[b, k, 0]) * size[0] + abs(rotation[b, k, 1]) * size[1]
                        + abs(rotation[b, k, 2]) * size[2])
            low[b, k] = bodies.position[b, k] - half - grow
            high[b, k] = bodies.position[b, k] + half + grow


@njit(**JIT)
def _covered(low, high, cell):
    """How many grid cells of this width the boxes cover, summed over the boxes."""
    total = 0
    for b in range(low.shape[0]):
        cells = 1
        for k in range(3):
            cells *= np.int64(np.floor(high[b, k] / cell)) - np.int64(np.floor(low[b, k] / cell)) + 1
        total += cells
    return total


@njit(**JIT)
def _body_grid(low, high):
    """(cell, bucket start (T + 1,), bodies by bucket): every body listed in the bucket of each cell its box covers."""
    n = low.shape[0]
    widths = np.empty(n)
    for b in range(n):
        widths[b] = max(high[b, 0] - low[b, 0], max(high[b, 1] - low[b, 1], high[b, 2] - low[b, 2]))
    cell = max(np.sort(widths)[n // 2], 1e-9)
    while _covered(low, high, cell) > CELLS_PER_BODY * n:
        cell *= 2.0
    entries = _covered(low, high, cell)
    table = 16
    while table < 2 * entries:
        table *= 2
    mask = table - 1
    start = np.zeros(table + 1, dtype=np.int64)
    items = np.empty(entries, dtype=np.int64)
    fill = np.empty(table, dtype=np.int64)
    for sweep in range(2):  # count, then fill
        if sweep == 1:
            for k in range(1, table + 1):
                start[k] += start[k - 1]
            fill[:] = start[:table]
        for b in range(n):
            x0, x1 = np.int64(np.floor(low[b, 0] / cell)), np.int64(np.floor(high[b, 0] / cell))
            y0, y1 = np.int64(np.floor(low[b, 1] / cell)), np.int64(np.floor(high[b, 1] / cell))
            z0, z1 = np.int64(np.floor(low[b, 2] / cell)), np.int64(np.floor(high[b, 2] / cell))
            for cx in range(x0, x1 + 1):
                for cy in range(y0, y1 + 1):
                    for cz in range(z0, z1 + 1):
                        key = cell_hash(cx, cy, cz, mask)
                        if sweep == 0:
                            start[key + 1] += 1
                        else:
                            items[fill[key]] = b
                            fill[key] += 1
    return cell, start, items


@njit(**JIT)
def _resolve_body(y, y0, size, i, wp, bodies, b, wb, ii, cx, cy, cz, nx, ny, nz, depth, friction, restitution,
                  threshold, h):
    """Project particle i out by depth along n and exchange the contact impulse with body b at the surface point c
    (module docstring); wb, ii: the body's inverse mass and world inverse inertia (zero unless dynamic). Returns
    how far friction moved the particle back along the surface's tangent (0: not at all)."""
    y[3 * i] += depth * nx
    y[3 * i + 1] += depth * ny
    y[3 * i + 2] += depth * nz
    rx, ry, rz = cx - bodies.position[b, 0], cy - bodies.position[b, 1], cz - bodies.position[b, 2]
    w = bodies.angular_velocity[b]
    spin_x, spin_y, spin_z = cross(w[0], w[1], w[2], rx, ry, rz)
    vbx = bodies.linear_velocity[b, 0] + spin_x
    vby = bodies.linear_velocity[b, 1] + spin_y
    vbz = bodies.linear_velocity[b, 2] + spin_z
    j = size + 3 * i
    ux, uy, uz = y[j] - vbx, y[j + 1] - vby, y[j + 2] - vbz
    normal = ux * nx + uy * ny + uz * nz
    if normal >= 0.0:
        return 0.0
    ax, ay, az = cross(rx, ry, rz, nx, ny, nz)
    ix, iy, iz = mat_vec(ii, ax, ay, az)
    k_normal = wp + wb + ax * ix + ay * iy + az * iz
    push = -(1.0 + (restitution if -normal > threshold else 0.0)) * normal / k_normal
    px, py, pz = push * nx, push * ny, push * nz
    tx, ty, tz = ux - normal * nx, uy - normal * ny, uz - normal * nz
    slide = np.sqrt(tx * tx + ty * ty + tz * tz)
    held = 0.0
    if slide > 0.0:
        tx, ty, tz = tx / slide, ty / slide, tz / slide
        ax, ay, az = cross(rx, ry, rz, tx, ty, tz)
        ix, iy, iz = mat_vec(ii, ax, ay, az)
        k_tangent = wp + wb + ax * ix + ay * iy + az * iz
        held = min(slide / k_tangent, friction * push)  # the friction impulse, against the sliding
        px, py, pz = px - held * tx, py - held * ty, pz - held * tz
    y[j] += wp * px
    y[j + 1] += wp * py
    y[j + 2] += wp * pz
    if wb > 0.0:
        bodies.linear_velocity[b, 0] -= wb * px
        bodies.linear_velocity[b, 1] -= wb * py
        bodies.linear_velocity[b, 2] -= wb * pz
        qx, qy, qz = cross(rx, ry, rz, px, py, pz)
        ix, iy, iz = mat_vec(ii, qx, qy, qz)
        w[0] -= ix
        w[1] -= iy
        w[2] -= iz
    if held == 0.0:
        return 0.0
    # as against the static colliders: back by h times the particle's change of velocity along t, at most to where
    # its sliding over the surface (the body's point moving at its velocity) began this step
    moved = ((y[3 * i] - y0[3 * i] - h * vbx) * tx + (y[3 * i + 1] - y0[3 * i + 1] - h * vby) * ty
             + (y[3 * i + 2] - y0[3 * i + 2] - h * vbz) * tz)
    back = min(h * wp * held, max(0.0, moved))
    y[3 * i] -= back * tx
    y[3 * i + 1] -= back * ty
    y[3 * i + 2] -= back * tz
    return back


@njit(**JIT)
def _surface_distance(model, bodies, shapes, b, rot, px, py, pz):
    """(d, world outward normal) of the point p against body b (rotation ``rot``): point_distance in its frame."""
    dx, dy, dz = px - bodies.position[b, 0], py - bodies.position[b, 1], pz - bodies.position[b, 2]
    lx, ly, lz = mat_t_vec(rot, dx, dy, dz)
    if shapes is None:
        d, mx, my, mz = ellipsoid_distance(model.semi_axes[b, 0], model.semi_axes[b, 1], model.semi_axes[b, 2],
                                           lx, ly, lz)
    else:
        d, mx, my, mz = point_distance(shapes.kind[b], shapes.params[b], shapes.hull_vertices, lx, ly, lz)
    nx, ny, nz = mat_vec(rot, mx, my, mz)
    return d, nx, ny, nz


@njit(**JIT)
def collide_particles_with_bodies(model, particle_model, state, bodies, shapes, h, restitution_threshold):
    """Resolve the contacts of every movable particle with the bodies (module docstring); returns how many.

    model: the scene's Model; bodies: its BodyState, whose velocities take the bodies' share of the impulses;
    shapes: its BodyShapes, or None where the bodies are all ellipsoids.
    """
    n = model.n_bodies
    if n == 0:
        return 0
    grow = 0.0
    for g in range(particle_model.group_radius.shape[0]):
        grow = max(grow, particle_model.group_radius[g])
    rotation, inv_inertia = np.empty((n, 3, 3)), np.empty((n, 3, 3))
    low, high = np.empty((n, 3)), np.empty((n, 3))
    _body_frames(model, bodies, shapes, grow, rotation, inv_inertia, low, high)
    cell, start, items = _body_grid(low, high)
    mask = start.shape[0] - 2
    size = 3 * particle_model.n_particles
    y, y0 = state.y, state.work_start
    inv_mass = state.inv_mass
    friction, restitution = model.material_friction, model.material_restitution
    contacts = 0
    for i in range(particle_model.n_particles):
        key = cell_hash(np.int64(np.floor(y[3 * i] / cell)), np.int64(np.floor(y[3 * i + 1] / cell)),
                        np.int64(np.floor(y[3 * i + 2] / cell)), mask)
        if inv_mass[i] == 0.0 or start[key] == start[key + 1]:
            continue  # pinned, or no body near
        radius, mu, e = group_surface(model, particle_model, particle_model.particle_group[i])
        for slot in range(start[key], start[key + 1]):
            b = items[slot]
            px, py, pz = y[3 * i], y[3 * i + 1], y[3 * i + 2]
            if (px < low[b, 0] or px > high[b, 0] or py < low[b, 1] or py > high[b, 1] or pz < low[b, 2]
                    or pz > high[b, 2]):
                continue
            d, nx, ny, nz = _surface_distance(model, bodies, shapes, b, rotation[b], px, py, pz)
            depth = radius - d
            if depth <= 0.0:
                continue
            material = model.body_material[b]
            back = _resolve_body(y, y0, size, i, inv_mass[i], bodies, b, model.inv_mass[b], inv_inertia[b],
                                 px - d * nx, py - d * ny, pz - d * nz, nx, ny, nz, depth,
                                 np.sqrt(mu * friction[material]), max(e, restitution[material]),
                                 restitution_threshold, h)
            if back > 0.0:
                # the move back along the tangent leaves a curved surface by about back^2 / 2R: onto it again
                px, py, pz = y[3 * i], y[3 * i + 1], y[3 * i + 2]
                d, nx, ny, nz = _surface_distance(model, bodies, shapes, b, rotation[b], px, py, pz)
                if d > radius:
                    y[3 * i] -= (d - radius) * nx
                    y[3 * i + 1] -= (d - radius) * ny
                    y[3 * i + 2] -= (d - radius) * nz
            contacts += 1
    return contacts
