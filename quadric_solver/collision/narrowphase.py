"""Narrow phase: exact contact geometry of ellipsoids against ellipsoids and static quadrics.

Signed depth convention: positive = penetration, negative = separation distance.
Contact normals point from the first shape (A) to the second (B); for static
colliders A is the collider, so the normal points into the body's side.

Ellipsoid k has centre c_k, rotation R_k, semi-axes a_k and shape matrix
M_k = R_k diag(a_k^2) R_k^T; its support function is c_k.n + sqrt(n^T M_k n).
The signed depth of a pair is

    depth = min over unit n of  sqrt(n^T M_A n) + sqrt(n^T M_B n) - (c_B - c_A).n

which is the minimum translation distance when they overlap and minus the
Euclidean distance when they are apart. Its minimiser is the common normal: the
support points of A along n and of B along -n are joined by a vector parallel to
n. We find it by Riemannian Newton on the unit sphere, warm-started from the
previous step's normal; cold pairs start from the centre line and the principal
axes of both bodies and keep the best (the function can have several local
minima for deep crossings of long ellipsoids).
"""
import numpy as np
from numba import njit

from ..math3d import JIT, orthonormal_basis

NEWTON_MAX_ITERATIONS = 40
NEWTON_STEP_TOLERANCE = 1e-14
# a full Newton step this short leaves an error of order its square: stop after it. On the 10,000
# reference pairs the normal is then within 3e-7 and the depth within 3e-13 of the smaller
# semi-axis (the issue asks for 1e-6); a moving contact warm-started from the last substep
# needs one Newton iteration less than with 1e-5 (a quarter less narrow-phase time in a settling pile)
NEWTON_CONVERGED_STEP = 3e-4


@njit(**JIT, inline="always")
def shape_matrix(rotation, semi_axes, out):
    """out = R diag(a^2) R^T."""
    for r in range(3):
        for c in range(3):
            out[r, c] = (rotation[r, 0] * rotation[c, 0] * semi_axes[0] ** 2
                         + rotation[r, 1] * rotation[c, 1] * semi_axes[1] ** 2
                         + rotation[r, 2] * rotation[c, 2] * semi_axes[2] ** 2)


@njit(**JIT, inline="always")
def sym_at(stack, i):
    """Shape matrix i of an (N, 3, 3) stack as its six entries (m00, m01, m02, m11, m12, m22).

    Hot loops pass matrices as these scalars rather than as views like
    stack[i]: numba reference-counts views, with atomic updates that the
    threads contend for.
    """
    return stack[i, 0, 0], stack[i, 0, 1], stack[i, 0, 2], stack[i, 1, 1], stack[i, 1, 2], stack[i, 2, 2]


@njit(**JIT, inline="always")
def sym_of(m):
    """A symmetric 3x3 array as the six entries of sym_at."""
    return m[0, 0], m[0, 1], m[0, 2], m[1, 1], m[1, 2], m[2, 2]


@njit(**JIT, inline="always")
def quadratic_form(m, x, y, z):
    """M n and sqrt(n'M n) for a symmetric M given as its six entries."""
    m00, m01, m02, m11, m12, m22 = m
    mx = m00 * x + m01 * y + m02 * z
    my = m01 * x + m11 * y + m12 * z
    mz = m02 * x + m12 * y + m22 * z
    return mx, my, mz, np.sqrt(max(x * mx + y * my + z * mz, 1e-300))


@njit(**JIT, inline="always")
def _tangent_forms(m, t1x, t1y, t1z, t2x, t2y, t2z):
    """t1'M t1, t2'M t2 and t1'M t2 for a symmetric M given as its six entries."""
    m1x, m1y, m1z, _ = quadratic_form(m, t1x, t1y, t1z)
    m2x, m2y, m2z, _ = quadratic_form(m, t2x, t2y, t2z)
    return (t1x * m1x + t1y * m1y + t1z * m1z, t2x * m2x + t2y * m2y + t2z * m2z,
            t1x * m2x + t1y * m2y + t1z * m2z)


@njit(**JIT)
def width_gap(ma, mb, dx, dy, dz, nx, ny, nz):
    """sqrt(n'M_A n) + sqrt(n'M_B n) - d.n for a unit n (shape matrices as six entries, d = c_B - c_A).

    The width gap along any unit direction bounds the signed depth from above (cheap rejection).
    """
    _, _, _, sa = quadratic_form(ma, nx, ny, nz)
    _, _, _, sb = quadratic_form(mb, nx, ny, nz)
    return sa + sb - (dx * nx + dy * ny + dz * nz)


@njit(**JIT)
def minimise_width_gap_supports(ma, mb, dx, dy, dz, nx, ny, nz):
    """Minimise the width gap over the unit sphere from n (shape matrices as six entries, see sym_at).

    Returns (depth, nx, ny, nz, ax, ay, az, bx, by, bz): the minimum, its unit
    normal, and the support offsets M_A n / sqrt(n'M_A n) and M_B n / sqrt(n'M_B n)
    at it (the contact's support points are c_A + offset_A and c_B - offset_B).
    Each trial normal's matrix products serve its width gap, the next
    iteration's gradient and Hessian and the support points, computed once.
    """
    max_, may_, maz_, sa = quadratic_form(ma, nx, ny, nz)
    mbx, mby, mbz, sb = quadratic_form(mb, nx, ny, nz)
    f = sa + sb - (dx * nx + dy * ny + dz * nz)
    for _ in range(NEWTON_MAX_ITERATIONS):
        gx = max_ / sa + mbx / sb - dx
        gy = may_ / sa + mby / sb - dy
        gz = maz_ / sa + mbz / sb - dz
        t1x, t1y, t1z, t2x, t2y, t2z = orthonormal_basis(nx, ny, nz)
        g1 = gx * t1x + gy * t1y + gz * t1z
        g2 = gx * t2x + gy * t2y + gz * t2z
        # tangent-plane Hessian: t_i' H t_j - f delta_ij, with
        # H = (M_A - M_A n n' M_A / s_A^2) / s_A + (same for B)
        a1 = (max_ * t1x + may_ * t1y + maz_ * t1z) / sa
        a2 = (max_ * t2x + may_ * t2y + maz_ * t2z) / sa
        b1 = (mbx * t1x + mby * t1y + mbz * t1z) / sb
        b2 = (mbx * t2x + mby * t2y + mbz * t2z) / sb
        ma11, ma22, ma12 = _tangent_forms(ma, t1x, t1y, t1z, t2x, t2y, t2z)
        mb11, mb22, mb12 = _tangent_forms(mb, t1x, t1y, t1z, t2x, t2y, t2z)
        h11 = (ma11 - a1 * a1) / sa + (mb11 - b1 * b1) / sb - f
        h22 = (ma22 - a2 * a2) / sa + (mb22 - b2 * b2) / sb - f
        h12 = (ma12 - a1 * a2) / sa + (mb12 - b1 * b2) / sb
        # Levenberg shift keeps the step a descent direction where the Hessian is indefinite
        trace = h11 + h22
        disc = np.sqrt(max(0.25 * (h11 - h22) ** 2 + h12 * h12, 0.0))
        lowest = 0.5 * trace - disc
        shift = 0.0
        if lowest <= 1e-9 * (abs(trace) + 1e-300):
            shift = -lowest + 1e-6 * (abs(h11) + abs(h22)) + 1e-12 * (sa + sb)
        h11s = h11 + shift
        h22s = h22 + shift
        det = h11s * h22s - h12 * h12
        s1 = -(h22s * g1 - h12 * g2) / det
        s2 = -(-h12 * g1 + h11s * g2) / det
        length = np.sqrt(s1 * s1 + s2 * s2)
        if length < NEWTON_STEP_TOLERANCE:
            break
        full_newton = shift == 0.0 and length <= 0.5
        if length > 0.5:
            s1 *= 0.5 / length
            s2 *= 0.5 / length
            length = 0.5
        # accept any decrease, up to the round-off of f itself
        allowance = 4e-16 * (sa + sb + abs(dx) + abs(dy) + abs(dz))
        accepted = False
        halvings = 0
        # at convergence the step is below round-off of f: one trial, no halving search
        trials = 1 if full_newton and length < NEWTON_CONVERGED_STEP else 40
        for halvings in range(trials):
            cx = nx + s1 * t1x + s2 * t2x
            cy = ny + s1 * t1y + s2 * t2y
            cz = nz + s1 * t1z + s2 * t2z
            cn = np.sqrt(cx * cx + cy * cy + cz * cz)
            cx /= cn
            cy /= cn
            cz /= cn
            qax, qay, qaz, qa = quadratic_form(ma, cx, cy, cz)
            qbx, qby, qbz, qb = quadratic_form(mb, cx, cy, cz)
            fc = qa + qb - (dx * cx + dy * cy + dz * cz)
            if fc <= f + allowance:
                accepted = True
                break
            s1 *= 0.5
            s2 *= 0.5
            length *= 0.5
        if not accepted:
            break
        nx, ny, nz, f = cx, cy, cz, fc
        max_, may_, maz_, sa = qax, qay, qaz, qa
        mbx, mby, mbz, sb = qbx, qby, qbz, qb
        # Newton converges quadratically: after a full step this short, the next would be below round-off
        if full_newton and halvings == 0 and length < NEWTON_CONVERGED_STEP:
            break
    return f, nx, ny, nz, max_ / sa, may_ / sa, maz_ / sa, mbx / sb, mby / sb, mbz / sb


@njit(**JIT)
def minimise_width_gap(ma, mb, dx, dy, dz, nx, ny, nz):
    """Minimise the width gap over the unit sphere from n; return (depth, nx, ny, nz)."""
    f, nx, ny, nz, _, _, _, _, _, _ = minimise_width_gap_supports(ma, mb, dx, dy, dz, nx, ny, nz)
    return f, nx, ny, nz


@njit(**JIT)
def ellipsoid_ellipsoid_depth(ca, ma, ra, cb, mb, rb, warm_normal, out_normal):
    """Signed depth and normal (A to B) of two ellipsoids: centres, shape matrices, rotations.

    ``warm_normal`` is the previous step's normal, or zeros for a cold start.
    Returns the depth; writes the unit normal into out_normal.
    """
    ma = sym_of(ma)
    mb = sym_of(mb)
    dx = cb[0] - ca[0]
    dy = cb[1] - ca[1]
    dz = cb[2] - ca[2]
    warm = warm_normal[0] ** 2 + warm_normal[1] ** 2 + warm_normal[2] ** 2
    if warm > 0.5:
        best, bx, by, bz = minimise_width_gap(ma, mb, dx, dy, dz, warm_normal[0], warm_normal[1], warm_normal[2])
    else:
        dn = np.sqrt(dx * dx + dy * dy + dz * dz)
        if dn > 0.0:
            best, bx, by, bz = minimise_width_gap(ma, mb, dx, dy, dz, dx / dn, dy / dn, dz / dn)
        else:
            best, bx, by, bz = minimise_width_gap(ma, mb, dx, dy, dz, 0.0, 0.0, 1.0)
        # A minimum with negative depth (apart) is global: then -depth is a concave function's
        # local maximum over the unit ball. Overlaps can have several local minima (deep
        # crossings of long ellipsoids), so also start from the principal axes of both bodies.
        if best >= 0.0:
            for which in range(2):
                rot = ra if which == 0 else rb
                for axis in range(3):
                    ex = rot[0, axis]
                    ey = rot[1, axis]
                    ez = rot[2, axis]
                    if ex * dx + ey * dy + ez * dz < 0.0:
                        ex, ey, ez = -ex, -ey, -ez
                    f, nx, ny, nz = minimise_width_gap(ma, mb, dx, dy, dz, ex, ey, ez)
                    if f < best:
                        best, bx, by, bz = f, nx, ny, nz
    out_normal[0] = bx
    out_normal[1] = by
    out_normal[2] = bz
    return best


@njit(**JIT)
def support_point(center, m, nx, ny, nz, sign):
    """Point of the ellipsoid furthest along sign * n (m: its shape matrix as a 3x3 array)."""
    mx, my, mz, s = quadratic_form(sym_of(m), nx, ny, nz)
    return (center[0] + sign * mx / s, center[1] + sign * my / s, center[2] + sign * mz / s)


@njit(**JIT)
def ellipsoid_plane_depth(center, m, point, normal):
    """Signed depth of an ellipsoid against a plane whose ``normal`` points into free space."""
    return plane_depth(sym_of(m), center[0] - point[0], center[1] - point[1], center[2] - point[2],
                       normal[0], normal[1], normal[2])


@njit(**JIT, inline="always")
def plane_depth(m, rx, ry, rz, nx, ny, nz):
    """ellipsoid_plane_depth for a shape matrix as six entries whose centre is r from a point of the plane."""
    _, _, _, s = quadratic_form(m, nx, ny, nz)
    return s - (rx * nx + ry * ny + rz * nz)


@njit(**JIT)
def _tube_reach(center, m, tube_center, ux, uy, uz, e1, e2, phi):
    """Distance from the tube axis of the ellipsoid's support point along the radial direction at angle phi."""
    c = np.cos(phi)
    s = np.sin(phi)
    px, py, pz = support_point(center, m, c * e1[0] + s * e2[0], c * e1[1] + s * e2[1], c * e1[2] + s * e2[2], 1.0)
    qx = px - tube_center[0]
    qy = py - tube_center[1]
    qz = pz - tube_center[2]
    a = qx * ux + qy * uy + qz * uz
    return np.sqrt((qx - a * ux) ** 2 + (qy - a * uy) ** 2 + (qz - a * uz) ** 2)


@njit(**JIT)
def ellipsoid_tube_depth(center, m, tube_center, axis, radius, out_point, out_normal):
    """Signed depth of an ellipsoid against the inner wall of an infinite tube.

    The deepest point maximises the distance from the axis; there the surface
    normal is radial, so it is the support point along a radial direction w(phi)
    (phi: angle around the axis). We maximise that distance over phi: a few
    fixed-point steps (w <- radial direction of the support point, a
    contraction by about semi-axis / radius) to get close, then Newton on phi
    with central differences, which converges even where the contraction is
    slow (a body near the axis). Writes the deepest point and the normal
    (pointing from the wall toward the axis). Returns the depth.
    """
    ux, uy, uz = axis[0], axis[1], axis[2]
    e1x, e1y, e1z, e2x, e2y, e2z = orthonormal_basis(ux, uy, uz)
    e1 = (e1x, e1y, e1z)
    e2 = (e2x, e2y, e2z)
    rx = center[0] - tube_center[0]
    ry = center[1] - tube_center[1]
    rz = center[2] - tube_center[2]
    phi = np.arctan2(rx * e2x + ry * e2y + rz * e2z, rx * e1x + ry * e1y + rz * e1z)
    for _ in range(8):
        c = np.cos(phi)
        s = np.sin(phi)
        px, py, pz = support_point(center, m, c * e1x + s * e2x, c * e1y + s * e2y, c * e1z + s * e2z, 1.0)
        qx = px - tube_center[0]
        qy = py - tube_center[1]
        qz = pz - tube_center[2]
        phi = np.arctan2(qx * e2x + qy * e2y + qz * e2z, qx * e1x + qy * e1y + qz * e1z)
    best = _tube_reach(center, m, tube_center, ux, uy, uz, e1, e2, phi)
    delta = 1e-5
    for _ in range(30):
        plus = _tube_reach(center, m, tube_center, ux, uy, uz, e1, e2, phi + delta)
        minus = _tube_reach(center, m, tube_center, ux, uy, uz, e1, e2, phi - delta)
        slope = (plus - minus) / (2.0 * delta)
        curvature = (plus - 2.0 * best + minus) / (delta * delta)
        if curvature < 0.0:
            step = -slope / curvature
        else:
            step = slope / (abs(best) + 1e-300)  # not concave here: climb
        step = min(max(step, -0.5), 0.5)
        improved = False
        for _ in range(30):
            trial = _tube_reach(center, m, tube_center, ux, uy, uz, e1, e2, phi + step)
            if trial >= best:
                improved = True
                break
            step *= 0.5
        if not improved:
            break
        phi += step
        best = trial
        if abs(step) < 1e-13:
            break
    c = np.cos(phi)
    s = np.sin(phi)
    wx = c * e1x + s * e2x
    wy = c * e1y + s * e2y
    wz = c * e1z + s * e2z
    px, py, pz = support_point(center, m, wx, wy, wz, 1.0)
    out_point[0] = px
    out_point[1] = py
    out_point[2] = pz
    out_normal[0] = -wx
    out_normal[1] = -wy
    out_normal[2] = -wz
    return best - radius


# ---------------------------------------------------------------- pre-tests
@njit(**JIT)
def boxes_overlap(rotation, i, j, dx, dy, dz, ha, hb):
    """Separating-axis test of two oriented boxes: bodies i and j of a rotation stack (columns as axes),
    centre offset d = c_j - c_i, half sizes ha and hb (3-tuples)."""
    # the boxes' axes (rotation columns), then B's axes and the centre offset in A's frame
    ux0, uy0, uz0 = rotation[i, 0, 0], rotation[i, 1, 0], rotation[i, 2, 0]
    ux1, uy1, uz1 = rotation[i, 0, 1], rotation[i, 1, 1], rotation[i, 2, 1]
    ux2, uy2, uz2 = rotation[i, 0, 2], rotation[i, 1, 2], rotation[i, 2, 2]
    vx0, vy0, vz0 = rotation[j, 0, 0], rotation[j, 1, 0], rotation[j, 2, 0]
    vx1, vy1, vz1 = rotation[j, 0, 1], rotation[j, 1, 1], rotation[j, 2, 1]
    vx2, vy2, vz2 = rotation[j, 0, 2], rotation[j, 1, 2], rotation[j, 2, 2]
    r00 = ux0 * vx0 + uy0 * vy0 + uz0 * vz0
    r01 = ux0 * vx1 + uy0 * vy1 + uz0 * vz1
    r02 = ux0 * vx2 + uy0 * vy2 + uz0 * vz2
    r10 = ux1 * vx0 + uy1 * vy0 + uz1 * vz0
    r11 = ux1 * vx1 + uy1 * vy1 + uz1 * vz1
    r12 = ux1 * vx2 + uy1 * vy2 + uz1 * vz2
    r20 = ux2 * vx0 + uy2 * vy0 + uz2 * vz0
    r21 = ux2 * vx1 + uy2 * vy1 + uz2 * vz1
    r22 = ux2 * vx2 + uy2 * vy2 + uz2 * vz2
    eps = 1e-12
    a00, a01, a02 = abs(r00) + eps, abs(r01) + eps, abs(r02) + eps
    a10, a11, a12 = abs(r10) + eps, abs(r11) + eps, abs(r12) + eps
    a20, a21, a22 = abs(r20) + eps, abs(r21) + eps, abs(r22) + eps
    t0 = dx * ux0 + dy * uy0 + dz * uz0
    t1 = dx * ux1 + dy * uy1 + dz * uz1
    t2 = dx * ux2 + dy * uy2 + dz * uz2
    a0, a1, a2 = ha
    b0, b1, b2 = hb
    # A's face axes
    if abs(t0) > a0 + b0 * a00 + b1 * a01 + b2 * a02:
        return False
    if abs(t1) > a1 + b0 * a10 + b1 * a11 + b2 * a12:
        return False
    if abs(t2) > a2 + b0 * a20 + b1 * a21 + b2 * a22:
        return False
    # B's face axes
    if abs(t0 * r00 + t1 * r10 + t2 * r20) > a0 * a00 + a1 * a10 + a2 * a20 + b0:
        return False
    if abs(t0 * r01 + t1 * r11 + t2 * r21) > a0 * a01 + a1 * a11 + a2 * a21 + b1:
        return False
    if abs(t0 * r02 + t1 * r12 + t2 * r22) > a0 * a02 + a1 * a12 + a2 * a22 + b2:
        return False
    # edge-edge axes A_i x B_j
    if abs(t2 * r10 - t1 * r20) > a1 * a20 + a2 * a10 + b1 * a02 + b2 * a01:
        return False
    if abs(t2 * r11 - t1 * r21) > a1 * a21 + a2 * a11 + b0 * a02 + b2 * a00:
        return False
    if abs(t2 * r12 - t1 * r22) > a1 * a22 + a2 * a12 + b0 * a01 + b1 * a00:
        return False
    if abs(t0 * r20 - t2 * r00) > a0 * a20 + a2 * a00 + b1 * a12 + b2 * a11:
        return False
    if abs(t0 * r21 - t2 * r01) > a0 * a21 + a2 * a01 + b0 * a12 + b2 * a10:
        return False
    if abs(t0 * r22 - t2 * r02) > a0 * a22 + a2 * a02 + b0 * a11 + b1 * a10:
        return False
    if abs(t1 * r00 - t0 * r10) > a0 * a10 + a1 * a00 + b1 * a22 + b2 * a21:
        return False
    if abs(t1 * r01 - t0 * r11) > a0 * a11 + a1 * a01 + b0 * a22 + b2 * a20:
        return False
    if abs(t1 * r02 - t0 * r12) > a0 * a12 + a1 * a02 + b0 * a21 + b1 * a20:
        return False
    return True


@njit(**JIT)
def _quadric_matrix(center, rotation, semi_axes, scale, shift, out):
    """4x4 matrix of the ellipsoid x'Qx - 1 <= 0 in coordinates (x - shift) / scale."""
    for r in range(3):
        for c in range(3):
            out[r, c] = (rotation[r, 0] * rotation[c, 0] / (semi_axes[0] / scale) ** 2
                         + rotation[r, 1] * rotation[c, 1] / (semi_axes[1] / scale) ** 2
                         + rotation[r, 2] * rotation[c, 2] / (semi_axes[2] / scale) ** 2)
    cx = (center[0] - shift[0]) / scale
    cy = (center[1] - shift[1]) / scale
    cz = (center[2] - shift[2]) / scale
    qcx = out[0, 0] * cx + out[0, 1] * cy + out[0, 2] * cz
    qcy = out[1, 0] * cx + out[1, 1] * cy + out[1, 2] * cz
    qcz = out[2, 0] * cx + out[2, 1] * cy + out[2, 2] * cz
    out[0, 3] = out[3, 0] = -qcx
    out[1, 3] = out[3, 1] = -qcy
    out[2, 3] = out[3, 2] = -qcz
    out[3, 3] = cx * qcx + cy * qcy + cz * qcz - 1.0


@njit(**JIT)
def _det4(m):
    s0 = m[0, 0] * m[1, 1] - m[1, 0] * m[0, 1]
    s1 = m[0, 0] * m[1, 2] - m[1, 0] * m[0, 2]
    s2 = m[0, 0] * m[1, 3] - m[1, 0] * m[0, 3]
    s3 = m[0, 1] * m[1, 2] - m[1, 1] * m[0, 2]
    s4 = m[0, 1] * m[1, 3] - m[1, 1] * m[0, 3]
    s5 = m[0, 2] * m[1, 3] - m[1, 2] * m[0, 3]
    c5 = m[2, 2] * m[3, 3] - m[3, 2] * m[2, 3]
    c4 = m[2, 1] * m[3, 3] - m[3, 1] * m[2, 3]
    c3 = m[2, 1] * m[3, 2] - m[3, 1] * m[2, 2]
    c2 = m[2, 0] * m[3, 3] - m[3, 0] * m[2, 3]
    c1 = m[2, 0] * m[3, 2] - m[3, 0] * m[2, 2]
    c0 = m[2, 0] * m[3, 1] - m[3, 0] * m[2, 1]
    return s0 * c5 - s1 * c4 + s2 * c3 + s3 * c2 - s4 * c1 + s5 * c0


@njit(**JIT)
def _positive_root_count(chain, lengths, remainder):
    """Number of distinct real roots in (0, inf) of the polynomial in chain[0] (high to low), by Sturm's theorem.

    chain (degree+1, degree+1) holds the Sturm sequence (row 0 must hold the
    polynomial), lengths (degree+1,) int64 their lengths, remainder a scratch row.
    """
    degree = chain.shape[0] - 1
    lengths[0] = degree + 1
    for k in range(degree):
        chain[1, k] = chain[0, k] * (degree - k)
    lengths[1] = degree
    count = 2
    tolerance = 1e-12
    while lengths[count - 1] > 1 and count <= degree:
        # remainder of chain[count-2] divided by chain[count-1]
        nlen = lengths[count - 2]
        dlen = lengths[count - 1]
        for k in range(nlen):
            remainder[k] = chain[count - 2, k]
        for shift in range(nlen - dlen + 1):
            factor = remainder[shift] / chain[count - 1, 0]
            for k in range(dlen):
                remainder[shift + k] -= factor * chain[count - 1, k]
        size = 0.0
        for k in range(nlen):
            size = max(size, abs(remainder[k]))
        # drop leading zeros of the remainder (relative to the dividend's size)
        start = nlen - dlen + 1
        while start < nlen and abs(remainder[start]) <= tolerance * max(size, 1e-300):
            start += 1
        if start == nlen:
            break  # exact division: repeated roots; the chain ends here
        rlen = nlen - start
        for k in range(rlen):
            chain[count, k] = -remainder[start + k]
        lengths[count] = rlen
        count += 1
    # sign changes at 0 (constant terms) minus sign changes at +inf (leading terms)
    changes = 0
    last_zero = 0.0
    last_infinity = 0.0
    for k in range(count):
        at_zero = chain[k, lengths[k] - 1]
        at_infinity = chain[k, 0]
        if at_zero != 0.0:
            if last_zero != 0.0 and (at_zero > 0.0) != (last_zero > 0.0):
                changes += 1
            last_zero = at_zero
        if at_infinity != 0.0:
            if last_infinity != 0.0 and (at_infinity > 0.0) != (last_infinity > 0.0):
                changes -= 1
            last_infinity = at_infinity
    return changes


@njit(**JIT)
def characteristic_polynomial(ca, ra, axes_a, cb, rb, axes_b, inflate_a, inflate_b, scratch):
    """Coefficients (c4, c3, c2, c1, c0) of f(l) = det(l A + B) for the quadric matrices of two ellipsoids.

    Coordinates are centred on A and scaled by A's largest semi-axis so the
    coefficients are well conditioned. Semi-axes are multiplied by the inflate
    factors (1 for the exact shapes). ``scratch`` is a (4, 4, 4) buffer.
    """
    scale = max(axes_a[0], max(axes_a[1], axes_a[2])) * inflate_a
    qa = scratch[0]
    qb = scratch[1]
    work = scratch[2]
    sizes = scratch[3]
    for k in range(3):
        sizes[0, k] = axes_a[k] * inflate_a
        sizes[1, k] = axes_b[k] * inflate_b
    _quadric_matrix(ca, ra, sizes[0], scale, ca, qa)
    _quadric_matrix(cb, rb, sizes[1], scale, ca, qb)
    # the quartic from its values at 0, +-1, +-2
    for s in range(4):
        lam = (1.0, -1.0, 2.0, -2.0)[s]
        for r in range(4):
            for c in range(4):
                work[r, c] = lam * qa[r, c] + qb[r, c]
        sizes[2, s] = _det4(work)
    p0 = _det4(qb)
    p1, pm1, p2, pm2 = sizes[2, 0], sizes[2, 1], sizes[2, 2], sizes[2, 3]
    even1 = 0.5 * (p1 + pm1) - p0
    even2 = 0.5 * (p2 + pm2) - p0
    odd1 = 0.5 * (p1 - pm1)
    odd2 = 0.25 * (p2 - pm2)
    c4 = (even2 - 4.0 * even1) / 12.0
    c3 = (odd2 - odd1) / 3.0
    return c4, c3, even1 - c4, odd1 - c3, p0


@njit(**JIT)
def ellipsoids_separated_into(ca, ra, axes_a, cb, rb, axes_b, inflate_a, inflate_b, scratch, chain, lengths,
                              remainder):
    """Wang, Wang & Kim (2001): two ellipsoids are separated iff det(l A + B) = 0 has two distinct positive roots.

    Buffers come from new_separation_scratch(), so the hot path allocates nothing.
    """
    c4, c3, c2, c1, c0 = characteristic_polynomial(ca, ra, axes_a, cb, rb, axes_b, inflate_a, inflate_b, scratch)
    chain[0, 0] = c4
    chain[0, 1] = c3
    chain[0, 2] = c2
    chain[0, 3] = c1
    chain[0, 4] = c0
    return _positive_root_count(chain, lengths, remainder) >= 2


@njit(**JIT)
def new_separation_scratch():
    """Scratch buffers for ellipsoids_separated_into, allocated once per collision pass."""
    return np.empty((4, 4, 4)), np.empty((5, 5)), np.zeros(5, dtype=np.int64), np.empty(5)


@njit(**JIT)
def ellipsoids_separated(ca, ra, axes_a, cb, rb, axes_b, inflate_a, inflate_b):
    """Convenience form of ellipsoids_separated_into that allocates its own buffers."""
    scratch, chain, lengths, remainder = new_separation_scratch()
    return ellipsoids_separated_into(ca, ra, axes_a, cb, rb, axes_b, inflate_a, inflate_b, scratch, chain,
                                     lengths, remainder)
