"""A simulation run that can happen in a worker thread (kernels are nogil) or synchronously.

The modal operator polls `poll()` from a timer on the main thread; scripts and
`blender -b` use `run_sync()`. Either way nothing in Blender changes here: the
caller bakes `recording` on the main thread once `state == 'DONE'`.

A run goes through phases: STARTING (loading the solver's kernels), COMPILING
(numba compiling a kernel that is not in the cache: minutes on first use
where no prebuilt cache fits) and SIMULATING. A compile cannot be
interrupted, so a job cancelled while compiling lets it finish in the
background (numba keeps the result in its cache for the next run) and stops
before the first frame; the operator does not wait for it.
"""
import math
import threading
import time
import traceback

import numpy as np

from quadric_solver.precompile import CompileWatcher
from .point_cache import local_positions
from .resume import joined
from .resume_files import StoredRunError, loaded, resolved


def seconds_left(done, total, first_frame_done, first_frame_at, now):
    """Estimated seconds until the last frame, from the frame rate measured since the first simulated frame (the
    frames before it include loading and compiling); None until a second frame has been timed."""
    if first_frame_at is None or done <= first_frame_done or now <= first_frame_at:
        return None
    return (total - done) * (now - first_frame_at) / (done - first_frame_done)


class FinishedFrames:
    """The frames a run has finished, for the live preview (addon/preview.py): body poses, rope nodes and
    segments, and each particle group's or soft body's points as its display plays them.

    The worker copies the simulation's state into frame ``count`` as each frame ends, then counts it: the main
    thread reads only frames below ``count``, which are never written again, so neither side waits for the
    other. Particle positions can be many (a million particles are 12 MB a frame), so they are kept as float32
    in the axes their display plays them (world axes for particles, a soft body's object axes:
    point_cache.local_positions, as its bake writes them), every ``particle_stride`` frames within
    PARTICLE_BUDGET bytes; the newest frame is kept besides in a buffer that the worker fills under a lock and
    the main thread only tries to take (`particles`), so a preview follows the run even when frames between
    are not kept.
    """

    PARTICLE_BUDGET = 256 * 2**20  # bytes of particle positions kept for scrubbing

    def __init__(self, frames, n_bodies, rope_nodes, groups=(), group_sizes=()):
        self.body_poses = np.zeros((frames, n_bodies, 7))
        self.rope_nodes = [np.zeros((frames, n, 3)) for n in rope_nodes]
        self.rope_segments = [np.zeros((frames, n - 1, 4)) for n in rope_nodes]
        self.groups = list(groups)  # convert.GroupBinding, whose ``index`` is the solver's group
        points = sum(group_sizes)
        self.particle_stride = max(1, math.ceil(frames * points * 12 / self.PARTICLE_BUDGET))
        kept = -(-frames // self.particle_stride)
        self.particle_frames = [np.zeros((kept, n, 3), dtype=np.float32) for n in group_sizes]
        self._newest = [np.zeros((n, 3), dtype=np.float32) for n in group_sizes]
        self._newest_frame = -1
        self._newest_lock = threading.Lock()
        self.count = 0

    def capture(self, state):
        """Append the state at the end of a frame (in the worker)."""
        k = self.count
        self.body_poses[k, :, :3] = state.position
        self.body_poses[k, :, 3:] = state.orientation
        for r in range(len(self.rope_nodes)):
            self.rope_nodes[r][k] = state.rope_nodes(r)
            self.rope_segments[r][k] = state.rope_segments(r)
        if self.groups:
            shown = [local_positions(b, state.particle_positions(b.index), k).astype(np.float32)
                     for b in self.groups]
            if k % self.particle_stride == 0:
                for kept, points in zip(self.particle_frames, shown):
                    kept[k // self.particle_stride] = points
            if self.particle_stride > 1:
                with self._newest_lock:  # held for a copy; the main thread never waits for it
                    for newest, points in zip(self._newest, shown):
                        newest[:] = points
                    self._newest_frame = k
        self.count = k + 1

    def particles(self, group, k):
        """(frame, positions) of group number ``group`` (in ``groups``) for finished frame ``k``: that frame where
        it was kept, else the kept one before it; None when the newest frame is being written (try again).
        Positions from the kept frames are views never written again; the newest is copied."""
        stride = self.particle_stride
        if stride > 1 and k == self.count - 1 and k % stride:
            if not self._newest_lock.acquire(blocking=False):
                return None
            try:
                if self._newest_frame == k:
                    return k, self._newest[group].copy()
            finally:
                self._newest_lock.release()
        return k - k % stride, self.particle_frames[group][k // stride]


class SimulationJob:
    def __init__(self, solver, conv, on_progress=None, resume_points=None, continues=None, stage=None,
                 prepare=None):
        self.solver = solver
        self.on_progress = on_progress  # called in the worker with (done, total)
        self.conv = conv
        self.resume_points = resume_points  # addon/resume.py's ResumePoints the worker keeps snapshots in
        # a run continued from a snapshot (addon/resume.py): (snapshot, Recording of the frames before it, the
        # Conversion of the whole range); ``conv`` is then the range from the snapshot on, until the run ends
        self.continues = continues
        # stage(conv, recording): writes what a bake needs on disk without touching Blender (the particles'
        # point caches) in the worker once the run is DONE, so the main thread only puts them in place
        self.stage = stage
        self.prepare = prepare     # called first in the worker (the prebuilt kernels' first copy: runtime.py)
        self.staged = None         # what stage returned
        self.stage_error = None    # the OSError or ValueError it raised
        self.state = 'READY'          # READY, RUNNING, DONE, CANCELLED, FAILED
        self.message = ""
        self.recording = None          # whole when DONE; the finished frames (or None) when CANCELLED or FAILED
        self.frames_done = 0
        self.frames_total = conv.frames
        self.started = None
        self.finished = None
        self.phase = 'STARTING'      # STARTING, COMPILING, SIMULATING
        self.kernels_compiled = 0
        self.kernel = ""            # the kernel being compiled
        self.compile_seconds = 0.0
        self.compiled = []              # names of the kernels compiled (not loaded from the cache), once DONE
        self.first_frame_seconds = None  # from start() to the first finished frame
        self.live = None                 # FinishedFrames, from the start pose on (the live preview reads it)
        self._sim = None
        self._cancel = threading.Event()
        self.cancel_requests = 0
        self._thread = None

    # ---- control
    def start(self):
        self.state = 'RUNNING'
        self.started = time.perf_counter()
        self._thread = threading.Thread(target=self._run, name="quadric-simulation", daemon=True)
        self._thread.start()

    def run_sync(self):
        self.state = 'RUNNING'
        self.started = time.perf_counter()
        self._run()
        return self.state

    def cancel(self):
        self.cancel_requests += 1  # the modal operator's bake after the run stops on a new one
        self._cancel.set()

    @property
    def cancelled(self):
        return self._cancel.is_set()

    def wait(self, timeout=None):
        if self._thread is not None:
            self._thread.join(timeout)
        return self.state

    def poll(self):
        """(state, frames_done, frames_total); cheap, safe to call from the UI thread."""
        return self.state, self.frames_done, self.frames_total

    def describe(self):
        """One line for the panel and the status bar: what the run is doing now."""
        if self.phase == 'COMPILING':
            return (f"Compiling the solver (first use; kept for next time): kernel {self.kernels_compiled} "
                    f"({self.kernel.rpartition('.')[2]}), {self.seconds:.0f} s")
        if self.phase == 'STARTING':
            return "Loading the solver"
        left = self.seconds_left()
        eta = f", about {left:.0f} s left" if left is not None else ""
        return f"Simulating frame {self.frames_done}/{self.frames_total}{eta}"

    def seconds_left(self):
        first = self.first_frame_seconds
        return seconds_left(self.frames_done, self.frames_total, 2, None if first is None else self.started + first,
                            time.perf_counter())

    @property
    def seconds(self):
        end = self.finished or time.perf_counter()
        return end - self.started if self.started else 0.0

    # ---- worker
    def _on_kernel(self, count, name):  # in the worker, from numba's compile events
        self.phase = 'COMPILING'
        self.kernels_compiled = count
        self.kernel = name

    def _progress(self, done, total):
        state = self._sim.state  # what the Recording's frame done - 1 was just copied from
        if self.live is None:
            groups = self.conv.groups
            self.live = FinishedFrames(total, len(state.position), [len(r["points"]) for r in self._sim.scene.ropes],
                                       groups, [len(state.particle_positions(b.index)) for b in groups])
        self.live.capture(state)
        if self.resume_points is not None:
            self.resume_points.offer(self._sim, done, total)
        if done >= 2:  # frame 1 is the start pose, recorded before any step runs (or compiles)
            self.phase = 'SIMULATING'
            if self.first_frame_seconds is None:
                self.first_frame_seconds = time.perf_counter() - self.started
        self.frames_done = done
        self.frames_total = total
        if self.on_progress is not None:
            self.on_progress(done, total)

    def _run(self):
        solver, conv = self.solver, self.conv
        state = 'FAILED'  # published last, in self.state, once everything below is done: the main thread bakes
        try:
            if self.prepare is not None:
                self.prepare()
            kwargs = {"velocity_sweeps": conv.velocity_sweeps} if conv.velocity_sweeps > 0 else {}
            with CompileWatcher(self._on_kernel) as watcher:
                sim = self._sim = solver.Simulation(conv.scene, dt=conv.dt, integrator=conv.integrator, **kwargs)
                if self.continues is not None:  # a kept run read from disk: its snapshot and frames read now
                    snapshot, before, whole = self.continues
                    sim.restore(resolved(snapshot, sim))
                    self.continues = snapshot, loaded(before, solver), whole
                self.recording = sim.run(frames=conv.frames, fps=conv.fps, substeps=conv.substeps,
                                         progress=self._progress, should_stop=self._cancel.is_set)
            self.compile_seconds = watcher.seconds
            self.compiled = [name for name, _, _ in watcher.kernels]
            state = 'DONE'
        except solver.SimulationCancelled as exc:
            self.recording = exc.recording  # the finished frames: the operator keeps them as a partial bake
            self.message = f"cancelled after {self.frames_done} of {self.frames_total} frames"
            state = 'CANCELLED'
        except solver.SimulationDiverged as exc:
            self.recording = exc.recording
            frame = conv.frame_start + int(exc.frame)
            if getattr(exc, "group", None) is not None:  # a particle: the solver names it and its group
                what = str(exc).rpartition(": ")[2].replace(" became non-finite", "")
            else:
                name = getattr(exc, "body_name", None) or f"{exc.body}"
                kind = "rope" if exc.body is not None and int(exc.body) < 0 else "body"  # ropes report -1 - index
                what = f"{kind} '{name}'"
            self.message = (f"simulation diverged at frame {frame} ({what}). "
                            "Try more substeps, or check its size, mass and speed")
            state = 'FAILED'
        except StoredRunError as exc:
            self.message = str(exc)
            state = 'FAILED'
        except ValueError as exc:
            self.message = f"invalid scene: {exc}"
            state = 'FAILED'
        except Exception as exc:  # a bug: keep the traceback for the console, the message for the user
            traceback.print_exc()
            self.message = f"simulation failed: {type(exc).__name__}: {exc}"
            state = 'FAILED'
        finally:
            if self.continues is not None:  # the frames before the snapshot, then this run's from it on
                _, before, whole = self.continues
                if self.recording is not None:
                    self.recording = joined(solver, before, self.recording)
                self.conv = whole
            if state == 'DONE' and self.stage is not None:
                try:
                    self.staged = self.stage(self.conv, self.recording)
                except (OSError, ValueError) as exc:
                    self.stage_error = exc
            self.finished = time.perf_counter()
            self.state = state
