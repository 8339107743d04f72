"""First use: the Linux zip's prebuilt cache serves the first Simulate in a fresh Blender user folder, and the modal
operator gives control back while the solver loads or compiles.

The times are recorded for the benchmark's report, never asserted; what is asserted is where the kernels came from.
"""
import ast
import re
import zipfile
from pathlib import Path

import pytest

from tests.addon.conftest import blender_env, run_scenario
from tests.helpers import ROOT


@pytest.fixture(scope="module")
def fresh_user(tmp_path_factory):
    """The environment of a Blender user folder of its own, nothing installed yet."""
    user_dir = tmp_path_factory.mktemp("fresh-user")
    (user_dir / "home").mkdir()
    (user_dir / "resources" / "extensions").mkdir(parents=True)
    return blender_env(user_dir)


@pytest.fixture(scope="module")
def first_use(fresh_user, extension_zip, tmp_path_factory):
    """Install the built zip into the fresh user folder, as a new user would, and Simulate the default cube."""
    install = run_scenario(fresh_user, tmp_path_factory.mktemp("install"), "install", extension_zip)
    assert install["result"] == ["FINISHED"] and install["registered"]
    return run_scenario(fresh_user, tmp_path_factory.mktemp("first_use"), "first_use")


def cache_files(root):
    """{path under root: (size, mtime in ns)} of every file in a numba cache folder."""
    root = Path(root)
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def updated(first_use, fresh_user, extension_zip, tmp_path_factory):
    """After the first Simulate, an update of the extension installed over it: a newer version whose add-on
    changed and whose solver did not; then the default cube simulated again in a new Blender."""
    before = cache_files(first_use["cache_root"])
    newer = tmp_path_factory.mktemp("update") / extension_zip.name.replace("0.1.0", "0.1.1")
    with zipfile.ZipFile(extension_zip) as old, zipfile.ZipFile(newer, "w", zipfile.ZIP_DEFLATED) as new:
        for item in old.infolist():
            data = old.read(item)
            if item.filename == "blender_manifest.toml":
                data = data.replace(b'\nversion = "0.1.0"', b'\nversion = "0.1.1"')
            elif item.filename == "addon/ui.py":
                data += b"\n# changed by the update\n"
            new.writestr(item, data)
    install = run_scenario(fresh_user, tmp_path_factory.mktemp("install-update"), "install", newer)
    assert install["result"] == ["FINISHED"] and install["registered"]
    installed_ui = Path(install["extension_dir"]) / "addon" / "ui.py"
    again = run_scenario(fresh_user, tmp_path_factory.mktemp("after-update"), "first_use")
    return dict(before=before, after=cache_files(again["cache_root"]), again=again,
                updated_ui=installed_ui.read_text().endswith("# changed by the update\n"),
                manifest=(Path(install["extension_dir"]) / "blender_manifest.toml").read_text())


def never_cached():
    """The solver's functions numba compiles in every process: those with an object-mode block (numba cannot cache
    them), as 'module.function' the way the job names them."""
    names = set()
    for path in (ROOT / "quadric_solver").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and "objmode" in ast.unparse(node):
                module = ".".join(path.relative_to(ROOT / "quadric_solver").with_suffix("").parts)
                names.add(f"{module}.{node.name}")
    return names


def test_the_first_simulate_loads_the_prebuilt_kernels_and_compiles_none(first_use):
    assert first_use["simulate"] == ["FINISHED"], first_use["status"]
    assert first_use["prebuilt_note"] == "using the prebuilt solver cache"
    assert first_use["cpu_name"] == "generic"  # the target the prebuilt kernels were compiled for
    assert set(first_use["compiled"]) <= never_cached(), first_use["compiled"]  # e.g. the phase clock, in 0 s
    assert first_use["first_frame_seconds"] is not None
    print(f"first Simulate of the default cube: {first_use['seconds']:.1f} s, first frame after "
          f"{first_use['first_frame_seconds']:.1f} s")


def test_the_default_cube_rests_on_the_plane_after_its_first_simulate(first_use):
    assert first_use["final_z"] == pytest.approx(1.0, abs=1e-3)  # half its 2 m size above the plane


def test_an_update_that_leaves_the_solver_as_it_was_keeps_and_uses_its_cache(updated):
    assert updated["updated_ui"] and 'version = "0.1.1"' in updated["manifest"]  # the update was installed
    again = updated["again"]
    assert again["simulate"] == ["FINISHED"], again["status"]
    assert set(again["compiled"]) <= never_cached(), again["compiled"]  # nothing compiled again
    assert again["final_z"] == pytest.approx(1.0, abs=1e-3)
    assert updated["before"]  # the first Simulate's cache: still there, not one file rewritten or added
    assert updated["after"] == updated["before"]


@pytest.fixture(scope="module")
def control(scenario):
    return scenario("simulate_control")


def test_the_panel_says_what_the_run_does_in_each_phase(control):
    assert control["describe_starting"] == "Loading the solver"
    assert re.fullmatch(r"Compiling the solver \(first use; kept for next time\): kernel 37 \(support\), \d+ s",
                        control["describe_compiling"])
    assert control["phase_in_frame"] == "SIMULATING"
    assert control["describe_simulating"] == "Simulating frame 2/24"  # the first frame after the start pose


def test_the_panel_shows_the_time_left_from_the_frames_timed_since_the_first(control):
    # held once 5 of 24 frames were done: 3 frames timed since the first simulated one, 19 to go
    low, high = control["time_left_bounds"]
    shown = [(text, factor) for _, text, factor in control["panel_while_running"]]
    assert len(shown) >= 1 and len(set(shown)) == 1, shown  # the same bar in each panel that shows it
    text, factor = shown[0]
    match = re.fullmatch(r"Simulating frame 5/24, about (\d+) s left", text)
    assert match, text
    assert low - 0.5 <= int(match.group(1)) <= high + 0.5
    assert factor == pytest.approx(5 / 24)


def test_esc_while_compiling_gives_control_back_at_once(control):
    assert control["esc_while_compiling"] == ["CANCELLED"]
    assert control["esc_cancelled_flag"] and control["esc_active_job_cleared"]
    assert control["esc_reports"] == [[["WARNING"], control["esc_status"]]]
    assert "finishes in the background and is kept" in control["esc_status"]


def test_esc_while_simulating_stops_at_the_frame_and_closing_never_waits(control):
    assert control["esc_while_simulating"] == ["RUNNING_MODAL"]  # the worker stops at the end of its frame
    assert control["worker_running_after_cancel"]  # cancel() returned while the worker was still inside a frame
    assert control["worker_state"] == "CANCELLED"
    assert control["keys_after"] == 0  # nothing was baked
