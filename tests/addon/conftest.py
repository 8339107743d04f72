"""Fixtures for the add-on tests: build the Linux zip, install it into a scratch Blender user folder,
and run Blender-side scenarios (tests/addon/blender_scenarios.py) in subprocesses.

Each scenario runs in its own `python` process because HOME and BLENDER_USER_RESOURCES must be
set before bpy is imported. The user folder lives in build/test-blender-user-<bpy version> (git-ignored) and is
wiped and re-installed whenever the built zip's contents change; keeping it between runs keeps
numba's on-disk cache warm (a cold compile of the solver takes a couple of minutes here).
"""
import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
SCENARIOS = Path(__file__).with_name("blender_scenarios.py")


def _package_digest(zip_path):
    """Digest of the zip's members (names and CRCs), cheap even with 100 MB of wheels."""
    h = hashlib.sha256()
    with zipfile.ZipFile(zip_path) as zf:
        for info in sorted(zf.infolist(), key=lambda i: i.filename):
            h.update(f"{info.filename}:{info.CRC}:{info.file_size}\n".encode())
    return h.hexdigest()


@pytest.fixture(scope="session")
def extension_zip():
    out = ROOT / "build" / "test-dist"
    subprocess.run([PYTHON, str(ROOT / "scripts" / "build_extension.py"), "--platforms", "linux-x64",
                    "--output", str(out)], check=True, cwd=ROOT)
    zips = sorted(out.glob("quadric_dynamics-*-linux_x64.zip"))
    assert len(zips) == 1, zips
    return zips[0]


def blender_env(user_dir):
    env = dict(os.environ)
    env["HOME"] = str(user_dir / "home")
    env["BLENDER_USER_RESOURCES"] = str(user_dir / "resources")
    env.pop("NUMBA_CACHE_DIR", None)  # the add-on chooses its own cache folder
    env.pop("NUMBA_THREADING_LAYER_PRIORITY", None)  # set by the solver imported here; the add-on chooses again
    return env


def run_scenario(env, tmp_path, name, *args, timeout=900):
    out = tmp_path / f"{name}.json"
    proc = subprocess.run([PYTHON, str(SCENARIOS), name, str(out), *map(str, args)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0 or not out.exists():
        pytest.fail(f"scenario {name} failed (exit {proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-6000:]}")
    return json.loads(out.read_text())


def _keep_zip_mtimes(zip_path, installed_dir):
    """Give installed solver files the zip's timestamps instead of the extraction time.

    numba keys its on-disk cache on each source file's mtime and size, so without this every
    re-install (any add-on change) would force a cold compile of an unchanged solver in these tests.
    """
    import time

    with zipfile.ZipFile(zip_path) as zf:
        for info in zf.infolist():
            if info.filename.startswith("solver/") and info.filename.endswith(".py"):
                stamp = time.mktime(info.date_time + (0, 0, -1))
                os.utime(installed_dir / info.filename, (stamp, stamp))


@pytest.fixture(scope="session")
def installed(extension_zip, tmp_path_factory):
    """Environment of a Blender user folder with the extension installed; returns (env, install report)."""
    # one folder per Blender version (scripts/test_blender_versions runs these tests under 4.2 and 4.4 too)
    user_dir = ROOT / "build" / f"test-blender-user-{importlib.metadata.version('bpy')}"
    digest = _package_digest(extension_zip)
    stamp = user_dir / "installed.sha256"
    env = blender_env(user_dir)
    report_file = user_dir / "install.json"
    if not stamp.exists() or stamp.read_text() != digest or not report_file.exists():
        # Re-installing rewrites the files (new mtimes), which would also invalidate numba's cache.
        # Keep only numba's cache (the extension's user data) from the previous install.
        user_data = user_dir / "resources" / "extensions" / ".user"
        kept = user_dir.parent / f"{user_dir.name}-data"
        shutil.rmtree(kept, ignore_errors=True)
        if user_data.is_dir():
            shutil.move(str(user_data), str(kept))
        shutil.rmtree(user_dir, ignore_errors=True)
        (user_dir / "home").mkdir(parents=True)
        (user_dir / "resources" / "extensions").mkdir(parents=True)
        if kept.is_dir():
            shutil.move(str(kept), str(user_data))
        report = run_scenario(env, tmp_path_factory.mktemp("install"), "install", extension_zip)
        _keep_zip_mtimes(extension_zip, Path(report["extension_dir"]))
        report_file.write_text(json.dumps(report))
        stamp.write_text(digest)
    report = json.loads(report_file.read_text())
    return env, report


@pytest.fixture(scope="session")
def scenario(installed, tmp_path_factory):
    """Run a Blender scenario by name (results cached per session)."""
    env, _ = installed
    cache = {}

    def run(name, *args):
        key = (name, args)
        if key not in cache:
            cache[key] = run_scenario(env, tmp_path_factory.mktemp(name), name, *args)
        return cache[key]

    return run
