#!/usr/bin/env python3
"""Build the Quadric Dynamics Blender extension: one validated zip per platform.

    python scripts/build_extension.py --output dist                      # every platform
    python scripts/build_extension.py --platforms linux-x64 --output dist

Steps: download numba + llvmlite wheels for each platform and each Python that
Blender ships (cp311 for Blender 4.2-5.0, cp313 for 5.1+) into a cache
(build/wheels; numpy is never bundled, Blender has its own), stage the package
(manifest with the wheel list filled in, __init__.py, addon/, quadric_solver/, wheels/)
in build/stage, then run Blender's own extension CLI (blender_ext.py, which runs
under plain Python) to build with --split-platforms and validate every zip.

The Linux x64 zip also ships a prebuilt numba cache (prebuilt_cache/, see
quadric_solver/precompile.py and addon/runtime.py), so a first Simulate loads the
kernels instead of compiling them for minutes. It can only be made on a Linux
x64 host with Python 3.11 (Blender 4.2 to 5.0's): the solver is imported
from the staged copy under its own top-level name, as the add-on imports it
(addon/solver_package.py), and every scene kind is compiled for numba's generic CPU.
The result is kept in build/prebuilt-cache per solver source version, so only
a changed solver compiles again (about ten minutes on two cores).
--no-prebuilt-cache leaves it out.
"""
from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

NUMBA = "numba==0.68.1"
LLVMLITE = "llvmlite==0.50.0"
PYTHON_VERSIONS = ("3.11", "3.13")

# Blender platform -> pip --platform tags to accept (newest first is not required,
# pip picks any wheel that matches one of them).
PIP_PLATFORMS = {
    "linux-x64": ["manylinux_2_28_x86_64", "manylinux2014_x86_64"],
    "linux-arm64": ["manylinux_2_28_aarch64", "manylinux2014_aarch64"],
    "windows-x64": ["win_amd64"],
    "macos-arm64": ["macosx_11_0_arm64", "macosx_12_0_arm64", "macosx_13_0_arm64", "macosx_14_0_arm64"],
}


def find_blender_ext_cli() -> str:
    """Locate bl_pkg/cli/blender_ext.py: $BLENDER_EXT_CLI, else the bpy module's copy."""
    env = os.environ.get("BLENDER_EXT_CLI")
    if env:
        return env
    import importlib.util

    spec = importlib.util.find_spec("bpy")
    roots = list(spec.submodule_search_locations or []) if spec else []
    for root in roots:
        hits = sorted(glob.glob(os.path.join(root, "*", "scripts", "addons_core", "bl_pkg", "cli", "blender_ext.py")))
        if hits:
            return hits[-1]
    raise SystemExit("blender_ext.py not found: install the bpy module or set BLENDER_EXT_CLI")


def wheel_platform_matches(filename: str, platform: str) -> bool:
    tag = filename[:-len(".whl")].split("-")[-1]
    return any(t in PIP_PLATFORMS[platform] for t in tag.split("."))


def download_wheels(platform: str, cache: str) -> list[str]:
    """Download (or reuse from cache) numba and llvmlite wheels for one platform, all Pythons."""
    os.makedirs(cache, exist_ok=True)
    found: list[str] = []
    for py in PYTHON_VERSIONS:
        abi = "cp" + py.replace(".", "")
        for req in (NUMBA, LLVMLITE):
            name, version = req.split("==")
            prefix = f"{name}-{version}-{abi}-{abi}-"
            cached = [f for f in os.listdir(cache) if f.startswith(prefix) and wheel_platform_matches(f, platform)]
            if not cached:
                cmd = [sys.executable, "-m", "pip", "download", "--only-binary=:all:", "--no-deps",
                       "--python-version", py, "--implementation", "cp", "--abi", abi, "-d", cache, req]
                for tag in PIP_PLATFORMS[platform]:
                    cmd += ["--platform", tag]
                print(f"[build] downloading {req} for {platform} {abi}", flush=True)
                subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
                cached = [f for f in os.listdir(cache) if f.startswith(prefix) and wheel_platform_matches(f, platform)]
            if not cached:
                raise SystemExit(f"no {req} wheel for {platform} {abi} after download")
            found.append(sorted(cached)[-1])
    return found


def stage_package(stage: str, wheel_cache: str, wheels: list[str], platforms: list[str]) -> None:
    if os.path.isdir(stage):
        shutil.rmtree(stage)
    os.makedirs(os.path.join(stage, "wheels"))
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".*")
    shutil.copy2(os.path.join(ROOT, "__init__.py"), stage)
    for pkg in ("addon", "quadric_solver"):
        shutil.copytree(os.path.join(ROOT, pkg), os.path.join(stage, pkg), ignore=ignore)
    for w in wheels:
        src, dst = os.path.join(wheel_cache, w), os.path.join(stage, "wheels", w)
        try:
            os.link(src, dst)  # wheels are large; a hard link avoids a copy
        except OSError:
            shutil.copy2(src, dst)
    with open(os.path.join(ROOT, "blender_manifest.toml"), encoding="utf-8") as fh:
        text = fh.read()
    text = replace_toml_list(text, "wheels", ["./wheels/" + w for w in wheels])
    text = replace_toml_list(text, "platforms", platforms)
    with open(os.path.join(stage, "blender_manifest.toml"), "w", encoding="utf-8") as fh:
        fh.write(text)


def replace_toml_list(text: str, key: str, values: list[str]) -> str:
    """Replace a top-level `key = [ ... ]` list in the manifest text, keeping the rest verbatim."""
    body = "".join(f'  "{v}",\n' for v in values)
    new, n = re.subn(rf"(?ms)^{key}\s*=\s*\[.*?^\]", f"{key} = [\n{body}]", text, count=1)
    if n != 1:
        raise SystemExit(f"blender_manifest.toml: no multi-line '{key} = [' list to fill in")
    tomllib.loads(new)  # fail early on a broken edit
    return new


PREBUILT_HOST = ("linux", "x86_64", (3, 11))

# Run in a fresh interpreter: import the staged solver (the add-on imports it under the same top-level name,
# addon/solver_package.py) and compile every scene kind.
_PRECOMPILE = """
import json, sys
stage = sys.argv[1]
sys.path.insert(0, stage)
from quadric_solver import precompile, runtime
kinds = tuple(precompile.KINDS)[::-1] if sys.argv[2] == "reversed" else tuple(precompile.KINDS)
def progress(kind, count, name):
    print(f"[build] prebuilt cache: {kind}: kernel {count} ({name})", file=sys.stderr, flush=True)
kernels = []
compiled = precompile.compile_kinds(kinds, progress=progress, kernels=kernels)
with open("kernels.json", "w") as handle:  # what each kernel cost to compile: for the compile-time report
    json.dump(kernels, handle)
print(json.dumps([precompile.this_process("quadric_solver", runtime.source_hash()), compiled]))
"""


STORE_KEEP = 4  # prebuilt caches kept in the build store: the current solver's and a few recent ones


def prebuilt_cache(stage: str, store: str, kernels_from: str | None = None) -> str | None:
    """The folder to ship as prebuilt_cache/ (manifest.json and <source hash>/<package>/), compiled into
    ``store`` unless already there; None where this host cannot make it.

    With ``kernels_from`` (a NUMBA_CACHE_DIR, root or keyed, that other processes fill with the same sources'
    generic-CPU kernels: scripts/test's) the kinds are compiled there, last kind first, so that a process compiling
    them in order beside this one meets it halfway, and the result is copied into the store.
    """
    sys.path.insert(0, ROOT)
    from quadric_solver.runtime import cache_dir, source_hash

    host = (sys.platform, os.uname().machine if hasattr(os, "uname") else "", sys.version_info[:2])
    if host != PREBUILT_HOST:
        print(f"[build] no prebuilt cache: it is made on {PREBUILT_HOST}, this is {host}", flush=True)
        return None
    key = source_hash(os.path.join(stage, "quadric_solver"))
    from importlib.metadata import version

    with open(os.path.join(stage, "quadric_solver", "precompile.py"), "rb") as handle:  # the recipe: kinds and scenes
        recipe = hashlib.sha256(handle.read()).hexdigest()[:8]
    folder = os.path.join(store, f"{key}-{recipe}-numba{version('numba')}")
    if os.path.isfile(os.path.join(folder, "manifest.json")):
        os.utime(folder)  # used now: prune_store keeps it
        return folder
    partial = f"{folder}.part{os.getpid()}"  # two builds at once each compile their own
    shutil.rmtree(partial, ignore_errors=True)
    os.makedirs(partial)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env.update(NUMBA_CACHE_DIR=kernels_from or partial, NUMBA_CPU_NAME="generic", PYTHONDONTWRITEBYTECODE="1")
    print(f"[build] compiling the prebuilt cache for solver {key} (once per solver version)", flush=True)
    result = subprocess.run([sys.executable, "-c", _PRECOMPILE, stage, "reversed" if kernels_from else "in order"],
                            env=env, check=True, stdout=subprocess.PIPE, text=True, cwd=partial)
    fields, compiled = json.loads(result.stdout.strip().splitlines()[-1])
    if kernels_from:  # the root, or its folder for these sources
        shutil.copytree(os.path.join(cache_dir(key, kernels_from), fields["package"]),
                        os.path.join(partial, key, fields["package"]))
    if fields["source_hash"] != key or sorted(os.listdir(partial)) != sorted([key, "kernels.json"]):
        raise SystemExit(f"prebuilt cache: expected the solver {key} cached in {partial}, found "
                         f"{fields['source_hash']} and {sorted(os.listdir(partial))}")
    from quadric_solver.precompile import write_manifest

    write_manifest(partial, fields, compiled)
    try:
        os.replace(partial, folder)
    except OSError:  # another build finished the same cache first
        shutil.rmtree(partial, ignore_errors=True)
    prune_store(store, keep=STORE_KEEP)
    return folder


def prune_store(store: str, keep: int) -> list[str]:
    """Remove all but the ``keep`` most recently used finished caches in ``store`` (about 90 MB each, one per
    solver version); caches still being compiled (.part folders) are left alone. Returns what was removed."""
    finished = [os.path.join(store, name) for name in os.listdir(store)
                if ".part" not in name and os.path.isfile(os.path.join(store, name, "manifest.json"))]
    finished.sort(key=os.path.getmtime, reverse=True)
    for old in finished[keep:]:
        shutil.rmtree(old, ignore_errors=True)
    return finished[keep:]


def run_cli(cli: str, *args: str) -> None:
    subprocess.run([sys.executable, cli, *args], check=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--platforms", nargs="+", choices=sorted(PIP_PLATFORMS), default=sorted(PIP_PLATFORMS))
    ap.add_argument("--output", default=os.path.join(ROOT, "dist"), help="directory for the zips")
    ap.add_argument("--wheel-cache", default=os.path.join(ROOT, "build", "wheels"))
    ap.add_argument("--stage", default=os.path.join(ROOT, "build", "stage", "quadric_dynamics"))
    ap.add_argument("--prebuilt-store", default=os.path.join(ROOT, "build", "prebuilt-cache"),
                    help="where prebuilt caches are kept between builds, one folder per solver version")
    ap.add_argument("--kernels-from", metavar="ROOT",
                    help="compile the prebuilt cache in this numba cache root, which other processes fill with the "
                         "same generic-CPU kernels (scripts/test), and copy it from there")
    ap.add_argument("--no-prebuilt-cache", action="store_true",
                    help="leave the prebuilt numba cache out of the Linux x64 zip")
    args = ap.parse_args(argv)

    cli = find_blender_ext_cli()
    os.makedirs(args.output, exist_ok=True)
    platforms = list(args.platforms)
    groups = [platforms]
    if "linux-x64" in platforms and not args.no_prebuilt_cache:  # its own stage: only its zip holds the cache
        groups = [[p for p in platforms if p != "linux-x64"], ["linux-x64"]]
    for group in filter(None, groups):
        stage = args.stage if group is groups[0] else args.stage.rstrip(os.sep) + "-linux-x64"
        build_group(cli, group, stage, args, with_prebuilt=group == ["linux-x64"] and len(groups) == 2)
    return 0


def build_group(cli: str, platforms: list[str], stage: str, args, with_prebuilt: bool) -> None:
    """Stage and build the zips of some platforms (one per platform), then validate each."""
    wheels: list[str] = []
    for platform in platforms:
        wheels += download_wheels(platform, args.wheel_cache)
    stage_package(stage, args.wheel_cache, wheels, platforms)
    if with_prebuilt:
        folder = prebuilt_cache(stage, args.prebuilt_store, args.kernels_from)
        if folder is not None:
            shutil.copytree(folder, os.path.join(stage, "prebuilt_cache"),
                            ignore=shutil.ignore_patterns("kernels.json"))

    with open(os.path.join(stage, "blender_manifest.toml"), "rb") as fh:
        manifest = tomllib.load(fh)
    expected = [os.path.join(args.output, f"{manifest['id']}-{manifest['version']}-{p.replace('-', '_')}.zip")
                for p in platforms]
    for path in expected:
        if os.path.exists(path):
            os.remove(path)
    run_cli(cli, "build", "--source-dir", stage, "--output-dir", args.output, "--split-platforms")
    for path in expected:
        if not os.path.isfile(path):
            raise SystemExit(f"build did not write {path}")
        run_cli(cli, "validate", path)
        print(f"[build] {path} ({os.path.getsize(path) / 1e6:.1f} MB) validated", flush=True)


if __name__ == "__main__":
    sys.exit(main())
