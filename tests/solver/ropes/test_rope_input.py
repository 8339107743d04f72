"""Bad rope input raises ValueError naming the rope and the field (issue 3, test 7)."""
import math

import pytest

import quadric_solver as solver
from quadric_solver.ropes.model import build_ropes
from tests.helpers import line

LINE = line(4, (0, 0, 0), (1, 0, 0))


@pytest.mark.parametrize("change, words", [
    (dict(points=[[0.0, 0.0, 0.0]]), ["points", "at least 2"]),
    (dict(points=[[0, 0, 0], [1, 0, 0], [1, 0, 0]]), ["points", "coincide"]),
    (dict(points=[[0, 0, 0], [math.nan, 0, 0]]), ["points", "NaN"]),
    (dict(points=[[0, 0], [1, 0]]), ["points", "(n, 3)"]),
    (dict(points=[[0, 0, 0], [1, 0, 0], [0, 0, 0]]), ["points", "fold back"]),
    (dict(radius=0.0), ["radius", "positive"]),
    (dict(radius=-0.01), ["radius"]),
    (dict(density=0.0), ["density"]),
    (dict(young_modulus=0.0), ["young_modulus"]),
    (dict(shear_modulus=-1.0), ["shear_modulus"]),
    (dict(young_modulus=math.nan), ["young_modulus"]),
    (dict(damping=-1.0), ["damping"]),
    (dict(pinned=(7,)), ["pinned", "out of range"]),
    (dict(clamped=(2,)), ["clamped", "end node"]),
    (dict(attachments=[(0, 3, (0, 0, 0))]), ["attachments[0]", "body 3", "does not exist"]),
    (dict(attachments=[(9, 0, (0, 0, 0))]), ["attachments[0] node", "out of range"]),
    (dict(attachments=[(0, 0, (0, math.inf, 0))]), ["attachments[0]", "local_point"]),
])
def test_bad_rope_input_names_rope_and_field(change, words):
    spec = {"points": LINE, "name": "Cable.001", **change}
    with pytest.raises(ValueError) as error:
        build_ropes([spec], n_bodies=1)
    message = str(error.value)
    assert "Cable.001" in message
    for word in words:
        assert word in message


def test_unnamed_rope_is_named_by_index():
    with pytest.raises(ValueError, match=r"rope 1: radius"):
        build_ropes([dict(points=LINE), dict(points=LINE, radius=0.0)])


def test_scene_add_rope_validates_against_its_bodies():
    scene = solver.Scene()
    with pytest.raises(ValueError, match=r"rope 'Hose'.*attachments\[0\] body 0 does not exist"):
        scene.add_rope(LINE, attachments=[(4, 0, (0, 0, 0))], name="Hose")
    body = scene.add_ellipsoid((0.1, 0.1, 0.1), position=(1.0, 0.0, -0.1))
    index = scene.add_rope(LINE, attachments=[(4, body, (0, 0, 0.1))], name="Hose")
    assert index == 0
    with pytest.raises(ValueError, match=r"rope 1: young_modulus"):
        scene.add_rope(LINE, young_modulus=-5.0)
    assert len(scene.ropes) == 1  # the bad rope was not added
