"""Rope specs as Scene.add_rope takes them: defaults and checks, apart from the kernels (model.py builds the
arrays) so that a scene can be made and checked without loading numba (the add-on builds scenes on Blender's
main thread)."""
import math

import numpy as np

from ..validate import FieldError, array, describe, integer, number, vector

DEFAULTS = dict(radius=0.015, density=1200.0, young_modulus=5e4, shear_modulus=1e5, damping=0.0,
                internal_damping=0.0, material=0, pinned=(), clamped=(), attachments=(), name=None)

# A drawn curve that folds back on itself by more than this has no usable frame (the Darboux vector is singular).
MAX_KINK_DEGREES = 175.0


def _rope_label(spec, index):
    name = spec.get("name")
    return f"rope {name!r}" if name else f"rope {index}"


def _node_index(label, field, value, n):
    """A node index of a rope of n nodes; negative ones count from the end."""
    return integer(label, field, value, -n, n - 1, "a node index") % n


def _node_indices(label, field, value, n):
    """Node indices given as one index or a flat list of them."""
    values = value.tolist() if isinstance(value, np.ndarray) else value
    if not isinstance(values, (list, tuple, range)):
        values = [values]
    return sorted({_node_index(label, field, v, n) for v in values})


def _check_derived(label, rope):
    """Segment masses, inertias and joint stiffnesses must be finite and non-zero: build_ropes divides by them."""
    radius, lengths = np.float64(rope["radius"]), rope["lengths"]
    with np.errstate(all="ignore"):
        mass = rope["density"] * np.pi * radius ** 2 * lengths
        derived = np.concatenate([mass, mass * (3.0 * radius ** 2 + lengths ** 2) / 12.0, 0.5 * mass * radius ** 2,
                                  np.array([rope["young_modulus"], rope["shear_modulus"]]) * np.pi * radius ** 4])
        usable = np.all(np.isfinite(derived)) and np.all(np.isfinite(1.0 / derived))
    if not usable:
        raise FieldError(label, "radius", f"{radius:g} gives segment masses, inertias or stiffnesses of zero or "
                                          f"infinity with density {rope['density']:g}, young_modulus "
                                          f"{rope['young_modulus']:g}, shear_modulus {rope['shear_modulus']:g} and "
                                          f"segments {lengths.min():g} to {lengths.max():g} m long")


def validate_rope_spec(spec, index, n_bodies):
    """Check one rope spec (add_rope arguments as a dict); FieldError names the rope and the field."""
    unknown = set(spec) - set(DEFAULTS) - {"points"}
    label = _rope_label(spec, index)
    if unknown:
        raise ValueError(f"{label}: unknown field(s) {sorted(unknown)}")
    spec = {**DEFAULTS, **spec}
    if "points" not in spec:
        raise FieldError(label, "points", "are required")
    points = array(label, "points", spec["points"], (None, 3), "an (n, 3) array of numbers")
    if points.shape[0] < 2:
        raise FieldError(label, "points", f"needs at least 2 points, got {points.shape[0]}")
    with np.errstate(over="ignore", invalid="ignore"):
        lengths = np.linalg.norm(np.diff(points, axis=0), axis=1)
    if not np.all(np.isfinite(lengths)):
        raise FieldError(label, "points", "are too far apart (their distances overflow)")
    scale = max(float(np.max(np.abs(points))), 1.0)
    if np.any(lengths <= 1e-9 * scale):
        bad = int(np.argmax(lengths <= 1e-9 * scale))
        raise FieldError(label, "points", f"{bad} and {bad + 1} coincide")
    tangents = np.diff(points, axis=0) / lengths[:, None]
    cos_turn = np.sum(tangents[1:] * tangents[:-1], axis=1)
    if np.any(cos_turn < math.cos(math.radians(MAX_KINK_DEGREES))):
        bad = int(np.argmax(cos_turn < math.cos(math.radians(MAX_KINK_DEGREES)))) + 1
        raise FieldError(label, "points", f"fold back on themselves at point {bad}")
    out = dict(points=points, lengths=lengths, label=label)
    for field in ("radius", "density", "young_modulus", "shear_modulus"):
        out[field] = number(label, field, spec[field], positive=True)
    for field in ("damping", "internal_damping"):
        out[field] = 0.0 if spec[field] is None else number(label, field, spec[field], minimum=0.0)
    out["material"] = integer(label, "material", spec["material"], minimum=0, what="a material index")
    _check_derived(label, out)
    n = len(points)
    out["pinned"] = _node_indices(label, "pinned", spec["pinned"], n)
    out["clamped"] = _node_indices(label, "clamped", spec["clamped"], n)
    for c in out["clamped"]:
        if c not in (0, n - 1):
            raise FieldError(label, "clamped", f"node {c} must be an end node (0 or {n - 1})")
    given = list(spec["attachments"]) if isinstance(spec["attachments"], np.ndarray) else spec["attachments"]
    if not isinstance(given, (list, tuple)):
        raise FieldError(label, "attachments", f"must be a list of (node, body, local_point), got {describe(given)}")
    attachments = []
    seen = set()
    for k, attachment in enumerate(given):
        try:
            node, body, local = attachment
        except (TypeError, ValueError):
            raise FieldError(label, f"attachments[{k}]", f"must be (node, body, local_point), "
                                                         f"got {describe(attachment)}") from None
        node = _node_index(label, f"attachments[{k}] node", node, n)
        body_index = integer(label, f"attachments[{k}] body", body, minimum=0, what="a body index")
        if body_index >= n_bodies:
            raise FieldError(label, f"attachments[{k}]", f"body {body!r} does not exist ({n_bodies} bodies)")
        local = np.array(vector(label, f"attachments[{k}] local_point", local, 3))
        if node in seen:
            raise FieldError(label, f"attachments[{k}]", f"node {node} is already attached")
        seen.add(node)
        attachments.append((node, body_index, local))
    out["attachments"] = attachments
    return out
