"""A simulation run that can happen in a worker thread (kernels are nogil) or synchronously.

The modal operator polls `poll()` from a timer on the main thread; scripts and
`blender -b` use `run_sync()`. Either way nothing in Blender changes here: the
caller bakes `recording` on the main thread once `state == 'DONE'`.
"""
import threading
import time
import traceback


class SimulationJob:
    def __init__(self, solver, conv, on_progress=None):
        self.solver = solver
        self.on_progress = on_progress  # called in the worker with (done, total)
        self.conv = conv
        self.state = 'READY'          # READY, RUNNING, DONE, CANCELLED, FAILED
        self.message = ""
        self.recording = None
        self.frames_done = 0
        self.frames_total = conv.frames
        self.started = None
        self.finished = None
        self._cancel = threading.Event()
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
        self._cancel.set()

    def wait(self, timeout=None):
        if self._thread is not None:
            self._thread.join(timeout)
        return self.state

    def poll(self):
        """(state, frames_done, frames_total); cheap, safe to call from the UI thread."""
        return self.state, self.frames_done, self.frames_total

    @property
    def seconds(self):
        end = self.finished or time.perf_counter()
        return end - self.started if self.started else 0.0

    # ---- worker
    def _progress(self, done, total):
        self.frames_done = done
        self.frames_total = total
        if self.on_progress is not None:
            self.on_progress(done, total)

    def _run(self):
        solver, conv = self.solver, self.conv
        try:
            kwargs = {"velocity_sweeps": conv.velocity_sweeps} if conv.velocity_sweeps > 0 else {}
            sim = solver.Simulation(conv.scene, dt=conv.dt, **kwargs)
            self.recording = sim.run(frames=conv.frames, fps=conv.fps, substeps=conv.substeps,
                                     progress=self._progress, should_stop=self._cancel.is_set)
            self.state = 'DONE'
        except solver.SimulationCancelled:
            self.message = f"cancelled after {self.frames_done} of {self.frames_total} frames; nothing was baked"
            self.state = 'CANCELLED'
        except solver.SimulationDiverged as exc:
            frame = conv.frame_start + int(exc.frame)
            name = getattr(exc, "body_name", None) or f"{exc.body}"
            kind = "rope" if exc.body is not None and int(exc.body) < 0 else "body"  # ropes report -1 - index
            self.message = (f"simulation diverged at frame {frame} ({kind} '{name}'); nothing was baked. "
                            "Try more substeps, or check its size, mass and speed")
            self.state = 'FAILED'
        except ValueError as exc:
            self.message = f"invalid scene: {exc}"
            self.state = 'FAILED'
        except Exception as exc:  # a bug: keep the traceback for the console, the message for the user
            traceback.print_exc()
            self.message = f"simulation failed: {type(exc).__name__}: {exc}"
            self.state = 'FAILED'
        finally:
            self.finished = time.perf_counter()
