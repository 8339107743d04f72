# Quadric Dynamics: Blender extension entry point. Everything lives in addon/.
from .addon import register, unregister

__all__ = ["register", "unregister"]
