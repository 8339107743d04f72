"""Helpers the tests share (tests/solver and tests/addon), each written once: the repository root,
quaternions, rope point lists and the closed forms more than one test compares with.

    from tests.helpers import ROOT, axis_angle, line, quat_mul, quat_to_matrix, rotate

(pytest puts the repository root on sys.path: pythonpath in pyproject.toml). Quaternions are (w, x, y, z):
products, matrices and rotations are the solver's numpy ones (quadric_solver/rotations.py, checked against closed
forms in tests/solver/test_rotations.py); axis_angle builds them from their definition.
"""
import math
from pathlib import Path

import numpy as np

from quadric_solver.rotations import mul as quat_mul, rotate, to_matrix as quat_to_matrix  # noqa: F401 (re-exported)

ROOT = Path(__file__).resolve().parents[1]


def axis_angle(axis, angle):
    """Unit quaternion of a turn by ``angle`` radians about ``axis`` (any length)."""
    axis = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    return np.concatenate([[math.cos(angle / 2)], math.sin(angle / 2) * axis])


def line(n_segments, start, end):
    """Rope points: n_segments + 1 evenly spaced from ``start`` to ``end``, (n_segments + 1, 3)."""
    return np.linspace(np.asarray(start, float), np.asarray(end, float), n_segments + 1)


def double_pendulum_effective_length(string, attach_to_centre, gyration_sq):
    """Small-amplitude lower mode of a mass on a string attached at distance c above its centre of mass
    (radius of gyration k): L k^2 s^2 - (L c + c^2 + k^2) s + c = 0 with s = omega^2 / g; L_eff = 1/s."""
    c, k2 = attach_to_centre, gyration_sq
    b = string * c + c * c + k2
    s = (b - math.sqrt(b * b - 4 * string * k2 * c)) / (2 * string * k2)
    return 1.0 / s
