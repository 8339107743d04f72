"""Scene: a plain, serialisable description of what to simulate.

A Scene holds bodies, static colliders, ropes, particle groups, mass-spring
bodies, force objects, materials and gravity as plain Python values. It
validates every value when it is added, so an error names the object and the
field, and it saves to and loads from JSON so a bake can run on
another machine (``python -m quadric_solver run scene.json``). Loading checks the file
against its schema: a SceneFileError names the file and the JSON path.
"""
from __future__ import annotations

import hashlib
import json
import warnings
from dataclasses import asdict, dataclass, fields

import numpy as np

from . import rotations
from .shapes import Box, Capsule, ConvexHull, Cylinder, Ellipsoid, Shape, Superellipsoid
from .validate import (FieldError, SceneFileError, array, at, describe, file_header, file_list, file_object, flag,
                       integer, join, name_or_none, number, read_json, unit_quaternion, unit_vector, vector,
                       write_atomically)

SCENE_FORMAT = "quadric-dynamics-scene"
SCENE_VERSION = 1


@dataclass(frozen=True)
class Material:
    """Contact material of a body, collider or rope.

    friction: Coulomb sliding friction coefficient (dimensionless, >= 0).
    rolling_friction: rolling-resistance arm in metres (>= 0). A rolling contact
        feels a resisting torque of at most ``rolling_friction * N`` about the
        tangent axes, where N is the normal force. For a uniform sphere of radius
        R rolling on a plane this decelerates it at (5/7) g rolling_friction / R.
    spinning_friction: torsional arm in metres (>= 0). Spinning about the contact
        normal is resisted by a torque of at most ``spinning_friction * N``.
    restitution: coefficient of restitution in [0, 1], applied when the normal
        approach speed exceeds the simulation's ``restitution_threshold``.

    Two materials in contact combine as: friction by geometric mean, the others
    by maximum (the surface with more resistance or bounce wins).
    """

    friction: float = 0.5
    rolling_friction: float = 0.0
    spinning_friction: float = 0.0
    restitution: float = 0.0

    def __post_init__(self):
        for field in fields(self):
            value = number("Material", field.name, getattr(self, field.name), minimum=0.0,
                           maximum=1.0 if field.name == "restitution" else None)
            object.__setattr__(self, field.name, value)


DEFAULT_MATERIAL = Material()


class Scene:
    """Everything a simulation needs, as plain values. See the module docstring."""

    def __init__(self, gravity=(0.0, 0.0, -9.81)):
        self.gravity = vector("Scene", "gravity", gravity, 3)
        self.materials: list[Material] = []
        self.bodies: list[dict] = []
        self.planes: list[dict] = []
        self.boxes: list[dict] = []
        self.tubes: list[dict] = []
        self.meshes: list[dict] = []  # static triangle meshes (add_mesh_collider)
        self.ropes: list[dict] = []  # rope specs (quadric_solver/ropes/model.py builds them)
        self.particles: list[dict] = []  # particle groups and mass-spring bodies (quadric_solver/particles/model.py)
        self.forces: list[dict] = []  # force objects, as file values (quadric_solver/particles/forces.py)

    # ----------------------------------------------------------------- helpers
    def _material_index(self, owner: str, material) -> int:
        if material is None:
            material = DEFAULT_MATERIAL
        if not isinstance(material, Material):
            raise FieldError(owner, "material", f"must be a quadric_solver.Material, got {type(material).__name__}")
        if material not in self.materials:
            self.materials.append(material)
        return self.materials.index(material)

    @staticmethod
    def _owner(kind: str, index: int, name) -> str:
        """How errors name an object: by name where it has one, else by index."""
        name = name_or_none(f"{kind} {index}", "name", name)
        return f"{kind} {name!r}" if name else f"{kind} {index}"

    def body_label(self, index: int) -> str:
        name = self.bodies[index].get("name")
        return f"body {index} ({name!r})" if name else f"body {index}"

    # ------------------------------------------------------------------ bodies
    def add_ellipsoid(self, semi_axes, position=(0.0, 0.0, 0.0), orientation=(1.0, 0.0, 0.0, 0.0),
                      velocity=(0.0, 0.0, 0.0), angular_velocity=(0.0, 0.0, 0.0), density=1000.0,
                      material=None, fixed=False, name=None, mass=None, kinematic=False) -> int:
        """Add a rigid ellipsoid and return its body index: add_body(Ellipsoid(semi_axes), ...).

        semi_axes are along the body's local x, y, z (its principal frame).
        """
        index = len(self.bodies)
        name = name_or_none(f"ellipsoid (body {index})", "name", name)
        owner = f"ellipsoid {name!r} (body {index})" if name else f"ellipsoid (body {index})"
        axes = vector(owner, "semi_axes", semi_axes, 3)
        for k, axis in enumerate(axes):
            if axis <= 0.0:
                raise FieldError(owner, "semi_axes", f"must be positive, got semi_axes[{k}] = {axis}")
        return self._append_body(owner, dict(name=name, shape="ellipsoid", semi_axes=axes), position, orientation,
                                 velocity, angular_velocity, density, mass, material, fixed, kinematic)

    def add_body(self, shape, position=(0.0, 0.0, 0.0), orientation=(1.0, 0.0, 0.0, 0.0), velocity=(0.0, 0.0, 0.0),
                 angular_velocity=(0.0, 0.0, 0.0), density=1000.0, material=None, fixed=False, name=None,
                 mass=None, kinematic=False) -> int:
        """Add a rigid body of any shape (quadric_solver.Ellipsoid, Superellipsoid, Box, Cylinder, Capsule,
        ConvexHull) and return its body index.

        ``position`` and ``orientation`` (w, x, y, z) place the shape's own frame. Mass, centre of mass
        and inertia are exact for the shape at ``density`` (kg/m^3), or scaled to ``mass`` (kg). The
        primitives' frame is their principal frame; a ConvexHull body's frame is moved to the hull's
        centre of mass and principal axes, so poses read back (state, recordings) are that frame's:
        ``shape_offset(index)`` gives the shape's own frame relative to it. ``fixed`` bodies never
        move; ``kinematic`` bodies follow the track set with :meth:`set_kinematic_track` and push
        dynamic bodies with their velocity. Both have infinite mass in contacts.
        """
        index = len(self.bodies)
        name = name_or_none(f"body {index}", "name", name)
        if not isinstance(shape, Shape):
            raise FieldError(f"body {name!r} ({index})" if name else f"body {index}", "shape",
                             f"must be a shape (quadric_solver.Ellipsoid, Box, Cylinder, ...), got {describe(shape)}")
        if type(shape) not in _SHAPE_TYPES:  # BumpyEllipsoid: contact exists only as a query (distance) so far
            raise FieldError(f"body {name!r} ({index})" if name else f"body {index}", "shape",
                             f"{type(shape).__name__} bodies cannot be simulated yet (quadric_solver.distance "
                             f"and mass_properties take them); use {', '.join(t.__name__ for t in _SHAPE_TYPES)}")
        kind = _SHAPE_TYPES[type(shape)]
        owner = f"{kind.replace('_', ' ')} {name!r} (body {index})" if name else f"{kind.replace('_', ' ')} (body {index})"
        position = vector(owner, "position", position, 3)
        orientation = unit_quaternion(owner, "orientation", orientation)
        body = dict(name=name, shape=kind, **_shape_fields(shape))
        if isinstance(shape, ConvexHull):
            # the body frame is the hull's principal frame at its centre of mass
            props = shape.mass_properties(1.0)
            axes = props.principal_axes
            body["points"] = ((shape.vertices - props.center_of_mass) @ axes).tolist()
            turn = rotations.from_matrix(axes)
            body["shape_offset"] = [*(-(axes.T @ props.center_of_mass)).tolist(),
                                    *rotations.conj(turn).tolist()]
            position = tuple((np.array(position) + rotations.rotate(orientation, props.center_of_mass)).tolist())
            orientation = tuple(rotations.mul(orientation, turn).tolist())
        return self._append_body(owner, body, position, orientation, velocity, angular_velocity, density, mass,
                                 material, fixed, kinematic)

    def _append_body(self, owner, body, position, orientation, velocity, angular_velocity, density, mass, material,
                     fixed, kinematic) -> int:
        body.update(
            position=vector(owner, "position", position, 3),
            orientation=unit_quaternion(owner, "orientation", orientation),
            velocity=vector(owner, "velocity", velocity, 3),
            angular_velocity=vector(owner, "angular_velocity", angular_velocity, 3),
            density=number(owner, "density", density, positive=True),
            mass=None if mass is None else number(owner, "mass", mass, positive=True),
            material=self._material_index(owner, material),
            fixed=flag(owner, "fixed", fixed),
            kinematic=flag(owner, "kinematic", kinematic),
            track=None,
        )
        if body["fixed"] and body["kinematic"]:
            raise FieldError(owner, "kinematic", "must be false for a fixed body (a body cannot be both)")
        _check_mass(owner, body)
        self.bodies.append(body)
        return len(self.bodies) - 1

    def body_shape(self, index: int) -> Shape:
        """The shape of body ``index`` in its body frame (a ConvexHull's points moved to that frame)."""
        return body_shape(self.bodies[index])

    def shape_offset(self, index: int) -> tuple:
        """(translation, orientation (w, x, y, z)) of body ``index``'s shape frame in its body frame.

        Identity except for a ConvexHull: its points' own frame, seen from the body frame at the hull's
        centre of mass and principal axes. The shape frame's world pose is body pose * offset.
        """
        offset = self.bodies[index].get("shape_offset") or (0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0)
        return tuple(offset[:3]), tuple(offset[3:])

    def set_kinematic_track(self, body: int, times, poses) -> None:
        """Prescribe the motion of a kinematic body: ``poses[k]`` = (x, y, z, w, qx, qy, qz) at ``times[k]``.

        The solver interpolates linearly (positions) and by slerp (rotations)
        and derives the velocity it pushes with from the track.
        """
        body = integer("set_kinematic_track", "body", body, 0, len(self.bodies) - 1, "a body index")
        owner = self.body_label(body)
        if not self.bodies[body]["kinematic"]:
            raise FieldError(owner, "track", "needs a body added with kinematic=True")
        self.bodies[body]["track"] = _checked_track(owner, times, poses)

    # --------------------------------------------------------------- colliders
    def add_plane(self, point=(0.0, 0.0, 0.0), normal=(0.0, 0.0, 1.0), material=None, name=None) -> int:
        """Add an infinite static plane; bodies are kept on the side ``normal`` points to."""
        index = len(self.planes)
        owner = self._owner("plane", index, name)
        self.planes.append(dict(name=name, point=vector(owner, "point", point, 3),
                                normal=unit_vector(owner, "normal", normal, 3),
                                material=self._material_index(owner, material)))
        return index

    def add_box_container(self, center, half_extents, material=None, name=None, rotation=(1.0, 0.0, 0.0, 0.0)) -> int:
        """Add an open-top box: a floor and four walls whose inner faces collide.

        ``center`` is the centre of the box volume; ``half_extents`` its half
        sizes along the box's local axes (``rotation``, default world axes).
        Bodies whose centre is outside the box do not collide with it; a wall holds a body whose
        centre lies over it (below its top edge), wherever the body's contact points fall.
        """
        index = len(self.boxes)
        owner = self._owner("box container", index, name)
        half = vector(owner, "half_extents", half_extents, 3)
        for k, h in enumerate(half):
            if h <= 0.0:
                raise FieldError(owner, "half_extents", f"must be positive, got half_extents[{k}] = {h}")
        self.boxes.append(dict(name=name, center=vector(owner, "center", center, 3), half_extents=half,
                               rotation=unit_quaternion(owner, "rotation", rotation),
                               material=self._material_index(owner, material)))
        return index

    def add_tube(self, center, axis, radius, length, material=None, name=None) -> int:
        """Add an open hollow cylinder; bodies inside it collide with its inner wall."""
        index = len(self.tubes)
        owner = self._owner("tube", index, name)
        self.tubes.append(dict(name=name, center=vector(owner, "center", center, 3),
                               axis=unit_vector(owner, "axis", axis, 3),
                               radius=number(owner, "radius", radius, positive=True),
                               length=number(owner, "length", length, positive=True),
                               material=self._material_index(owner, material)))
        return index

    def add_mesh_collider(self, vertices, triangles, material=None, name=None) -> int:
        """Add a static triangle mesh (terrain, a bowl, stairs; open or closed) and return its mesh index.

        vertices (V, 3) in world coordinates; triangles (T, 3) vertex indices. A triangle's front is the
        side from which its corners run counter-clockwise, as in Blender: bodies in front of a triangle
        collide with it and stay in front; a body whose centre is behind a triangle passes through it.
        Triangles wound against their neighbours therefore leak; they get a warning. Triangles of no
        area are left out.
        """
        from .mesh import check_mesh, mesh_topology

        index = len(self.meshes)
        owner = self._owner("mesh collider", index, name)
        points, rows = check_mesh(owner, vertices, triangles)
        topology = mesh_topology(points, rows)
        if topology.flipped_edges:
            warnings.warn(f"{owner}: {topology.flipped_edges} edges join triangles that face opposite ways; bodies "
                          f"pass through a triangle from behind, so recalculate the normals (outside) to make "
                          f"them agree", stacklevel=2)
        self.meshes.append(dict(name=name, vertices=points.tolist(), triangles=rows.tolist(),
                                material=self._material_index(owner, material)))
        return index

    # ------------------------------------------------------------------- ropes
    def add_rope(self, points, radius=0.015, density=1200.0, young_modulus=5e4, shear_modulus=1e5, damping=0.0,
                 material=None, pinned=(), attachments=(), name=None, clamped=()) -> int:
        """Add a Cosserat rope through ``points`` (n >= 2, 3) and return its rope index.

        The rope keeps the drawn length and shape at rest (it bends back to a drawn coil).
        radius (m), density (kg/m^3), young_modulus and shear_modulus (Pa) give the bending and twisting
        stiffness; damping is a velocity damping rate (1/s). pinned: node indices fixed in space;
        clamped: end nodes (0 or n-1) whose position and frame are both held; attachments: (node, body,
        local_point) ties a node to a point given in the body's frame (the rope and the body pull on each
        other). Bodies must be added before the ropes tied to them.
        """
        from .ropes.spec import validate_rope_spec

        index = len(self.ropes)
        owner = self._owner("rope", index, name)
        spec = validate_rope_spec(dict(points=points, radius=radius, density=density, young_modulus=young_modulus,
                                       shear_modulus=shear_modulus, damping=damping, pinned=pinned,
                                       clamped=clamped, attachments=attachments, name=name), index,
                                  len(self.bodies))
        self.ropes.append(dict(
            name=name, points=spec["points"].tolist(), radius=spec["radius"], density=spec["density"],
            young_modulus=spec["young_modulus"], shear_modulus=spec["shear_modulus"], damping=spec["damping"],
            material=self._material_index(owner, material), pinned=list(spec["pinned"]),
            clamped=list(spec["clamped"]),
            attachments=[[node, body, [float(x) for x in local]] for node, body, local in spec["attachments"]]))
        return index

    # --------------------------------------------------------------- particles
    def add_particles(self, positions, velocities=None, mass=1.0, radius=0.0, material=None, pinned=(),
                      name=None, particle_collisions=False, birth_times=None, lifetimes=None) -> int:
        """Add a group of point particles and return its group index (shared with add_mass_spring).

        positions, velocities: (n, 3) in m and m/s (velocities default to rest); mass: kg per particle, one
        number for all or n numbers; radius: the distance they keep from colliders (0: points); pinned:
        particle indices (negative ones count from the end) that keep their positions, or follow the group's
        set_pin_track. Gravity acts on every particle; other forces through add_force. They collide with
        planes, box containers and tubes, and with ``particle_collisions`` (and radius > 0) with each other
        and with the particles of other such groups.

        birth_times: n times in s (>= 0) at which the particles are emitted: before it a particle is not there
        (it does not move, collide or feel forces; its state holds where and how fast it is born), from it on
        it starts at its position and velocity. lifetimes: one time or n times in s (> 0, inf: for ever) after
        its birth at which a particle dies: it stops where it is and takes no further part. None: all are there
        from the start, for ever. Pinned particles cannot have either.
        """
        from .particles.groups import check_particles, group_label

        index = len(self.particles)
        owner = group_label("particles", index, name_or_none(f"particles (group {index})", "name", name))
        values = check_particles(owner, positions, velocities, mass, radius, pinned, particle_collisions,
                                 birth_times, lifetimes)
        self.particles.append(dict(kind="particles", name=name, **values,
                                   material=self._material_index(owner, material)))
        return index

    def add_mass_spring(self, vertices, edges, mass, stiffness, damping, bending=0.0, pinned=(), material=None,
                        name=None, velocities=None, radius=0.0) -> int:
        """Add a mass-spring body (cloth, a net, a soft chain) and return its group index.

        vertices (n, 3); edges (m, 2) vertex indices, each a damped spring at its drawn length (stiffness in
        N/m, damping in N s/m along the spring). mass: the total in kg, spread over the vertices by their
        incident edge lengths (each edge gives half its share of the total length to each end, as for a
        uniform wire frame), or n masses, one per vertex. bending: the stiffness (N/m) of springs across
        second neighbours, the vertex pairs joined through a common neighbour but not by an edge (on a
        chain i and i + 2), which resist folding; their damping is damping * bending / stiffness. pinned
        vertices keep their positions; velocities (n, 3) default to rest; radius as for add_particles.
        """
        from .particles.groups import check_mass_spring, group_label

        index = len(self.particles)
        owner = group_label("mass-spring", index, name_or_none(f"mass-spring (group {index})", "name", name))
        values = check_mass_spring(owner, vertices, edges, mass, stiffness, damping, bending, pinned, velocities,
                                   radius)
        self.particles.append(dict(kind="mass_spring", name=name, **values,
                                   material=self._material_index(owner, material)))
        return index

    def set_pin_track(self, group: int, times, poses) -> None:
        """Move the pinned particles of a particle group or mass-spring body rigidly along a track, as a kinematic
        body moves: ``poses[k]`` = (x, y, z, w, qx, qy, qz) at ``times[k]``, interpolated as set_kinematic_track's.

        The pinned particles keep their places in the track's frame: where they were added is where they are at
        the first pose. Before the first time and after the last they hold the end poses. Their velocity, which
        the springs' damping and the implicit integrator see, is the track's over each step.
        """
        group = integer("set_pin_track", "group", group, 0, len(self.particles) - 1, "a group index")
        owner = self.group_label(group)
        if not self.particles[group]["pinned"]:
            raise FieldError(owner, "track", "needs pinned particles to move; the group has none")
        self.particles[group]["track"] = _checked_track(owner, times, poses)

    def add_force(self, force) -> int:
        """Add a force object (quadric_solver.Drag, Springs, Wind, Vortex, Turbulence, Attractor) and return its index.

        It acts on the groups, bodies and ropes it names, or on all of them (quadric_solver/particles/forces.py); those
        it names must be added first.
        """
        from .particles.forces import check_force

        self.forces.append(check_force(force, len(self.forces), self.particles, len(self.bodies), len(self.ropes)))
        return len(self.forces) - 1

    def group_label(self, group: int) -> str:
        """How messages name a particle group: ``particles 'Sparks' (group 0)``."""
        from .particles.groups import group_label

        spec = self.particles[group]
        return group_label("particles" if spec["kind"] == "particles" else "mass-spring", group, spec["name"])

    # ------------------------------------------------------------------- files
    def to_dict(self) -> dict:
        document = dict(format=SCENE_FORMAT, version=SCENE_VERSION, gravity=list(self.gravity),
                        materials=[asdict(m) for m in self.materials], bodies=self.bodies,
                        planes=self.planes, boxes=self.boxes, tubes=self.tubes, ropes=self.ropes)
        # only where there are any, so that scenes without them keep their content hash
        for key in ("meshes", "particles", "forces"):
            if getattr(self, key):
                document[key] = getattr(self, key)
        return document

    def content_hash(self) -> str:
        """sha256 of the scene's canonical JSON; a recording carries it so it can be matched to its scene."""
        text = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def save(self, path) -> None:
        """Write the scene as JSON; the file is replaced whole, so a failed save keeps the previous one."""
        write_atomically(path, lambda handle: json.dump(self.to_dict(), handle, indent=1), encoding="utf-8")

    @classmethod
    def from_dict(cls, data, source="scene") -> "Scene":
        """The Scene of a ``to_dict`` document, checked against the file schema (source: the file, for errors).

        Raises SceneFileError naming ``source`` and the JSON path; warns about unknown keys.
        """
        file_header(source, "", data, SCENE_FORMAT, SCENE_VERSION, "scene")
        top = file_object(source, "", data, ("format", "version", "gravity"), _FILE_LISTS)
        with at(source, ""):
            scene = cls(gravity=top["gravity"])
        material_fields = [field.name for field in fields(Material)]
        for k, raw in enumerate(file_list(source, "materials", top.get("materials", []))):
            with at(source, f"materials[{k}]"):
                scene.materials.append(Material(**file_object(source, f"materials[{k}]", raw, (), material_fields)))
        # the file's materials come first, so its material indices keep pointing at the same materials
        materials = list(scene.materials)
        for kind, (required, optional) in _FILE_KEYS.items():
            for k, raw in enumerate(file_list(source, kind, top.get(kind, []))):
                path = f"{kind}[{k}]"
                item = file_object(source, path, raw, required, optional)
                track = item.pop("track", None)
                if "material" in item:
                    item["material"] = _file_material(source, path, item["material"], materials)
                with at(source, path):
                    if kind == "bodies":
                        index = _add_file_body(scene, source, path, item)
                    else:
                        index = getattr(scene, _ADD[kind])(**item)
                    if track is not None:
                        track = file_object(source, join(path, "track"), track, ("times", "poses"))
                        scene.set_kinematic_track(index, track["times"], track["poses"])
        _particles_from_file(source, top, scene, materials)
        return scene

    @classmethod
    def load(cls, path) -> "Scene":
        """Read a scene file written by ``save``; SceneFileError names the file and the JSON path of a problem."""
        return cls.from_dict(read_json(path), source=path)


# each shape class by its name in files, and the body-dict fields that hold its parameters
_SHAPE_TYPES = {Ellipsoid: "ellipsoid", Superellipsoid: "superellipsoid", Box: "box", Cylinder: "cylinder",
                Capsule: "capsule", ConvexHull: "convex_hull"}
_SHAPE_FIELDS = {"ellipsoid": ("semi_axes",), "superellipsoid": ("semi_axes", "exponents"),
                 "box": ("half_extents",), "cylinder": ("radius", "half_height"),
                 "capsule": ("radius", "half_height"), "convex_hull": ("points",)}
_SHAPE_CLASSES = {name: cls for cls, name in _SHAPE_TYPES.items()}
_ALL_SHAPE_FIELDS = {field for names in _SHAPE_FIELDS.values() for field in names}

# Scene file: the keys of each kind of object, (required, optional); an optional key that is absent takes
# the default of the add_* method the object goes to.
_FILE_KEYS = {
    "bodies": (("position",), ("name", "shape", *sorted(_ALL_SHAPE_FIELDS), "shape_offset", "orientation", "velocity",
                               "angular_velocity", "density", "mass", "material", "fixed", "kinematic", "track")),
    "planes": (("point", "normal"), ("name", "material")),
    "boxes": (("center", "half_extents"), ("name", "material", "rotation")),
    "tubes": (("center", "axis", "radius", "length"), ("name", "material")),
    "meshes": (("vertices", "triangles"), ("name", "material")),
    "ropes": (("points",), ("name", "material", "radius", "density", "young_modulus", "shear_modulus", "damping",
                            "pinned", "clamped", "attachments")),
}
_ADD = dict(planes="add_plane", boxes="add_box_container", tubes="add_tube", meshes="add_mesh_collider",
            ropes="add_rope")
# particle groups by their "kind": (required, optional) keys and the add_* method
_GROUP_KEYS = {
    "particles": (("positions",), ("name", "velocities", "mass", "radius", "material", "pinned",
                                   "particle_collisions", "birth_times", "lifetimes", "track")),
    "mass_spring": (("vertices", "edges", "mass", "stiffness", "damping"),
                    ("name", "bending", "pinned", "material", "velocities", "radius", "track")),
}
_ADD_GROUP = dict(particles="add_particles", mass_spring="add_mass_spring")
_FILE_LISTS = ("materials", *_FILE_KEYS, "particles", "forces")  # the optional keys at the top level


def _particles_from_file(source, top: dict, scene: Scene, materials: list) -> None:
    """The particle groups and forces of a scene file into ``scene`` (after its colliders and materials)."""
    from .particles.forces import FORCE_TYPES, file_keys, force_from_dict

    for k, raw in enumerate(file_list(source, "particles", top.get("particles", []))):
        path = f"particles[{k}]"
        kind = file_object(source, path, raw, ("kind",), raw.keys() if isinstance(raw, dict) else ())["kind"]
        if kind not in _GROUP_KEYS:
            raise SceneFileError(source, join(path, "kind"), f"must be 'particles' or 'mass_spring', "
                                                             f"got {describe(kind)}")
        item = file_object(source, path, raw, ("kind", *_GROUP_KEYS[kind][0]), _GROUP_KEYS[kind][1])
        del item["kind"]
        track = item.pop("track", None)
        if "material" in item:
            item["material"] = _file_material(source, path, item["material"], materials)
        with at(source, path):
            group = getattr(scene, _ADD_GROUP[kind])(**item)
            if track is not None:
                track = file_object(source, join(path, "track"), track, ("times", "poses"))
                scene.set_pin_track(group, track["times"], track["poses"])
    for k, raw in enumerate(file_list(source, "forces", top.get("forces", []))):
        path = f"forces[{k}]"
        kind = file_object(source, path, raw, ("type",), raw.keys() if isinstance(raw, dict) else ())["type"]
        if kind not in FORCE_TYPES:
            raise SceneFileError(source, join(path, "type"), f"must be one of {', '.join(map(repr, FORCE_TYPES))}, "
                                                             f"got {describe(kind)}")
        item = file_object(source, path, raw, *file_keys(kind))
        with at(source, path):
            scene.add_force(force_from_dict(item))


def _checked_track(owner: str, times, poses) -> dict:
    """A kinematic track's times and poses (x, y, z, w, qx, qy, qz), checked, as plain lists."""
    times = array(owner, "track.times", times, (None,), "a list of times")
    if times.size < 1:
        raise FieldError(owner, "track.times", "must hold at least one time, got none")
    poses = array(owner, "track.poses", poses, (times.size, 7), f"{times.size} poses (x, y, z, w, qx, qy, qz)")
    if np.any(np.diff(times) <= 0):
        raise FieldError(owner, "track.times", "must be strictly increasing")
    norms = np.linalg.norm(poses[:, 3:], axis=1)
    if np.any(np.abs(norms - 1.0) > 1e-5):
        raise FieldError(owner, "track.poses", "orientations must be unit quaternions")
    return dict(times=times.tolist(), poses=poses.tolist())


def _shape_fields(shape: Shape) -> dict:
    """A shape's parameters as plain body-dict values (a hull's as its vertices)."""
    if isinstance(shape, ConvexHull):
        return dict(points=shape.vertices.tolist())
    return {field: (list(getattr(shape, field)) if isinstance(getattr(shape, field), tuple)
                    else getattr(shape, field)) for field in _SHAPE_FIELDS[_SHAPE_TYPES[type(shape)]]}


def body_shape(body: dict) -> Shape:
    """The Shape of a body dict, in the body's frame."""
    kind = body["shape"]
    return _SHAPE_CLASSES[kind](*(body[field] for field in _SHAPE_FIELDS[kind]))


def _check_mass(owner: str, body: dict) -> None:
    """Mass and inertia that follow from the shape must be finite and non-zero, or the solver divides by them."""
    with np.errstate(all="ignore"):
        props = body_shape(body).mass_properties(1.0)
        density = body["density"] if body["mass"] is None else body["mass"] / props.volume
        mass, inertia = density * props.volume, density * props.inertia
        derived = np.append(inertia, mass)
        usable = np.all(np.isfinite(derived)) and np.all(np.isfinite(1.0 / derived))
    if not usable:
        field = "density" if body["mass"] is None else "mass"
        raise FieldError(owner, field, f"gives mass {mass:.4g} kg and moments of inertia {describe(inertia)} "
                                       f"with this shape; they must be finite and non-zero")


def _add_file_body(scene: Scene, source, path: str, body: dict) -> int:
    """Add a body read from a file: its shape from the shape fields, and density or mass."""
    kind = body.pop("shape", "ellipsoid")
    if not isinstance(kind, str) or kind not in _SHAPE_FIELDS:
        raise SceneFileError(source, join(path, "shape"), f"must be one of {', '.join(map(repr, _SHAPE_FIELDS))}, "
                                                          f"got {describe(kind)}")
    for field in _SHAPE_FIELDS[kind]:
        if field not in body:
            raise SceneFileError(source, path, f"needs {field!r} for a {kind} body; it has none")
    extra = [key for key in body if key in _ALL_SHAPE_FIELDS and key not in _SHAPE_FIELDS[kind]]
    if extra:
        raise SceneFileError(source, join(path, extra[0]), f"does not belong to a {kind} body")
    if "density" not in body and body.get("mass") is None:
        raise SceneFileError(source, path, "needs density or mass; it has neither")
    params = {field: body.pop(field) for field in _SHAPE_FIELDS[kind]}
    offset = body.pop("shape_offset", None)
    with at(source, path):
        if kind == "ellipsoid":
            return scene.add_ellipsoid(params["semi_axes"], **body)
        if kind == "convex_hull" and offset is not None:
            # saved in its body frame already: keep it as it is (a second centring could turn a symmetric hull)
            index = len(scene.bodies)
            owner = f"convex hull (body {index})"
            hull = ConvexHull(params["points"])
            values = dict(name=name_or_none(owner, "name", body.pop("name", None)), shape=kind,
                          points=hull.vertices.tolist(),
                          shape_offset=list(vector(owner, "shape_offset", offset, 7)))
            defaults = dict(orientation=(1.0, 0.0, 0.0, 0.0), velocity=(0.0, 0.0, 0.0),
                            angular_velocity=(0.0, 0.0, 0.0), density=1000.0, material=None, fixed=False,
                            mass=None, kinematic=False)
            defaults.update(body)
            return scene._append_body(owner, values, **defaults)
        return scene.add_body(_SHAPE_CLASSES[kind](**params), **body)



def _file_material(source, path: str, index, materials: list) -> Material:
    """The material that the material index of the object at ``path`` refers to."""
    if not materials:
        raise SceneFileError(source, join(path, "material"), f"is {describe(index)}, but the file lists no materials")
    with at(source, path):
        return materials[integer("", "material", index, 0, len(materials) - 1, "a material index")]
