"""Compile this checkout's solver kernels into numba's cache, one kind of scene at a time (started by conftest.py).

    python -m tests.addon.checkout_kernels KIND...      (from the repository root)

KIND is one of solver.precompile.KINDS (the same tiny scenes that fill the extension's prebuilt cache); each is
stepped once, which compiles (or loads) what every scene of that kind runs, then its name is printed.

The add-on tests need two copies of the solver compiled: the installed extension's, which the build compiles into
the zip's prebuilt cache (generic CPU, under the extension's package name), and this checkout's for
`python -m solver run`, which the tests in tests/solver then reuse. numba records the classes in the kernels'
signatures by module name, so the two copies cannot share one cache. Each takes minutes on one core; conftest.py
runs this beside the build.
"""
import sys

from solver.precompile import KINDS, simulations

ORDER = ("ellipsoids", "ropes", "ellipsoids_particles", "ropes_particles", "particles", "shapes", "shapes_particles",
         "mesh_particles")
assert sorted(ORDER) == sorted(KINDS)


def main(kinds):
    for kind in kinds:
        for sim in simulations(kind):
            sim.step(1)
        print(kind, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
