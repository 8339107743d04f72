"""Work on Blender's main thread cut into a timer tick's budget (addon/ticks.py): the Stepper itself, and the
keyframe bake after a run driven through the modal operator's timer (bpy has no window: modal() is called with
stand-in events), a step a tick, against the same bake at once."""
import pytest

from tests.addon.numpy_modules import load

ticks = load("ticks")


def counting(log, alone_at=()):
    """Steps that log each unit they run, yielding ALONE before the units numbered in ``alone_at``."""
    for k in range(6):
        if k in alone_at:
            yield ticks.ALONE
        log.append(k)
        yield "unit", k + 1, 6


def test_a_unit_after_alone_begins_a_tick_of_its_own():
    log = []
    stepper = ticks.Stepper(counting(log, alone_at=(3,)))
    assert stepper.advance(budget=1e9) and log == [0, 1, 2]  # the tick ends before unit 3, not after it
    assert not stepper.advance(budget=1e9) and log == list(range(6))
    log.clear()
    stepper = ticks.Stepper(counting(log, alone_at=(0,)))  # first in its tick: no empty tick before it
    assert not stepper.advance(budget=1e9) and log == list(range(6))


def two_heavy_units(log):
    yield "reading", 0, 2
    yield ticks.ALONE
    log.append("heavy 1")
    yield ticks.ALONE
    log.append("heavy 2")


def test_two_units_with_only_alone_between_them_never_share_a_tick():
    log = []
    stepper = ticks.Stepper(two_heavy_units(log))
    assert stepper.advance(budget=1e9) and log == []
    assert stepper.advance(budget=1e9) and log == ["heavy 1"]  # the tick that ran it ends at the next ALONE
    assert not stepper.advance(budget=1e9) and log == ["heavy 1", "heavy 2"]


@pytest.fixture(scope="module")
def keyframes(checkout_kernels, scenario):
    return scenario("keyframes_chunks")


def test_the_keyframe_bake_goes_a_step_a_tick_and_ends_as_the_bake_at_once(keyframes):
    results = keyframes["ticked_results"]
    assert results[-1] == ["FINISHED"] and all(r == ["RUNNING_MODAL"] for r in results[:-1])
    assert len(results) >= 2 * 3  # a budget of zero: each of two bodies and a rope prepared, then written
    assert keyframes["ticked_status"].startswith("baked 2 bodies and 1 ropes")
    assert keyframes["cleared"] == keyframes["before"]  # blocks, transforms, keys and the originals' fields
    assert keyframes["one_shot_finish"] == ["FINISHED"]
    # bit for bit: every action and its name, keys, transforms, rotation modes, slots and kept originals
    assert keyframes["ticked"] == keyframes["one_shot"]


def test_esc_in_the_middle_of_the_keyframe_bake_leaves_the_file_as_it_was(keyframes):
    shown = [what for what, _, _ in keyframes["mid_progress"]]
    assert "preparing the keyframes" in shown and shown[-1] == "writing the keyframes"
    assert keyframes["mid_actions"] == 3  # built beside the earlier bake's, not yet assigned
    assert keyframes["esc"] == ["CANCELLED"] and not keyframes["esc_active_job"]
    assert keyframes["esc_status"].startswith("bake cancelled after the run")
    assert keyframes["esc_kept"]  # the earlier bake's actions, keys and transforms; no action left over


def test_esc_once_the_keyframe_bake_has_committed_lets_it_finish(keyframes):
    assert keyframes["late_esc"] == ["RUNNING_MODAL"] and keyframes["late_end"][-1] == ["FINISHED"]
    assert keyframes["late"] == keyframes["one_shot"]


@pytest.fixture(scope="module")
def start(scenario):
    return scenario("start_chunks")


def test_simulates_start_goes_a_step_a_tick_and_converts_as_at_once(start):
    assert all(r == ["RUNNING_MODAL"] for r in start["results"])
    # a budget of zero, a body a step: Check Scene reads three bodies, the conversion samples the pusher's 40
    # frames, then converts each body
    assert len(start["results"]) >= 3 + 39 + 3
    shown = " ".join(start["shown"])
    for what in ("checking the bodies", "checking for overlaps", "sampling the animated objects",
                 "converting the bodies"):
        assert what in shown, what
    assert start["started"] == "RUNNING" and start["timer"] == pytest.approx(0.1)  # then polled as before
    assert start["ticked"] == start["once"]  # the same solver scene (its content hash) and bindings
    assert start["after_run"]


def test_while_a_run_lasts_what_was_alive_at_its_start_is_out_of_the_garbage_collections(start):
    # a full collection would scan the kept conversion (some 40 ms at 2,200 bodies) in whichever tick it fell
    assert start["held_while_running"] > 10_000 and not start["conversion_collected_meanwhile"]
    assert start["held_after_run"] == 0 and start["conversion_collected_after"]  # all given back at the end


@pytest.mark.parametrize("how", ["esc", "button"])
def test_esc_or_cancel_during_simulates_start_leaves_the_file_and_frame_as_they_were(start, how):
    assert start[f"{how}_frame_meanwhile"] == 1 or how == "button"  # converting: at the range's first frame
    assert start[how] == ["CANCELLED"] and not start[f"{how}_active_job"]
    assert start[f"{how}_status"].startswith("Simulate cancelled while checking and converting the scene")
    assert start[f"{how}_kept"]  # datablocks, transforms, actions and the current frame (7)
    assert start[f"{how}_held_after"] == 0


def test_each_frame_change_and_each_animated_body_begin_a_step_however_many_bodies_a_step_holds(start):
    large = start["large_steps"]  # a budget of zero: a step a tick; 1,000 bodies a step
    changes = [n for n, _ in large["per_tick"]]
    assert sum(changes) == large["changes"] >= 40  # the pusher's 40 frames sampled, and the frame put back
    assert max(changes) == 1  # never two frame changes (each evaluates the scene) in one tick
    shown = [what for _, what in large["per_tick"] if "converting the bodies" in what]
    # Ball and Brick in one step, the animated Pusher (third by name, its track converted frame by frame) alone
    assert shown == ["Starting: converting the bodies (0/3)", "Starting: converting the bodies (2/3)"]
    assert large["ticked"] == start["once"]  # the same solver scene and bindings
