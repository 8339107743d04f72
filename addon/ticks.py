"""What a modal timer tick may spend on Blender's main thread, and work cut into steps that fit in it.

Issue 21 asks that no operation block the UI for more than 50 ms. The timer's work (the live preview, the
instanced bake after a run) is done in units between which it may stop: a tick goes on while its deadline is
ahead (TICK_BUDGET, about half the goal: a tick can overrun by one unit, and the machine may take the CPU from
it meanwhile), and the next tick takes up where it stopped.

Long work is written as a generator that yields between units (``yield what, done, total`` for the progress
shown): `drain` runs one to its end at once (scripts, ``blender -b``), a `Stepper` a budget's worth at a time
(the modal operator), and ``close()`` stops one between units, which runs its clean-up (its ``finally`` and
``except BaseException``) at that yield. Once it has changed what it will not undo, it yields COMMITTED: it is
not stopped after that, but run to its end. Before a unit that takes most of a budget by itself and cannot be cut
(one change Blender then rebuilds its dependency graph for, made in one unit so that it rebuilds once), it yields
ALONE: that unit then begins a tick of its own rather than ending one already spent.

Python's garbage collector runs a full collection by itself whenever enough objects have been made, and it
scans every object alive, wherever it falls: 18 ms with what Blender and the add-on hold when Simulate starts,
some 40 ms once the conversion of 2,200 bodies is kept, on top of a tick's own work. `hold_from_collector`
moves what is alive out of its reach (gc.freeze) while a modal run lasts, so a collection scans only what
was made since; `release_to_collector` gives everything back when the run ends, and a cycle that became
garbage meanwhile is collected then.
"""
import gc
import time

TICK_BUDGET = 0.025  # s of the main thread per timer tick
TICK_INTERVAL = 0.01  # s between the ticks of long work: it goes on nearly at full speed, Blender redrawing between
COMMITTED = ("committed",)  # yielded by steps that may no longer be stopped
ALONE = ("alone",)  # yielded before a unit that should begin a tick


def hold_from_collector():
    """Keep every object alive now out of Python's garbage collections until release_to_collector."""
    gc.freeze()


def release_to_collector():
    """Give the objects held by hold_from_collector back to the garbage collector."""
    gc.unfreeze()


class Deadline:
    def __init__(self, seconds):
        self.end = time.perf_counter() + seconds

    def passed(self):
        return time.perf_counter() >= self.end


def drain(steps):
    """Run a generator of steps to its end; its return value."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


class Stepper:
    """Runs a generator of steps a tick's budget at a time."""

    def __init__(self, steps):
        self.steps = steps
        self.done = False
        self.result = None        # the generator's return value, once done
        self.progress = ("", 0, 0)  # the last (what, done, total) it yielded
        self.units = 0            # units run so far
        self.committed = False    # it yielded COMMITTED: cancel no longer stops it

    def advance(self, budget=None):
        """Run units until the budget (TICK_BUDGET) is spent, at least one; False once the generator has ended."""
        if self.done:
            return False
        deadline = Deadline(TICK_BUDGET if budget is None else budget)
        first = True
        while True:
            try:
                step = next(self.steps)
            except StopIteration as end:
                self.done, self.result = True, end.value
                return False
            self.units += 1
            if step is COMMITTED:
                self.committed = True
            elif step is ALONE:
                if not first:
                    return True
            elif step:
                self.progress = step
            if deadline.passed():
                return True
            first = False

    def finish(self):
        """Run the rest at once."""
        if not self.done:
            self.result, self.done = drain(self.steps), True

    def cancel(self):
        """Stop between two units, the generator's clean-up running now; True if stopped, False when it has
        committed (it goes on to its end) or ended."""
        if self.done or self.committed:
            return False
        self.steps.close()
        self.done = True
        return True
