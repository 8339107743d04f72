"""What one launch of a parallel loop costs on numba's threading layer, and when a loop is better run serially.

A substep starts about thirty parallel loops (chunks of bodies or contacts,
one sweep of the slabs). Each launch has a fixed cost that depends on the
threading layer: about a microsecond with OpenMP or a current TBB, about 50
with numba's own workqueue (it wakes sleeping threads), and with Debian 12's
TBB 2021.8 one that grows with every launch (docs/numba.md). A loop whose work
takes less than that is faster run in the calling thread: the parallel kernels
take a ``serial`` flag, set where the loop has fewer than ``serial_below``
items. The slabs and chunks are independent, so both ways give the same
result bit for bit; only the speed differs.
"""
import time

import numpy as np
from numba import njit, prange, threading_layer

from .math3d import JIT_PARALLEL, PARALLEL_CHUNKS

ITEM_SECONDS = 25e-9  # about what a body or contact costs in a parallel loop of the substep (velocity sweep: 30 ns)
LAUNCHES = 20         # per timed batch
BATCHES = 5           # the median batch counts: one batch may share the machine with something else
GROWTH_LAUNCHES = 2000  # TBB only: launches between two measurements, to see whether each launch costs more


@njit(**JIT_PARALLEL)
def _touch_chunks(out):
    for k in prange(out.shape[0]):
        out[k] += 1.0


@njit(cache=True, nogil=True)
def _launch_batch(out, launches):
    for _ in range(launches):
        _touch_chunks(out)


def _median_launch(out) -> float:
    batches = []
    for _ in range(BATCHES):
        start = time.perf_counter()
        _launch_batch(out, LAUNCHES)
        batches.append((time.perf_counter() - start) / LAUNCHES)
    return float(np.median(batches))


def launch_seconds() -> float:
    """Median time to launch one near-empty parallel loop of PARALLEL_CHUNKS chunks, from compiled code.

    Infinite where each launch costs more than the last: on TBB, after
    GROWTH_LAUNCHES more launches the cost must not have grown by half (with Debian
    12's TBB 2021.8 it grows by about 15 us per 1,000 launches, so the whole
    run must avoid launching at all).
    """
    out = np.zeros(PARALLEL_CHUNKS)
    _launch_batch(out, 1)  # starts numba's threads (and compiles, the first time ever)
    first = _median_launch(out)
    if threading_layer() != "tbb":
        return first
    _launch_batch(out, GROWTH_LAUNCHES)
    later = _median_launch(out)
    return first if later < 1.5 * first + 5e-6 else float("inf")


def serial_below_for(launch: float, threads: int) -> int:
    """Items below which a loop is faster in the calling thread: its work on one thread < launch + work / threads."""
    if threads < 2 or not np.isfinite(launch):
        return 2**62  # one thread gains nothing from a launch; a launch cost that grows must be avoided
    return int(launch / ITEM_SECONDS * threads / (threads - 1))
