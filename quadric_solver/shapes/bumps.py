"""The surface of a bumpy ellipsoid: an ellipsoid's radius times a sum of bumps and dents.

Along a unit direction u (shape frame) the surface lies at radius r(u) = r_E(u) s(u), where
r_E(u) = (u_x^2/a^2 + u_y^2/b^2 + u_z^2/c^2)^(-1/2) is the ellipsoid's and
s(u) = 1 + sum_k h_k t_k^3, t_k = max(0, (u.d_k - cos w_k) / (1 - cos w_k)):
bump k lifts (h_k > 0) or sinks (h_k < 0) the surface by the fraction h_k at its apex d_k, and
fades to nothing at the angle w_k from it. The cube makes the profile twice differentiable at
the rim, so Newton's method on contact points meets no jump in curvature there. The shape is
star-shaped about its origin while s > 0, which shapes/values.py checks.

One source serves two callers: numpy (u as arrays: the mass quadrature, on Blender's main
thread without numba) and compiled contact code (u as floats, wrapped with njit in
collision/bumpy_contact.py). Rows of ``bumps``: (d_x, d_y, d_z, h, cos w).
"""
import numpy as np

BUMP_COLUMNS = 5


def bumpy_radius(a, b, c, bumps, first, count, ux, uy, uz):
    """r(u) and its gradient in R^3 (r extended off the sphere by the same formula), for unit u."""
    ia, ib, ic = 1.0 / (a * a), 1.0 / (b * b), 1.0 / (c * c)
    base = 1.0 / np.sqrt(ux * ux * ia + uy * uy * ib + uz * uz * ic)
    cube = -base * base * base  # d r_E / du = -r_E^3 diag(1/a^2, 1/b^2, 1/c^2) u
    gbx, gby, gbz = cube * ux * ia, cube * uy * ib, cube * uz * ic
    s = 1.0 + 0.0 * ux  # an array where u is
    gsx, gsy, gsz = 0.0 * ux, 0.0 * ux, 0.0 * ux
    for k in range(first, first + count):
        dx, dy, dz, height, cos_w = bumps[k, 0], bumps[k, 1], bumps[k, 2], bumps[k, 3], bumps[k, 4]
        scale = 1.0 / (1.0 - cos_w)
        t = (ux * dx + uy * dy + uz * dz - cos_w) * scale
        t = t * (t > 0.0)
        s = s + height * t * t * t
        slope = 3.0 * height * t * t * scale
        gsx, gsy, gsz = gsx + slope * dx, gsy + slope * dy, gsz + slope * dz
    return base * s, gbx * s + base * gsx, gby * s + base * gsy, gbz * s + base * gsz


def sphere_directions(count) -> np.ndarray:
    """``count`` unit vectors spread evenly over the sphere (a Fibonacci lattice), (count, 3)."""
    k = np.arange(count) + 0.5
    z = 1.0 - 2.0 * k / count
    ring = np.sqrt(1.0 - z * z)
    longitude = np.pi * (3.0 - np.sqrt(5.0)) * k
    return np.stack([ring * np.cos(longitude), ring * np.sin(longitude), z], axis=1)
