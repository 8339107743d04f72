"""Render a few frames of a .blend to PNG (Cycles on the CPU by default, small size).

    python scripts/render_frames.py out/demo/pebbles_baked.blend -- --frames 1 50 100 150 --output out/demo/frames
    blender -b file.blend --python scripts/render_frames.py -- --frames 1 60 --engine BLENDER_WORKBENCH

The add-on is not needed: baked bodies and ropes are plain keyframes, the rope
meshes plain modifiers.
"""
import argparse
import os
import sys
import time

import bpy


def main():
    before = sys.argv[:sys.argv.index("--")] if "--" in sys.argv else sys.argv
    after = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--frames", type=int, nargs="+", required=True)
    ap.add_argument("--output", required=True, help="folder for frame_NNNN.png")
    ap.add_argument("--engine", default="CYCLES", choices=["CYCLES", "BLENDER_WORKBENCH", "BLENDER_EEVEE"])
    ap.add_argument("--size", type=int, nargs=2, default=(480, 270), metavar=("W", "H"))
    ap.add_argument("--samples", type=int, default=16)
    args = ap.parse_args(after)
    if bpy.app.binary_path == "" or os.path.basename(before[0]) == os.path.basename(__file__):
        blends = [a for a in before[1:] if a.endswith(".blend")]
        if len(blends) != 1:
            print("usage: python scripts/render_frames.py file.blend -- --frames ... --output DIR", file=sys.stderr)
            return 2
        bpy.ops.wm.open_mainfile(filepath=os.path.abspath(blends[0]))
    scene = bpy.context.scene
    render = scene.render
    render.engine = args.engine
    render.resolution_x, render.resolution_y = args.size
    render.resolution_percentage = 100
    render.image_settings.file_format = 'PNG'
    if args.engine == "CYCLES":
        scene.cycles.device = 'CPU'
        scene.cycles.samples = args.samples
        scene.cycles.use_denoising = False
        scene.cycles.max_bounces = 4
    out = os.path.abspath(args.output)
    os.makedirs(out, exist_ok=True)
    for frame in args.frames:
        t0 = time.perf_counter()
        scene.frame_set(frame)
        render.filepath = os.path.join(out, f"frame_{frame:04d}.png")
        bpy.ops.render.render(write_still=True)
        print(f"[render] {render.filepath} ({time.perf_counter() - t0:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
