"""What a modal timer tick may spend on Blender's main thread, and work cut into steps that fit in it.

Issue 21 asks that no operation block the UI for more than 50 ms. The timer's work (the live preview, the
instanced bake after a run) is done in units between which it may stop: a tick goes on while its deadline is
ahead (TICK_BUDGET, about half the goal: a tick can overrun by one unit, and the machine may take the CPU from
it meanwhile), and the next tick takes up where it stopped.
`TickedOperator` runs an operator's steps that way when it is clicked, and at once when a script calls it.

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
                if self.units > 1:  # whatever ran before it in this tick (the generator's start alone is nothing)
                    return True
            elif step:
                self.progress = step
            if deadline.passed():
                return True

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


def advance_or_clean_up(stepper, clean_up):
    """A modal operator's tick: stepper.advance(), with ``clean_up()`` run before a failing step's error goes on."""
    try:
        return stepper.advance()
    except BaseException:
        clean_up()
        raise


class TickedOperator:
    """Mixin for an operator whose work is a generator of steps, ``steps(context)``; ``done(context, result)``
    reports the generator's return value and gives the operator's return set.

    A click (invoke, with a window) runs the steps a tick's budget at a time from a modal timer, so the UI draws
    between ticks; a script (execute, or ``blender -b``) runs them at once. Esc stops them between two units
    before they have committed (their clean-up then leaves the file as it was); other input waits meanwhile.
    """
    _stepper = None
    _timer = None

    def execute(self, context):
        return self.done(context, drain(self.steps(context)))

    def invoke(self, context, event):
        import bpy

        if bpy.app.background or context.window is None:
            return self.execute(context)
        self._stepper = Stepper(self.steps(context))
        wm = context.window_manager
        self._timer = wm.event_timer_add(TICK_INTERVAL, window=context.window)
        wm.modal_handler_add(self)
        self._status(context, "starting")
        return {'RUNNING_MODAL'}

    def modal(self, context, event):
        stepper = self._stepper
        if event.type == 'ESC' and event.value == 'PRESS':
            if stepper.cancel():
                self._end(context)
                self.report({'WARNING'}, f"{self.bl_label} cancelled: nothing was changed")
                return {'CANCELLED'}
            return {'RUNNING_MODAL'}  # committed: it goes on to its end
        if event.type != 'TIMER':
            return {'RUNNING_MODAL'}
        if event.timer is not self._timer:
            return {'PASS_THROUGH'}
        if advance_or_clean_up(stepper, lambda: self._end(context)):
            what, done, total = stepper.progress
            self._status(context, f"{what} ({done}/{total})" if what else "working")
            return {'RUNNING_MODAL'}
        self._end(context)
        return self.done(context, stepper.result)

    def cancel(self, context):  # Blender closing the window or loading a file: stop, or end at once once committed
        if not self._stepper.cancel():
            self._stepper.finish()
        self._end(context)

    def _status(self, context, text):
        if context.workspace is not None:
            context.workspace.status_text_set(f"{self.bl_label}: {text}  (Esc to cancel)" if text else None)

    def _end(self, context):
        if self._timer is not None:
            context.window_manager.event_timer_remove(self._timer)
            self._timer = None
        self._status(context, None)
