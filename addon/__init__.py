"""Quadric Dynamics add-on: everything that touches bpy lives in this package.

The solver is imported lazily (addon/runtime.py) so that numba's cache folder
and threading layer are set before numba loads.
"""
from . import operators, particle_ops, preset_menus, properties, ui


def register():
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
