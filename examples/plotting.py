"""The examples' figures: matplotlib on the Agg backend, written to out/examples/<name>.png."""
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "out" / "examples"


def pyplot():
    """matplotlib.pyplot on the Agg backend (imported here, so that the tests never import matplotlib)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(figure, name):
    """Write the figure to out/examples/<name>.png, close it and return the path."""
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{name}.png"
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot().close(figure)
    return path
