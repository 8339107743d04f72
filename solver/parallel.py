"""What one launch of a parallel loop costs on numba's threading layer, and when a loop is better run serially.

A substep starts about thirty parallel loops (chunks of bodies or contacts,
one sweep of the slabs). Each launch has a fixed cost that depends on the
threading layer: about a microsecond with OpenMP or a current TBB, about 50
with numba's own workqueue (it wakes sleeping threads), and with Debian 12's
TBB 2021.8 one that grows with every launch (docs/numba.md). A loop whose work
takes less than that is faster run in the calling thread: the parallel kernels
take a ``serial`` flag, set where the loop has fewer than ``serial_below``
items. The slabs and chunks are independent, so both ways compute the same
thing (bit for bit with fastmath off); with fastmath, LLVM may contract the
two compiled paths differently, in the last bit.

So that a run never depends on the machine's load or core count, the default
threshold is fixed per layer (serial_below_for), not taken from a
measurement: OpenMP and a TBB whose launches stay cheap skip launches only
below LAUNCH_FLOOR items, workqueue below WORKQUEUE_SERIAL_BELOW items, and a
TBB whose launches grow skips them all. The measured launch cost only decides
whether TBB grows, and is reported.

LAUNCH_FLOOR is for busy machines: an OpenMP launch costs a microsecond when
the cores are free, but when another process holds them a waiting worker
thread wakes only at its next scheduler slice, and one launch can take
milliseconds. A loop of a few hundred items is a few microseconds of work, so
running it in the calling thread loses little on a free machine. A one-body
scene runs about 30 loops per substep; with the machine loaded (load 3.5 on two
cores) it ran 2.7 to 6 times faster with the floor, and a 30-body one 6 to 14
times (docs/numba.md).
"""
import time

import numpy as np
from numba import njit, prange, threading_layer

from .math3d import JIT_PARALLEL, PARALLEL_CHUNKS

ITEM_SECONDS = 25e-9  # about what a body or contact costs in a parallel loop of the substep (velocity sweep: 30 ns)
# one thread does fewer items faster than a workqueue launch (53 us here, 19-24 us on a 16-core Xeon) plus its share
# on two threads: 2 x 53 us / 25 ns is about 4,200; the 1,000-body pile (about 3,000 contacts) runs serially
WORKQUEUE_SERIAL_BELOW = 4096
ALL = 2**62  # serial_below that runs every loop in the calling thread
LAUNCH_FLOOR = 256  # loops of fewer items run in the calling thread on every layer (module docstring)
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


def break_even_items(launch: float, threads: int) -> int:
    """Items below which one thread beats a launch plus its share of the work on ``threads`` threads."""
    if threads < 2 or not np.isfinite(launch):
        return ALL  # one thread gains nothing from a launch; a launch cost that grows must be avoided
    return int(launch / ITEM_SECONDS * threads / (threads - 1))


def serial_below_for(layer: str, launch: float) -> int:
    """The default serial_below on numba's threading ``layer``, fixed per layer so runs are reproducible."""
    if layer == "workqueue":
        return WORKQUEUE_SERIAL_BELOW
    if layer == "tbb" and not np.isfinite(launch):
        return ALL
    return LAUNCH_FLOOR
