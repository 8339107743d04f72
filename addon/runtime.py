"""Loads the solver lazily, after numba has been told where to cache and which threading layer to use.

The solver imports numba when it is imported, and numba reads NUMBA_CACHE_DIR
and its threading-layer settings at import time, so they are set here first.
The cache lives in the extension's user directory (never beside the installed
code, which may be read-only and is replaced on update).

Threading layer: OpenMP where its runtime loads (Linux has libgomp, Windows
the MSVC runtime's vcomp), else numba's own 'workqueue', which needs nothing;
never TBB, because Blender ships its own TBB. A substep starts about twenty
parallel loops, and 'workqueue' costs about a tenth of a millisecond to start
each: a 1,000-body pile ran three times slower on it than on OpenMP (measured
in a worker thread, as the Simulate operator runs it). GNU OpenMP does not
survive fork(): a forked child that runs the solver is stopped with a message
(numba's check); children that do not, and subprocesses, are unaffected.
"""
import os
import sys

THREADING_LAYER = "default"  # the first of THREADING_LAYER_PRIORITY that loads
THREADING_LAYER_PRIORITY = ["omp", "workqueue", "tbb"]  # numba wants all three named
_solver = None


def extension_package():
    """The extension's root package, e.g. 'bl_ext.user_default.quadric_dynamics'."""
    return __package__.rpartition(".")[0]


def numba_cache_dir():
    import bpy

    try:
        base = bpy.utils.extension_path_user(extension_package(), create=True)
    except ValueError:
        # Loaded from a source checkout rather than installed (scripts/bake.py): Blender's config dir.
        base = bpy.utils.user_resource('CONFIG', path="quadric_dynamics", create=True)
    path = os.path.join(base, "numba_cache")
    os.makedirs(path, exist_ok=True)
    return path


def configure_numba():
    cache = numba_cache_dir()
    os.environ["NUMBA_CACHE_DIR"] = cache
    os.environ["NUMBA_THREADING_LAYER"] = THREADING_LAYER
    os.environ["NUMBA_THREADING_LAYER_PRIORITY"] = " ".join(THREADING_LAYER_PRIORITY)
    numba = sys.modules.get("numba")
    if numba is not None:  # already imported by something else: set its live config too
        numba.config.CACHE_DIR = cache
        numba.config.THREADING_LAYER = THREADING_LAYER
        numba.config.THREADING_LAYER_PRIORITY = list(THREADING_LAYER_PRIORITY)
    return cache


def get_solver():
    global _solver
    if _solver is None:
        configure_numba()
        from .. import solver

        _solver = solver
    return _solver
