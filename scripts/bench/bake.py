"""Add-on benchmarks under the bpy module; prints one JSON line per figure.

    .venv/bin/python -m scripts.bench.bake                 # all cases, from the repository root
    .venv/bin/python -m scripts.bench.bake --cases body_write rope_write
    .venv/bin/python -m scripts.bench.bake --stall-frames 48 --stall-bodies 1000

Cases (each runs in its own process, with HOME and BLENDER_USER_RESOURCES in a
scratch folder, the add-on loaded from this checkout by scripts/bake.py's loader):
  body_write   writing the bake of 1,000 bodies x 250 frames (synthetic poses)  goal <= 2 s
  rope_write   writing the bake of 20 ropes x 50 bones x 250 frames
  ui_stall     longest modal-timer tick on the main thread while a 1,000-body
               simulation runs in the worker thread (goal < 50 ms), plus the
               longest oversleep of a 100 ms timer (GIL contention)
  preview_stall  the same with the live preview on, for 300 and 2,000 bodies
               (--tick-bodies) bound to objects: the longest tick (and of it, the main
               thread's own CPU time, its wait in the run queue, where Linux says, and
               Python's garbage collections), the
               median tick that showed part of a frame, the depsgraph evaluation after it
               (what a viewport redraw waits for: the first builds the depsgraph of the
               new scene, so the later ones apart), the restore when the run ends, and
               the kept run's write beside a saved file, a tick's budget at a time
  instance_stall  Bake To Instances after a run as the modal operator does it, a
               timer tick's budget at a time, for 300 and 2,000 bodies (--tick-bodies,
               --frames): the longest tick, the depsgraph evaluation after each, and
               the same bake at once
  keyframe_stall  the same for Bake To Keyframes (the default): the longest tick, and the
               depsgraph evaluations after a tick over 50 ms (Blender rebuilding its relations)
  start_stall  Simulate's start on the main thread in a new process: part by part at once (Check
               Scene, the conversion, the job, the live preview's setup) and whether numba was
               loaded on the main thread, then a timer tick's budget at a time (the longest tick,
               and the longest less Python's garbage collections in it), for --tick-bodies
               pebbles and --animated-bodies keyed kinematic ones
  operator_stall  the other operators a user clicks, for --tick-bodies pebbles on a floor, every
               tenth moved into its neighbour: Check Scene and Resolve Overlaps at once and clicked (the
               longest tick), Copy from Active onto all, Clear Bake of a keyframe and an instanced bake
               (and the depsgraph evaluation after), Export USD (Blender's exporter), and Add Quadric
               Body on as many linked icospheres at once and clicked (the fits a tick at a time, the
               longest tick, then the bodies made in one step)
  first_click  simulate click -> first simulated frame, with a cold numba cache
               (fresh folder) and then warm (same folder, new process)
  first_click_shipped
               the same, as a new user gets it: the built Linux zip (with its
               prebuilt cache) installed into a fresh user folder, then the
               default cube on the default plane simulated
  particle_write  the main-thread work around a simulation of 100,000 particles
               made from a mesh's vertices: reading them, Check Scene, writing
               their point cache for 250 frames (synthetic positions) and making
               the objects that play it, and one frame change of the playback
  instances    Bake To Instances for 2,000 and 100,000 bodies (--instance-bodies): the bake, Blender's
               first depsgraph evaluation after it, and playback (frame_set through every frame: the
               depsgraph evaluation a viewport redraw waits for, without the drawing), against the
               keyframe bake of the same poses where it finishes in reasonable time
               (--keyframe-bodies-max); ratios keyframes / instances
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# ------------------------------------------------------------------ inside Blender (child)
def load_addon():
    import importlib

    import bpy

    from scripts.bake import load_source_checkout

    load_source_checkout()
    assert hasattr(bpy.types.Object, "quadric")
    return lambda name: importlib.import_module(f"quadric_dynamics.addon.{name}")


def fresh_scene():
    import bpy

    bpy.ops.wm.read_factory_settings(use_empty=True)
    return bpy.context.scene


def random_poses(rng, frames, n):
    import numpy as np

    pos = np.cumsum(rng.normal(scale=0.01, size=(frames, n, 3)), axis=0) + rng.uniform(-5, 5, size=(1, n, 3))
    q = rng.normal(size=(frames, n, 4))
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    return np.concatenate([pos, q], axis=-1)


def child_body_write(args):
    import bpy
    import numpy as np

    mod = load_addon()
    bake, convert = mod("bake"), mod("convert")
    scene = fresh_scene()
    mesh = bpy.data.meshes.new("pebble")
    mesh.from_pydata([(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)], [], [(0, 1, 2), (0, 1, 3), (0, 2, 3), (1, 2, 3)])
    rng = np.random.default_rng(0)
    bindings = []
    for i in range(args.bodies):
        obj = bpy.data.objects.new(f"Body.{i:04d}", mesh)
        scene.collection.objects.link(obj)
        q = rng.normal(size=4)
        bindings.append(convert.BodyBinding(obj.name, i, rng.normal(scale=0.1, size=3), q / np.linalg.norm(q)))
    poses = random_poses(rng, args.frames, args.bodies)

    class Rec:
        body_poses = poses

    conv = convert.Conversion(None, bindings, [], 1, args.frames, 24.0, 10, 0)
    t0 = time.perf_counter()
    bake.bake_recording(bpy.context, conv, Rec)
    seconds = time.perf_counter() - t0
    keys = sum(len(fc.keyframe_points) for o in scene.objects for fc in mod("blender_compat").fcurves_of(o))
    return dict(case="body_bake_write", bodies=args.bodies, frames=args.frames, keyframes=keys,
                seconds=round(seconds, 3), goal_seconds=2.0)


def child_rope_write(args):
    import bpy
    import numpy as np

    mod = load_addon()
    bake, rope_rig = mod("bake"), mod("rope_rig")
    fresh_scene()
    rng = np.random.default_rng(1)
    rigs = []
    t_rig = time.perf_counter()
    for r in range(args.ropes):
        nodes = np.stack([np.linspace(0, 2.5, args.bones + 1), np.full(args.bones + 1, 0.3 * r),
                          np.full(args.bones + 1, 1.0)], axis=1)
        arm, _ = rope_rig.build_rig(bpy.context, f"Rope.{r:02d}", nodes, 0.02)
        rigs.append((arm, nodes))
    t_rig = time.perf_counter() - t_rig
    seconds = 0.0
    for arm, rest in rigs:
        wiggle = np.cumsum(rng.normal(scale=0.002, size=(args.frames, len(rest), 3)), axis=0)
        nodes = rest[None] + wiggle
        names = [b.name for b in mod("convert").rope_bones(arm)]
        t0 = time.perf_counter()
        bake.bake_rope(arm, names, 1 + np.arange(args.frames), nodes)
        seconds += time.perf_counter() - t0
    return dict(case="rope_bake_write", ropes=args.ropes, bones=args.bones, frames=args.frames,
                seconds=round(seconds, 3), rig_build_seconds=round(t_rig, 3))


def pile_conversion(mod, n_bodies, frames, substeps):
    """A 1,000-body pile (ellipsoids raining into an open box), built directly as a solver Scene."""
    import numpy as np

    runtime, convert = mod("runtime"), mod("convert")
    solver = runtime.get_solver()
    scene = solver.Scene()
    side = int(np.ceil(np.sqrt(n_bodies / 10)))
    scene.add_box_container(center=(0, 0, 1.0), half_extents=(0.13 * side, 0.13 * side, 1.0), name="Box")
    rng = np.random.default_rng(2)
    for i in range(n_bodies):
        layer, cell = divmod(i, side * side)
        x, y = divmod(cell, side)
        pos = (0.26 * (x - side / 2 + 0.5), 0.26 * (y - side / 2 + 0.5), 0.2 + 0.26 * layer)
        q = rng.normal(size=4)
        scene.add_ellipsoid(semi_axes=tuple(rng.uniform(0.06, 0.11, size=3)), position=pos,
                            orientation=tuple(q / np.linalg.norm(q)), name=f"Pebble.{i:04d}")
    return convert.Conversion(scene, [], [], 1, frames, 24.0, substeps, 0), solver


def child_ui_stall(args):
    import bpy

    mod = load_addon()
    ops, job_mod = mod("operators"), mod("job")
    fresh_scene()
    conv, solver = pile_conversion(mod, args.stall_bodies, args.stall_frames, args.substeps)
    # Compile outside the measurement: this case is about a running simulation, not first use.
    # In a worker thread, as the operator runs it: OpenMP keeps a thread team per calling thread,
    # and a second team idling beside the worker's makes it stop spinning (measured 2x slower).
    warm = job_mod.SimulationJob(solver, pile_conversion(mod, 8, 2, 1)[0])
    warm.start()
    warm.wait()
    job = job_mod.SimulationJob(solver, conv)
    context = bpy.context
    ticks, late = [], []
    job.start()
    interval = 0.1
    next_tick = time.perf_counter() + interval
    while True:
        time.sleep(max(0.0, next_tick - time.perf_counter()))
        woke = time.perf_counter()
        late.append(woke - next_tick)
        running = ops.timer_tick(context, job)
        ticks.append(time.perf_counter() - woke)
        next_tick = woke + interval
        if not running:
            break
    job.wait()
    return dict(case="ui_stall", bodies=args.stall_bodies, frames=args.stall_frames, substeps=args.substeps,
                state=job.state, simulate_seconds=round(job.seconds, 2), threading_layer=_threading_layer(),
                ticks=len(ticks),
                max_tick_ms=round(1e3 * max(ticks), 2), max_timer_late_ms=round(1e3 * max(late), 2),
                goal_ms=50)


class ThreadTimes:
    """Wall time of a span on this thread, split into its own CPU time (time.thread_time) and its wait in the run
    queue (Linux's /proc/thread-self/schedstat; elsewhere None): the rest is time blocked (the GIL, a lock,
    I/O). Also the time Python's garbage collector ran meanwhile (in any thread): a full collection takes tens of
    milliseconds wherever it falls, in proportion to every object alive, not to the span's own work."""
    _gc = dict(seconds=0.0, began=0.0)

    @classmethod
    def _collecting(cls, phase, info):
        if phase == "start":
            cls._gc["began"] = time.perf_counter()
        else:
            cls._gc["seconds"] += time.perf_counter() - cls._gc["began"]

    def __enter__(self):
        import gc

        if ThreadTimes._collecting not in gc.callbacks:
            gc.callbacks.append(ThreadTimes._collecting)
        self.gc = self._gc["seconds"]
        self.wall, self.cpu, self.runqueue = time.perf_counter(), time.thread_time(), self._run_delay()
        return self

    def __exit__(self, *exc):
        wall, cpu, runqueue = time.perf_counter(), time.thread_time(), self._run_delay()
        self.wall, self.cpu = wall - self.wall, cpu - self.cpu
        self.runqueue = None if runqueue is None else runqueue - self.runqueue
        self.gc = self._gc["seconds"] - self.gc

    @staticmethod
    def _run_delay():
        try:
            with open("/proc/thread-self/schedstat") as handle:
                return int(handle.read().split()[1]) * 1e-9
        except (OSError, ValueError, IndexError):
            return None

    def row(self, prefix):
        ms = (lambda v: None if v is None else round(1e3 * v, 2))
        return {f"{prefix}_ms": ms(self.wall), f"{prefix}_cpu_ms": ms(self.cpu),
                f"{prefix}_runqueue_ms": ms(self.runqueue), f"{prefix}_gc_ms": ms(self.gc)}


def child_preview_stall(args):
    """ui_stall with the live preview on: ``bodies`` objects bound to the pile's bodies, each timer tick showing
    the newest finished frame on them, and the depsgraph evaluation a viewport redraw then waits for. The worker
    keeps snapshots for Bake from Current Frame, as Simulate's does; then that kept run is written as a save does
    (the longest tick of it)."""
    import bpy

    mod = load_addon()
    ops, job_mod, preview, convert = mod("operators"), mod("job"), mod("preview"), mod("convert")
    scene = fresh_scene()
    pile, solver = pile_conversion(mod, args.bodies, args.stall_frames, args.substeps)
    conv = convert.Conversion(pile.scene, pebble_objects(mod, scene, args.bodies), [], 1, args.stall_frames,
                              24.0, args.substeps, 0)
    warm = job_mod.SimulationJob(solver, pile_conversion(mod, 8, 2, 1)[0])  # compile outside the measurement
    warm.start()
    warm.wait()
    job = job_mod.SimulationJob(solver, conv, resume_points=mod("resume").ResumePoints(conv))  # as Simulate
    context = bpy.context
    ticks, shown_ticks, evals = [], [], []
    job.start()
    live = preview.start(context, conv, job)
    mod("ticks").hold_from_collector()  # as the operator does once the run has begun
    interval = 0.1
    next_tick = time.perf_counter() + interval
    while True:
        time.sleep(max(0.0, next_tick - time.perf_counter()))
        woke = time.perf_counter()
        writes = live.writes
        with ThreadTimes() as tick:
            running = ops.timer_tick(context, job)
        ticks.append(tick)
        if running and live.writes != writes:  # it wrote (part of) a frame
            shown_ticks.append(tick.wall)
            t0 = time.perf_counter()
            context.evaluated_depsgraph_get()
            evals.append(time.perf_counter() - t0)
        next_tick = woke + interval
        if not running:
            break
    t0 = time.perf_counter()
    preview.end()
    restore = time.perf_counter() - t0
    mod("ticks").release_to_collector()  # as the operator's clean-up
    job.wait()
    longest = max(ticks, key=lambda t: t.wall)
    # the kept run written beside a saved file, as the save_post handler's timer does it, a tick's budget at a time
    points = job.resume_points
    points.recording = job.recording
    folder = tempfile.mkdtemp(prefix="quadric-resume-")
    _, write_tick, write_ticks = ticked(mod("ticks"), mod("resume_files").write_steps(folder, points))
    written_mb = sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder)) / 2**20
    shutil.rmtree(folder, ignore_errors=True)
    return dict(case="preview_stall", bodies=args.bodies, frames=args.stall_frames, substeps=args.substeps,
                kept_snapshots=len(points.snapshots), kept_run_mb=round(written_mb, 1),
                kept_run_write_ticks=write_ticks, kept_run_write_max_tick_ms=round(1e3 * write_tick.wall, 2),
                kept_run_write_max_tick_cpu_ms=round(1e3 * write_tick.cpu, 2),
                kept_run_write_max_tick_gc_ms=round(1e3 * write_tick.gc, 2),
                state=job.state, simulate_seconds=round(job.seconds, 2), ticks=len(ticks),
                frames_shown=live.frames_completed, budget_ms=tick_budget_ms(mod),
                **longest.row("max_tick"),
                median_frame_tick_ms=(round(1e3 * sorted(shown_ticks)[len(shown_ticks) // 2], 2) if shown_ticks
                                      else None),
                max_eval_ms=round(1e3 * max(evals), 2) if evals else None,
                first_eval_ms=round(1e3 * evals[0], 2) if evals else None,
                max_later_eval_ms=round(1e3 * max(evals[1:]), 2) if len(evals) > 1 else None,
                median_eval_ms=round(1e3 * sorted(evals)[len(evals) // 2], 2) if evals else None,
                restore_ms=round(1e3 * restore, 2), goal_ms=50, load=round(os.getloadavg()[0], 1))


def tick_budget_ms(mod):
    return round(1e3 * mod("ticks").TICK_BUDGET, 1)


def child_instance_stall(args, output='INSTANCES', case="instance_stall"):
    """The instanced bake after a run as the modal operator makes it, a timer tick's budget at a time (a Stepper
    over bake.bake_recording_steps), with the depsgraph evaluated after each tick as a viewport redraw would;
    then the same bake at once, as before it was cut into ticks."""
    import bpy

    mod = load_addon()
    bake, ticks_mod = mod("bake"), mod("ticks")
    n, frames = args.bodies, args.frames
    conv, Rec = pebble_run(mod, n, frames)
    context = bpy.context
    context.scene.quadric.bake_output = output
    context.view_layer.update()
    stepper = ticks_mod.Stepper(bake.bake_recording_steps(context, conv, Rec))
    ticks, evals = [], []
    started = time.perf_counter()
    while True:
        with ThreadTimes() as tick:
            more = stepper.advance()
        ticks.append(tick)
        t0 = time.perf_counter()
        context.evaluated_depsgraph_get()
        evals.append(time.perf_counter() - t0)
        if not more:
            break
    ticked_seconds = time.perf_counter() - started
    longest = max(range(len(ticks)), key=lambda k: ticks[k].wall)
    bpy.ops.quadric.clear_bake()
    context.view_layer.update()
    t0 = time.perf_counter()
    bake.bake_recording(context, conv, Rec)
    t1 = time.perf_counter()
    context.evaluated_depsgraph_get()
    t2 = time.perf_counter()
    ms = (lambda v: round(1e3 * v, 2))
    return dict(case=case, bodies=n, frames=frames, ticks=len(ticks), budget_ms=tick_budget_ms(mod),
                **ticks[longest].row("max_tick"), eval_after_max_tick_ms=ms(evals[longest]),
                median_tick_ms=ms(sorted(t.wall for t in ticks)[len(ticks) // 2]), max_eval_ms=ms(max(evals)),
                evals_over_goal_ms=[ms(e) for e in evals if e > 0.05],
                ticked_seconds=round(ticked_seconds, 3), at_once_ms=ms(t1 - t0), at_once_eval_ms=ms(t2 - t1),
                goal_ms=50, load=round(os.getloadavg()[0], 1))


def child_keyframe_stall(args):
    """instance_stall for the keyframe bake (Bake To: Keyframes)."""
    return child_instance_stall(args, 'KEYFRAMES', "keyframe_stall")


def pebble_pile_scene(args):
    """A new scene of ``args.bodies`` ellipsoid pebbles (random shapes and turns, a grid 0.25 m apart) on a floor,
    and ``args.animated_bodies`` keyed kinematic ones beside them, over ``args.stall_frames`` frames."""
    import bpy
    import numpy as np

    scene = fresh_scene()
    scene.frame_start, scene.frame_end = 1, args.stall_frames
    floor = bpy.data.objects.new("Floor", bpy.data.meshes.new("Floor"))
    floor.data.from_pydata([(-50, -50, 0), (50, -50, 0), (50, 50, 0), (-50, 50, 0)], [], [(0, 1, 2, 3)])
    scene.collection.objects.link(floor)
    floor.quadric.role, floor.quadric.collider_kind = 'COLLIDER', 'PLANE'
    rng = np.random.default_rng(11)
    side = int(np.ceil(args.bodies ** (1 / 3)))
    mesh = bpy.data.meshes.new("Pebble")
    mesh.from_pydata([(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)], [], [(0, 1, 2), (0, 1, 3), (0, 2, 3), (1, 2, 3)])
    for k in range(args.bodies):
        obj = bpy.data.objects.new(f"Pebble.{k:05d}", mesh)
        scene.collection.objects.link(obj)
        obj.location = (k % side * 0.25, k // side % side * 0.25, 0.2 + k // side ** 2 * 0.25)
        obj.rotation_euler = tuple(rng.uniform(0.0, 2.0 * np.pi, 3))
        obj.quadric.role = 'BODY'
        obj.quadric.semi_axes = tuple(rng.uniform(0.03, 0.1, 3))
        obj.quadric.fitted_volume = 4.0 / 3.0 * np.pi * float(np.prod(obj.quadric.semi_axes))
    for k in range(args.animated_bodies):  # kinematic pushers in rows of 50 beside the pile, keyed over the range
        obj = bpy.data.objects.new(f"Pusher.{k:04d}", mesh)
        scene.collection.objects.link(obj)
        row, column = divmod(k, 50)
        for frame, shift, turn in ((1, 0.0, 0.0), (args.stall_frames, -2.0, 1.0)):
            obj.location, obj.rotation_euler = (-1.0 - 0.3 * row + shift, 0.3 * column, 0.2), (0.0, 0.0, turn)
            obj.keyframe_insert("location", frame=frame)
            obj.keyframe_insert("rotation_euler", frame=frame)
        obj.quadric.role, obj.quadric.body_type = 'BODY', 'ANIMATED'
        obj.quadric.semi_axes = (0.1, 0.1, 0.1)
        obj.quadric.fitted_volume = 4.0 / 3.0 * np.pi * 0.1 ** 3
    scene.frame_set(1)
    bpy.context.view_layer.update()
    return scene


def child_start_stall(args):
    """Simulate's start on the main thread, part by part, in a new process (the first Simulate of a Blender
    session): Check Scene, the conversion, making the job and the live preview's setup, for ``bodies`` pebbles on a
    floor; and whether numba was imported on the main thread by then."""
    import sys

    import bpy

    mod = load_addon()
    ops, preflight, convert, preview = mod("operators"), mod("preflight"), mod("convert"), mod("preview")
    scene = pebble_pile_scene(args)
    context = bpy.context
    parts = {}

    def timed(name, fn, *a):
        with ThreadTimes() as t:
            value = fn(*a)
        parts[f"{name}_ms"] = round(1e3 * t.wall, 2)
        return value

    problems = timed("check", preflight.check, context)
    timed("store", preflight.store, scene, problems)
    solver = timed("get_solver", mod("runtime").get_solver, False)
    numba_before = "numba" in sys.modules
    conv = timed("convert", convert.build_scene, solver, context)
    numba_after_convert = "numba" in sys.modules
    job = timed("job", lambda: mod("job").SimulationJob(solver, conv, resume_points=mod("resume").ResumePoints(conv)))
    timed("preview_start", preview.start, context, conv, job)
    preview.end()
    with ThreadTimes() as whole:
        ops.prepare_job(context)
    stepper, ticks = ops.StartingJob(ops.prepare_steps(context)).stepper, []
    while True:  # as the modal operator's timer runs it
        with ThreadTimes() as tick:
            more = stepper.advance()
        ticks.append(tick)
        if not more:
            break
    mod("ticks").release_to_collector()  # as the operator does when the run ends
    longest = max(ticks, key=lambda t: t.wall)
    return dict(case="start_stall", bodies=args.bodies, animated=args.animated_bodies, frames=args.stall_frames,
                errors=len(preflight.errors(problems)), ticks=len(ticks), **longest.row("max_tick"),
                max_tick_less_gc_ms=round(1e3 * max(t.wall - t.gc for t in ticks), 2), **parts,
                at_once_ms=round(1e3 * whole.wall, 2),
                numba_on_main_after_get_solver=numba_before, numba_on_main_after_convert=numba_after_convert,
                goal_ms=50, load=round(os.getloadavg()[0], 1))


def ticked(ticks_mod, steps, last=lambda result: None):
    """Run steps as a clicked operator's modal timer does, ``last`` (its report) in the final tick; (the steps'
    result, the longest tick's ThreadTimes, the number of ticks)."""
    stepper, longest, count = ticks_mod.Stepper(steps), None, 0
    while True:
        with ThreadTimes() as tick:
            more = stepper.advance()
            if not more:
                last(stepper.result)
        count += 1
        longest = tick if longest is None or tick.wall > longest.wall else longest
        if not more:
            return stepper.result, longest, count


def child_operator_stall(args):
    """The other operators a user clicks, on a pile of ``bodies`` pebbles with every tenth moved into its
    neighbour: Check Scene and Resolve Overlaps at once (as a script runs them) and clicked (a timer tick's budget
    at a time: the longest tick); Copy from Active onto every pebble, at once and clicked; Clear Bake of a keyframe
    bake and of an instanced bake of random poses over ``stall_frames`` frames, and the depsgraph evaluation after
    each (what a redraw then waits for); Export USD of the keyframe bake (Blender's own exporter, run at once); and
    Add Quadric Body on as many linked icospheres, at once and clicked (the fits a tick at a time, then the bodies
    made in one step)."""
    import bpy
    import numpy as np
    from mathutils import Vector

    mod = load_addon()
    preflight, ticks_mod, bake, convert, ops = (mod(name) for name in ("preflight", "ticks", "bake", "convert",
                                                                       "operators"))
    scene = pebble_pile_scene(args)
    context = bpy.context
    pebbles = sorted((o for o in scene.objects if o.name.startswith("Pebble.")), key=lambda o: o.name)
    for a, b in zip(pebbles[::10], pebbles[1::10]):  # grid neighbours, 0.25 m apart: now 0.1 m, most overlap
        b.location = a.location + Vector((0.1, 0.0, 0.0))
    placed = [tuple(o.location) for o in pebbles]

    def put_back():
        for obj, location in zip(pebbles, placed):
            obj.location = location
        context.view_layer.update()

    put_back()
    ms = (lambda v: round(1e3 * v, 2))
    common = dict(bodies=args.bodies, frames=args.stall_frames)
    rows = []
    with ThreadTimes() as once:
        problems = preflight.check(context)
        preflight.store(scene, problems)
    problems, longest, count = ticked(ticks_mod, preflight.check_steps(context),
                                      lambda found: preflight.store(scene, found))
    rows.append(dict(case="check_scene", **common, ticks=count, budget_ms=tick_budget_ms(mod),
                     **longest.row("max_tick"), at_once_ms=ms(once.wall),
                     overlaps=sum(p.kind == 'OVERLAP' for p in problems)))
    with ThreadTimes() as once:
        moved = preflight.resolve(context)[0]
    put_back()
    (again, _, after), longest, count = ticked(ticks_mod, preflight.resolve_steps(context),
                                               lambda result: preflight.store(scene, result[2]))
    rows.append(dict(case="resolve_overlaps", **common, ticks=count, budget_ms=tick_budget_ms(mod),
                     **longest.row("max_tick"), at_once_ms=ms(once.wall), moved=len(moved),
                     moved_when_clicked=len(again), left_after=len(after)))
    put_back()
    for obj in pebbles:
        obj.select_set(True)
    context.view_layer.objects.active = pebbles[0]
    with ThreadTimes() as once:
        assert bpy.ops.quadric.copy_from_active() == {'FINISHED'}
    quiet = type("Quiet", (), {"report": staticmethod(lambda *a: None)})
    _, longest, count = ticked(ticks_mod, ops.copy_settings_steps(quiet, context, pebbles[0], pebbles[1:]))
    rows.append(dict(case="copy_from_active", **common, ticks=count, budget_ms=tick_budget_ms(mod),
                     **longest.row("max_tick"), at_once_ms=ms(once.wall)))
    rng = np.random.default_rng(4)
    bindings = []
    for k, obj in enumerate(pebbles):
        q = rng.normal(size=4)
        bindings.append(convert.BodyBinding(obj.name, k, rng.normal(scale=0.01, size=3), q / np.linalg.norm(q)))
    conv = convert.Conversion(None, bindings, [], 1, args.stall_frames, 24.0, 10, 0)

    class Rec:
        body_poses = random_poses(rng, args.stall_frames, len(pebbles))

    for output in ('KEYFRAMES', 'INSTANCES'):
        scene.quadric.bake_output = output
        bake.bake_recording(context, conv, Rec)
        context.evaluated_depsgraph_get()
        if output == 'KEYFRAMES':
            folder = tempfile.mkdtemp(prefix="quadric-usd-")
            with ThreadTimes() as once:
                assert bpy.ops.quadric.export_usd(filepath=os.path.join(folder, "pile.usdc")) == {'FINISHED'}
            shutil.rmtree(folder, ignore_errors=True)
            rows.append(dict(case="export_usd keyframes (Blender's exporter)", **common, at_once_ms=ms(once.wall)))
        with ThreadTimes() as once:
            assert bpy.ops.quadric.clear_bake() == {'FINISHED'}
        with ThreadTimes() as evaluation:
            context.evaluated_depsgraph_get()
        rows.append(dict(case=f"clear_bake {output.lower()}", **common, at_once_ms=ms(once.wall),
                         eval_after_ms=ms(evaluation.wall)))
    for clicked in (False, True):  # Add Quadric Body on as many linked icospheres, far above the pile
        bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=2, radius=0.05, location=(0.0, 0.0, 50.0))
        spheres = [context.object]
        for k in range(1, len(pebbles)):
            spheres.append(spheres[0].copy())
            scene.collection.objects.link(spheres[-1])
            spheres[-1].location = (0.2 * (k % 40), 0.2 * (k // 40), 50.0)
        context.evaluated_depsgraph_get()  # as the viewport's redraw after making them would
        if not clicked:
            for obj in scene.objects:
                obj.select_set(obj in spheres)
            with ThreadTimes() as once:
                assert bpy.ops.quadric.add_body() == {'FINISHED'}
            continue
        (fits, _), longest, count = ticked(ticks_mod, ops.fit_steps(context, spheres, 'AUTO'))
        with ThreadTimes() as making:
            ops.make_bodies(quiet, fits, 'DYNAMIC', 'AUTO')
        rows.append(dict(case="add_body", **common, ticks=count + 1, budget_ms=tick_budget_ms(mod),
                         **longest.row("max_tick"), make_ms=ms(making.wall), at_once_ms=ms(once.wall)))
    for row in rows:
        row.update(goal_ms=50, load=round(os.getloadavg()[0], 1))
    return rows


def _threading_layer():
    import numba

    return numba.threading_layer()


def child_first_click(args):
    import bpy

    t_start = time.perf_counter()
    mod = load_addon()
    ops = mod("operators")
    scene = fresh_scene()
    scene.frame_start, scene.frame_end = 1, 10
    bpy.ops.mesh.primitive_plane_add(size=4)
    bpy.ops.quadric.add_collider()
    bpy.ops.mesh.primitive_ico_sphere_add(radius=0.2, location=(0, 0, 1))
    bpy.ops.quadric.add_body()
    t_click = time.perf_counter()
    first = {}
    # Frame 1 of the recording is the initial state; done == 2 is the first simulated frame.
    job = ops.prepare_job(bpy.context, on_progress=lambda d, t: d >= 2 and first.setdefault("t", time.perf_counter()))
    job.start()
    job.wait()
    t_first = first.get("t", time.perf_counter()) - t_click
    return dict(case="first_click", cache=args.cache_state, seconds_to_first_frame=round(t_first, 2),
                seconds_whole_run=round(time.perf_counter() - t_click, 2), state=job.state,
                process_setup_seconds=round(t_click - t_start, 2))


def pebble_objects(mod, scene, n):
    """``n`` objects sharing one small mesh, with their bindings (random origin -> body offsets)."""
    import bpy
    import numpy as np

    convert = mod("convert")
    mesh = bpy.data.meshes.new("pebble")
    mesh.from_pydata([(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)], [], [(0, 1, 2), (0, 1, 3), (0, 2, 3), (1, 2, 3)])
    rng = np.random.default_rng(3)
    bindings = []
    for i in range(n):
        obj = bpy.data.objects.new(f"Pebble.{i:06d}", mesh)
        obj.scale = (0.05, 0.05, 0.05)
        scene.collection.objects.link(obj)
        q = rng.normal(size=4)
        bindings.append(convert.BodyBinding(obj.name, i, rng.normal(scale=0.01, size=3), q / np.linalg.norm(q)))
    return bindings


def pebble_run(mod, n, frames):
    """A new scene of ``n`` pebbles over ``frames`` frames and a Recording of random poses for them:
    (Conversion, Recording)."""
    import numpy as np

    scene = fresh_scene()
    scene.frame_start, scene.frame_end = 1, frames
    bindings = pebble_objects(mod, scene, n)
    poses = random_poses(np.random.default_rng(4), frames, n)

    class Rec:
        body_poses = poses

    return mod("convert").Conversion(None, bindings, [], 1, frames, 24.0, 10, 0), Rec


def timed_bake(mod, context, conv, rec, output, frames):
    """(bake seconds, first evaluation seconds, playback frames per second, objects added) of one bake of
    ``output``, cleared again after."""
    import bpy

    bake = mod("bake")
    context.scene.quadric.bake_output = output
    context.view_layer.update()
    objects = len(bpy.data.objects)
    t0 = time.perf_counter()
    bake.bake_recording(context, conv, rec)
    t1 = time.perf_counter()
    context.evaluated_depsgraph_get()
    t2 = time.perf_counter()
    for f in range(1, frames + 1):
        context.scene.frame_set(f)
    t3 = time.perf_counter()
    added = len(bpy.data.objects) - objects
    bpy.ops.quadric.clear_bake()
    context.view_layer.update()
    return t1 - t0, t2 - t1, frames / (t3 - t2), added


def child_instances(args):
    import bpy

    mod = load_addon()
    n, frames = args.bodies, args.frames
    conv, Rec = pebble_run(mod, n, frames)
    context = bpy.context
    bake_s, eval_s, fps, added = timed_bake(mod, context, conv, Rec, 'INSTANCES', frames)
    rows = [dict(case="instance_bake", n=n, frames=frames, bake_seconds=round(bake_s, 3),
                 first_eval_seconds=round(eval_s, 3), playback_fps=round(fps, 1),
                 cache_mb=round(frames * 3 * n * 12 / 2**20, 1), objects_added=added)]
    if n <= args.keyframe_bodies_max:
        key_bake, key_eval, key_fps, _ = timed_bake(mod, context, conv, Rec, 'KEYFRAMES', frames)
        rows.append(dict(case="keyframe_bake", n=n, frames=frames, bake_seconds=round(key_bake, 3),
                         first_eval_seconds=round(key_eval, 3), playback_fps=round(key_fps, 1)))
        rows.append(dict(case="keyframes / instances", n=n, frames=frames, ratio=round(key_bake / bake_s, 2),
                         playback_ratio=round(fps / key_fps, 2)))
    return rows


def child_first_click_shipped(args):
    import importlib

    import bpy

    t_start = time.perf_counter()
    result = bpy.ops.extensions.package_install_files(filepath=args.zip, repo="user_default", enable_on_install=True)
    assert result == {'FINISHED'} and hasattr(bpy.types.Object, "quadric"), result
    package = "bl_ext.user_default.quadric_dynamics"
    scene = fresh_scene()  # factory settings: the extension is enabled again below, as the tests do
    importlib.import_module("addon_utils").enable(package, default_set=True)
    ops = importlib.import_module(f"{package}.addon.operators")
    runtime = importlib.import_module(f"{package}.addon.runtime")
    scene.frame_start, scene.frame_end = 1, 24
    bpy.ops.mesh.primitive_plane_add()
    bpy.ops.quadric.add_collider()
    bpy.ops.mesh.primitive_cube_add(location=(0, 0, 1))
    bpy.ops.quadric.add_body()
    t_click = time.perf_counter()
    assert bpy.ops.quadric.simulate() == {'FINISHED'}, scene.quadric.status
    job = ops.last_job
    return dict(case="first_click_shipped", cache="shipped", seconds_to_first_frame=round(job.first_frame_seconds, 2),
                seconds_whole_run=round(time.perf_counter() - t_click, 2), state=job.state,
                kernels_compiled=job.kernels_compiled, prebuilt=runtime.prebuilt_note,
                install_seconds=round(t_click - t_start, 2))



def child_particle_write(args):
    import bpy
    import numpy as np

    mod = load_addon()
    convert, particle_bake, particle_groups = mod("convert"), mod("particle_bake"), mod("particle_groups")
    scene = fresh_scene()
    n, frames = args.particles, args.frames
    rng = np.random.default_rng(2)
    start = rng.uniform(-1.0, 1.0, size=(n, 3)) + (0.0, 0.0, 2.0)
    mesh = bpy.data.meshes.new("Sand")
    mesh.vertices.add(n)
    mesh.vertices.foreach_set("co", start.astype(np.float32).ravel())
    obj = bpy.data.objects.new("Sand", mesh)
    scene.collection.objects.link(obj)
    obj.quadric.role = 'PARTICLES'
    timings = {}
    t0 = time.perf_counter()
    spec = particle_groups.read_group(obj, bpy.context.evaluated_depsgraph_get(), scene, scene.frame_current)
    timings["read_seconds"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    mod("preflight").check(bpy.context)
    timings["check_scene_seconds"] = time.perf_counter() - t0
    fall = 0.5 * 9.81 * (np.arange(frames) / 24.0) ** 2
    positions = start[None] - fall[:, None, None] * (0.0, 0.0, 1.0)

    class Rec:
        @staticmethod
        def particles(group):
            return positions

    conv = convert.Conversion(None, [], [], 1, frames, 24.0, 10, 0,
                              groups=[convert.GroupBinding(obj.name, 0, 'PARTICLES', None, spec.radii)])
    t0 = time.perf_counter()
    written = particle_bake.write_caches(scene, conv, Rec)
    particle_bake.commit_caches(written)
    timings["write_seconds"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    particle_bake.attach_caches(conv, Rec, written)
    timings["attach_seconds"] = time.perf_counter() - t0
    bpy.context.view_layer.update()
    t0 = time.perf_counter()
    scene.frame_set(frames // 2)
    timings["frame_change_seconds"] = time.perf_counter() - t0
    size = os.path.getsize(bpy.path.abspath(written[0][1]))
    particle_bake.clear(obj)
    return dict(case="particle_bake_write", particles=n, frames=frames, cache_megabytes=round(size / 2 ** 20, 1),
                **{k: round(v, 3) for k, v in timings.items()}, goal_seconds=0.05)



CHILDREN = dict(body_write=child_body_write, rope_write=child_rope_write, ui_stall=child_ui_stall,
                preview_stall=child_preview_stall, instance_stall=child_instance_stall,
                keyframe_stall=child_keyframe_stall, start_stall=child_start_stall,
                operator_stall=child_operator_stall,
                first_click=child_first_click, first_click_shipped=child_first_click_shipped,
                particle_write=child_particle_write, instances=child_instances)


# --------------------------------------------------------------------------- orchestration
def run_child(case, args, user_dir, extra=()):
    """Run one case in its own process; print its JSON lines (one per figure) and return the last."""
    env = dict(os.environ)
    env["HOME"] = os.path.join(user_dir, "home")
    env["BLENDER_USER_RESOURCES"] = os.path.join(user_dir, "resources")
    env.pop("NUMBA_CACHE_DIR", None)
    os.makedirs(env["HOME"], exist_ok=True)
    cmd = [sys.executable, "-m", "scripts.bench.bake", "--child", case, *args.passthrough, *extra]
    proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        print(json.dumps(dict(case=case, error=proc.stderr[-2000:])), flush=True)
        return None
    for line in lines:
        print(line, flush=True)
    return json.loads(lines[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", nargs="+", default=["body_write", "rope_write", "ui_stall", "preview_stall",
                                                   "instance_stall", "keyframe_stall", "start_stall", "operator_stall",
                                                   "first_click",
                                                   "first_click_shipped", "particle_write", "instances"],
                    choices=sorted(CHILDREN))
    ap.add_argument("--bodies", type=int, default=1000)
    ap.add_argument("--frames", type=int, default=250)
    ap.add_argument("--ropes", type=int, default=20)
    ap.add_argument("--bones", type=int, default=50)
    ap.add_argument("--stall-bodies", type=int, default=1000)
    ap.add_argument("--stall-frames", type=int, default=96)
    ap.add_argument("--substeps", type=int, default=10)
    ap.add_argument("--tick-bodies", "--preview-bodies", type=int, nargs="+", default=[300, 2000],
                    help="preview_stall, instance_stall, keyframe_stall, start_stall and operator_stall: the body "
                         "counts")
    ap.add_argument("--animated-bodies", type=int, default=0,
                    help="start_stall: animated (kinematic) bodies keyed beside the pile, sampled every frame")
    ap.add_argument("--instance-bodies", type=int, nargs="+", default=[2000, 100000])
    ap.add_argument("--instance-frames", type=int, default=250)
    ap.add_argument("--keyframe-bodies-max", type=int, default=20000,
                    help="instances: also bake keyframes for body counts up to this")
    ap.add_argument("--particles", type=int, default=100_000)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--cache-state", default="", help=argparse.SUPPRESS)
    ap.add_argument("--zip", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        result = CHILDREN[args.child](args)
        for row in result if isinstance(result, list) else [result]:
            print(json.dumps(row), flush=True)
        return 0
    args.passthrough = [f"--bodies={args.bodies}", f"--frames={args.frames}", f"--ropes={args.ropes}",
                        f"--bones={args.bones}", f"--stall-bodies={args.stall_bodies}",
                        f"--stall-frames={args.stall_frames}", f"--substeps={args.substeps}",
                        f"--particles={args.particles}", f"--animated-bodies={args.animated_bodies}"]
    scratch = tempfile.mkdtemp(prefix="quadric-bench-")
    try:
        warm_dir = os.path.join(scratch, "warm")
        for case in args.cases:
            if case in ("preview_stall", "instance_stall", "keyframe_stall", "start_stall", "operator_stall"):
                for n in args.tick_bodies:
                    run_child(case, args, warm_dir, [f"--bodies={n}"])
                continue
            if case == "instances":
                for n in args.instance_bodies:
                    run_child(case, args, warm_dir, [f"--bodies={n}", f"--frames={args.instance_frames}",
                                                        f"--keyframe-bodies-max={args.keyframe_bodies_max}"])
                continue
            if case == "first_click":
                cold_dir = os.path.join(scratch, "cold")
                run_child(case, args, cold_dir, ["--cache-state=cold"])
                run_child(case, args, cold_dir, ["--cache-state=warm"])
            elif case == "first_click_shipped":
                dist = os.path.join(scratch, "dist")
                subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "build_extension.py"), "--platforms",
                                "linux-x64", "--output", dist], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
                zips = [os.path.join(dist, name) for name in os.listdir(dist) if name.endswith(".zip")]
                run_child(case, args, os.path.join(scratch, "shipped"), [f"--zip={zips[0]}"])
            else:
                run_child(case, args, warm_dir)  # ui_stall compiles once here; later cases reuse it
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
