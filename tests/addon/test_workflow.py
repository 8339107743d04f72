"""Presets, tooltips, Copy from Active, adding a collection, Remove from Simulation and parented bodies in a real
Blender (the halves in blender_scenarios.py). Blender stores float properties in single precision (6e-8
relative)."""
import ast
import os
import re

import numpy as np
import pytest

BUILT_IN_MATERIALS = {"sand", "gravel", "pebbles", "beans", "rice", "rubber", "glass_marbles", "ice", "wood_blocks"}
BUILT_IN_ROPES = {"thread", "cotton_rope", "climbing_rope", "steel_cable", "chain", "garden_hose"}


def preset_values(text):
    """What a preset file assigns: {'friction': 0.1, ...} from lines like `s.a, s.b = 1.0, 'X'`."""
    values = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], (ast.Tuple, ast.Attribute)):
            targets = node.targets[0].elts if isinstance(node.targets[0], ast.Tuple) else [node.targets[0]]
            numbers = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
            for target, value in zip(targets, numbers):
                values[target.attr] = ast.literal_eval(value)
    return values


def assert_settings(read, expected):
    assert expected, "nothing to compare"
    for key, value in expected.items():
        if isinstance(value, str):
            assert read[key] == value, key
        else:
            assert read[key] == pytest.approx(value, rel=1e-7), key


@pytest.fixture(scope="module")
def presets(scenario):
    return scenario("presets")


def test_preset_menus_list_the_built_in_presets(presets):
    assert {os.path.splitext(os.path.basename(f))[0] for f in presets["material_menu"]} >= BUILT_IN_MATERIALS
    assert {os.path.splitext(os.path.basename(f))[0] for f in presets["rope_menu"]} >= BUILT_IN_ROPES


def test_material_preset_through_the_preset_machinery_sets_the_values(presets):
    assert presets["glass_result"] == ["FINISHED"]
    expected = preset_values(presets["glass_file"])
    assert set(expected) == {"friction", "restitution", "rolling_friction", "spinning_friction", "mass_mode",
                             "density"}
    assert presets["before"]["mass_mode"] == "MASS" and presets["before"]["density"] != expected["density"]
    assert_settings(presets["glass"], expected)
    assert presets["menu_label"] == "glass marbles"  # the menu shows the preset last chosen, as Blender's do


def test_user_material_preset_is_saved_listed_and_applied(presets):
    assert presets["add_result"] == ["FINISHED"]
    assert presets["user_file_exists"] and presets["user_listed"]
    assert_settings(presets["mix_read"], presets["mix_set"])  # back from the glass values it was set over


def test_rope_preset_sets_the_rig_and_its_skin_radius(presets):
    assert presets["steel_result"] == ["FINISHED"]
    expected = preset_values(presets["steel_file"])
    assert set(expected) == {"rope_radius", "rope_density", "rope_damping", "rope_young_modulus",
                             "rope_shear_modulus"}
    assert_settings(presets["steel"], expected)
    for radii in presets["skin_radii"]:
        assert radii == pytest.approx([expected["rope_radius"]] * 2, rel=1e-6)


def test_panels_show_preset_menus_copy_and_remove(presets):
    drawn = {tuple(x[:2]) for x in presets["panel"]}
    for item in [("menu", "QUADRIC_MT_material_presets"), ("menu", "QUADRIC_MT_rope_presets"),
                 ("operator", "quadric.material_preset_add"), ("operator", "quadric.rope_preset_add"),
                 ("operator", "quadric.copy_from_active"), ("operator", "quadric.remove")]:
        assert item in drawn, item


@pytest.fixture(scope="module")
def workflow(scenario):
    return scenario("workflow")


def test_copy_from_active_copies_settings_and_makes_meshes_bodies(workflow):
    assert workflow["copy"] == ["FINISHED"]
    source = workflow["copied"]["Source"]
    for name in ("Body", "Plain"):
        copied = workflow["copied"][name]
        assert copied["role"] == "BODY", name
        for key in ("friction", "restitution", "rolling_friction", "spinning_friction", "mass_mode", "density",
                    "body_type"):
            assert copied[key] == source[key], (name, key)
    assert workflow["plain_has_shape"]  # the plain mesh was fitted first
    assert workflow["lamp_role"] == "NONE"
    reports = "\n".join(workflow["copy_reports"])
    assert "Warning: skipped 'Lamp': it is not in the simulation, not a body" in reports
    assert re.search(r"Info: copied .*friction.* from 'Source' to 2 objects \(1 made bodies first\)", reports), reports


def test_a_clicked_copy_from_active_fits_a_mesh_a_tick_and_esc_while_fitting_changes_nothing(workflow):
    esc = workflow["copy_esc"]
    assert esc["result"] == ["CANCELLED"]
    assert esc["reports"] == [[["WARNING"], "Copy from Active cancelled: nothing was changed"]]
    assert esc["unchanged"] and esc["same_objects"]
    ticked = workflow["copy_ticked"]
    results = ticked["results"]
    assert results[-1] == ["FINISHED"] and all(r == ["RUNNING_MODAL"] for r in results[:-1])
    # each plain mesh fitted in a tick, then (a step an object here) the bodies made and the settings copied
    assert len(results) >= 2 + 3
    source = workflow["copied"]["Source"]
    for name, copied in ticked["copied"].items():
        assert copied["role"] == "BODY", name
        assert copied == source, name
    assert any(kind == ["INFO"] and "from 'Source' to 3 objects (2 made bodies first)" in msg
               for kind, msg in ticked["reports"]), ticked["reports"]


def test_add_body_on_a_whole_collection(workflow):
    assert workflow["collection"] == ["FINISHED"]
    roles = workflow["pebbles"]
    pebbles = {name: role for name, role in roles.items() if re.fullmatch(r"Pebble\.\d", name)}
    assert pebbles == {f"Pebble.{k}": "BODY" for k in range(4)}  # also the one in a child collection
    assert {roles[f"Pebble.{k} Shape"] for k in range(4)} == {"NONE"}  # their shape displays joined them
    assert roles["Marker"] == "NONE"   # not a mesh
    assert workflow["body_friction_kept"] == pytest.approx(0.25)  # already a body: not fitted again
    assert any("4 quadric bodies added from the collection 'Pebbles'; 1 already in the simulation" in line
               for line in workflow["collection_reports"]), workflow["collection_reports"]
    # without a name: the active collection
    assert workflow["active_collection"] == ["FINISHED"] and workflow["bean_role"] == "BODY"


def test_remove_acts_on_the_object_the_panel_shows_and_says_what_it_did(workflow):
    assert ("operator_property", "quadric.remove", "object", "Body") in [tuple(x) for x in workflow["panel_remove"]]
    assert workflow["remove_body"] == ["FINISHED"] and workflow["remove_rope"] == ["FINISHED"]
    after = workflow["after_remove"]
    assert after["body_role"] == "NONE" and not after["body_shape_left"]
    assert after["plain_role"] == "BODY"  # selected, but not what the button named
    reports = "\n".join(workflow["remove_reports"])
    assert "Info: took body 'Body' out of the simulation (deleted its shape display)" in reports, reports
    assert "Info: removed rope 'Line Rope Rig' (its rig and mesh) and showed its curve 'Line' again" in reports


def test_remove_on_a_selection_takes_each_out_and_deletes_all_it_made_for_them(workflow):
    assert workflow["remove_many"] == ["FINISHED"]
    roles = workflow["remove_many_roles"]
    assert len(roles) == 4 and roles == ["NONE"] * 4
    assert len(workflow["remove_many_ours"]["objects"]) == 4 and len(workflow["remove_many_ours"]["meshes"]) >= 4
    assert workflow["remove_many_left"] == dict(objects=[], meshes=[])  # displays, their meshes, hull meshes
    assert all(workflow["remove_many_own_meshes"])  # the pebbles' own meshes stay
    said = [line for line in workflow["remove_many_reports"] if line.startswith("Info: took body 'Pebble.")]
    assert len(said) == 4 and all(line.endswith("(deleted its shape display)") for line in said), said


def test_remove_on_a_rope_deletes_the_rig_and_restores_the_curve(workflow):
    assert workflow["curve_hidden_as_rope"]
    after = workflow["after_remove"]
    assert not after["rig_left"] and not after["mesh_left"]
    assert not after["curve_hidden"] and not after["curve_hide_render"]
    assert workflow["remove_nothing"] == "Error: not in the Quadric simulation: 'Lamp'\n"


UNITS = re.compile(r"kg|\bm\b|m/s|rad/s|m\^3|\bPa\b|1/s|dimensionless")


def test_every_property_has_a_tooltip_and_user_facing_ones_a_unit_and_typical_range(scenario, presets):
    props = scenario("tooltips")
    assert len(props) > 40
    missing = [name for name, p in props.items() if len(p["description"]) < 12]
    assert not missing, missing
    drawn = {x[1] for x in presets["panel"] if x[0] == "prop"}
    checked = 0
    for name, p in props.items():
        owner, identifier = name.split(".")
        if identifier not in drawn or p["type"] not in ("FLOAT", "INT"):
            continue
        checked += 1
        assert "typical" in p["description"], name
        if p["type"] == "FLOAT":
            assert UNITS.search(p["description"]), name
    assert checked >= 14


def test_parented_bodies_simulate_in_world_space_and_bake_under_their_parents(scenario):
    """A body under a turned, twice-scaled empty and one under a moving empty fall as free bodies in world space;
    their keyframes, written in their parents' space, play back the recorded world positions (to the float32
    precision of keyframes, times the parent's scale of 2), and Clear Bake puts their own transforms back."""
    res = scenario("parented_bodies")
    assert res["state"] == "DONE", res["message"]
    assert not [p for p in res["problems"] if "parent" in p], res["problems"]
    for name in ("Hung", "Carried"):
        recorded = np.array(res["recorded"][name])
        played = np.array(res["played"][name])
        offset = np.array(res["offsets"][name])
        assert np.linalg.norm(offset) < 1e-6  # an ico sphere's body frame sits at its origin
        # float32 keyframes (2^-24 relative) of own coordinates up to 10 m, times the parent's scale of 2, and a
        # few float32 roundings in Blender's matrix products: 1e-5 m
        np.testing.assert_allclose(played, recorded, rtol=0.0, atol=1e-5)
        np.testing.assert_allclose(played[0], res["start"][name], atol=1e-6)
        # free fall, whatever the parent does: x and y stay, z drops by about g t^2 / 2 in one second
        np.testing.assert_allclose(played[:, :2], np.broadcast_to(played[0, :2], (len(played), 2)), atol=1e-5)
        assert 4.0 < played[0, 2] - played[-1, 2] < 5.5
        np.testing.assert_allclose(res["world_scale"][name], [1.0, 1.0, 1.0], atol=1e-6)
        np.testing.assert_allclose(res["own_after_clear"][name], res["own_before"][name], atol=1e-6)


@pytest.fixture(scope="module")
def clicked_add(scenario):
    return scenario("add_body_ticks")


def test_a_clicked_add_body_fits_a_mesh_a_tick_and_makes_the_bodies_a_script_would(clicked_add):
    res = clicked_add
    assert res["once"] == ["FINISHED"]
    results = res["ticked_results"]
    assert results[-1] == ["FINISHED"] and all(r == ["RUNNING_MODAL"] for r in results[:-1])
    assert len(results) >= 3 + 1  # a budget of zero: each of the three meshes fitted in a step, then the bodies
    # the same fits and settings as the bodies made at once from identical meshes in the same places
    assert res["ticked_fields"] == res["once_fields"]
    assert res["ticked_fields"][0]["role"] == "BODY"
    assert any(kind == ["INFO"] and message.startswith("3 quadric bodies added from the selection")
               for kind, message in res["ticked_reports"]), res["ticked_reports"]
    new = sorted(set(res["objects_after"]) - set(res["objects_before"]))
    assert len(new) == 3  # a shape display for each body


def test_each_display_made_in_a_batch_follows_its_own_body(clicked_add):
    # the first display's constraint is made and named, the others copied from it (named as it is)
    for name, owner, constraints in clicked_add["displays"]:
        assert owner == name
        assert constraints == [["Quadric Shape", "CHILD_OF", name, False, False, False]], (name, constraints)


def test_displays_and_hull_meshes_are_the_meshes_from_pydata_makes_and_are_wires_hidden_from_renders(clicked_add):
    # displays are filled from numpy arrays and their flags set for a batch at once: the reference is Blender's
    # own Mesh.from_pydata of the same vertices and faces, and each flag as update_display sets it for one body
    meshes = clicked_add["display_meshes"]
    assert clicked_add["cone_add"] == ["FINISHED"]
    assert sorted({m["kind"] for m in meshes.values()}) == [0, 2, 3, 5], {n: m["kind"] for n, m in meshes.items()}
    for name, m in meshes.items():
        assert m["made"] == m["reference"], name
        assert len(m["made"]["faces"]) >= 6 and len(m["made"]["edges"]) >= 12, name
        assert m["flags"] == ["WIRE", True, True, 1], name
        assert m["inverse"] == np.eye(4).tolist(), name
    hull = clicked_add["hull"]
    assert hull["made"] == hull["reference"]
    assert len(hull["made"]["co"]) == 8 and len(hull["made"]["faces"]) == 12  # 7 rim points and the apex


def test_fit_shape_deletes_the_hull_mesh_it_replaces(clicked_add):
    res = clicked_add
    assert res["refit"] == ["FINISHED"]
    refit = res["refit_hull"]
    assert not refit["old_kept"] and not refit["same"], refit
    assert refit["growth"] == pytest.approx(1.5, rel=1e-6)  # the new hull is the grown mesh's (float32 points)
    assert len(refit["hull_meshes"]) == 1, refit


def test_bodies_of_one_shape_made_together_share_a_display_mesh_until_one_is_edited(clicked_add):
    res = clicked_add
    assert res["twins_add"] == ["FINISHED"]
    twins = res["twins"]
    assert twins["params"][0] == twins["params"][1] == twins["params"][2]  # linked duplicates: the same fit
    assert twins["distinct"] == 1 and twins["users"] == 3
    edited = res["twins_edited"]
    assert edited["own"] and edited["others_shared"] and edited["users"] == [2, 1]
    np.testing.assert_allclose(edited["extent0"], edited["before"], rtol=1e-6)  # the others' display is as it was
    np.testing.assert_allclose(edited["extent1"], 1.5 * np.array(edited["before"]), rtol=1e-6)
    assert res["twins_remove"] == ["FINISHED"]
    after = res["twins_after_remove"]
    assert after["kept"] and after["users"] == 1
    np.testing.assert_allclose(after["extent"], edited["before"], rtol=1e-6)


def test_linked_duplicates_are_fitted_once_and_get_the_fit_each_would_get(clicked_add):
    # a float32 world matrix places a point within 6e-8 x 3.5 m (the largest coordinate): 2e-7 m
    tolerance = 1e-6
    for family, kind in (("CONVEX_HULL", 5), ("BOX", 2)):
        res = clicked_add["memo"][family]
        names = res["objects"]
        assert res["problems"] == []
        assert res["calls"] == [names[0], names[3], names[4]], family  # the other scale, the modifier: their own
        assert res["kinds"] == [[kind] * 5, [kind] * 5]
        if kind == 2:
            np.testing.assert_allclose(res["params"][0], res["params"][1], rtol=1e-6)
        for k, (memo, alone) in enumerate(zip(res["memo"], res["alone"])):
            memo, alone = np.array(memo), np.array(alone)
            assert len(memo) == len(alone) >= 8, (family, k)
            gaps = np.linalg.norm(memo[:, None] - alone[None], axis=2)
            assert gaps.min(axis=1).max() < tolerance and gaps.min(axis=0).max() < tolerance, (family, k)
        assert np.ptp(np.array(res["memo"])[:3], axis=0).max() > 0.5  # placed apart: the fits were moved


def test_add_body_reads_every_mesh_before_it_makes_a_body(clicked_add):
    # a body's display changes the scene: a mesh read after it would wait for the scene to be evaluated again
    kinds = [kind for kind, _ in clicked_add["order"]]
    assert kinds == ["fit"] * 3 + ["make"] * 3
    assert [name for _, name in clicked_add["order"]] == clicked_add["copies"] * 2


def test_esc_while_add_body_fits_changes_nothing(clicked_add):
    res = clicked_add
    assert res["esc_progress"][0] == "fitting the shapes"
    assert res["esc"] == ["CANCELLED"]
    assert res["esc_reports"] == [[["WARNING"], "Add Quadric Body cancelled: nothing was changed"]]
    assert res["esc_roles"] == ["NONE"] * 3
    assert res["esc_objects"] == res["objects_before"]
