"""Solve order: slabs that may run in parallel touch disjoint bodies; results never depend on the thread count."""
import copy
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import quadric_solver as solver
from examples.pile import build_pile
from quadric_solver.contact.solve_order import BLOCK, SLAB_IMBALANCE, assign_slabs, order_contacts
from quadric_solver.state import new_workspace
from tests.helpers import ROOT

G = 9.81


def random_contacts(rng, n_bodies, n_contacts, n_static):
    """Sorted unique keys like the narrow phase writes: body pairs a < b and body-static contacts (a < 0)."""
    stride = n_bodies + n_static
    keys = set()
    while len(keys) < n_contacts:
        b = int(rng.integers(n_bodies))
        if rng.random() < 0.2:
            keys.add(b * stride + n_bodies + int(rng.integers(n_static)))
        else:
            a = int(rng.integers(n_bodies))
            if a != b:
                keys.add(min(a, b) * stride + max(a, b))
    keys = np.array(sorted(keys), dtype=np.int64)
    first, second = keys // stride, keys % stride
    static = second >= n_bodies
    contact_a = np.where(static, -1 - (second - n_bodies), first)
    contact_b = np.where(static, first, second)
    return keys, contact_a.astype(np.int64), contact_b.astype(np.int64)


@pytest.mark.parametrize("slabs", [1, 2, 3, 5])
def test_slabs_touch_disjoint_bodies_and_every_contact_gets_one_slot(slabs):
    rng = np.random.default_rng(slabs)
    n, n_contacts, n_static = 400, 1500, 3
    position = rng.uniform(-1.0, 1.0, size=(n, 3))
    dynamic = rng.random(n) < 0.9
    keys, contact_a, contact_b = random_contacts(rng, n, n_contacts, n_static)
    # last substep's cache: every other contact, so both warm and new contacts occur
    cache_key = np.concatenate([keys[::2], np.full(n_contacts, -1)])
    ws = new_workspace(n, 8, n_contacts, 6, slabs)
    assign_slabs(position, dynamic, slabs, ws)
    order_contacts(contact_a, contact_b, keys, n_contacts, dynamic, slabs, cache_key, len(keys[::2]), ws, False)

    # the solve numbering is a permutation, each slab's bodies contiguous
    assert sorted(ws.solve_origin.tolist()) == list(range(n))
    assert np.array_equal(ws.solve_body[ws.solve_origin], np.arange(n))
    assert np.all(np.diff(ws.body_slab[ws.solve_origin]) >= 0)
    # equal shares of the dynamic bodies, within the allowed imbalance
    shares = np.bincount(ws.body_slab[dynamic], minlength=slabs)
    assert shares.max() * slabs <= SLAB_IMBALANCE * dynamic.sum() + slabs

    # slots are a permutation of the contacts and carry the right bodies and cache rows
    assert sorted(ws.contact_slot[:n_contacts].tolist()) == list(range(n_contacts))
    assert np.array_equal(ws.slot_contact[ws.contact_slot[:n_contacts]], np.arange(n_contacts))
    for s in range(n_contacts):
        c = ws.slot_contact[s]
        a, b = contact_a[c], contact_b[c]
        assert ws.slot_b[s] == ws.solve_body[b]
        assert ws.slot_a[s] == (ws.solve_body[a] if a >= 0 else a)
        cached = np.flatnonzero(cache_key[: len(keys[::2])] == keys[c])
        assert ws.slot_cache[s] == (cached[0] if len(cached) else -1)

    # the classes: slabs touch disjoint dynamic bodies; boundary contacts join two slabs
    start = ws.slab_start[: slabs + 2]
    assert start[0] == 0 and start[-1] == n_contacts and np.all(np.diff(start) >= 0)
    touched = []
    for k in range(slabs + 1):
        bodies = set()
        for s in range(start[k], start[k + 1]):
            c = ws.slot_contact[s]
            moving = [body for body in (contact_a[c], contact_b[c]) if body >= 0 and dynamic[body]]
            if k < slabs:
                assert all(ws.body_slab[body] == k for body in moving)
            else:
                assert len(moving) == 2 and ws.body_slab[moving[0]] != ws.body_slab[moving[1]]
            bodies.update(moving)
        touched.append(bodies)
    for k in range(slabs):
        for m in range(k + 1, slabs):
            assert not touched[k] & touched[m]


@pytest.mark.parametrize("slabs", [1, 3])
def test_contacts_are_coloured_in_blocks_that_follow_key_order(slabs):
    """Each class's slots come in blocks of BLOCK contacts that are consecutive in key order (so a block's
    contacts, rows and bodies stay in cache), and inside a block by greedy colour, then key."""
    rng = np.random.default_rng(7 + slabs)
    n, n_static = 3000, 2
    n_contacts = 2 * BLOCK * slabs + 777  # several full blocks and a partial one per class
    position = rng.uniform(-1.0, 1.0, size=(n, 3))
    dynamic = rng.random(n) < 0.95
    keys, contact_a, contact_b = random_contacts(rng, n, n_contacts, n_static)
    ws = new_workspace(n, 8, n_contacts, 6, slabs)
    assign_slabs(position, dynamic, slabs, ws)
    order_contacts(contact_a, contact_b, keys, n_contacts, dynamic, slabs, keys[:0], 0, ws, False)
    slot_contact = ws.slot_contact[:n_contacts]
    for k in range(slabs + 1):
        start, end = ws.slab_start[k], ws.slab_start[k + 1]
        in_key_order = np.sort(slot_contact[start:end])
        for first in range(start, end, BLOCK):
            last = min(first + BLOCK, end)
            block = slot_contact[first:last]
            assert np.array_equal(np.sort(block), in_key_order[first - start:last - start])
            # the greedy colouring of the block in key order: each contact takes the lowest colour
            # none of its dynamic bodies has in this block; slots go by colour, then key
            colours_of = {}
            colour = {}
            for c in np.sort(block):
                bodies = [body for body in (contact_a[c], contact_b[c]) if body >= 0 and dynamic[body]]
                taken = set().union(*(colours_of.get(body, set()) for body in bodies))
                colour[c] = min(set(range(len(taken) + 1)) - taken)
                for body in bodies:
                    colours_of.setdefault(body, set()).add(colour[c])
            assert block.tolist() == sorted(block.tolist(), key=lambda c: (colour[c], c))
            # so a colour's contacts share no dynamic body and the CPU can overlap them; few colours
            assert max(colour.values()) < 64


def test_slabs_stay_put_while_bodies_barely_move():
    """A body that changes slab changes its contacts' order; a resting pile must keep its split."""
    rng = np.random.default_rng(5)
    n = 500
    position = rng.uniform(-1.0, 1.0, size=(n, 3))
    dynamic = np.ones(n, dtype=np.bool_)
    ws = new_workspace(n, 8, 8, 6, 4)
    assign_slabs(position, dynamic, 4, ws)
    slabs_before = ws.body_slab.copy()
    bounds_before = ws.slab_bounds.copy()
    assign_slabs(position + rng.normal(scale=1e-6, size=(n, 3)), dynamic, 4, ws)
    assert np.array_equal(ws.slab_bounds, bounds_before)
    assert np.count_nonzero(ws.body_slab != slabs_before) <= 2  # only bodies within 1e-6 of a bound may move


# Runs in a process with NUMBA_NUM_THREADS=2, so two threads run the slabs even on a one-core machine.
SAME_RUN_THREE_WAYS = textwrap.dedent("""
    import json, numba, numpy as np, quadric_solver as solver
    from quadric_solver.parallel import ALL
    from examples.pile import build_pile
    runs = []
    for threads, serial_below in ((1, None), (2, None), (2, 0), (2, ALL)):
        numba.set_num_threads(threads)
        sim = solver.Simulation(build_pile(120), dt=1 / 240, threads=3, serial_below=serial_below)
        sim.step(150)
        runs.append(np.concatenate([sim.state.position, sim.state.angular_velocity]))
    print(json.dumps(dict(contacts=sim.stats["contacts"], threads=numba.get_num_threads(),
                          same_on_one_and_two_threads=bool(np.array_equal(runs[0], runs[1])),
                          serial_against_parallel=float(np.abs(runs[3] - runs[2])[:120].max()))))
""")


def test_results_do_not_depend_on_threads_nor_on_running_the_loops_serially():
    """Same scene, 3 slabs. With the default settings, one thread and two give bit-identical runs (a data race
    would show here). Every loop in the calling thread against every loop launched computes the same thing;
    fastmath may round the two compiled paths differently in the last bit (bit-identical with fastmath off),
    and 150 steps of a pile amplify that to about 1e-12 m. A fault in the serial path (a slab skipped or swept
    twice, a wrong range) moves bodies by millimetres within a few steps, so the bound is 1 nm."""
    env = dict(os.environ, NUMBA_NUM_THREADS="2", PYTHONPATH=str(ROOT))
    result = subprocess.run([sys.executable, "-c", SAME_RUN_THREE_WAYS], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["threads"] == 2 and report["contacts"] > 200
    assert report["same_on_one_and_two_threads"]
    assert report["serial_against_parallel"] < 1e-9


@pytest.mark.parametrize("threads", [1, 4])
def test_pile_settles_with_any_number_of_slabs(threads):
    """The slab count changes the Gauss-Seidel order, not the physics: the pile settles and stays put."""
    scene = build_pile(200, seed=1)
    smallest = min(min(b["semi_axes"]) for b in scene.bodies)
    sim = solver.Simulation(scene, dt=1 / 240, threads=threads)
    # dropped from a grid, the last bodies rock into place about 2 s in
    recording = sim.run(frames=120, fps=60, substeps=4)
    assert recording.stats["max_penetration"][-20:].max() < 0.01 * smallest
    mass = sim.model.mass.sum()
    assert recording.stats["kinetic_energy"][-1] < 1e-3 * mass * G * 0.1
    # at rest: over the next half second, bodies move less than the penetration bound; a few
    # bodies on top may still rock into place, so 5% are allowed more
    resting = sim.state.position.copy()
    sim.run(frames=30, fps=60, substeps=4)
    moved = np.linalg.norm(sim.state.position - resting, axis=1)
    assert np.count_nonzero(moved > 0.01 * smallest) <= 0.05 * len(moved)


@pytest.mark.parametrize("threads", [0, -1, 1.5])
def test_threads_must_be_a_positive_integer(threads):
    with pytest.raises(ValueError, match="threads"):
        solver.Simulation(build_pile(4), threads=threads)


@pytest.mark.parametrize("n_bodies", [0, 1, 2])
def test_scenes_with_fewer_bodies_than_slabs_run(n_bodies):
    scene = solver.Scene(gravity=(0, 0, -G))
    scene.add_plane()
    for k in range(n_bodies):
        scene.add_ellipsoid((0.05, 0.04, 0.03), position=(0.2 * k, 0, 0.2))
    sim = solver.Simulation(scene, threads=4)
    sim.run(frames=30, fps=30, substeps=4)
    if n_bodies:
        # resting on the plane on its smallest semi-axis
        assert sim.state.position[:, 2] == pytest.approx(0.03, abs=1e-3)


def test_velocity_sweeps_stop_early_once_the_pile_rests():
    """A warm-started resting pile needs few sweeps; the early stop must not change how it rests.

    The drop is chaotic (any small difference sends a few bodies to other
    perches), so the pile is settled once and both settings continue from
    that same resting state for half a second: every body must stay where the
    other run has it to the settle test's bound (1% of the smallest
    semi-axis), and both must rest as deep (settled overlap within the slop
    plus 1% of the semi-axis).
    """
    scene = build_pile(200, seed=1)
    smallest = min(min(b["semi_axes"]) for b in scene.bodies)
    settling = solver.Simulation(scene, dt=1 / 240)
    settling.run(frames=120, fps=60, substeps=4)
    rested = copy.deepcopy(scene)
    state = settling.state
    for i, body in enumerate(rested.bodies):
        body["position"] = tuple(state.position[i])
        body["orientation"] = tuple(state.orientation[i])
        body["velocity"] = tuple(state.linear_velocity[i])
        body["angular_velocity"] = tuple(state.angular_velocity[i])
    runs = {}
    for tolerance in (None, 0.0):
        sim = solver.Simulation(rested, dt=1 / 240, sweep_tolerance=tolerance)
        sim.run(frames=30, fps=60, substeps=4)
        runs[tolerance] = (sim.stats["velocity_sweeps"], sim.state.position.copy())
        assert sim.stats["max_penetration"] <= sim.settings.slop + 0.01 * smallest
    sweeps, resting = runs[None]
    assert sweeps < sim.settings.velocity_sweeps  # the default stopped early
    assert runs[0.0][0] == sim.settings.velocity_sweeps  # tolerance 0 always runs them all
    moved = np.linalg.norm(resting - runs[0.0][1], axis=1)
    assert moved.max() <= 0.01 * smallest


@pytest.mark.parametrize("tolerance", [-1e-6, float("nan")])
def test_sweep_tolerance_must_be_non_negative(tolerance):
    with pytest.raises(ValueError, match="sweep_tolerance"):
        solver.Simulation(build_pile(4), sweep_tolerance=tolerance)


def test_buffers_grown_mid_frame_give_the_run_it_would_have_had():
    """Pair and contact buffers that start far too small overflow inside frames, several times.

    The compiled loop stops at the substep that overflowed with the state its
    completed substeps left, and the simulation grows the buffer and goes on.
    With one slab the solve order depends only on the contacts, so the run must
    equal one whose buffers were large enough from the start, bit for bit.
    """
    def run(capacity):
        sim = solver.Simulation(build_pile(60), dt=1 / 240, threads=1)
        if capacity is not None:
            sim._pair_capacity = sim._contact_capacity = capacity
            sim._ws = sim._new_workspace()
        recording = sim.run(frames=30, fps=60, substeps=4)
        return sim, recording

    roomy, roomy_recording = run(None)
    tight, tight_recording = run(4)
    assert tight._contact_capacity >= 64 and tight._pair_capacity >= 64  # grew from 4 at least four times each
    assert roomy_recording.stats["contacts"].max() > 100  # the pile really formed
    np.testing.assert_array_equal(tight_recording.body_poses, roomy_recording.body_poses)
    np.testing.assert_array_equal(tight.state.angular_velocity, roomy.state.angular_velocity)
