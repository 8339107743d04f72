"""The particle system as the integrators see it (Witkin and Baraff, Physically Based Modeling, "Particle
System Dynamics"): a state vector of some dimension, read and written whole, and its time derivative.

    dimension(model)                 length of the state vector: 6n
    get_state(state, out)            out = y = [x (3n); v (3n)]
    set_state(state, y)              the system takes the state y
    derivative(model, state, y, t, out)   out = dy/dt = [v; f(x, v, t) / m] at state y, time t

The integrators (integrators.py) use only these four. The derivative takes the state it is evaluated at as an
argument instead of reading the system's own, which is the same thing without a set_state before each call.
The implicit integrator needs the force and its Jacobians as well: ``forces`` and the spring gradients it
leaves in state.work_grad (behaviour.py), and the summed drag coefficients in the model.
"""
from numba import njit

from ..math3d import JIT
from .behaviour import add_behaviour_forces, spring_constraints
from .fields import add_drag_forces, add_field_forces


@njit(**JIT)
def dimension(model):
    """Length of the state vector: positions and velocities, 6n."""
    return 6 * model.n_particles


@njit(**JIT)
def get_state(state, out):
    """out = the system's state vector."""
    y = state.y
    for i in range(y.shape[0]):
        out[i] = y[i]


@njit(**JIT)
def set_state(state, y):
    """The system takes the state vector y."""
    target = state.y
    for i in range(target.shape[0]):
        target[i] = y[i]


@njit(**JIT)
def forces(model, state, y, t, force):
    """force (3n) = the total force on each particle at state y, time t: gravity m g, drag, fields, springs.

    Leaves the springs' C and gradients in state.work_value and work_grad.
    """
    n = model.n_particles
    gx, gy, gz = model.gravity[0], model.gravity[1], model.gravity[2]
    mass = model.mass
    for i in range(n):
        force[3 * i] = mass[i] * gx
        force[3 * i + 1] = mass[i] * gy
        force[3 * i + 2] = mass[i] * gz
    add_drag_forces(model.particle_drag, y, n, force)
    add_field_forces(model.field_kind, model.field_param, model.field_group, model.group_start, y, n, t, force)
    spring_constraints(y, model.spring_index, model.spring_param, state.work_value, state.work_grad)
    add_behaviour_forces(model.spring_index, state.work_value, state.work_grad, model.spring_stiffness,
                         model.spring_damping, y, n, force)


@njit(**JIT)
def derivative(model, state, y, t, out):
    """out = dy/dt = [v; f / m] at state y and time t. Pinned particles get [v; 0]: they move at their velocity
    (zero, or their pin track's); particles not there (unborn or dead) get zero: they keep their state."""
    n = model.n_particles
    force = state.work_force
    forces(model, state, y, t, force)
    inv_mass = state.inv_mass
    for i in range(n):
        w = inv_mass[i]
        for k in range(3):
            if w == 0.0:
                out[3 * i + k] = y[3 * n + 3 * i + k] if model.inv_mass[i] == 0.0 else 0.0
                out[3 * n + 3 * i + k] = 0.0
            else:
                out[3 * i + k] = y[3 * n + 3 * i + k]
                out[3 * n + 3 * i + k] = force[3 * i + k] * w
