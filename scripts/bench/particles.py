"""Particles benchmark: N particles under gravity, linear drag and wind, landing on a plane; ours against Blender's
own particle system, baked headless with the bpy module in the same run.

Run from the repository root (so that ``import solver`` resolves):

    .venv/bin/python -m scripts.bench.particles                       # 100,000 particles, 100 frames, both
    .venv/bin/python -m scripts.bench.particles --n 10000 --engines ours
    .venv/bin/python -m scripts.bench.particles --integrators symplectic_euler midpoint rk4
    .venv/bin/python -m scripts.bench.particles --n 1000000 --engines ours --integrators symplectic_euler \
        --bake /tmp/million                                             # a million, baked to a PC2 cache

Both get the same scene: N particles of 1 kg and radius 0.01 m, at rest at frame 1, spread uniformly over a
2 x 2 m square 2 m above a ground plane; gravity 9.81 m/s^2 down, a linear drag of 0.5 N s/m per particle
(Blender: a Drag force field, linear 0.5, quadratic 0), a wind of 2 N per particle along +x (Blender: a Wind
force field of strength 2 pointing along +x), and the plane with friction 0.5 and no bounce (Blender: a
Collision modifier with friction 0.5 and damping 1). They fall for about 0.7 s and slide downwind. Each engine
takes one step per frame at 24 frames per second (Blender: timestep 1/24 s, no subframes); Blender integrates
with its default, midpoint, we with each integrator asked for (default: symplectic Euler, the Simulation's
default, and midpoint, Blender's).

``--case cloth``: issue 22's mass-spring sheet draped over a sphere onto the ground, against Blender's cloth on
the same grid. A square sheet of CLOTH_SIDE x CLOTH_SIDE vertices (default 64 x 64), 2 m wide, 0.3 kg per
vertex (Blender's default vertex mass), starts flat 1.2 m up over a fixed sphere of radius 0.5 m standing on
the ground, and falls for 48 frames. Blender: a Cloth modifier at its defaults (quality 5 steps per frame), the
sphere and the ground with Collision modifiers, bake of the cloth's point cache. Ours: add_mass_spring with the
grid's edges and the quads' diagonals as springs (CLOTH_STIFFNESS N/m, damping CLOTH_DAMPING N s/m, bending
springs CLOTH_BENDING N/m), vertex radius 0.01 m, the Simulation's defaults (symplectic Euler, 10 substeps a
frame), a fixed ellipsoid for the sphere and a plane. Blender's cloth and our springs are different models, so
the cases agree in scene, not in stiffness: the lines report where the sheet ended (its lowest and mean height,
its nearest approach to the sphere's centre) beside the speed.

Timing: Blender's bpy.ops.ptcache.bake of frames 1 to 100 (the emission at frame 1 and 99 steps), against our
Simulation.run of 100 frames (frame 0 and 99 steps), after a warm-up that loads the compiled kernels from
numba's cache. Both keep every frame in memory (Blender's point cache, our Recording). frames_per_s counts the
99 steps. One JSON line per engine and integrator, then one ratio line per integrator of ours.

--bake DIR also writes our recording as the add-on bakes it (addon/point_cache.py's PC2 writer, float32) and
reports its time and size; peak_rss_mb is the process's peak resident memory so far (Linux), which tells
whether a run of that size fits in memory.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

SIDE = 2.0  # m, the square the particles start on
HEIGHT = 2.0  # m above the ground
RADIUS = 0.01  # m
MASS = 1.0  # kg
DRAG = 0.5  # N s/m
WIND = 2.0  # N along +x
FRICTION = 0.5
FPS = 24
CLOTH_SIDE = 64        # vertices along each side of the sheet
CLOTH_WIDTH = 2.0      # m
CLOTH_HEIGHT = 1.2     # m, where the sheet starts
CLOTH_VERTEX_MASS = 0.3  # kg, Blender's default
CLOTH_STIFFNESS = 2000.0  # N/m per edge spring
CLOTH_DAMPING = 2.0    # N s/m per edge spring
CLOTH_BENDING = 200.0  # N/m per spring across second neighbours
SPHERE_RADIUS = 0.5
CLOTH_FRAMES = 48


def start_positions(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    positions = np.empty((n, 3))
    positions[:, :2] = rng.uniform(-0.5 * SIDE, 0.5 * SIDE, size=(n, 2))
    positions[:, 2] = HEIGHT
    return positions


def summary(positions: np.ndarray) -> dict:
    """Where the particles ended: their mean position and the fraction on the ground."""
    return dict(final_mean_x=float(positions[:, 0].mean()), final_mean_z=float(positions[:, 2].mean()),
                final_on_ground=float(np.mean(positions[:, 2] < 0.05)))


# ------------------------------------------------------------------------------------------------------ ours

def build_ours(n: int, seed: int):
    import quadric_solver as solver

    scene = solver.Scene()
    scene.add_plane(material=solver.Material(friction=FRICTION, restitution=0.0), name="Ground")
    scene.add_particles(start_positions(n, seed), mass=MASS, radius=RADIUS,
                        material=solver.Material(friction=FRICTION, restitution=0.0), name="Particles")
    scene.add_force(solver.Drag(DRAG))
    scene.add_force(solver.Wind((1.0, 0.0, 0.0), WIND))
    return scene


def _peak_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def _bake_ours(recording, folder: str) -> dict:
    """Write the recording's particles as the add-on's bake does; its time and size."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "point_cache", os.path.join(os.path.dirname(__file__), "..", "..", "addon", "point_cache.py"))
    point_cache = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(point_cache)  # numpy only: no bpy needed
    path = os.path.join(folder, "particles.pc2")
    start = time.perf_counter()
    point_cache.write_pc2(path, recording.particles(0), start_frame=1.0)
    seconds = time.perf_counter() - start
    return dict(bake_s=seconds, bake_mb=os.path.getsize(path) / 2 ** 20)


def run_ours(n: int, frames: int, seed: int, integrator: str, substeps: int, bake: str | None = None) -> dict:
    import quadric_solver as solver

    warm = solver.Simulation(build_ours(10, seed), integrator=integrator)
    start = time.perf_counter()
    warm.run(frames=2, fps=FPS, substeps=substeps)  # loads (or compiles) the kernels
    warm_up = time.perf_counter() - start
    sim = solver.Simulation(build_ours(n, seed), integrator=integrator)
    start = time.perf_counter()
    recording = sim.run(frames=frames, fps=FPS, substeps=substeps)
    wall = time.perf_counter() - start
    baked = _bake_ours(recording, bake) if bake else {}
    return dict(engine="ours", case="particles", n=n, integrator=integrator, substeps=substeps,
                frames=frames, frames_per_s=(frames - 1) / wall, wall_s=wall,
                particles_phase_s=float(recording.stats["phase_seconds"][:, -1].sum()), warm_up_s=warm_up,
                threading_layer=sim.stats["threading_layer"], **summary(recording.particles(0)[-1]), **baked,
                peak_rss_mb=_peak_rss_mb())


def cloth_grid(side: int):
    """Vertices (side^2, 3) of the flat sheet, row by row, its edges (grid lines) and the quads (for Blender)."""
    xs = np.linspace(-0.5 * CLOTH_WIDTH, 0.5 * CLOTH_WIDTH, side)
    x, y = np.meshgrid(xs, xs)
    vertices = np.column_stack([x.ravel(), y.ravel(), np.full(side * side, CLOTH_HEIGHT)])
    index = np.arange(side * side).reshape(side, side)
    edges = np.concatenate([np.column_stack([index[:, :-1].ravel(), index[:, 1:].ravel()]),
                            np.column_stack([index[:-1, :].ravel(), index[1:, :].ravel()])])
    quads = np.column_stack([index[:-1, :-1].ravel(), index[:-1, 1:].ravel(), index[1:, 1:].ravel(),
                             index[1:, :-1].ravel()])
    return vertices, edges, quads


def cloth_summary(positions: np.ndarray) -> dict:
    """Where the sheet ended: lowest and mean height, nearest approach to the sphere's centre."""
    to_centre = np.linalg.norm(positions - (0.0, 0.0, SPHERE_RADIUS), axis=1)
    return dict(final_min_z=float(positions[:, 2].min()), final_mean_z=float(positions[:, 2].mean()),
                final_min_to_sphere_centre=float(to_centre.min()), finite=bool(np.all(np.isfinite(positions))))


def build_cloth_ours(side: int):
    import quadric_solver as solver

    vertices, edges, quads = cloth_grid(side)
    shear = np.concatenate([quads[:, [0, 2]], quads[:, [1, 3]]])  # the quads' diagonals, as Blender's shear springs
    scene = solver.Scene()
    scene.add_plane(name="Ground")
    scene.add_ellipsoid((SPHERE_RADIUS,) * 3, position=(0.0, 0.0, SPHERE_RADIUS), fixed=True, name="Sphere")
    scene.add_mass_spring(vertices, np.concatenate([edges, shear]), mass=[CLOTH_VERTEX_MASS] * len(vertices),
                          stiffness=CLOTH_STIFFNESS, damping=CLOTH_DAMPING, bending=CLOTH_BENDING, radius=0.01,
                          name="Sheet")
    return scene


def run_cloth_ours(side: int, frames: int, substeps: int) -> dict:
    import quadric_solver as solver

    warm = solver.Simulation(build_cloth_ours(4))
    start = time.perf_counter()
    warm.run(frames=2, fps=FPS, substeps=substeps)  # loads (or compiles) the kernels
    warm_up = time.perf_counter() - start
    sim = solver.Simulation(build_cloth_ours(side))
    start = time.perf_counter()
    recording = sim.run(frames=frames, fps=FPS, substeps=substeps)
    wall = time.perf_counter() - start
    return dict(engine="ours", case="cloth", n=side * side, integrator=sim.integrator, substeps=substeps,
                frames=frames, frames_per_s=(frames - 1) / wall, wall_s=wall,
                particles_phase_s=float(recording.stats["phase_seconds"][:, -1].sum()), warm_up_s=warm_up,
                threading_layer=sim.stats["threading_layer"], **cloth_summary(recording.particles(0)[-1]))


# --------------------------------------------------------------------------------------------------- Blender

class _Quiet:
    """Silence file descriptor 1 (the bake prints a line per frame from C) while inside."""

    def __enter__(self):
        sys.stdout.flush()
        self.saved = os.dup(1)
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)

    def __exit__(self, *exc):
        sys.stdout.flush()
        os.dup2(self.saved, 1)
        os.close(self.saved)


def _ground(scene):
    """A 100 m square at z = 0 with a Collision modifier."""
    import bpy

    mesh = bpy.data.meshes.new("Ground")
    mesh.from_pydata([(-50, -50, 0), (50, -50, 0), (50, 50, 0), (-50, 50, 0)], [], [(0, 1, 2, 3)])
    ground = bpy.data.objects.new("Ground", mesh)
    scene.collection.objects.link(ground)
    ground.modifiers.new("Collision", 'COLLISION')
    return ground


def _bake_blender(scene, cache, frames) -> float:
    """Seconds to bake a point cache over frames 1 to ``frames`` (its output silenced)."""
    import bpy

    cache.frame_start, cache.frame_end = 1, frames
    bpy.context.view_layer.update()
    with _Quiet():
        start = time.perf_counter()
        with bpy.context.temp_override(scene=scene, point_cache=cache):
            bpy.ops.ptcache.bake(bake=True)
        return time.perf_counter() - start


def run_blender(n: int, frames: int, seed: int) -> dict:
    import bpy

    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    scene.render.fps = FPS
    half = 0.5 * SIDE
    mesh = bpy.data.meshes.new("Emitter")
    mesh.from_pydata([(-half, -half, HEIGHT), (half, -half, HEIGHT), (half, half, HEIGHT), (-half, half, HEIGHT)],
                     [], [(0, 1, 2, 3)])
    emitter = bpy.data.objects.new("Emitter", mesh)
    scene.collection.objects.link(emitter)
    emitter.modifiers.new("Particles", 'PARTICLE_SYSTEM')
    system = emitter.particle_systems[0]
    system.seed = seed
    settings = system.settings
    settings.count = n
    settings.frame_start = settings.frame_end = 1
    settings.lifetime = 10 * frames
    settings.emit_from = 'FACE'
    settings.distribution = 'RAND'
    settings.normal_factor = 0.0
    settings.physics_type = 'NEWTON'
    settings.mass = MASS
    settings.particle_size = RADIUS
    settings.timestep = 1.0 / FPS
    settings.subframes = 0
    settings.use_adaptive_subframes = False
    ground = _ground(scene)
    ground.collision.friction_factor = FRICTION
    ground.collision.damping_factor = 1.0
    bpy.ops.object.effector_add(type='DRAG', location=(0.0, 0.0, 0.0))
    drag = bpy.context.active_object.field
    drag.linear_drag, drag.quadratic_drag = DRAG, 0.0
    bpy.ops.object.effector_add(type='WIND', location=(0.0, 0.0, 0.0), rotation=(0.0, 0.5 * np.pi, 0.0))
    bpy.context.active_object.field.strength = WIND  # along the empty's z axis, turned to +x
    cache = system.point_cache
    wall = _bake_blender(scene, cache, frames)
    scene.frame_set(frames)
    evaluated = emitter.evaluated_get(bpy.context.evaluated_depsgraph_get()).particle_systems[0]
    positions = np.zeros(3 * len(evaluated.particles))
    evaluated.particles.foreach_get("location", positions)
    return dict(engine="blender", case="particles", n=n, integrator=settings.integrator.lower(), substeps=1,
                frames=frames, frames_per_s=(frames - 1) / wall, wall_s=wall, blender=bpy.app.version_string,
                baked=bool(cache.is_baked), **summary(positions.reshape(-1, 3)))


def run_cloth_blender(side: int, frames: int) -> dict:
    import bpy

    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    scene.render.fps = FPS
    vertices, _, quads = cloth_grid(side)
    mesh = bpy.data.meshes.new("Sheet")
    mesh.from_pydata(vertices.tolist(), [], quads.tolist())
    sheet = bpy.data.objects.new("Sheet", mesh)
    scene.collection.objects.link(sheet)
    cloth = sheet.modifiers.new("Cloth", 'CLOTH')
    cloth.settings.mass = CLOTH_VERTEX_MASS
    bpy.ops.mesh.primitive_uv_sphere_add(radius=SPHERE_RADIUS, location=(0.0, 0.0, SPHERE_RADIUS))
    bpy.context.active_object.modifiers.new("Collision", 'COLLISION')
    _ground(scene)
    cache = cloth.point_cache
    wall = _bake_blender(scene, cache, frames)
    scene.frame_set(frames)
    evaluated = sheet.evaluated_get(bpy.context.evaluated_depsgraph_get()).to_mesh()
    positions = np.zeros(3 * len(evaluated.vertices))
    evaluated.vertices.foreach_get("co", positions)
    return dict(engine="blender", case="cloth", n=side * side, integrator="cloth", substeps=cloth.settings.quality,
                frames=frames, frames_per_s=(frames - 1) / wall, wall_s=wall, blender=bpy.app.version_string,
                baked=bool(cache.is_baked), **cloth_summary(positions.reshape(-1, 3)))


def _emit(obj: dict) -> None:
    print(json.dumps(obj), flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="particles (default 100,000)")
    parser.add_argument("--frames", type=int, default=None,
                        help="frames, the first one the start (default 100; cloth: 48)")
    parser.add_argument("--engines", default="ours,blender", help="comma list of ours,blender (default both)")
    parser.add_argument("--integrators", nargs="+", default=["symplectic_euler", "midpoint"],
                        help="ours: the integrators to run (default symplectic_euler midpoint)")
    parser.add_argument("--substeps", type=int, default=1, help="ours: substeps per frame (default 1, as Blender)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--bake", metavar="DIR", help="ours: also bake the recording to a PC2 cache in DIR")
    parser.add_argument("--case", default="particles", choices=("particles", "cloth"),
                        help="particles (default), or cloth: a sheet draped over a sphere (--side, 10 substeps)")
    parser.add_argument("--side", type=int, default=CLOTH_SIDE, help="cloth: vertices along each side (default 64)")
    args = parser.parse_args(argv)
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    if set(engines) - {"ours", "blender"}:
        parser.error(f"unknown engine(s): {sorted(set(engines) - {'ours', 'blender'})}")
    if args.case == "cloth":
        frames = args.frames or CLOTH_FRAMES
        mine = run_cloth_ours(args.side, frames, 10) if "ours" in engines else None
        if mine:
            _emit(mine)
        theirs = run_cloth_blender(args.side, frames) if "blender" in engines else None
        if theirs:
            _emit(theirs)
        if mine and theirs:
            _emit(dict(ratio="ours/blender", case="cloth", n=args.side * args.side, integrator=mine["integrator"],
                       substeps=10, frames_per_s=mine["frames_per_s"] / theirs["frames_per_s"]))
        return
    frames = args.frames or 100
    ours = {}
    if "ours" in engines:
        for integrator in args.integrators:
            ours[integrator] = run_ours(args.n, frames, args.seed, integrator, args.substeps, args.bake)
            _emit(ours[integrator])
    blender = run_blender(args.n, frames, args.seed) if "blender" in engines else None
    if blender:
        _emit(blender)
        for integrator, result in ours.items():
            _emit(dict(ratio="ours/blender", n=args.n, integrator=integrator, substeps=args.substeps,
                       frames_per_s=result["frames_per_s"] / blender["frames_per_s"]))


if __name__ == "__main__":
    main()
