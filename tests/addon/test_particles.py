"""Particles, soft bodies and force fields in a real Blender (the halves in blender_scenarios.py).

Forces are read as m (v1 - v0) / h over one symplectic Euler step, which is exactly the force at the start
(v1 = v0 + h f(x0, v0) / m): they are compared with Blender's formulas (effect.cc, do_physical_effector; for
particles vel_to_sec = 1) evaluated here from the settings the scenario read off each field. Blender stores
positions and settings in single precision, which the scenario passes on as they are, so both sides start from
the same numbers and agree to rounding (1e-9 relative). Played-back positions are float32, as Blender stores
them: they match the Recording to float32 precision (2^-23 relative).
"""
import math

import numpy as np
import pytest

import quadric_solver as solver
from tests.helpers import quat_to_matrix

F32 = 2.0 ** -23


def blender_force(case, x, v, weight=1.0):
    """The force Blender's effector code puts on particles at x (n, 3) moving at v (n, 3), at a strength weight."""
    field = case["field"]
    matrix = np.array(case["matrix"])
    c, z = matrix[:3, 3], matrix[:3, 2] / np.linalg.norm(matrix[:3, 2])
    s, flow = field["strength"] * weight, field["flow"] * weight
    r = x - c
    distance = np.linalg.norm(r, axis=1, keepdims=True)
    across = r - (r @ z)[:, None] * z
    kind = case["type"]
    if kind == "FORCE":
        return s * r / distance * (distance ** -2 if field["use_gravity_falloff"] else 1.0) - flow * v
    if kind == "WIND":
        return s * z - flow * v
    if kind == "VORTEX" and field["shape"] == "POINT":
        turn = np.cross(z, r)
        return s * distance * turn / np.linalg.norm(turn, axis=1, keepdims=True) - flow * v
    if kind == "VORTEX":
        return s * np.cross(z, r) - s * s * across - v - flow * v
    if kind == "HARMONIC":
        return (-s * (distance - field["rest_length"]) * r / distance
                - 2.0 * field["harmonic_damping"] * math.sqrt(abs(field["strength"])) * v)
    if kind == "DRAG":  # Blender clamps both at 2; its "quadratic" one multiplies v, its "linear" one |v| v
        speed = np.linalg.norm(v, axis=1, keepdims=True)
        return -weight * (min(field["quadratic_drag"], 2.0) + min(field["linear_drag"], 2.0) * speed) * v
    raise AssertionError(kind)


@pytest.fixture(scope="module")
def fields(scenario):
    return scenario("particle_fields")


def case_data(fields, name, group=0):
    case = fields["cases"][name]
    spec = fields["groups"][group]
    x = np.array(spec["positions"])
    v = np.zeros_like(x) if spec["velocities"] is None else np.array(spec["velocities"])
    return case, x, v, np.array(case["forces"][group])


@pytest.mark.parametrize("name", ["force", "gravitation", "wind", "harmonic"])
def test_force_fields_from_blender_give_the_forces_their_settings_say(fields, name):
    case, x, v, force = case_data(fields, name)
    assert np.all(v != 0.0)  # the flow and damping terms are in play
    np.testing.assert_allclose(force, blender_force(case, x, v), rtol=1e-9, atol=1e-9)
    assert not [w for w in case["warnings"] if "force field" in w], case["warnings"]  # exact: nothing to report


def test_a_fields_strength_weight_in_a_particle_system_scales_it(fields):
    """The emitter's particle system weighs wind by 0.5: its particles get half the wind and half its flow."""
    case, x, v, force = case_data(fields, "wind", group=1)
    np.testing.assert_allclose(force, blender_force(case, x, v, weight=0.5), rtol=1e-9, atol=1e-9)


def test_the_vortex_swirls_and_drags_as_blender_and_its_pull_to_the_axis_is_reported(fields):
    case, x, v, force = case_data(fields, "vortex")
    s = case["field"]["strength"]
    z = np.array(case["matrix"])[:3, 2]
    z /= np.linalg.norm(z)
    r = x - np.array(case["matrix"])[:3, 3]
    across = r - (r @ z)[:, None] * z
    # all of Blender's force but its pull s^2 r_perp towards the axis, which the solver has no form for
    np.testing.assert_allclose(force, blender_force(case, x, v) + s * s * across, rtol=1e-9, atol=1e-9)
    assert any("pull towards its axis" in w and "left out" in w for w in case["warnings"]), case["warnings"]


def test_the_point_vortex_turns_by_the_distance_from_its_axis_and_says_so(fields):
    case, x, v, force = case_data(fields, "point_vortex")
    z = np.array(case["matrix"])[:3, 2]
    z /= np.linalg.norm(z)
    r = x - np.array(case["matrix"])[:3, 3]
    across = np.linalg.norm(r - (r @ z)[:, None] * z, axis=1, keepdims=True)
    blender = blender_force(case, x, v)
    np.testing.assert_allclose(force, blender * across / np.linalg.norm(r, axis=1, keepdims=True), rtol=1e-9,
                               atol=1e-9)
    assert any("distance from its axis" in w for w in case["warnings"]), case["warnings"]


def test_the_drag_field_keeps_its_term_in_proportion_to_speed_and_reports_the_other(fields):
    case, x, v, force = case_data(fields, "drag")
    speed = np.linalg.norm(v, axis=1, keepdims=True)
    np.testing.assert_allclose(force, blender_force(case, x, v) + case["field"]["linear_drag"] * speed * v,
                               rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(force, -case["field"]["quadratic_drag"] * v, rtol=1e-9)
    assert any("Linear Drag" in w and "left out" in w for w in case["warnings"]), case["warnings"]


def test_turbulence_is_the_solvers_noise_at_the_fields_strength_size_seed_and_flow(fields):
    """Blender's noise has no counterpart in the solver: its own curl noise stands in, with the field's settings."""
    case, x, v, force = case_data(fields, "turbulence")
    f = case["field"]
    scene = solver.Scene(gravity=(0.0, 0.0, 0.0))
    group = scene.add_particles(x, velocities=v, mass=2.0)
    scene.add_force(solver.Turbulence(f["strength"], size=f["size"], seed=f["seed"]))
    scene.add_force(solver.Drag(f["flow"]))
    sim = solver.Simulation(scene, dt=1e-3)
    sim.step()
    expected = (sim.state.particle_velocities(group) - v) / 1e-3 * 2.0
    np.testing.assert_allclose(force, expected, rtol=1e-9, atol=1e-9)
    assert np.abs(force + f["flow"] * v).max() > 0.1  # the noise is there
    assert any("turbulence is the solver's own" in w for w in case["warnings"]), case["warnings"]


def test_a_field_the_solver_cannot_do_is_reported_not_dropped_silently(fields):
    case, x, v, force = case_data(fields, "magnet")
    assert np.all(force == 0.0)
    assert any("Magnetic field is not simulated" in w for w in case["warnings"]), case["warnings"]


def test_a_particle_systems_particles_start_as_it_emits_them(fields):
    """20 particles on the 0.5 m emitter, moving at Normal (2 m/s) along its normal, with its size and mass; its
    own settings and the file's datablocks as they were."""
    spec = fields["groups"][1]
    assert spec["name"] == "Emitter" and len(spec["positions"]) == 20
    matrix = np.array(fields["emitter_matrix"])
    normal = matrix[:3, 2] / np.linalg.norm(matrix[:3, 2])
    np.testing.assert_allclose(spec["velocities"], np.tile(2.0 * normal, (20, 1)), atol=1e-6)
    local = (np.array(spec["positions"]) - matrix[:3, 3]) @ matrix[:3, :3]
    assert np.abs(local[:, 2]).max() < 1e-6 and np.abs(local[:, :2]).max() <= 0.25 + 1e-6
    assert spec["radius"] == pytest.approx(0.03, rel=1e-6) and spec["mass"] == pytest.approx(0.5)
    assert fields["settings_after"] == fields["settings_before"]
    assert fields["counts"][0] == fields["counts"][1]
    assert fields["emitter_source"] == "PARTICLE_SYSTEM"


def test_a_particle_systems_gravity_weight_is_kept(fields):
    g = np.array(fields["gravity"])
    vertices, emitted = (np.array(f) for f in fields["gravity_forces"])  # Cloud, Emitter
    np.testing.assert_allclose(vertices, np.tile(2.0 * g, (len(vertices), 1)), rtol=1e-9)
    np.testing.assert_allclose(emitted, np.tile(0.25 * 0.5 * g, (len(emitted), 1)), rtol=1e-9)


@pytest.fixture(scope="module")
def point_cloud(scenario):
    res = scenario("particle_point_cloud")
    if not res["convertible"]:  # run under scripts/test_blender_versions
        pytest.xfail("this Blender cannot convert a mesh to a point cloud (4.2 and 4.4 cannot), which this needs")
    return res


def test_a_point_clouds_points_radii_and_velocities_are_read_in_world_space(point_cloud):
    """Its positions, radii and 'velocity' attribute are in its own axes and units: scaled by 2 into the world's."""
    cloud = point_cloud["cloud"]
    assert point_cloud["add_cloud"] == ["FINISHED"] and cloud["source"] == "POINT_CLOUD"
    group = cloud["group"]
    assert group["name"] == "Points"
    matrix = np.array(cloud["matrix"])
    local = np.array(cloud["local"])
    np.testing.assert_allclose(group["positions"], local @ matrix[:3, :3].T + matrix[:3, 3], rtol=1e-12)
    np.testing.assert_allclose(group["velocities"], np.tile([0.0, 0.0, 3.0], (len(local), 1)))  # scaled too
    radii = 2.0 * np.linspace(0.01, 0.02, len(local)).astype(np.float32)  # scaled with the object
    assert group["radius"] == pytest.approx(radii.mean(), rel=1e-6)
    assert any("'Points': its points keep one collision radius" in w for w in cloud["warnings"])


# ------------------------------------------------------------------------------------------------- baking
@pytest.fixture(scope="module")
def baked(scenario, tmp_path_factory):
    return scenario("particle_bake", str(tmp_path_factory.mktemp("particle_bake") / "grains.blend"))


def test_the_point_cache_bake_plays_back_the_recorded_positions_exactly(baked):
    grains, sheet = np.array(baked["grains"]), np.array(baked["sheet"])
    played = np.array(baked["played_grains"])
    assert played.shape == grains.shape
    for frame, (got, want) in enumerate(zip(played, grains.astype(np.float32))):
        # instances come in point order; sorted, the comparison does not depend on it
        np.testing.assert_array_equal(got[np.lexsort(got.T)], want[np.lexsort(want.T)], err_msg=f"frame {frame}")
    location = np.array(baked["sheet_matrix"])[:3, 3]  # the sheet is only moved: its axes are the world's
    local = sheet - location
    np.testing.assert_allclose(np.array(baked["played_sheet"]), local, rtol=0, atol=F32 * np.abs(local).max())


def test_caches_sit_beside_the_blend_and_blender_plays_them_with_its_own_modifiers(baked):
    assert baked["job_state"] == "DONE" and baked["finish"] == ["FINISHED"]
    # in a folder named by the .blend (grains.blend) and the scene
    assert baked["cache_paths"] == ["//quadric_cache/grains/Scene/Grains.pc2",
                                    "//quadric_cache/grains/Scene/Sheet.pc2"]
    assert baked["files_exist"] == [True, True]
    assert baked["output"]["modifiers"] == [["Quadric Cache", "MESH_CACHE"], ["Quadric Particles", "NODES"]]
    np.testing.assert_array_equal(baked["output"]["matrix"], np.eye(4))
    assert baked["sheet_modifiers"] == [["Quadric Cache", "MESH_CACHE", "//quadric_cache/grains/Scene/Sheet.pc2"]]
    assert baked["status"].startswith("baked 2 particle groups or soft bodies over 48 frames")


G = 9.81


def test_grains_fall_freely_then_rest_on_the_plane(baked):
    """Before landing each grain is at z0 - g t^2 / 2 (symplectic Euler is g h t / 2 ahead of it); at the end
    it rests on the plane at its radius, straight below where it started."""
    grains = np.array(baked["grains"])
    h, fps = baked["dt"], baked["fps"]
    start = grains[0]
    for frame in range(1, 8):  # t <= 0.29 s: the lower grains land at 0.45 s
        t = frame / fps
        np.testing.assert_allclose(grains[frame][:, 2], start[:, 2] - 0.5 * G * t * t, atol=0.5 * G * h * t + 1e-9)
    np.testing.assert_allclose(grains[-1][:, 2], 0.02, atol=1e-6)
    np.testing.assert_array_equal(grains[-1][:, :2], start[:, :2])


def hanging_equilibrium(vertices, edges, masses, pinned, stiffness):
    """Where a sheet drawn in a vertical plane y = const, of springs of ``stiffness`` at their drawn lengths,
    comes to rest under gravity, the pinned vertices held: Newton's method on the static balance
    sum f_spring + m g = 0 in the sheet's plane (dense; a few dozen vertices). It starts stretched 1 % downwards:
    a quad grid without diagonals resists shear only under tension."""
    x = vertices.copy()
    top = vertices[pinned, 2].max()
    x[:, 2] = top + 1.01 * (vertices[:, 2] - top)
    x[pinned] = vertices[pinned]
    rest = np.linalg.norm(vertices[edges[:, 0]] - vertices[edges[:, 1]], axis=1)
    free = np.setdiff1d(np.arange(len(x)), pinned)
    dof = (3 * free[:, None] + np.array([0, 2])).ravel()  # x and z: nothing pushes the sheet out of its plane
    for _ in range(50):
        force = np.zeros_like(x)
        force[:, 2] -= masses * G
        jacobian = np.zeros((x.size, x.size))
        for (a, b), length in zip(edges, rest):
            d = x[a] - x[b]
            now = np.linalg.norm(d)
            u = d / now
            f = -stiffness * (now - length) * u
            force[a] += f
            force[b] -= f
            block = -stiffness * ((1.0 - length / now) * np.eye(3) + (length / now) * np.outer(u, u))
            for i, j, sign in ((a, a, 1), (b, b, 1), (a, b, -1), (b, a, -1)):
                jacobian[3 * i:3 * i + 3, 3 * j:3 * j + 3] += sign * block
        residual = force.ravel()[dof]
        if np.abs(residual).max() < 1e-12:
            return x
        step = np.linalg.solve(jacobian[np.ix_(dof, dof)], -residual)
        x.ravel()[dof] += step
    raise AssertionError("no equilibrium")


def test_a_cloth_pinned_by_a_vertex_group_hangs_and_its_pins_stay_put(baked):
    """The top row (weight 1) stays exactly where it was, the vertex of weight 0.3 does not; after 2 s the sheet
    hangs as its springs balance its weight (its slowest stretching mode, about 30 rad/s, decays by its spring
    damping as exp(-(c / k) w^2 t / 2) ~ 1e-4: under 10 micrometres of a 1 cm stretch)."""
    sheet = np.array(baked["sheet"])
    spec = baked["sheet_spec"]
    assert spec["pinned"] == [0, 1, 2, 3, 4]
    np.testing.assert_array_equal(sheet[:, :5], np.broadcast_to(sheet[0, :5], sheet[:, :5].shape))
    vertices, edges = np.array(spec["vertices"]), np.array(spec["edges"])
    lengths = np.linalg.norm(vertices[edges[:, 0]] - vertices[edges[:, 1]], axis=1)
    share = np.zeros(len(vertices))
    np.add.at(share, edges.ravel(), np.repeat(0.5 * lengths, 2))
    masses = spec["mass"] * share / lengths.sum()
    rest = hanging_equilibrium(vertices, edges, masses, spec["pinned"], 100.0)
    sag = vertices[:, 2] - rest[:, 2]
    assert sag.max() > 0.01  # it stretches by centimetres: the comparison below means something
    np.testing.assert_array_equal(sheet[:, :, 1], vertices[:, 1][None].repeat(len(sheet), 0))  # in its plane
    np.testing.assert_allclose(sheet[-1], rest, atol=1e-5)
    assert sheet[-1][7, 2] < vertices[7, 2] - 0.002  # the vertex of weight 0.3 (4.6 mm in equilibrium) is free


def test_clear_bake_removes_the_caches_their_modifier_and_the_particles_object(baked):
    after = baked["after_clear"]
    assert baked["clear"] == ["FINISHED"]
    assert after == dict(files=[False, False], folder=False, output_left=False, sheet_modifiers=[],
                         cache_paths=["", ""])


def test_a_cancelled_bake_keeps_its_frames_and_a_failed_one_leaves_the_file_as_it_was(baked):
    assert baked["cancel_state"] == "CANCELLED" and baked["cancel_finish"] == ["FINISHED"]
    assert baked["cancel_partial_end"] == baked["frame_start"] + 4  # the start pose and four steps
    assert baked["cancel_samples"] == [5, 5] and baked["cancel_same_start"]
    assert "could not write the point caches" in baked["blocked"] and "nothing was baked" in baked["blocked"]
    assert baked["blocked_unchanged"]


def test_an_imported_recording_bakes_the_same_caches(baked):
    assert baked["import"] == ["FINISHED"]
    got, want = np.array(baked["imported_last_frame"]), np.array(baked["grains"][-1], dtype=np.float32)
    np.testing.assert_array_equal(got[np.lexsort(got.T)], want[np.lexsort(want.T)])


def test_a_bake_is_one_undo_step(baked):
    assert baked["simulate"] == ["FINISHED"]
    assert baked["after_simulate"] != baked["before_simulate"]
    assert baked["after_simulate"]["objects"]["Sheet"]["cache"] == "//quadric_cache/grains/Scene/Sheet.pc2"
    assert baked["after_undo"] == baked["before_simulate"]
    assert baked["after_redo"] == baked["after_simulate"]


# ------------------------------------------------------------------------------------------- bad input
@pytest.fixture(scope="module")
def checks(scenario):
    return scenario("particle_checks")


@pytest.mark.parametrize("key,words", [
    ("err_particles_of_empty", ["Lamp", "not a mesh or a point cloud"]),
    ("err_soft_body_of_empty", ["Lamp", "not a mesh"]),
    ("err_soft_body_without_edges", ["Loose", "no edges"]),
    ("err_missing_pin_group", ["Sheet", "pin_group 'Pins'", "not one of its vertex groups"]),
    ("err_zero_mass_particles", ["Sheet", "mass must be positive"]),
    ("err_hair", ["Hairy", "hair"]),
])
def test_operators_refuse_bad_input_naming_the_object_and_the_field(checks, key, words):
    message = checks[key]
    assert message.startswith("Error"), message
    for word in words:
        assert word in message, message


def problem(checks, *words, severity='ERROR'):
    found = [p for p in checks["problems"] if p["severity"] == severity and all(w in p["message"] for w in words)]
    assert found, (words, [p["message"] for p in checks["problems"]])
    return found[0]


def test_check_scene_names_each_bad_group_and_field(checks):
    assert problem(checks, "'Heavy'", "mass must be positive")["objects"] == ["Heavy"]
    assert problem(checks, "'Unpinned'", "pin_group 'Gone'")["objects"] == ["Unpinned"]
    assert not [p for p in checks["problems"] if "Bowl" in p["message"] or "Pebble" in p["message"]]
    assert problem(checks, "'Gusty'", "noise", severity='WARNING')["kind"] == "FIELD"
    problem(checks, "'Magnet'", "not simulated", severity='WARNING')
    problem(checks, "'Fading'", "falloff power 2", "full strength", severity='WARNING')
    assert not [p for p in checks["problems"] if "not yet on Quadric" in p["message"]]  # fields act on them now
    assert not [p for p in checks["problems"] if "pass through" in p["message"]]  # no ropes in this scene


def test_check_scene_says_how_many_substeps_a_stiff_cloth_needs(checks):
    """A 3 x 3 sheet of 0.1 m edges and 0.1 kg at 1e6 N/m: its centre vertex weighs 0.1 x 4 x 0.05 / 1.2 kg and
    pulls on 4 springs, so w^2 <= 2 x 4e6 / m (Gershgorin) and the explicit step must stay under about 2 / w."""
    assert checks["stiffness_set"] == 1e6
    found = problem(checks, "'Sheet'", "may diverge", severity='WARNING')
    m = 0.1 * 4 * 0.05 / 1.2
    omega = math.sqrt(2.0 * 4.0e6 / m)
    limit = -1e-6 + math.sqrt(1e-12 + 4.0 / omega ** 2)  # damping 1 N s/m over 1e6 N/m
    assert f"use {math.ceil(1.0 / (24.0 * limit))} substeps or more" in found["message"], found["message"]
    assert "Implicit Euler" in found["message"]
    # with the implicit integrator chosen there is nothing to warn about, and the other problems stay
    assert not [m for m in checks["implicit_problems"] if "may diverge" in m]
    assert [m for m in checks["implicit_problems"] if "'Heavy'" in m and "mass must be positive" in m]


def test_simulate_stops_at_check_scene_before_the_solver_loads(checks):
    assert checks["simulate_error"].startswith("Error") and "'Heavy'" in checks["simulate_error"]
    assert checks["kernels"] == []
    drawn = {tuple(x[:2]) for x in checks["panel"]}
    for name in ("source", "mass", "radius", "particle_collisions", "total_mass", "stiffness", "damping",
                 "bending", "pin_group"):
        assert ("prop", name) in drawn, name
    assert ("operator", "quadric.add_particles") in drawn and ("operator", "quadric.make_soft_body") in drawn


def test_a_wind_field_pushes_bodies_at_their_centre_and_ropes_per_metre(scenario):
    """Without gravity, a Wind of strength s along +Y gives a body the constant force w s (w the rigid body world's
    wind weight, 0.5) and every rope node s per metre of rope: after N substeps of h the body has moved
    h^2 a N (N + 1) / 2 along +Y (symplectic Euler, a = w s / m), and the rope as the same sum of velocities
    v_k = d v_(k-1) + h s / mu, d = 1 / (1 + h c) its damping's decay."""
    res = scenario("fields_on_bodies_and_ropes")
    assert res["state"] == "DONE", res["message"]
    np.testing.assert_allclose(res["wind_axis"], [0.0, 1.0, 0.0], atol=1e-6)
    assert [(f["type"], f["bodies"], f["ropes"]) for f in res["forces"]] == [("wind", None, []), ("wind", [], None)]
    assert not [w for w in res["warnings"] if "force field" in w], res["warnings"]
    h, n = res["h"], res["substeps"] * np.arange(len(res["ball"]))
    travel = h * h * n * (n + 1) / 2.0
    ball, rope = np.array(res["ball"]), np.array(res["rope"])
    axis = np.array(res["wind_axis"]) / np.linalg.norm(res["wind_axis"])  # +Y to float32 rounding
    np.testing.assert_allclose(ball - ball[0], np.outer(travel * 0.5 * res["strength"] / res["mass"], axis),
                               rtol=1e-9, atol=1e-12)
    decay, velocity, positions = 1.0 / (1.0 + h * res["rope_damping"]), 0.0, [0.0]
    for _ in range(n[-1]):
        velocity = velocity * decay + h * res["strength"] / res["rope_mu"]
        positions.append(positions[-1] + h * velocity)
    rope_travel = np.array(positions)[n]
    assert rope_travel[-1] > 0.01
    np.testing.assert_allclose(rope[:, :, 1] - rope[0, :, 1], np.outer(rope_travel, np.ones(rope.shape[1])),
                               rtol=1e-9, atol=1e-12)
    assert travel[-1] * 0.5 * res["strength"] / res["mass"] > 0.01  # it moved a visible centimetre or more


def test_a_bake_that_fails_after_writing_its_caches_keeps_the_earlier_ones(baked):
    """The caches of a new bake are staged beside the earlier ones and put in place only once the whole bake
    worked; here the bodies' part of a (partial) bake raised, and the run's status says nothing was baked."""
    assert baked["failed_finish"] == ["CANCELLED"] and "nothing was baked" in baked["failed_status"]
    assert baked["failed_caches_kept"]
    assert baked["failed_leftovers"] == ["Grains.pc2", "Sheet.pc2"]  # no staged file left


# ------------------------------------------------------------------------------------------- contacts
@pytest.fixture(scope="module")
def contacts(scenario):
    return scenario("particle_contacts")


def test_grains_rest_on_a_mesh_collider_and_on_static_and_dynamic_bodies(contacts):
    """Grains of radius 0.02 dropped onto a subdivided grid (a mesh collider at z = 0), onto a static box of
    0.4 m and onto a dynamic box of 0.4 m standing on the grid: each rests at its radius above the surface under
    it (the dynamic box's top measured in its own frame, as it may tilt under the grain), and Check Scene has
    nothing to say about meshes or bodies beside particles. The add-on reads the objects' geometry and the radius
    in single precision: the heights are those of float32 values, within 2^-23 of each."""
    assert contacts["job_state"] == "DONE" and contacts["finish"] == ["FINISHED"]
    assert not [p for p in contacts["problems"] if p["severity"] == 'ERROR'], contacts["problems"]
    grains = np.array(contacts["grains"])
    np.testing.assert_allclose(grains[:2, 2], 0.02, rtol=0, atol=F32 * 0.02)
    np.testing.assert_allclose(grains[:2, :2], [[-0.5, -0.5], [-0.3, 0.3]], rtol=0, atol=F32)
    assert grains[2, 2] == pytest.approx(0.4 + 0.02, abs=2 * F32 * 0.42)
    crate = np.array(contacts["bodies"]["Crate"])
    rotation = quat_to_matrix(crate[3:])
    local = rotation.T @ (grains[3] - crate[:3])
    assert local[2] == pytest.approx(0.2 + 0.02, abs=2 * F32 * 0.22 + 1e-12)
    assert np.all(np.abs(local[:2]) < 0.2)
    moved = np.linalg.norm(grains - np.array(contacts["grains_frame_before"]), axis=1)
    assert moved.max() < 9.81 * contacts["h"] / 24.0  # at rest: less than a frame of one substep's fall speed



# ------------------------------------------------------------------------------------- moving pins, births
@pytest.fixture(scope="module")
def following(scenario, tmp_path_factory):
    return scenario("pinned_cloth_follows", str(tmp_path_factory.mktemp("follow") / "follow.blend"))


@pytest.mark.parametrize("name", ["Flag", "Scarf"])
def test_a_cloth_pinned_to_a_moving_object_follows_it_and_plays_back_where_it_was_simulated(following, name):
    """The flag is keyed to move and turn, the scarf hangs from a moving empty: at every frame their pinned
    vertices are where the object's world matrix puts its mesh's vertices, in the recording and as played back
    (the cache plays in the object's axes at each frame, so the object's own motion puts the cloth back in place).
    Blender's matrices and the mesh are single precision: both agree within a few float32 ulps of the metres."""
    assert following["job_state"] == "DONE" and following["finish"] == ["FINISHED"]
    assert not [w for w in following["warnings"] if name in w], following["warnings"]
    cloth = following[name]
    assert cloth["track"] and cloth["modifiers"] == ["MESH_CACHE"]
    matrices, co = np.array(cloth["matrices"]), np.array(cloth["co"])
    recorded, pinned = np.array(cloth["recorded"]), cloth["pinned"]
    rigid = co @ matrices[:, :3, :3].transpose(0, 2, 1) + matrices[:, None, :3, 3]  # (F, n, 3) carried along
    tolerance = 8 * F32 * np.abs(rigid).max()
    np.testing.assert_allclose(recorded[:, pinned], rigid[:, pinned], rtol=0, atol=tolerance)
    assert np.linalg.norm(rigid[-1, pinned] - rigid[0, pinned], axis=1).min() > 0.5  # they did move
    played = np.array(cloth["played"]) @ matrices[:, :3, :3].transpose(0, 2, 1) + matrices[:, None, :3, 3]
    np.testing.assert_allclose(played, recorded, rtol=0, atol=tolerance)
    free = [k for k in range(len(co)) if k not in pinned]
    assert np.abs(recorded[:, free] - rigid[:, free]).max() > 0.01  # the rest is cloth, not carried rigidly


def test_particles_made_from_a_moving_meshs_vertices_keep_their_pinned_ones_on_it(following):
    """Beads made from the vertices of a mesh hanging from the moving empty: the two in its pin group ride along
    (at the object's world matrix times their vertex, at every frame), the other two are free and fall; the
    particles object draws them where they were recorded (world space, float32)."""
    beads = following["Beads"]
    assert beads["track"] and beads["pinned"] == [0, 1]
    matrices, co, recorded = np.array(beads["matrices"]), np.array(beads["co"]), np.array(beads["recorded"])
    rigid = co @ matrices[:, :3, :3].transpose(0, 2, 1) + matrices[:, None, :3, 3]
    np.testing.assert_allclose(recorded[:, :2], rigid[:, :2], rtol=0, atol=8 * F32 * np.abs(rigid).max())
    assert np.linalg.norm(rigid[-1, :2] - rigid[0, :2], axis=1).min() > 0.5
    assert np.all(recorded[-1, 2:, 2] < rigid[-1, 2:, 2] - 0.5)  # the free ones fell (1 s: 4.9 m)
    for frame, got in enumerate(beads["played"]):
        got, want = np.array(got), recorded[frame].astype(np.float32)
        np.testing.assert_array_equal(got[np.lexsort(got.T)], want[np.lexsort(want.T)], err_msg=f"frame {frame}")


@pytest.fixture(scope="module")
def births(scenario, tmp_path_factory):
    return scenario("particle_births", str(tmp_path_factory.mktemp("births") / "births.blend"))


def test_a_particle_systems_birth_times_and_lifetimes_are_blenders(births):
    """Of Blender's 19 particles (born every 2 frames from frame 3) those born by frame 30 are simulated, each
    with its birth frame and lifetime as seconds after the first frame (frame 1, 24 fps), where Blender emits it:
    on the emitter, at Normal velocity (1 m/s up). The five born later are left out, and that is said."""
    assert births["add"] == ["FINISHED"] and births["job_state"] == "DONE" and births["finish"] == ["FINISHED"]
    birth, life = np.array(births["blender"]["birth"]), np.array(births["blender"]["lifetime"])
    kept = birth <= 30.0
    assert len(birth) == 19 and kept.sum() == 14
    group, fps = births["group"], births["fps"]
    np.testing.assert_allclose(np.array(group["birth_times"]) * fps + 1.0, birth[kept], rtol=1e-12)
    np.testing.assert_allclose(np.array(group["lifetimes"]) * fps, life[kept], rtol=1e-12)
    assert np.ptp(life) > 1.0  # Blender's Random lifetime is kept per particle
    positions, velocities = np.array(group["positions"]), np.array(group["velocities"])
    np.testing.assert_allclose(positions[:, 2], 2.0, rtol=0, atol=4 * F32 * 2.0)
    assert np.abs(positions[:, :2]).max() <= 0.25 + 1e-6
    np.testing.assert_allclose(velocities, np.tile([0.0, 0.0, 1.0], (14, 1)), rtol=0, atol=1e-6)
    assert any("'Spout': 5 of its particles are born after the last frame" in w for w in births["warnings"])


def test_born_particles_wait_fly_and_die_and_only_the_living_are_drawn(births):
    """Each recorded particle sits where it is born until its birth, then flies up at 1 m/s (as Blender gives it,
    in single precision) and falls: z = z_b + v t - g t^2 / 2 (t since birth), symplectic Euler up to g h t / 2
    ahead of it (exactly that when the birth falls on a step), g Blender's (9.81 in single precision); after its
    death it stays where it stopped. At every frame the particles object draws exactly those born and not dead,
    where the recording has them (float32)."""
    recorded = np.array(births["recorded"])
    group, fps, h, g = births["group"], births["fps"], births["h"], -births["gravity"][2]
    start, born, speed = np.array(group["positions"]), np.array(group["birth_times"]), np.array(group["velocities"])
    dies = born + np.array(group["lifetimes"])
    t = np.arange(len(recorded)) / fps
    for k in range(len(start)):
        waiting, flying = t < born[k], (t >= born[k] + h) & (t < dies[k])
        np.testing.assert_array_equal(recorded[waiting, k], np.broadcast_to(start[k], (waiting.sum(), 3)))
        tau = t[flying] - born[k]
        np.testing.assert_array_equal(recorded[flying, k, :2], np.broadcast_to(start[k, :2], (flying.sum(), 2)))
        fall = recorded[flying, k, 2] - (start[k, 2] + speed[k, 2] * tau - 0.5 * g * tau ** 2)
        assert np.all((fall <= 1e-12) & (fall >= -0.5 * g * h * tau - 1e-12)), (k, fall)
        gone = t >= dies[k] + h
        np.testing.assert_array_equal(recorded[gone, k], np.broadcast_to(recorded[-1, k], (gone.sum(), 3)))
    frames = np.arange(len(recorded)) + 1.0
    for f, drawn in enumerate(births["drawn"]):
        there = (born * fps + 1.0 <= frames[f]) & (frames[f] < dies * fps + 1.0)
        assert 0 < there.sum() < len(start) or f < 3  # some are hidden at every frame from the first births
        got, want = np.array(drawn).reshape(-1, 3), recorded[f, there].astype(np.float32)
        assert got.shape == want.shape, (f, got.shape, want.shape)
        np.testing.assert_array_equal(got[np.lexsort(got.T)], want[np.lexsort(want.T)], err_msg=f"frame {f + 1}")
