"""Forces from behaviour functions (Witkin and Baraff's constraint forces, as in Baraff and Witkin 1998's cloth).

A behaviour function C(x) of K particles is zero where they are at rest; its force is

    f_i = -(ks C + kd dC/dt) dC/dx_i,   dC/dt = sum_j dC/dx_j . v_j,

so a new force needs only C and its gradient: an njit kernel ``xxx_constraints(y, index, param, value, grad)``
that writes, for every row c (particles index[c, :K], parameters param[c, :]), C into value[c] and dC/dx_k
into grad[c, k, :]. add_behaviour_forces then turns any such rows into forces. The two passes are separate
functions rather than one that takes the constraint as an argument: numba lowers a function passed as a value
to its address in this process, and code holding such an address cannot be cached.

The implicit integrator linearises these forces as df/dx = -ks J^T J and df/dv = -kd J^T J, J = dC/dx: the
Gauss-Newton part, exact at rest (C = 0). The curvature term -ks C d2C/dx2 is left out: for a stretched spring
it is the transverse stiffness, small beside the axial one, and for a compressed spring it would make the
system indefinite.
"""
import numpy as np
from numba import njit

from ..math3d import JIT


@njit(**JIT)
def spring_constraints(y, index, param, value, grad):
    """The damped Hooke spring: C = |x_a - x_b| - L (L = param[c, 0]); dC/dx_a = d / |d| = -dC/dx_b.

    Ends that coincide have no direction: the gradient is zero there and the spring pushes nothing.
    """
    for c in range(index.shape[0]):
        a, b = index[c, 0], index[c, 1]
        dx = y[3 * a] - y[3 * b]
        dy = y[3 * a + 1] - y[3 * b + 1]
        dz = y[3 * a + 2] - y[3 * b + 2]
        length = np.sqrt(dx * dx + dy * dy + dz * dz)
        inverse = 1.0 / length if length > 0.0 else 0.0
        grad[c, 0, 0], grad[c, 0, 1], grad[c, 0, 2] = dx * inverse, dy * inverse, dz * inverse
        grad[c, 1, 0], grad[c, 1, 1], grad[c, 1, 2] = -dx * inverse, -dy * inverse, -dz * inverse
        value[c] = length - param[c, 0]


@njit(**JIT)
def add_behaviour_forces(index, value, grad, stiffness, damping, y, n, force):
    """force_i += -(ks C + kd dC/dt) dC/dx_i for every row: C in value, dC/dx in grad (a constraint kernel's).

    y = [x (3n); v (3n)]; stiffness, damping: ks, kd per row.
    """
    width = index.shape[1]
    for c in range(index.shape[0]):
        rate = 0.0
        for k in range(width):
            i = 3 * n + 3 * index[c, k]
            rate += grad[c, k, 0] * y[i] + grad[c, k, 1] * y[i + 1] + grad[c, k, 2] * y[i + 2]
        scale = -(stiffness[c] * value[c] + damping[c] * rate)
        for k in range(width):
            i = 3 * index[c, k]
            force[i] += scale * grad[c, k, 0]
            force[i + 1] += scale * grad[c, k, 1]
            force[i + 2] += scale * grad[c, k, 2]


@njit(**JIT)
def add_gauss_newton_product(index, grad, stiffness, damping, a, b, u, out):
    """out += sum_c (a ks_c + b kd_c) J_c^T (J_c u), J_c = dC_c/dx from grad (the last constraint kernel).

    With a = h^2, b = h this is -(h^2 df/dx + h df/dv) u, the force part of the implicit step's matrix.
    """
    width = index.shape[1]
    for c in range(index.shape[0]):
        weight = a * stiffness[c] + b * damping[c]
        if weight == 0.0:
            continue
        along = 0.0
        for k in range(width):
            i = 3 * index[c, k]
            along += grad[c, k, 0] * u[i] + grad[c, k, 1] * u[i + 1] + grad[c, k, 2] * u[i + 2]
        along *= weight
        for k in range(width):
            i = 3 * index[c, k]
            out[i] += along * grad[c, k, 0]
            out[i + 1] += along * grad[c, k, 1]
            out[i + 2] += along * grad[c, k, 2]


@njit(**JIT)
def add_gauss_newton_diagonal(index, grad, stiffness, damping, a, b, out):
    """out_i += the diagonal of sum_c (a ks_c + b kd_c) J_c^T J_c (the implicit step's Jacobi preconditioner)."""
    width = index.shape[1]
    for c in range(index.shape[0]):
        weight = a * stiffness[c] + b * damping[c]
        for k in range(width):
            i = 3 * index[c, k]
            for d in range(3):
                out[i + d] += weight * grad[c, k, d] * grad[c, k, d]
