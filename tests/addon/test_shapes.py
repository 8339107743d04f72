"""Bodies of any convex shape in a real Blender (the halves in blender_scenarios.py): Auto's choice on Blender's
primitives, Check Scene on a box resting on a plane, the panel's parameters reaching the solver, each family
exported with its mass, a convex hull's bake, and the default cube simulated on the default plane.

Blender stores mesh coordinates, properties and matrices in single precision: 1e-6 relative on what is read
back, 1e-5 on world matrices of a few metres.
"""
import numpy as np
import pytest

from tests.helpers import quat_mul, quat_to_matrix, rotate

SOLVER_KINDS = {"ELLIPSOID": "ellipsoid", "SUPERELLIPSOID": "superellipsoid", "BOX": "box", "CYLINDER": "cylinder",
                "CAPSULE": "capsule", "CONVEX_HULL": "convex_hull"}


@pytest.fixture(scope="module")
def shapes(scenario, tmp_path_factory):
    return scenario("shapes", tmp_path_factory.mktemp("shapes") / "scene.json")


def test_auto_fits_a_box_to_the_cube_a_cylinder_to_the_cylinder_and_an_ellipsoid_to_the_sphere(shapes):
    assert shapes["add_body"] == ["FINISHED"]
    assert shapes["auto"] == {"Cube": "BOX", "Can": "CYLINDER", "Ball": "ELLIPSOID"}, shapes["notes"]
    fields = shapes["fields"]
    np.testing.assert_allclose(fields["Cube"]["half_extents"], [1.0, 1.0, 1.0], rtol=1e-6)
    # Blender's cylinder: radius 1, depth 2, its 32 corners on the circle
    assert fields["Can"]["radius"] == pytest.approx(1.0, rel=1e-6)
    assert fields["Can"]["half_height"] == pytest.approx(1.0, rel=1e-6)
    # the UV sphere's inertia-equivalent ellipsoid: within 1 % of the unit sphere it is inscribed in
    np.testing.assert_allclose(fields["Ball"]["semi_axes"], 1.0, rtol=0.01)
    # the display is the box itself: the cube's eight corners
    corners = {tuple(np.round(v, 5)) for v in shapes["cube_display"]}
    assert corners == {(x, y, z) for x in (-1.0, 1.0) for y in (-1.0, 1.0) for z in (0.0, 2.0)}
    print(f"Add Quadric Body (Auto) on a cube, a cylinder and a UV sphere: {shapes['add_seconds']:.3f} s")


def test_default_cube_resting_on_the_default_plane_passes_the_check(shapes):
    assert shapes["check"] == []
    assert shapes["check_operator"] == "no error, returned ['FINISHED']"
    assert shapes["kernels_after_check"] == []  # Add Quadric Body and the check loaded no numba
    # sunk 0.3 m into the plane it is reported, with that depth (exact for a box against a plane)
    (sunk,) = shapes["sunk"]
    assert sunk["message"].startswith("'Cube' overlaps plane 'Plane' by 0.3 m"), sunk
    assert sunk["depth"] == pytest.approx(0.3, abs=1e-6)


def test_the_panels_box_half_extents_are_what_the_solver_receives(shapes):
    edited = shapes["edited"]
    assert edited["shape"] == "box"
    np.testing.assert_allclose(edited["half_extents"], [1.0, 0.5, 0.25], rtol=1e-7)
    # density x the mesh's volume (8 m^3), scaled by the box's volume over the fitted one's (1 / 8)
    assert edited["mass"] == pytest.approx(1000.0, rel=1e-6)
    np.testing.assert_allclose(edited["position"], [0.0, 0.0, 1.0], atol=1e-6)
    # and the display shows that box
    corners = np.array(edited["display"])
    np.testing.assert_allclose(corners.min(axis=0), [-1.0, -0.5, 0.75], atol=1e-6)
    np.testing.assert_allclose(corners.max(axis=0), [1.0, 0.5, 1.25], atol=1e-6)


def test_every_shape_is_exported_with_the_meshs_mass_and_loads_again(shapes):
    assert shapes["export"] == ["FINISHED"] and shapes["same_hash"]
    families = shapes["families"]
    assert set(families) == set(SOLVER_KINDS)
    for family, found in families.items():
        assert found["fitted_shape"] == family
        assert found["shape"] == SOLVER_KINDS[family], family
        # the mass is the density times the mesh's own volume (Blender's bmesh measure), whatever the shape
        assert found["mass"] == pytest.approx(1234.0 * found["mesh_volume"], rel=2e-6), family
    fields, params = (lambda f: families[f]["fields"]), (lambda f: families[f]["params"])
    np.testing.assert_allclose(params("BOX")["half_extents"], fields("BOX")["half_extents"], rtol=1e-7)
    np.testing.assert_allclose(sorted(fields("BOX")["half_extents"]), [0.125, 0.25, 0.5], rtol=1e-6)
    assert params("CYLINDER")["radius"] == pytest.approx(0.3, rel=1e-6)
    assert params("CYLINDER")["half_height"] == pytest.approx(0.5, rel=1e-6)
    # the capsule holds the cylinder mesh: its caps reach the rims, radius 0.3 at 0.75 m up the axis
    assert params("CAPSULE")["radius"] == pytest.approx(0.3, rel=1e-6)
    assert params("CAPSULE")["half_height"] == pytest.approx(0.75, rel=1e-6)
    # the superellipsoid fitted to a cube: the cube's semi-axes, nearly square
    np.testing.assert_allclose(params("SUPERELLIPSOID")["semi_axes"], 0.5, rtol=1e-6)
    assert max(params("SUPERELLIPSOID")["exponents"]) <= 0.2
    # the torus's hull: its volume is more than the torus's (the hole filled), less than the enclosing cylinder's
    hull = families["CONVEX_HULL"]
    assert hull["hull_vertices"] > 100
    assert hull["mesh_volume"] < hull["shape_volume"] < np.pi * 0.7 ** 2 * 0.4


def test_bake_places_a_hull_body_by_the_solvers_shape_offset(shapes):
    # the object's pose is the body's pose, times the shape's frame in the body frame (the solver's
    # shape_offset), times the object's origin seen from the shape's frame (the fit's offset, inverted)
    assert shapes["refit"] == ["FINISHED"] and shapes["baked"] == [1, 0]
    h = shapes["hull"]
    poses = np.array(h["poses"])
    t_s, q_s = np.array(h["shape_offset"][0]), np.array(h["shape_offset"][1])
    t_o = np.array(h["offset_location"])
    q_o = np.array(h["offset_rotation"]) / np.linalg.norm(h["offset_rotation"])
    assert np.abs(t_s).max() > 0.01 or abs(abs(q_s[0]) - 1.0) > 1e-3  # the hull's body frame is not its shape frame
    shape_q = quat_mul(poses[:, 3:], q_s)
    shape_p = poses[:, :3] + rotate(poses[:, 3:], t_s)
    object_q = quat_mul(shape_q, np.array([q_o[0], *-q_o[1:]]))
    object_p = shape_p - rotate(object_q, t_o)
    matrices = np.array(h["object_matrix"])
    np.testing.assert_allclose(matrices[:, :3, 3], object_p, atol=1e-5)
    np.testing.assert_allclose(matrices[:, :3, :3] / np.array(h["scale"]), quat_to_matrix(object_q), atol=1e-5)
    # and the display sits on the shape's frame
    display = np.array(h["display_matrix"])
    np.testing.assert_allclose(display[:, :3, 3], shape_p, atol=1e-5)
    np.testing.assert_allclose(display[:, :3, :3], quat_to_matrix(shape_q), atol=1e-5)


def test_default_cube_on_the_default_plane_simulates_and_rests_flat(scenario):
    """End to end: Add Quadric Body on the default cube resting on the default plane, Simulate and Bake 2 s."""
    res = scenario("cube_rests")
    assert res["fitted_shape"] == "BOX"
    assert res["simulate"] == "no error, returned ['FINISHED']", res["status"]
    assert res["baked"]
    assert res["final_location"][2] == pytest.approx(1.0, abs=1e-3)
    np.testing.assert_allclose(res["final_location"][:2], 0.0, atol=1e-3)
    w = min(abs(res["final_rotation"][0]), 1.0)
    assert np.degrees(2.0 * np.arccos(w)) <= 0.5
