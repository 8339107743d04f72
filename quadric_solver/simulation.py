"""Simulation: builds Model, State and work buffers from a Scene and advances them."""
from __future__ import annotations

import copy
import threading
import time
import warnings

import numba
import numpy as np

from .collision.broadphase import find_pairs
from .collision.convex_distance import penetration_method
from .collision.driver import collide, load_emit
from .forces import update_body_frames
from .integrate import body_kinetic_energies
from .math3d import PARALLEL_CHUNKS
from .model import build_body_shapes, build_mesh_colliders, build_model
from .parallel import ThreadPacer, launch_seconds, serial_below_for
from .particles.integrators import INTEGRATORS
from .particles.model import (CG_ITERATIONS, build_particles, copy_particle_state, particle_positions,
                              particle_velocities)
from .particles.model import CONTACTS as PARTICLE_CONTACTS
from .particles.targets import build_field_targets
from .particles.model import PAIRS as PARTICLE_PAIRS
from .recording import Recording
from .runtime import threading_layer
from .ropes.model import build_ropes, copy_rope_state, rope_nodes, rope_segments
from .scene import Scene
from .state import BodyState, copy_body_state, grow_cache, new_body_state, new_workspace
from .step import (CONTACT_OVERFLOW, CONTACTS, CORRECTION_SWEEPS, DIVERGED, DIVERGED_BODY, OK, PAIR_OVERFLOW, PAIRS,
                   PARTICLE_DIVERGED, PARTS, PARTS_DONE, PARTS_RUN, PHASES, SPLIT_IMPULSE_SWEEPS, SUBSTEPS_DONE,
                   VELOCITY_SWEEPS, Settings,
                   record_step_statistics, run_particle_substeps, run_substeps)
from .validate import FieldError, flag, integer, number


# Parallel kernels must not be entered from two threads at once (numba's workqueue threading
# layer, the add-on's fallback where no OpenMP runtime loads, is not re-entrant): simulations in
# different threads take turns.
_KERNEL_LOCK = threading.Lock()
MAX_DEFAULT_THREADS = 8  # more slabs put more contacts in the serial boundary class
_LAUNCH_SECONDS = []  # measured once per process (the threading layer cannot change once started)


def default_serial_below() -> int:
    """Loops below this many items run in the calling thread: fixed per threading layer (quadric_solver/parallel.py)."""
    if not _LAUNCH_SECONDS:
        with _KERNEL_LOCK:
            _LAUNCH_SECONDS.append(launch_seconds())
    return serial_below_for(threading_layer(), _LAUNCH_SECONDS[0])


# the sweep settings' earlier names
RENAMED = {"iterations": "velocity_sweeps", "position_iterations": "split_impulse_sweeps",
           "correction_iterations": "correction_sweeps"}


def _renamed_sweeps(renamed: dict, **current) -> dict:
    """{new name: (name the caller used, value)}; an old name warns, an unknown keyword is a TypeError."""
    used = {name: (name, value) for name, value in current.items()}
    for old, value in renamed.items():
        if old not in RENAMED:
            raise TypeError(f"Simulation() got an unexpected keyword argument {old!r}")
        warnings.warn(f"Simulation: {old} is now called {RENAMED[old]}", DeprecationWarning, stacklevel=3)
        used[RENAMED[old]] = (old, value)
    return used


def _check_shapes_supported(scene, shapes) -> None:
    """Refuse what bodies other than ellipsoids cannot do yet (ropes touching them, tube colliders), and what
    mesh colliders cannot hold yet (ropes)."""
    if scene.meshes and scene.ropes:
        mesh = scene.meshes[0]
        raise FieldError(f"mesh collider {mesh['name'] or 0!r}", "triangles",
                         "cannot share a scene with ropes yet: mesh colliders hold rigid bodies and particles only")
    first = next((i for i, body in enumerate(scene.bodies) if body["shape"] != "ellipsoid"), None)
    if shapes is None or first is None:
        return
    label = f"{scene.body_label(first)} ({scene.bodies[first]['shape'].replace('_', ' ')})"
    if scene.tubes:
        raise FieldError(label, "shape", "cannot share a scene with tube colliders yet: tubes hold ellipsoids only")
    if scene.ropes:
        raise FieldError(label, "shape", "cannot share a scene with ropes yet: ropes touch ellipsoids only")


class SimulationCancelled(RuntimeError):
    """Raised by Simulation.run when should_stop() asked to stop. ``recording`` holds finished frames."""

    def __init__(self, frame: int, recording: Recording):
        super().__init__(f"simulation cancelled at frame {frame}")
        self.frame = frame
        self.recording = recording


class SimulationDiverged(RuntimeError):
    """Raised when a body's, rope's or particle's state became NaN or infinite. ``recording`` holds the finished
    frames. For a particle, ``group`` and ``particle`` (its index in the group) are set and ``body`` is None."""

    def __init__(self, frame, body, body_name, time: float, recording: Recording | None, group=None,
                 particle=None, group_label=None):
        where = f"frame {frame}" if frame is not None else f"t = {time:.6g} s"
        if group is not None:
            label = f"particle {particle} of {group_label or f'group {group}'}"
        else:
            label = f"body {body}" + (f" ({body_name!r})" if body_name else "")
        super().__init__(f"simulation diverged at {where}: {label} became non-finite")
        self.frame = frame
        self.body = body
        self.body_name = body_name
        self.time = time
        self.recording = recording
        self.group = group
        self.particle = particle


class State:
    """The changing part of a simulation: poses, velocities, time and the contact cache."""

    def __init__(self, bodies: BodyState):
        self.bodies = bodies

    position = property(lambda self: self.bodies.position)
    orientation = property(lambda self: self.bodies.orientation)
    linear_velocity = property(lambda self: self.bodies.linear_velocity)
    angular_velocity = property(lambda self: self.bodies.angular_velocity)
    time = property(lambda self: float(self.bodies.time[0]))

    def copy(self) -> "State":
        state = State(copy_body_state(self.bodies))
        if self.rope_state is not None:
            state.rope_model, state.rope_state = self.rope_model, copy_rope_state(self.rope_state)
        if self.particle_state is not None:
            state.particle_model = self.particle_model
            state.particle_state = copy_particle_state(self.particle_state)
        return state

    # the ropes and the particle groups (set by Simulation.state)
    rope_model = None
    rope_state = None
    particle_model = None
    particle_state = None

    def particle_positions(self, group: int) -> np.ndarray:
        """Positions (n, 3) of particle group (or mass-spring body) ``group``."""
        return particle_positions(self.particle_model, self.particle_state, group)

    def particle_velocities(self, group: int) -> np.ndarray:
        """Velocities (n, 3) of particle group (or mass-spring body) ``group``."""
        return particle_velocities(self.particle_model, self.particle_state, group)

    def rope_nodes(self, rope: int) -> np.ndarray:
        """Node positions (n, 3) of rope ``rope``."""
        return rope_nodes(self.rope_model, self.rope_state, rope)

    def rope_segments(self, rope: int) -> np.ndarray:
        """Segment quaternions (n-1, 4) of rope ``rope``; third axis along the segment."""
        return rope_segments(self.rope_model, self.rope_state, rope)


class Simulation:
    """Advance a Scene in time.

    dt: step length used by :meth:`step` (``run`` uses 1 / (fps * substeps)).
    velocity_sweeps: Gauss-Seidel sweeps of the contact solver over the velocities per substep, at most.
    sweep_tolerance: the sweeps stop early, after at least two, once the last
        one changed no body's velocity by more than would move it this far in
        the substep (default: 1% of the slop; 0 always runs all of them). The
        default is 0.01% of the slop for the velocity sweeps in scenes with
        bodies other than ellipsoids, whose contact patches settle slowly.
    split_impulse_sweeps: sweeps of the split impulses that remove overlap, at most
        (they stop early by the same test as the velocity sweeps, with the
        tolerance given or 1% of the slop).
    margin: speculative contact distance in metres (default: 10% of the
        smallest semi-axis in the scene).
    pair_skin: the broad phase's pair list is built with boxes this much larger
        and reused until a body moves further (default: 25% of the smallest
        semi-axis). Larger skins rebuild less often but pass more pairs on.
    baumgarte: fraction of the overlap beyond ``slop`` removed per substep.
    slop: overlap left alone, in metres (default 0.2% of the smallest semi-axis).
    restitution_threshold: normal approach speed (m/s) below which contacts do not bounce.
    linear_damping, angular_damping: velocity damping rates (1/s).
    threads: the contact solve splits the bodies into this many slabs along x
        and solves them in parallel (default: numba's thread count, capped at
        8). Results depend on this number, not on the machine: the same
        scene and settings give the same run with 1 or 16 cores.
    position_correction: after a substep's integration, measure every
        contact's overlap again with the new poses and push apart, in
        position only (no velocity change, so no energy), those more than the
        slop deeper than the split impulses aimed (default True). It runs
        after every substep with contacts and catches what the split impulses
        left: unconverged pushes, and spinning bodies whose motion their
        first-order prediction missed even where they converged.
    correction_sweeps: its sweeps, at most (they stop early by the same
        test as the others; in a 1,000-box drop 64 ran out in a third of the
        steps and left overlaps a quarter deeper, docs/design-notes.md).
    overlap_tolerance: initial overlaps deeper than this fraction of the smaller
        body's smallest semi-axis raise ValueError; None disables the check.
    serial_below: a parallel loop over fewer bodies or contacts than this runs
        in the calling thread instead (default: fixed per threading layer, 256 on
        OpenMP, see quadric_solver/parallel.py). It computes the same thing, so only the
        speed changes, up to the last bit that fastmath may round differently:
        pass the same value for runs that must match across layers.

    max_turn: a substep whose contacts spin faster than this many radians
        a substep runs as equal parts short enough that none does, up to
        ``max_parts`` (default 0.1 rad and 8). A contact counts its bodies'
        spins and its closing speed over the smaller body's bounding radius
        (the spin an impact can give). The contact solve holds each
        contact's normal and points through a substep, which a fast-spinning
        box's corner outruns: over 40 seeds of a 1,000-box drop at 1/240 s
        the deepest overlap's median fell from 3.3% of the smallest half
        extent to 0.96% (worst 8.3% to 2.2%), for about a third less speed
        (docs/design-notes.md). Bodies in flight never split a substep, nor
        do contacts of ellipsoids alone (their contact points move smoothly);
        0 turns splitting off.

    integrator: the ODE integrator of particle groups and mass-spring bodies:
        'symplectic_euler' (default; first order, keeps oscillations' energy),
        'euler', 'midpoint', 'rk4' (explicit, orders 1, 2, 4), or
        'implicit_euler' (linearised backward Euler, stable for stiff springs
        at any step). Rigid bodies and ropes have their own integrators.

    penetration: how overlapping pairs other than two ellipsoids are measured:
        'epa' (default; the smallest depth, exact for polytopes), 'mpr'
        (Minkowski Portal Refinement: the depth along the centres' line, fast,
        never below the true depth) or 'sgjk' (a local minimum of the depth
        from the last normal, by GJK queries alone). docs/shapes.md compares them.

    contact_reuse: a touching pair of bodies other than two ellipsoids keeps
        its contact points, moved with the bodies, while no point of one can
        have moved relative to the other by more than this share of the
        smaller body's smallest half size since the pair was measured
        (default 0.005; 0 measures every pair in every substep). Most pairs
        of a settling pile barely move, and measuring them is most of the
        narrow phase (collision/carried_contacts.py, docs/design-notes.md).

    The older names iterations, position_iterations and correction_iterations
    are still accepted, with a DeprecationWarning.
    """

    def __init__(self, scene, dt=1.0 / 240.0, velocity_sweeps=8, split_impulse_sweeps=6, margin=None,
                 pair_skin=None, baumgarte=0.3, slop=None, restitution_threshold=0.2, linear_damping=0.0,
                 angular_damping=0.0, overlap_tolerance=0.05, threads=None, sweep_tolerance=None,
                 position_correction=True, correction_sweeps=256, serial_below=None, integrator="symplectic_euler",
                 penetration="epa", max_turn=0.1, max_parts=8, contact_reuse=0.005, **renamed):
        if not isinstance(scene, Scene):
            raise FieldError("Simulation", "scene", f"must be a quadric_solver.Scene, got {type(scene).__name__}")
        owner = "Simulation"
        sweeps = _renamed_sweeps(renamed, velocity_sweeps=velocity_sweeps, split_impulse_sweeps=split_impulse_sweeps,
                                 correction_sweeps=correction_sweeps)
        dt = number(owner, "dt", dt, positive=True)
        velocity_sweeps = integer(owner, *sweeps["velocity_sweeps"], minimum=1)
        split_impulse_sweeps = integer(owner, *sweeps["split_impulse_sweeps"], minimum=0)
        correction_sweeps = integer(owner, *sweeps["correction_sweeps"], minimum=0)
        margin, pair_skin, slop, sweep_tolerance, overlap_tolerance = (
            None if value is None else number(owner, field, value, minimum=0.0)
            for field, value in (("margin", margin), ("pair_skin", pair_skin), ("slop", slop),
                                 ("sweep_tolerance", sweep_tolerance), ("overlap_tolerance", overlap_tolerance)))
        baumgarte = number(owner, "baumgarte", baumgarte, minimum=0.0, maximum=1.0)
        restitution_threshold = number(owner, "restitution_threshold", restitution_threshold, minimum=0.0)
        linear_damping = number(owner, "linear_damping", linear_damping, minimum=0.0)
        angular_damping = number(owner, "angular_damping", angular_damping, minimum=0.0)
        threads = min(numba.get_num_threads(), MAX_DEFAULT_THREADS) if threads is None else threads
        threads = integer(owner, "threads", threads, minimum=1)
        position_correction = flag(owner, "position_correction", position_correction)
        max_turn = number(owner, "max_turn", max_turn, minimum=0.0)
        max_parts = integer(owner, "max_parts", max_parts, minimum=1)
        contact_reuse = number(owner, "contact_reuse", contact_reuse, minimum=0.0)
        serial_below = default_serial_below() if serial_below is None else integer(owner, "serial_below",
                                                                                   serial_below, minimum=0)
        if not (isinstance(integrator, str) and integrator in INTEGRATORS):
            raise FieldError(owner, "integrator", f"must be one of {', '.join(map(repr, INTEGRATORS))}, "
                                                  f"got {integrator!r}")
        self.integrator = integrator
        self.scene = scene
        self.dt = dt
        self._shapes = build_body_shapes(scene)
        if self._shapes is not None:  # ellipsoid pairs keep their exact path whatever is chosen
            self._shapes = self._shapes._replace(penetration=penetration_method(owner, penetration))
        else:
            penetration_method(owner, penetration)
        _check_shapes_supported(scene, self._shapes)
        self.model = build_model(scene, self._shapes)
        self._meshes = build_mesh_colliders(scene, self._shapes, len(self.model.static_kind))
        n = self.model.n_bodies
        smallest = float(self._body_sizes().min()) if n else 0.01
        margin = 0.1 * smallest if margin is None else margin
        slop = 0.002 * smallest if slop is None else slop
        pair_skin = 0.25 * smallest if pair_skin is None else pair_skin
        position_sweep_tolerance = 0.01 * slop if sweep_tolerance is None else sweep_tolerance
        if sweep_tolerance is None:
            # a patch's points share the load in ways the velocity sweeps settle slowly: stopping them early
            # leaves stacks of boxes rocking and creeping (docs/shapes.md), so scenes with such shapes sweep
            # further. The position passes need not: the overlaps they remove are within the slop either way
            sweep_tolerance = (0.01 if self._shapes is None else 1e-4) * slop
        self.settings = Settings(
            velocity_sweeps=velocity_sweeps, split_impulse_sweeps=split_impulse_sweeps, margin=margin,
            pair_skin=pair_skin, baumgarte=baumgarte, slop=slop, restitution_threshold=restitution_threshold,
            linear_damping=linear_damping, angular_damping=angular_damping, threads=threads,
            sweep_tolerance=sweep_tolerance, position_sweep_tolerance=position_sweep_tolerance,
            position_correction=position_correction,
            correction_sweeps=correction_sweeps, serial_below=serial_below, max_turn=max_turn, max_parts=max_parts)
        if self._shapes is not None:
            # kept below half the margin, so no point a carried pair misses can come from beyond its reach
            self._shapes = self._shapes._replace(
                reuse_length=np.minimum(contact_reuse * self._shapes.size.min(axis=1), 0.5 * margin))
        # run_substeps takes BodyShapes and MeshColliders in every scene, ellipsoids only or no bodies at all, so
        # that one compiled narrow phase serves them all: numba compiles a kernel again for each argument type,
        # and the None variant cost a fifth of a cold compile (docs/numba.md). Ellipsoid pairs keep their exact
        # path either way; self._shapes (None: all ellipsoids) still decides what differs for other shapes.
        self._kernel_shapes, self._kernel_meshes = self._shapes, self._meshes
        if self._shapes is None:
            self._kernel_shapes = build_body_shapes(scene, always=True)._replace(
                penetration=penetration_method(owner, penetration))
            self._kernel_meshes = build_mesh_colliders(scene, self._kernel_shapes, len(self.model.static_kind))
        self._contact_capacity = max(64, 8 * n)
        self._pair_capacity = max(64, 16 * n)
        self._bodies = new_body_state(scene.bodies, self._contact_capacity, patches=self._shapes is not None)
        self._ws = self._new_workspace()
        # before any kernel that calls it
        load_emit(self.model, self._bodies, self._ws, self._kernel_shapes, self._kernel_meshes)
        self._pacer = ThreadPacer(numba.get_num_threads())  # one thread or all, whichever runs faster now
        # the ropes: a model and state of their own (quadric_solver/ropes/model.py)
        self._rope_model, self._rope_state = build_ropes(scene.ropes, n_bodies=n,
                                                         material_friction=self.model.material_friction)
        # the particle groups and mass-spring bodies: a model and state of their own (quadric_solver/particles/model.py)
        self._particle_model, self._particle_state = (build_particles(scene, integrator) if scene.particles
                                                      else (None, None))
        # the force objects on bodies and rope nodes, empty where none acts on them (particles/targets.py)
        self._targets = build_field_targets(scene, self.model, self._rope_model)
        self.stats = {}
        self._frame = 0
        self._scene_hash = None
        if overlap_tolerance is not None and n:
            self._check_initial_overlaps(overlap_tolerance)
        body_kinetic_energies(self.model, self._bodies, self._ws.body_energy)
        record_step_statistics(self._ws)
        self._update_stats(0, 0)

    # ---------------------------------------------------------------- public
    @property
    def state(self) -> State:
        state = State(self._bodies)
        state.rope_model, state.rope_state = self._rope_model, self._rope_state
        state.particle_model, state.particle_state = self._particle_model, self._particle_state
        return state

    @property
    def time(self) -> float:
        return float(self._bodies.time[0])

    def snapshot(self) -> dict:
        """A copy of everything a run changes: the State and the work buffers that carry over from one substep to
        the next (the pair list, witness directions, slab bounds). ``restore`` continues from it exactly as this
        simulation goes on from here, bit for bit."""
        if self._scene_hash is None:  # of the scene the Model was built from (the Recording's too)
            self._scene_hash = self.scene.content_hash()
        return dict(scene_hash=self._scene_hash, bodies=copy_body_state(self._bodies),
                    workspace=type(self._ws)(*[np.array(field, copy=True) for field in self._ws]),
                    ropes=copy_rope_state(self._rope_state) if self._rope_state is not None else None,
                    particles=copy_particle_state(self._particle_state) if self._particle_state is not None else None,
                    capacity=(self._pair_capacity, self._contact_capacity), stats=copy.deepcopy(self.stats))

    def restore(self, snapshot: dict) -> None:
        """Continue from a ``snapshot`` of a simulation of the same scene with the same settings (the snapshot
        stays as it is, so it can be restored again). ValueError if it was taken from another scene."""
        if snapshot["scene_hash"] != self.scene.content_hash():
            raise FieldError("restore", "snapshot", "was taken from a simulation of another scene")
        self._pair_capacity, self._contact_capacity = snapshot["capacity"]
        self._bodies = copy_body_state(snapshot["bodies"])
        self._ws = type(self._ws)(*[np.array(field, copy=True) for field in snapshot["workspace"]])
        for name, copy_state in (("_rope_state", copy_rope_state), ("_particle_state", copy_particle_state)):
            saved, own = snapshot["ropes" if name == "_rope_state" else "particles"], getattr(self, name)
            if own is not None:  # the copy with this simulation's own scratch (work_*), which copies share
                setattr(self, name, copy_state(saved)._replace(
                    **{field: getattr(own, field) for field in own._fields if field.startswith("work_")}))
        self.stats = copy.deepcopy(snapshot["stats"])

    def step(self, n: int = 1) -> None:
        """Advance n steps of length dt. Raises SimulationDiverged if a body becomes non-finite."""
        self._advance(self.dt, integer("step", "n", n, minimum=0), frame=None)

    def run(self, frames: int = 250, fps: float = 24.0, substeps: int = 10, progress=None,
            should_stop=None) -> Recording:
        """Simulate ``frames`` frames (frame 0 is the current state) and return the Recording.

        progress(frames_done, frames_total) is called after each frame;
        should_stop() returning True raises SimulationCancelled; a non-finite
        state raises SimulationDiverged. Both carry the finished frames.
        """
        frames = integer("run", "frames", frames, minimum=1)
        substeps = integer("run", "substeps", substeps, minimum=1)
        fps = number("run", "fps", fps, positive=True)
        for field, value in (("progress", progress), ("should_stop", should_stop)):
            if value is not None and not callable(value):
                raise FieldError("run", field, f"must be a function or None, got {type(value).__name__}")
        h = 1.0 / (fps * substeps)
        n = self.model.n_bodies
        names = [body["name"] for body in self.scene.bodies]
        recording = Recording(fps, names, PHASES, np.zeros((frames, n, 7)), {
            "contacts": np.zeros(frames, dtype=np.int64), "max_penetration": np.zeros(frames),
            "kinetic_energy": np.zeros(frames), "phase_seconds": np.zeros((frames, len(PHASES)))},
            scene_hash=self.scene.content_hash())
        recording.ropes = [dict(name=rope["name"], nodes=np.zeros((frames, len(rope["points"]), 3)),
                                segments=np.zeros((frames, len(rope["points"]) - 1, 4))) for rope in self.scene.ropes]
        recording.particle_groups = [
            dict(name=group["name"], positions=np.zeros((frames, len(particle_positions(
                self._particle_model, self._particle_state, g)), 3))) for g, group in enumerate(self.scene.particles)]
        self._record(recording, 0)
        if progress is not None:
            progress(1, frames)
        for frame in range(1, frames):
            if should_stop is not None and should_stop():
                raise SimulationCancelled(frame, recording.truncated(frame))
            try:
                self._advance(h, substeps, frame=frame)
            except SimulationDiverged as error:
                error.recording = recording.truncated(frame)
                raise
            self._record(recording, frame)
            if progress is not None:
                progress(frame + 1, frames)
        return recording

    # --------------------------------------------------------------- helpers
    def _advance(self, h: float, substeps: int, frame) -> None:
        ws = self._ws
        ws.phase_seconds[:] = 0.0
        remaining = substeps
        parts = 0
        caller_threads = numba.get_num_threads()
        if caller_threads != self._pacer.most:  # the caller changed numba's thread count since
            self._pacer = ThreadPacer(caller_threads)
        while True:
            threads = self._pacer.threads()
            with _KERNEL_LOCK:
                numba.set_num_threads(threads)
                started = time.perf_counter()
                try:
                    status = self._run_substeps(h, remaining)
                finally:
                    numba.set_num_threads(caller_threads)
            self._pacer.record(threads, time.perf_counter() - started,
                               remaining if status == OK else int(ws.counters[SUBSTEPS_DONE]))
            parts += int(ws.counters[PARTS_RUN])
            if status == OK:
                break
            if status == PARTICLE_DIVERGED:
                group, particle = (int(k) for k in self._particle_state.diverged)
                raise SimulationDiverged(frame, None, None, self.time, None, group=group, particle=particle,
                                         group_label=self.scene.group_label(group))
            if status == DIVERGED:
                body = int(ws.counters[DIVERGED_BODY])
                if body < 0:  # a rope: reported as body -1 - rope with the rope's name
                    rope = -1 - body
                    raise SimulationDiverged(frame, body, self.scene.ropes[rope]["name"] or f"rope {rope}",
                                             self.time, None)
                raise SimulationDiverged(frame, body, self.scene.bodies[body]["name"], self.time, None)
            # a buffer was too small: the compiled loop left the state where its last full substep did;
            # grow the buffer geometrically and go on with the substeps that are left
            remaining -= int(ws.counters[SUBSTEPS_DONE])
            if status == PAIR_OVERFLOW:
                self._pair_capacity *= 2
            elif status == CONTACT_OVERFLOW:
                self._contact_capacity *= 2
            seconds, split = ws.phase_seconds.copy(), ws.counters[[PARTS, PARTS_DONE]]
            self._ws = ws = self._new_workspace()
            ws.phase_seconds[:] = seconds
            ws.counters[[PARTS, PARTS_DONE]] = split  # the split substep it stopped in, resumed where it stopped
            self._bodies = grow_cache(self._bodies, self._contact_capacity)
        self._update_stats(substeps, parts)

    def _run_substeps(self, h: float, substeps: int) -> int:
        """The compiled loop for what the scene holds: one that never compiles the kernels of what it lacks."""
        ws, model, bodies, settings = self._ws, self.model, self._bodies, self.settings
        particles = (self._particle_model, self._particle_state)  # (None, None) in a scene without particles
        if not model.n_bodies and not self.scene.ropes and self.scene.particles:
            return run_particle_substeps(model, bodies, ws, settings, h, substeps, *particles, self._shapes,
                                         self._meshes)
        ropes = (self._rope_model, self._rope_state) if self.scene.ropes else (None, None)
        return run_substeps(model, bodies, ws, settings, h, substeps, self._targets, *ropes, *particles,
                            self._kernel_shapes, self._kernel_meshes)

    def _body_sizes(self):
        """(N, 3) half sizes of each body along its axes: semi-axes, half extents, the box around a hull."""
        return self.model.semi_axes if self._shapes is None else self._shapes.size

    def _triangle_label(self, triangle: int) -> str:
        """How messages name a triangle of the mesh colliders (numbered across them)."""
        for k, mesh in enumerate(self.scene.meshes):
            if triangle < len(mesh["triangles"]):
                return f"triangle {triangle} of mesh collider {mesh['name'] or k!r}"
            triangle -= len(mesh["triangles"])
        raise IndexError(triangle)

    def _update_stats(self, substeps: int, parts: int) -> None:
        """Copy the statistics the compiled loop left in the workspace (no recomputation here)."""
        ws = self._ws
        source = ws.pair_source[:ws.counters[PAIRS]]
        self.stats = {
            "contacts": int(ws.counters[CONTACTS]),
            # pairs other than two ellipsoids in the last substep's narrow phase: carried (contact_reuse), measured
            "carried_pairs": int(np.count_nonzero(source >= 0)),
            "measured_pairs": int(np.count_nonzero(source == -1)),
            # sweeps each sweeping pass ran in the last substep
            "velocity_sweeps": int(ws.counters[VELOCITY_SWEEPS]),
            "split_impulse_sweeps": int(ws.counters[SPLIT_IMPULSE_SWEEPS]),
            "correction_sweeps": int(ws.counters[CORRECTION_SWEEPS]),
            "max_penetration": float(ws.step_stats[0]),
            "kinetic_energy": float(ws.step_stats[1]),
            "phase_seconds": {name: float(ws.phase_seconds[k]) for k, name in enumerate(PHASES)},
            "substeps": substeps,
            "parts": parts,  # pieces the last call ran: its substeps, each split one counted by its parts (max_turn)
            "threading_layer": threading_layer(),  # numba's: 'omp', 'workqueue' or 'tbb' (quadric_solver/runtime.py)
            "launch_seconds": _LAUNCH_SECONDS[0] if _LAUNCH_SECONDS else None,  # one parallel launch, measured
            "threads": self._pacer.choice,  # numba threads the pacer runs the substeps on now (parallel.ThreadPacer)
        }
        if self._particle_state is not None:
            counters = self._particle_state.counters
            self.stats["particle_contacts"] = int(counters[PARTICLE_CONTACTS])  # of the last substep
            self.stats["cg_iterations"] = int(counters[CG_ITERATIONS])  # of the last implicit_euler step
            self.stats["particle_pairs"] = int(counters[PARTICLE_PAIRS])  # touching particles, last substep

    def _record(self, recording: Recording, frame: int) -> None:
        recording.body_poses[frame, :, :3] = self._bodies.position
        recording.body_poses[frame, :, 3:] = self._bodies.orientation
        for r, rope in enumerate(recording.ropes):
            rope["nodes"][frame] = rope_nodes(self._rope_model, self._rope_state, r)
            rope["segments"][frame] = rope_segments(self._rope_model, self._rope_state, r)
        for g, group in enumerate(recording.particle_groups):
            group["positions"][frame] = particle_positions(self._particle_model, self._particle_state, g)
        recording.stats["contacts"][frame] = self.stats["contacts"]
        recording.stats["max_penetration"][frame] = self.stats["max_penetration"]
        recording.stats["kinetic_energy"][frame] = self.stats["kinetic_energy"]
        recording.stats["phase_seconds"][frame] = [self.stats["phase_seconds"][p] for p in PHASES]

    def _new_workspace(self):
        return new_workspace(self.model.n_bodies, self._pair_capacity, self._contact_capacity, len(PHASES),
                             self.settings.threads, patches=self._shapes is not None)

    def _check_initial_overlaps(self, tolerance: float) -> None:
        """Raise ValueError naming the first pair that starts overlapping beyond tolerance."""
        model, ws = self.model, self._ws
        serial = model.n_bodies < self.settings.serial_below
        update_body_frames(model, self._bodies, ws, 0.0, 0.0, serial)
        while True:
            with _KERNEL_LOCK:
                n_pairs = find_pairs(self._bodies.position, ws.half_extent, model.inv_mass >= 0.0,
                                     ws.bucket_start, ws.bucket_body, ws.bucket_key, ws.bucket_box, ws.bucket_fill,
                                     ws.pair_a, ws.pair_b, 1 if serial else PARALLEL_CHUNKS)
                count = (collide(model, self._bodies, ws, n_pairs, n_pairs < self.settings.serial_below, 0.0,
                                 self._kernel_shapes, self._kernel_meshes) if n_pairs >= 0 else -1)
            if count >= 0:
                break
            self._pair_capacity *= 2
            self._contact_capacity *= 2
            self._ws = ws = self._new_workspace()
            self._bodies = grow_cache(self._bodies, self._contact_capacity)
            update_body_frames(model, self._bodies, ws, 0.0, 0.0, serial)
        n_planes = len(self.scene.planes)
        n_walls = 5 * len(self.scene.boxes)
        sizes = self._body_sizes()
        for c in range(count):
            a, b, depth = int(ws.contact_a[c]), int(ws.contact_b[c]), float(ws.contact_depth[c])
            size = sizes[b].min() if a < 0 else min(sizes[a].min(), sizes[b].min())
            if depth <= tolerance * size:
                continue
            if a >= 0:
                other = self.scene.body_label(a)
            else:
                s = -1 - a
                if s < n_planes:
                    other = f"plane {self.scene.planes[s]['name'] or s!r}"
                elif s < n_planes + n_walls:
                    box = (s - n_planes) // 5
                    other = f"box container {self.scene.boxes[box]['name'] or box!r}"
                elif s < len(model.static_kind):
                    tube = s - n_planes - n_walls
                    other = f"tube {self.scene.tubes[tube]['name'] or tube!r}"
                else:
                    other = self._triangle_label(s - len(model.static_kind))
            raise ValueError(f"{self.scene.body_label(b)}: position overlaps {other} by {depth:.4g} m at the "
                             f"start (more than {tolerance:.0%} of its smallest half-size); move it apart")
        ws.counters[:] = 0
        self._bodies.cache_count[0] = 0
