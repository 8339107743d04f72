"""Mesh colliders in a real Blender (the Blender half is blender_scenarios.py:scenario_mesh_colliders): Add
Collider's Auto choice, Check Scene and Resolve Overlaps on them, and the solver Scene the conversion makes.

Blender keeps vertex coordinates and matrices in single precision, and mathutils multiplies in single
precision: a world coordinate of a few metres rounds at about 6e-8 of the largest coordinate per operation,
and the three products and sums of a matrix row take a few of those, so what the conversion computes (in
double, from the same single-precision numbers) agrees with mathutils within 1e-6 of the largest coordinate.
"""
import numpy as np
import pytest

GAP = 1e-3  # Resolve Overlaps leaves this fraction of the smaller smallest semi-axis between the surfaces
# A triangle's normal from single-precision corners a few metres from the origin (rounded at 6e-8 of that) is off
# by about that over its shortest side (the bowls' pole triangles: 0.04 m), 3e-6 rad at most; mathutils' face
# normal through the inverse transpose, in single precision too, by a few 1e-7.
NORMAL_ANGLE = 1e-5


@pytest.fixture(scope="module")
def meshes(scenario):
    return scenario("mesh_colliders")


def test_add_collider_auto_picks_mesh_for_what_is_no_plane_tube_or_box(meshes):
    assert meshes["auto"] == {"Bowl": "MESH", "Mirrored": "MESH", "Terrain": "MESH", "Terraces": "MESH",
                              "Stairs": "MESH", "Tray": "BOX", "Crate": "BOX", "Pipe": "TUBE", "Floor": "PLANE"}
    # the terraces are a flat plane with an Array modifier: the mesh with its modifiers applied is what is judged
    assert meshes["data_kind"]["Terraces"] == "PLANE"


def test_check_scene_names_a_mesh_without_faces_and_a_body_sunk_in_a_mesh(meshes):
    error = meshes["check_error"]
    assert error.startswith("Error: "), error
    assert "'Loose': mesh collider has no faces" in error
    assert "'Pebble' overlaps mesh 'Terrain' by" in error
    assert "Check Scene found 2 problems" in error  # the warning below does not stop a simulation
    errors = [p for p in meshes["problems"] if p["severity"] == "ERROR"]
    assert [(p["kind"], p["objects"]) for p in errors] == [("COLLIDER", ["Loose"]), ("OVERLAP", ["Pebble", "Terrain"])]
    # the pebble's centre is 0.1 above the terrain's flat part (a level plane): its depth is its radius less that
    semi = np.array(meshes["pebble"]["semi_axes"])
    np.testing.assert_allclose(semi, semi[0], rtol=1e-5)  # an icosphere's fitted ellipsoid is a sphere
    depth = semi[0] - (meshes["pebble"]["centre"][2] - meshes["pebble"]["terrain_z"])
    assert depth == pytest.approx(semi[0] - 0.1, abs=1e-6)
    assert errors[1]["depth"] == pytest.approx(depth, abs=1e-6)
    assert meshes["kernels_after_check"] == []  # the check loaded no numba, meshes and all
    assert "'Loose'" in meshes["convert_loose"] and "no faces" in meshes["convert_loose"]


def test_check_scene_warns_about_faces_turned_against_their_neighbours(meshes):
    assert meshes["add_loose"] == meshes["add_patchwork"] == ["FINISHED"]
    warnings = [p for p in meshes["problems"] if p["severity"] == "WARNING"]
    # one inner face of the grid turned over: its four edges join faces that face opposite ways
    assert meshes["turned_edges"] == 4
    assert [(p["kind"], p["objects"]) for p in warnings] == [("COLLIDER", ["Patchwork"])]
    assert warnings[0]["message"].startswith("'Patchwork': 4 edges of the mesh collider join faces")
    assert meshes["problems"][-1] == warnings[0]  # listed after the errors, in the panel too
    assert meshes["panel_problems"] == [[p["severity"], p["message"]] for p in meshes["problems"]]
    # it stays a warning: once the errors are gone the check passes, saying it
    assert meshes["check_after_resolve"] == "no error, returned ['FINISHED']"
    assert any(line.startswith("Warning: 'Patchwork': 4 edges") for line in meshes["check_reports"]), \
        meshes["check_reports"]
    # and the solver warns about the same mesh while converting
    assert any("'Patchwork'" in w for w in meshes["warnings"]), meshes["warnings"]


def test_resolve_overlaps_lifts_a_body_off_a_mesh(meshes):
    assert meshes["resolve"] == ["FINISHED"]
    semi = meshes["pebble"]["semi_axes"][0]
    before, after = np.array(meshes["pebble"]["centre"]), np.array(meshes["resolved_centre"])
    depth = semi - (before[2] - meshes["pebble"]["terrain_z"])
    np.testing.assert_allclose(after - before, [0.0, 0.0, depth + GAP * semi], atol=1e-6)


def test_panel_shows_a_mesh_colliders_kind(meshes):
    assert ("prop", "collider_kind") in {tuple(x[:2]) for x in meshes["panel"]}


def triangle_normals(vertices, triangles):
    corners = np.asarray(vertices)[np.asarray(triangles)]
    cross = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    return cross / np.linalg.norm(cross, axis=1)[:, None]


def assert_same_vertices(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6 * np.abs(want).max())


def assert_normals_agree(vertices, triangles, want):
    """Each triangle's normal (from its corners, in their order) points where its face's displayed normal does,
    turned from it by as much as the triangle's plane is from the face's (a quad split in two need not be
    flat) and no more."""
    ours, face = triangle_normals(vertices, triangles), np.asarray(want["normals"])
    # (by atan2: the arc cosine of a dot product near 1 loses half the digits, and Blender's unit normals are
    # unit only to single precision)
    angle = np.arctan2(np.linalg.norm(np.cross(ours, face), axis=1), np.einsum("ti,ti->t", ours, face))
    excess = angle - np.asarray(want["turned"])
    assert excess.max() <= NORMAL_ANGLE, (excess.max(), int(np.argmax(excess)))


def test_conversion_makes_each_mesh_in_world_space(meshes):
    found, expected = meshes["scene_meshes"], meshes["expected"]
    assert sorted(found) == ["Bowl", "Mirrored", "Patchwork", "Terrain"]
    for name in ("Bowl", "Mirrored", "Patchwork"):
        got, want = found[name], expected[name]
        assert_same_vertices(got["vertices"], want["vertices"])
        # every face in triangles: a face of n corners makes n - 2
        assert len(got["triangles"]) == want["corners"] - 2 * want["faces"], name
        # the same corners, each triangle facing the way Blender shows its face
        assert sorted(map(sorted, got["triangles"])) == sorted(map(sorted, want["triangles"])), name
        assert_normals_agree(got["vertices"], got["triangles"], want)
    # the bowls' triangles face inwards and outwards as their faces do, the mirrored one included
    assert meshes["determinants"]["Bowl"] > 0.0 > meshes["determinants"]["Mirrored"]
    bowl = found["Bowl"]
    assert found["Bowl"]["triangles"] == expected["Bowl"]["triangles"]  # as Blender winds them
    assert found["Mirrored"]["triangles"] == [[a, c, b] for a, b, c in expected["Mirrored"]["triangles"]]
    # the contact material is the object's
    assert meshes["materials"][bowl["material"]]["friction"] == pytest.approx(meshes["friction"]["Bowl"], rel=1e-7)


def test_conversion_applies_a_mesh_colliders_modifiers(meshes):
    # the terrain's Array modifier makes a second copy of the grid one grid width along its x: twice the
    # vertices (the copy shifted) and twice the triangles (the copy's vertices numbered after the first's)
    got, want = meshes["scene_meshes"]["Terrain"], meshes["expected"]["Terrain"]
    assert meshes["terrain_width"] == pytest.approx(4.0, rel=1e-7)
    assert_same_vertices(got["vertices"], want["vertices"])
    count = len(want["vertices"]) // 2
    first = np.asarray(want["triangles"])
    np.testing.assert_array_equal(got["triangles"], np.concatenate([first, first + count]))
    assert_normals_agree(got["vertices"], got["triangles"], dict(normals=want["normals"] * 2,
                                                                 turned=want["turned"] * 2))

