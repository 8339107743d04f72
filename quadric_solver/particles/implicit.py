"""Linearised backward Euler (Baraff and Witkin 1998, "Large steps in cloth simulation"), matrix-free.

One Newton step of v1 = v0 + h M^-1 f(x0 + h v1, v1), linearised at (x0, v0):

    (M - h df/dv - h^2 df/dx) dv = h (f0 + h df/dx v0),   v1 = v0 + dv,   x1 = x0 + h v1.

The Jacobians are those of the springs (behaviour.py: -ks J^T J and -kd J^T J) and of the drag (-c I); the
fields' slow position dependence is left explicit. The matrix is then symmetric positive definite, and
conjugate gradients with a Jacobi preconditioner solve it without forming it, spring by spring. Pinned
particles, and those not there (unborn or dead), are filtered out (their rows and columns are the identity and
their right-hand side zero), so dv is zero there; a pin's velocity along its track enters through df/dx v0.
The step is stable for springs of any stiffness; it damps what it cannot resolve.
"""
import numpy as np
from numba import njit

from ..math3d import JIT
from .behaviour import add_gauss_newton_diagonal, add_gauss_newton_product
from .model import CG_ITERATIONS
from .system import forces, get_state, set_state


@njit(**JIT)
def _apply_matrix(model, state, h, u, out):
    """out = (M - h df/dv - h^2 df/dx) u, with the pinned particles' rows and columns the identity."""
    n = model.n_particles
    mass, drag, inv_mass = model.mass, model.particle_drag, state.inv_mass
    for i in range(n):
        diagonal = mass[i] + h * drag[i]
        for k in range(3):
            out[3 * i + k] = diagonal * u[3 * i + k]
    add_gauss_newton_product(model.spring_index, state.work_grad, model.spring_stiffness, model.spring_damping,
                             h * h, h, u, out)
    for i in range(n):
        if inv_mass[i] == 0.0:
            for k in range(3):
                out[3 * i + k] = u[3 * i + k]


@njit(**JIT)
def _dot(a, b):
    total = 0.0
    for i in range(a.shape[0]):
        total += a[i] * b[i]
    return total


@njit(**JIT)
def implicit_euler(model, state, t, h):
    """One linearised backward Euler step; the conjugate-gradient iterations it took go to state.counters."""
    n = model.n_particles
    size = 3 * n
    y0, y, force = state.work_start, state.work_y, state.work_force
    dv, r, p, z, q, diagonal = state.work_dv, state.work_r, state.work_p, state.work_z, state.work_q, state.work_diag
    inv_mass = state.inv_mass
    get_state(state, y0)
    forces(model, state, y0, t, force)  # f0, and the spring gradients at x0
    # right-hand side h f0 + h^2 df/dx v0 (df/dx v0 = -sum ks J^T J v0), in r: the residual of dv = 0
    for i in range(size):
        r[i] = h * force[i]
        z[i] = y0[size + i]
    add_gauss_newton_product(model.spring_index, state.work_grad, model.spring_stiffness, model.spring_damping,
                             -h * h, 0.0, z, r)
    for i in range(n):
        diagonal_i = model.mass[i] + h * model.particle_drag[i]
        for k in range(3):
            diagonal[3 * i + k] = diagonal_i
    add_gauss_newton_diagonal(model.spring_index, state.work_grad, model.spring_stiffness, model.spring_damping,
                              h * h, h, diagonal)
    for i in range(n):
        for k in range(3):
            if inv_mass[i] == 0.0:
                r[3 * i + k] = 0.0
                diagonal[3 * i + k] = 1.0
    for i in range(size):
        dv[i] = 0.0
        z[i] = r[i] / diagonal[i]
        p[i] = z[i]
    goal = model.cg_tolerance * np.sqrt(_dot(r, r))
    rz = _dot(r, z)
    iterations = 0
    while iterations < model.cg_max_iterations and np.sqrt(_dot(r, r)) > goal:
        _apply_matrix(model, state, h, p, q)
        curvature = _dot(p, q)
        if not curvature > 0.0:
            break  # converged to rounding (or not a number: the divergence check reports it)
        alpha = rz / curvature
        for i in range(size):
            dv[i] += alpha * p[i]
            r[i] -= alpha * q[i]
            z[i] = r[i] / diagonal[i]
        rz_next = _dot(r, z)
        beta = rz_next / rz
        rz = rz_next
        for i in range(size):
            p[i] = z[i] + beta * p[i]
        iterations += 1
    state.counters[CG_ITERATIONS] = iterations
    for i in range(n):
        for k in range(3):
            v = y0[size + 3 * i + k] + dv[3 * i + k]
            y[size + 3 * i + k] = v
            y[3 * i + k] = y0[3 * i + k] + (h * v if inv_mass[i] != 0.0 else 0.0)
    set_state(state, y)
