"""Bake every Quadric body and rope of a .blend file, headless.

    blender -b file.blend --python scripts/bake.py -- --frames 1 250 --substeps 10 --save out.blend
    python scripts/bake.py file.blend -- --frames 1 250 --substeps 10 --save out.blend   (the bpy module)

How the add-on is found, first match wins:
  1. it is already enabled (installed and enabled in Blender's preferences);
  2. --addon-zip ZIP: install that built extension into the user repository and enable it;
  3. an installed but disabled Quadric Dynamics extension: enable it;
  4. this source checkout: the repository root is loaded as the package `quadric_dynamics`
     (needs numpy and numba importable, as in the project's .venv).
Prints progress; exits non-zero when the bake fails.
"""
import argparse
import importlib.util
import os
import sys
import time

import bpy

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse(argv):
    if "--" in argv:
        before, after = argv[:argv.index("--")], argv[argv.index("--") + 1:]
    else:
        before, after = argv, []
    ap = argparse.ArgumentParser(prog="bake.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--frames", nargs=2, type=int, metavar=("START", "END"),
                    help="frame range to simulate (default: the scene's, or the range stored in its settings)")
    ap.add_argument("--substeps", type=int, help="solver steps per frame (default: the scene's setting)")
    ap.add_argument("--save", metavar="OUT.blend", help="save the baked file here (default: do not save)")
    ap.add_argument("--addon-zip", metavar="ZIP", help="install and enable this extension zip first")
    ap.add_argument("--scene", help="scene name (default: the active scene)")
    ap.add_argument("--export-scene", metavar="SCENE.json",
                    help="also write the solver scene, for `python -m quadric_solver run` on another machine")
    return before, ap.parse_args(after)


def addon_ready():
    return hasattr(bpy.types.Scene, "quadric") and hasattr(bpy.ops.quadric, "simulate")


def enable_addon(zip_path=None):
    if addon_ready():
        return "already enabled"
    if zip_path:
        bpy.ops.extensions.package_install_files(filepath=os.path.abspath(zip_path), repo="user_default",
                                                 enable_on_install=True)
        if addon_ready():
            return f"installed {zip_path}"
        raise SystemExit(f"installing {zip_path} did not enable the add-on")
    import addon_utils

    for mod in addon_utils.modules(refresh=True):
        if mod.__name__.startswith("bl_ext.") and mod.__name__.endswith(".quadric_dynamics"):
            addon_utils.enable(mod.__name__, default_set=False)
            if addon_ready():
                return f"enabled installed extension {mod.__name__}"
    load_source_checkout()
    return f"loaded from source checkout {REPO_ROOT}"


def load_source_checkout():
    """Load this checkout's repository root as the package `quadric_dynamics` and register the add-on.

    The one copy of the add-on loader: scripts/bench/bake.py loads the add-on with it too.
    """
    spec = importlib.util.spec_from_file_location("quadric_dynamics", os.path.join(REPO_ROOT, "__init__.py"),
                                                  submodule_search_locations=[REPO_ROOT])
    module = importlib.util.module_from_spec(spec)
    sys.modules["quadric_dynamics"] = module
    spec.loader.exec_module(module)
    module.register()
    return module


def main():
    before, args = parse(sys.argv)
    if not bpy.app.binary_path or os.path.basename(sys.argv[0]) == os.path.basename(__file__):
        # Running under the bpy module: the .blend is the first argument before "--".
        blends = [a for a in before[1:] if a.endswith(".blend")]
        if len(blends) != 1:
            print("usage: python scripts/bake.py file.blend -- [options]", file=sys.stderr)
            return 2
        bpy.ops.wm.open_mainfile(filepath=os.path.abspath(blends[0]))
    how = enable_addon(args.addon_zip)
    print(f"[bake] add-on: {how}", flush=True)

    scene = bpy.data.scenes[args.scene] if args.scene else bpy.context.scene
    if bpy.context.window is not None and bpy.context.window.scene != scene:
        bpy.context.window.scene = scene
    qs = scene.quadric
    if args.frames:
        qs.use_scene_range = False
        qs.frame_start, qs.frame_end = args.frames
    if args.substeps:
        qs.substeps = args.substeps
    n_bodies = sum(o.quadric.role == 'BODY' for o in scene.objects)
    n_ropes = sum(o.quadric.role == 'ROPE' for o in scene.objects)
    print(f"[bake] {bpy.data.filepath or '(unsaved)'}: scene '{scene.name}', {n_bodies} bodies, {n_ropes} ropes, "
          f"substeps {qs.substeps}", flush=True)
    if args.export_scene:
        path = os.path.abspath(args.export_scene)
        with bpy.context.temp_override(scene=scene):
            if bpy.ops.quadric.export_scene('EXEC_DEFAULT', filepath=path) != {'FINISHED'}:
                print(f"[bake] FAILED to export the scene to {path}", file=sys.stderr, flush=True)
                return 1
        print(f"[bake] exported {path}", flush=True)
    t0 = time.perf_counter()
    try:
        with bpy.context.temp_override(scene=scene):
            result = bpy.ops.quadric.simulate('EXEC_DEFAULT')
    except RuntimeError as exc:  # the operator reported an error
        print(f"[bake] FAILED: {exc}", file=sys.stderr, flush=True)
        return 1
    if result != {'FINISHED'}:
        print(f"[bake] FAILED: {qs.status or result}", file=sys.stderr, flush=True)
        return 1
    print(f"[bake] {qs.status} ({time.perf_counter() - t0:.1f} s in total)", flush=True)
    if args.save:
        out = os.path.abspath(args.save)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        bpy.ops.wm.save_as_mainfile(filepath=out, copy=False)
        print(f"[bake] saved {out}", flush=True)
    return 0


def exit_process(code):
    """Exit with ``code``. bpy 4.2 as a Python module crashes in its own exit handler once any property with an
    update callback was registered, as the add-on's are (a PropertyGroup of one such property is enough; 4.4 and 5.0
    exit cleanly): there the process ends after flushing, without Python's finalisation. Inside Blender
    (``blender -b``) it exits as usual."""
    sys.stdout.flush()
    sys.stderr.flush()
    if not bpy.app.binary_path and bpy.app.version < (4, 4, 0):
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    exit_process(main())
