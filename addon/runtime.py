"""Loads the solver lazily, after numba has been told where to cache.

The solver's kernel modules import numba, and the solver keys its cache folder
on NUMBA_CACHE_DIR when the first of them loads, so it is set here first
(solver.rotations, plain numpy, may be imported before). The cache lives in the extension's
user directory (never beside the installed code, which may be read-only and is
replaced on update); the solver keys a folder inside it on a hash of its own
sources and chooses numba's threading layer itself (solver/runtime.py: OpenMP
where its runtime loads, else workqueue, never TBB, which Blender also ships).
GNU OpenMP does not survive fork(): a forked child that runs the solver is
stopped with a message (numba's check); children that do not, and
subprocesses, are unaffected.
"""
import os

_solver = None


def extension_package():
    """The extension's root package, e.g. 'bl_ext.user_default.quadric_dynamics'."""
    return __package__.rpartition(".")[0]


def numba_cache_dir():
    """The root of the extension's numba caches (the solver adds a folder per version of its sources)."""
    import bpy

    try:
        base = bpy.utils.extension_path_user(extension_package(), create=True)
    except ValueError:
        # Loaded from a source checkout rather than installed (scripts/bake.py): Blender's config dir.
        base = bpy.utils.user_resource('CONFIG', path="quadric_dynamics", create=True)
    path = os.path.join(base, "numba_cache")
    os.makedirs(path, exist_ok=True)
    return path


def get_solver():
    global _solver
    if _solver is None:
        os.environ["NUMBA_CACHE_DIR"] = numba_cache_dir()
        from .. import solver

        _solver = solver
    return _solver
