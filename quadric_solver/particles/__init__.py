"""Particles and mass-spring bodies: groups, force objects, ODE integrators, collisions.

groups.py       checks the groups of Scene.add_particles / add_mass_spring; mass lumping, bending springs
forces.py       the force objects (Drag, Springs, Wind, Vortex, Turbulence, Attractor) as plain values
model.py        ParticleModel / ParticleState built from a scene; read-outs
noise.py        smooth value noise and its curl, deterministic by seed
fields.py       the field forces (drag, wind, vortex, turbulence, attractor) and the drag's Jacobian
behaviour.py    forces from a behaviour function C(x): f = -(ks C + kd dC/dt) dC/dx; the damped spring
system.py       the particle system seen by the integrators: dimension, get/set state, derivative
integrators.py  explicit integrators: symplectic Euler, Euler, midpoint, RK4
implicit.py     linearised backward Euler with conjugate gradients
collisions.py   impulses and position projection against planes, box walls and tubes
mesh_contacts.py  the same against the triangles of mesh colliders (their hierarchy, one-sided, active edges)
body_contacts.py  against rigid bodies, two-way (a grid of the bodies' boxes, the shapes' signed distance)
pair_contacts.py  contacts between particles of groups with particle_collisions (hashed grid, sweeps)
substep.py      one particle substep: integrate, collide, non-finite check
"""
