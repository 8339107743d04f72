"""Command line: ``python -m quadric_solver run scene.json -o rec.npz --frames 250 --fps 24 --substeps 10``, and
``python -m quadric_solver compile`` (fill numba's cache before a batch of runs)."""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings


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


class _Parser(argparse.ArgumentParser):
    """argparse that reports a bad option in one line on stderr (no usage block) and exits with 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def _positive(parse, what):
    """An argparse type: the text parsed by ``parse``, which must be finite and > 0."""

    def convert(text):
        try:
            value = parse(text)
        except ValueError:
            value = None
        if value is None or not (math.isfinite(value) and value > 0):
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return value

    return convert


def _one_line_warning(message, category, filename, lineno, file=None, line=None):
    print(f"warning: {message}", file=sys.stderr)


def main(argv=None) -> int:
    """Run the command line; returns the exit code: 0 done, 2 bad file or option, 3 diverged, 130 interrupted."""
    parser = _Parser(prog="python -m quadric_solver", description="Quadric Dynamics solver")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="simulate a saved scene and write a recording")
    run.add_argument("scene", help="scene file written by Scene.save (JSON)")
    run.add_argument("-o", "--output", required=True, help="recording file to write (.npz)")
    count = _positive(int, "a positive integer")
    run.add_argument("--frames", type=count, default=250)
    run.add_argument("--fps", type=_positive(float, "a positive number"), default=24.0)
    run.add_argument("--substeps", type=count, default=10)
    run.add_argument("--velocity-sweeps", "--iterations", dest="velocity_sweeps", type=count, default=None,
                     help="the contact solver's velocity sweeps per substep, at most")
    run.add_argument("--threads", type=count, default=None,
                     help="slabs of the parallel contact solve (default: numba's thread count, at most 8)")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    warm = commands.add_parser("compile", help="compile the solver's kernels into numba's cache ahead of runs")
    warm.add_argument("kinds", nargs="*", metavar="KIND",
                      help="scene kinds to compile (default: all; see quadric_solver/precompile.py)")
    warm.add_argument("--report", type=int, default=0, metavar="N",
                      help="list the N kernels that took longest, and those compiled for several argument types")
    args = parser.parse_args(argv)
    with warnings.catch_warnings():
        warnings.showwarning = _one_line_warning
        try:
            return _compile(args) if args.command == "compile" else _run(args)
        except KeyboardInterrupt:
            print("\ninterrupted; no recording written", file=sys.stderr)
            return 130


def _run(args) -> int:
    import numba

    from . import Scene, Simulation, SimulationDiverged

    folder = os.path.dirname(os.path.abspath(args.output))
    if not os.path.isdir(folder):
        print(f"error: cannot write {args.output}: the folder {folder} does not exist", file=sys.stderr)
        return 2
    try:
        scene = Scene.load(args.scene)
        options = {name: value for name, value in (("velocity_sweeps", args.velocity_sweeps),
                                                   ("threads", args.threads))
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
            if _save(error.recording, args.output):
                print(f"kept {error.recording.frames} finished frames in {args.output}", file=sys.stderr)
        return 3
    if not _save(recording, args.output):
        return 2
    elapsed = time.perf_counter() - start
    groups = f", {len(recording.particle_groups)} particle groups" if recording.particle_groups else ""
    print(f"wrote {args.output}: {recording.frames} frames, {len(recording.body_names)} bodies{groups} "
          f"in {elapsed:.1f} s "
          f"(threading layer {sim.stats['threading_layer']}, {numba.get_num_threads()} threads)")
    return 0


def _compile(args) -> int:
    from .precompile import KINDS, compile_kinds

    unknown = [k for k in args.kinds if k not in KINDS]
    if unknown:
        print(f"error: unknown scene kind {', '.join(unknown)}; choose from {', '.join(KINDS)}", file=sys.stderr)
        return 2
    start = time.perf_counter()

    def progress(kind, count, name):
        sys.stderr.write(f"\r{kind}: compiling kernel {count} ({name})".ljust(100)[:100])
        sys.stderr.flush()

    kernels = []
    compiled = compile_kinds(args.kinds or KINDS, progress=progress, kernels=kernels)
    from numba.core import config

    sys.stderr.write("\r".ljust(101) + "\r")
    if args.report:
        for name, types, seconds in sorted(kernels, key=lambda k: -k[2])[:args.report]:
            print(f"{seconds:7.2f} s  {name}")
        signatures = {}
        for name, types, seconds in kernels:
            signatures.setdefault(name, []).append((types, seconds))
        for name, variants in sorted(signatures.items(), key=lambda item: -sum(v[1] for v in item[1])):
            if len(variants) > 1:
                print(f"{len(variants)} specialisations, {sum(v[1] for v in variants):6.2f} s: {name}")
                for types, seconds in variants:
                    print(f"    {seconds:6.2f} s {types[:150]}")
    print(f"compiled {sum(compiled.values())} kernels in {time.perf_counter() - start:.1f} s "
          f"({', '.join(f'{k}: {n}' for k, n in compiled.items())}); cache {config.CACHE_DIR}")
    return 0


def _save(recording, path) -> bool:
    """Write the recording; False after saying why it could not be written."""
    try:
        recording.save(path)
    except OSError as error:
        print(f"error: cannot write {path}: {error.strerror or error}", file=sys.stderr)
        return False
    return True


if __name__ == "__main__":
    sys.exit(main())
