"""Quaternions (w, x, y, z) on arrays (..., 4), in numpy only: set-up code of the solver and the add-on.

No numba here: the add-on imports this before it has told numba where to cache
(addon/runtime.py), and importing the solver package itself loads no kernels.
The compiled kernels have scalar versions in math3d.py.
"""
import numpy as np


def mul(p, q):
    """Hamilton product p*q for arrays (..., 4)."""
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    pw, px, py, pz = np.moveaxis(p, -1, 0)
    qw, qx, qy, qz = np.moveaxis(q, -1, 0)
    return np.stack([
        pw * qw - px * qx - py * qy - pz * qz,
        pw * qx + px * qw + py * qz - pz * qy,
        pw * qy - px * qz + py * qw + pz * qx,
        pw * qz + px * qy - py * qx + pz * qw,
    ], axis=-1)


def conj(q):
    q = np.array(q, dtype=np.float64)
    q[..., 1:] *= -1.0
    return q


def rotate(q, v):
    """Rotate vectors v (..., 3) by unit quaternions q (..., 4)."""
    q = np.asarray(q, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    w = q[..., :1]
    u = q[..., 1:]
    t = 2.0 * np.cross(u, v)
    return v + w * t + np.cross(u, t)


def to_matrix(q):
    q = np.asarray(q, dtype=np.float64)
    w, x, y, z = np.moveaxis(q / np.linalg.norm(q, axis=-1, keepdims=True), -1, 0)
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
        np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
    ], -2)


def from_matrix(m):
    """Unit quaternion (w >= 0) from a proper rotation matrix (3, 3)."""
    m = np.asarray(m, dtype=np.float64)
    tr = m[0, 0] + m[1, 1] + m[2, 2]
    if tr > 0.0:
        s = 2.0 * np.sqrt(tr + 1.0)
        q = [0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s]
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = 2.0 * np.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2])
        q = [(m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s]
    elif m[1, 1] > m[2, 2]:
        s = 2.0 * np.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2])
        q = [(m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s]
    else:
        s = 2.0 * np.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1])
        q = [(m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s]
    q = np.array(q)
    q /= np.linalg.norm(q)
    return q if q[0] >= 0.0 else -q


def make_continuous(q, axis=0):
    """Flip signs along `axis` so consecutive quaternions lie in the same hemisphere (clean interpolation)."""
    q = np.array(q, dtype=np.float64)
    q = np.moveaxis(q, axis, 0)
    dots = np.einsum("i...k,i...k->i...", q[1:], q[:-1])
    flips = np.cumprod(np.where(dots < 0.0, -1.0, 1.0), axis=0)
    q[1:] *= flips[..., None]
    return np.moveaxis(q, 0, axis)


def between(a, b):
    """Shortest-arc quaternions rotating unit vectors a onto b, arrays (..., 3)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    a = a / np.linalg.norm(a, axis=-1, keepdims=True)
    b = b / np.linalg.norm(b, axis=-1, keepdims=True)
    w = 1.0 + np.sum(a * b, axis=-1, keepdims=True)
    xyz = np.cross(a, b)
    # Opposite vectors: rotate half a turn about any axis orthogonal to a.
    opposite = w[..., 0] < 1e-12
    if np.any(opposite):
        ortho = np.cross(a[opposite], np.array([1.0, 0.0, 0.0]))
        small = np.linalg.norm(ortho, axis=-1) < 1e-6
        ortho[small] = np.cross(a[opposite][small], np.array([0.0, 1.0, 0.0]))
        xyz[opposite] = ortho
        w[opposite] = 0.0
    q = np.concatenate([w, xyz], axis=-1)
    return q / np.linalg.norm(q, axis=-1, keepdims=True)
