"""docs/benchmarks.md from the benchmarks' own JSON output; never edited by hand.

    .venv/bin/python -m scripts.bench.report --record pile-layers -- \\
        .venv/bin/python -m scripts.bench.pile --threading-layer omp,workqueue,tbb --no-compile-probe
    .venv/bin/python -m scripts.bench.report          # only regenerate docs/benchmarks.md
    .venv/bin/python -m scripts.bench.report --record NAME --output RUN.jsonl --machine "..." -- COMMAND
        # a run made elsewhere (same commit), its JSON lines in RUN.jsonl

``--record NAME -- COMMAND`` runs a benchmark, keeps its JSON lines in
docs/bench/NAME.jsonl behind one line that says where and how it ran (machine,
commit, command, date), and regenerates the report: one section per file,
with the run's details, a table of its results, its ratio lines, and a plot
where one helps.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH_DIR = os.path.join(REPO_ROOT, "docs", "bench")
REPORT = os.path.join(REPO_ROOT, "docs", "benchmarks.md")
IMAGES = os.path.join(REPO_ROOT, "docs", "images")
# columns shown first when a result has them; other scalar fields follow up to MAX_COLUMNS
PREFERRED = ("engine", "case", "requested_layer", "layer", "scene", "shape", "n", "steps_per_s",
             "last_second_steps_per_s", "ns_per_contact_step", "mean_contacts", "max_penetration_rel_min_semi_axis",
             "final_max_penetration_rel_min_semi_axis",
             "max_penetration_rel_min_half_extent", "final_max_penetration_rel_min_half_extent", "carried_share",
             "launch_us", "serial_below", "ratio", "bodies", "max_tick_ms", "max_tick_cpu_ms", "max_tick_runqueue_ms",
             "median_frame_tick_ms", "max_eval_ms", "max_later_eval_ms", "eval_after_max_tick_ms", "at_once_ms",
             "make_ms", "simulate_seconds", "kept_run_mb", "kept_run_write_max_tick_ms",
             "kept_run_write_max_tick_cpu_ms", "kept_run_write_max_tick_gc_ms")
MAX_COLUMNS = 10


def machine() -> str:
    """CPU model, core count and OS in one line."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, Python {platform.python_version()}"


def commit(root: str = REPO_ROOT) -> str:
    """HEAD's short hash, marked where tracked files differ from it.

    The files the report itself writes (docs/benchmarks.md, docs/bench/, docs/images/) do not count: a
    second record made before the first is committed measures the same code.
    """
    result = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True)
    own = [os.path.relpath(path, REPO_ROOT) for path in (REPORT, BENCH_DIR, IMAGES)]
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "."]
                           + [f":(exclude){path}" for path in own],
                           cwd=root, capture_output=True, text=True).stdout.strip()
    return result.stdout.strip() + (" (with uncommitted changes)" if dirty else "")


def record(name: str, command: list[str], output: str | None = None, where: str | None = None) -> None:
    """Keep a benchmark's JSON lines, after a line describing the run, in docs/bench/NAME.jsonl.

    Runs ``command`` here, or, with ``output``, takes the lines a run of it
    on another machine (``where``) wrote to that file.
    """
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    if output is None:
        proc = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True)
        sys.stderr.write(proc.stderr)
        if proc.returncode != 0:
            sys.exit(f"benchmark failed (exit {proc.returncode}); nothing recorded")
        text = proc.stdout
    else:
        with open(output) as handle:
            text = handle.read()
    lines = [line for line in text.splitlines() if line.startswith("{")]
    meta = dict(meta=True, name=name, machine=where or machine(), commit=commit(), date=started,
                command=" ".join(os.path.relpath(c, REPO_ROOT) if os.path.isabs(c) else c for c in command))
    os.makedirs(BENCH_DIR, exist_ok=True)
    with open(os.path.join(BENCH_DIR, f"{name}.jsonl"), "w") as handle:
        handle.write(json.dumps(meta) + "\n")
        handle.writelines(line + "\n" for line in lines)
    print("\n".join(lines))


def _cell(value) -> str:
    if isinstance(value, int) and value >= 2**62:
        return "all"  # serial_below: every loop runs in the calling thread
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, dict):
        return ", ".join(f"{k} {_cell(v)}" for k, v in value.items())
    return "" if value is None else str(value)


def _table(rows: list[dict]) -> list[str]:
    keys = [k for k in PREFERRED if any(k in row for row in rows)]
    for row in rows:
        for k, v in row.items():
            if k not in keys and not isinstance(v, (dict, list)) and len(keys) < MAX_COLUMNS:
                keys.append(k)
    if any("threading_layer" in row for row in rows) and "layer" not in keys:
        if "threading_layer" in keys:  # a scalar one (a name, not a dict) the loop above took already
            keys.remove("threading_layer")
        keys.insert(1, "threading_layer")  # the layer that ran, with the TBB version where it was TBB
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(_cell(row.get(k)) for k in keys) + " |" for row in rows]
    return lines


def _figure(height: float):
    """A 6-inch-wide figure and its axes, drawn off screen."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(6, height))


def _save(fig, filename: str) -> str:
    """Write the figure to docs/images/filename; returns its path relative to docs/."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    os.makedirs(IMAGES, exist_ok=True)
    path = os.path.join(IMAGES, filename)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return os.path.relpath(path, os.path.dirname(REPORT))


def _plot_steps(name: str, results: list[dict]) -> str | None:
    """Bar chart of steps per second by engine and layer; returns the image path relative to docs/."""
    bars = [(" ".join(filter(None, [r["engine"], r.get("requested_layer"),
                                    (r.get("threading_layer") or {}).get("tbb_version")])), r["steps_per_s"])
            for r in results if "steps_per_s" in r and "engine" in r]
    if len(bars) < 2 or len({r.get("n") for r in results if "steps_per_s" in r}) > 1:
        return None  # one bar, or a scaling run (its phases are plotted against n instead)
    fig, ax = _figure(2.8)
    ax.barh([b[0] for b in bars], [b[1] for b in bars], color="#4477aa")
    ax.set_xlabel("steps per second (higher is better)")
    ax.invert_yaxis()
    return _save(fig, f"bench-{name}.png")


def _plot_phases(name: str, results: list[dict]) -> str | None:
    """Per-phase time per contact-step against body count (scaling runs of ours); the image path, or None."""
    runs = sorted((r for r in results if r.get("engine") == "ours" and r.get("phase_seconds_total")
                   and r.get("mean_contacts") and r.get("steps")), key=lambda r: r["n"])
    if len({r["n"] for r in runs}) < 2:
        return None
    fig, ax = _figure(3.2)
    counts = [r["n"] for r in runs]
    for phase in runs[0]["phase_seconds_total"]:
        ns = [1e9 * r["phase_seconds_total"].get(phase, 0.0) / (r["steps"] * r["mean_contacts"]) for r in runs]
        if max(ns) > 0.0:
            ax.plot(counts, ns, marker="o", label=phase)
    ax.set_xscale("log")
    ax.set_xlabel("bodies")
    ax.set_ylabel("ns per contact-step")
    ax.legend(fontsize=7, ncol=2)
    return _save(fig, f"bench-{name}-phases.png")


def write_report() -> None:
    sections = ["# Benchmarks", "",
                "Generated by `scripts/bench/report.py` from `docs/bench/*.jsonl`, the benchmarks' own output; "
                "do not edit by hand. Each section says where and how its figures were measured. This machine "
                "is shared and noisy: compare figures within one run, as ratios.", ""]
    for file in sorted(os.listdir(BENCH_DIR)) if os.path.isdir(BENCH_DIR) else []:
        if not file.endswith(".jsonl"):
            continue
        with open(os.path.join(BENCH_DIR, file)) as handle:
            records = [json.loads(line) for line in handle if line.strip()]
        meta = records[0] if records and records[0].get("meta") else {}
        body = [r for r in records if not r.get("meta")]
        ratios = [r for r in body if "ratio" in r]
        results = [r for r in body if "ratio" not in r]
        sections += [f"## {meta.get('name', file[:-6])}", "",
                     f"- machine: {meta.get('machine', '?')}", f"- commit: {meta.get('commit', '?')}",
                     f"- date: {meta.get('date', '?')}", f"- command: `{meta.get('command', '?')}`", ""]
        if results:
            sections += _table(results) + [""]
        if ratios:
            sections += ["Ratios:", ""] + _table(ratios) + [""]
        image = _plot_steps(meta.get("name", file[:-6]), results)
        if image:
            sections += [f"![steps per second]({image})", ""]
        image = _plot_phases(meta.get("name", file[:-6]), results)
        if image:
            sections += [f"![time per phase and contact-step against body count]({image})", ""]
    with open(REPORT, "w") as handle:
        handle.write("\n".join(sections))


def main(argv=None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = []
    if "--" in argv:
        split = argv.index("--")
        argv, command = argv[:split], argv[split + 1:]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--record", metavar="NAME", help="run the command after -- and keep its JSON as NAME")
    parser.add_argument("--output", metavar="FILE",
                        help="with --record: the JSON lines a run of the command on another machine wrote")
    parser.add_argument("--machine", help="with --output: that machine, in words")
    args = parser.parse_args(argv)
    if args.record:
        if not command:
            parser.error("--record needs a benchmark command after --")
        record(args.record, command, args.output, args.machine)
    write_report()


if __name__ == "__main__":
    main()
