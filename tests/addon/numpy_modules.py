"""The add-on's plain-numpy modules (fitting.py, overlaps.py), loaded by path: importing the addon package
would import bpy."""
import importlib.util
from pathlib import Path

ADDON = Path(__file__).resolve().parents[2] / "addon"


def load(name):
    spec = importlib.util.spec_from_file_location(f"quadric_addon_{name}", ADDON / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
