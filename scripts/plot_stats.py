"""Plot a recording's per-frame statistics to PNG: contacts, max penetration, kinetic energy, time per phase.

    .venv/bin/python -m scripts.plot_stats out/demo/recording.npz -o out/demo/stats.png   (from the repository root)
"""
import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import quadric_solver as solver  # noqa: E402


def plot(recording, path):
    times = recording.times
    stats = recording.stats
    figure, axes = plt.subplots(4, 1, figsize=(8, 10), sharex=True)
    axes[0].plot(times, stats["contacts"])
    axes[0].set_ylabel("contacts")
    axes[1].plot(times, 1000.0 * np.asarray(stats["max_penetration"]))
    axes[1].set_ylabel("max penetration [mm]")
    axes[2].semilogy(times, np.maximum(stats["kinetic_energy"], 1e-12))
    axes[2].set_ylabel("kinetic energy [J]")
    phases = np.asarray(stats["phase_seconds"]) * 1000.0
    bottom = np.zeros(len(times))
    for k, name in enumerate(recording.phases):
        axes[3].fill_between(times, bottom, bottom + phases[:, k], label=name, step="mid")
        bottom += phases[:, k]
    axes[3].set_ylabel("time per frame [ms]")
    axes[3].set_xlabel("simulated time [s]")
    axes[3].legend(loc="upper right", fontsize="small", ncol=3)
    figure.suptitle(f"{len(recording.body_names)} bodies, {len(recording.ropes)} ropes, {recording.frames} frames")
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("recording")
    parser.add_argument("-o", "--output", required=True)
    args = parser.parse_args()
    plot(solver.Recording.load(args.recording), args.output)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
