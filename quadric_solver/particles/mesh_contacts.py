"""Particles against the triangles of mesh colliders, resolved after the integrator's step like the other colliders.

Each movable particle of radius r asks the meshes' bounding-volume hierarchy (collision/bvh.py) for the triangles
whose boxes meet that of its step (from its start to its end position, grown by r) and takes the nearest point of each triangle (Ericson's Voronoi-region
walk, closest_on_triangle). A triangle touches the particle when that point is nearer than r:
- in the face's region the normal is the face's and the depth r minus the height over the plane, also when the
  particle ended the step behind the plane (a fast particle that crossed the face comes back in front);
- at an edge or a corner, only in front of the plane and only where that feature is active (quadric_solver/mesh.py:
  boundary edges and convex folds, and their corners); the normal is then from the feature to the particle.
  Flat and concave seams are inactive, as for bodies: the face beside them holds the particle, so a particle
  rolling over a finely triangulated floor feels no bumps at the seams.
The collider is one-sided, like the box containers' walls: a triangle ignores a particle that started the step
more than r behind its plane, so particles pass a mesh from behind and stay inside a closed one.

Of the triangles found, the deepest contact is resolved first (collisions.py's resolve_contact: projection onto
the surface, restitution, Coulomb friction) and the others measured again, up to MESH_PASSES times, so that the
face under a particle, not the seam beside it, sets the push.
"""
import numpy as np
from numba import njit

from ..collision.bvh import query
from ..math3d import JIT
from .collisions import group_surface, resolve_contact

MESH_PASSES = 4  # contacts of one particle with the triangles about it, resolved deepest first
SETTLED = 1e-9   # of the radius: after the first pass, overlaps this small (rounding) are left alone
FACE = 6  # closest_on_triangle's feature code for the inside of the face (0-2: corners, 3-5: edges k, k+1)
EDGE_TOLERANCE = 1e-9  # of the triangle's size: a particle whose foot is this close to an edge stands over the face


@njit(**JIT)
def closest_on_triangle(px, py, pz, ax, ay, az, bx, by, bz, cx, cy, cz):
    """The point of triangle (a, b, c) nearest to p, and its feature: corner k (0-2), edge k from corner k to
    corner k + 1 (3 + k), or the face (FACE). Ericson, Real-Time Collision Detection, 5.1.5."""
    abx, aby, abz = bx - ax, by - ay, bz - az
    acx, acy, acz = cx - ax, cy - ay, cz - az
    apx, apy, apz = px - ax, py - ay, pz - az
    d1 = abx * apx + aby * apy + abz * apz
    d2 = acx * apx + acy * apy + acz * apz
    if d1 <= 0.0 and d2 <= 0.0:
        return ax, ay, az, 0
    bpx, bpy, bpz = px - bx, py - by, pz - bz
    d3 = abx * bpx + aby * bpy + abz * bpz
    d4 = acx * bpx + acy * bpy + acz * bpz
    if d3 >= 0.0 and d4 <= d3:
        return bx, by, bz, 1
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        v = d1 / (d1 - d3)
        return ax + v * abx, ay + v * aby, az + v * abz, 3
    cpx, cpy, cpz = px - cx, py - cy, pz - cz
    d5 = abx * cpx + aby * cpy + abz * cpz
    d6 = acx * cpx + acy * cpy + acz * cpz
    if d6 >= 0.0 and d5 <= d6:
        return cx, cy, cz, 2
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        w = d2 / (d2 - d6)
        return ax + w * acx, ay + w * acy, az + w * acz, 5
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and d4 - d3 >= 0.0 and d5 - d6 >= 0.0:
        w = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        return bx + w * (cx - bx), by + w * (cy - by), bz + w * (cz - bz), 4
    denominator = 1.0 / (va + vb + vc)
    v, w = vb * denominator, vc * denominator
    return ax + abx * v + acx * w, ay + aby * v + acy * w, az + abz * v + acz * w, FACE


@njit(**JIT)
def _triangle_contact(meshes, hull_vertices, t, px, py, pz, sx, sy, sz, radius):
    """(depth, nx, ny, nz) of the particle at p, which started the step at s, against triangle t; depth <= 0 when
    they do not touch (module docstring)."""
    nx, ny, nz = meshes.normal[t, 0], meshes.normal[t, 1], meshes.normal[t, 2]
    ox, oy, oz = meshes.centre[t, 0], meshes.centre[t, 1], meshes.centre[t, 2]
    if (sx - ox) * nx + (sy - oy) * ny + (sz - oz) * nz < -radius:
        return 0.0, nx, ny, nz  # it started behind the triangle
    row = meshes.first_corner + 3 * t
    qx, qy, qz, feature = closest_on_triangle(
        px, py, pz, ox + hull_vertices[row, 0], oy + hull_vertices[row, 1], oz + hull_vertices[row, 2],
        ox + hull_vertices[row + 1, 0], oy + hull_vertices[row + 1, 1], oz + hull_vertices[row + 1, 2],
        ox + hull_vertices[row + 2, 0], oy + hull_vertices[row + 2, 1], oz + hull_vertices[row + 2, 2])
    dx, dy, dz = px - qx, py - qy, pz - qz
    height = dx * nx + dy * ny + dz * nz
    if feature != FACE:
        # a particle right over an edge (its foot on the edge, as the seam of a floor) is over the face
        lx, ly, lz = dx - height * nx, dy - height * ny, dz - height * nz
        size = abs(hull_vertices[row, 0]) + abs(hull_vertices[row, 1]) + abs(hull_vertices[row, 2])
        if lx * lx + ly * ly + lz * lz <= (EDGE_TOLERANCE * size) ** 2:
            feature = FACE
    if feature == FACE:
        return radius - height, nx, ny, nz
    if height < 0.0:
        return 0.0, nx, ny, nz  # behind the plane beside the face: a neighbour's face, or a miss
    if feature < 3:
        if not meshes.corner_active[t, feature]:
            return 0.0, nx, ny, nz
    elif not meshes.edge_active[t, feature - 3]:
        return 0.0, nx, ny, nz
    distance = np.sqrt(dx * dx + dy * dy + dz * dz)
    if distance <= 1e-12 * radius or distance == 0.0:
        return radius - height, nx, ny, nz
    return radius - distance, dx / distance, dy / distance, dz / distance


@njit(**JIT)
def collide_particles_with_meshes(model, particle_model, state, shapes, meshes, h, restitution_threshold):
    """Resolve the contacts of every movable particle with the mesh colliders' triangles; returns how many.

    model: the scene's Model (materials, each triangle's in static_material after meshes.first_static);
    shapes: the BodyShapes that hold the triangles' corners; the start positions are in state.work_start.
    """
    size = 3 * particle_model.n_particles
    y, y0 = state.y, state.work_start
    inv_mass, group_start = state.inv_mass, particle_model.group_start
    friction, restitution = model.material_friction, model.material_restitution
    static_material, first_static = model.static_material, meshes.first_static
    hull_vertices = shapes.hull_vertices
    found = np.empty(64, dtype=np.int64)
    contacts = 0
    if meshes.bvh_low.shape[0] == 0:
        return 0
    for g in range(group_start.shape[0] - 1):
        radius, mu, e = group_surface(model, particle_model, g)
        for i in range(group_start[g], group_start[g + 1]):
            if inv_mass[i] == 0.0:
                continue
            # the box of the step's path: a particle that crossed a flat triangle ends outside its flat box
            px, py, pz, sx, sy, sz = y[3 * i], y[3 * i + 1], y[3 * i + 2], y0[3 * i], y0[3 * i + 1], y0[3 * i + 2]
            count, found = query(meshes.bvh_low, meshes.bvh_high, meshes.bvh_skip, meshes.bvh_first,
                                 meshes.bvh_count, meshes.bvh_item, min(px, sx) - radius, min(py, sy) - radius,
                                 min(pz, sz) - radius, max(px, sx) + radius, max(py, sy) + radius,
                                 max(pz, sz) + radius, found)
            for sweep in range(MESH_PASSES):
                px, py, pz = y[3 * i], y[3 * i + 1], y[3 * i + 2]
                deepest, best = 0.0, -1
                bx = by = bz = 0.0
                for k in range(count):
                    t = found[k]
                    depth, nx, ny, nz = _triangle_contact(meshes, hull_vertices, t, px, py, pz, y0[3 * i],
                                                          y0[3 * i + 1], y0[3 * i + 2], radius)
                    if depth > deepest:
                        deepest, best, bx, by, bz = depth, t, nx, ny, nz
                if best < 0 or (sweep > 0 and deepest <= SETTLED * radius):
                    break
                material = static_material[first_static + best]
                resolve_contact(y, y0, size, i, bx, by, bz, deepest, np.sqrt(mu * friction[material]),
                                max(e, restitution[material]), restitution_threshold, h)
                if sweep == 0:
                    contacts += 1
    return contacts
