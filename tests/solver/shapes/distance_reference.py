"""An independent numpy reference for the signed distance of two posed convex shapes.

Written from the definitions, sharing no code with the solver's kernels:

* support values h(n) = max over the shape of n.x, in closed form per family (the superellipsoid's
  by Hoelder's inequality with the dual exponents, checked against sampled surfaces in
  test_support.py), moved to the world frame by h(n) = n.c + h_local(R^T n);
* signed distance s = max over unit n of g(n) = -h_A(n) - h_B(-n): the distance when apart, minus
  the penetration depth when overlapping. Any n gives a lower bound g(n) <= s. The maximum is
  searched on a Fibonacci sphere, then by a pattern search (8 tangent directions turned at random
  each step; a failure halves the step, down to MIN_STEP, a success doubles it) from the best
  distinct grid directions. Where a shape has flat faces or straight edges g has creases along
  great circles (n.axis = 0 for boxes, cylinders, capsules and, nearly, superellipsoids; one per
  hull edge) and kinks where they cross; a pattern search stalls on a crease, so the reference
  also walks every crease by a 1-D search from its point nearest the best direction so far, tries
  every crossing and every isolated kink, and ends with a pattern search from the best of all;
* polytopes (boxes, hulls) exactly: when no axis separates them the depth is the smallest overlap
  over the face normals and edge-edge cross products (the directions of the Minkowski difference's
  faces, SAT); when apart, the distance is the smallest vertex-triangle or edge-edge distance.

Where a search converges it resolves n to MIN_STEP, so it misses the maximum by at most g's
Lipschitz constant (|x| <= the pair's reach: centre distance plus both radii) times MIN_STEP.
Whatever it misses only lowers it: a solver answer above the reference is not an error of the
solver. On box and hull pairs it agrees with the exact polytope distance to 1e-15.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from quadric_solver.shapes import Box, Capsule, ConvexHull, Cylinder, Ellipsoid, Superellipsoid

FAMILIES = ("ellipsoid", "superellipsoid", "box", "cylinder", "capsule", "hull")
GRID = 2000  # Fibonacci directions for the global search
STARTS = 3  # distinct grid maxima refined by pattern search
MIN_STEP = 1e-10  # radians: where the pattern search stops
RESOLUTION = 1e-15  # a relative gain below this is rounding, not progress (else noise keeps a search alive)
MAX_STEPS = 400  # a search still climbing then (a slow ridge walk) stops: the reference only loses by it


# ------------------------------------------------------------------------------ shapes and poses
def random_shape(rng, family):
    if family == "ellipsoid":
        return Ellipsoid(rng.uniform(0.2, 1.0, 3))
    if family == "superellipsoid":
        return Superellipsoid(rng.uniform(0.2, 1.0, 3), rng.uniform(0.1, 2.0, 2))
    if family == "box":
        return Box(rng.uniform(0.2, 1.0, 3))
    if family == "cylinder":
        return Cylinder(rng.uniform(0.2, 0.8), rng.uniform(0.2, 1.0))
    if family == "capsule":
        return Capsule(rng.uniform(0.2, 0.6), rng.uniform(0.1, 0.8))
    points = rng.normal(size=(int(rng.integers(8, 17)), 3)) * rng.uniform(0.2, 0.8, 3)
    return ConvexHull(points + rng.uniform(-0.2, 0.2, 3))


def random_pairs(rng, family_a, family_b, count):
    """count pairs: A near the origin, B along a random direction at 0.4 to 1.6 times the sum of their
    equivalent radii (of the ball of the same volume), so that about half overlap; random
    orientations. Returns (shapes_a, poses_a, shapes_b, poses_b)."""
    shapes_a = [random_shape(rng, family_a) for _ in range(count)]
    shapes_b = [random_shape(rng, family_b) for _ in range(count)]
    direction = unit(rng.normal(size=(count, 3)))
    radius = [(shape.mass_properties(1.0).volume * 3 / (4 * math.pi)) ** (1 / 3) for shape in shapes_a + shapes_b]
    scale = np.add(radius[:count], radius[count:])
    positions_a = rng.normal(size=(count, 3)) * 0.1
    positions_b = positions_a + direction * (scale * rng.uniform(0.4, 1.6, count))[:, None]
    orientations_a = np.array([random_quaternion(rng) for _ in range(count)])
    orientations_b = np.array([random_quaternion(rng) for _ in range(count)])
    return shapes_a, (positions_a, orientations_a), shapes_b, (positions_b, orientations_b)


def random_quaternion(rng):
    q = rng.normal(size=4)
    return q / np.linalg.norm(q)


def rotation_matrix(q):
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def family_of(shape):
    return {Ellipsoid: "ellipsoid", Superellipsoid: "superellipsoid", Box: "box", Cylinder: "cylinder",
            Capsule: "capsule", ConvexHull: "hull"}[type(shape)]


def reach(shape):
    """Radius of a ball about the frame origin that holds the shape (corners of a box bound the rest)."""
    family = family_of(shape)
    if family in ("ellipsoid",):
        return max(shape.semi_axes)
    if family in ("superellipsoid", "box"):
        return float(np.linalg.norm(shape.semi_axes if family == "superellipsoid" else shape.half_extents))
    if family == "cylinder":
        return math.hypot(shape.radius, shape.half_height)
    if family == "capsule":
        return shape.radius + shape.half_height
    return float(np.max(np.linalg.norm(shape.vertices, axis=1)))


# ------------------------------------------------------------------------------ support values
def _dual_norm(x, y, e):
    """The (2/(2-e))-norm of (|x|, |y|), the dual of the 2/e norm; e = 2 gives the max norm.
    e broadcasts against x and y."""
    x, y = np.abs(x), np.abs(y)
    top = np.maximum(x, y)
    p = 2.0 / (2.0 - np.where(e >= 2.0, 1.0, e))  # (the max norm is chosen below for e = 2)
    safe = np.where(top > 0, top, 1.0)
    norm = top * ((x / safe) ** p + (y / safe) ** p) ** (1.0 / p)
    return np.where(e >= 2.0, top, norm)


class Posed:
    """P shapes of one family, each at a position with a rotation matrix: support values, creases and
    surface residuals, batched over the leading axis."""

    def __init__(self, shapes, positions, orientations):
        self.shapes = list(shapes)
        self.family = family_of(self.shapes[0])
        assert all(family_of(shape) == self.family for shape in self.shapes)
        self.positions = np.asarray(positions, dtype=float).reshape(-1, 3)
        self.rotations = np.stack([rotation_matrix(q) for q in np.asarray(orientations).reshape(-1, 4)])
        family = self.family
        if family == "ellipsoid":
            self.axes = np.array([shape.semi_axes for shape in self.shapes])
        elif family == "superellipsoid":
            self.axes = np.array([shape.semi_axes for shape in self.shapes])
            self.exponents = np.array([shape.exponents for shape in self.shapes])
        elif family == "box":
            self.axes = np.array([shape.half_extents for shape in self.shapes])
        elif family in ("cylinder", "capsule"):
            self.radius = np.array([shape.radius for shape in self.shapes])
            self.half_height = np.array([shape.half_height for shape in self.shapes])
        else:  # padded with copies of the first vertex and edge, which change no maximum
            size = max(len(shape.vertices) for shape in self.shapes)
            self.vertices = np.stack([np.concatenate([s.vertices, np.repeat(s.vertices[:1], size - len(s.vertices), 0)])
                                      for s in self.shapes])
            edges = [hull_edges(shape) for shape in self.shapes]
            size = max(len(e) for e in edges)
            self.edges = np.stack([np.concatenate([e, np.repeat(e[:1], size - len(e), 0)]) for e in edges])

    def __len__(self):
        return len(self.shapes)

    def support_values(self, n):
        """max over each shape of n.x, for world directions n (P, M, 3): (P, M)."""
        local = np.einsum("pmi,pij->pmj", n, self.rotations)  # R^T n, row by row
        x, y, z = local[..., 0], local[..., 1], local[..., 2]
        family = self.family
        if family == "ellipsoid":
            a, b, c = (self.axes[:, k, None] for k in range(3))
            value = np.sqrt((a * x) ** 2 + (b * y) ** 2 + (c * z) ** 2)
        elif family == "superellipsoid":
            a, b, c = (self.axes[:, k, None] for k in range(3))
            e1, e2 = self.exponents[:, 0, None], self.exponents[:, 1, None]
            value = _dual_norm(_dual_norm(a * x, b * y, e2), c * z, e1)
        elif family == "box":
            value = np.einsum("pmk,pk->pm", np.abs(local), self.axes)
        elif family == "cylinder":
            value = self.radius[:, None] * np.sqrt(x * x + y * y) + self.half_height[:, None] * np.abs(z)
        elif family == "capsule":
            value = self.radius[:, None] * np.sqrt(x * x + y * y + z * z) + self.half_height[:, None] * np.abs(z)
        else:
            value = np.max(np.einsum("pmk,pvk->pmv", local, self.vertices), axis=2)
        return value + np.einsum("pmk,pk->pm", n, self.positions)

    def crease_axes(self):
        """World normals (P, C, 3) of the great circles where g may crease (see the module docstring)."""
        if self.family in ("box", "superellipsoid"):
            return np.swapaxes(self.rotations, 1, 2).copy()
        if self.family in ("cylinder", "capsule"):
            return self.rotations[:, None, :, 2].copy()
        if self.family == "hull":
            return np.einsum("pek,pjk->pej", self.edges, self.rotations)
        return np.zeros((len(self), 0, 3))

    def kink_points(self):
        """Isolated kinks (P, J, 3): a cylinder's axis both ways (the apex of its rims' cones)."""
        if self.family == "cylinder":
            return np.stack([self.rotations[:, :, 2], -self.rotations[:, :, 2]], axis=1)
        return np.zeros((len(self), 0, 3))

    def surface_residual(self, points):
        """A relative measure (P,) of how far each shape's world point (P, 3) is off its surface."""
        x = np.einsum("pk,pkj->pj", points - self.positions, self.rotations)
        if self.family == "ellipsoid":
            return np.linalg.norm(x / self.axes, axis=1) - 1.0
        if self.family == "superellipsoid":
            e1, e2 = self.exponents[:, 0], self.exponents[:, 1]
            u, v, w = np.abs(x / self.axes).T
            # the implicit function to the power e1/2 is homogeneous of degree 1 (a radial scale)
            return ((u ** (2 / e2) + v ** (2 / e2)) ** (e2 / e1) + w ** (2 / e1)) ** (e1 / 2) - 1.0
        if self.family == "box":
            return np.max(np.abs(x) / self.axes, axis=1) - 1.0
        if self.family == "cylinder":
            return np.maximum(np.hypot(x[:, 0], x[:, 1]) / self.radius, np.abs(x[:, 2]) / self.half_height) - 1.0
        if self.family == "capsule":
            axial = np.clip(x[:, 2], -self.half_height, self.half_height)
            return np.linalg.norm(x - np.c_[0 * axial, 0 * axial, axial], axis=1) / self.radius - 1.0
        residual = np.empty(len(self))
        for p, shape in enumerate(self.shapes):
            normals, offsets = hull_planes(shape)
            residual[p] = np.max(normals @ x[p] - offsets) / reach(shape)
        return residual

    def world_vertices(self, p):
        shape = self.shapes[p]
        vertices = shape.vertices if self.family == "hull" else box_corners(shape.half_extents)
        return vertices @ self.rotations[p].T + self.positions[p]

    def world_faces(self, p):
        return self.shapes[p].faces if self.family == "hull" else BOX_FACES


def box_corners(half):
    return np.array(list(itertools.product((-1.0, 1.0), repeat=3))) * half


# the 12 outward triangles of box_corners' ordering (index = 4 x_bit + 2 y_bit + z_bit)
BOX_FACES = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1], [2, 3, 7], [2, 7, 6],
                      [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]])


def hull_planes(hull):
    p0, p1, p2 = (hull.vertices[hull.faces[:, k]] for k in range(3))
    normals = np.cross(p1 - p0, p2 - p0)
    normals /= np.linalg.norm(normals, axis=1)[:, None]
    return normals, np.einsum("ij,ij->i", normals, p0)


def unique_edges(faces):
    edges = np.sort(np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]]), axis=1)
    return np.unique(edges, axis=0)


def hull_edges(hull):
    """Unit directions of a hull's edges."""
    edges = unique_edges(hull.faces)
    d = hull.vertices[edges[:, 1]] - hull.vertices[edges[:, 0]]
    return d / np.linalg.norm(d, axis=1)[:, None]


# ------------------------------------------------------------------------------ the search
def gaps(a: Posed, b: Posed, n):
    """g(n) = -h_A(n) - h_B(-n) for unit world directions n (P, M, 3): (P, M)."""
    return -a.support_values(n) - b.support_values(-n)


def fibonacci_sphere(count):
    i = np.arange(count) + 0.5
    z = 1 - 2 * i / count
    r = np.sqrt(1 - z * z)
    phi = math.pi * (1 + math.sqrt(5)) * i
    return np.c_[r * np.cos(phi), r * np.sin(phi), z]


def tangent_frames(n):
    helper = np.where(np.abs(n[..., :1]) < 0.6, [1.0, 0.0, 0.0], [0.0, 1.0, 0.0])
    t1 = np.cross(n, helper)
    t1 /= np.linalg.norm(t1, axis=-1, keepdims=True)
    return t1, np.cross(n, t1)


def unit(v):
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def pattern_search(function, n, step, rng):
    """Maximise function over the sphere from each start n (P, K, 3): returns values (P, K) and n."""
    n = unit(n)
    value = function(n)
    first = float(step)
    step = np.full(value.shape, first)
    angles = np.arange(8) * (math.pi / 4)
    for _ in range(MAX_STEPS):
        if not np.any(step > MIN_STEP):
            break
        t1, t2 = tangent_frames(n)
        turned = angles + rng.uniform(0, math.pi / 4, size=value.shape + (1,))
        offsets = np.cos(turned)[..., None] * t1[..., None, :] + np.sin(turned)[..., None] * t2[..., None, :]
        trial = unit(n[..., None, :] + step[..., None, None] * offsets)  # (P, K, 8, 3)
        values = function(trial.reshape(len(n), -1, 3)).reshape(trial.shape[:-1])
        best = np.argmax(values, axis=-1)
        best_value = np.take_along_axis(values, best[..., None], -1)[..., 0]
        active = step > MIN_STEP
        move = (best_value > value + RESOLUTION * np.abs(value)) & active
        n = np.where(move[..., None], np.take_along_axis(trial, best[..., None, None], 2)[..., 0, :], n)
        value = np.where(move, best_value, value)
        # a success doubles the step (up to the first), so a walk along a ridge does not crawl
        step = np.where(move, np.minimum(2.0 * step, first), np.where(active, 0.5 * step, step))
    return value, n


def crease_search(function, axes, n, rng):
    """Maximise function along the great circles n.axis = 0 (axes (P, C, 3)) by a 1-D pattern search
    from the point of each circle nearest to n (P, 3): returns the best value (P,) and direction."""
    u = unit(n[:, None, :] - np.einsum("pck,pk->pc", axes, n)[..., None] * axes)
    u = np.where(np.isfinite(u), u, tangent_frames(axes)[0])  # n along the axis: any point of the circle
    w = np.cross(axes, u)
    angle = np.zeros(axes.shape[:2])
    value = function(u)
    step = np.full(angle.shape, 0.05)
    for _ in range(MAX_STEPS):
        if not np.any(step > MIN_STEP):
            break
        trials = angle[..., None] + step[..., None] * np.array([-1.0, 1.0])
        points = np.cos(trials)[..., None] * u[..., None, :] + np.sin(trials)[..., None] * w[..., None, :]
        tried = function(points.reshape(len(n), -1, 3)).reshape(trials.shape)
        best = np.argmax(tried, axis=-1)
        best_value = np.take_along_axis(tried, best[..., None], -1)[..., 0]
        move = (best_value > value + RESOLUTION * np.abs(value)) & (step > MIN_STEP)
        angle = np.where(move, np.take_along_axis(trials, best[..., None], -1)[..., 0], angle)
        value = np.where(move, best_value, value)
        step = np.where(move, np.minimum(2.0 * step, 0.5), np.where(step > MIN_STEP, 0.5 * step, step))
    k = np.argmax(value, axis=1)
    pick = np.arange(len(n))
    return value[pick, k], np.cos(angle[pick, k])[:, None] * u[pick, k] + np.sin(angle[pick, k])[:, None] * w[pick, k]


def signed_distance(a: Posed, b: Posed, seed=0):
    """(s (P,), n (P, 3)): the reference's best gap for each pair and its normal from A to B."""
    rng = np.random.default_rng(seed)

    def function(n):
        return gaps(a, b, n)

    grid = fibonacci_sphere(GRID)
    values = function(np.broadcast_to(grid, (len(a), GRID, 3)))
    spacing = math.sqrt(4 * math.pi / GRID)
    starts = np.empty((len(a), STARTS, 3))
    for p in range(len(a)):  # the best grid directions, at least three spacings apart
        chosen = []
        for k in np.argsort(-values[p]):
            if all(grid[k] @ grid[j] < math.cos(3 * spacing) for j in chosen):
                chosen.append(k)
                if len(chosen) == STARTS:
                    break
        starts[p] = grid[chosen]
    value, n = pattern_search(function, starts, spacing, rng)
    k = np.argmax(value, axis=1)
    best_value, best_n = value[np.arange(len(a)), k], n[np.arange(len(a)), k]
    candidates = [(best_value, best_n)]
    axes = np.concatenate([a.crease_axes(), b.crease_axes()], axis=1)
    if axes.shape[1]:
        candidates.append(crease_search(function, axes, best_n, rng))
    points = [a.kink_points(), b.kink_points()]
    if axes.shape[1] > 1:
        i, j = np.triu_indices(axes.shape[1], 1)
        crossings = np.cross(axes[:, i], axes[:, j])
        crossings /= np.maximum(np.linalg.norm(crossings, axis=2), 1e-300)[..., None]
        points += [crossings, -crossings]
    points = np.concatenate(points, axis=1)
    if points.shape[1]:
        values = function(points)
        values[np.linalg.norm(points, axis=2) < 0.5] = -np.inf  # parallel axes cross nowhere
        k = np.argmax(values, axis=1)
        candidates.append((values[np.arange(len(a)), k], points[np.arange(len(a)), k]))
    values = np.stack([c[0] for c in candidates], axis=1)
    k = np.argmax(values, axis=1)
    best_value = values[np.arange(len(a)), k]
    best_n = np.stack([c[1] for c in candidates], axis=1)[np.arange(len(a)), k]
    # a last pattern search from the best: a smooth maximum next to a crease or a kink
    value, n = pattern_search(function, best_n[:, None, :].copy(), 1e-3, rng)
    better = value[:, 0] > best_value
    return np.where(better, value[:, 0], best_value), np.where(better[:, None], n[:, 0], best_n)


# ------------------------------------------------------------------------------ polytopes, exactly
def _point_segment(p, s0, s1):
    d = s1 - s0
    t = np.clip(np.einsum("...k,...k->...", p - s0, d) / np.einsum("...k,...k->...", d, d), 0.0, 1.0)
    return np.linalg.norm(p - (s0 + t[..., None] * d), axis=-1)


def _point_triangle(p, a, b, c):
    """Distance from points p to triangles (a, b, c), broadcasting: the plane where the foot falls
    inside, else the nearest edge."""
    normal = np.cross(b - a, c - a)
    normal /= np.linalg.norm(normal, axis=-1, keepdims=True)
    height = np.einsum("...k,...k->...", p - a, normal)
    foot = p - height[..., None] * normal
    inside = np.ones(height.shape, dtype=bool)
    for u, v in ((a, b), (b, c), (c, a)):
        inside &= np.einsum("...k,...k->...", np.cross(v - u, foot - u), normal) >= 0
    edges = np.minimum(np.minimum(_point_segment(p, a, b), _point_segment(p, b, c)), _point_segment(p, c, a))
    return np.where(inside, np.abs(height), edges)


def _segment_segment(p1, q1, p2, q2):
    """Distance between segments (Ericson, Real-Time Collision Detection 5.1.9; no zero lengths)."""
    d1, d2, r = q1 - p1, q2 - p2, p1 - p2
    a, e = np.einsum("...k,...k->...", d1, d1), np.einsum("...k,...k->...", d2, d2)
    f, c = np.einsum("...k,...k->...", d2, r), np.einsum("...k,...k->...", d1, r)
    b = np.einsum("...k,...k->...", d1, d2)
    denom = a * e - b * b
    s = np.where(denom > 1e-14 * a * e, np.clip((b * f - c * e) / np.where(denom > 0, denom, 1.0), 0.0, 1.0), 0.0)
    t = (b * s + f) / e
    s = np.where(t < 0, np.clip(-c / a, 0.0, 1.0), np.where(t > 1, np.clip((b - c) / a, 0.0, 1.0), s))
    t = np.clip(t, 0.0, 1.0)
    return np.linalg.norm(p1 + s[..., None] * d1 - (p2 + t[..., None] * d2), axis=-1)


def polytope_signed_distance(a: Posed, b: Posed, p: int):
    """Exact signed distance of pair p of boxes or hulls: SAT depth when no axis separates them, the
    nearest vertex-triangle or edge-edge pair otherwise."""
    va, vb = a.world_vertices(p), b.world_vertices(p)
    fa, fb = a.world_faces(p), b.world_faces(p)
    ea, eb = unique_edges(fa), unique_edges(fb)
    axes = []
    for vertices, faces in ((va, fa), (vb, fb)):
        normals = np.cross(vertices[faces[:, 1]] - vertices[faces[:, 0]], vertices[faces[:, 2]] - vertices[faces[:, 0]])
        axes.append(normals / np.linalg.norm(normals, axis=1)[:, None])
    da = va[ea[:, 1]] - va[ea[:, 0]]
    db = vb[eb[:, 1]] - vb[eb[:, 0]]
    crosses = np.cross(da[:, None], db[None]).reshape(-1, 3)
    lengths = np.linalg.norm(crosses, axis=1)
    keep = lengths > 1e-9 * np.max(lengths)
    axes.append(crosses[keep] / lengths[keep, None])
    axes = np.concatenate(axes)
    axes = np.concatenate([axes, -axes])
    gap = -np.max(axes @ va.T, axis=1) - np.max(-axes @ vb.T, axis=1)
    best = int(np.argmax(gap))
    if gap[best] <= 0.0:
        return gap[best]
    return min(
        np.min(_point_triangle(va[:, None], vb[fb[:, 0]][None], vb[fb[:, 1]][None], vb[fb[:, 2]][None])),
        np.min(_point_triangle(vb[:, None], va[fa[:, 0]][None], va[fa[:, 1]][None], va[fa[:, 2]][None])),
        np.min(_segment_segment(va[ea[:, 0]][:, None], va[ea[:, 1]][:, None], vb[eb[:, 0]][None], vb[eb[:, 1]][None])))
