"""First use: the Linux zip's prebuilt cache serves the first Simulate in a fresh Blender user folder, and the modal
operator gives control back while the solver loads or compiles.

The times are recorded for the benchmark's report, never asserted; what is asserted is where the kernels came from.
"""
import ast
import re

import pytest

from tests.addon.conftest import blender_env, run_scenario
from tests.helpers import ROOT


@pytest.fixture(scope="module")
def first_use(extension_zip, tmp_path_factory):
    """Install the built zip into a user folder of its own, as a new user would, and Simulate the default cube."""
    user_dir = tmp_path_factory.mktemp("fresh-user")
    (user_dir / "home").mkdir()
    (user_dir / "resources" / "extensions").mkdir(parents=True)
    env = blender_env(user_dir)
    install = run_scenario(env, tmp_path_factory.mktemp("install"), "install", extension_zip)
    assert install["result"] == ["FINISHED"] and install["registered"]
    return run_scenario(env, tmp_path_factory.mktemp("first_use"), "first_use")


def never_cached():
    """The solver's functions numba compiles in every process: those with an object-mode block (numba cannot cache
    them), as 'module.function' the way the job names them."""
    names = set()
    for path in (ROOT / "solver").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and "objmode" in ast.unparse(node):
                module = ".".join(path.relative_to(ROOT / "solver").with_suffix("").parts)
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


@pytest.fixture(scope="module")
def control(scenario):
    return scenario("simulate_control")


def test_the_panel_says_what_the_run_does_in_each_phase(control):
    assert control["describe_starting"] == "Loading the solver"
    assert re.fullmatch(r"Compiling the solver \(first use; kept for next time\): kernel 37 \(support\), \d+ s",
                        control["describe_compiling"])
    assert control["phase_in_frame"] == "SIMULATING"
    assert control["describe_simulating"] == "Simulating frame 2/24"  # the first frame after the start pose


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
