"""Whether a baked object's bake is stale: its start pose or Quadric settings changed since it was simulated, or
it was moved off its baked path (a move the next frame change undoes, and Simulate ignores until Clear Bake).

A bake stores a fingerprint per object (`remember`): a digest of the settings the solver reads and the start pose
the next Simulate would use. The panel compares it with the object's now (`why_stale`): a few dozen property
reads, cheap enough for every redraw of the object's panel.
"""
import hashlib

from . import convert
from . import blender_compat as compat
from .properties import BODY_FIELDS, MATERIAL_FIELDS, ROPE_FIELDS

SHAPE_FIELDS = ("shape", "fitted_shape", "semi_axes", "exponents", "half_extents", "radius", "half_height")
_PATH = (("location", 3), ("rotation_quaternion", 4))
_MOVED = 1e-5  # m or quaternion units: far above the float32 keys' rounding, far below any move by hand


def _value(value):
    if hasattr(value, "name"):  # an object pointer (a rope's end), or None
        return value.name
    if hasattr(value, "__len__") and not isinstance(value, str):
        return tuple(round(float(x), 6) for x in value)
    return round(value, 6) if isinstance(value, float) else value


def fingerprint(obj):
    """Digest of what the solver reads from the object: its role's settings, scale and start pose."""
    s = obj.quadric
    fields = MATERIAL_FIELDS + {'BODY': BODY_FIELDS + SHAPE_FIELDS, 'ROPE': ROPE_FIELDS}.get(s.role, ())
    pose = convert.initial_matrix_world(obj)
    parts = [s.role, *(_value(getattr(s, name)) for name in fields),
             tuple(_value(tuple(row)) for row in pose)]
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:32]


def remember(objs):
    """Store each baked object's fingerprint (after a bake)."""
    for obj in objs:
        obj.quadric.bake_fingerprint = fingerprint(obj)


def moved_off_bake(obj, frame):
    """True when the object stands elsewhere than its bake's keys at ``frame`` (moved by hand, not keyed)."""
    if not obj.quadric.is_baked:
        return False
    for path, size in _PATH:
        for k in range(size):
            fc = compat.find_fcurve(obj, path, k)
            if fc is not None and abs(fc.evaluate(frame) - getattr(obj, path)[k]) > _MOVED:
                return True
    return False


def why_stale(obj, frame):
    """'' if the object's bake matches it, else why not, in words for the panel."""
    s = obj.quadric
    if not s.bake_fingerprint or not (s.is_baked or s.instance_hidden):
        return ""
    if s.role == 'BODY' and moved_off_bake(obj, frame):
        return "Moved since the bake: the next frame change undoes it; Clear Bake to simulate from here"
    if fingerprint(obj) != s.bake_fingerprint:
        return "Start pose or settings changed since the bake: Simulate again"
    return ""
