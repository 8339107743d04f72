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
    import solver

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


def _bake(recording, folder: str) -> dict:
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
    import solver

    warm = solver.Simulation(build_ours(10, seed), integrator=integrator)
    start = time.perf_counter()
    warm.run(frames=2, fps=FPS, substeps=substeps)  # loads (or compiles) the kernels
    warm_up = time.perf_counter() - start
    sim = solver.Simulation(build_ours(n, seed), integrator=integrator)
    start = time.perf_counter()
    recording = sim.run(frames=frames, fps=FPS, substeps=substeps)
    wall = time.perf_counter() - start
    baked = _bake(recording, bake) if bake else {}
    return dict(engine="ours", case="particles", n=n, integrator=integrator, substeps=substeps,
                frames=frames, frames_per_s=(frames - 1) / wall, wall_s=wall,
                particles_phase_s=float(recording.stats["phase_seconds"][:, -1].sum()), warm_up_s=warm_up,
                threading_layer=sim.stats["threading_layer"], **summary(recording.particles(0)[-1]), **baked,
                peak_rss_mb=_peak_rss_mb())


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
    ground_mesh = bpy.data.meshes.new("Ground")
    ground_mesh.from_pydata([(-50, -50, 0), (50, -50, 0), (50, 50, 0), (-50, 50, 0)], [], [(0, 1, 2, 3)])
    ground = bpy.data.objects.new("Ground", ground_mesh)
    scene.collection.objects.link(ground)
    ground.modifiers.new("Collision", 'COLLISION')
    ground.collision.friction_factor = FRICTION
    ground.collision.damping_factor = 1.0
    bpy.ops.object.effector_add(type='DRAG', location=(0.0, 0.0, 0.0))
    drag = bpy.context.active_object.field
    drag.linear_drag, drag.quadratic_drag = DRAG, 0.0
    bpy.ops.object.effector_add(type='WIND', location=(0.0, 0.0, 0.0), rotation=(0.0, 0.5 * np.pi, 0.0))
    bpy.context.active_object.field.strength = WIND  # along the empty's z axis, turned to +x
    cache = system.point_cache
    cache.frame_start, cache.frame_end = 1, frames
    bpy.context.view_layer.update()
    with _Quiet():
        start = time.perf_counter()
        with bpy.context.temp_override(scene=scene, point_cache=cache):
            bpy.ops.ptcache.bake(bake=True)
        wall = time.perf_counter() - start
    scene.frame_set(frames)
    evaluated = emitter.evaluated_get(bpy.context.evaluated_depsgraph_get()).particle_systems[0]
    positions = np.zeros(3 * len(evaluated.particles))
    evaluated.particles.foreach_get("location", positions)
    return dict(engine="blender", case="particles", n=n, integrator=settings.integrator.lower(), substeps=1,
                frames=frames, frames_per_s=(frames - 1) / wall, wall_s=wall, blender=bpy.app.version_string,
                baked=bool(cache.is_baked), **summary(positions.reshape(-1, 3)))


def _emit(obj: dict) -> None:
    print(json.dumps(obj), flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="particles (default 100,000)")
    parser.add_argument("--frames", type=int, default=100, help="frames, the first one the start (default 100)")
    parser.add_argument("--engines", default="ours,blender", help="comma list of ours,blender (default both)")
    parser.add_argument("--integrators", nargs="+", default=["symplectic_euler", "midpoint"],
                        help="ours: the integrators to run (default symplectic_euler midpoint)")
    parser.add_argument("--substeps", type=int, default=1, help="ours: substeps per frame (default 1, as Blender)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--bake", metavar="DIR", help="ours: also bake the recording to a PC2 cache in DIR")
    args = parser.parse_args(argv)
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    if set(engines) - {"ours", "blender"}:
        parser.error(f"unknown engine(s): {sorted(set(engines) - {'ours', 'blender'})}")
    ours = {}
    if "ours" in engines:
        for integrator in args.integrators:
            ours[integrator] = run_ours(args.n, args.frames, args.seed, integrator, args.substeps, args.bake)
            _emit(ours[integrator])
    blender = run_blender(args.n, args.frames, args.seed) if "blender" in engines else None
    if blender:
        _emit(blender)
        for integrator, result in ours.items():
            _emit(dict(ratio="ours/blender", n=args.n, integrator=integrator, substeps=args.substeps,
                       frames_per_s=result["frames_per_s"] / blender["frames_per_s"]))


if __name__ == "__main__":
    main()
