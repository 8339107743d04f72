"""Command line: ``python -m solver run scene.json -o rec.npz --frames 250 --fps 24 --substeps 10``."""
from __future__ import annotations

import argparse
import sys
import time


def _progress_bar(stream):
    start = time.perf_counter()

    def report(done: int, total: int) -> None:
        width = 30
        filled = int(width * done / total)
        elapsed = time.perf_counter() - start
        rate = done / elapsed if elapsed > 0 else 0.0
        stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} frames  {rate:6.1f} frames/s")
        if done == total:
            stream.write("\n")
        stream.flush()

    return report


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m solver", description="Quadric Dynamics solver")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="simulate a saved scene and write a recording")
    run.add_argument("scene", help="scene file written by Scene.save (JSON)")
    run.add_argument("-o", "--output", required=True, help="recording file to write (.npz)")
    run.add_argument("--frames", type=int, default=250)
    run.add_argument("--fps", type=float, default=24.0)
    run.add_argument("--substeps", type=int, default=10)
    run.add_argument("--iterations", type=int, default=None, help="contact solver iterations per substep")
    run.add_argument("--threads", type=int, default=None,
                     help="slabs of the parallel contact solve (default: numba's thread count, at most 8)")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)

    import numba

    from . import Scene, Simulation, SimulationDiverged

    try:
        scene = Scene.load(args.scene)
        options = {name: value for name, value in (("iterations", args.iterations), ("threads", args.threads))
                   if value is not None}
        sim = Simulation(scene, **options)
    except (OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    progress = None if args.quiet else _progress_bar(sys.stderr)
    start = time.perf_counter()
    try:
        recording = sim.run(frames=args.frames, fps=args.fps, substeps=args.substeps, progress=progress)
    except SimulationDiverged as error:
        print(f"\nerror: {error}", file=sys.stderr)
        if error.recording is not None and error.recording.frames:
            error.recording.save(args.output)
            print(f"kept {error.recording.frames} finished frames in {args.output}", file=sys.stderr)
        return 3
    recording.save(args.output)
    elapsed = time.perf_counter() - start
    print(f"wrote {args.output}: {recording.frames} frames, {len(recording.body_names)} bodies in {elapsed:.1f} s "
          f"(threading layer {sim.stats['threading_layer']}, {numba.get_num_threads()} threads)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
