"""The add-on's plain-numpy modules (shapes.py, fitting.py, overlaps.py), loaded by path: importing the addon
package would import bpy. They sit in a stand-in package (addon/ without its __init__.py), so their relative
imports of each other work."""
import importlib
import sys
import types
from pathlib import Path

ADDON = Path(__file__).resolve().parents[2] / "addon"
PACKAGE = "quadric_addon_numpy"


def load(name):
    if PACKAGE not in sys.modules:
        package = types.ModuleType(PACKAGE)
        package.__path__ = [str(ADDON)]
        sys.modules[PACKAGE] = package
    return importlib.import_module(f"{PACKAGE}.{name}")
