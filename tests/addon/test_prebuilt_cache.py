"""The prebuilt numba cache shipped in the Linux zip: used only where its manifest fits this copy of the solver and
this process, copied once into the user's cache folder, and otherwise left alone (the solver then compiles).

addon/runtime.py is loaded without Blender (tests/addon/numpy_modules.py); the solver it checks against is this
checkout's ``quadric_solver``.
"""
import json
import os

import pytest

from tests.addon.numpy_modules import load

runtime = load("runtime")
SOLVER = "quadric_solver"


@pytest.fixture
def shipped(tmp_path, monkeypatch):
    """A prebuilt cache folder as the build writes it, for this process and this checkout's sources."""
    from importlib import import_module

    pre = import_module(f"{SOLVER}.precompile")
    solver_runtime = import_module(f"{SOLVER}.runtime")
    fields = pre.this_process(SOLVER, solver_runtime.source_hash())
    source = tmp_path / "extension" / "prebuilt_cache"
    kernels = source / fields["source_hash"] / solver_runtime.package_folder(SOLVER) / "collision"
    kernels.mkdir(parents=True)
    (kernels / "gjk.support-10.py311.nbi").write_bytes(b"index")
    pre.write_manifest(str(source), fields, {"ellipsoids": 3})
    for name in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES"):
        # install_prebuilt_cache sets the target in os.environ; delenv of an absent variable records nothing to
        # undo, so set it first: teardown then removes what the test set
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    return source, fields


def _install(tmp_path, source):
    return runtime.install_prebuilt_cache(str(tmp_path / "user_cache"), package=SOLVER, source=str(source))


def test_a_fitting_cache_is_copied_once_and_sets_its_cpu_target(tmp_path, shipped):
    source, fields = shipped
    used, note = _install(tmp_path, source)
    assert used, note
    copied = tmp_path / "user_cache" / fields["source_hash"] / SOLVER / "collision" / "gjk.support-10.py311.nbi"
    assert copied.read_bytes() == b"index"
    assert os.environ["NUMBA_CPU_NAME"] == "generic"
    copied.write_bytes(b"extended by a later compile")  # the user's folder is not overwritten on the next start
    assert _install(tmp_path, source)[0]
    assert copied.read_bytes() == b"extended by a later compile"


@pytest.mark.parametrize("field, value", [("source_hash", "0123456789abcdef"), ("package", "bl_ext.other.solver"),
                                          ("numba", "0.61.0"), ("python", "3.13"), ("platform", "windows-amd64"),
                                          ("cpu", "x86-64-v3")])
def test_a_cache_made_for_something_else_is_not_used(tmp_path, shipped, field, value):
    source, fields = shipped
    manifest = json.loads((source / "manifest.json").read_text())
    manifest[field] = value
    (source / "manifest.json").write_text(json.dumps(manifest))
    used, note = _install(tmp_path, source)
    assert not used
    assert f"made for {field} {value!r}" in note and "compiles on first use" in note
    assert not (tmp_path / "user_cache").exists() and "NUMBA_CPU_NAME" not in os.environ


def test_no_manifest_or_no_cache_means_compiling(tmp_path, shipped):
    source, _ = shipped
    (source / "manifest.json").write_text("{not json")
    used, note = _install(tmp_path, source)
    assert not used and "no readable manifest" in note
    used, note = _install(tmp_path, tmp_path / "nowhere")
    assert not used and "ships no prebuilt solver cache" in note


def test_the_build_store_keeps_only_the_most_recently_used_caches(tmp_path):
    """scripts/build_extension.py keeps a few solver versions' caches (90 MB each), never one being compiled."""
    import importlib.util
    import time
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("build_extension", root / "scripts" / "build_extension.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    now = time.time()
    for age, name in enumerate(["new", "recent", "older", "oldest"]):
        folder = tmp_path / f"{name}-abc-numba0.68.1"
        folder.mkdir()
        (folder / "manifest.json").write_text("{}")
        os.utime(folder, (now - 3600 * age, now - 3600 * age))
    (tmp_path / "compiling-abc-numba0.68.1.part123").mkdir()  # no manifest yet, and a .part folder
    removed = build.prune_store(str(tmp_path), keep=2)
    assert sorted(os.path.basename(r) for r in removed) == ["older-abc-numba0.68.1", "oldest-abc-numba0.68.1"]
    assert sorted(os.listdir(tmp_path)) == ["compiling-abc-numba0.68.1.part123", "new-abc-numba0.68.1",
                                            "recent-abc-numba0.68.1"]


def test_the_first_copy_can_be_left_to_the_worker(tmp_path, shipped):
    """Simulate's main thread only checks the manifest (get_solver(copy=False)); the job's worker copies the 90 MB
    cache (copy_prebuilt) before it loads a kernel, once, whichever thread asks first."""
    source, fields = shipped
    used, note = runtime.install_prebuilt_cache(str(tmp_path / "user_cache"), package=SOLVER, source=str(source),
                                                copy=False)
    assert used, note
    target = tmp_path / "user_cache" / fields["source_hash"] / SOLVER
    assert not target.exists() and os.environ["NUMBA_CPU_NAME"] == "generic"
    runtime.copy_prebuilt()
    assert (target / "collision" / "gjk.support-10.py311.nbi").read_bytes() == b"index"
    (target / "collision" / "gjk.support-10.py311.nbi").write_bytes(b"later")
    runtime.copy_prebuilt()  # nothing pending: nothing copied again
    assert (target / "collision" / "gjk.support-10.py311.nbi").read_bytes() == b"later"
