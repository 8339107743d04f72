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
# a workqueue launch whose threads do work: an empty one costs 53-92 us on two cores here (19-24 us on a 16-core
# Xeon), but the 1,000-body pile's narrow phase (5,800 pairs, two launches) took 708 us a substep on two threads
# against 450 in one, about 240 us a launch; from 4,000 up to 10,000 bodies the pile ran 7-20% faster all serial
WORKQUEUE_LAUNCH_SECONDS = 200e-6
# one thread does fewer items faster than that launch plus its share on two threads: 2 x 200 us / 25 ns
WORKQUEUE_SERIAL_BELOW = 16384
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


PACER_FIRST_INTERVAL = 4   # batches between two tries of the other thread count after a switch (the first try: at once)
PACER_MAX_INTERVAL = 4096  # the interval doubles each time a try confirms the choice, up to this
PACER_TRY_SHARE = 0.1      # and is at least long enough that a try costs about this share of the time in between
PACER_SWITCH = 0.8         # a try switches when its time per substep is below this fraction of the choice's


class ThreadPacer:
    """Chooses, batch by batch of substeps, between all of numba's threads and one: whichever ran faster lately.

    A parallel launch costs a microsecond on idle cores, but when other processes hold the cores a waiting
    thread runs only at its next time slice, and a substep of a few dozen launches can take a hundred times
    longer (docs/numba.md): a 300-body pile ran 57 steps/s on two threads beside two busy processes, and 883 on
    one. The pacer keeps the faster of the two, and every so often runs one batch with the other to see whether
    that has changed (less often each time it has not, and seldom where the other is far slower). Results never depend on it: the slabs are fixed by
    Simulation(threads=...), and numba's thread count only decides which threads run them (one thread and two
    give bit-identical runs, tests/solver/contact/test_solve_order.py).
    """

    last_choice: dict = {}  # most -> the choice the process's last pacer ended on, where the next one starts

    def __init__(self, most: int):
        self.most = most               # numba's thread count where the simulation was made
        self.choice = ThreadPacer.last_choice.get(most, most)
        self.seconds = {most: None, 1: None}  # seconds per substep, the latest of each
        self.interval = PACER_FIRST_INTERVAL
        self.until_try = 1               # one timed batch of the choice, then the first try
        self.warm = False              # the first batch compiles or loads the kernels: not timed

    def threads(self) -> int:
        """The thread count for the next batch."""
        if self.most < 2 or not self.warm or self.until_try > 0:
            return self.choice
        return 1 if self.choice == self.most else self.most

    def record(self, threads: int, seconds: float, substeps: int) -> None:
        """The batch just run with ``threads`` took ``seconds`` for ``substeps`` substeps."""
        if not self.warm:
            self.warm = True
            return
        if self.most < 2 or substeps < 1:
            return
        self.seconds[threads] = seconds / substeps
        if threads == self.choice:
            self.until_try -= 1
            return
        if self.seconds[self.choice] is None:  # nothing to compare with yet
            return
        if self.seconds[threads] < PACER_SWITCH * self.seconds[self.choice]:
            self.choice, self.interval = threads, PACER_FIRST_INTERVAL
            ThreadPacer.last_choice[self.most] = threads
        else:  # a try that takes k times as long waits at least k / PACER_TRY_SHARE batches for the next one
            slower = self.seconds[threads] / max(self.seconds[self.choice], 1e-12)
            self.interval = min(max(2 * self.interval, int(np.ceil(slower / PACER_TRY_SHARE))), PACER_MAX_INTERVAL)
        self.until_try = self.interval
