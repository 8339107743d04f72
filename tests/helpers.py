"""Helpers the tests share (tests/solver and tests/addon), each written once: the repository root,
quaternions and rope point lists.

    from tests.helpers import ROOT, axis_angle, line, quat_mul, quat_to_matrix, rotate

(pytest puts the repository root on sys.path: pythonpath in pyproject.toml). Quaternions are (w, x, y, z);
the functions take one (4,) or arrays of them (..., 4) and are plain numpy, so the tests check the solver's
compiled versions (solver/math3d.py) and the add-on's (addon/quat.py) against an independent copy.
"""
import math
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def axis_angle(axis, angle):
    """Unit quaternion of a turn by ``angle`` radians about ``axis`` (any length)."""
    axis = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    return np.concatenate([[math.cos(angle / 2)], math.sin(angle / 2) * axis])


def quat_mul(p, q):
    """Hamilton product p q."""
    pw, px, py, pz = np.moveaxis(np.asarray(p, dtype=float), -1, 0)
    qw, qx, qy, qz = np.moveaxis(np.asarray(q, dtype=float), -1, 0)
    return np.stack([pw * qw - px * qx - py * qy - pz * qz, pw * qx + px * qw + py * qz - pz * qy,
                     pw * qy - px * qz + py * qw + pz * qx, pw * qz + px * qy - py * qx + pz * qw], -1)


def quat_to_matrix(q):
    """Rotation matrices (..., 3, 3) of quaternions (..., 4), normalised first."""
    q = np.asarray(q, dtype=float)
    w, x, y, z = np.moveaxis(q / np.linalg.norm(q, axis=-1, keepdims=True), -1, 0)
    return np.stack([np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
                     np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
                     np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1)], -2)


def rotate(q, v):
    """The vector v (3,) turned by the quaternion q (4,)."""
    return quat_to_matrix(q) @ np.asarray(v, dtype=float)


def line(n_segments, start, end):
    """Rope points: n_segments + 1 evenly spaced from ``start`` to ``end``, (n_segments + 1, 3)."""
    return np.linspace(np.asarray(start, float), np.asarray(end, float), n_segments + 1)
