"""Fit a quadric body to a triangle mesh (pure numpy, no bpy).

Closed meshes: volume, centroid and second moments from signed tetrahedra
(each triangle with a reference point), then the principal axes and the
inertia-equivalent ellipsoid: the solid ellipsoid with the mesh's mass and
inertia tensor. Its second moment along a principal axis is M a^2 / 5, so
a_i = sqrt(5 * lambda_i / V) where lambda_i are the eigenvalues of the central
second-moment tensor (per unit density) and V the mesh volume.

Open meshes have no volume: fall back to the oriented bounding box from the
vertex covariance (half extents as semi-axes) and say so.
"""
from dataclasses import dataclass

import numpy as np


class FitError(ValueError):
    pass


@dataclass
class EllipsoidFit:
    center: np.ndarray      # (3,) centroid, same frame as the input vertices
    rotation: np.ndarray    # (3, 3) columns are the principal axes (right-handed)
    semi_axes: np.ndarray   # (3,) along the columns of rotation
    volume: float           # mesh volume (closed) or the ellipsoid's volume (fallback)
    closed: bool
    method: str             # 'INERTIA' or 'BOUNDING_BOX'
    warning: str = ""


def is_closed(triangles):
    """True when every edge is shared by exactly two triangles (a watertight surface)."""
    tri = np.asarray(triangles, dtype=np.int64)
    if len(tri) == 0:
        return False
    edges = np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [2, 0]]])
    edges.sort(axis=1)
    _, counts = np.unique(edges, axis=0, return_counts=True)
    return bool(np.all(counts == 2))


def mass_properties(vertices, triangles):
    """Volume, centroid and central second-moment tensor (integral of r r^T dV) of a closed mesh."""
    v = np.asarray(vertices, dtype=np.float64)
    tri = np.asarray(triangles, dtype=np.int64)
    ref = v.mean(axis=0)  # a nearby reference point keeps the sums well conditioned
    a, b, c = (v[tri[:, k]] - ref for k in range(3))
    vol = np.einsum("ij,ij->i", a, np.cross(b, c)) / 6.0
    volume = vol.sum()
    if volume < 0.0:  # inward-facing normals: the same solid, measured with the opposite sign
        vol, volume = -vol, -volume
    s = a + b + c
    first = (vol[:, None] * s).sum(axis=0) / 4.0
    # Tetrahedron (0, a, b, c): integral of r r^T dV = vol/20 (aa^T + bb^T + cc^T + ss^T).
    second = np.einsum("i,ij,ik->jk", vol, a, a) + np.einsum("i,ij,ik->jk", vol, b, b)
    second += np.einsum("i,ij,ik->jk", vol, c, c) + np.einsum("i,ij,ik->jk", vol, s, s)
    second /= 20.0
    if volume <= 0.0:
        return 0.0, ref, np.zeros((3, 3))
    centroid_rel = first / volume
    central = second - volume * np.outer(centroid_rel, centroid_rel)
    return float(volume), ref + centroid_rel, 0.5 * (central + central.T)


def _right_handed(axes):
    axes = np.array(axes, dtype=np.float64)
    if np.linalg.det(axes) < 0.0:
        axes[:, 2] *= -1.0
    return axes


def fit_ellipsoid(vertices, triangles, name="mesh"):
    """Inertia-equivalent ellipsoid of a closed mesh, else its oriented bounding box (with a warning)."""
    v = np.asarray(vertices, dtype=np.float64)
    if len(v) < 4 or len(triangles) == 0:
        raise FitError(f"'{name}': mesh has no volume (needs at least 4 vertices and some faces)")
    scale = float(np.max(np.ptp(v, axis=0)))
    if not np.all(np.isfinite(v)) or scale <= 0.0:
        raise FitError(f"'{name}': mesh has zero size")
    closed = is_closed(triangles)
    if closed:
        volume, center, central = mass_properties(v, triangles)
        if volume <= 1e-9 * scale ** 3:
            raise FitError(f"'{name}': mesh has zero volume")
        lam, axes = np.linalg.eigh(central)
        lam = np.maximum(lam, 0.0)
        semi = np.sqrt(5.0 * lam / volume)
        if np.min(semi) <= 1e-6 * scale:
            raise FitError(f"'{name}': mesh has zero volume (flat along one axis)")
        return EllipsoidFit(center, _right_handed(axes), semi, volume, True, "INERTIA")
    center0 = v.mean(axis=0)
    _, axes = np.linalg.eigh(np.cov((v - center0).T))
    axes = _right_handed(axes)
    local = (v - center0) @ axes
    lo, hi = local.min(axis=0), local.max(axis=0)
    semi = 0.5 * (hi - lo)
    if np.min(semi) <= 1e-6 * scale:
        raise FitError(f"'{name}': mesh is open and flat, it has zero volume")
    center = center0 + axes @ (0.5 * (hi + lo))
    volume = 4.0 / 3.0 * np.pi * float(np.prod(semi))
    warning = f"'{name}': mesh is not closed; fitted its oriented bounding box instead of its inertia"
    return EllipsoidFit(center, axes, semi, volume, False, "BOUNDING_BOX", warning)
