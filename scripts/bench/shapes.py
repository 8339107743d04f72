"""Shapes benchmark: N boxes, or N superellipsoids, dropped into an open box; ours against MuJoCo.

Run from the repository root:

    .venv/bin/python -m scripts.bench.shapes                          # 1,000 boxes and 1,000 superellipsoids, 2 s
    .venv/bin/python -m scripts.bench.shapes --shape box --n 200 --seconds 0.5
    .venv/bin/python -m scripts.bench.shapes --penetration epa,mpr,sgjk   # ours once per method

Both engines get the same scene from the same seed: half extents (semi-axes) uniform in
[0.02, 0.04] m, density 1000 kg/m^3, uniformly random orientations, released at rest from a
jittered grid whose pitch clears the bounding spheres (a box's corner reaches sqrt 3 times its
largest half extent), ten layers high, above an open box with room for about four layers.
Superellipsoids have exponents (0.4, 0.4): rounded boxes. Hulls are pebbles: the convex hull of
HULL_POINTS random points on the surface of the ellipsoid with those semi-axes (``--shape hull``).
MuJoCo 3 has native boxes; the superellipsoids go to it as convex meshes of 300 surface points
(Barr's parametrisation, 15 x 20), the hulls as meshes of their points (MuJoCo takes their hull).
MuJoCo keeps the settings of pile.py (CG, 20 iterations, elliptic cone, soft contacts).

One JSON line per engine and shape (ours once per --penetration method: how overlapping pairs are measured,
Simulation(penetration=...)), then a ratio line per method. Penetration for ours is the deepest contact
per step (max_penetration); for MuJoCo the deepest of data.contact.dist. Both are reported relative
to the smallest half extent in the scene.
"""
from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np

from scripts.bench.pile import (DENSITY, DT, FRICTION, GRAVITY, MUJOCO_CONE, MUJOCO_ITERATIONS, _grid_centres,
                                threading_layer_record)

SIZE_RANGE = (0.02, 0.04)  # m
EXPONENTS = (0.4, 0.4)
LAYERS = 10
GAP = 0.005  # m between bounding spheres at release
MESH_POINTS = (15, 20)  # superellipsoid mesh for MuJoCo: latitude x longitude samples
HULL_POINTS = 24  # points on the ellipsoid whose hull is a pebble


def make_scene(n: int, seed: int, shape: str) -> dict:
    rng = np.random.default_rng(seed)
    sizes = rng.uniform(*SIZE_RANGE, size=(n, 3))
    quats = rng.normal(size=(n, 4))
    quats /= np.linalg.norm(quats, axis=1, keepdims=True)
    radius = math.sqrt(3.0) * SIZE_RANGE[1]
    spacing = 2.0 * radius + GAP
    per_row = max(1, math.ceil(math.sqrt(n / LAYERS)))
    positions, layers = _grid_centres(n, per_row, spacing, radius + GAP)
    positions[:, :2] += rng.uniform(-0.5 * GAP, 0.5 * GAP, size=(n, 2))
    side = per_row * spacing + GAP
    scene = dict(n=n, seed=seed, shape=shape, sizes=sizes, quats=quats, positions=positions, side=side,
                 wall_height=radius + GAP + layers * spacing)
    if shape == "hull":
        directions = rng.normal(size=(n, HULL_POINTS, 3))
        directions /= np.linalg.norm(directions, axis=2, keepdims=True)
        scene["points"] = directions * sizes[:, None, :]
        # the half extents the overlap is measured against: those of each pebble's points
        scene["sizes"] = np.abs(scene["points"]).max(axis=1)
    return scene


def superellipsoid_points(size, exponents=EXPONENTS, samples=MESH_POINTS) -> np.ndarray:
    """Barr's parametric surface: x = a C(eta)^e1 C(omega)^e2, y = b C(eta)^e1 S(omega)^e2, z = c S(eta)^e1."""
    def power(x, e):
        return np.sign(x) * np.abs(x) ** e

    e1, e2 = exponents
    eta = np.linspace(-math.pi / 2, math.pi / 2, samples[0])
    omega = np.linspace(-math.pi, math.pi, samples[1], endpoint=False)
    eta, omega = np.meshgrid(eta, omega, indexing="ij")
    points = np.stack([size[0] * power(np.cos(eta), e1) * power(np.cos(omega), e2),
                       size[1] * power(np.cos(eta), e1) * power(np.sin(omega), e2),
                       size[2] * power(np.sin(eta), e1)], axis=-1).reshape(-1, 3)
    return np.unique(np.round(points, 12), axis=0)


def mujoco_xml(scene: dict) -> str:
    half, hz = 0.5 * scene["side"], 0.5 * scene["wall_height"]
    walls = [((0.0, 0.0, 0.0), (0, 0, 1)), ((-half, 0.0, hz), (1, 0, 0)), ((half, 0.0, hz), (-1, 0, 0)),
             ((0.0, -half, hz), (0, 1, 0)), ((0.0, half, hz), (0, -1, 0))]
    lines = ['<mujoco model="shapes">',
             f'  <option timestep="{DT!r}" gravity="0 0 {-GRAVITY}" solver="CG" iterations="{MUJOCO_ITERATIONS}" '
             f'cone="{MUJOCO_CONE}"/>',
             f'  <size memory="{max(64, scene["n"] // 10)}M"/>',
             f'  <default><geom condim="3" friction="{FRICTION} 0 0"/></default>']
    if scene["shape"] in ("superellipsoid", "hull"):
        lines.append("  <asset>")
        for i, size in enumerate(scene["sizes"]):
            points = superellipsoid_points(size) if scene["shape"] == "superellipsoid" else scene["points"][i]
            vertices = " ".join(f"{v:.12g}" for v in points.ravel())
            lines.append(f'    <mesh name="s{i}" vertex="{vertices}"/>')
        lines.append("  </asset>")
    lines.append("  <worldbody>")
    for pos, zaxis in walls:
        lines.append(f'    <geom type="plane" size="0 0 1" pos="{pos[0]} {pos[1]} {pos[2]}" '
                     f'zaxis="{zaxis[0]} {zaxis[1]} {zaxis[2]}"/>')
    for i in range(scene["n"]):
        p, q, a = scene["positions"][i], scene["quats"][i], scene["sizes"][i]
        geom = (f'type="box" size="{a[0]:.17g} {a[1]:.17g} {a[2]:.17g}"' if scene["shape"] == "box"
                else f'type="mesh" mesh="s{i}"')
        lines.append(f'    <body pos="{p[0]:.17g} {p[1]:.17g} {p[2]:.17g}" '
                     f'quat="{q[0]:.17g} {q[1]:.17g} {q[2]:.17g} {q[3]:.17g}"><freejoint/>'
                     f'<geom {geom} density="{DENSITY}"/></body>')
    lines += ["  </worldbody>", "</mujoco>"]
    return "\n".join(lines)


def run_mujoco(scene: dict, steps: int) -> dict:
    import mujoco

    model = mujoco.MjModel.from_xml_string(mujoco_xml(scene))
    data = mujoco.MjData(model)
    seconds, contacts, deepest = np.empty(steps), np.empty(steps), np.empty(steps)
    for k in range(steps):
        t0 = time.perf_counter()
        mujoco.mj_step(model, data)
        seconds[k] = time.perf_counter() - t0
        contacts[k] = data.ncon
        deepest[k] = max(0.0, float(-data.contact.dist[:data.ncon].min())) if data.ncon else 0.0
    return _result("mujoco", scene, steps, seconds, contacts, deepest, dict(mujoco_version=mujoco.__version__))


def our_scene(scene: dict):
    import quadric_solver as solver

    out = solver.Scene(gravity=(0.0, 0.0, -GRAVITY))
    material = solver.Material(friction=FRICTION)
    half, hz = 0.5 * scene["side"], 0.5 * scene["wall_height"]
    out.add_box_container(center=(0.0, 0.0, hz), half_extents=(half, half, hz), material=material)
    for i in range(scene["n"]):
        size = tuple(scene["sizes"][i])
        if scene["shape"] == "hull":
            shape = solver.ConvexHull(scene["points"][i])
        else:
            shape = {"box": solver.Box, "ellipsoid": solver.Ellipsoid,
                     "superellipsoid": lambda axes: solver.Superellipsoid(axes, EXPONENTS)}[scene["shape"]](size)
        out.add_body(shape, position=tuple(scene["positions"][i]), orientation=tuple(scene["quats"][i]),
                     density=DENSITY, material=material)
    return out


def run_ours(scene: dict, steps: int, penetration: str = "epa", contact_reuse: float | None = None) -> dict:
    import quadric_solver as solver

    settings = dict(penetration=penetration)
    if contact_reuse is not None:
        settings["contact_reuse"] = contact_reuse
    # compile outside the timing
    solver.Simulation(our_scene(make_scene(8, 1, scene["shape"])), dt=DT, **settings).step(2)
    sim = solver.Simulation(our_scene(scene), dt=DT, **settings)
    seconds, contacts, deepest = np.empty(steps), np.empty(steps), np.empty(steps)
    carried = measured = 0
    phases: dict = {}
    for k in range(steps):
        t0 = time.perf_counter()
        sim.step(1)
        seconds[k] = time.perf_counter() - t0
        contacts[k] = sim.stats["contacts"]
        deepest[k] = sim.stats["max_penetration"]
        carried += sim.stats["carried_pairs"]
        measured += sim.stats["measured_pairs"]
        for name, value in sim.stats["phase_seconds"].items():
            phases[name] = phases.get(name, 0.0) + float(value)
    return _result("ours", scene, steps, seconds, contacts, deepest,
                   dict(phase_seconds_total=phases, penetration=penetration,
                        contact_reuse=_default("contact_reuse") if contact_reuse is None else contact_reuse,
                        carried_share=carried / max(1, carried + measured),
                        threading_layer=threading_layer_record()))


def _default(name):
    import inspect

    import quadric_solver as solver

    return inspect.signature(solver.Simulation).parameters[name].default


def _result(engine, scene, steps, seconds, contacts, deepest, extra) -> dict:
    """``seconds``: each step's wall time. last_second_steps_per_s is the rate over the run's last second, when
    most of the pile rests."""
    smallest = float(scene["sizes"].min())
    window = max(1, int(round(0.1 / DT)))
    last = min(steps, int(round(1.0 / DT)))
    result = dict(engine=engine, shape=scene["shape"], n=scene["n"], steps=steps, steps_per_s=steps / seconds.sum(),
                  last_second_steps_per_s=last / seconds[-last:].sum(),
                  mean_contacts=float(contacts.mean()), max_penetration=float(deepest.max()),
                  max_penetration_rel_min_half_extent=float(deepest.max()) / smallest,
                  final_max_penetration_rel_min_half_extent=float(deepest[-window:].max()) / smallest,
                  step_wall_s=float(seconds.sum()), seed=scene["seed"])
    result.update(extra)
    return result


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shape", default="box,superellipsoid", help="comma list of box, superellipsoid, hull")
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--engines", default="ours,mujoco")
    parser.add_argument("--penetration", default="epa", help="ours: comma list of epa, mpr, sgjk (default epa)")
    parser.add_argument("--contact-reuse", type=float, default=None,
                        help="ours: Simulation(contact_reuse=...) (default: its default; 0 measures every pair)")
    args = parser.parse_args(argv)
    steps = int(round(args.seconds / DT))
    engines = args.engines.split(",")
    for shape in args.shape.split(","):
        scene = make_scene(args.n, args.seed, shape)
        ours = {}
        for method in args.penetration.split(",") if "ours" in engines else ():
            ours[method] = run_ours(scene, steps, method, args.contact_reuse)
            print(json.dumps(ours[method]), flush=True)
        if "mujoco" in engines:
            mujoco = run_mujoco(scene, steps)
            print(json.dumps(mujoco), flush=True)
            for method, result in ours.items():
                print(json.dumps(dict(ratio="ours/mujoco", shape=shape, n=args.n, penetration=method,
                                      steps_per_s=result["steps_per_s"] / mujoco["steps_per_s"],
                                      last_second_steps_per_s=(result["last_second_steps_per_s"]
                                                               / mujoco["last_second_steps_per_s"]))), flush=True)


if __name__ == "__main__":
    main()
