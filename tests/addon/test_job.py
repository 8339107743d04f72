"""The simulation job's messages for runs that go wrong, without Blender (addon/job.py imports no bpy).

The solver's own exception classes are raised by a stand-in for Simulation, so that the message the user reads
is checked for each kind of thing that can diverge.
"""
import subprocess
import sys
import types

import pytest

import quadric_solver as solver
from tests.addon.numpy_modules import load
from tests.helpers import ROOT

job_module = load("job")


def _job_raising(error):
    def run(**kwargs):
        raise error

    job = job_module.SimulationJob(_fake_solver(run), _conv())
    job.run_sync()
    return job


def _conv(**changes):
    values = dict(velocity_sweeps=0, scene=None, dt=1 / 240, frames=48, fps=24.0, substeps=10, frame_start=1,
                  integrator="symplectic_euler")
    return types.SimpleNamespace(**{**values, **changes})


def test_the_job_runs_the_particle_integrator_the_scene_chose():
    made = []

    class Simulation:
        def __init__(self, scene, dt, **kwargs):
            made.append(kwargs)

        def run(self, **kwargs):
            return "recording"

    fake = types.SimpleNamespace(Simulation=Simulation, SimulationCancelled=solver.SimulationCancelled,
                                 SimulationDiverged=solver.SimulationDiverged)
    job = job_module.SimulationJob(fake, _conv(integrator="implicit_euler", velocity_sweeps=12))
    assert job.run_sync() == "DONE"
    assert made == [dict(integrator="implicit_euler", velocity_sweeps=12)]


@pytest.mark.parametrize("error, named", [
    (solver.SimulationDiverged(3, 2, "Brick", 0.1, None), "body 'Brick'"),
    (solver.SimulationDiverged(3, -1, "Rope", 0.1, None), "rope 'Rope'"),
    (solver.SimulationDiverged(3, None, None, 0.1, None, group=0, particle=7, group_label="particles 'Sand' (group 0)"),
     "particle 7 of particles 'Sand' (group 0)"),
])
def test_a_diverged_run_names_the_frame_and_what_diverged(error, named):
    job = _job_raising(error)
    assert job.state == "FAILED"
    assert job.message.startswith(f"simulation diverged at frame 4 ({named}). Try more substeps")


def test_the_time_left_comes_from_the_frame_rate_since_the_first_simulated_frame():
    # 10 frames simulated in the 5 s since the first (loading and compiling before it do not count): 0.5 s each
    assert job_module.seconds_left(12, 24, 2, 10.0, 15.0) == pytest.approx(12 * 0.5)
    assert job_module.seconds_left(2, 24, 2, 10.0, 15.0) is None  # no frame timed yet
    assert job_module.seconds_left(5, 24, 2, None, 15.0) is None  # still loading


def _fake_solver(run):
    class Simulation:
        def __init__(self, scene, dt, **kwargs):
            pass

        def run(self, **kwargs):
            return run(**kwargs)

    return types.SimpleNamespace(Simulation=Simulation, SimulationCancelled=solver.SimulationCancelled,
                                 SimulationDiverged=solver.SimulationDiverged)


def test_a_finished_run_stages_its_files_in_the_worker_before_it_says_done():
    """The particles' caches are written by the worker (SimulationJob.stage), and the main thread, which bakes once
    the state is DONE, never sees DONE before they are."""
    seen = []

    def stage(conv, recording):
        seen.append((job.state, recording))
        return ["staged"]

    job = job_module.SimulationJob(_fake_solver(lambda **kw: "recording"), _conv(), stage=stage)
    assert job.run_sync() == "DONE"
    assert seen == [("RUNNING", "recording")] and job.staged == ["staged"] and job.stage_error is None


def test_a_failed_stage_is_kept_for_the_bake_to_report_and_a_cancelled_run_stages_nothing():
    def refuse(conv, recording):
        raise OSError("disk full")

    job = job_module.SimulationJob(_fake_solver(lambda **kw: "recording"), _conv(), stage=refuse)
    assert job.run_sync() == "DONE" and isinstance(job.stage_error, OSError) and job.staged is None

    def cancelled(**kwargs):
        raise solver.SimulationCancelled(3, None)

    staged = []
    job = job_module.SimulationJob(_fake_solver(cancelled), _conv(), stage=lambda c, r: staged.append(r))
    assert job.run_sync() == "CANCELLED" and staged == []


def test_the_job_module_imports_no_bpy():
    """The job runs on a worker thread and is tested here without Blender, so neither it nor what it imports may
    import bpy: a test process that did (through particle_bake.py) crashed at exit under bpy 4.2 and hung under 4.5."""
    script = ("import sys; from tests.addon.numpy_modules import load; load('job'); "
              "print(sorted(m for m in sys.modules if m.split('.')[0] in ('bpy', '_bpy')))")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, check=True)
    assert proc.stdout.strip() == "[]", proc.stdout
