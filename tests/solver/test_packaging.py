"""pip installs the whole solver: every folder of quadric_solver/ with Python files is a package pyproject.toml
includes."""
import os
import tomllib

from setuptools import find_packages

from tests.helpers import ROOT


def test_pyproject_packages_cover_every_solver_subpackage():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    include = config["tool"]["setuptools"]["packages"]["find"]["include"]
    packaged = set(find_packages(where=str(ROOT), include=include))
    folders = {os.path.relpath(folder, ROOT).replace(os.sep, ".")
               for folder, dirs, files in os.walk(ROOT / "quadric_solver")
               if "__pycache__" not in folder and any(name.endswith(".py") for name in files)}
    assert {"quadric_solver", "quadric_solver.collision", "quadric_solver.contact", "quadric_solver.ropes"} <= folders
    assert folders == packaged
