"""Force objects: plain, checked values that Scene.add_force takes and scene files store.

Each force acts on the particle groups it names (``groups=(0, 2)``) or, with ``groups=None``, on every group
(particles and mass-spring vertices alike). Forces are in newtons per particle, as Blender's force fields act
per particle; gravity is the scene's and acts as an acceleration. Pinned particles feel forces but never move.

Every force but Springs also acts on rigid bodies and ropes, named the same way by ``bodies`` and ``ropes``
(None: all; (): none), as Blender's fields act on everything in the scene:
- a dynamic body feels the force at its centre of mass, in newtons per body (Drag's coefficient in N s/m per
  body), so it is pushed but never turned; fixed and kinematic bodies ignore forces;
- a rope feels it per metre of its length: its nodes share it by their share of the length (a node halfway
  along a rope of 1 cm segments feels strength x 0.01 m), so a rope's response does not depend on how many
  nodes it was cut into. Drag's coefficient is then in N s/m per metre.

The compiled kernels (fields.py, behaviour.py) see them as rows of flat arrays (model.py packs them).
"""
from __future__ import annotations

from dataclasses import MISSING, dataclass, fields

import numpy as np

from ..validate import FieldError, array, describe, integer, number, unit_vector, vector
from .groups import index_pairs


def _groups(owner: str, value):
    """None (every group) or a tuple of group indices."""
    if value is None:
        return None
    values = value.tolist() if isinstance(value, np.ndarray) else value
    if not isinstance(values, (list, tuple, range)):
        values = [values]
    return tuple(sorted({integer(owner, "groups", g, minimum=0, what="a group index") for g in values}))


def _targets(owner: str, field: str, value, what: str):
    """None (every body or rope) or a tuple of their indices."""
    if value is None:
        return None
    values = value.tolist() if isinstance(value, np.ndarray) else value
    if not isinstance(values, (list, tuple, range)):
        values = [values]
    return tuple(sorted({integer(owner, field, k, minimum=0, what=what) for k in values}))


def _bodies_and_ropes(owner: str, force) -> dict:
    return dict(bodies=_targets(owner, "bodies", force.bodies, "a body index"),
                ropes=_targets(owner, "ropes", force.ropes, "a rope index"))


def _seed(owner: str, value) -> int:
    return integer(owner, "seed", value, 0, 2 ** 31 - 1, "a seed")


class _Force:
    """Checks the fields in __post_init__ (each class's _check) and converts to and from file values."""

    TYPE = ""

    def __post_init__(self):
        for name, value in self._check(f"{type(self).__name__}").items():
            object.__setattr__(self, name, value)

    def to_dict(self) -> dict:
        values = {field.name: getattr(self, field.name) for field in fields(self)}
        return {"type": self.TYPE, **{k: _plain(v) for k, v in values.items()}}


def _plain(value):
    """Tuples as lists, for JSON."""
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


@dataclass(frozen=True)
class Drag(_Force):
    """Linear drag f = -coefficient v: coefficient in N s/m (kg/s) per particle."""

    coefficient: float
    groups: tuple | None = None
    bodies: tuple | None = None
    ropes: tuple | None = None
    TYPE = "drag"

    def _check(self, owner):
        return dict(coefficient=number(owner, "coefficient", self.coefficient, minimum=0.0),
                    groups=_groups(owner, self.groups), **_bodies_and_ropes(owner, self))


@dataclass(frozen=True)
class Springs(_Force):
    """Damped Hooke springs between particles of one group: pairs (m, 2) of particle indices in ``group``.

    f_a = -(stiffness (|d| - L) + damping (d/|d|) . (v_a - v_b)) d/|d|, d = x_a - x_b, f_b = -f_a;
    stiffness in N/m, damping in N s/m; rest_lengths L (m, one per pair) default to the distances at the start.
    Computed through the behaviour-function form (behaviour.py) with C = |x_a - x_b| - L.
    """

    group: int
    pairs: tuple
    stiffness: float
    damping: float = 0.0
    rest_lengths: tuple | None = None
    TYPE = "springs"

    def _check(self, owner):
        pairs = index_pairs(owner, "pairs", self.pairs, None, "particle")
        rest = None
        if self.rest_lengths is not None:
            rest = array(owner, "rest_lengths", self.rest_lengths, (len(pairs),),
                         f"{len(pairs)} lengths (one per pair)")
            if np.any(rest < 0.0):
                raise FieldError(owner, "rest_lengths", f"must be >= 0, got {describe(rest[rest < 0.0][0])}")
            rest = tuple(float(x) for x in rest)
        return dict(group=integer(owner, "group", self.group, minimum=0, what="a group index"),
                    pairs=tuple((int(a), int(b)) for a, b in pairs),
                    stiffness=number(owner, "stiffness", self.stiffness, positive=True),
                    damping=number(owner, "damping", self.damping, minimum=0.0), rest_lengths=rest)

    @property
    def groups(self):
        return (self.group,)

    bodies = ropes = ()  # springs join particles only


@dataclass(frozen=True)
class Wind(_Force):
    """Wind: f = strength (d + turbulence c((x - gust_speed t d) / size)) along the unit direction d.

    c is the curl noise of Turbulence (seeded by ``seed``), so gusts are smooth, swirl, and travel along the wind
    at gust_speed (m/s); turbulence = 0 gives the uniform force strength d (N per particle).
    """

    direction: tuple
    strength: float
    turbulence: float = 0.0
    size: float = 1.0
    seed: int = 0
    gust_speed: float = 1.0
    groups: tuple | None = None
    bodies: tuple | None = None
    ropes: tuple | None = None
    TYPE = "wind"

    def _check(self, owner):
        return dict(direction=unit_vector(owner, "direction", self.direction, 3),
                    strength=number(owner, "strength", self.strength),
                    turbulence=number(owner, "turbulence", self.turbulence, minimum=0.0),
                    size=number(owner, "size", self.size, positive=True), seed=_seed(owner, self.seed),
                    gust_speed=number(owner, "gust_speed", self.gust_speed), groups=_groups(owner, self.groups),
                    **_bodies_and_ropes(owner, self))


@dataclass(frozen=True)
class Vortex(_Force):
    """Swirl about an axis: f = strength (a x r) / |r| max(|r|, min_distance)^-falloff, r the offset from the axis.

    Positive strength turns counter-clockwise seen from the tip of ``axis``; falloff 0 gives the same force at
    every distance, 1 a force that falls off as 1 / distance, -1 one that grows with it: strength (a x r), the
    swirl of a rigid rotation (Blender's vortex field).
    """

    point: tuple = (0.0, 0.0, 0.0)
    axis: tuple = (0.0, 0.0, 1.0)
    strength: float = 1.0
    falloff: float = 0.0
    min_distance: float = 0.01
    groups: tuple | None = None
    bodies: tuple | None = None
    ropes: tuple | None = None
    TYPE = "vortex"

    def _check(self, owner):
        return dict(point=vector(owner, "point", self.point, 3), axis=unit_vector(owner, "axis", self.axis, 3),
                    strength=number(owner, "strength", self.strength),
                    falloff=number(owner, "falloff", self.falloff),
                    min_distance=number(owner, "min_distance", self.min_distance, positive=True),
                    groups=_groups(owner, self.groups), **_bodies_and_ropes(owner, self))


@dataclass(frozen=True)
class Turbulence(_Force):
    """Smooth swirling noise: f = strength c((x - flow t) / size), c the curl of a value-noise vector potential.

    The field is divergence free (it stirs without gathering particles), deterministic by ``seed``, varies over
    ``size`` metres and drifts with ``flow`` (m/s); |c| is about 1 on average.
    """

    strength: float
    size: float = 1.0
    seed: int = 0
    flow: tuple = (0.0, 0.0, 0.0)
    groups: tuple | None = None
    bodies: tuple | None = None
    ropes: tuple | None = None
    TYPE = "turbulence"

    def _check(self, owner):
        return dict(strength=number(owner, "strength", self.strength),
                    size=number(owner, "size", self.size, positive=True), seed=_seed(owner, self.seed),
                    flow=vector(owner, "flow", self.flow, 3), groups=_groups(owner, self.groups),
                    **_bodies_and_ropes(owner, self))


@dataclass(frozen=True)
class Attractor(_Force):
    """Pull towards a point: f = strength (p - x) / |p - x| max(|p - x|, min_distance)^-falloff.

    falloff 2 is an inverse-square pull (strength in N at 1 m), 0 a constant one, -1 a harmonic one:
    strength (p - x), a zero-length spring of stiffness strength (N/m) (Blender's harmonic field); a negative
    strength repels.
    """

    point: tuple
    strength: float
    falloff: float = 2.0
    min_distance: float = 0.01
    groups: tuple | None = None
    bodies: tuple | None = None
    ropes: tuple | None = None
    TYPE = "attractor"

    def _check(self, owner):
        return dict(point=vector(owner, "point", self.point, 3), strength=number(owner, "strength", self.strength),
                    falloff=number(owner, "falloff", self.falloff),
                    min_distance=number(owner, "min_distance", self.min_distance, positive=True),
                    groups=_groups(owner, self.groups), **_bodies_and_ropes(owner, self))


FORCE_TYPES = {cls.TYPE: cls for cls in (Drag, Springs, Wind, Vortex, Turbulence, Attractor)}


def check_force(force, index: int, groups: list, n_bodies: int = 0, n_ropes: int = 0) -> dict:
    """The file value of ``force`` (one of FORCE_TYPES) once its groups and particle indices fit ``groups``
    (the scene's group specs) and the bodies and ropes it names exist. FieldError names the force and the
    field."""
    if not isinstance(force, tuple(FORCE_TYPES.values())):
        names = ", ".join(f"quadric_solver.{cls.__name__}" for cls in FORCE_TYPES.values())
        raise FieldError(f"force {index}", "force", f"must be one of {names}; got {type(force).__name__}")
    owner = f"{type(force).__name__} (force {index})"
    for g in force.groups or ():
        if g >= len(groups):
            field = "group" if isinstance(force, Springs) else "groups"
            raise FieldError(owner, field, f"names group {g}, which does not exist ({len(groups)} groups; "
                                           f"add the groups before their forces)")
    for field, count, noun in (("bodies", n_bodies, "body"), ("ropes", n_ropes, "rope")):
        for k in getattr(force, field) or ():
            if k >= count:
                raise FieldError(owner, field, f"names {noun} {k}, which does not exist ({count} {field}; "
                                               f"add them before their forces)")
    if isinstance(force, Springs):
        n = group_size(groups[force.group])
        index_pairs(owner, "pairs", force.pairs, n, "particle", f"group {force.group} has")
    return force.to_dict()


def group_size(spec: dict) -> int:
    """Particles in a group spec (a scene's particle group or mass-spring)."""
    return len(spec["positions"] if spec["kind"] == "particles" else spec["vertices"])


def force_from_dict(value: dict):
    """The force object of a ``to_dict`` value (the keys already checked against FILE_KEYS)."""
    values = dict(value)
    cls = FORCE_TYPES[values.pop("type")]
    return cls(**values)


def file_keys(type_name: str):
    """(required, optional) keys of a force of ``type_name`` in a scene file; 'type' is required for all."""
    cls = FORCE_TYPES[type_name]
    required = tuple(f.name for f in fields(cls) if f.default is MISSING)
    optional = tuple(f.name for f in fields(cls) if f.default is not MISSING)
    return ("type",) + required, optional
