"""Small compiled helpers against closed forms."""
import math

import numpy as np

from quadric_solver.math3d import quat_mul, rotate_by_rotation_vector


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


def test_rotation_sink_is_the_second_order_swing_of_a_spinning_ellipsoid_support():
    """The split impulses' rotation sink against the closed form for a prolate spheroid turning about y.

    With its long axis tilted by t from x in the x-z plane, its support height
    along z is f(t) = sqrt(a^2 sin^2 t + b^2 cos^2 t); spinning at w about y
    for h, the sink is what the height gains beyond its first-order rate:
    f(t + w h) - f(t) - w h f'(t), exact for a constant spin.
    """
    from quadric_solver.contact.push_sweeps import _rotation_sink
    from quadric_solver.math3d import quat_to_matrix_np

    a, b, h = 0.05, 0.02, 1.0 / 240.0

    def height(t):
        return math.sqrt(a * a * math.sin(t) ** 2 + b * b * math.cos(t) ** 2)

    def slope(t):
        return (a * a - b * b) * math.sin(t) * math.cos(t) / height(t)

    for tilt in (0.0, 0.3, -1.1, 2.0):
        for spin in (5.0, 50.0, -130.0):
            rotation = quat_to_matrix_np((math.cos(0.5 * tilt), 0.0, math.sin(0.5 * tilt), 0.0))  # about y
            shape = (rotation @ np.diag([a * a, b * b, b * b]) @ rotation.T)[np.newaxis]
            sink = _rotation_sink(shape, 0, 0.0, spin, 0.0, 0.0, 0.0, 1.0, h)
            expected = height(tilt + spin * h) - height(tilt) - spin * h * slope(tilt)
            # a difference of heights of 2 to 5 cm: double round-off is about 1e-17 m per operation
            assert abs(sink - expected) <= 1e-14, (tilt, spin, sink, expected)
            assert abs(expected) > 1e-8  # the cases do swing measurably (the check above is not vacuous)
