"""A run's per-frame statistics (the Recording's contacts, deepest overlap and kinetic energy) in the few numbers the
panel shows: each one's least, most and last value, and the frame of the deepest overlap. Plain numpy."""
import numpy as np

SERIES = (("contacts", "contacts"), ("overlap", "max_penetration"), ("energy", "kinetic_energy"))


def summarize(stats, frame_start):
    """{name_min, name_max, name_final for contacts, overlap, energy; overlap_frame; frames} of a Recording's
    ``stats`` whose first frame is Blender's frame ``frame_start``."""
    summary = {"frames": int(len(stats["contacts"]))}
    if not summary["frames"]:
        return summary
    for name, key in SERIES:
        values = np.asarray(stats[key])
        cast = int if name == "contacts" else float
        summary.update({f"{name}_min": cast(values.min()), f"{name}_max": cast(values.max()),
                        f"{name}_final": cast(values[-1])})
    summary["overlap_frame"] = int(frame_start + np.argmax(stats["max_penetration"]))
    return summary


def describe(summary):
    """The panel's lines for a summary."""
    if not summary.get("frames"):
        return []
    return [f"Contacts: {summary['contacts_min']}-{summary['contacts_max']}, last {summary['contacts_final']}",
            f"Peak overlap: {1e3 * summary['overlap_max']:.3g} mm at frame {summary['overlap_frame']}, "
            f"last {1e3 * summary['overlap_final']:.3g} mm",
            f"Kinetic energy: {summary['energy_min']:.3g}-{summary['energy_max']:.3g} J, "
            f"last {summary['energy_final']:.3g} J"]
