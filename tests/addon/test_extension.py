"""The extension package: manifest, built zip, installation into a Blender user folder."""
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def blender_ext_cli():
    import importlib.util

    spec = importlib.util.find_spec("bpy")
    hits = sorted(Path(spec.submodule_search_locations[0]).glob("*/scripts/addons_core/bl_pkg/cli/blender_ext.py"))
    assert hits, "bpy module without bl_pkg"
    return hits[-1]


def test_source_manifest_passes_blenders_validator():
    proc = subprocess.run([sys.executable, str(blender_ext_cli()), "validate", str(ROOT)], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    manifest = tomllib.loads((ROOT / "blender_manifest.toml").read_text())
    assert manifest["id"] == "quadric_dynamics"
    assert manifest["blender_version_min"] == "4.2.0"
    assert manifest["license"] == ["SPDX:GPL-3.0-or-later"]
    assert "files" in manifest["permissions"]
    assert set(manifest["platforms"]) == {"linux-x64", "linux-arm64", "windows-x64", "macos-arm64"}
    assert not any("numpy" in w for w in manifest["wheels"])


def test_linux_zip_holds_package_and_wheels_for_both_pythons(extension_zip):
    with zipfile.ZipFile(extension_zip) as zf:
        names = set(zf.namelist())
        manifest = tomllib.loads(zf.read("blender_manifest.toml").decode())
    assert {"__init__.py", "addon/__init__.py", "quadric_solver/__init__.py", "blender_manifest.toml"} <= names
    wheels = [n for n in names if n.endswith(".whl")]
    for pkg in ("numba", "llvmlite"):
        for tag in ("cp311", "cp313"):
            assert any(Path(w).name.startswith(pkg + "-") and f"-{tag}-" in w and "x86_64" in w for w in wheels), \
                (pkg, tag, wheels)
    assert not any("numpy" in w for w in wheels)
    assert manifest["platforms"] == ["linux-x64"]
    assert sorted(manifest["wheels"]) == sorted("./" + w for w in wheels)
    assert not any("/tests/" in n or n.startswith("tests/") or "__pycache__" in n for n in names)
    proc = subprocess.run([sys.executable, str(blender_ext_cli()), "validate", str(extension_zip)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_installs_and_caches_numba_in_the_extension_user_folder(installed):
    env, report = installed
    assert report["result"] == ["FINISHED"]
    assert report["registered"]
    user_dir = Path(report["extension_user_dir"])
    assert Path(env["BLENDER_USER_RESOURCES"]) in user_dir.parents
    assert Path(report["numba_cache"]).parent == user_dir


def test_the_add_on_runs_its_own_solver_as_the_top_level_quadric_solver(scenario):
    """The extension's copy is registered as ``quadric_solver`` (the name the prebuilt cache was compiled under),
    forgotten when the add-on is disabled, and registered again in place of another copy when enabled."""
    res = scenario("solver_package")
    ours = Path(res["extension_dir"]) / "quadric_solver" / "__init__.py"
    assert Path(res["enabled"]) == ours
    assert res["job_module"] == "quadric_solver.precompile"
    assert res["left_after_disable"] == []
    assert Path(res["other"]) == ROOT / "quadric_solver" / "__init__.py"
    assert Path(res["enabled_again"]) == ours
