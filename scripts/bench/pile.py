"""Pile benchmark: N ellipsoids dropped into an open box, ours against MuJoCo.

Run from the repository root (so that ``import solver`` resolves):

    .venv/bin/python -m scripts.bench.pile                       # 1,000 bodies, ours and MuJoCo, 2 s
    .venv/bin/python -m scripts.bench.pile --n 1000 10000 100000                 # scaling, ours only, 2 s each
    .venv/bin/python -m scripts.bench.pile --engines mujoco --n 200 --seconds 0.5
    .venv/bin/python -m scripts.bench.pile --threading-layer omp,workqueue,tbb   # ours per layer, MuJoCo once
    .venv/bin/python -m scripts.bench.pile --scene grid                           # the aligned grid, both engines

Both engines get the same scene from the same seed: semi-axes uniform in
[0.02, 0.05] m, density 1000 kg/m^3, uniformly random orientations, released at
rest from a jittered grid (spacing wider than the largest bounding sphere, so
nothing overlaps at start) above a four-wall open box.  The floor area grows
with N so that the settled pile is always about four body-layers deep and the
drop grid always has the same number of layers: the scene is self-similar in
N, which is what makes nanoseconds per contact comparable across N.

``--scene grid`` drops the aligned grid instead (make_grid): identity
orientations, centres exactly in rows and columns at 0.11 m, 10 x 10 x 10
for 1,000 bodies over a 1.4 x 1.4 m floor, the way an array modifier lays
them out. Its bodies land in ten-high columns: long chains of contacts,
the worst case for Gauss-Seidel.

One JSON line per engine and case is printed, then a ratio line.

Counting: MuJoCo's contacts are data.ncon (geom margin 0, so touching or
penetrating pairs); ours are sim.stats["contacts"], which also counts
speculative contacts within the solver's margin. Penetration is the deepest
contact per step, its maximum over the run ("max_penetration") and over the
last 0.1 s ("final_max_penetration", the settled pile). MuJoCo keeps its
default soft-contact parameters (solref 0.02 1), an elliptic friction cone,
condim 3 (sliding friction 0.5, no torsional or rolling friction), CG with 20
iterations, and planes for the floor and walls.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

SEMI_AXIS_RANGE = (0.02, 0.05)  # m
DENSITY = 1000.0  # kg/m^3
FRICTION = 0.5
DT = 1.0 / 240.0
GRAVITY = 9.81
PILE_LAYERS = 4.0  # target depth of the settled pile, in mean body diameters
PACKING_FRACTION = 0.6  # random loose packing of ellipsoids, for sizing the floor
GRID_GAP = 0.01  # m, clearance between neighbouring bounding spheres at release
MUJOCO_ITERATIONS = 20
MUJOCO_CONE = "elliptic"  # our solver projects friction on the Coulomb disc too
GRID_SPACING = 2.0 * SEMI_AXIS_RANGE[1] + GRID_GAP  # m, the aligned grid's pitch (0.11 m)
GRID_CLEARANCE = 0.205  # m, from the aligned grid's outer centres to the walls (1,000 bodies: 1.4 m floor)
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# --------------------------------------------------------------------------- scene


def _grid_centres(n: int, per_row: int, spacing: float, bottom: float):
    """Centres of n bodies in rows of per_row, layers of per_row^2, centred over the origin from height bottom up;
    and the number of layers."""
    per_layer = per_row * per_row
    idx = np.arange(n)
    ix, iy, iz = idx % per_row, (idx // per_row) % per_row, idx // per_layer
    first = -0.5 * (per_row - 1) * spacing
    positions = np.empty((n, 3))
    positions[:, 0] = first + ix * spacing
    positions[:, 1] = first + iy * spacing
    positions[:, 2] = bottom + iz * spacing
    return positions, -(-n // per_layer)


def make_pile(n: int, seed: int) -> dict:
    """The engine-neutral scene: arrays plus the box, all in SI units."""
    rng = np.random.default_rng(seed)
    lo, hi = SEMI_AXIS_RANGE
    semi_axes = rng.uniform(lo, hi, size=(n, 3))
    # Normalised Gaussian 4-vectors are uniform on SO(3); w >= 0 picks one of q, -q.
    quats = rng.normal(size=(n, 4))
    quats /= np.linalg.norm(quats, axis=1, keepdims=True)
    quats[quats[:, 0] < 0] *= -1.0

    mean_semi = 0.5 * (lo + hi)
    mean_volume = 4.0 / 3.0 * math.pi * mean_semi**3
    pile_height = PILE_LAYERS * 2.0 * mean_semi
    floor_area = n * mean_volume / PACKING_FRACTION / pile_height
    side = math.sqrt(floor_area)

    spacing = 2.0 * hi + GRID_GAP
    per_row = max(1, int((side - GRID_GAP) // spacing))
    positions, layers = _grid_centres(n, per_row, spacing, hi + GRID_GAP)
    positions[:, :2] += rng.uniform(-0.5 * GRID_GAP, 0.5 * GRID_GAP, size=(n, 2))

    wall_height = hi + GRID_GAP + layers * spacing  # walls reach above the top of the grid
    return dict(
        n=n,
        seed=seed,
        semi_axes=semi_axes,
        quats=quats,
        positions=positions,
        scene="pile",
        box_side=side,
        wall_height=wall_height,
        grid_layers=layers,
    )


def make_grid(n: int, seed: int) -> dict:
    """The aligned grid: a cube of bodies with identity orientations at GRID_SPACING, no jitter.

    What an artist's array modifier makes: every body's axes along the world's,
    centres exactly in rows and columns. 1,000 bodies: 10 x 10 x 10 at 0.11 m
    over a 1.4 x 1.4 m floor. Semi-axes as in make_pile, from the same seed.
    """
    rng = np.random.default_rng(seed)
    lo, hi = SEMI_AXIS_RANGE
    semi_axes = rng.uniform(lo, hi, size=(n, 3))
    quats = np.zeros((n, 4))
    quats[:, 0] = 1.0
    per_row = max(1, round(n ** (1.0 / 3.0)))
    spacing = GRID_SPACING
    side = (per_row - 1) * spacing + 2.0 * GRID_CLEARANCE
    positions, layers = _grid_centres(n, per_row, spacing, hi + GRID_GAP)
    return dict(
        n=n,
        seed=seed,
        scene="grid",
        semi_axes=semi_axes,
        quats=quats,
        positions=positions,
        box_side=side,
        wall_height=hi + GRID_GAP + layers * spacing,
        grid_layers=layers,
    )


SCENES = {"pile": make_pile, "grid": make_grid}


# --------------------------------------------------------------------------- MuJoCo


def mujoco_xml(pile: dict) -> str:
    half = 0.5 * pile["box_side"]
    hz = 0.5 * pile["wall_height"]
    # condim 3: sliding friction only (no torsional / rolling), as in our Material defaults.
    geom_defaults = f'condim="3" friction="{FRICTION} 0 0"'
    walls = [
        ("floor", (0.0, 0.0, 0.0), (0, 0, 1)),
        ("wall_xmin", (-half, 0.0, hz), (1, 0, 0)),
        ("wall_xmax", (half, 0.0, hz), (-1, 0, 0)),
        ("wall_ymin", (0.0, -half, hz), (0, 1, 0)),
        ("wall_ymax", (0.0, half, hz), (0, -1, 0)),
    ]
    lines = [
        '<mujoco model="pile">',
        f'  <option timestep="{DT!r}" gravity="0 0 {-GRAVITY}" solver="CG" '
        f'iterations="{MUJOCO_ITERATIONS}" cone="{MUJOCO_CONE}"/>',
        # the default arena is too small for big piles; about 100 kB per body is plenty
        f'  <size memory="{max(64, pile["n"] // 10)}M"/>' if pile["n"] > 2000 else "",
        f"  <default><geom {geom_defaults}/></default>",
        "  <worldbody>",
    ]
    # Planes are infinite half-spaces for collision, the same as the container's inner walls
    # for bodies that stay inside; their normal is the geom's local z axis.
    for name, pos, zaxis in walls:
        lines.append(
            f'    <geom name="{name}" type="plane" size="0 0 1" pos="{pos[0]:.17g} {pos[1]:.17g} {pos[2]:.17g}" '
            f'zaxis="{zaxis[0]} {zaxis[1]} {zaxis[2]}"/>'
        )
    for i in range(pile["n"]):
        p, q, a = pile["positions"][i], pile["quats"][i], pile["semi_axes"][i]
        lines.append(
            f'    <body pos="{p[0]:.17g} {p[1]:.17g} {p[2]:.17g}" quat="{q[0]:.17g} {q[1]:.17g} {q[2]:.17g} {q[3]:.17g}">'
            f'<freejoint/><geom type="ellipsoid" size="{a[0]:.17g} {a[1]:.17g} {a[2]:.17g}" density="{DENSITY}"/></body>'
        )
    lines += ["  </worldbody>", "</mujoco>"]
    return "\n".join(line for line in lines if line)


def run_mujoco(pile: dict, steps: int) -> dict:
    import mujoco

    model = mujoco.MjModel.from_xml_string(mujoco_xml(pile))
    data = mujoco.MjData(model)
    step_seconds = 0.0
    contacts = np.empty(steps)
    max_pen = np.empty(steps)
    for k in range(steps):
        t0 = time.perf_counter()
        mujoco.mj_step(model, data)
        step_seconds += time.perf_counter() - t0
        ncon = data.ncon
        contacts[k] = ncon
        max_pen[k] = max(0.0, float(-data.contact.dist[:ncon].min())) if ncon else 0.0
    return _result(
        "mujoco",
        pile,
        steps,
        step_seconds,
        contacts,
        max_pen,
        extra=dict(
            mujoco_version=mujoco.__version__,
            solver="CG",
            iterations=MUJOCO_ITERATIONS,
            cone=MUJOCO_CONE,
            walls="planes",
        ),
    )


# --------------------------------------------------------------------------- ours


def build_our_scene(pile: dict):
    import quadric_solver as solver

    scene = solver.Scene(gravity=(0.0, 0.0, -GRAVITY))
    mat = solver.Material(friction=FRICTION, rolling_friction=0.0, spinning_friction=0.0, restitution=0.0)
    half = 0.5 * pile["box_side"]
    hz = 0.5 * pile["wall_height"]
    scene.add_box_container(center=(0.0, 0.0, hz), half_extents=(half, half, hz), material=mat, name="Box")
    for i in range(pile["n"]):
        scene.add_ellipsoid(
            semi_axes=tuple(pile["semi_axes"][i]),
            position=tuple(pile["positions"][i]),
            orientation=tuple(pile["quats"][i]),
            density=DENSITY,
            material=mat,
        )
    return scene


def warm_up_ours() -> None:
    """Compile every kernel on a tiny pile so that timing excludes compilation."""
    import quadric_solver as solver

    sim = solver.Simulation(build_our_scene(make_pile(8, seed=12345)), dt=DT)
    sim.step(n=1)
    sim.step(n=1)


def run_ours(pile: dict, steps: int, steps_per_call: int = 1) -> dict:
    """Time sim.step; statistics are read after every call (every step by default, like MuJoCo's)."""
    import quadric_solver as solver
    from quadric_solver.parallel import break_even_items

    warm_up_ours()
    scene = build_our_scene(pile)
    sim = solver.Simulation(scene, dt=DT)
    step_seconds = 0.0
    calls = -(-steps // steps_per_call)
    contacts = np.empty(calls)
    max_pen = np.empty(calls)
    done = 0
    phase_totals: dict = {}
    for k in range(calls):
        count = min(steps_per_call, steps - done)
        t0 = time.perf_counter()
        sim.step(n=count)
        step_seconds += time.perf_counter() - t0
        done += count
        stats = sim.stats
        contacts[k] = stats["contacts"]
        max_pen[k] = stats["max_penetration"]
        for name, seconds in dict(stats.get("phase_seconds", {})).items():
            phase_totals[name] = phase_totals.get(name, 0.0) + float(seconds)
    return _result(
        "ours",
        pile,
        steps,
        step_seconds,
        contacts,
        max_pen,
        extra=dict(
            steps_per_call=steps_per_call,
            phase_seconds_total=phase_totals,
            threading_layer=threading_layer_record(),
            launch_us=1e6 * sim.stats["launch_seconds"],
            serial_below=sim.settings.serial_below,
            break_even_items=break_even_items(sim.stats["launch_seconds"], sim.settings.threads),
        ),
    )


def threading_layer_record():
    """numba's thread count and threading layer, with TBB's version where it is TBB (None if unknown)."""
    try:
        import numba

        layer = dict(threads=numba.get_num_threads(), layer=numba.threading_layer())
    except Exception:  # noqa: BLE001 - informational only
        return None
    if layer["layer"] == "tbb":  # which TBB: versions differ by orders of magnitude in launch cost
        import ctypes

        try:
            version = ctypes.CDLL("libtbb.so.12").TBB_runtime_version
            version.restype = ctypes.c_char_p
            layer["tbb_version"] = version().decode()
        except (OSError, AttributeError):
            pass
    return layer


def tbb_library_dir():
    """Folder of the PyPI tbb wheel's libtbb.so.12 (requirements-dev.txt), or None."""
    import importlib.metadata

    try:
        files = importlib.metadata.files("tbb") or ()
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in files:
        if file.name == "libtbb.so.12":
            return os.path.dirname(os.path.realpath(file.locate()))
    return None


def run_ours_on_layer(layer: str, args, tbb_lib) -> dict:
    """Our run in a fresh interpreter on numba's threading layer ``layer`` (numba fixes it once per process)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_THREADING_LAYER")}
    env["NUMBA_THREADING_LAYER"] = layer
    if layer == "tbb" and tbb_lib:
        env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [tbb_lib, env.get("LD_LIBRARY_PATH")]))
    command = [sys.executable, "-m", "scripts.bench.pile", "--engines", "ours", "--no-compile-probe", "--n",
               str(args.n[0]), "--seconds", str(args.seconds), "--seed", str(args.seed), "--scene", args.scene]
    proc = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return dict(engine="ours", requested_layer=layer, error=proc.stderr.strip().splitlines()[-1:])
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result.update(requested_layer=layer, tbb_lib=tbb_lib if layer == "tbb" else None)
    return result


def probe_first_step(n: int, seed: int) -> dict:
    """Run in a fresh interpreter: wall time from before `import solver` to the end of step one."""
    t0, c0 = time.perf_counter(), time.process_time()
    import quadric_solver as solver

    t1 = time.perf_counter()
    pile = make_pile(n, seed)
    sim = solver.Simulation(build_our_scene(pile), dt=DT)
    t2 = time.perf_counter()
    sim.step(n=1)
    t3, c3 = time.perf_counter(), time.process_time()
    # CPU time as well: on a shared machine the wall time includes waiting for a core
    return dict(import_s=t1 - t0, build_s=t2 - t1, first_step_s=t3 - t2, time_to_first_step_s=t3 - t0,
                cpu_time_to_first_step_s=c3 - c0)


def measure_compile(n: int, seed: int) -> dict:
    """Cold: fresh interpreter, empty numba cache. Warm: fresh interpreter, the cache it left."""
    out = {}
    with tempfile.TemporaryDirectory(prefix="qd_numba_cache_") as cache_dir:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
        for label in ("cold", "warm"):
            proc = subprocess.run(
                [sys.executable, "-m", "scripts.bench.pile", "--probe-first-step", "--n", str(n), "--seed", str(seed)],
                cwd=REPO_ROOT,
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            if proc.returncode != 0:
                raise RuntimeError(f"{label} compile probe failed:\n{proc.stderr}")
            out[label] = json.loads(proc.stdout.strip().splitlines()[-1])
    return dict(
        engine="ours",
        case="compile",
        n=n,
        cold_time_to_first_step_s=out["cold"]["time_to_first_step_s"],
        warm_time_to_first_step_s=out["warm"]["time_to_first_step_s"],
        cold_cpu_s=out["cold"]["cpu_time_to_first_step_s"],
        warm_cpu_s=out["warm"]["cpu_time_to_first_step_s"],
        cold=out["cold"],
        warm=out["warm"],
    )


# --------------------------------------------------------------------------- reporting


def _result(engine, pile, steps, step_seconds, contacts, max_pen, extra) -> dict:
    """contacts and max_pen are sampled once per call (per step unless --steps-per-call > 1)."""
    min_semi = float(pile["semi_axes"].min())
    settle_window = max(1, int(round(0.1 / DT * len(contacts) / steps)))  # the last 0.1 s of samples
    total_contacts = float(contacts.mean()) * steps
    res = dict(
        engine=engine,
        scene=pile["scene"],
        n=pile["n"],
        steps_per_s=steps / step_seconds,
        mean_contacts=float(contacts.mean()),
        max_penetration=float(max_pen.max()),
        max_penetration_rel_min_semi_axis=float(max_pen.max()) / min_semi,
        final_max_penetration=float(max_pen[-settle_window:].max()),
        final_max_penetration_rel_min_semi_axis=float(max_pen[-settle_window:].max()) / min_semi,
        final_contacts=float(contacts[-1]),
        ns_per_contact_step=(1e9 * step_seconds / total_contacts) if total_contacts > 0 else None,
        steps=steps,
        simulated_s=steps * DT,
        step_wall_s=step_seconds,
        min_semi_axis=min_semi,
        box_side=pile["box_side"],
        grid_layers=pile["grid_layers"],
        seed=pile["seed"],
    )
    res.update(extra)
    return res


def _emit(obj: dict) -> None:
    print(json.dumps(obj), flush=True)


def compare_layers(args, engines, steps) -> None:
    """One pile, ours once per threading layer (fresh processes), MuJoCo once: ratios to MuJoCo and to OpenMP."""
    layers = [layer.strip() for layer in args.threading_layer.split(",") if layer.strip()]
    tbb_lib = args.tbb_lib or tbb_library_dir()
    pile = SCENES[args.scene](args.n[0], args.seed)
    mujoco = run_mujoco(pile, steps) if "mujoco" in engines else None
    if mujoco:
        _emit(mujoco)
    ours = {}
    for layer in layers:
        ours[layer] = run_ours_on_layer(layer, args, tbb_lib)
        _emit(ours[layer])
    for layer, result in ours.items():
        if "steps_per_s" not in result:
            continue
        ratio = dict(ratio="ours/mujoco", n=args.n[0], scene=args.scene, layer=layer, ran_on=result["threading_layer"]["layer"],
                     launch_us=result["launch_us"], max_penetration_rel_min_semi_axis=result[
                         "max_penetration_rel_min_semi_axis"])
        if mujoco:
            ratio["steps_per_s"] = result["steps_per_s"] / mujoco["steps_per_s"]
        if "steps_per_s" in ours.get("omp", {}):
            ratio["omp_over_this_layer"] = ours["omp"]["steps_per_s"] / result["steps_per_s"]
        _emit(ratio)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[1000], help="body counts; several = scaling mode")
    ap.add_argument("--engines", default=None, help="comma list of ours,mujoco (default: both for one n, ours for scaling)")
    ap.add_argument("--with-mujoco", action="store_true", help="in scaling mode, run MuJoCo for every n too")
    ap.add_argument("--seconds", type=float, default=2.0, help="simulated seconds per run (default 2)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scene", choices=sorted(SCENES), default="pile",
                    help="pile: random orientations, jittered drop grid (default); grid: make_grid's aligned cube")
    ap.add_argument("--steps-per-call", type=int, default=1,
                    help="ours: steps per sim.step(n=...) call; statistics are sampled once per call (default 1)")
    ap.add_argument("--no-compile-probe", action="store_true", help="skip the cold/warm compile measurement")
    ap.add_argument("--probe-first-step", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--threading-layer", default=None,
                    help="comma list of numba threading layers (omp,workqueue,tbb): ours runs once per layer, each "
                         "in its own process, with MuJoCo once; ratios per layer")
    ap.add_argument("--tbb-lib", default=None,
                    help="folder with the libtbb.so.12 to load for the tbb layer (default: the PyPI tbb wheel's)")
    args = ap.parse_args(argv)

    if args.probe_first_step:
        _emit(probe_first_step(args.n[0], args.seed))
        return

    scaling = len(args.n) > 1
    if args.engines:
        engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    else:
        engines = ["ours", "mujoco"] if (not scaling or args.with_mujoco) else ["ours"]
    unknown = set(engines) - {"ours", "mujoco"}
    if unknown:
        ap.error(f"unknown engine(s): {sorted(unknown)}")
    if "ours" in engines:
        try:
            import quadric_solver  # noqa: F401
        except ImportError:
            sys.exit("cannot import quadric_solver: run from the repository root as `python -m scripts.bench.pile`")

    steps = max(1, int(round(args.seconds / DT)))
    if args.threading_layer:
        compare_layers(args, engines, steps)
        return
    if "ours" in engines and not args.no_compile_probe:
        _emit(measure_compile(min(args.n), args.seed))

    per_n = {}
    for n in args.n:
        pile = SCENES[args.scene](n, args.seed)
        results = {}
        for engine in engines:
            if engine == "mujoco":
                results[engine] = run_mujoco(pile, steps)
            else:
                results[engine] = run_ours(pile, steps, max(1, args.steps_per_call))
            _emit(results[engine])
        if "ours" in results and "mujoco" in results:
            o, m = results["ours"], results["mujoco"]
            _emit(
                dict(
                    ratio="ours/mujoco",
                    scene=args.scene,
                    n=n,
                    steps_per_s=o["steps_per_s"] / m["steps_per_s"],
                    mean_contacts=o["mean_contacts"] / m["mean_contacts"] if m["mean_contacts"] else None,
                    max_penetration=o["max_penetration"] / m["max_penetration"] if m["max_penetration"] else None,
                )
            )
        per_n[n] = results

    if scaling:
        for engine in engines:
            base_n = args.n[0]
            base = per_n[base_n][engine]["ns_per_contact_step"]
            for n in args.n:
                ns = per_n[n][engine]["ns_per_contact_step"]
                _emit(
                    dict(
                        engine=engine,
                        case="scaling",
                        n=n,
                        ns_per_contact_step=ns,
                        ratio_to_n=base_n,
                        ratio=(ns / base) if (ns and base) else None,
                        seconds=args.seconds,
                    )
                )


if __name__ == "__main__":
    main()
