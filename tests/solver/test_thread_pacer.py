"""The thread pacer (quadric_solver/parallel.py, ThreadPacer): all of numba's threads or one, whichever runs faster now.

Its rules against synthetic timings, and, through the public API in a process with two threads, that it never
changes a result: a run whose batches alternate between one thread and two equals the run on two, bit for bit,
for every kind of scene.
"""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from quadric_solver.parallel import PACER_FIRST_INTERVAL, PACER_MAX_INTERVAL, PACER_TRY_SHARE, ThreadPacer

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def fresh_memory(monkeypatch):
    monkeypatch.setattr(ThreadPacer, "last_choice", {})


def run_batches(pacer, seconds_per_substep, batches, substeps=10):
    """Feed the pacer batches that take seconds_per_substep[threads]; returns the thread counts it asked for."""
    asked = []
    for _ in range(batches):
        threads = pacer.threads()
        asked.append(threads)
        pacer.record(threads, seconds_per_substep[threads] * substeps, substeps)
    return asked


def test_the_first_batch_is_not_timed_and_the_other_count_is_tried_at_once():
    pacer = ThreadPacer(4)
    pacer.record(pacer.threads(), 100.0, 10)  # compiling: would make four threads look slow
    assert pacer.seconds == {4: None, 1: None}
    asked = run_batches(pacer, {4: 1e-3, 1: 2e-3}, 2)
    assert asked == [4, 1]
    assert pacer.choice == 4


def test_it_switches_to_one_thread_when_the_cores_are_busy_and_back_when_they_are_free():
    pacer = ThreadPacer(2)
    busy = {2: 0.2, 1: 6e-4}  # two threads beside two busy processes on two cores (the module docstring)
    asked = run_batches(pacer, busy, 3)
    assert asked == [2, 2, 1] and pacer.choice == 1
    assert ThreadPacer.last_choice == {2: 1}  # the next simulation in this process starts there
    # the next try of two threads comes after PACER_FIRST_INTERVAL batches; it is far slower, so the one after
    # waits until a try costs PACER_TRY_SHARE of the time in between
    asked = run_batches(pacer, busy, PACER_FIRST_INTERVAL + 1)
    assert asked == [1] * PACER_FIRST_INTERVAL + [2] and pacer.choice == 1
    assert pacer.interval == min(PACER_MAX_INTERVAL, int(0.2 / 6e-4 / PACER_TRY_SHARE) + 1)
    free = {2: 5e-4, 1: 9e-4}
    asked = run_batches(pacer, free, pacer.interval + 1)
    assert asked[-1] == 2 and pacer.choice == 2


def test_a_choice_that_holds_is_tried_ever_less_often():
    pacer = ThreadPacer(2)
    asked = run_batches(pacer, {2: 1e-3, 1: 1.6e-3}, 200)
    tries = [k for k, threads in enumerate(asked) if threads == 1]
    gaps = [b - a for a, b in zip(tries, tries[1:])]
    assert pacer.choice == 2 and len(tries) >= 4
    assert all(later > earlier for earlier, later in zip(gaps, gaps[1:]))
    assert len(tries) <= 8  # about log2(200): tries cost a few percent


def test_one_thread_is_all_there_is_to_choose_from():
    pacer = ThreadPacer(1)
    assert run_batches(pacer, {1: 1e-3}, 20) == [1] * 20


# In a process with NUMBA_NUM_THREADS=2: each scene kind runs 30 steps of 2 substeps twice, once with numba's two
# threads throughout, once with a pacer that alternates between one thread and two every batch.
SAME_EITHER_WAY = textwrap.dedent("""
    import json, numba, numpy as np, quadric_solver as solver
    from quadric_solver.precompile import KINDS, scene_of
    from quadric_solver.parallel import ThreadPacer

    class Alternating(ThreadPacer):
        def threads(self):
            self.flip = not getattr(self, "flip", False)
            return 1 if self.flip else self.most

    def final_state(kind, alternate):
        sim = solver.Simulation(scene_of(KINDS[kind], solver), dt=1 / 240)
        if alternate:
            sim._pacer = Alternating(numba.get_num_threads())
        else:  # two threads throughout
            sim._pacer.threads = lambda: 2
        for _ in range(30):
            sim.step(2)
        state = sim.state
        parts = [state.position, state.orientation, state.linear_velocity, state.angular_velocity]
        for r in range(len(sim.scene.ropes)):
            parts.append(state.rope_nodes(r))
        for g in range(len(sim.scene.particles)):
            parts += [state.particle_positions(g), state.particle_velocities(g)]
        return [np.asarray(p, dtype=float).ravel() for p in parts]

    report = {}
    for kind in KINDS:
        a, b = final_state(kind, False), final_state(kind, True)
        report[kind] = all(np.array_equal(x, y) for x, y in zip(a, b)) and len(a) == len(b)
    print(json.dumps(dict(threads=numba.get_num_threads(), same=report)))
""")


def test_the_pacer_never_changes_a_result():
    env = dict(os.environ, NUMBA_NUM_THREADS="2", PYTHONPATH=str(ROOT))
    result = subprocess.run([sys.executable, "-c", SAME_EITHER_WAY], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=1800)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["threads"] == 2
    assert report["same"] and all(report["same"].values()), report["same"]
