"""Signed distance from a point to a convex shape, in the shape's own frame: the particles' query against bodies.

point_distance(kind, params, hull_vertices, x, y, z) returns (d, nx, ny, nz): d is the distance from the point to
the shape's surface, negative inside (minus the distance to the nearest surface point), and n the unit outward
normal of the surface at that nearest point, so that the nearest point is p - d n, inside or out.

Closed forms where they exist, because particles ask this once per particle and body per substep:
- box: the distance to the nearest face, or from the box when outside (exact);
- cylinder: the same in the plane of the axis and the point (radial distance and height);
- capsule: the distance to the axis segment, minus the radius;
- ellipsoid: the nearest surface point x_i = a_i^2 p_i / (t + a_i^2), where t is the root of
  F(t) = sum (a_i p_i / (t + a_i^2))^2 - 1 on (-a_min^2, inf) (F falls monotonically there), found by bisection to
  the last bit (Eberly, "Distance from a point to an ellipse, an ellipsoid, or a hyperellipsoid"). For a point
  inside on the plane of the smallest axis, where the root lies below -a_min^2, the nearest points leave that
  plane: t = -a_min^2 and the remaining coordinate follows from the surface equation.
Superellipsoids and convex hulls have no closed form: GJK/EPA (convex_distance.py's contact_distance) between the
shape and the point (an ellipsoid of zero semi-axes, whose support is its centre), to their tolerance.
"""
import numpy as np
from numba import njit

from ..math3d import JIT, sign
from ..shapes.support import BOX, CAPSULE, CYLINDER, ELLIPSOID, PARAMS
from .convex_distance import EPA, contact_distance

BISECTIONS = 160  # more than enough to end on two neighbouring doubles (the loop stops there)


@njit(**JIT)
def _box(hx, hy, hz, x, y, z):
    qx, qy, qz = abs(x) - hx, abs(y) - hy, abs(z) - hz
    if qx > 0.0 or qy > 0.0 or qz > 0.0:
        ox, oy, oz = max(qx, 0.0), max(qy, 0.0), max(qz, 0.0)
        d = np.sqrt(ox * ox + oy * oy + oz * oz)
        return d, sign(x) * ox / d, sign(y) * oy / d, sign(z) * oz / d
    if qx >= qy and qx >= qz:
        return qx, sign(x), 0.0, 0.0
    if qy >= qz:
        return qy, 0.0, sign(y), 0.0
    return qz, 0.0, 0.0, sign(z)


@njit(**JIT)
def _cylinder(radius, half_height, x, y, z):
    rho = np.sqrt(x * x + y * y)
    ux, uy = (x / rho, y / rho) if rho > 0.0 else (1.0, 0.0)
    qr, qz = rho - radius, abs(z) - half_height
    if qr > 0.0 or qz > 0.0:
        orr, oz = max(qr, 0.0), max(qz, 0.0)
        d = np.sqrt(orr * orr + oz * oz)
        return d, ux * orr / d, uy * orr / d, sign(z) * oz / d
    if qr >= qz:
        return qr, ux, uy, 0.0
    return qz, 0.0, 0.0, sign(z)


@njit(**JIT)
def _capsule(radius, half_height, x, y, z):
    dz = z - min(max(z, -half_height), half_height)
    length = np.sqrt(x * x + y * y + dz * dz)
    if length == 0.0:
        return -radius, 1.0, 0.0, 0.0
    return length - radius, x / length, y / length, dz / length


@njit(**JIT, inline="always")
def _f(t, a2x, a2y, a2z, ux, uy, uz):
    """F(t) + 1 of the module docstring, with u_i = a_i |p_i| (a term with u_i = 0 is 0, also at its pole)."""
    rx = ux / (t + a2x) if ux != 0.0 else 0.0
    ry = uy / (t + a2y) if uy != 0.0 else 0.0
    rz = uz / (t + a2z) if uz != 0.0 else 0.0
    return rx * rx + ry * ry + rz * rz


@njit(**JIT)
def ellipsoid_distance(a, b, c, x, y, z):
    """point_distance's (d, nx, ny, nz) for the ellipsoid of semi-axes (a, b, c)."""
    if a == b and b == c:  # a sphere, in closed form: a cloth draped over one asks this for every vertex
        r = np.sqrt(x * x + y * y + z * z)
        if r == 0.0:
            return -a, 0.0, 0.0, 1.0
        return r - a, x / r, y / r, z / r
    px, py, pz = abs(x), abs(y), abs(z)
    a2x, a2y, a2z = a * a, b * b, c * c
    ux, uy, uz = a * px, b * py, c * pz
    # F has poles at -a_i^2 of the axes the point does not lie across; the root lies beyond the largest of them
    lo = -np.inf
    if px > 0.0:
        lo = max(lo, -a2x)
    if py > 0.0:
        lo = max(lo, -a2y)
    if pz > 0.0:
        lo = max(lo, -a2z)
    smallest = min(a2x, min(a2y, a2z))
    if lo == -np.inf:  # the centre: the nearest points are the ends of the smallest axis
        if a2x == smallest:
            return -a, 1.0, 0.0, 0.0
        if a2y == smallest:
            return -b, 0.0, 1.0, 0.0
        return -c, 0.0, 0.0, 1.0
    hi = np.sqrt(ux * ux + uy * uy + uz * uz)  # F(hi) < 1: every term is below u_i / hi
    if lo < -smallest and _f(-smallest, a2x, a2y, a2z, ux, uy, uz) <= 1.0:
        # inside, on the plane of the smallest axis, and the root lies below -a_min^2: t = -a_min^2
        t = -smallest
        qx = a2x * px / (t + a2x) if a2x != smallest else 0.0
        qy = a2y * py / (t + a2y) if a2y != smallest else 0.0
        qz = a2z * pz / (t + a2z) if a2z != smallest else 0.0
        rest = max(0.0, 1.0 - qx * qx / a2x - qy * qy / a2y - qz * qz / a2z)
        if a2x == smallest:
            qx = a * np.sqrt(rest)
        elif a2y == smallest:
            qy = b * np.sqrt(rest)
        else:
            qz = c * np.sqrt(rest)
    else:
        lo = max(lo, -smallest)
        for _ in range(BISECTIONS):
            t = 0.5 * (lo + hi)
            if t <= lo or t >= hi:
                break
            if _f(t, a2x, a2y, a2z, ux, uy, uz) > 1.0:
                lo = t
            else:
                hi = t
        t = 0.5 * (lo + hi)
        qx, qy, qz = a2x * px / (t + a2x), a2y * py / (t + a2y), a2z * pz / (t + a2z)
    gx, gy, gz = qx / a2x, qy / a2y, qz / a2z  # the outward normal's direction at the nearest point
    g = np.sqrt(gx * gx + gy * gy + gz * gz)
    dx, dy, dz = px - qx, py - qy, pz - qz
    d = np.sqrt(dx * dx + dy * dy + dz * dz)
    if px * px / a2x + py * py / a2y + pz * pz / a2z < 1.0:
        d = -d
    return d, sign(x) * gx / g, sign(y) * gy / g, sign(z) * gz / g


@njit(**JIT)
def point_distance(kind, params, hull_vertices, x, y, z):
    """(d, nx, ny, nz) of the point (x, y, z) against the shape (kind, params) in the shape's frame (module
    docstring). ``hull_vertices``: the shared hull corners (any (V, 3) array for the other kinds)."""
    if kind == ELLIPSOID:
        return ellipsoid_distance(params[0], params[1], params[2], x, y, z)
    if kind == BOX:
        return _box(params[0], params[1], params[2], x, y, z)
    if kind == CYLINDER:
        return _cylinder(params[0], params[1], x, y, z)
    if kind == CAPSULE:
        return _capsule(params[0], params[1], x, y, z)
    kinds = np.array([kind, ELLIPSOID], dtype=np.int64)
    pair = np.zeros((2, PARAMS))
    pair[0] = params
    positions = np.zeros((2, 3))
    positions[1, 0], positions[1, 1], positions[1, 2] = x, y, z
    rotations = np.zeros((2, 3, 3))
    for k in range(3):
        rotations[0, k, k] = 1.0
        rotations[1, k, k] = 1.0
    length = np.sqrt(x * x + y * y + z * z)
    hx, hy, hz = (x / length, y / length, z / length) if length > 0.0 else (0.0, 0.0, 1.0)
    return contact_distance(kinds, pair, hull_vertices, positions, rotations, hx, hy, hz, EPA)  # a point: EPA is exact
