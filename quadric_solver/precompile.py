"""Compile the kernels of every kind of scene ahead of use, so that a first run finds them in numba's cache.

numba compiles a kernel for the argument types of its first call, and the
types depend on what a scene holds (ellipsoids only, other shapes and mesh
colliders, ropes, particle groups and their integrators). Each kind below is a
tiny scene of that kind run for one substep: that compiles, and caches, what
any scene of the kind needs. ``scripts/build_extension.py`` runs them to ship
a prebuilt cache in the extension; ``python -m quadric_solver compile`` runs them
before a batch of headless runs.

``CompileWatcher`` reports each kernel numba compiles (not those it loads from
the cache), for progress messages during a first run.

A prebuilt cache is only as good as the match between where it was made and
where it is read, so it carries a manifest (``MANIFEST``): the hash of the
solver's sources, the package name the solver was imported as, numba's and
Python's versions, the platform and the CPU target. ``prebuilt_problem`` says
why a manifest does not fit this process, or '' if it does; numba then still
checks each function's own source, byte code, signature and CPU target.
Kernels for the prebuilt cache are compiled for numba's ``generic`` CPU, so
that they run on any x86-64 machine; a process using them compiles what is
missing for the same target (``PREBUILT_CPU``).
"""
from __future__ import annotations

import importlib
import json
import os
import platform
import sys
import time

import numpy as np

MANIFEST = "manifest.json"
PREBUILT_CPU = "generic"  # numba's CPU name for kernels that run on any machine of the architecture

# Scene kinds: the parts each holds, in the order they are compiled (later kinds reuse earlier kinds' kernels).
# The kernels' argument types depend on which parts a scene has, not on how many of each.
KINDS = {
    "ellipsoids": ("ellipsoids",),
    "shapes": ("shapes",),
    "ropes": ("ellipsoids", "ropes"),
    "particles": ("particles",),
    "ellipsoids_particles": ("ellipsoids", "particles"),
    "ropes_particles": ("ellipsoids", "ropes", "particles"),
    "shapes_particles": ("shapes", "particles"),
    "mesh_particles": ("mesh", "particles"),
}
INTEGRATOR_KINDS = ("particles",)  # kinds compiled with every particle integrator, not just the default


def _add_ellipsoids(solver, scene):
    """Ellipsoids in a box container and a tube, one of them kinematic on a track."""
    scene.add_box_container(center=(0.0, 0.0, 0.5), half_extents=(1.0, 1.0, 0.5), name="box")
    scene.add_tube(center=(0.0, 0.0, 0.5), axis=(0.0, 0.0, 1.0), radius=0.9, length=1.0, name="tube")
    scene.add_ellipsoid((0.1, 0.08, 0.06), position=(0.0, 0.0, 0.2), name="pebble")
    moving = scene.add_ellipsoid((0.05, 0.05, 0.05), position=(-0.3, 0.0, 0.1), kinematic=True, name="pusher")
    scene.set_kinematic_track(moving, [0.0, 1.0], [[-0.3, 0.0, 0.1, 1.0, 0.0, 0.0, 0.0],
                                                   [0.3, 0.0, 0.1, 1.0, 0.0, 0.0, 0.0]])


def _add_shapes(solver, scene):
    """Every shape family beside a mesh collider (unless ropes share the scene), one of them kinematic."""
    scene.add_box_container(center=(0.0, 0.0, 1.0), half_extents=(3.0, 3.0, 1.0), name="box")
    shapes = (solver.Box((0.1, 0.1, 0.1)), solver.Cylinder(0.1, 0.1), solver.Capsule(0.05, 0.1),
              solver.Superellipsoid((0.1, 0.1, 0.1), (0.4, 0.4)), solver.Ellipsoid((0.1, 0.1, 0.1)),
              solver.ConvexHull([[0, 0, 0], [0.2, 0, 0], [0, 0.2, 0], [0, 0, 0.2]]))
    for k, shape in enumerate(shapes):
        scene.add_body(shape, position=(-1.5 + 0.5 * k, 0.0, 0.3), name=f"shape {k}")
    moving = scene.add_body(solver.Box((0.1, 0.1, 0.1)), position=(0.0, 1.0, 0.3), kinematic=True, name="pusher")
    scene.set_kinematic_track(moving, [0.0, 1.0], [[0.0, 1.0, 0.3, 1.0, 0.0, 0.0, 0.0],
                                                   [0.0, 0.5, 0.3, 1.0, 0.0, 0.0, 0.0]])


def _add_mesh(solver, scene):
    ramp = np.array([[1.0, -1.0, 0.0], [2.0, -1.0, 0.0], [2.0, 1.0, 0.3], [1.0, 1.0, 0.3]])
    scene.add_mesh_collider(ramp, [[0, 1, 2], [0, 2, 3]], name="ramp")


def _add_ropes(solver, scene):
    """A rope from a kinematic anchor to a body."""
    weight = scene.add_ellipsoid((0.05, 0.05, 0.05), position=(0.5, 0.0, 1.0), name="weight")
    anchor = scene.add_ellipsoid((0.02, 0.02, 0.02), position=(0.0, 0.0, 1.0), kinematic=True, name="anchor")
    scene.set_kinematic_track(anchor, [0.0, 1.0], [[0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0],
                                                   [0.0, 0.1, 1.0, 1.0, 0.0, 0.0, 0.0]])
    points = np.stack([np.linspace(0.02, 0.45, 8), np.zeros(8), np.ones(8)], axis=1)
    scene.add_rope(points, radius=0.01, attachments=[[0, anchor, [0.0, 0.0, 0.0]],
                                                     [7, weight, [-0.05, 0.0, 0.0]]], name="rope")


def _add_particles(solver, scene):
    """Colliding particles and a pinned mass-spring sheet under every force."""
    grid = np.stack(np.meshgrid(np.linspace(0, 0.2, 3), np.linspace(0, 0.2, 3), [1.5]), axis=-1).reshape(-1, 3)
    sand = scene.add_particles(grid, radius=0.01, particle_collisions=True, name="sand")
    edges = [[0, 1], [1, 2], [3, 4], [4, 5], [0, 3], [1, 4], [2, 5]]
    scene.add_mass_spring(grid[:6] + [0.0, 0.0, 0.3], edges, mass=0.1, stiffness=100.0, damping=0.1, bending=10.0,
                          pinned=[0], name="sheet")
    for force in (solver.Drag(0.1), solver.Wind((1.0, 0.0, 0.0), 1.0, 0.5),
                  solver.Vortex((0.0, 0.0, 0.0), (0.0, 0.0, 1.0), 1.0), solver.Turbulence(1.0, 0.5),
                  solver.Attractor((0.0, 0.0, 1.0), 1.0, 2.0), solver.Springs(sand, [[0, 1]], 10.0, 0.1)):
        scene.add_force(force)


def scene_of(parts, solver=None):
    """A tiny scene with the given parts (ellipsoids, shapes, mesh, ropes, particles) above a plane; shapes come
    with a mesh collider unless ropes share the scene (they do not touch meshes)."""
    if solver is None:
        solver = importlib.import_module(__package__)  # this package, whatever name it was imported as
    scene = solver.Scene()
    scene.add_plane(name="floor")
    for part in ("ellipsoids", "shapes", "ropes", "particles"):
        if part in parts:
            {"ellipsoids": _add_ellipsoids, "shapes": _add_shapes, "ropes": _add_ropes,
             "particles": _add_particles}[part](solver, scene)
    if "mesh" in parts or ("shapes" in parts and "ropes" not in parts):
        _add_mesh(solver, scene)
    return scene


def simulations(kind, solver=None):
    """The simulations that compile what scenes of ``kind`` need."""
    if solver is None:
        solver = importlib.import_module(__package__)  # this package, whatever name it was imported as
    from .particles.integrators import INTEGRATORS

    scene = scene_of(KINDS[kind], solver)
    integrators = INTEGRATORS if kind in INTEGRATOR_KINDS else ("symplectic_euler",)
    return [solver.Simulation(scene, integrator=name) for name in integrators]


class CompileWatcher:
    """Counts the kernels numba compiles while active (cache loads are not counted), calling
    ``on_kernel(count, name)`` as each compile starts. Use as a context manager.

    ``kernels`` lists (name, argument types, seconds spent in that kernel's own compile, callees' excluded).
    """

    def __init__(self, on_kernel=None):
        self.on_kernel = on_kernel
        self.count = 0
        self.current = ""
        self.seconds = 0.0
        self.kernels = []
        self._stack = []  # [name, args, started, seconds of nested compiles]
        self._listener = None

    def _start(self, event):
        dispatcher = event.data.get("dispatcher")
        function = getattr(dispatcher, "py_func", None)
        module = getattr(function, "__module__", "") or ""
        module = module[len(__package__) + 1:] if module.startswith(__package__ + ".") else module
        self.current = f"{module}.{getattr(function, '__qualname__', '?')}".lstrip(".")
        self.count += 1
        self._stack.append([self.current, str(event.data.get("args")), time.perf_counter(), 0.0])
        if self.on_kernel is not None:
            self.on_kernel(self.count, self.current)

    def _end(self, event):
        name, args, started, nested = self._stack.pop()
        spent = time.perf_counter() - started
        self.kernels.append((name, args, spent - nested))
        if self._stack:
            self._stack[-1][3] += spent
        else:
            self.seconds += spent

    def __enter__(self):
        from numba.core import event

        watcher = self

        class _Listener(event.Listener):
            def on_start(self, ev):
                watcher._start(ev)

            def on_end(self, ev):
                watcher._end(ev)

        self._listener = _Listener()
        event.register("numba:compile", self._listener)
        return self

    def __exit__(self, *exc):
        from numba.core import event

        event.unregister("numba:compile", self._listener)
        return False


def compile_kinds(kinds=tuple(KINDS), progress=None, kernels=None) -> dict:
    """Compile (or load from the cache) the kernels of each kind; returns {kind: kernels compiled}.

    progress(kind, count, name) is called as each kernel's compile starts; ``kernels``, a list, receives
    CompileWatcher.kernels' entries.
    """
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise ValueError(f"precompile: kinds must be among {', '.join(KINDS)}, got {', '.join(map(str, unknown))}")
    compiled = {}
    for kind in kinds:
        def report(count, name, kind=kind):
            if progress is not None:
                progress(kind, count, name)

        with CompileWatcher(report) as watcher:
            for sim in simulations(kind):
                sim.run(frames=2, fps=240.0, substeps=1)  # the first frame is the initial state: one step
        compiled[kind] = watcher.count
        if kernels is not None:
            kernels.extend(watcher.kernels)
    return compiled


def _numba_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("numba")
    except PackageNotFoundError:
        return ""


def platform_tag() -> str:
    """'linux-x86_64', 'windows-amd64', ...: where a compiled kernel can run."""
    return f"{sys.platform.rstrip('0123456789')}-{platform.machine().lower()}"


def this_process(package: str, source_hash: str) -> dict:
    """The manifest fields a cache made in this process has (the solver imported as ``package``)."""
    return dict(source_hash=source_hash, package=package, numba=_numba_version(),
                python=f"{sys.version_info[0]}.{sys.version_info[1]}", platform=platform_tag(), cpu=PREBUILT_CPU)


def write_manifest(folder: str, fields: dict, compiled: dict) -> None:
    with open(os.path.join(folder, MANIFEST), "w", encoding="utf-8") as handle:
        json.dump(dict(fields, kernels=compiled), handle, indent=1, sort_keys=True)


def read_manifest(folder: str) -> dict | None:
    """The prebuilt cache's manifest in ``folder``, or None where there is none or it is unreadable."""
    try:
        with open(os.path.join(folder, MANIFEST), encoding="utf-8") as handle:
            manifest = json.load(handle)
    except (OSError, ValueError):
        return None
    return manifest if isinstance(manifest, dict) else None


def prebuilt_problem(manifest: dict | None, here: dict) -> str:
    """Why a prebuilt cache with this manifest cannot serve a process with ``here`` (this_process), or ''."""
    if manifest is None:
        return "it has no readable manifest"
    for field in ("source_hash", "package", "numba", "python", "platform", "cpu"):
        if manifest.get(field) != here[field]:
            return f"it was made for {field} {manifest.get(field)!r}, this is {here[field]!r}"
    return ""
