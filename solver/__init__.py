"""Quadric Dynamics solver: rigid ellipsoids with frictional contact (numpy + numba only).

    import solver
    scene = solver.Scene()
    scene.add_plane()
    scene.add_ellipsoid((0.1, 0.1, 0.1), position=(0, 0, 0.5))
    sim = solver.Simulation(scene, dt=1 / 240)
    recording = sim.run(frames=48, fps=24, substeps=10)
"""
from . import runtime

runtime.configure()  # numba's cache folder and threading layer, before any kernel module is imported

from .recording import Recording  # noqa: E402
from .collision.convex_distance import Distance, distance  # noqa: E402
from .scene import Material, Scene  # noqa: E402
from .shapes import Box, Capsule, ConvexHull, Cylinder, Ellipsoid, MassProperties, Superellipsoid  # noqa: E402
from .simulation import Simulation, SimulationCancelled, SimulationDiverged, State  # noqa: E402
from .validate import SceneFileError  # noqa: E402

__all__ = ["Box", "Capsule", "ConvexHull", "Cylinder", "Distance", "Ellipsoid", "MassProperties", "Material", "Recording",
           "Scene", "SceneFileError", "Simulation", "SimulationCancelled", "SimulationDiverged", "State", "Superellipsoid",
           "distance"]
__version__ = "0.1.0"
