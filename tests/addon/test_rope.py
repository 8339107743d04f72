"""Ropes in Blender: rig built from a curve, bone heads baked onto the recorded nodes, skin mesh follows."""
import numpy as np
import pytest


@pytest.fixture(scope="module")
def rope(scenario):
    return scenario("rope")


def test_make_rope_builds_the_rig(rope):
    assert rope["make_rope"] == ["FINISHED"]
    assert rope["bones"] == 10
    assert rope["modifiers"] == ["ARMATURE", "SKIN", "SUBSURF"]


def test_make_rope_by_segment_length(rope):
    assert rope["bones_by_length"] == 4
    np.testing.assert_allclose(rope["bone_lengths_by_length"], 0.25, rtol=1e-5)


def test_rope_bone_heads_follow_recorded_nodes(rope):
    assert rope["job_state"] == "DONE", rope["job_message"]
    for name, nodes in rope["recorded_nodes"].items():
        nodes = np.array(nodes)
        heads = np.array(rope["heads"][name])
        assert heads.shape == (nodes.shape[0], nodes.shape[1] - 1, 3)
        # Blender evaluates pose matrices in float32: 1e-5 m at these coordinates.
        np.testing.assert_allclose(heads, nodes[:, :-1], atol=1e-5, err_msg=name)
        # The last bone's tail is where its segment points; the rope is inextensible, so it lands on the
        # last node up to the solver's stretch (bounded here by 1% of the 0.1 m segment).
        tails = np.array(rope["tails"][name])
        assert np.abs(tails - nodes[:, -1]).max() < 1e-3, name


def test_pinned_rope_swings_down(rope):
    nodes = np.array(rope["recorded_nodes"]["Swing Rope Rig"])
    assert np.abs(nodes[:, 0] - nodes[0, 0]).max() <= 1e-9  # the pin stays
    assert nodes[-1, -1, 2] < nodes[0, -1, 2] - 0.3  # the free end fell


def _distance_to_polyline(points, poly):
    a, b = poly[:-1], poly[1:]
    ab = b - a
    t = np.clip(np.einsum("pij,ij->pi", points[:, None] - a[None], ab) / np.einsum("ij,ij->i", ab, ab), 0, 1)
    closest = a[None] + t[..., None] * ab[None]
    return np.linalg.norm(points[:, None] - closest, axis=-1).min(axis=1)


def test_skin_mesh_deforms_with_the_rope(rope):
    radius = rope["radius"]
    for name, nodes in rope["recorded_nodes"].items():
        nodes = np.array(nodes)
        first, last = (np.array(c) for c in rope["skin"][name])
        # The tube surface stays around the recorded centre line (skin radius, end caps rounded by
        # the subdivision), at both ends of the animation...
        assert _distance_to_polyline(first, nodes[0]).max() <= 2.0 * radius, name
        assert _distance_to_polyline(last, nodes[-1]).max() <= 2.0 * radius, name
        # ...so the mesh moved as far as the rope did.
        moved = np.linalg.norm(nodes[-1] - nodes[0], axis=1).max()
        assert moved > 0.2
        np.testing.assert_allclose(last.mean(axis=0), first.mean(axis=0) + (nodes[-1].mean(0) - nodes[0].mean(0)),
                                   atol=2.0 * radius)


def test_animated_object_drags_rope_end(rope):
    nodes = np.array(rope["recorded_nodes"]["Dragged Rope Rig"])
    handle = np.array(rope["handle"])
    # The handle moves 0.5 m in 30 frames (0.4 m/s); an attachment that lags by v * h / erp is
    # within a millimetre or so. 1 cm still tells "dragged" from "left behind".
    assert np.abs(nodes[:, 0] - handle).max() < 0.01
    assert nodes[-1, 0, 1] - nodes[0, 0, 1] > 0.45


def test_rope_end_tied_to_nearest_body_holds_it(rope):
    poses = np.array(rope["ball_poses"])
    end = np.array(rope["hanger_end"])
    # The end stays at the same point in the ball's frame (it is tied there)...
    w, v = poses[:, 3:4], poses[:, 4:]
    d = end - poses[:, :3]
    t = 2.0 * np.cross(-v, d)
    local = d + w * t + np.cross(-v, t)  # rotate d by the inverse body rotation
    assert np.abs(local - local[0]).max() < 1e-3
    # ...and the ball hangs from the pinned rope instead of falling freely (free fall: 1.5 m in 30 frames).
    assert poses[0, 2] - poses[:, 2].min() < 0.5
    assert np.abs(np.array(rope["hanger_start"]) - rope["hanger_start"][0]).max() <= 1e-9
