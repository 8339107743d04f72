# Quadric Dynamics: Blender extension entry point. Everything lives in addon/.
# The add-on (which imports bpy) is loaded when Blender registers the extension, not when the
# package is imported, so tools that import this folder as a package (pytest collecting the
# solver tests, plain Python using the solver) work without bpy.


def register():
    from .addon import register as register_addon

    register_addon()


def unregister():
    from .addon import unregister as unregister_addon

    unregister_addon()


__all__ = ["register", "unregister"]
