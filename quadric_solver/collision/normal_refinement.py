"""Normal refinement: Newton on the unit sphere for the signed distance of two convex shapes.

The signed distance (negative: penetration depth) is the maximum over unit n of the gap

    g(n) = -h_A(n) - h_B(-n) = -n.x(n),   x(n) = s_A(n) - s_B(-n),

where x(n) is the Minkowski difference's support point, which is also the gradient of n.x(n) in
space. On the sphere g's gradient is minus the tangential part of x, and its Hessian is
-(P H P - n.x I), H being the derivative of x(n) (the radii of curvature of C = A - B). GJK and EPA
end on polytope approximations of curved surfaces; a few Newton steps from their normal bring the
gap to rounding error where the boundary is smooth. H is in closed form where both shapes are
smooth (support_curvature: it comes with each support point, so a step costs one evaluation of
x instead of three), and from finite differences of x along two tangents otherwise. Every step
must raise g (which any n bounds from below), so the refinement never makes an answer worse, and
it stops where x(n) is not smooth enough to help (flat faces, edges and vertices, where GJK and
EPA are exact).
"""
import numpy as np
from numba import njit

from ..math3d import JIT, mat_t_vec, orthonormal_basis
from ..shapes.support import smooth_kind, support_curvature
from .gjk import support_posed

MAX_ITERATIONS = 16
DIFFERENCE_STEP = 1e-7  # radians: the finite-difference Hessian's truncation and rounding errors balance near here
MAX_HALVINGS = 8
ROUNDING = 4.0 * np.finfo(np.float64).eps  # the error of n.x(n) relative to the size of the points in it
TURN = 1e-6  # radians: with ``close``, the steps also stop once the model's step to the optimum is below this


@njit(**JIT)
def minkowski_support(kinds, params, hull_vertices, positions, rotations, nx, ny, nz):
    """x(n) = s_A(n) - s_B(-n)."""
    ax, ay, az = support_posed(kinds[0], params[0], hull_vertices, positions[0], rotations[0], nx, ny, nz)
    bx, by, bz = support_posed(kinds[1], params[1], hull_vertices, positions[1], rotations[1], -nx, -ny, -nz)
    return ax - bx, ay - by, az - bz


@njit(**JIT, inline="always")
def _posed_curvature(kind, params, position, rotation, dx, dy, dz, t1x, t1y, t1z, t2x, t2y, t2z):
    """Support point in world coordinates along d, and the Hessian of the support function there as a
    quadratic form on the world tangents t1 and t2: (x, y, z, h11, h12, h22)."""
    # the direction and the tangents in the body's frame
    lx, ly, lz = mat_t_vec(rotation, dx, dy, dz)
    ax, ay, az = mat_t_vec(rotation, t1x, t1y, t1z)
    bx, by, bz = mat_t_vec(rotation, t2x, t2y, t2z)
    px, py, pz, hxx, hxy, hxz, hyy, hyz, hzz = support_curvature(kind, params, lx, ly, lz)
    # H a and H b
    hax, hay, haz = hxx * ax + hxy * ay + hxz * az, hxy * ax + hyy * ay + hyz * az, hxz * ax + hyz * ay + hzz * az
    hbx, hby, hbz = hxx * bx + hxy * by + hxz * bz, hxy * bx + hyy * by + hyz * bz, hxz * bx + hyz * by + hzz * bz
    return (position[0] + rotation[0, 0] * px + rotation[0, 1] * py + rotation[0, 2] * pz,
            position[1] + rotation[1, 0] * px + rotation[1, 1] * py + rotation[1, 2] * pz,
            position[2] + rotation[2, 0] * px + rotation[2, 1] * py + rotation[2, 2] * pz,
            ax * hax + ay * hay + az * haz, ax * hbx + ay * hby + az * hbz, bx * hbx + by * hby + bz * hbz)


@njit(**JIT)
def minkowski_curvature(kinds, params, positions, rotations, nx, ny, nz):
    """x(n) = s_A(n) - s_B(-n) of two smooth kinds, and the tangential Hessian of h_C there: (x, y, z, h11, h12,
    h22) on the tangents orthonormal_basis(n) gives, in closed form (support_curvature).

    dx/dn is the sum of both support functions' Hessians (B's at -n): the curvatures of A - B add.
    """
    t1x, t1y, t1z, t2x, t2y, t2z = orthonormal_basis(nx, ny, nz)
    ax, ay, az, a11, a12, a22 = _posed_curvature(kinds[0], params[0], positions[0], rotations[0], nx, ny, nz,
                                                 t1x, t1y, t1z, t2x, t2y, t2z)
    bx, by, bz, b11, b12, b22 = _posed_curvature(kinds[1], params[1], positions[1], rotations[1], -nx, -ny, -nz,
                                                 t1x, t1y, t1z, t2x, t2y, t2z)
    return ax - bx, ay - by, az - bz, a11 + b11, a12 + b12, a22 + b22


@njit(**JIT, inline="always")
def _tangential(nx, ny, nz, xx, xy, xz):
    """|x - (n.x) n|: the length of h_C's gradient on the sphere."""
    along = nx * xx + ny * xy + nz * xz
    x, y, z = xx - along * nx, xy - along * ny, xz - along * nz
    return np.sqrt(x * x + y * y + z * z)


@njit(**JIT, inline="always")
def _tilted(nx, ny, nz, t1x, t1y, t1z, t2x, t2y, t2z, u, v):
    """normalize(n + u t1 + v t2)."""
    x, y, z = nx + u * t1x + v * t2x, ny + u * t1y + v * t2y, nz + u * t1z + v * t2z
    norm = np.sqrt(x * x + y * y + z * z)
    return x / norm, y / norm, z / norm


@njit(**JIT)
def refine_normal(kinds, params, hull_vertices, positions, rotations, nx, ny, nz, scale, stop=1e-15,
                  iterations=MAX_ITERATIONS, close=0.0):
    """Raise the gap g(n) from the unit normal n by safeguarded Newton steps on the sphere.

    ``scale`` is the pair's size: the steps stop once the gradient is below ``stop`` times it, once the
    closed-form model predicts that the gap can rise by no more than ``close`` times it and the normal turn
    by no more than TURN, or after ``iterations`` steps. Returns (gap, nx, ny, nz, gradient, rise): the
    gradient's length there tells a smooth optimum (rounding error) from a crease or kink; ``rise`` is
    that prediction of the gap's remaining rise, the Newton decrement r^T J^-1 r / 2 (infinite without a
    closed-form Hessian or where the model is not convex). Rounded faces pressed together converge only
    linearly (h_C grows as |angle|^p, 1 < p < 2, about their normal), and there it overstates the rise
    p / (2 (p - 1)) times.
    """
    # both smooth: the Hessian in closed form with each support point; otherwise from differences
    closed_form = smooth_kind(kinds[0]) and smooth_kind(kinds[1])
    h11, h12, h22 = 0.0, 0.0, 0.0
    if closed_form:
        xx, xy, xz, h11, h12, h22 = minkowski_curvature(kinds, params, positions, rotations, nx, ny, nz)
    else:
        xx, xy, xz = minkowski_support(kinds, params, hull_vertices, positions, rotations, nx, ny, nz)
    phi = nx * xx + ny * xy + nz * xz  # h_C(n) = -g(n), to be lowered
    gradient = _tangential(nx, ny, nz, xx, xy, xz)
    # x is a difference of points about this far from the origin: the size of its rounding error
    magnitude = scale + np.sqrt(positions[0, 0] ** 2 + positions[0, 1] ** 2 + positions[0, 2] ** 2) + np.sqrt(
        positions[1, 0] ** 2 + positions[1, 1] ** 2 + positions[1, 2] ** 2)
    rise = np.inf
    # the last pass only measures the prediction at the answer
    for step in range(iterations + 1):
        if gradient <= stop * scale or (step == iterations and not closed_form):
            break
        t1x, t1y, t1z, t2x, t2y, t2z = orthonormal_basis(nx, ny, nz)
        r1 = t1x * xx + t1y * xy + t1z * xz
        r2 = t2x * xx + t2y * xy + t2z * xz
        if not closed_form:
            # the tangential Hessian of h_C from differences of x along t1 and t2
            px, py, pz = _tilted(nx, ny, nz, t1x, t1y, t1z, t2x, t2y, t2z, DIFFERENCE_STEP, 0.0)
            ux, uy, uz = minkowski_support(kinds, params, hull_vertices, positions, rotations, px, py, pz)
            px, py, pz = _tilted(nx, ny, nz, t1x, t1y, t1z, t2x, t2y, t2z, 0.0, DIFFERENCE_STEP)
            vx, vy, vz = minkowski_support(kinds, params, hull_vertices, positions, rotations, px, py, pz)
            h11 = (t1x * ux + t1y * uy + t1z * uz - r1) / DIFFERENCE_STEP
            h12 = 0.5 * ((t1x * vx + t1y * vy + t1z * vz - r1)
                         + (t2x * ux + t2y * uy + t2z * uz - r2)) / DIFFERENCE_STEP
            h22 = (t2x * vx + t2y * vy + t2z * vz - r2) / DIFFERENCE_STEP
        j11, j12, j22 = h11 - phi, h12, h22 - phi
        # shift to positive definite where the model is not (then the step is a scaled descent step)
        trace, det = j11 + j22, j11 * j22 - j12 * j12
        smallest = 0.5 * trace - np.sqrt(max(0.25 * trace * trace - det, 0.0))
        floor = 1e-3 * max(abs(phi), 1e-6 * scale)
        convex = smallest >= floor
        if not convex:
            j11 += floor - smallest
            j22 += floor - smallest
            det = j11 * j22 - j12 * j12
        du = -(j22 * r1 - j12 * r2) / det
        dv = -(j11 * r2 - j12 * r1) / det
        if closed_form and convex:
            rise = -0.5 * (du * r1 + dv * r2)
            if rise <= close * scale and du * du + dv * dv <= TURN * TURN:
                break
        if step == iterations:
            break
        # a step is taken if it lowers h_C, or, once h_C is flat to rounding (its change then is the
        # gradient squared, below a double's resolution), if it halves the gradient and raises h_C by
        # no more than rounding
        slack = ROUNDING * magnitude
        accepted = False
        for _ in range(MAX_HALVINGS):
            px, py, pz = _tilted(nx, ny, nz, t1x, t1y, t1z, t2x, t2y, t2z, du, dv)
            if closed_form:
                qx, qy, qz, g11, g12, g22 = minkowski_curvature(kinds, params, positions, rotations, px, py, pz)
            else:
                qx, qy, qz = minkowski_support(kinds, params, hull_vertices, positions, rotations, px, py, pz)
                g11, g12, g22 = 0.0, 0.0, 0.0
            trial = px * qx + py * qy + pz * qz
            trial_gradient = _tangential(px, py, pz, qx, qy, qz)
            if trial < phi or (trial <= phi + slack and trial_gradient < 0.5 * gradient):
                if trial_gradient > 0.5 * gradient:
                    # slow progress: the step overshot a kink-like optimum (about a boxy face's centre h_C grows
                    # as |angle|^p with p < 2, where Newton's step lands at -(2 - p)/(p - 1) times the start);
                    # half the step lands near it
                    hx, hy, hz = _tilted(nx, ny, nz, t1x, t1y, t1z, t2x, t2y, t2z, 0.5 * du, 0.5 * dv)
                    if closed_form:
                        sx, sy, sz, k11, k12, k22 = minkowski_curvature(kinds, params, positions, rotations,
                                                                        hx, hy, hz)
                    else:
                        sx, sy, sz = minkowski_support(kinds, params, hull_vertices, positions, rotations,
                                                       hx, hy, hz)
                        k11, k12, k22 = 0.0, 0.0, 0.0
                    half = hx * sx + hy * sy + hz * sz
                    if half < trial:
                        px, py, pz, qx, qy, qz, trial = hx, hy, hz, sx, sy, sz, half
                        g11, g12, g22 = k11, k12, k22
                        trial_gradient = _tangential(px, py, pz, qx, qy, qz)
                nx, ny, nz, xx, xy, xz, phi, gradient = px, py, pz, qx, qy, qz, trial, trial_gradient
                h11, h12, h22 = g11, g12, g22
                rise = np.inf
                accepted = True
                break
            du, dv = 0.5 * du, 0.5 * dv
        if not accepted or du * du + dv * dv <= 1e-30:
            break
    return -phi, nx, ny, nz, gradient, rise
