"""Compile this checkout's solver kernels into numba's cache, one kind of scene at a time (started by conftest.py).

    python -m tests.addon.checkout_kernels KIND...      (from the repository root)

KIND is one of KINDS: each steps a small scene of that kind once, which compiles (or loads) the kernels every
scene of that kind runs (their types do not depend on the scene's content), then prints the kind's name.

The add-on tests compile two copies of the solver cold: the installed extension's inside Blender, cached in its
user folder, and this checkout's for `python -m solver run`, which the tests in tests/solver then reuse. numba
keys its cache on each source file's path (and the classes in the kernels' signatures on their module's name),
so the two copies cannot share one. Each compile takes minutes on one core; conftest.py runs this beside the
Blender scenario that compiles the other copy.
"""
import sys

import numpy as np

import solver

KINDS = ("bodies", "ropes", "bodies_particles", "all", "particles", "shapes")


def scene_of(bodies, ropes, particles, shapes=False):
    scene = solver.Scene()
    scene.add_plane()
    if bodies:
        scene.add_ellipsoid((0.05, 0.04, 0.03), position=(0.0, 0.0, 0.2))
    if shapes:  # a body that is not an ellipsoid: the kernels with the other shapes' paths
        scene.add_body(solver.Box((0.05, 0.04, 0.03)), position=(0.3, 0.0, 0.2))
    if ropes:
        scene.add_rope(np.linspace((-0.2, 0.2, 0.5), (0.2, 0.2, 0.5), 5), pinned=(0,))
    if particles:
        scene.add_particles([(0.0, -0.2, 0.5), (0.05, -0.2, 0.5)], radius=0.01)
        scene.add_mass_spring([[0.0, -0.4, 0.4], [0.1, -0.4, 0.4]], [(0, 1)], mass=0.1, stiffness=100.0,
                              damping=0.1, pinned=[0])
        scene.add_force(solver.Turbulence(0.5, size=0.2))
    return scene


SCENES = {"bodies": (True, False, False), "ropes": (True, True, False), "bodies_particles": (True, False, True),
          "all": (True, True, True), "particles": (False, False, True), "shapes": (True, False, False, True)}


def main(kinds):
    for kind in kinds:
        solver.Simulation(scene_of(*SCENES[kind])).step(1)
        print(kind, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
