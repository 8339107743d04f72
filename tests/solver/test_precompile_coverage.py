"""The precompiled kinds (quadric_solver/precompile.py) cover every scene a user can make, not just themselves.

The prebuilt cache in the extension and ``python -m quadric_solver compile`` compile one tiny scene per kind. numba
compiles a kernel again for each set of argument types, and the types follow what a scene holds (None where it lacks a part), so
a composition the kinds miss would compile for minutes on its first run. Each scene below mixes the parts in a way
no kind does; after the kinds have run in the same process, running it must compile nothing.
"""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# In a fresh process: every kind first (loaded from the cache, or compiled where it is cold), then each scene
# under a CompileWatcher, which counts compiles and not cache loads.
OTHER_SCENES = textwrap.dedent("""
    import json, numpy as np, quadric_solver as solver
    from quadric_solver.precompile import CompileWatcher, compile_kinds, scene_of

    def rope(scene, attach_to=None):  # ropes touch ellipsoids only (other shapes are refused beside them)
        points = np.stack([np.linspace(0.0, 0.4, 6), np.zeros(6), np.full(6, 0.8)], axis=1)
        attachments = [] if attach_to is None else [[5, attach_to, [-0.1, 0.0, 0.0]]]
        scene.add_rope(points, radius=0.01, attachments=attachments, name="rope")

    def ropes_alone():
        scene = solver.Scene()
        scene.add_plane()
        rope(scene)
        return scene

    def rope_on_a_ball():
        scene = solver.Scene()
        scene.add_plane()
        rope(scene, scene.add_ellipsoid((0.1, 0.1, 0.1), position=(0.5, 0.0, 0.8)))
        return scene

    def ropes_and_particles_without_bodies():
        scene = ropes_alone()
        scene.add_particles([[0.0, 0.5, 1.0], [0.1, 0.5, 1.0]], radius=0.01, name="drops")
        return scene

    def boxes_without_a_mesh_collider():
        scene = solver.Scene()
        scene.add_plane()
        scene.add_body(solver.Box((0.1, 0.1, 0.1)), position=(0.0, 0.0, 0.2))
        scene.add_body(solver.Cylinder(0.1, 0.1), position=(0.3, 0.0, 0.2))
        return scene

    def ellipsoids_boxes_and_particles():
        scene = boxes_without_a_mesh_collider()
        scene.add_ellipsoid((0.1, 0.08, 0.06), position=(-0.3, 0.0, 0.2))
        scene.add_particles([[0.0, 0.5, 1.0], [0.1, 0.5, 1.0]], radius=0.01, name="drops")
        return scene

    scenes = {
        "ropes alone": (ropes_alone, {}),
        "a rope on a ball": (rope_on_a_ball, {}),
        "ropes and particles without bodies": (ropes_and_particles_without_bodies, {}),
        "boxes without a mesh collider": (boxes_without_a_mesh_collider, {}),
        "boxes measured by MPR": (boxes_without_a_mesh_collider, dict(penetration="mpr")),
        "ellipsoids on a mesh collider": (lambda: scene_of(("ellipsoids", "mesh"), solver), {}),
        "ellipsoids, boxes and particles": (ellipsoids_boxes_and_particles, {}),
        "ellipsoids, a mesh collider and particles": (lambda: scene_of(("ellipsoids", "mesh", "particles"), solver),
                                                      {}),
        "ellipsoids without position correction": (lambda: scene_of(("ellipsoids",), solver),
                                                   dict(position_correction=False)),
    }
    compile_kinds()
    compiled = {}
    for name, (make, settings) in scenes.items():
        with CompileWatcher() as watcher:
            sim = solver.Simulation(make(), dt=1 / 240, **settings)
            sim.run(frames=3, fps=240.0, substeps=2)
            sim.step(1)
        compiled[name] = sorted({kernel[0] for kernel in watcher.kernels})
    print(json.dumps(compiled))
""")


def test_scenes_outside_the_precompiled_kinds_compile_nothing():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    result = subprocess.run([sys.executable, "-c", OTHER_SCENES], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=3600)
    assert result.returncode == 0, result.stderr[-3000:]
    compiled = json.loads(result.stdout.strip().splitlines()[-1])
    assert len(compiled) == 9
    assert {name: kernels for name, kernels in compiled.items() if kernels} == {}
