"""Smooth noise for the wind's gusts and the turbulence field: value noise and the curl of a noise potential.

Value noise: random values in [-1, 1] on the integer lattice, hashed from the lattice point and the seed (no
tables, so any seed and any point give the same value on every machine), blended with the quintic fade
6t^5 - 15t^4 + 10t^3, which makes the noise and its gradient continuous. The gradient is analytic.

Curl noise (Bridson et al. 2007): the curl of a vector potential whose three components are value noises with
three seeds. A curl has no divergence, so the field stirs particles without gathering them in sinks.
"""
import numpy as np
from numba import njit

from ..math3d import JIT

MASK32 = 0xFFFFFFFF
# divides the curl so that its mean length over space is about 1 (its mean over 10^6 random points and three
# seeds is 1.687)
CURL_SCALE = 1.69


@njit(**JIT, inline="always")
def _lattice(ix, iy, iz, seed):
    """A value in [-1, 1] for the lattice point (ix, iy, iz) and the seed: a 32-bit integer hash."""
    h = (ix * 0x8DA6B343) ^ (iy * 0xD8163841) ^ (iz * 0xCB1AB31F) ^ (seed * 0x165667B1)
    h &= MASK32
    h ^= h >> 16
    h = (h * 0x7FEB352D) & MASK32
    h ^= h >> 15
    h = (h * 0x846CA68B) & MASK32
    h ^= h >> 16
    return h / 2147483647.5 - 1.0


@njit(**JIT, inline="always")
def value_noise(px, py, pz, seed):
    """(n, dn/dx, dn/dy, dn/dz) of the value noise at p: n in [-1, 1], smooth, with its exact gradient."""
    fx, fy, fz = np.floor(px), np.floor(py), np.floor(pz)
    ix, iy, iz = np.int64(fx), np.int64(fy), np.int64(fz)
    tx, ty, tz = px - fx, py - fy, pz - fz
    ux = tx * tx * tx * (tx * (6.0 * tx - 15.0) + 10.0)
    uy = ty * ty * ty * (ty * (6.0 * ty - 15.0) + 10.0)
    uz = tz * tz * tz * (tz * (6.0 * tz - 15.0) + 10.0)
    dux = 30.0 * tx * tx * (tx - 1.0) * (tx - 1.0)
    duy = 30.0 * ty * ty * (ty - 1.0) * (ty - 1.0)
    duz = 30.0 * tz * tz * (tz - 1.0) * (tz - 1.0)
    c000 = _lattice(ix, iy, iz, seed)
    c100 = _lattice(ix + 1, iy, iz, seed)
    c010 = _lattice(ix, iy + 1, iz, seed)
    c110 = _lattice(ix + 1, iy + 1, iz, seed)
    c001 = _lattice(ix, iy, iz + 1, seed)
    c101 = _lattice(ix + 1, iy, iz + 1, seed)
    c011 = _lattice(ix, iy + 1, iz + 1, seed)
    c111 = _lattice(ix + 1, iy + 1, iz + 1, seed)
    # the trilinear blend written as a polynomial in (ux, uy, uz), so that its gradient is plain
    k1 = c100 - c000
    k2 = c010 - c000
    k3 = c001 - c000
    k4 = c000 - c100 - c010 + c110
    k5 = c000 - c010 - c001 + c011
    k6 = c000 - c100 - c001 + c101
    k7 = -c000 + c100 + c010 - c110 + c001 - c101 - c011 + c111
    n = c000 + k1 * ux + k2 * uy + k3 * uz + k4 * ux * uy + k5 * uy * uz + k6 * uz * ux + k7 * ux * uy * uz
    return (n, dux * (k1 + k4 * uy + k6 * uz + k7 * uy * uz),
            duy * (k2 + k5 * uz + k4 * ux + k7 * uz * ux),
            duz * (k3 + k6 * ux + k5 * uy + k7 * ux * uy))


@njit(**JIT, inline="always")
def curl_noise(px, py, pz, seed):
    """The curl of (N_0, N_1, N_2)(p), three value noises of seeds 3 seed + k, over CURL_SCALE."""
    _, ax, ay, az = value_noise(px, py, pz, 3 * seed)
    _, bx, by, bz = value_noise(px, py, pz, 3 * seed + 1)
    _, cx, cy, cz = value_noise(px, py, pz, 3 * seed + 2)
    # psi = (a, b, c): curl = (dc/dy - db/dz, da/dz - dc/dx, db/dx - da/dy)
    return (cy - bz) / CURL_SCALE, (az - cx) / CURL_SCALE, (bx - ay) / CURL_SCALE
