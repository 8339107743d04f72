"""Quadric Dynamics add-on: everything that touches bpy lives in this package.

The solver is imported lazily (addon/runtime.py) so that numba's cache folder
and threading layer are set before numba loads; its package, shipped inside the
extension, is registered as the top-level ``quadric_solver`` first
(solver_package.py).
"""
from . import solver_package

solver_package.load()  # before the modules below import the solver

from . import operators, particle_ops, preset_menus, properties, ui  # noqa: E402


def register():
    solver_package.load()  # again where an earlier unregister forgot it
    properties.register()
    operators.register()
    particle_ops.register()
    preset_menus.register()
    ui.register()


def unregister():
    ui.unregister()
    preset_menus.unregister()
    particle_ops.unregister()
    operators.unregister()
    properties.unregister()
    solver_package.unload()
