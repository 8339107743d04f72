"""Model: everything that does not change during a run, as flat float64/int64 arrays.

Built once from a Scene. Kernels read it and never write it (MuJoCo's mjModel,
Newton's Model). Static colliders share one index space, ``static id``:
planes first, then the walls of box containers (five one-sided rectangles per
box), then tubes, then the triangles of the mesh colliders, mesh by mesh. The
static_* arrays other than static_material end before the triangles; their
geometry is in MeshColliders.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .collision.bvh import build_hierarchy
from .math3d import quat_to_matrix_np
from .shapes.support import CYLINDER, HULL, PARAMS

DYNAMIC, FIXED, KINEMATIC = 0, 1, 2
STATIC_PLANE, STATIC_WALL, STATIC_TUBE = 0, 1, 2


class Model(NamedTuple):
    n_bodies: int
    gravity: np.ndarray              # (3,)
    semi_axes: np.ndarray            # (N, 3) an ellipsoid's own; for other shapes those of a bounding ellipsoid
    mass: np.ndarray                 # (N,)
    inv_mass: np.ndarray             # (N,) 0 for fixed and kinematic bodies
    dynamic: np.ndarray              # (N,) bool: inv_mass > 0
    inertia_local: np.ndarray        # (N, 3) principal moments
    inv_inertia_local: np.ndarray    # (N, 3) 0 for fixed and kinematic bodies
    bounding_radius: np.ndarray      # (N,) radius of a ball about the centre that holds the body
    swing_arm: np.ndarray            # (N,) a_max^2 / a_min: how far a turn by angle t can swing the surface, per t^2
    body_material: np.ndarray        # (N,) int64
    body_kind: np.ndarray            # (N,) int64: DYNAMIC, FIXED, KINEMATIC
    track_offsets: np.ndarray        # (N+1,) int64 into track_times/track_poses; empty range = no track
    track_times: np.ndarray          # (K,)
    track_poses: np.ndarray          # (K, 7)
    material_friction: np.ndarray    # (M,)
    material_rolling: np.ndarray     # (M,)
    material_spinning: np.ndarray    # (M,)
    material_restitution: np.ndarray  # (M,)
    static_kind: np.ndarray          # (S,) int64: STATIC_PLANE, STATIC_WALL, STATIC_TUBE
    static_point: np.ndarray         # (S, 3) plane/wall point or tube centre
    static_normal: np.ndarray        # (S, 3) plane/wall normal into free space, or tube axis
    static_u: np.ndarray             # (S, 3) wall in-plane axis 1
    static_v: np.ndarray             # (S, 3) wall in-plane axis 2
    static_size: np.ndarray          # (S, 2) wall half sizes along u, v; tube (radius, half length)
    static_material: np.ndarray      # (S + T,) int64: the planes', walls', tubes' and then each triangle's


class BodyShapes(NamedTuple):
    """The bodies' shapes for compiled code. build_body_shapes gives None in scenes of ellipsoids only, where the
    Python side then takes the ellipsoids' settings; Simulation still hands the compiled loop BodyShapes there
    (``always``), so that one compiled narrow phase serves every scene (docs/numba.md).

    A shape other than an ellipsoid is held by the bounding ellipsoid in Model.semi_axes (sqrt 3 times
    ``size``), which the conservative tests use: bounding boxes, the static colliders' pre-test.
    """
    kind: np.ndarray           # (N,) int64 shapes/support.py ids
    params: np.ndarray         # (N, PARAMS) shapes/support.py rows
    size: np.ndarray           # (N, 3) half sizes of the body-frame box that holds the shape
    hull_vertices: np.ndarray  # (V, 3) hull corners in their bodies' frames
    hull_faces: np.ndarray     # (F, 3) int64 counter-clockwise triangles, rows of hull_vertices
    reuse_length: np.ndarray   # (N,) motion within which a touching pair keeps its contact points (carried_contacts.py)
    penetration: int = 0       # how overlapping pairs are measured: convex_distance.EPA, MPR or SGJK


class MeshColliders(NamedTuple):
    """The triangles of a scene's mesh colliders, numbered across the meshes, for compiled code (None where
    BodyShapes is None, and then there are none). Each triangle is a hull of three corners in
    BodyShapes.hull_vertices, about its centre."""
    first_corner: int          # row of triangle 0's first corner in hull_vertices (triangle t: 3 t rows on)
    first_static: int          # static id of triangle 0
    centre: np.ndarray         # (T, 3) corner means
    normal: np.ndarray         # (T, 3) unit front normals
    neighbour: np.ndarray      # (T, 3) int64 quadric_solver/mesh.py MeshTopology rows, in this numbering
    edge_active: np.ndarray    # (T, 3) bool
    corner_active: np.ndarray  # (T, 3) bool
    corner_owner: np.ndarray   # (T, 3) int64
    # collision/bvh.py's Hierarchy over the triangles' boxes (degenerate ones left out), array by array
    bvh_low: np.ndarray
    bvh_high: np.ndarray
    bvh_skip: np.ndarray
    bvh_first: np.ndarray
    bvh_count: np.ndarray
    bvh_item: np.ndarray


def build_body_shapes(scene, always=False):
    """BodyShapes of a scene's bodies (and its mesh colliders' triangles after the hulls' vertices), or None if
    the bodies are all ellipsoids and there are no mesh colliders, unless ``always``."""
    from .scene import body_shape

    if not always and all(body["shape"] == "ellipsoid" for body in scene.bodies) and not scene.meshes:
        return None
    n = len(scene.bodies)
    kind = np.zeros(n, dtype=np.int64)
    params = np.zeros((n, PARAMS))
    size = np.zeros((n, 3))
    vertices, faces = [], []
    n_vertices = n_faces = 0
    for i, body in enumerate(scene.bodies):
        shape = body_shape(body)
        kind[i] = shape.kind
        params[i] = shape.params(n_vertices, n_faces)
        if shape.kind == HULL:
            vertices.append(shape.vertices)
            faces.append(shape.faces + n_vertices)
            n_vertices += len(shape.vertices)
            n_faces += len(shape.faces)
            size[i] = np.abs(shape.vertices).max(axis=0)
        else:
            size[i] = _primitive_size(shape)
    for mesh in scene.meshes:
        corners = np.array(mesh["vertices"])[np.array(mesh["triangles"], dtype=np.int64)]
        vertices.append((corners - corners.mean(axis=1, keepdims=True)).reshape(-1, 3))
    return BodyShapes(kind=kind, params=params, size=size,
                      hull_vertices=np.ascontiguousarray(np.concatenate(vertices) if vertices else np.zeros((0, 3))),
                      hull_faces=np.ascontiguousarray(np.concatenate(faces) if faces else np.zeros((0, 3), np.int64)),
                      reuse_length=np.zeros(n))


def build_mesh_colliders(scene, shapes, first_static: int):
    """MeshColliders of a scene; ``shapes`` is its build_body_shapes. None where that is None (ellipsoids and no
    mesh colliders); empty in other scenes without mesh colliders, so that their kernels compile only once."""
    from .mesh import mesh_topology

    if shapes is None:
        return None
    if not scene.meshes:
        empty = build_hierarchy(np.zeros((0, 3)), np.zeros((0, 3)))
        rows, flags = np.zeros((0, 3), dtype=np.int64), np.zeros((0, 3), dtype=bool)
        return MeshColliders(first_corner=len(shapes.hull_vertices), first_static=first_static,
                             centre=np.zeros((0, 3)), normal=np.zeros((0, 3)), neighbour=rows, edge_active=flags,
                             corner_active=flags, corner_owner=rows,
                             **{f"bvh_{field}": value for field, value in empty._asdict().items()})
    parts = []
    offset = 0
    for mesh in scene.meshes:
        vertices = np.array(mesh["vertices"])
        triangles = np.array(mesh["triangles"], dtype=np.int64)
        topology = mesh_topology(vertices, triangles)
        shift = lambda rows: np.where(rows >= 0, rows + offset, rows)  # noqa: E731 (numbering across meshes)
        parts.append((vertices[triangles], topology.normal, shift(topology.neighbour), topology.edge_active,
                      topology.corner_active, topology.corner_owner + offset, topology.usable))
        offset += len(triangles)
    corners, normal, neighbour, edge_active, corner_active, corner_owner, usable = (
        np.concatenate(column) for column in zip(*parts))
    used = np.flatnonzero(usable)
    hierarchy = build_hierarchy(corners[used].min(axis=1), corners[used].max(axis=1))
    hierarchy = hierarchy._replace(item=used[hierarchy.item])
    return MeshColliders(first_corner=len(shapes.hull_vertices) - 3 * offset, first_static=first_static,
                         centre=corners.mean(axis=1), normal=normal, neighbour=neighbour, edge_active=edge_active,
                         corner_active=corner_active, corner_owner=corner_owner,
                         **{f"bvh_{field}": value for field, value in hierarchy._asdict().items()})


def _primitive_size(shape) -> np.ndarray:
    """Half sizes of the box that holds a primitive in its frame."""
    if hasattr(shape, "half_extents"):
        return np.array(shape.half_extents)
    if hasattr(shape, "semi_axes"):
        return np.array(shape.semi_axes)
    reach = shape.half_height + (0.0 if shape.kind == CYLINDER else shape.radius)  # a capsule's caps add its radius
    return np.array([shape.radius, shape.radius, reach])


def ellipsoid_mass_properties(semi_axes, density):
    """Mass and principal moments of inertia of a solid ellipsoid."""
    a, b, c = semi_axes
    mass = density * 4.0 / 3.0 * np.pi * a * b * c
    return mass, np.array([mass * (b * b + c * c) / 5.0, mass * (a * a + c * c) / 5.0, mass * (a * a + b * b) / 5.0])


def _bounding_radius(shapes, i) -> float:
    """Radius of the ball about body i's centre that holds its shape."""
    from .shapes.support import bounding_radius

    return float(bounding_radius(shapes.kind[i], shapes.params[i], shapes.hull_vertices))


def _box_walls(box):
    """The floor and four walls of an open-top box as (point, inward normal, u, v, half_u, half_v)."""
    center = np.array(box["center"])
    hx, hy, hz = box["half_extents"]
    rotation = quat_to_matrix_np(box["rotation"])
    ex, ey, ez = rotation[:, 0], rotation[:, 1], rotation[:, 2]
    return [
        (center - hz * ez, ez, ex, ey, hx, hy),     # floor
        (center - hx * ex, ex, ey, ez, hy, hz),     # -x wall, faces +x
        (center + hx * ex, -ex, ey, ez, hy, hz),    # +x wall
        (center - hy * ey, ey, ex, ez, hx, hz),     # -y wall
        (center + hy * ey, -ey, ex, ez, hx, hz),    # +y wall
    ]


def build_model(scene, shapes=None) -> Model:
    """The Model of a scene; ``shapes`` is its build_body_shapes (None: ellipsoids only)."""
    from .scene import body_shape

    n = len(scene.bodies)
    semi_axes = np.zeros((n, 3))
    mass = np.zeros(n)
    inv_mass = np.zeros(n)
    inertia = np.zeros((n, 3))
    inv_inertia = np.zeros((n, 3))
    material = np.zeros(n, dtype=np.int64)
    kind = np.zeros(n, dtype=np.int64)
    track_offsets = np.zeros(n + 1, dtype=np.int64)
    track_times, track_poses = [], []
    bounding_radius = np.zeros(n)
    for i, body in enumerate(scene.bodies):
        if body["shape"] != "ellipsoid":
            semi_axes[i] = np.sqrt(3.0) * shapes.size[i]
            bounding_radius[i] = _bounding_radius(shapes, i)
            props = body_shape(body).mass_properties(1.0)
            density = body["density"] if body["mass"] is None else body["mass"] / props.volume
            m, inertia[i] = density * props.volume, density * props.inertia
        elif body["mass"] is not None:
            semi_axes[i] = body["semi_axes"]
            bounding_radius[i] = max(body["semi_axes"])
            m = body["mass"]
            _, unit_inertia = ellipsoid_mass_properties(body["semi_axes"], 1.0)
            inertia[i] = unit_inertia / (4.0 / 3.0 * np.pi * np.prod(body["semi_axes"])) * m
        else:
            semi_axes[i] = body["semi_axes"]
            bounding_radius[i] = max(body["semi_axes"])
            m, inertia[i] = ellipsoid_mass_properties(body["semi_axes"], body["density"])
        mass[i] = m
        material[i] = body["material"]
        kind[i] = FIXED if body["fixed"] else (KINEMATIC if body["kinematic"] else DYNAMIC)
        if kind[i] == DYNAMIC:
            inv_mass[i] = 1.0 / m
            inv_inertia[i] = 1.0 / inertia[i]
        track = body.get("track")
        if track:
            track_times.extend(track["times"])
            track_poses.extend(track["poses"])
        track_offsets[i + 1] = len(track_times)

    statics = []  # (kind, point, normal, u, v, size, material)
    zero = np.zeros(3)
    for plane in scene.planes:
        statics.append((STATIC_PLANE, plane["point"], plane["normal"], zero, zero, (0.0, 0.0), plane["material"]))
    for box in scene.boxes:
        for point, normal, u, v, half_u, half_v in _box_walls(box):
            statics.append((STATIC_WALL, point, normal, u, v, (half_u, half_v), box["material"]))
    for tube in scene.tubes:
        statics.append((STATIC_TUBE, tube["center"], tube["axis"], zero, zero,
                        (tube["radius"], 0.5 * tube["length"]), tube["material"]))
    s = len(statics)
    triangle_materials = [mesh["material"] for mesh in scene.meshes for _ in mesh["triangles"]]

    def column(k, shape, dtype=np.float64):
        return np.array([entry[k] for entry in statics], dtype=dtype).reshape(shape)

    materials = scene.materials or []
    return Model(
        n_bodies=n,
        gravity=np.array(scene.gravity, dtype=np.float64),
        semi_axes=semi_axes, mass=mass, inv_mass=inv_mass, dynamic=inv_mass > 0.0,
        inertia_local=inertia, inv_inertia_local=inv_inertia,
        bounding_radius=bounding_radius,
        swing_arm=semi_axes.max(axis=1) ** 2 / semi_axes.min(axis=1) if n else np.zeros(0),
        body_material=material, body_kind=kind,
        track_offsets=track_offsets,
        track_times=np.array(track_times, dtype=np.float64).reshape(-1),
        track_poses=np.array(track_poses, dtype=np.float64).reshape(-1, 7),
        material_friction=np.array([m.friction for m in materials], dtype=np.float64).reshape(-1),
        material_rolling=np.array([m.rolling_friction for m in materials], dtype=np.float64).reshape(-1),
        material_spinning=np.array([m.spinning_friction for m in materials], dtype=np.float64).reshape(-1),
        material_restitution=np.array([m.restitution for m in materials], dtype=np.float64).reshape(-1),
        static_kind=column(0, (s,), np.int64),
        static_point=column(1, (s, 3)), static_normal=column(2, (s, 3)),
        static_u=column(3, (s, 3)), static_v=column(4, (s, 3)),
        static_size=column(5, (s, 2)), static_material=np.array([entry[6] for entry in statics] + triangle_materials, dtype=np.int64),
    )
