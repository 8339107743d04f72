"""The solver shipped inside the extension, imported as the top-level package ``quadric_solver``.

Blender imports the extension as ``bl_ext.<repository>.quadric_dynamics``. Imported under that prefix, the solver
would be another package to numba, which records module names in its cache, so no cache compiled from the
standalone package could serve it: the prebuilt cache (scripts/build_extension.py) and the tests' compiled kernels
are made once, under this name. ``load`` registers the extension's own copy under it before any add-on module
imports the solver. ``unload`` forgets it when the add-on is disabled, so that an updated extension, enabled again,
imports its new sources. A ``quadric_solver`` from another folder (a pip install in Blender's Python) is replaced:
the add-on runs the solver it ships with. Shipped as a wheel, the solver would have the same top-level name but be
installed into the site-packages all extensions share, where an update takes effect only after a restart; here
its files stay in the extension's folder, removed and updated with it.
"""
import importlib.util
import os
import sys

NAME = "quadric_solver"


def folder():
    """The solver's folder inside the extension."""
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), NAME)


def load():
    """The extension's solver package, registered in sys.modules as NAME (once; again after unload)."""
    module = sys.modules.get(NAME)
    if module is not None and os.path.dirname(os.path.abspath(getattr(module, "__file__", None) or "")) == folder():
        return module
    unload()
    spec = importlib.util.spec_from_file_location(NAME, os.path.join(folder(), "__init__.py"),
                                                  submodule_search_locations=[folder()])
    module = importlib.util.module_from_spec(spec)
    sys.modules[NAME] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[NAME]
        raise
    return module


def unload():
    """Forget the solver package and its modules (those already imported keep working where referenced)."""
    for name in [n for n in sys.modules if n == NAME or n.startswith(NAME + ".")]:
        del sys.modules[name]
