"""Explicit integrators of the particle system: each advances it by one step h from time t.

They see the system only through system.py's interface (dimension, get_state, set_state, derivative), and
the state vector's layout y = [x; v] only where symplectic Euler splits it. Each leaves the state it started
from in state.work_start, where the collisions read the start positions.

    symplectic_euler  v1 = v0 + h a(x0, v0), x1 = x0 + h v1   first order, symplectic: keeps an oscillator's
                                                              amplitude over any number of periods (default)
    euler             y1 = y0 + h f(y0)                       first order; an oscillator's amplitude grows
    midpoint          y1 = y0 + h f(y0 + h/2 f(y0))           second order
    rk4               classical Runge-Kutta                   fourth order

implicit_euler (implicit.py) is the fifth; INTEGRATORS gives their names in the order of their codes.
"""
from numba import njit

from ..math3d import JIT
from .system import derivative, dimension, get_state, set_state

SYMPLECTIC_EULER, EULER, MIDPOINT, RK4, IMPLICIT_EULER = range(5)
INTEGRATORS = ("symplectic_euler", "euler", "midpoint", "rk4", "implicit_euler")


@njit(**JIT, inline="always")
def _step_from(y, y0, scale, k, size):
    """y = y0 + scale k over the first size entries: the update every explicit stage makes."""
    for i in range(size):
        y[i] = y0[i] + scale * k[i]


@njit(**JIT)
def euler(model, state, t, h):
    """y1 = y0 + h f(y0, t)."""
    size = dimension(model)
    y0, k1, y = state.work_start, state.work_k1, state.work_y
    get_state(state, y0)
    derivative(model, state, y0, t, k1)
    _step_from(y, y0, h, k1, size)
    set_state(state, y)


@njit(**JIT)
def symplectic_euler(model, state, t, h):
    """v1 = v0 + h a(x0, v0, t), then x1 = x0 + h v1: Euler's step with the positions moved by h^2 a more."""
    size = dimension(model)
    half = size // 2
    y0, k1, y = state.work_start, state.work_k1, state.work_y
    get_state(state, y0)
    derivative(model, state, y0, t, k1)
    for i in range(half):
        dv = h * k1[half + i]
        y[half + i] = y0[half + i] + dv
        y[i] = y0[i] + h * k1[i] + h * dv
    set_state(state, y)


@njit(**JIT)
def midpoint(model, state, t, h):
    """y1 = y0 + h f(y0 + h/2 f(y0, t), t + h/2)."""
    size = dimension(model)
    y0, k1, k2, y = state.work_start, state.work_k1, state.work_k2, state.work_y
    get_state(state, y0)
    derivative(model, state, y0, t, k1)
    _step_from(y, y0, 0.5 * h, k1, size)
    derivative(model, state, y, t + 0.5 * h, k2)
    _step_from(y, y0, h, k2, size)
    set_state(state, y)


@njit(**JIT)
def rk4(model, state, t, h):
    """The classical fourth-order Runge-Kutta step."""
    size = dimension(model)
    y0, y = state.work_start, state.work_y
    k1, k2, k3, k4 = state.work_k1, state.work_k2, state.work_k3, state.work_k4
    get_state(state, y0)
    derivative(model, state, y0, t, k1)
    _step_from(y, y0, 0.5 * h, k1, size)
    derivative(model, state, y, t + 0.5 * h, k2)
    _step_from(y, y0, 0.5 * h, k2, size)
    derivative(model, state, y, t + 0.5 * h, k3)
    _step_from(y, y0, h, k3, size)
    derivative(model, state, y, t + h, k4)
    for i in range(size):
        y[i] = y0[i] + h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i])
    set_state(state, y)
