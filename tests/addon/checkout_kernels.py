"""Compile this checkout's solver kernels into numba's cache, one kind of scene at a time (started by conftest.py).

    python -m tests.addon.checkout_kernels [--marks DIR] [KIND...]      (from the repository root)

KIND is one of quadric_solver.precompile.KINDS (the same tiny scenes that fill the extension's prebuilt cache; all of
them, in ORDER, by default); each is stepped once, which compiles (or loads) what every scene of that kind runs,
then its name is printed and, with --marks, an empty file of that name made in DIR (scripts/test: the add-on's
tests, in another process, wait for them; conftest.py's KernelsElsewhere).

Under scripts/test this compiles, for numba's generic CPU, the kernels the zip's prebuilt cache ships (the add-on
imports the solver as ``quadric_solver`` too), into the cache folder the build compiles them in from the last kind
(build_extension.py --kernels-from): the two meet halfway, each loading what the other cached. It takes minutes on
one core; conftest.py runs this beside the build, or scripts/test beside the add-on's tests.
"""
import argparse
import os
import sys

from quadric_solver.precompile import KINDS, simulations

ORDER = ("ellipsoids", "ropes", "ellipsoids_particles", "ropes_particles", "particles", "shapes", "shapes_particles",
         "mesh_particles")
assert sorted(ORDER) == sorted(KINDS)


def main(argv):
    parser = argparse.ArgumentParser(prog="python -m tests.addon.checkout_kernels")
    parser.add_argument("--marks", help="folder to make an empty file in, named after each kind compiled")
    parser.add_argument("kinds", nargs="*", metavar="KIND", help=f"default: all, in this order: {' '.join(ORDER)}")
    args = parser.parse_args(argv)
    unknown = [kind for kind in args.kinds if kind not in ORDER]
    if unknown:
        parser.error(f"unknown kinds {unknown}; they are {', '.join(ORDER)}")
    for kind in args.kinds or ORDER:
        for sim in simulations(kind):
            sim.step(1)
        if args.marks:
            open(os.path.join(args.marks, kind), "w").close()
        print(kind, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
