"""Small compiled helpers against closed forms."""
import math

import numpy as np

from solver.math3d import quat_mul, rotate_by_rotation_vector


def test_exponential_map_is_the_closed_form_rotation_on_both_sides_of_its_series_branch():
    """Rotations below 0.2 rad use a Taylor series of sin and cos: it must equal exp(w/2) q to round-off."""
    rng = np.random.default_rng(3)
    for angle in np.concatenate([np.linspace(0.0, 0.5, 501), [1e-13, 0.19999999, 0.2, 0.20000001, 3.0]]):
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        rotated = q.copy()
        rotate_by_rotation_vector(rotated, *(angle * axis))
        half = 0.5 * angle
        expected = np.array(quat_mul(math.cos(half), *(math.sin(half) * axis), *q))
        np.testing.assert_allclose(rotated, expected, rtol=0, atol=4 * np.finfo(float).eps, err_msg=f"angle {angle}")
