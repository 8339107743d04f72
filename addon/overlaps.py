"""Overlaps of bodies with each other and with static colliders, in plain numpy (no bpy, no numba).

The add-on's pre-flight check (addon/preflight.py) runs this before anything
compiles, so it must not import the solver's kernels. It uses the solver's own
definitions (quadric_solver/collision/narrowphase.py, quadric_solver/collision/driver.py):

* ellipsoid k: centre c_k, rotation R_k (columns: principal axes), semi-axes a_k,
  shape matrix M_k = R_k diag(a_k^2) R_k^T;
* signed depth of a pair (positive: overlap; negative: minus the distance),
      depth = min over unit n of  sqrt(n'M_A n) + sqrt(n'M_B n) - (c_B - c_A).n,
  its minimiser being the normal from A to B. Any n bounds the depth from
  above, so one evaluation along the centre line clears most pairs; the rest
  get Riemannian Newton on the unit sphere, all pairs at once, from the centre
  line and, for overlapping pairs (which can have several local minima), from
  the principal axes of both bodies, keeping the least;
* a plane (normal n into free space): sqrt(n'M n) - (c - p).n; a box
  container's floor and four walls are one-sided rectangles (the body's centre
  on the inner side, its deepest point over the rectangle); a tube's inner wall:
  max over the radial direction w of (c - t).w + sqrt(w'M w), minus the radius,
  for bodies whose centre is inside it and whose deepest point is within its length;
* a mesh collider's triangle, as a box wall: one-sided, the body's centre in front of it (the
  side its corners run counter-clockwise from) and its deepest point over the triangle; a body's
  depth in a mesh is its deepest in any of its triangles. Overlaps at a convex fold, where the
  deepest point along either face's normal is beyond that face, go unseen (a lower bound).

Broad phase: bounding spheres (the largest semi-axis), swept along the axis in
which the centres spread most.

Bodies of the other shapes (``Shapes``, addon/shapes.py) use the same signed
depth written with support functions, depth = min over unit n of
f(n) = h_A(n) + h_B(-n) - (c_B - c_A).n (for an ellipsoid h(n) = sqrt(n'M n)):

* against a plane or a box container's wall it is exact: h of the body along
  the wall's inward normal, its support point the deepest point; a box resting
  on a plane has depth 0;
* against a tube, the best of TUBE_SAMPLES radial directions: a lower bound of
  the depth, so what is reported is certain (a slight overlap may go unseen);
* body pairs with a member that is not an ellipsoid are reported only when
  the depth is proven beyond the tolerance: f is Lipschitz on the sphere with
  L = R_A + R_B + |c_B - c_A| (R: bounding radii), so on a spherical triangle
  of circumradius rho around a direction c, f >= f(c) - L rho. Triangles of an
  icosahedron, subdivided where that bound does not clear the tolerance,
  either all clear it (an overlap: its depth is the least f found, within
  L rho above the true one) or some f(c) is within it (no overlap to report).
  A pair still undecided after CERTIFY_LEVELS subdivisions, or with more than
  CERTIFY_CELLS triangles, is not reported: the solver's own check, when the
  simulation starts, has the last word on such borderline cases.
"""
from typing import NamedTuple

import numpy as np

from quadric_solver.mesh import mesh_topology
from .shapes import ELLIPSOID, HULL, bounding_radius, support_points, support_values
from .ticks import ALONE, drain

# Simulation(overlap_tolerance=...)'s default in the solver: initial overlaps deeper than this fraction of
# the smaller body's smallest semi-axis are refused (tests/addon/test_overlaps.py checks they agree).
OVERLAP_TOLERANCE = 0.05

NEWTON_MAX_ITERATIONS = 50
# A full Newton step shorter than this (radians) is the last one: Newton converges quadratically, so the
# normal is then within about its square, and the depth within the curvature times that squared again.
NEWTON_CONVERGED_STEP = 1e-6
NEWTON_MAX_HALVINGS = 40
TUBE_SAMPLES = 32
TUBE_SAMPLES_OTHER = 256  # radial directions tried for bodies that are not ellipsoids (a lower bound)
CERTIFY_LEVELS = 10       # subdivisions of the icosahedron's triangles for pairs with other shapes
CERTIFY_CELLS = 20000     # triangles per pair, at most
TUBE_NEWTON_ITERATIONS = 30
SEPARATE_PASSES = 200
# Candidate pairs are generated in blocks of about this many, to bound memory for large scenes.
PAIR_BLOCK = 1 << 20

STATIC_PLANE, STATIC_WALL, STATIC_TUBE = 0, 1, 2  # as in the solver's Model
STATIC_MESH = 3  # one entry per mesh collider, after the tubes (its triangles in Statics.meshes)


class Statics(NamedTuple):
    """Static colliders in the solver's layout (quadric_solver/model.py): planes, then 5 walls per box, then tubes;
    then one entry per mesh collider, whose triangles are in ``meshes`` at the same index (None elsewhere)."""
    kind: np.ndarray    # (S,) STATIC_PLANE, STATIC_WALL or STATIC_TUBE
    point: np.ndarray   # (S, 3) plane or wall point, tube centre
    normal: np.ndarray  # (S, 3) plane or wall normal into free space, tube axis
    u: np.ndarray       # (S, 3) wall in-plane axes
    v: np.ndarray
    size: np.ndarray    # (S, 2) wall half sizes along u and v; tube (radius, half length)
    owner: np.ndarray   # (S,) index of the collider each entry comes from
    meshes: tuple = ()  # (S,) Triangles of the STATIC_MESH entries, None for the others


class Triangles(NamedTuple):
    """A mesh collider's usable (not degenerate) triangles, for the overlap check."""
    corners: np.ndarray  # (T, 3, 3) world-space corners, counter-clockwise seen from the front
    normal: np.ndarray   # (T, 3) unit front normals
    lo: np.ndarray       # (T, 3) bounding boxes
    hi: np.ndarray


def mesh_triangles(vertices, triangles) -> Triangles:
    """The Triangles the solver keeps of a mesh (quadric_solver/mesh.py leaves out those of no area)."""
    vertices = np.asarray(vertices, dtype=np.float64).reshape(-1, 3)
    triangles = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
    topology = mesh_topology(vertices, triangles)
    corners = vertices[triangles[topology.usable]]
    return Triangles(corners, topology.normal[topology.usable], corners.min(axis=1), corners.max(axis=1))


def statics(planes=(), boxes=(), tubes=(), meshes=()):
    """Statics from planes (owner, point, normal), boxes (owner, centre, half extents, rotation matrix),
    tubes (owner, centre, unit axis, radius, length) and meshes (owner, vertices (V, 3), triangles (T, 3))."""
    rows = []
    for owner, point, normal in planes:
        rows.append((STATIC_PLANE, point, normal, (0, 0, 0), (0, 0, 0), (0.0, 0.0), owner))
    for owner, center, half, rotation in boxes:
        c = np.asarray(center, dtype=np.float64)
        (hx, hy, hz), r = half, np.asarray(rotation, dtype=np.float64)
        ex, ey, ez = r[:, 0], r[:, 1], r[:, 2]
        # the floor and four walls of an open-top box, as quadric_solver/model.py:_box_walls lays them out
        for point, normal, u, v, hu, hv in ((c - hz * ez, ez, ex, ey, hx, hy), (c - hx * ex, ex, ey, ez, hy, hz),
                                            (c + hx * ex, -ex, ey, ez, hy, hz), (c - hy * ey, ey, ex, ez, hx, hz),
                                            (c + hy * ey, -ey, ex, ez, hx, hz)):
            rows.append((STATIC_WALL, point, normal, u, v, (hu, hv), owner))
    for owner, center, axis, radius, length in tubes:
        rows.append((STATIC_TUBE, center, axis, (0, 0, 0), (0, 0, 0), (radius, 0.5 * length), owner))
    found = [None] * len(rows)
    for owner, vertices, triangles in meshes:
        found.append(mesh_triangles(vertices, triangles))
        rows.append((STATIC_MESH, (0, 0, 0), (0, 0, 0), (0, 0, 0), (0, 0, 0), (0.0, 0.0), owner))

    def column(k, shape, dtype=np.float64):
        return np.array([row[k] for row in rows], dtype=dtype).reshape(shape)

    s = len(rows)
    return Statics(column(0, (s,), np.int64), column(1, (s, 3)), column(2, (s, 3)), column(3, (s, 3)),
                   column(4, (s, 3)), column(5, (s, 2)), column(6, (s,), np.int64), tuple(found))


class Shapes(NamedTuple):
    """Each body's shape (addon/shapes.py): kinds (N,), parameter rows (N, 5), and per body its hull's vertices
    (V, 3) in its frame, or None."""
    kinds: np.ndarray
    params: np.ndarray
    hulls: tuple


def ellipsoids(semi_axes):
    """Shapes of ellipsoid bodies with the given semi-axes (N, 3)."""
    semi_axes = np.asarray(semi_axes, dtype=np.float64).reshape(-1, 3)
    params = np.zeros((len(semi_axes), 5))
    params[:, :3] = semi_axes
    return Shapes(np.full(len(semi_axes), ELLIPSOID, dtype=np.int64), params, (None,) * len(semi_axes))


def _all_ellipsoids(shapes):
    return shapes is None or bool(np.all(shapes.kinds == ELLIPSOID))


def bounding_radii(semi_axes, shapes=None):
    """Radius of a ball about each body's centre that holds it (broad phase)."""
    if shapes is None:
        return np.asarray(semi_axes, dtype=np.float64).reshape(-1, 3).max(axis=1)
    if _all_ellipsoids(shapes):
        return shapes.params[:, :3].max(axis=1)
    return np.array([bounding_radius(k, p, h) for k, p, h in zip(shapes.kinds, shapes.params, shapes.hulls)])


def support_world(shapes, bodies, rotation, directions):
    """Support values (P, K) and points (P, K, 3), relative to each body's centre, of bodies (P,) turned by
    rotation (P, 3, 3) along world directions (P, K, 3)."""
    local = np.einsum("pji,pkj->pki", rotation, directions)
    values = np.empty(local.shape[:2])
    points = np.empty(local.shape)
    kinds = shapes.kinds[bodies]
    for kind in np.unique(kinds):
        rows = np.flatnonzero(kinds == kind)
        if kind == HULL:
            for body in np.unique(bodies[rows]):
                same = rows[bodies[rows] == body]
                hull = np.asarray(shapes.hulls[body], dtype=np.float64)
                along = local[same] @ hull.T
                best = np.argmax(along, axis=-1)
                values[same] = np.take_along_axis(along, best[..., None], axis=-1)[..., 0]
                points[same] = hull[best]
        else:
            params = shapes.params[bodies[rows]][:, None, :]
            values[rows] = support_values(kind, params, local[rows])
            points[rows] = support_points(kind, params, local[rows])
    return values, np.einsum("pij,pkj->pki", rotation, points)


class Overlaps(NamedTuple):
    """Contacts deeper than asked: a is a body, or -1 - s for static entry s; b is a body.

    The normal points from a to b (from the collider towards the body), as in the solver.
    """
    a: np.ndarray       # (K,) int64
    b: np.ndarray       # (K,) int64
    depth: np.ndarray   # (K,)
    normal: np.ndarray  # (K, 3)


def shape_matrices(rotation, semi_axes):
    """M = R diag(a^2) R^T for stacks (N, 3, 3) and (N, 3)."""
    r = np.asarray(rotation, dtype=np.float64)
    a = np.asarray(semi_axes, dtype=np.float64)
    return np.einsum("nij,nj,nkj->nik", r, a * a, r)


def tangent_basis(n):
    """Two unit tangents completing unit vectors n (P, 3) to right-handed frames (Duff et al. 2017)."""
    nx, ny, nz = n[:, 0], n[:, 1], n[:, 2]
    sign = np.where(nz >= 0.0, 1.0, -1.0)
    a = -1.0 / (sign + nz)
    b = nx * ny * a
    t1 = np.stack([1.0 + sign * nx * nx * a, sign * b, -sign * nx], axis=1)
    t2 = np.stack([b, sign + ny * ny * a, -ny], axis=1)
    return t1, t2


def _form(m, n):
    """M n and sqrt(n'M n) for stacks."""
    mn = np.einsum("pij,pj->pi", m, n)
    return mn, np.sqrt(np.maximum(np.einsum("pi,pi->p", n, mn), 1e-300))


def _dot(x, y):
    return np.einsum("pi,pi->p", x, y)


def width_gap(ma, mb, d, n):
    """sqrt(n'M_A n) + sqrt(n'M_B n) - d.n for unit n (P, 3): an upper bound of the pairs' depths."""
    return _form(ma, n)[1] + _form(mb, n)[1] - _dot(d, n)


def minimise_width_gap(ma, mb, d, n):
    """Minimise the width gap over the unit sphere from n, for all pairs at once: (depth, normal, iterations).

    Riemannian Newton, as the solver's narrow phase does it: the gradient and Hessian in the tangent plane,
    a Levenberg shift where the Hessian is not positive definite, steps of at most 0.5 rad, halved until
    the gap does not grow. A pair stops after a full Newton step shorter than NEWTON_CONVERGED_STEP.
    """
    n = np.array(n, dtype=np.float64)
    d = np.asarray(d, dtype=np.float64)
    man, sa = _form(ma, n)
    mbn, sb = _form(mb, n)
    f = sa + sb - _dot(d, n)
    iterations = np.zeros(len(n), dtype=np.int64)
    active = np.arange(len(n))
    for _ in range(NEWTON_MAX_ITERATIONS):
        if not active.size:
            break
        iterations[active] += 1
        A, B, D, N = ma[active], mb[active], d[active], n[active]
        MAN, SA, MBN, SB, F = man[active], sa[active], mbn[active], sb[active], f[active]
        g = MAN / SA[:, None] + MBN / SB[:, None] - D
        t1, t2 = tangent_basis(N)
        g1, g2 = _dot(g, t1), _dot(g, t2)
        a1, a2 = _dot(MAN, t1) / SA, _dot(MAN, t2) / SA
        b1, b2 = _dot(MBN, t1) / SB, _dot(MBN, t2) / SB
        at1, at2 = np.einsum("pij,pj->pi", A, t1), np.einsum("pij,pj->pi", A, t2)
        bt1, bt2 = np.einsum("pij,pj->pi", B, t1), np.einsum("pij,pj->pi", B, t2)
        # tangent-plane Hessian: t_i' H t_j - f delta_ij, H = (M_A - M_A n n' M_A / s_A^2) / s_A + (same for B)
        h11 = (_dot(t1, at1) - a1 * a1) / SA + (_dot(t1, bt1) - b1 * b1) / SB - F
        h22 = (_dot(t2, at2) - a2 * a2) / SA + (_dot(t2, bt2) - b2 * b2) / SB - F
        h12 = (_dot(t1, at2) - a1 * a2) / SA + (_dot(t1, bt2) - b1 * b2) / SB
        trace = h11 + h22
        lowest = 0.5 * trace - np.sqrt(np.maximum(0.25 * (h11 - h22) ** 2 + h12 * h12, 0.0))
        shift = np.where(lowest <= 1e-9 * (np.abs(trace) + 1e-300),
                         -lowest + 1e-6 * (np.abs(h11) + np.abs(h22)) + 1e-12 * (SA + SB), 0.0)
        h11s, h22s = h11 + shift, h22 + shift
        det = h11s * h22s - h12 * h12
        s1 = -(h22s * g1 - h12 * g2) / det
        s2 = -(-h12 * g1 + h11s * g2) / det
        length = np.hypot(s1, s2)
        full = (shift == 0.0) & (length <= 0.5)
        scale = np.where(length > 0.5, 0.5 / np.maximum(length, 1e-300), 1.0)
        s1, s2 = s1 * scale, s2 * scale
        allowance = 4e-16 * (SA + SB + np.abs(D).sum(axis=1))
        # halve the steps that do not decrease the gap; every pair tries at least once
        accepted = np.zeros(len(active), dtype=bool)
        halved = np.zeros(len(active), dtype=bool)
        new_n, new_f = N.copy(), F.copy()
        new_man, new_sa, new_mbn, new_sb = MAN.copy(), SA.copy(), MBN.copy(), SB.copy()
        todo = np.arange(len(active))
        for _ in range(NEWTON_MAX_HALVINGS):
            c = N[todo] + s1[todo, None] * t1[todo] + s2[todo, None] * t2[todo]
            c /= np.linalg.norm(c, axis=1)[:, None]
            qa, ra = _form(A[todo], c)
            qb, rb = _form(B[todo], c)
            fc = ra + rb - _dot(D[todo], c)
            ok = fc <= F[todo] + allowance[todo]
            k = todo[ok]
            accepted[k] = True
            new_n[k], new_f[k] = c[ok], fc[ok]
            new_man[k], new_sa[k], new_mbn[k], new_sb[k] = qa[ok], ra[ok], qb[ok], rb[ok]
            todo = todo[~ok]
            if not todo.size:
                break
            halved[todo] = True
            s1[todo] *= 0.5
            s2[todo] *= 0.5
        n[active], f[active] = new_n, new_f
        man[active], sa[active], mbn[active], sb[active] = new_man, new_sa, new_mbn, new_sb
        converged = full & ~halved & (length < NEWTON_CONVERGED_STEP)
        active = active[accepted & ~converged]
    return f, n, iterations


def _cold_start_depths(ma, mb, d, rot_a, rot_b):
    """Depth and normal from the centre line, and also from both bodies' principal axes where they overlap."""
    dist = np.linalg.norm(d, axis=1)
    start = np.where(dist[:, None] > 0.0, d / np.maximum(dist, 1e-300)[:, None], np.array([0.0, 0.0, 1.0]))
    depth, normal, _ = minimise_width_gap(ma, mb, d, start)
    # a negative minimum (apart) is the global one; overlaps can have several local minima
    deep = np.flatnonzero(depth >= 0.0)
    if deep.size:
        axes = np.concatenate([rot_a[deep], rot_b[deep]], axis=2).transpose(0, 2, 1)  # (K, 6, 3)
        flip = np.einsum("kai,ki->ka", axes, d[deep]) < 0.0
        axes = np.where(flip[..., None], -axes, axes).reshape(-1, 3)
        rep = np.repeat(deep, 6)
        f, n, _ = minimise_width_gap(ma[rep], mb[rep], d[rep], axes)
        f, n = f.reshape(-1, 6), n.reshape(-1, 6, 3)
        best = np.argmin(f, axis=1)
        f_best = f[np.arange(len(deep)), best]
        better = f_best < depth[deep]
        depth[deep[better]] = f_best[better]
        normal[deep[better]] = n[np.arange(len(deep)), best][better]
    return depth, normal


def ellipsoid_pair_depths(centers, rotation, semi_axes, a, b):
    """Signed depth and normal (A to B) of the body pairs (a, b): exact up to the Newton convergence."""
    rot = np.asarray(rotation, dtype=np.float64)
    m = shape_matrices(rot, semi_axes)
    d = np.asarray(centers, dtype=np.float64)[b] - np.asarray(centers, dtype=np.float64)[a]
    return _cold_start_depths(m[a], m[b], d, rot[a], rot[b])


def _icosahedron_triangles():
    """The 80 triangles (80, 3, 3) of an icosahedron whose faces are split in four, on the unit sphere."""
    t = (1.0 + 5.0 ** 0.5) / 2.0
    v = np.array([[-1, t, 0], [1, t, 0], [-1, -t, 0], [1, -t, 0], [0, -1, t], [0, 1, t], [0, -1, -t], [0, 1, -t],
                  [t, 0, -1], [t, 0, 1], [-t, 0, -1], [-t, 0, 1]], dtype=np.float64)
    v /= np.linalg.norm(v, axis=1)[:, None]
    f = [(0, 11, 5), (0, 5, 1), (0, 1, 7), (0, 7, 10), (0, 10, 11), (1, 5, 9), (5, 11, 4), (11, 10, 2), (10, 7, 6),
         (7, 1, 8), (3, 9, 4), (3, 4, 2), (3, 2, 6), (3, 6, 8), (3, 8, 9), (4, 9, 5), (2, 4, 11), (6, 2, 10),
         (8, 6, 7), (9, 8, 1)]
    return _subdivide(v[np.array(f)])


def _subdivide(cells):
    """Each spherical triangle (C, 3, 3) split in four at its edges' midpoints (on the sphere)."""
    v0, v1, v2 = cells[:, 0], cells[:, 1], cells[:, 2]
    m01, m12, m20 = (x / np.linalg.norm(x, axis=1)[:, None] for x in (v0 + v1, v1 + v2, v2 + v0))
    return np.concatenate([np.stack(c, axis=1) for c in ((v0, m01, m20), (v1, m12, m01), (v2, m20, m12),
                                                         (m01, m12, m20))])


def _gaps(centers, rotation, shapes, a, b, n):
    """f(n) = h_A(n) + h_B(-n) - (c_B - c_A).n for pairs (a, b) (P,) and directions n (P, K, 3): (P, K)."""
    ha, _ = support_world(shapes, a, rotation[a], n)
    hb, _ = support_world(shapes, b, rotation[b], -n)
    return ha + hb - np.einsum("pi,pki->pk", centers[b] - centers[a], n)


def certified_pair_depths(centers, rotation, shapes, a, b, threshold):
    """Depth and normal (A to B) of pairs of any shapes, and whether it is proven beyond ``threshold``.

    Returns (depth (P,): the least f found, an upper bound; normal (P, 3); status (P,): 1 proven deeper than
    the threshold, 0 proven within it, -1 undecided). See the module docstring.
    """
    centers = np.asarray(centers, dtype=np.float64)
    rotation = np.asarray(rotation, dtype=np.float64)
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    count = len(a)
    d = centers[b] - centers[a]
    dist = np.linalg.norm(d, axis=1)
    # first the centre line and both bodies' axes (towards B): resting and clear pairs end here
    line = np.where(dist[:, None] > 0.0, d / np.maximum(dist, 1e-300)[:, None], np.array([0.0, 0.0, 1.0]))
    axes = np.concatenate([rotation[a], rotation[b]], axis=2).transpose(0, 2, 1)  # (P, 6, 3)
    axes = np.where((np.einsum("pki,pi->pk", axes, d) < 0.0)[..., None], -axes, axes)
    probes = np.concatenate([line[:, None], axes], axis=1)
    f = _gaps(centers, rotation, shapes, a, b, probes)
    best = np.argmin(f, axis=1)
    depth = f[np.arange(count), best]
    normal = probes[np.arange(count), best]
    status = np.where(depth <= threshold, 0, -1)
    radius = bounding_radii(None, shapes)
    lipschitz = radius[a] + radius[b] + dist
    base = _icosahedron_triangles()
    pending = np.flatnonzero(status == -1)
    cells = np.tile(base, (len(pending), 1, 1))
    owner = np.repeat(pending, len(base))
    for level in range(CERTIFY_LEVELS + 1):
        if not owner.size:
            break
        c = cells.sum(axis=1)
        c /= np.linalg.norm(c, axis=1)[:, None]
        rho = np.arccos(np.clip(np.einsum("ci,cki->ck", c, cells).min(axis=1), -1.0, 1.0))
        fc = np.empty(len(c))
        for start in range(0, len(c), PAIR_BLOCK // 16):
            part = slice(start, start + PAIR_BLOCK // 16)
            fc[part] = _gaps(centers, rotation, shapes, a[owner[part]], b[owner[part]], c[part, None])[:, 0]
        order = np.lexsort((fc, owner))
        first = order[np.concatenate([[True], owner[order][1:] != owner[order][:-1]])]
        better = fc[first] < depth[owner[first]]
        depth[owner[first[better]]] = fc[first[better]]
        normal[owner[first[better]]] = c[first[better]]
        status[owner[first][depth[owner[first]] <= threshold[owner[first]]]] = 0
        keep = (status[owner] == -1) & (fc - lipschitz[owner] * rho <= threshold[owner])
        alive = np.unique(owner[status[owner] == -1])
        status[np.setdiff1d(alive, owner[keep])] = 1  # every triangle clears the threshold: proven
        cells, owner = cells[keep], owner[keep]
        if level == CERTIFY_LEVELS:
            break
        crowded = np.flatnonzero(np.bincount(owner, minlength=count) * 4 > CERTIFY_CELLS)
        if crowded.size:
            drop = np.isin(owner, crowded)
            cells, owner = cells[~drop], owner[~drop]
        cells, owner = _subdivide(cells), np.tile(owner, 4)
    proven = np.flatnonzero(status == 1)
    if proven.size:
        depth[proven], normal[proven] = _descend(centers, rotation, shapes, a[proven], b[proven], depth[proven],
                                                 normal[proven])
    return depth, normal, status


def _descend(centers, rotation, shapes, a, b, f, n, first_step=0.05, last_step=1e-7, passes=200):
    """Pattern search for the least f on the sphere from n, for all pairs at once: try eight steps around
    each normal in its tangent plane, move to the best that lowers f, else halve the step."""
    t1, t2 = tangent_basis(n)
    step = np.full(len(n), first_step)
    angles = 2.0 * np.pi * np.arange(8) / 8.0
    live = np.arange(len(n))
    for _ in range(passes):
        if not live.size:
            break
        around = (np.cos(angles)[None, :, None] * t1[live, None] + np.sin(angles)[None, :, None] * t2[live, None])
        trial = n[live, None] + step[live, None, None] * around
        trial /= np.linalg.norm(trial, axis=2)[..., None]
        ft = _gaps(centers, rotation, shapes, a[live], b[live], trial)
        best = np.argmin(ft, axis=1)
        lower = ft[np.arange(live.size), best] < f[live] - 1e-12 * np.abs(f[live])
        moved = live[lower]
        n[moved] = trial[np.flatnonzero(lower), best[lower]]
        f[moved] = ft[np.flatnonzero(lower), best[lower]]
        t1[moved], t2[moved] = tangent_basis(n[moved])
        step[live[~lower]] *= 0.5
        live = live[step[live] >= last_step]
    return f, n


def candidate_pairs(centers, radii, pad=0.0):
    """Pairs (a < b) whose bounding spheres (radii + pad / 2 each) touch: sort and sweep along one axis."""
    c = np.asarray(centers, dtype=np.float64)
    r = np.asarray(radii, dtype=np.float64) + 0.5 * pad
    n = len(c)
    if n < 2:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    axis = int(np.argmax(np.ptp(c, axis=0)))
    lo, hi = c[:, axis] - r, c[:, axis] + r
    order = np.argsort(lo, kind="stable")
    lo_sorted, hi_sorted = lo[order], hi[order]
    # sorted body k may touch sorted bodies k+1 .. end[k]-1 (their intervals start before k's ends)
    end = np.searchsorted(lo_sorted, hi_sorted, side="right")
    counts = np.maximum(end - np.arange(n) - 1, 0)
    cumulative = np.cumsum(counts)
    found_a, found_b = [], []
    first = 0
    while first < n:
        # a block of sorted bodies whose candidates number about PAIR_BLOCK
        base = cumulative[first - 1] if first else 0
        last = max(int(np.searchsorted(cumulative, base + PAIR_BLOCK, side="right")), first + 1)
        last = min(last, n)
        k = np.repeat(np.arange(first, last), counts[first:last])
        if k.size:
            starts = np.repeat(cumulative[first:last] - counts[first:last], counts[first:last])
            j = k + 1 + (np.arange(k.size) + base - starts)
            i1, i2 = order[k], order[j]
            gap = c[i1] - c[i2]
            keep = np.einsum("pi,pi->p", gap, gap) <= (r[i1] + r[i2]) ** 2
            found_a.append(np.minimum(i1[keep], i2[keep]))
            found_b.append(np.maximum(i1[keep], i2[keep]))
        first = last
    if not found_a:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    a, b = np.concatenate(found_a), np.concatenate(found_b)
    order = np.lexsort((b, a))
    return a[order], b[order]


def pair_overlaps(centers, rotation, semi_axes, a, b, tolerance=OVERLAP_TOLERANCE, shapes=None):
    """Of the body pairs (a, b), those overlapping by more than ``tolerance`` times the smaller body's
    smallest semi-axis (its smallest half-width, for the other shapes); pairs with a member that is not an
    ellipsoid only where that is proven (certified_pair_depths)."""
    centers = np.asarray(centers, dtype=np.float64)
    semi_axes = np.asarray(semi_axes, dtype=np.float64)
    rot = np.asarray(rotation, dtype=np.float64)
    smallest = semi_axes.min(axis=1)
    threshold = tolerance * np.minimum(smallest[a], smallest[b])
    if not _all_ellipsoids(shapes):
        both = (shapes.kinds[a] == ELLIPSOID) & (shapes.kinds[b] == ELLIPSOID)
        first = pair_overlaps(centers, rot, semi_axes, a[both], b[both], tolerance)
        oa, ob = a[~both], b[~both]
        depth, normal, status = certified_pair_depths(centers, rot, shapes, oa, ob, threshold[~both])
        proven = status == 1
        return _joined(first, Overlaps(oa[proven], ob[proven], depth[proven], normal[proven]))
    ma, mb = shape_matrices(rot[a], semi_axes[a]), shape_matrices(rot[b], semi_axes[b])
    d = centers[b] - centers[a]
    # the width gap along the centre line bounds the depth from above: most touching pairs end here
    dist = np.linalg.norm(d, axis=1)
    line = np.where(dist[:, None] > 0.0, d / np.maximum(dist, 1e-300)[:, None], np.array([0.0, 0.0, 1.0]))
    near = np.flatnonzero(width_gap(ma, mb, d, line) > threshold)
    a, b, threshold = a[near], b[near], threshold[near]
    depth, normal = _cold_start_depths(ma[near], mb[near], d[near], rot[a], rot[b])
    deep = depth > threshold
    return Overlaps(a[deep], b[deep], depth[deep], normal[deep])


def body_overlaps(centers, rotation, semi_axes, tolerance=OVERLAP_TOLERANCE, shapes=None):
    """Body pairs overlapping by more than ``tolerance`` times the smaller body's smallest semi-axis."""
    a, b = candidate_pairs(centers, bounding_radii(semi_axes, shapes))
    return pair_overlaps(centers, rotation, semi_axes, a, b, tolerance, shapes)


def _tube_reach(r1, r2, qa, qb, qc, phi):
    """g(phi) = (c - t).w + sqrt(w'M w) with w = cos(phi) e1 + sin(phi) e2, and its first two derivatives.

    r1, r2: the centre's offset from the tube centre along e1, e2; qa, qb, qc: e1'M e1, e2'M e2, e1'M e2.
    """
    cos, sin = np.cos(phi), np.sin(phi)
    cos2, sin2 = np.cos(2.0 * phi), np.sin(2.0 * phi)
    q = np.maximum(0.5 * (qa + qb) + 0.5 * (qa - qb) * cos2 + qc * sin2, 1e-300)
    dq = -(qa - qb) * sin2 + 2.0 * qc * cos2
    ddq = -2.0 * (qa - qb) * cos2 - 4.0 * qc * sin2
    s = np.sqrt(q)
    g = r1 * cos + r2 * sin + s
    dg = -r1 * sin + r2 * cos + dq / (2.0 * s)
    ddg = -r1 * cos - r2 * sin + ddq / (2.0 * s) - dq * dq / (4.0 * s * q)
    return g, dg, ddg


def tube_depths(centers, shapes, tube_center, axis, radius):
    """Depth of ellipsoids against a tube's inner wall and the radial direction w at its deepest point.

    max over phi of g (see _tube_reach) minus the radius: the best of TUBE_SAMPLES angles, then Newton on
    phi (a step that does not climb is halved). Returns (depth (K,), w (K, 3), deepest point (K, 3)).
    """
    c = np.asarray(centers, dtype=np.float64)
    u = np.asarray(axis, dtype=np.float64)[None]
    e1, e2 = tangent_basis(u)
    e1, e2 = e1[0], e2[0]
    rel = c - np.asarray(tube_center, dtype=np.float64)
    r1, r2 = rel @ e1, rel @ e2
    qa = np.einsum("i,kij,j->k", e1, shapes, e1)
    qb = np.einsum("i,kij,j->k", e2, shapes, e2)
    qc = np.einsum("i,kij,j->k", e1, shapes, e2)
    grid = np.linspace(0.0, 2.0 * np.pi, TUBE_SAMPLES, endpoint=False)
    values = _tube_reach(r1[:, None], r2[:, None], qa[:, None], qb[:, None], qc[:, None], grid[None])[0]
    pick = np.argmax(values, axis=1)
    phi = grid[pick]
    best = values[np.arange(len(c)), pick]
    spacing = 2.0 * np.pi / TUBE_SAMPLES
    active = np.arange(len(c))
    for _ in range(TUBE_NEWTON_ITERATIONS):
        if not active.size:
            break
        args = r1[active], r2[active], qa[active], qb[active], qc[active]
        g, dg, ddg = _tube_reach(*args, phi[active])
        step = np.where(ddg < 0.0, -dg / np.minimum(ddg, -1e-300), dg / (np.abs(g) + 1e-300))
        step = np.clip(step, -spacing, spacing)
        trial = _tube_reach(*args, phi[active] + step)[0]
        for _ in range(30):  # halve the steps that do not climb
            worse = np.flatnonzero(trial < best[active])
            if not worse.size:
                break
            step[worse] *= 0.5
            trial[worse] = _tube_reach(*(x[worse] for x in args), phi[active[worse]] + step[worse])[0]
        climbed = trial >= best[active]
        phi[active[climbed]] += step[climbed]
        best[active[climbed]] = trial[climbed]
        active = active[climbed & (np.abs(step) >= 1e-13)]
    w = np.cos(phi)[:, None] * e1 + np.sin(phi)[:, None] * e2
    mw, sw = _form(shapes, w)
    return best - radius, w, c + mw / sw[:, None]


def _reach_along(forms, shapes, bodies, rotation, direction):
    """Support values (K,) and points (K, 3) relative to the centres of bodies (K,) along world directions
    (K, 3): the ellipsoids' from their shape matrices (forms), the other shapes' from addon/shapes.py."""
    mn, sn = _form(forms, direction)
    points = mn / sn[:, None]
    if not _all_ellipsoids(shapes):
        other = np.flatnonzero(shapes.kinds[bodies] != ELLIPSOID)
        if other.size:
            value, point = support_world(shapes, bodies[other], rotation[other], direction[other, None])
            sn[other], points[other] = value[:, 0], point[:, 0]
    return sn, points


def static_overlaps(centers, rotation, semi_axes, colliders, movable, tolerance=OVERLAP_TOLERANCE, shapes=None):
    """Movable bodies deeper than ``tolerance`` times their smallest semi-axis (half-width) in a static collider.

    Planes, walls and tubes follow the solver's rules (quadric_solver/collision/driver.py:_static_contact); the
    normal points from the collider towards the body (the direction that frees it). Against planes and walls
    every shape's depth is exact; in a tube, bodies that are not ellipsoids get a lower bound; in a mesh, the
    deepest of its triangles (the module docstring).
    """
    centers = np.asarray(centers, dtype=np.float64)
    semi_axes = np.asarray(semi_axes, dtype=np.float64)
    bodies = np.flatnonzero(np.asarray(movable, dtype=bool))
    out_a, out_b, out_depth, out_normal = [], [], [], []
    if not bodies.size or not len(colliders.kind):
        return Overlaps(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), np.zeros((0, 3)))
    rot = np.asarray(rotation, dtype=np.float64)[bodies]
    forms = shape_matrices(rot, semi_axes[bodies])
    c = centers[bodies]
    threshold = tolerance * semi_axes[bodies].min(axis=1)
    bounding = bounding_radii(semi_axes, shapes)[bodies]
    ellipsoid = np.ones(len(bodies), dtype=bool) if _all_ellipsoids(shapes) else shapes.kinds[bodies] == ELLIPSOID
    for s in range(len(colliders.kind)):
        kind, point, normal = colliders.kind[s], colliders.point[s], colliders.normal[s]
        rel = c - point
        if kind == STATIC_TUBE:
            radius, half_length = colliders.size[s]
            along = rel @ normal
            radial = np.sqrt(np.maximum(np.einsum("ki,ki->k", rel, rel) - along * along, 0.0))
            near = np.flatnonzero((radial < radius) & (radial + bounding > radius)
                                  & (np.abs(along) <= half_length + bounding))
            depth, w, deepest = np.empty(near.size), np.empty((near.size, 3)), np.empty((near.size, 3))
            ell = ellipsoid[near]
            depth[ell], w[ell], deepest[ell] = tube_depths(c[near[ell]], forms[near[ell]], point, normal, radius)
            if not ell.all():
                depth[~ell], w[~ell], deepest[~ell] = _tube_depths_other(
                    c, shapes, bodies, rot, near[~ell], point, normal, radius)
            within = np.abs((deepest - point) @ normal) <= half_length
            hit = within & (depth > threshold[near])
            k, depth, push = near[hit], depth[hit], -w[hit]
        elif kind == STATIC_MESH:
            k, depth, push = _mesh_depths(c, forms, shapes, bodies, rot, bounding, threshold, colliders.meshes[s])
        else:
            sn, reach = _reach_along(forms, shapes, bodies, rot, np.broadcast_to(-normal, c.shape).copy())
            depth = sn - rel @ normal
            hit = depth > threshold
            if kind == STATIC_WALL:
                # one-sided rectangle: the centre on the inner side, the deepest point over the rectangle
                deepest = c + reach - point
                hit &= (rel @ normal > 0.0) & (np.abs(deepest @ colliders.u[s]) <= colliders.size[s, 0]) \
                    & (np.abs(deepest @ colliders.v[s]) <= colliders.size[s, 1])
            k = np.flatnonzero(hit)
            depth, push = depth[k], np.broadcast_to(normal, (k.size, 3))
        out_a.append(np.full(k.size, -1 - s, dtype=np.int64))
        out_b.append(bodies[k])
        out_depth.append(depth)
        out_normal.append(push)
    return Overlaps(np.concatenate(out_a), np.concatenate(out_b), np.concatenate(out_depth),
                    np.concatenate(out_normal).reshape(-1, 3))


def _interval_pairs(lo_a, hi_a, lo_b, hi_b, block=PAIR_BLOCK):
    """Pairs (i, j) of intervals [lo_a, hi_a] (A,) and [lo_b, hi_b] (B,) that overlap, in blocks of about
    ``block``: those where b's start lies in a (sorted b starts), then those where a's start lies in b after
    b's start (sorted a starts). Large and small intervals mixed cost no more than their overlaps."""
    order_a, order_b = np.argsort(lo_a, kind="stable"), np.argsort(lo_b, kind="stable")
    sorted_a, sorted_b = lo_a[order_a], lo_b[order_b]
    for rows_of, starts, ends, order in (
            (None, np.searchsorted(sorted_b, lo_a, side="left"), np.searchsorted(sorted_b, hi_a, side="right"),
             order_b),
            (True, np.searchsorted(sorted_a, lo_b, side="right"), np.searchsorted(sorted_a, hi_b, side="right"),
             order_a)):
        count = np.maximum(ends - starts, 0)
        cumulative = np.cumsum(count)
        first, n = 0, len(count)
        while first < n and cumulative[-1]:
            base = int(cumulative[first - 1]) if first else 0
            last = min(max(int(np.searchsorted(cumulative, base + block, side="right")), first + 1), n)
            rows = np.repeat(np.arange(first, last), count[first:last])
            offsets = np.arange(rows.size) - np.repeat(cumulative[first:last] - count[first:last] - base,
                                                       count[first:last])
            other = order[starts[rows] + offsets]
            yield (other, rows) if rows_of else (rows, other)
            first = last


def _mesh_depths(c, forms, shapes, bodies, rot, bounding, threshold, mesh):
    """Bodies (indices into c) deeper than their threshold in a mesh collider's triangles: (k, depth, normal).

    A triangle counts for a body whose centre is in front of it and whose deepest point along its normal lies
    over it (as for a box wall); the body's depth is its deepest in any triangle, the normal that triangle's.
    Only triangles whose boxes meet the body's bounding box are measured (a sweep along the mesh's longest
    side), in blocks, so a large mesh under many bodies costs about what their overlapping boxes do.
    """
    none = (np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros((0, 3)))
    if mesh is None or not len(mesh.normal) or not len(c):
        return none
    lo, hi = c - bounding[:, None], c + bounding[:, None]
    mesh_lo, mesh_hi = mesh.lo.min(axis=0), mesh.hi.max(axis=0)
    near = np.flatnonzero(np.all((lo <= mesh_hi) & (hi >= mesh_lo), axis=1))
    if not near.size:
        return none
    axis = int(np.argmax(mesh_hi - mesh_lo))
    size = float(np.max(mesh_hi - mesh_lo))
    best = np.full(len(c), -np.inf)
    best_normal = np.zeros((len(c), 3))
    for i, t in _interval_pairs(lo[near, axis], hi[near, axis], mesh.lo[:, axis], mesh.hi[:, axis],
                                PAIR_BLOCK // 4):
        i = near[i]
        keep = np.all((lo[i] <= mesh.hi[t]) & (hi[i] >= mesh.lo[t]), axis=1)
        i, t = i[keep], t[keep]
        normal, corners = mesh.normal[t], mesh.corners[t]
        # the centre in front, and near enough that the body may reach behind by more than its threshold
        height = np.einsum("ki,ki->k", c[i] - corners[:, 0], normal)
        keep = (height > 0.0) & (height < bounding[i] - threshold[i])
        i, t, normal, corners, height = i[keep], t[keep], normal[keep], corners[keep], height[keep]
        if not i.size:
            continue
        reach, point = _reach_along(forms[i], shapes, bodies[i], rot[i], -normal)
        depth = reach - height
        deepest = c[i] + point
        # over the triangle: on the inner side of its three edges (to round-off of the mesh's size)
        inside = depth > threshold[i]
        for j in range(3):
            edge = corners[:, (j + 1) % 3] - corners[:, j]
            side = np.einsum("ki,ki->k", np.cross(edge, deepest - corners[:, j]), normal)
            inside &= side >= -1e-9 * size * np.linalg.norm(edge, axis=1)
        i, depth, normal = i[inside], depth[inside], normal[inside]
        if not i.size:
            continue
        order = np.lexsort((depth, i))  # per body, its deepest last
        last = order[np.r_[i[order][1:] != i[order][:-1], True]]
        deeper = depth[last] > best[i[last]]
        best[i[last[deeper]]] = depth[last[deeper]]
        best_normal[i[last[deeper]]] = normal[last[deeper]]
    k = np.flatnonzero(np.isfinite(best))
    return k, best[k], best_normal[k]


def _tube_depths_other(c, shapes, bodies, rot, near, tube_center, axis, radius):
    """Depth (a lower bound: the best of TUBE_SAMPLES_OTHER radial directions w), w and the deepest point of
    bodies of any shape against a tube's inner wall."""
    e1, e2 = tangent_basis(np.asarray(axis, dtype=np.float64)[None])
    phi = np.linspace(0.0, 2.0 * np.pi, TUBE_SAMPLES_OTHER, endpoint=False)
    w = np.cos(phi)[:, None] * e1 + np.sin(phi)[:, None] * e2  # (S, 3)
    ws = np.broadcast_to(w, (near.size,) + w.shape)
    value, point = support_world(shapes, bodies[near], rot[near], ws)
    g = (c[near] - tube_center) @ w.T + value
    best = np.argmax(g, axis=1)
    rows = np.arange(near.size)
    return g[rows, best] - radius, w[best], c[near] + point[rows, best]


def separate(centers, rotation, semi_axes, movable, colliders, tolerance=OVERLAP_TOLERANCE, gap=1e-3,
             iterations=SEPARATE_PASSES, shapes=None):
    """Translations (N, 3) that move movable bodies out of every overlap deeper than ``tolerance``; see
    separate_steps."""
    return drain(separate_steps(centers, rotation, semi_axes, movable, colliders, tolerance, gap, iterations, shapes))


def separate_steps(centers, rotation, semi_axes, movable, colliders, tolerance=OVERLAP_TOLERANCE, gap=1e-3,
                   iterations=SEPARATE_PASSES, shapes=None):
    """separate cut into steps for timer ticks (addon/ticks.py): a pass a step, the last check one of its own.

    Each pass finds the overlaps the check would report and pushes each apart along its normal by its depth
    plus ``gap`` times the smaller smallest semi-axis: a body against a collider or a fixed body moves the
    whole way, two movable bodies half each; a body in several overlaps adds up its pushes. Bodies no
    overlap touches never move. Only pairs with a body that moved in the last pass are measured again; the
    candidate pairs are found with a skin and found again once a body moved further than half of it.
    Returns (translations, the overlaps still left after the last pass).
    """
    centers = np.array(centers, dtype=np.float64)
    semi_axes = np.asarray(semi_axes, dtype=np.float64)
    movable = np.asarray(movable, dtype=bool)
    smallest = semi_axes.min(axis=1)
    radii = bounding_radii(semi_axes, shapes)
    skin = 0.5 * float(np.mean(radii)) if len(radii) else 0.0
    moved = np.zeros_like(centers)
    since_pairs = np.full(len(centers), np.inf)  # distance moved since the pairs were found
    changed = np.ones(len(centers), dtype=bool)
    for k in range(iterations):
        now = centers + moved
        if since_pairs.max(initial=0.0) > 0.5 * skin:
            yield ALONE  # the candidate pairs found again and all of them measured: a tick of its own
            all_a, all_b = candidate_pairs(now, radii, skin)
            since_pairs[:] = 0.0
        mask = changed[all_a] | changed[all_b]
        pairs = pair_overlaps(now, rotation, semi_axes, all_a[mask], all_b[mask], tolerance, shapes)
        walls = static_overlaps(now, rotation, semi_axes, colliders, movable & changed, tolerance, shapes)
        push = np.zeros_like(centers)
        # body pairs: split between the movable ones
        ma, mb = movable[pairs.a], movable[pairs.b]
        share = np.where(ma & mb, 0.5, 1.0)
        amount = (pairs.depth + gap * np.minimum(smallest[pairs.a], smallest[pairs.b])) * share
        np.add.at(push, pairs.a, -(amount * ma)[:, None] * pairs.normal)
        np.add.at(push, pairs.b, (amount * mb)[:, None] * pairs.normal)
        np.add.at(push, walls.b, (walls.depth + gap * smallest[walls.b])[:, None] * walls.normal)
        changed = np.any(push != 0.0, axis=1)
        if not changed.any():
            break
        moved += push
        since_pairs += np.linalg.norm(push, axis=1)
        yield "separating the overlapping bodies (passes)", k + 1, iterations
    yield ALONE  # every pair measured again: 20 to 25 ms for 2,000 bodies
    now = centers + moved
    return moved, _joined(body_overlaps(now, rotation, semi_axes, tolerance, shapes),
                          static_overlaps(now, rotation, semi_axes, colliders, movable, tolerance, shapes))


def _joined(first, second):
    return Overlaps(*(np.concatenate([x, y]) for x, y in zip(first, second)))
