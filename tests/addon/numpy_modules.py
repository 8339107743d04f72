"""The add-on's plain-numpy modules (shapes.py, fitting.py, overlaps.py), loaded by path: importing the addon
package would import bpy. They sit in a stand-in package (addon/ without its __init__.py) inside a stand-in of
the extension's package (the repository root), so their relative imports of each other work; the solver's numpy
modules (``quadric_solver.mesh``) are this checkout's."""
import importlib
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "quadric_numpy"


def load(name):
    if PACKAGE not in sys.modules:
        for package_name, path in ((PACKAGE, ROOT), (f"{PACKAGE}.addon", ROOT / "addon")):
            package = types.ModuleType(package_name)
            package.__path__ = [str(path)]
            sys.modules[package_name] = package
    return importlib.import_module(f"{PACKAGE}.addon.{name}")
