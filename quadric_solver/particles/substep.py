"""One particle substep: the births and deaths due (births.py) and the pins driven along their tracks (pins.py),
the chosen integrator over the forces, the collisions with the static colliders, the mesh
colliders and the rigid bodies and between particles, the clock, and the non-finite check. step.py's particles
phase calls it.

The mesh colliders and the bodies are arguments that are None in scenes without them (bodies: scenes of particles
alone), so that numba prunes their paths there and such scenes never compile those kernels.
"""
import numpy as np
from numba import njit

from ..math3d import JIT
from .births import update_lives
from .body_contacts import collide_particles_with_bodies
from .collisions import collide_particles
from .implicit import implicit_euler
from .integrators import EULER, MIDPOINT, RK4, SYMPLECTIC_EULER, euler, midpoint, rk4, symplectic_euler
from .mesh_contacts import collide_particles_with_meshes
from .model import CONTACTS, PAIRS
from .pair_contacts import PAIR_SWEEPS, build_particle_grid, sweep_particle_pairs
from .pins import drive_pins, place_pins


@njit(**JIT)
def collide_with_colliders(model, particle_model, state, h, restitution_threshold, bodies, shapes, meshes):
    """The contacts of every movable particle with the static colliders, then the mesh colliders, then the bodies
    (each resolved as its module says); returns how many there were."""
    contacts = collide_particles(model, particle_model, state, h, restitution_threshold)
    if meshes is not None:
        contacts += collide_particles_with_meshes(model, particle_model, state, shapes, meshes, h,
                                                  restitution_threshold)
    if bodies is not None:
        contacts += collide_particles_with_bodies(model, particle_model, state, bodies, shapes, h,
                                                  restitution_threshold)
    return contacts


@njit(**JIT)
def particle_substep(model, particle_model, state, h, restitution_threshold, bodies=None, shapes=None, meshes=None):
    """Advance every particle group by h. Returns False, or True when a particle became non-finite, with its
    group and its index in the group in state.diverged.

    model: the scene's Model, for the static colliders and the materials; bodies: its BodyState (velocities
    take the bodies' share of the contact impulses), shapes and meshes its BodyShapes and MeshColliders; each
    None where the scene has none.
    """
    t = state.time[0]
    if particle_model.lifecycle:
        update_lives(particle_model, state, t)
    tracked = particle_model.tracked_pin.shape[0] > 0
    if tracked:
        drive_pins(particle_model, state, t, h)
    integrator = particle_model.integrator
    if integrator == SYMPLECTIC_EULER:
        symplectic_euler(particle_model, state, t, h)
    elif integrator == EULER:
        euler(particle_model, state, t, h)
    elif integrator == MIDPOINT:
        midpoint(particle_model, state, t, h)
    elif integrator == RK4:
        rk4(particle_model, state, t, h)
    else:
        implicit_euler(particle_model, state, t, h)
    if tracked:
        place_pins(particle_model, state, t + h)
    state.counters[CONTACTS] = collide_with_colliders(model, particle_model, state, h, restitution_threshold, bodies,
                                                      shapes, meshes)
    if particle_model.largest_radius > 0.0:
        build_particle_grid(particle_model, state)
        for sweep in range(PAIR_SWEEPS):
            touching = sweep_particle_pairs(model, particle_model, state, h, restitution_threshold)
            # pushes into walls, meshes and bodies undone
            collide_with_colliders(model, particle_model, state, h, restitution_threshold, bodies, shapes, meshes)
            if sweep == 0:
                state.counters[PAIRS] = touching
    state.time[0] = t + h
    particle = first_non_finite_particle(state.y, particle_model.n_particles)
    if particle < 0:
        return False
    group_start = particle_model.group_start
    group = 0
    while group_start[group + 1] <= particle:
        group += 1
    state.diverged[0] = group
    state.diverged[1] = particle - group_start[group]
    return True


@njit(**JIT)
def first_non_finite_particle(y, n):
    """The first particle whose position or velocity in y = [x (3n); v (3n)] is NaN or infinite, or -1."""
    for j in range(y.shape[0]):
        if not np.isfinite(y[j]):
            return (j // 3) % n
    return -1
