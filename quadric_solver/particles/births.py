"""Particles born over time and dying (Scene.add_particles' birth_times and lifetimes).

A particle is there from its birth time to its death time (ParticleModel.birth_time, death_time). While it is not,
its inverse mass in the state is zero: the integrators leave it where it is and the contacts pass it by (the pair
contacts leave it out of their grid), so it neither moves, nor feels forces, nor touches anything. An unborn
particle's state holds where it will be born and how fast; a dead one stays where it died, at rest.

update_lives runs at the start of each substep, at time t. A particle whose birth time b has come (b <= t) starts
then, d = t - b late (less than a step): it is first carried along its free fall, x + v d + g d^2 / 2 and v + g d,
so that it is where it would have been had it started on time (forces other than gravity act from the next
step). A particle whose death time has come stops.
"""
from numba import njit

from ..math3d import JIT


@njit(**JIT)
def update_lives(model, state, t):
    """The births and deaths due at time t (the start of a substep)."""
    n = model.n_particles
    y, inv_mass = state.y, state.inv_mass
    g = model.gravity
    for i in range(n):
        if model.inv_mass[i] == 0.0:
            continue  # pinned: there from the start, for ever
        there = model.birth_time[i] <= t < model.death_time[i]
        if there == (inv_mass[i] != 0.0):
            continue
        j = 3 * n + 3 * i
        if there:
            late = t - model.birth_time[i]
            for k in range(3):
                y[3 * i + k] += late * y[j + k] + 0.5 * g[k] * late * late
                y[j + k] += g[k] * late
            inv_mass[i] = model.inv_mass[i]
        else:
            inv_mass[i] = 0.0
            for k in range(3):
                y[j + k] = 0.0
