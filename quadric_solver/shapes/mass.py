"""Exact mass properties of the convex shapes at a uniform density.

Primitives have closed forms about their centre, in their own frame (which is their principal
frame). Superellipsoids integrate in closed form with beta functions (Jaklic, Leonardis and Solina,
"Segmentation and Recovery of Superquadrics", Kluwer 2000, ch. 2). Polyhedra use the divergence
theorem over their triangles (Eberly, "Polyhedral Mass Properties (Revisited)", 2002, after
Mirtich 1996), and their principal frame is the eigenbasis of the inertia tensor. Star-shaped
solids (bumpy ellipsoids) integrate over the sphere of directions by quadrature.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np


class MassProperties(NamedTuple):
    """Volume (m^3), mass (kg), centre of mass (shape frame), principal moments about the centre of
    mass (kg m^2) and principal axes: a rotation matrix whose columns are the axes of the three
    moments in the shape's frame (identity for the primitives, whose frame is principal)."""

    volume: float
    mass: float
    center_of_mass: np.ndarray
    inertia: np.ndarray
    principal_axes: np.ndarray

    @property
    def inertia_tensor(self) -> np.ndarray:
        """Inertia tensor about the centre of mass in the shape's frame: R diag(I) R^T."""
        return (self.principal_axes * self.inertia) @ self.principal_axes.T


def _about_centre(volume, density, second_moments) -> MassProperties:
    """Mass properties of a shape centred on its frame's origin, from the per-volume integrals of
    x^2, y^2 and z^2 over it (m^5)."""
    xx, yy, zz = second_moments
    inertia = density * np.array([yy + zz, xx + zz, xx + yy])
    return MassProperties(volume, density * volume, np.zeros(3), inertia, np.eye(3))


def ellipsoid(semi_axes, density) -> MassProperties:
    a, b, c = semi_axes
    volume = 4.0 / 3.0 * math.pi * a * b * c
    return _about_centre(volume, density, volume / 5.0 * np.array([a * a, b * b, c * c]))


def box(half_extents, density) -> MassProperties:
    hx, hy, hz = half_extents
    volume = 8.0 * hx * hy * hz
    return _about_centre(volume, density, volume / 3.0 * np.array([hx * hx, hy * hy, hz * hz]))


def cylinder(radius, half_height, density) -> MassProperties:
    volume = 2.0 * math.pi * radius ** 2 * half_height
    radial = volume * radius ** 2 / 4.0  # the integral of x^2 (and of y^2) over a disc times the height
    return _about_centre(volume, density, np.array([radial, radial, volume * half_height ** 2 / 3.0]))


def capsule(radius, half_height, density) -> MassProperties:
    """A cylinder of half-height h capped by two hemispheres of radius r."""
    r, h = radius, half_height
    cylinder_volume = 2.0 * math.pi * r * r * h
    ball_volume = 4.0 / 3.0 * math.pi * r ** 3
    radial = cylinder_volume * r * r / 4.0 + ball_volume * r * r / 5.0
    # each hemisphere has its flat face at z = +-h and its centroid 3r/8 beyond it; the integral of z^2
    # over it is (its own, about the flat face: V r^2 / 5) + V (h^2 + 2 h 3r/8)
    axial = cylinder_volume * h * h / 3.0 + ball_volume * (r * r / 5.0 + h * h + 0.75 * h * r)
    return _about_centre(cylinder_volume + ball_volume, density, np.array([radial, radial, axial]))


def _beta(x: float, y: float) -> float:
    return math.exp(math.lgamma(x) + math.lgamma(y) - math.lgamma(x + y))


def superellipsoid_moment(p: int, q: int, s: int, e1: float, e2: float) -> float:
    """The integral of u^p v^q w^s (p, q, s even) over the unit superellipsoid
    (|u|^(2/e2) + |v|^(2/e2))^(e2/e1) + |w|^(2/e1) <= 1.

    A slice at height w is the superellipse |u|^(2/e2) + |v|^(2/e2) <= rho^(2/e2) with
    rho = (1 - |w|^(2/e1))^(e1/2). Over the slice, substituting U = u^(2/e2), V = v^(2/e2) turns
    the integral into Dirichlet's: (e2/2)^2 rho^(p+q+2) G(a) G(b) / G(a+b+1) with
    a = (p+1) e2/2, b = (q+1) e2/2. Over w, W = w^(2/e1) gives (e1/2) B((s+1) e1/2, (p+q+2) e1/2 + 1).
    Times 8 octants: e1 e2^2 B(a, b) / (a + b) B((s+1) e1/2, (p+q+2) e1/2 + 1).
    """
    a, b = (p + 1) * e2 / 2.0, (q + 1) * e2 / 2.0
    return e1 * e2 * e2 * _beta(a, b) / (a + b) * _beta((s + 1) * e1 / 2.0, (p + q + 2) * e1 / 2.0 + 1.0)


def superellipsoid(semi_axes, exponents, density) -> MassProperties:
    """Barr's superellipsoid (|x/a|^(2/e2) + |y/b|^(2/e2))^(e2/e1) + |z/c|^(2/e1) <= 1.

    The volume equals the book's 2 a b c e1 e2 B(e1/2 + 1, e1) B(e2/2, e2/2).
    """
    a, b, c = semi_axes
    e1, e2 = exponents
    scale = a * b * c
    volume = scale * superellipsoid_moment(0, 0, 0, e1, e2)
    second = scale * np.array([a * a * superellipsoid_moment(2, 0, 0, e1, e2),
                               b * b * superellipsoid_moment(0, 2, 0, e1, e2),
                               c * c * superellipsoid_moment(0, 0, 2, e1, e2)])
    return _about_centre(volume, density, second)


def _face_integrals(w0, w1, w2):
    """Eberly's subexpressions of one coordinate over each triangle (arrays over the faces)."""
    temp0 = w0 + w1
    f1 = temp0 + w2
    temp1 = w0 * w0
    temp2 = temp1 + w1 * temp0
    f2 = temp2 + w2 * f1
    f3 = w0 * temp1 + w1 * temp2 + w2 * f2
    g0 = f2 + w0 * (f1 + w0)
    g1 = f2 + w1 * (f1 + w1)
    g2 = f2 + w2 * (f1 + w2)
    return f1, f2, f3, g0, g1, g2


def polyhedron(vertices, faces, density) -> MassProperties:
    """A closed polyhedron given by outward counter-clockwise triangles of ``vertices``.

    The divergence theorem turns each volume integral of 1, x, y, z, x^2, y^2, z^2, xy, yz, zx into
    a sum over the triangles of polynomials in their corners (Eberly's closed forms). The
    integrals are taken about the vertices' centroid, where rounding is smallest, then moved.
    """
    vertices = np.asarray(vertices, dtype=np.float64)
    origin = vertices.mean(axis=0)
    p0, p1, p2 = (vertices[faces[:, k]] - origin for k in range(3))
    d = np.cross(p1 - p0, p2 - p0)  # twice the area times the unit normal
    fx, fy, fz = (_face_integrals(p0[:, k], p1[:, k], p2[:, k]) for k in range(3))
    x, y, z = (np.stack([p0[:, k], p1[:, k], p2[:, k]]) for k in range(3))
    volume = np.sum(d[:, 0] * fx[0]) / 6.0
    first = np.array([np.sum(d[:, 0] * fx[1]), np.sum(d[:, 1] * fy[1]), np.sum(d[:, 2] * fz[1])]) / 24.0
    second = np.array([np.sum(d[:, 0] * fx[2]), np.sum(d[:, 1] * fy[2]), np.sum(d[:, 2] * fz[2])]) / 60.0
    xy = np.sum(d[:, 0] * (y[0] * fx[3] + y[1] * fx[4] + y[2] * fx[5])) / 120.0
    yz = np.sum(d[:, 1] * (z[0] * fy[3] + z[1] * fy[4] + z[2] * fy[5])) / 120.0
    zx = np.sum(d[:, 2] * (x[0] * fz[3] + x[1] * fz[4] + x[2] * fz[5])) / 120.0
    products = np.array([[second[0], xy, zx], [xy, second[1], yz], [zx, yz, second[2]]])
    return _principal(volume, first, products, density, origin)


def star_shaped(radius, density, finest_angle) -> MassProperties:
    """A solid star-shaped about its frame's origin, whose surface lies at radius(u_x, u_y, u_z) along
    the unit direction u (a numpy function of arrays).

    Each volume integral becomes one over the sphere of directions: the integral of 1, x and x x^T
    over the solid is that of r^3/3, r^4/4 u and r^5/5 u u^T over directions. The sphere is sampled
    with Gauss-Legendre nodes in u_z and equal steps in longitude (exact for trigonometric
    polynomials); ``finest_angle`` (radians), the narrowest feature of the surface, sets how many,
    so that at least six rows of nodes fall across it.
    """
    rows = max(64, int(math.ceil(6.0 * math.pi / finest_angle)))
    nodes, weights = np.polynomial.legendre.leggauss(rows)
    longitude = (np.arange(2 * rows) + 0.5) * (math.pi / rows)
    uz = np.repeat(nodes, 2 * rows)
    ring = np.sqrt(1.0 - uz * uz)
    ux, uy = ring * np.tile(np.cos(longitude), rows), ring * np.tile(np.sin(longitude), rows)
    w = np.repeat(weights, 2 * rows) * (math.pi / rows)  # weights in u_z times the longitude step
    r = radius(ux, uy, uz)
    r3 = w * r ** 3
    u = np.stack([ux, uy, uz])
    volume = float(np.sum(r3)) / 3.0
    first = u @ (r3 * r) / 4.0
    products = (u * (r3 * r * r)) @ u.T / 5.0
    return _principal(volume, first, products, density, np.zeros(3))


def _principal(volume, first, products, density, origin) -> MassProperties:
    """Mass properties from the integrals of 1, x and x x^T over a solid, taken about ``origin``."""
    centre = first / volume
    # second moments about the centre of mass: the parallel-axis shift of each product
    products = products - np.outer(centre, centre) * volume
    tensor = density * (np.trace(products) * np.eye(3) - products)
    moments, axes = np.linalg.eigh(tensor)
    if np.linalg.det(axes) < 0.0:  # a right-handed frame
        axes[:, 2] = -axes[:, 2]
    return MassProperties(float(volume), density * float(volume), centre + origin, moments, axes)
