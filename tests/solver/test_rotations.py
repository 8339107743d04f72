"""quadric_solver/rotations.py (numpy quaternions for set-up code and the add-on) against closed forms."""
import math

import numpy as np
import pytest

from quadric_solver import rotations
from tests.helpers import axis_angle

EPS = 8 * np.finfo(float).eps


def rodrigues(axis, angle):
    """Rotation matrix of a turn by angle about the unit axis: I + sin K + (1 - cos) K^2."""
    x, y, z = axis
    k = np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])
    return np.eye(3) + math.sin(angle) * k + (1.0 - math.cos(angle)) * k @ k


@pytest.mark.parametrize("seed", range(3))
def test_matrix_product_and_rotation_agree_with_rodrigues(seed):
    rng = np.random.default_rng(seed)
    for _ in range(50):
        axes = rng.normal(size=(2, 3))
        axes /= np.linalg.norm(axes, axis=1)[:, None]
        angles = rng.uniform(-math.pi, math.pi, size=2)
        p, q = axis_angle(axes[0], angles[0]), axis_angle(axes[1], angles[1])
        rp, rq = rodrigues(axes[0], angles[0]), rodrigues(axes[1], angles[1])
        np.testing.assert_allclose(rotations.to_matrix(p), rp, atol=EPS)
        np.testing.assert_allclose(rotations.to_matrix(rotations.mul(p, q)), rp @ rq, atol=EPS)  # p q: q first
        v = rng.normal(size=3)
        np.testing.assert_allclose(rotations.rotate(p, v), rp @ v, atol=EPS * np.linalg.norm(v))
        np.testing.assert_allclose(rotations.to_matrix(rotations.conj(p)), rp.T, atol=EPS)
        # from_matrix inverts to_matrix up to the sign, choosing w >= 0, on every branch of Shepperd's method
        back = rotations.from_matrix(rp)
        assert back[0] >= 0.0
        np.testing.assert_allclose(back, p if p[0] >= 0.0 else -p, atol=EPS)


def test_from_matrix_on_half_turns_where_w_is_zero():
    for axis in np.eye(3):
        q = rotations.from_matrix(rodrigues(axis, math.pi))
        np.testing.assert_allclose(np.abs(q), np.concatenate([[0.0], axis]), atol=EPS)


def test_make_continuous_flips_signs_into_one_hemisphere_without_changing_rotations():
    angles = np.linspace(0.0, 6.0 * math.pi, 40)
    q = np.array([axis_angle((0.0, 0.0, 1.0), a) for a in angles])
    q[1::3] *= -1.0
    smooth = rotations.make_continuous(q)
    assert np.all(np.einsum("ij,ij->i", smooth[1:], smooth[:-1]) > 0.0)
    np.testing.assert_allclose(rotations.to_matrix(smooth), rotations.to_matrix(q), atol=EPS)


def test_between_turns_a_onto_b_by_the_shortest_arc():
    rng = np.random.default_rng(7)
    a = rng.normal(size=(100, 3))
    b = rng.normal(size=(100, 3))
    b[0] = -a[0]  # opposite vectors: a half turn about some axis orthogonal to a
    q = rotations.between(a, b)
    unit_a = a / np.linalg.norm(a, axis=1)[:, None]
    unit_b = b / np.linalg.norm(b, axis=1)[:, None]
    np.testing.assert_allclose(rotations.rotate(q, unit_a), unit_b, atol=1e-14)
    angle = 2.0 * np.arctan2(np.linalg.norm(q[:, 1:], axis=1), q[:, 0])
    np.testing.assert_allclose(angle, np.arccos(np.clip(np.einsum("ij,ij->i", unit_a, unit_b), -1, 1)), atol=1e-7)
