"""Check Scene, Resolve Overlaps and Simulate's check in a real Blender (the halves in blender_scenarios.py).

Blender keeps locations and empties' matrices in single precision: positions of a few metres round at
~2.4e-7, hence the 1e-6 bounds on what is read back.
"""
import re

import numpy as np
import pytest

PAIRS = [("PairA1", "PairA2"), ("PairB1", "PairB2"), ("PairC1", "PairC2")]
FREE = ("Free1", "Free2")
GAP = 1e-3  # Resolve Overlaps leaves this fraction of the smaller smallest semi-axis between the surfaces
REPORTED = re.compile(r"'([\w.]+)' overlaps (?:plane )?'([\w.]+)' by ([0-9.e+-]+) m")


@pytest.fixture(scope="module")
def preflight(scenario):
    return scenario("preflight")


def radius(res, name):
    semi = np.array(res["radii"][name])
    np.testing.assert_allclose(semi, semi[0], rtol=1e-5)  # an icosphere's fitted ellipsoid is a sphere
    return semi[0]


def expected_depths(res, centres):
    """Spheres: r_a + r_b - the distance between their centres; the sunk one: r - its height over the floor."""
    depths = {}
    for a, b in PAIRS:
        depths[(a, b)] = radius(res, a) + radius(res, b) - np.linalg.norm(np.subtract(centres[a], centres[b]))
    depths[("Sunk", "Floor")] = radius(res, "Sunk") - centres["Sunk"][2]
    return depths


def test_check_scene_raises_naming_every_overlap_and_its_depth(preflight):
    error = preflight["check_error"]
    assert error.startswith("Error: "), error
    expected = expected_depths(preflight, preflight["centres"])
    reported = {(a, b): float(depth) for a, b, depth in REPORTED.findall(error)}
    assert reported.keys() == expected.keys(), error
    for key, depth in expected.items():
        assert depth > 0.01
        assert reported[key] == pytest.approx(depth, rel=5e-3), key  # printed to three significant digits
    assert "Check Scene found 4 problems" in error
    for name in FREE:
        assert name not in error
    # the depths themselves, to Blender's single precision
    problems = {tuple(p["objects"]): p for p in preflight["problems"]}
    assert problems.keys() == expected.keys()
    for key, depth in expected.items():
        assert problems[key]["kind"] == "OVERLAP"
        assert problems[key]["depth"] == pytest.approx(depth, abs=1e-6), key


def test_problems_stay_listed_in_the_panel(preflight):
    assert [message for _, message in preflight["panel_problems"]] == [p["message"] for p in preflight["problems"]]
    assert preflight["status"].startswith("Check: ") and "(+3 more)" in preflight["status"]
    drawn = {tuple(x[:2]) for x in preflight["panel"]}
    assert ("operator", "quadric.check_scene") in drawn
    assert ("operator", "quadric.resolve_overlaps") in drawn  # offered because the problems are overlaps


def test_check_scene_loads_no_numba(preflight):
    # the check, Resolve Overlaps, undo and redo ran in this fresh Blender without loading numba or the
    # solver's kernel modules (only its package and solver.rotations)
    assert preflight["kernels_at_start"] == []
    assert preflight["kernels_at_end"] == []


def test_resolve_overlaps_moves_each_offender_by_its_depth(preflight):
    assert preflight["resolve"] == ["FINISHED"]
    before, after = preflight["centres"], preflight["resolved"]
    depths = expected_depths(preflight, before)
    for a, b in PAIRS:
        # pushed apart along their centre line until a thousandth of the radius apart, half each
        r = min(radius(preflight, a), radius(preflight, b))
        gap = np.linalg.norm(np.subtract(after[a], after[b])) - radius(preflight, a) - radius(preflight, b)
        assert gap == pytest.approx(GAP * r, abs=1e-6), (a, b)
        np.testing.assert_allclose(np.add(after[a], after[b]), np.add(before[a], before[b]), atol=1e-6)
        direction = np.subtract(before[b], before[a])
        moved = np.subtract(after[b], before[b])
        np.testing.assert_allclose(np.cross(direction, moved), 0.0, atol=1e-6)
        assert np.linalg.norm(moved) == pytest.approx(0.5 * (depths[(a, b)] + GAP * r), abs=1e-6)
    r = radius(preflight, "Sunk")
    np.testing.assert_allclose(after["Sunk"], np.add(before["Sunk"], (0, 0, depths[("Sunk", "Floor")] + GAP * r)),
                               atol=1e-6)  # lifted straight up, onto the floor
    for name in FREE:
        assert after[name] == before[name]
    # it says what it moved, and how far
    report = next(line for line in preflight["resolve_reports"] if line.startswith("Info: moved 7 bodies: "))
    lifted = re.search(r"'Sunk' ([0-9.]+) cm up", report)
    assert lifted and float(lifted.group(1)) == pytest.approx(100 * (depths[("Sunk", "Floor")] + GAP * r), rel=5e-3)
    for a, b in PAIRS:
        assert f"'{a}' " in report and f"'{b}' " in report


def test_resolved_scene_passes_the_check(preflight):
    assert preflight["check_after_resolve"] == "no error, returned ['FINISHED']"
    assert preflight["panel_after_resolve"] == 0


def test_resolve_overlaps_is_one_undo_step(preflight):
    for name, centre in preflight["centres"].items():
        np.testing.assert_allclose(preflight["after_undo"][name], centre, atol=1e-6, err_msg=name)
        np.testing.assert_allclose(preflight["after_redo"][name], preflight["resolved"][name], atol=1e-6,
                                   err_msg=name)
    assert "Check Scene found 4 problems" in preflight["check_after_undo"]


@pytest.fixture(scope="module")
def clicked(scenario):
    return scenario("preflight_ticks")


def test_a_clicked_check_scene_goes_a_step_a_tick_and_finds_what_the_check_at_once_does(clicked):
    results = clicked["check_results"]
    assert results[-1] == ["FINISHED"] and all(r == ["RUNNING_MODAL"] for r in results[:-1])
    assert len(results) >= 7 + 2  # a budget of zero: the seven bodies read one a step, then every pair measured
    assert len(clicked["once"]) == 4 and clicked["check_shown"] == clicked["once"]
    errors = [message for kind, message in clicked["check_reports"] if kind == ["ERROR"]]
    assert errors[:4] == [message for _, message in clicked["once"]]
    assert "Check Scene found 4 problems" in errors[-1]
    assert clicked["check_frame"] == 7  # read at the range's first frame, then back


def test_a_clicked_resolve_overlaps_goes_a_step_a_tick_and_moves_as_at_once(clicked):
    results = clicked["resolve_results"]
    assert results[-1] == ["FINISHED"] and all(r == ["RUNNING_MODAL"] for r in results[:-1])
    assert clicked["resolved_once"] != clicked["centres"]
    assert clicked["resolved_ticked"] == clicked["resolved_once"]  # the same arithmetic on the same input
    assert any(kind == ["INFO"] and message.startswith("moved 7 bodies: ")
               for kind, message in clicked["resolve_reports"])
    assert clicked["resolve_shown"] == []  # checked again after the moves: nothing left
    assert clicked["resolve_frame"] == 7


def test_esc_in_a_clicked_check_keeps_what_the_panel_showed(clicked):
    assert clicked["check_esc_progress"][0] == "checking the bodies"
    assert clicked["check_esc"] == ["CANCELLED"]
    assert clicked["check_esc_before"][0] == clicked["once"]
    assert [clicked["check_esc_shown"], clicked["check_esc_status"]] == clicked["check_esc_before"]
    assert clicked["check_esc_reports"] == [[["WARNING"], "Check Scene cancelled: nothing was changed"]]
    assert clicked["check_esc_frame"] == 7


def test_esc_stops_resolve_overlaps_before_its_moves_but_not_after(clicked):
    assert clicked["early_esc"] == ["CANCELLED"]
    assert clicked["early_esc_centres"] == clicked["centres"]  # nothing moved
    assert clicked["early_esc_reports"] == [[["WARNING"], "Resolve Overlaps cancelled: nothing was changed"]]
    assert clicked["early_esc_frame"] == 7
    assert clicked["late_esc"] == ["RUNNING_MODAL"]  # committed to its moves: it goes on
    assert clicked["late_end"][-1] == ["FINISHED"]
    assert clicked["late_esc_centres"] == clicked["resolved_once"]


def test_a_tick_of_a_clicked_check_or_resolve_holds_at_most_one_heavy_unit(clicked):
    # only ALONE ends a tick here (an endless budget, the bodies read at once): every measure of all pairs, and
    # the moves, begin a tick of their own
    for key in ("check", "resolve"):
        per_tick = clicked["per_tick"][key]
        assert all(len(heavy) <= 1 for heavy in per_tick), (key, per_tick)
        assert sum(heavy == ["pairs"] for heavy in per_tick) >= {"check": 1, "resolve": 3}[key], (key, per_tick)
    assert ["move"] in clicked["per_tick"]["resolve"]
    assert clicked["heavy_resolved"] == clicked["resolved_once"]


def test_check_scene_lists_every_other_kind_of_problem_naming_object_and_field(scenario):
    res = scenario("check_problems")
    expected = [
        "frame range 5-5 is empty; it needs at least 2 frames",
        "'Flat': semi_axes (",
        "'Child': its parent 'Holder' is scaled unevenly or sheared",
        "'Weightless': density must be positive, got 0 kg/m^3",
        "'Crate': box collider has zero size along local y",
        "rope 'Hairpin Rope Rig': its curve folds back on itself at node 4",
        "rope 'Loose Rope Rig': its end is tied to an object but end_object is empty",
    ]
    for error in (res["check_error"], res["simulate_error"]):
        for text in expected:
            assert text in error, (text, error)
        assert f"found {len(expected)} problems" in error
    flat = next(p["message"] for p in res["problems"] if p["objects"] == ["Flat"])
    assert "has a zero axis" in flat
    assert res["kernels"] == []  # Simulate stopped at the check too, before loading the solver


def test_simulate_on_overlaps_fails_fast_listing_all_and_changes_nothing(scenario):
    res = scenario("simulate_overlaps")
    error = res["error"]
    assert error.startswith("Error: ")
    for a, b in PAIRS:
        assert f"'{a}' overlaps '{b}' by" in error
    assert "'Sunk' overlaps plane 'Floor' by" in error
    # it stopped before the solver loaded, so before any compile: numba was never imported
    assert res["kernels"] == []
    assert res["unchanged"]
    assert res["panel_problems"] == 4 and "PairA1" in res["status"]
    print(f"Simulate refused the overlapping scene in {res['seconds']:.3f} s")


def test_check_scene_on_a_thousand_bodies_finds_exactly_the_planted_problems(scenario):
    res = scenario("check_thousand", 1000)
    found = {tuple(p["objects"]): p["depth"] for p in res["problems"]}
    planted = {tuple(names): depth for *names, depth in res["planted"]}
    assert found.keys() == planted.keys(), res["error"]
    for key, depth in planted.items():
        assert found[key] == pytest.approx(depth, abs=1e-6), key
    assert res["kernels"] == []
    print(f"Check Scene on 1,000 bodies: {res['check_seconds']:.3f} s (operator call {res['operator_seconds']:.3f} s)")
