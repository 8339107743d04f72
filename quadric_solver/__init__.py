"""Quadric Dynamics solver: rigid ellipsoids with frictional contact, Cosserat ropes, particles and mass-spring
bodies (numpy + numba only).

    import quadric_solver as solver
    scene = solver.Scene()
    scene.add_plane()
    scene.add_ellipsoid((0.1, 0.1, 0.1), position=(0, 0, 0.5))
    sim = solver.Simulation(scene, dt=1 / 240)
    recording = sim.run(frames=48, fps=24, substeps=10)

Importing the package loads no numba: the public names load on first use, and
math3d.py (imported by every kernel module) first sets numba's cache folder and
threading layer (runtime.py). So the add-on can import quadric_solver.rotations before
it has pointed NUMBA_CACHE_DIR at its user folder.
"""
import importlib

_PUBLIC = {
    "Material": "scene", "Scene": "scene", "Recording": "recording", "SceneFileError": "validate",
    "Simulation": "simulation", "SimulationCancelled": "simulation", "SimulationDiverged": "simulation",
    "State": "simulation",
    "Drag": "particles.forces", "Springs": "particles.forces", "Wind": "particles.forces",
    "Vortex": "particles.forces", "Turbulence": "particles.forces", "Attractor": "particles.forces",
    "Box": "shapes", "BumpyEllipsoid": "shapes", "Capsule": "shapes", "ConvexHull": "shapes", "Cylinder": "shapes",
    "Ellipsoid": "shapes",
    "MassProperties": "shapes", "Superellipsoid": "shapes",
    "Distance": "collision.convex_distance", "distance": "collision.convex_distance",
}
__all__ = sorted(_PUBLIC)
__version__ = "0.1.0"


def __getattr__(name):
    if name not in _PUBLIC:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_PUBLIC[name]}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_PUBLIC))
