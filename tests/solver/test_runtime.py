"""numba's settings chosen by quadric_solver/runtime.py: the threading layer and the source-keyed cache folder.

Each case runs a fresh interpreter, since numba fixes both settings once per process.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from scripts.bench.pile import tbb_library_dir
from tests.helpers import ROOT

# a fresh process: import solver, step a one-body scene (parallel kernels run), print the layer it reports
STEP_ONE_BODY = textwrap.dedent("""
    import json, quadric_solver as solver
    scene = solver.Scene()
    scene.add_plane()
    scene.add_ellipsoid((0.05, 0.05, 0.05), position=(0, 0, 0.2))
    sim = solver.Simulation(scene)
    sim.step(2)
    print(json.dumps(sim.stats["threading_layer"]))
""")

# a fresh process that never imports solver: numba's own choice
NUMBA_DEFAULT = textwrap.dedent("""
    import json, numba, numpy as np
    @numba.njit(parallel=True)
    def add_one(a):
        for i in numba.prange(a.size):
            a[i] += 1.0
    add_one(np.zeros(4))
    print(json.dumps(numba.threading_layer()))
""")


# numba's settings a test's fresh process keeps: where the kernels are cached and for which CPU, so that it loads
# the suite's kernels (scripts/test: generic CPU, build/numba-generic) instead of compiling them for minutes
KEPT = ("NUMBA_CACHE_DIR", "NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES")


def _without_numba_choices():
    """This process's environment without numba's settings (the threading layer among them) but KEPT."""
    return {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_") or k in KEPT}


def _env_with_tbb(**variables):
    """A clean environment in which the PyPI tbb wheel's runtime (a development requirement) loads on any machine."""
    tbb = tbb_library_dir()
    assert tbb, "the tbb wheel from requirements-dev.txt has no libtbb.so.12"
    env = _without_numba_choices()
    env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [tbb, env.get("LD_LIBRARY_PATH")]))
    env["PYTHONPATH"] = str(ROOT)
    env.update(variables)
    return env


def _run_json(script, env, cwd=ROOT):
    result = subprocess.run([sys.executable, "-c", script], cwd=cwd, env=env, capture_output=True, text=True,
                            timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="LD_LIBRARY_PATH makes the tbb wheel load on Linux")
def test_solver_never_picks_tbb_where_a_tbb_runtime_loads():
    env = _env_with_tbb()
    assert _run_json(NUMBA_DEFAULT, env) == "tbb"  # numba's own default in this environment: the case to avoid
    assert _run_json(STEP_ONE_BODY, env) in ("omp", "workqueue")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="LD_LIBRARY_PATH makes the tbb wheel load on Linux")
@pytest.mark.parametrize("layer", ["workqueue", "tbb"])
def test_a_threading_layer_the_user_sets_is_respected(layer):
    assert _run_json(STEP_ONE_BODY, _env_with_tbb(NUMBA_THREADING_LAYER=layer)) == layer


# a fresh process: step a one-body scene, print the layer, the launch cost measured and the serial_below it chose
STEP_LAUNCH = STEP_ONE_BODY.replace('print(json.dumps(sim.stats["threading_layer"]))',
                                    'print(json.dumps([sim.stats["threading_layer"], sim.stats["launch_seconds"], '
                                    'sim.settings.serial_below]))')
DEBIAN_TBB = ("libtbb12", "libtbbmalloc2")  # Debian 12's TBB 2021.8, whose launches grow (quadric_solver/parallel.py)


@pytest.fixture(scope="module")
def debian_tbb():
    """The folder of Debian 12's libtbb.so.12.8, unpacked from the packages apt-get downloads (kept in build/)."""
    folder = ROOT / "build" / "debian-tbb"
    lib = folder / "usr" / "lib" / "x86_64-linux-gnu"
    if not (lib / "libtbb.so.12").exists():
        debs = folder / "debs"
        debs.mkdir(parents=True, exist_ok=True)
        got = subprocess.run(["apt-get", "download", *DEBIAN_TBB], cwd=debs, capture_output=True, text=True,
                             timeout=300)
        assert got.returncode == 0, f"apt-get download {' '.join(DEBIAN_TBB)} failed: {got.stderr[-2000:]}"
        for deb in debs.glob("*.deb"):
            subprocess.run(["dpkg", "-x", str(deb), str(folder)], check=True, timeout=120)
    assert (lib / "libtbb.so.12.8").exists(), f"not Debian 12's TBB 2021.8: {sorted(p.name for p in lib.iterdir())}"
    return lib


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Debian's TBB package and LD_LIBRARY_PATH: Linux")
def test_a_tbb_whose_launches_grow_runs_every_loop_serially(debian_tbb):
    # the user asks for TBB where Debian's 2021.8 loads: each launch costs more than the last (8 us, then 37 to
    # 50 us after 2,000 launches here, on two threads; one thread does not grow), so every loop runs serially
    from quadric_solver.parallel import ALL

    env = _without_numba_choices()
    env.update(LD_LIBRARY_PATH=str(debian_tbb), NUMBA_THREADING_LAYER="tbb", NUMBA_NUM_THREADS="2",
               PYTHONPATH=str(ROOT))
    layer, launch, serial_below = _run_json(STEP_LAUNCH, env)
    assert layer == "tbb" and launch == float("inf") and serial_below == ALL


def test_cli_reports_the_threading_layer(tmp_path):
    import quadric_solver as solver

    scene = solver.Scene()
    scene.add_plane()
    scene.add_ellipsoid((0.05, 0.05, 0.05), position=(0, 0, 0.2))
    scene.save(tmp_path / "scene.json")
    result = subprocess.run([sys.executable, "-m", "quadric_solver", "run", str(tmp_path / "scene.json"), "-o",
                             str(tmp_path / "rec.npz"), "--frames", "2", "--quiet"], cwd=ROOT,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr
    assert re.search(r"\(threading layer (omp|workqueue), \d+ threads\)", result.stdout), result.stdout


CALLEE = "from numba import njit\n\n\n@njit(cache=True)\ndef value():\n    return {}\n"
CALLER = "from numba import njit\n\nfrom .callee import value\n\n\n@njit(cache=True)\ndef twice():\n    return 2.0 * value()\n"


def _toy_package(folder, keyed):
    """A package laid out like the solver: runtime.py (the solver's own) and a cached kernel calling another file's."""
    package = folder / "toy"
    package.mkdir(parents=True)
    shutil.copy(ROOT / "quadric_solver" / "runtime.py", package / "runtime.py")
    (package / "__init__.py").write_text("from . import runtime\n\nruntime.configure()\n" if keyed else "")
    (package / "callee.py").write_text(CALLEE.format("1.0"))
    (package / "caller.py").write_text(CALLER)
    return package


@pytest.mark.parametrize("keyed", [True, False], ids=["source-keyed cache", "numba's own cache"])
def test_editing_a_callee_changes_its_cached_callers_on_the_next_run(tmp_path, keyed):
    package = _toy_package(tmp_path, keyed)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")  # the keyed cache's root; numba's own uses __pycache__
    script = "import json; from toy.caller import twice; print(json.dumps(twice()))"
    assert _run_json(script, env, cwd=tmp_path) == 2.0
    (package / "callee.py").write_text(CALLEE.format("5.0"))
    if keyed:  # the fix: a new source hash means a new cache folder, so the caller is compiled again
        assert _run_json(script, env, cwd=tmp_path) == 10.0
    else:  # numba's trap: the caller's cache entry checks only the caller's own file and stays stale
        assert _run_json(script, env, cwd=tmp_path) == 2.0


def test_caches_of_other_source_versions_unused_for_two_weeks_are_removed(tmp_path):
    from quadric_solver.runtime import STALE_CACHE_SECONDS, prune_stale_caches

    now = 2e9
    folders = {name: tmp_path / name for name in ("0123456789abcdef", "fedcba9876543210", "aaaaaaaaaaaaaaaa",
                                                   "not-a-key")}
    for name, folder in folders.items():
        (folder / "quadric_solver").mkdir(parents=True)
        age = 0.5 * STALE_CACHE_SECONDS if name == "aaaaaaaaaaaaaaaa" else 2 * STALE_CACHE_SECONDS
        os.utime(folder, (now - age, now - age))
    prune_stale_caches(str(folders["0123456789abcdef"]), now=now)
    assert folders["0123456789abcdef"].exists()  # the one in use, old as it was, is kept and marked used
    assert os.path.getmtime(folders["0123456789abcdef"]) == now
    assert not folders["fedcba9876543210"].exists()  # another version, unused for four weeks
    assert folders["aaaaaaaaaaaaaaaa"].exists()  # another version, used a week ago
    assert folders["not-a-key"].exists()  # not ours to remove


def test_a_loop_runs_serially_where_one_thread_beats_a_launch_plus_its_share():
    from quadric_solver.parallel import (ALL, ITEM_SECONDS, LAUNCH_FLOOR, WORKQUEUE_LAUNCH_SECONDS,
                                         WORKQUEUE_SERIAL_BELOW, break_even_items, serial_below_for)

    for launch, threads in ((1.2e-6, 2), (53e-6, 2), (53e-6, 8)):
        n = break_even_items(launch, threads)
        serial, parallel = n * ITEM_SECONDS, launch + n * ITEM_SECONDS / threads
        assert abs(serial - parallel) <= ITEM_SECONDS  # the break-even point, to one item
    assert break_even_items(53e-6, 1) == ALL  # one thread: never launch
    assert break_even_items(float("inf"), 2) == ALL  # a launch cost that grows with every launch: never launch
    # the defaults are fixed per layer, so a run never depends on a measurement: near the break-even of
    # a workqueue launch with work, as measured here (two threads), none on OpenMP or a TBB that stays cheap
    assert abs(WORKQUEUE_SERIAL_BELOW - break_even_items(WORKQUEUE_LAUNCH_SECONDS, 2)) < 0.1 * WORKQUEUE_SERIAL_BELOW
    assert serial_below_for("workqueue", 53e-6) == serial_below_for("workqueue", 19e-6) == WORKQUEUE_SERIAL_BELOW
    assert serial_below_for("omp", 1.2e-6) == serial_below_for("omp", 8e-3) == LAUNCH_FLOOR
    assert serial_below_for("tbb", 2.5e-6) == LAUNCH_FLOOR and serial_below_for("tbb", float("inf")) == ALL
    # the floor is a few microseconds of work: under what a launch costs once the cores are busy
    assert LAUNCH_FLOOR * ITEM_SECONDS < 10e-6 and LAUNCH_FLOOR < WORKQUEUE_SERIAL_BELOW


def test_importing_the_package_loads_no_numba_until_a_public_name_is_used(tmp_path):
    """The add-on imports quadric_solver.rotations before it sets its cache root, and builds scenes on Blender's main
    thread: neither may start numba. Simulation loads the kernels, and the cache folder is then keyed under the
    root set by then."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env.update(PYTHONPATH=str(ROOT), NUMBA_CACHE_DIR=str(tmp_path / "early"))
    script = textwrap.dedent(f"""
        import json, os, sys
        import numpy as np
        import quadric_solver as solver, quadric_solver.rotations
        before = "numba" in sys.modules
        solver.rotations.mul([1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0])
        os.environ["NUMBA_CACHE_DIR"] = {str(tmp_path / "late")!r}  # as addon/runtime.py does, later
        scene = solver.Scene()
        scene.add_plane()
        scene.add_body(solver.Box((0.1, 0.1, 0.1)), position=(0.0, 0.0, 1.0))
        scene.add_rope(np.array([[0.0, 0.0, 2.0], [0.5, 0.0, 2.0], [1.0, 0.0, 2.0]]))
        scene.add_particles(np.zeros((3, 3)))
        scene.add_force(solver.Wind((1.0, 0.0, 0.0), 1.0))
        scene.add_mesh_collider(np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]), [[0, 1, 2]])
        with_scene = "numba" in sys.modules
        from quadric_solver import Simulation
        from numba.core import config
        print(json.dumps([before, with_scene, Simulation.__module__, config.CACHE_DIR]))
    """)
    before, with_scene, module, cache = _run_json(script, env)
    assert before is False and with_scene is False
    assert module == "quadric_solver.simulation"
    assert os.path.dirname(cache) == str(tmp_path / "late")


# a fresh process: the toy kernel, and whether numba found it in the cache or compiled it
HITS = ("import json; from {package}.caller import twice; twice(); "
        "print(json.dumps([twice(), sum(twice.stats.cache_hits.values()), sum(twice.stats.cache_misses.values())]))")


def test_a_cache_made_from_one_copy_serves_another_copy_of_the_same_sources(tmp_path):
    """The prebuilt cache shipped in the extension is made in a build folder and read from the user's install."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    first, second = tmp_path / "build", tmp_path / "installed" / "elsewhere"
    _toy_package(first, keyed=True)
    shutil.copytree(first / "toy", second / "toy")
    assert _run_json(HITS.format(package="toy"), env, cwd=first) == [2.0, 0, 1]  # compiled and cached
    assert _run_json(HITS.format(package="toy"), env, cwd=second) == [2.0, 1, 0]  # the other copy: from the cache
    # numba records the solver's classes by module name, so a copy imported under another name compiles apart
    (second / "outer").mkdir()
    shutil.move(str(second / "toy"), second / "outer" / "toy")
    (second / "outer" / "__init__.py").write_text("")
    assert _run_json(HITS.format(package="outer.toy"), env, cwd=second) == [2.0, 0, 1]
    keyed = [p for p in (tmp_path / "cache" / "quadric_dynamics" / "numba").iterdir()]
    assert len(keyed) == 1 and sorted(p.name for p in keyed[0].iterdir()) == ["outer.toy", "toy"]


def test_the_tools_left_out_of_the_source_hash_are_imported_by_no_solver_module():
    """Editing them keeps the compiled kernels, which is only safe while no kernel can reach them."""
    import ast

    from quadric_solver.runtime import NOT_IN_KERNELS, SOURCE_ROOT

    left_out = {name[:-3] for name in NOT_IN_KERNELS}
    for folder, _, files in os.walk(SOURCE_ROOT):
        for name in files:
            if not name.endswith(".py") or (folder == SOURCE_ROOT and name in NOT_IN_KERNELS):
                continue
            path = os.path.join(folder, name)
            for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
                names = []
                if isinstance(node, ast.ImportFrom):
                    names = [node.module or ""] + [alias.name for alias in node.names]
                elif isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                reached = {part for n in names for part in n.split(".")} & left_out
                assert not reached, f"{os.path.relpath(path, SOURCE_ROOT)} imports {reached}"


def test_editing_a_tool_left_out_of_the_source_hash_keeps_the_hash(tmp_path):
    from quadric_solver.runtime import NOT_IN_KERNELS, SOURCE_ROOT, source_hash

    copy = tmp_path / "quadric_solver"
    shutil.copytree(SOURCE_ROOT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = source_hash(str(copy))
    for name in NOT_IN_KERNELS:
        (copy / name).write_text((copy / name).read_text() + "\n# edited\n")
    assert source_hash(str(copy)) == before
    (copy / "math3d.py").write_text((copy / "math3d.py").read_text() + "\n# edited\n")
    assert source_hash(str(copy)) != before


def test_the_emit_range_function_is_loaded_before_any_kernel_that_calls_it():
    """A call resolves to the first loaded copy of a callee, and the copy inside collide's cached kernels ran at half
    the speed of the callee's own (docs/numba.md): a Simulation loads _emit_body_range's own code first."""
    script = """
import json, quadric_solver as solver
from quadric_solver.collision import driver
scene = solver.Scene()
scene.add_plane()
scene.add_body(solver.Box((0.1, 0.2, 0.3)), position=(0.0, 0.0, 1.0))
sim = solver.Simulation(scene, overlap_tolerance=None)  # no overlap check: no kernel has run yet
loaded = {"emit": len(driver._emit_body_range.overloads), "collide": len(driver.collide.overloads)}
print(json.dumps(loaded))
"""
    env = {k: v for k, v in os.environ.items()}
    env["PYTHONPATH"] = str(ROOT)
    loaded = _run_json(script, env)
    assert loaded["emit"] == 1 and loaded["collide"] == 0
