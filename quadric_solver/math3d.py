"""Small 3-D helpers for compiled kernels: quaternions (w, x, y, z) and 3x3 matrices.

Everything works on scalars and tiny tuples so the hot loops allocate nothing.
"""
from . import runtime

runtime.configure()  # numba's cache folder and threading layer, before the first kernel is defined

import numpy as np  # noqa: E402
from numba import njit  # noqa: E402

# Reassociation and contraction let LLVM vectorise and fuse the solver loops (about 4x
# faster); NaN and infinity semantics stay strict so divergence checks keep working.
JIT = dict(cache=True, nogil=True, fastmath={"contract", "reassoc", "arcp", "nsz"}, error_model="numpy")
# kernels with prange loops; callers must not run two of them at once from different threads
# (numba's workqueue threading layer, Blender's fallback where no OpenMP runtime loads, is not re-entrant)
JIT_PARALLEL = dict(JIT, parallel=True)
# Parallel kernels are thin prange loops over chunks that call a serial range function: bodies of
# prange loops with inlined helpers miscompiled once (update_body_frames), chunks never did.
PARALLEL_CHUNKS = 16  # enough to balance up to 8 threads
# The start of a whole range, for the serial paths' calls of range functions. A literal 0 there would make numba
# compile the range function a second time (it specialises on each literal argument), beside the int64 starts of
# the parallel path's chunks: minutes of cold compile for the collision ranges.
ZERO = np.int64(0)


@njit(**JIT, inline="always")
def sign(x):
    """1.0 for x >= 0, else -1.0: unlike np.sign, zero picks a side (a support point or face at a tie)."""
    return 1.0 if x >= 0.0 else -1.0


@njit(**JIT, inline="always")
def quat_mul(aw, ax, ay, az, bw, bx, by, bz):
    return (aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw)


@njit(**JIT, inline="always")
def quat_to_matrix(q, out):
    """Rotation matrix of the unit quaternion q (w, x, y, z), written into out (3, 3)."""
    w, x, y, z = q[0], q[1], q[2], q[3]
    out[0, 0] = 1.0 - 2.0 * (y * y + z * z)
    out[0, 1] = 2.0 * (x * y - w * z)
    out[0, 2] = 2.0 * (x * z + w * y)
    out[1, 0] = 2.0 * (x * y + w * z)
    out[1, 1] = 1.0 - 2.0 * (x * x + z * z)
    out[1, 2] = 2.0 * (y * z - w * x)
    out[2, 0] = 2.0 * (x * z - w * y)
    out[2, 1] = 2.0 * (y * z + w * x)
    out[2, 2] = 1.0 - 2.0 * (x * x + y * y)


@njit(**JIT, inline="always")
def rotated_by_rotation_vector(qw, qx, qy, qz, wx, wy, wz):
    """exp(w/2) * q renormalised: q rotated by the world-frame rotation vector w (exponential map), as scalars."""
    square = wx * wx + wy * wy + wz * wz
    if square < 0.04:
        # Taylor series of sin(angle/2)/angle and cos(angle/2) to the last term that counts in double
        # precision for angles below 0.2 (the next ones are below 1e-21): a substep's rotation is
        # almost always this small, and libm's sin and cos were most of the integrate phase
        y2 = 0.25 * square
        s = 0.5 * (1.0 - y2 / 6.0 * (1.0 - y2 / 20.0 * (1.0 - y2 / 42.0 * (1.0 - y2 / 72.0 * (1.0 - y2 / 110.0)))))
        c = 1.0 - y2 / 2.0 * (1.0 - y2 / 12.0 * (1.0 - y2 / 30.0 * (1.0 - y2 / 56.0 * (1.0 - y2 / 90.0 * (
            1.0 - y2 / 132.0)))))
    else:
        angle = np.sqrt(square)
        s = np.sin(0.5 * angle) / angle
        c = np.cos(0.5 * angle)
    rw, rx, ry, rz = quat_mul(c, s * wx, s * wy, s * wz, qw, qx, qy, qz)
    norm = np.sqrt(rw * rw + rx * rx + ry * ry + rz * rz)
    return rw / norm, rx / norm, ry / norm, rz / norm


@njit(**JIT, inline="always")
def rotate_by_rotation_vector(q, wx, wy, wz):
    """rotated_by_rotation_vector in place on the array q (w, x, y, z).

    The branching work is done on scalars: numba keeps the reference counting
    of an array passed to an inlined helper that branches inside hot loops.
    """
    q[0], q[1], q[2], q[3] = rotated_by_rotation_vector(q[0], q[1], q[2], q[3], wx, wy, wz)


@njit(**JIT, inline="always")
def world_inverse_inertia(rotation, inv_inertia_local, out):
    """out = R diag(inv_inertia_local) R^T: a body's inverse inertia in the world frame."""
    for r in range(3):
        for c in range(3):
            out[r, c] = (rotation[r, 0] * rotation[c, 0] * inv_inertia_local[0]
                         + rotation[r, 1] * rotation[c, 1] * inv_inertia_local[1]
                         + rotation[r, 2] * rotation[c, 2] * inv_inertia_local[2])


@njit(**JIT, inline="always")
def cross(ax, ay, az, bx, by, bz):
    return ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx


@njit(**JIT, inline="always")
def mat_vec(m, x, y, z):
    """M v: with a body's rotation, a vector of its frame in the world's."""
    return (m[0, 0] * x + m[0, 1] * y + m[0, 2] * z,
            m[1, 0] * x + m[1, 1] * y + m[1, 2] * z,
            m[2, 0] * x + m[2, 1] * y + m[2, 2] * z)


@njit(**JIT, inline="always")
def mat_t_vec(m, x, y, z):
    """M^T v: with a body's rotation, a world vector in the body's frame."""
    return (m[0, 0] * x + m[1, 0] * y + m[2, 0] * z,
            m[0, 1] * x + m[1, 1] * y + m[2, 1] * z,
            m[0, 2] * x + m[1, 2] * y + m[2, 2] * z)


@njit(**JIT, inline="always")
def orthonormal_basis(nx, ny, nz):
    """Two unit tangents completing n to a right-handed frame (branch-free method of Duff et al. 2017)."""
    sign = 1.0 if nz >= 0.0 else -1.0
    a = -1.0 / (sign + nz)
    b = nx * ny * a
    return (1.0 + sign * nx * nx * a, sign * b, -sign * nx,
            b, sign + ny * ny * a, -ny)


def quat_to_matrix_np(q):
    """Numpy version for setup code and tests."""
    out = np.empty((3, 3))
    quat_to_matrix(np.asarray(q, dtype=np.float64), out)
    return out


@njit(**JIT, inline="always")
def norm3(x, y, z):
    """Euclidean norm that does not overflow for huge components (a diverging body must not poison others)."""
    m = max(abs(x), max(abs(y), abs(z)))
    if m == 0.0 or not np.isfinite(m):
        return m
    return m * np.sqrt((x / m) ** 2 + (y / m) ** 2 + (z / m) ** 2)
