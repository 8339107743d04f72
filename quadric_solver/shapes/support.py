"""Support mappings of the convex shapes, in closed form, as compiled kernels.

The support point of a shape in direction d is its farthest point along d, argmax over the
shape of d.x; its support value h(d) = d.support(d). Compiled code sees a shape as a kind id and
a row of PARAMS floats (layout below); hull vertices live in one shared (V, 3) array and a hull's
row holds its first row there and its vertex count. Directions need not be unit; a zero
direction gives the shape's centre (the origin of its frame; for hulls, their first vertex).

Superellipsoid (|x/a|^(2/e2) + |y/b|^(2/e2))^(e2/e1) + |z/c|^(2/e1) <= 1: with u = x/a, v = y/b,
w = z/c and D = (a dx, b dy, c dz), the set is ||(||(u, v)||_p, w)||_q <= 1 for the norms of
exponent p = 2/e2 and q = 2/e1. Hoelder's inequality maximises D.(u, v, w) in two steps, each
with the dual exponent (p* = 2/(2-e2), q* = 2/(2-e1)):
    sigma = ||(D1, D2)||_p*,  h(d) = ||(sigma, D3)||_q*,
reached at rho = (sigma/h)^(q*-1), w = sign(D3) (|D3|/h)^(q*-1) and
(u, v) = rho (sign(D_i) (|D_i|/sigma)^(p*-1)). Exponent 2 is the 1-norm, whose dual is the max
norm: the support is then the largest component (the midpoint of an edge on a tie). Ratios are
taken to the largest component first, so large dual exponents (e near 2) neither overflow nor
divide zero by zero.
"""
import numpy as np
from numba import njit

from ..math3d import JIT, sign

from .kinds import BOX, CAPSULE, CYLINDER, ELLIPSOID, HULL, KIND_NAMES, PARAMS, SUPERELLIPSOID  # noqa: F401


@njit(**JIT, inline="always")
def _dual_pair(x, y, e):
    """Hoelder's maximiser of (x, y).(s, t) over the unit ball of the 2/e norm, for x, y >= 0.

    Returns (the dual norm of (x, y), s, t).
    """
    top = max(x, y)
    if top <= 0.0:
        return 0.0, 0.0, 0.0
    if e >= 2.0:  # 1-norm ball: the dual is the max norm, reached at a vertex (an edge's midpoint on a tie)
        wx, wy = (1.0 if x >= y else 0.0), (1.0 if y >= x else 0.0)
        return top, wx / (wx + wy), wy / (wx + wy)
    # with the larger of the two scaled to 1, two powers do: r^(p-1) and s^(-(p-1)/p) for s = 1 + r^p
    # (the norm is s^(1/p) = s * s^(-(p-1)/p)); supports are most of the narrow phase's time on superellipsoids
    dual = 2.0 / (2.0 - e)
    power = dual - 1.0
    r = min(x, y) / top
    rise = r ** power
    total = 1.0 + rise * r
    shrink = total ** (-power / dual)
    if x >= y:
        return top * total * shrink, shrink, rise * shrink
    return top * total * shrink, rise * shrink, shrink


# the smallest ratio of a component to its pair's norm at which _dual_pair_curvature takes the curvature: towards
# a rounded face's normal the support function's curvature grows without bound (the face is flat to high order)
FLAT = 1e-7


@njit(**JIT, inline="always")
def _dual_pair_curvature(x, y, norm, s, t, e):
    """Hessian (xx, xy, yy) at (x, y) >= 0 of the dual norm whose value and gradient (s, t) _dual_pair returned.

    With u = x / norm, v = y / norm and p the dual exponent, it is (p - 1) / norm times
    (u^(p-2) v^p, -(u v)^(p-1), v^(p-2) u^p), from s = u^(p-1) and t = v^(p-1) without another power
    while u and v are at least FLAT.
    """
    if norm <= 0.0 or e >= 2.0:  # the max norm is piecewise linear
        return 0.0, 0.0, 0.0
    p = 2.0 / (2.0 - e)
    c = (p - 1.0) / norm
    u, v = x / norm, y / norm
    su = s / u if u >= FLAT else FLAT ** (p - 2.0)
    tv = t / v if v >= FLAT else FLAT ** (p - 2.0)
    return c * su * t * v, -c * s * t, c * tv * s * u


@njit(**JIT, inline="always")
def smooth_kind(kind):
    """Kinds with one support point per direction and a differentiable support function (support_curvature)."""
    return kind == ELLIPSOID or kind == SUPERELLIPSOID


@njit(**JIT)
def support_xyz(kind, params, hull_vertices, dx, dy, dz):
    """Support point (x, y, z) of a shape in its own frame along the local direction (dx, dy, dz)."""
    if kind == ELLIPSOID:
        ax, ay, az = params[0] * params[0] * dx, params[1] * params[1] * dy, params[2] * params[2] * dz
        norm = np.sqrt(ax * dx + ay * dy + az * dz)
        if norm <= 0.0:
            return 0.0, 0.0, 0.0
        return ax / norm, ay / norm, az / norm
    if kind == SUPERELLIPSOID:
        a, b, c, e1, e2 = params[0], params[1], params[2], params[3], params[4]
        sigma, u, v = _dual_pair(abs(a * dx), abs(b * dy), e2)
        _, rho, w = _dual_pair(sigma, abs(c * dz), e1)
        return sign(dx) * a * rho * u, sign(dy) * b * rho * v, sign(dz) * c * w
    if kind == BOX:
        return sign(dx) * params[0], sign(dy) * params[1], sign(dz) * params[2]
    if kind == CYLINDER or kind == CAPSULE:
        radius, half_height = params[0], params[1]
        across = np.sqrt(dx * dx + dy * dy) if kind == CYLINDER else np.sqrt(dx * dx + dy * dy + dz * dz)
        scale = radius / across if across > 0.0 else 0.0
        z = sign(dz) * half_height + (scale * dz if kind == CAPSULE else 0.0)
        return scale * dx, scale * dy, z
    # HULL: scan the vertices
    first, count = int(params[0]), int(params[1])
    best, best_value = first, -np.inf
    for k in range(first, first + count):
        value = hull_vertices[k, 0] * dx + hull_vertices[k, 1] * dy + hull_vertices[k, 2] * dz
        if value > best_value:
            best, best_value = k, value
    return hull_vertices[best, 0], hull_vertices[best, 1], hull_vertices[best, 2]


@njit(**JIT)
def support_curvature(kind, params, dx, dy, dz):
    """Support point and the Hessian of the support function h at the local direction d, for a smooth kind.

    Returns (x, y, z, hxx, hxy, hxz, hyy, hyz, hzz): the Hessian is the derivative of the support point
    with respect to d, whose quadratic form on the tangents of d holds the surface's radii of curvature
    there (Newton's model in normal_refinement.py). Other kinds give a zero Hessian and the origin.
    """
    if kind == ELLIPSOID:
        aa, bb, cc = params[0] * params[0], params[1] * params[1], params[2] * params[2]
        ax, ay, az = aa * dx, bb * dy, cc * dz
        h = np.sqrt(ax * dx + ay * dy + az * dz)
        if h <= 0.0:
            return 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
        # h = |diag(a) d|: its Hessian is (diag(a^2) - s s^T) / h at the support point s
        x, y, z = ax / h, ay / h, az / h
        return (x, y, z, (aa - x * x) / h, -x * y / h, -x * z / h, (bb - y * y) / h, -y * z / h,
                (cc - z * z) / h)
    if kind == SUPERELLIPSOID:
        a, b, c, e1, e2 = params[0], params[1], params[2], params[3], params[4]
        big_x, big_y, big_z = abs(a * dx), abs(b * dy), abs(c * dz)
        sigma, u, v = _dual_pair(big_x, big_y, e2)
        h, rho, w = _dual_pair(sigma, big_z, e1)
        nxx, nxy, nyy = _dual_pair_curvature(big_x, big_y, sigma, u, v, e2)
        qss, qsz, qzz = _dual_pair_curvature(sigma, big_z, h, rho, w, e1)
        # h = N_1(N_2(X, Y), Z) with X = |a dx|, ...: the chain rule, then back to d through the signs and scales
        sx, sy, sz = sign(dx) * a, sign(dy) * b, sign(dz) * c
        return (sx * rho * u, sy * rho * v, sz * w,
                sx * sx * (qss * u * u + rho * nxx), sx * sy * (qss * u * v + rho * nxy), sx * sz * qsz * u,
                sy * sy * (qss * v * v + rho * nyy), sy * sz * qsz * v, sz * sz * qzz)
    return 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0


@njit(**JIT)
def support(kind, params, hull_vertices, local_direction):
    """support_xyz with the direction as an array of 3."""
    return support_xyz(kind, params, hull_vertices, local_direction[0], local_direction[1], local_direction[2])


@njit(**JIT)
def bounding_radius(kind, params, hull_vertices):
    """Radius of a ball about the shape's frame origin that holds the shape."""
    if kind == ELLIPSOID:
        return max(params[0], max(params[1], params[2]))
    if kind == SUPERELLIPSOID or kind == BOX:  # a superellipsoid lies in its box
        return np.sqrt(params[0] ** 2 + params[1] ** 2 + params[2] ** 2)
    if kind == CYLINDER:
        return np.sqrt(params[0] ** 2 + params[1] ** 2)
    if kind == CAPSULE:
        return params[0] + params[1]
    first, count = int(params[0]), int(params[1])
    largest = 0.0
    for k in range(first, first + count):
        largest = max(largest, hull_vertices[k, 0] ** 2 + hull_vertices[k, 1] ** 2 + hull_vertices[k, 2] ** 2)
    return np.sqrt(largest)
