"""Contacts between bumpy ellipsoids (shapes/bumps.py): Newton on the two implicit surfaces, from several seeds.

A contact is a pair of surface points, p on A and q on B, whose outward normals are opposite and lie
along q - p: n_A(p) = -n_B(q) = n and q - p = g n, with g the signed gap (negative: the depth of an
overlap). On two convex shapes the pair found from the centres' line is the contact. Bumps and dents
make several such pairs, some of them saddles or maxima of the gap, so:
- the unknowns are the directions u (A's frame) and v (B's frame) of p and q from the shapes' origins,
  two tangent coordinates each (the surfaces are star-shaped about their origins);
- the residuals, zero at a contact, are L (n_A + n_B) and the part of q - p across n_A (L, a length of
  the pair, weighs the two alike); Gauss-Newton with a forward-difference Jacobian, with its steps
  limited and halved until the residual falls;
- seeds: given directions (a pair's contacts of last substep, or the query's from sampled surfaces), a
  hint (the normal a pair had last) and, without given seeds, the centres' line (at the base ellipsoids'
  points with those normals), each bump's or dent's apex radially within reach of the other shape, and
  four points near each dent's rim (a shape wider than a dent rests on its rim, around the dent's axis);
- a converged pair is kept only where the surfaces face each other (where they overlap, p lies inside
  B or q inside A; this drops the pair on the far sides) and where the gap is a local minimum over
  offsets across n (its Hessian there is the sum of the two surfaces' curvatures, from the implicit
  functions' second derivatives): the saddle between two bumps and the bottom of a dent narrower than
  what sits in it are not contacts;
- seeds that converge to the same points give one contact.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..math3d import JIT
from ..shapes.bumps import bumpy_radius, sphere_directions

MAX_CONTACTS = 16
SAMPLES = 1200  # directions per surface for the query's sampled seeds: 1.4M pairs of samples, about 10 ms
OUT_COLUMNS = 10  # gap, normal (3), point on A (3), point on B (3), world frame
MAX_ITERATIONS = 40
STALLED = 10  # iterations after which a seed whose residual has not fallen tenfold is given up
TOLERANCE = 1e-11  # of L: the residual where Newton stops
STEP_LIMIT = 0.3  # radians: the largest move of u or v in one step
SAME_POINT = 1e-6  # of L: two contacts closer than this in both points are one
FLAT = 1e-2  # of 1/L: a gap curving down less than this across n still counts as a minimum
# A shape resting on a dent's rim touches along a ring: the contacts there form a family, turned about the
# dent's axis, and the gap along one normal curves down slightly along the ring, by about depth / radius^2
# (the two contact points lie on rings of different radii). Down by less than this fraction of its curvature
# up across the ring, the pair counts as a contact; a saddle between two bumps curves down far more.
DEGENERATE = 0.1
RIM = ((1.0, 0.0), (0.0, 1.0), (-1.0, 0.0), (0.0, -1.0))  # a dent's rim seeds, in its tangent plane
RIM_FRACTION = 0.8  # of a dent's angular radius: where its rim seeds start

_radius = njit(**JIT, inline="always")(bumpy_radius)


@njit(**JIT)
def _surface(rows, bumps, positions, rotations, i, ux, uy, uz):
    """World point and unit outward normal of shape i's surface along its unit local direction u."""
    r, gx, gy, gz = _radius(rows[i, 0], rows[i, 1], rows[i, 2], bumps, int(rows[i, 3]), int(rows[i, 4]),
                            ux, uy, uz)
    along = gx * ux + gy * uy + gz * uz
    # the gradient of |x| / r(x / |x|) - 1 on the surface is (u - g_t / r) / r, g_t the part of dr/du across u
    nx, ny, nz = r * ux - (gx - along * ux), r * uy - (gy - along * uy), r * uz - (gz - along * uz)
    scale = 1.0 / np.sqrt(nx * nx + ny * ny + nz * nz)
    nx, ny, nz = nx * scale, ny * scale, nz * scale
    R = rotations[i]
    px = positions[i, 0] + r * (R[0, 0] * ux + R[0, 1] * uy + R[0, 2] * uz)
    py = positions[i, 1] + r * (R[1, 0] * ux + R[1, 1] * uy + R[1, 2] * uz)
    pz = positions[i, 2] + r * (R[2, 0] * ux + R[2, 1] * uy + R[2, 2] * uz)
    return (px, py, pz, R[0, 0] * nx + R[0, 1] * ny + R[0, 2] * nz, R[1, 0] * nx + R[1, 1] * ny + R[1, 2] * nz,
            R[2, 0] * nx + R[2, 1] * ny + R[2, 2] * nz)


@njit(**JIT)
def _implicit(rows, bumps, positions, rotations, i, x, y, z):
    """|x| / r(x / |x|) - 1 for shape i at the world point x (negative inside), and its world gradient."""
    R = rotations[i]
    dx, dy, dz = x - positions[i, 0], y - positions[i, 1], z - positions[i, 2]
    lx = R[0, 0] * dx + R[1, 0] * dy + R[2, 0] * dz
    ly = R[0, 1] * dx + R[1, 1] * dy + R[2, 1] * dz
    lz = R[0, 2] * dx + R[1, 2] * dy + R[2, 2] * dz
    rho = np.sqrt(lx * lx + ly * ly + lz * lz)
    if rho == 0.0:
        return -1.0, 0.0, 0.0, 0.0
    ux, uy, uz = lx / rho, ly / rho, lz / rho
    r, gx, gy, gz = _radius(rows[i, 0], rows[i, 1], rows[i, 2], bumps, int(rows[i, 3]), int(rows[i, 4]),
                            ux, uy, uz)
    along = gx * ux + gy * uy + gz * uz
    kx, ky, kz = (ux - (gx - along * ux) / r) / r, (uy - (gy - along * uy) / r) / r, (uz - (gz - along * uz) / r) / r
    return (rho / r - 1.0, R[0, 0] * kx + R[0, 1] * ky + R[0, 2] * kz, R[1, 0] * kx + R[1, 1] * ky + R[1, 2] * kz,
            R[2, 0] * kx + R[2, 1] * ky + R[2, 2] * kz)


@njit(**JIT)
def _residual(rows, bumps, positions, rotations, scale, u, v, res):
    """Writes the six residuals for directions u (A) and v (B) into res; returns (|res|, gap, p, n_A, q)."""
    px, py, pz, nx, ny, nz = _surface(rows, bumps, positions, rotations, 0, u[0], u[1], u[2])
    qx, qy, qz, mx, my, mz = _surface(rows, bumps, positions, rotations, 1, v[0], v[1], v[2])
    dx, dy, dz = qx - px, qy - py, qz - pz
    gap = dx * nx + dy * ny + dz * nz
    res[0], res[1], res[2] = scale * (nx + mx), scale * (ny + my), scale * (nz + mz)
    res[3], res[4], res[5] = dx - gap * nx, dy - gap * ny, dz - gap * nz
    norm = 0.0
    for k in range(6):
        norm += res[k] * res[k]
    return np.sqrt(norm), gap, px, py, pz, nx, ny, nz, qx, qy, qz


@njit(**JIT, inline="always")
def _tangents(x, y, z):
    """Two unit vectors across the unit vector (x, y, z), and across each other."""
    if abs(x) < 0.6:
        ax, ay, az = 0.0, z, -y
    else:
        ax, ay, az = -z, 0.0, x
    s = 1.0 / np.sqrt(ax * ax + ay * ay + az * az)
    ax, ay, az = ax * s, ay * s, az * s
    return ax, ay, az, y * az - z * ay, z * ax - x * az, x * ay - y * ax


@njit(**JIT, inline="always")
def _moved(base, basis, x0, x1, out):
    """out = the unit vector of base + x0 basis[0] + x1 basis[1]."""
    for k in range(3):
        out[k] = base[k] + x0 * basis[0, k] + x1 * basis[1, k]
    s = 1.0 / np.sqrt(out[0] * out[0] + out[1] * out[1] + out[2] * out[2])
    for k in range(3):
        out[k] *= s


@njit(**JIT)
def _solve_symmetric(M, rhs, n):
    """Solves M x = rhs in place (rhs becomes x) for a symmetric positive definite n x n M (Cholesky)."""
    for j in range(n):
        d = M[j, j]
        for k in range(j):
            d -= M[j, k] * M[j, k]
        if d <= 0.0:
            return False
        d = np.sqrt(d)
        M[j, j] = d
        for i in range(j + 1, n):
            s = M[i, j]
            for k in range(j):
                s -= M[i, k] * M[j, k]
            M[i, j] = s / d
    for i in range(n):
        s = rhs[i]
        for k in range(i):
            s -= M[i, k] * rhs[k]
        rhs[i] = s / M[i, i]
    for i in range(n - 1, -1, -1):
        s = rhs[i]
        for k in range(i + 1, n):
            s -= M[k, i] * rhs[k]
        rhs[i] = s / M[i, i]
    return True


@njit(**JIT)
def _newton(rows, bumps, positions, rotations, scale, u, v):
    """Gauss-Newton on the residuals from directions u, v (updated in place); whether it converged."""
    res, trial_res = np.empty(6), np.empty(6)
    J = np.empty((6, 4))
    M, step = np.empty((4, 4)), np.empty(4)
    basis_u, basis_v = np.empty((2, 3)), np.empty((2, 3))
    u_trial, v_trial = np.empty(3), np.empty(3)
    eps = 1e-7
    first = 0.0
    for iteration in range(MAX_ITERATIONS):
        norm = _residual(rows, bumps, positions, rotations, scale, u, v, res)[0]
        if norm < TOLERANCE * scale:
            return True
        if iteration == 0:
            first = norm
        elif iteration >= STALLED and norm > 0.1 * first:
            return False  # wandering, not converging: another seed will find the contact if there is one
        for direction, basis in ((u, basis_u), (v, basis_v)):
            a0, a1, a2, b0, b1, b2 = _tangents(direction[0], direction[1], direction[2])
            basis[0, 0], basis[0, 1], basis[0, 2] = a0, a1, a2
            basis[1, 0], basis[1, 1], basis[1, 2] = b0, b1, b2
        for c in range(4):
            if c < 2:
                _moved(u, basis_u, eps * (c == 0), eps * (c == 1), u_trial)
                _residual(rows, bumps, positions, rotations, scale, u_trial, v, trial_res)
            else:
                _moved(v, basis_v, eps * (c == 2), eps * (c == 3), v_trial)
                _residual(rows, bumps, positions, rotations, scale, u, v_trial, trial_res)
            for k in range(6):
                J[k, c] = (trial_res[k] - res[k]) / eps
        for i in range(4):
            s = 0.0
            for k in range(6):
                s -= J[k, i] * res[k]
            step[i] = s
            for j in range(4):
                s = 0.0
                for k in range(6):
                    s += J[k, i] * J[k, j]
                M[i, j] = s
        damping = 1e-12 * (M[0, 0] + M[1, 1] + M[2, 2] + M[3, 3]) + 1e-300
        for i in range(4):
            M[i, i] += damping
        if not _solve_symmetric(M, step, 4):
            return False
        largest = max(abs(step[0]), abs(step[1]), abs(step[2]), abs(step[3]))
        shrink = STEP_LIMIT / largest if largest > STEP_LIMIT else 1.0
        moved = False
        for _ in range(12):
            _moved(u, basis_u, shrink * step[0], shrink * step[1], u_trial)
            _moved(v, basis_v, shrink * step[2], shrink * step[3], v_trial)
            if _residual(rows, bumps, positions, rotations, scale, u_trial, v_trial, trial_res)[0] < norm:
                moved = True
                break
            shrink *= 0.5
        if not moved:
            return norm < 1e3 * TOLERANCE * scale
        u[:] = u_trial
        v[:] = v_trial
    return _residual(rows, bumps, positions, rotations, scale, u, v, res)[0] < 1e3 * TOLERANCE * scale


@njit(**JIT)
def _bending(rows, bumps, positions, rotations, i, x, y, z, e, f):
    """How shape i's surface bends at its world point x along the unit tangents e and f: (e.K e, f.K f, e.K f)
    with K = Hess G / |grad G|, G(x) = |x| / r(x / |x|) (positive where the surface curves away from its
    outside, as a ball's: 1 / radius).

    With E(x) = sqrt(x.Mx) (M = diag(1/a^2, 1/b^2, 1/c^2)) and S(x) = s(x / |x|) (shapes/bumps.py), G = E / S:
    Hess G = Hess E / S - (grad E grad S^T + grad S grad E^T) / S^2 + 2 E grad S grad S^T / S^3 - E Hess S / S^2.
    """
    R = rotations[i]
    dx, dy, dz = x - positions[i, 0], y - positions[i, 1], z - positions[i, 2]
    local = np.empty(3)
    tangents = np.empty((2, 3))
    for k in range(3):
        local[k] = R[0, k] * dx + R[1, k] * dy + R[2, k] * dz
        tangents[0, k] = R[0, k] * e[0] + R[1, k] * e[1] + R[2, k] * e[2]
        tangents[1, k] = R[0, k] * f[0] + R[1, k] * f[1] + R[2, k] * f[2]
    rho = np.sqrt(local[0] ** 2 + local[1] ** 2 + local[2] ** 2)
    m = np.empty(3)
    for k in range(3):
        m[k] = local[k] / (rows[i, k] * rows[i, k])
    E = np.sqrt(local[0] * m[0] + local[1] * m[1] + local[2] * m[2])
    S = 1.0
    grad_s = np.zeros(3)
    hess_s = np.zeros((3, 3))
    for k in range(int(rows[i, 3]), int(rows[i, 3] + rows[i, 4])):
        scale = 1.0 / (1.0 - bumps[k, 4])
        along = (local[0] * bumps[k, 0] + local[1] * bumps[k, 1] + local[2] * bumps[k, 2]) / rho
        t = (along - bumps[k, 4]) * scale
        if t <= 0.0:
            continue
        height = bumps[k, 3]
        S += height * t * t * t
        grad_t = np.empty(3)  # (d - (u.d) u) / (rho (1 - cos w)), u = x / rho
        for a in range(3):
            grad_t[a] = (bumps[k, a] - along * local[a] / rho) / rho * scale
        for a in range(3):
            grad_s[a] += 3.0 * height * t * t * grad_t[a]
            for b in range(3):
                # Hess t = -(d u^T + u d^T + (u.d) I - 3 (u.d) u u^T) / (rho^2 (1 - cos w))
                hess_t = -(bumps[k, a] * local[b] + local[a] * bumps[k, b]) / rho ** 3 \
                    + along * (3.0 * local[a] * local[b] / rho ** 2 - (a == b)) / rho ** 2
                hess_s[a, b] += height * (6.0 * t * grad_t[a] * grad_t[b] + 3.0 * t * t * hess_t * scale)
    out = np.zeros(3)
    grad = np.empty(3)
    for a in range(3):
        grad[a] = m[a] / E / S - E * grad_s[a] / (S * S)
    for a in range(3):
        for b in range(3):
            hess = ((a == b) / (rows[i, a] * rows[i, a]) / E - m[a] * m[b] / E ** 3) / S \
                - ((m[a] / E) * grad_s[b] + grad_s[a] * (m[b] / E)) / (S * S) \
                + 2.0 * E * grad_s[a] * grad_s[b] / S ** 3 - E * hess_s[a, b] / (S * S)
            out[0] += tangents[0, a] * hess * tangents[0, b]
            out[1] += tangents[1, a] * hess * tangents[1, b]
            out[2] += tangents[0, a] * hess * tangents[1, b]
    norm = np.sqrt(grad[0] ** 2 + grad[1] ** 2 + grad[2] ** 2)
    return out[0] / norm, out[1] / norm, out[2] / norm


@njit(**JIT)
def _under_bump(rows, bumps, i, ux, uy, uz):
    """Whether the local unit direction u of shape i lies under one of its bumps or dents."""
    for k in range(int(rows[i, 3]), int(rows[i, 3] + rows[i, 4])):
        if ux * bumps[k, 0] + uy * bumps[k, 1] + uz * bumps[k, 2] > bumps[k, 4]:
            return True
    return False


@njit(**JIT)
def gap_curvature(rows, bumps, positions, rotations, px, py, pz, qx, qy, qz, nx, ny, nz):
    """The gap's second derivatives across n at a contact (p on A, q on B, n from A to B), in the tangents of
    _tangents(n): (h00, h11, h01). Offset by t across n, A's surface falls by t.K_A t / 2 along n and B's rises
    by t.K_B t / 2, so the gap's Hessian is K_A + K_B."""
    t0, t1, t2, s0, s1, s2 = _tangents(nx, ny, nz)
    e, f = np.array((t0, t1, t2)), np.array((s0, s1, s2))
    a00, a11, a01 = _bending(rows, bumps, positions, rotations, 0, px, py, pz, e, f)
    b00, b11, b01 = _bending(rows, bumps, positions, rotations, 1, qx, qy, qz, e, f)
    return a00 + b00, a11 + b11, a01 + b01


@njit(**JIT)
def _gap_curves_up(rows, bumps, positions, rotations, scale, px, py, pz, qx, qy, qz, nx, ny, nz):
    """Whether the gap along n has a local minimum at the contact (p, q) over offsets across n."""
    h00, h11, h01 = gap_curvature(rows, bumps, positions, rotations, px, py, pz, qx, qy, qz, nx, ny, nz)
    half_trace, half_gap = 0.5 * (h00 + h11), np.sqrt(0.25 * (h00 - h11) ** 2 + h01 * h01)
    least, most = half_trace - half_gap, half_trace + half_gap
    return least > -FLAT / scale or (most > 0.0 and least > -DEGENERATE * most)


@njit(**JIT)
def _seeds(rows, bumps, positions, rotations, hint, reach, given):
    """bumpy_contacts' seeds (k, 6) and their count: the given ones, the hint, the centres' line, the bumps'."""
    bound = np.empty(2)
    for i in range(2):
        lift = 0.0
        for k in range(int(rows[i, 3]), int(rows[i, 3] + rows[i, 4])):
            lift = max(lift, bumps[k, 3])
        bound[i] = max(rows[i, 0], rows[i, 1], rows[i, 2]) * (1.0 + lift)
    seeds = np.zeros((len(given) + 2 + (1 + len(RIM)) * int(rows[0, 4] + rows[1, 4]), 6))
    seeds[:len(given)] = given
    count = len(given)
    cx, cy, cz = positions[1, 0] - positions[0, 0], positions[1, 1] - positions[0, 1], positions[1, 2] - positions[0, 2]
    hinted = hint[0] != 0.0 or hint[1] != 0.0 or hint[2] != 0.0
    for kind in range(2):  # the hint, then the centres' line where no seeds are given (and not for two plain
        # ellipsoids with a hint: either finds their one contact)
        if (kind == 0 and not hinted) or (kind == 1 and (len(given) > 0 or (hinted and rows[0, 4] + rows[1, 4] == 0))):
            continue
        dx, dy, dz = (hint[0], hint[1], hint[2]) if kind == 0 else (cx, cy, cz)
        if dx == 0.0 and dy == 0.0 and dz == 0.0:
            dz = 1.0
        for i in range(2):  # the direction of the base ellipsoid's point whose normal is +-d: diag(a^2) R^T d
            R, sign = rotations[i], 1.0 if i == 0 else -1.0
            length = 0.0
            for k in range(3):
                value = sign * rows[i, k] * rows[i, k] * (R[0, k] * dx + R[1, k] * dy + R[2, k] * dz)
                seeds[count, 3 * i + k] = value
                length += value * value
            for k in range(3):
                seeds[count, 3 * i + k] /= np.sqrt(length)
        count += 1
    for i in range(2):  # a bump or dent of shape i against the other shape o
        o = 1 - i
        Ri, Ro = rotations[i], rotations[o]
        for k in range(int(rows[i, 3]), int(rows[i, 3] + rows[i, 4])):
            dx, dy, dz = bumps[k, 0], bumps[k, 1], bumps[k, 2]
            t0, t1, t2, s0, s1, s2 = _tangents(dx, dy, dz)
            rim = np.arccos(bumps[k, 4]) * RIM_FRACTION
            for j in range(-1, len(RIM) if bumps[k, 3] < 0.0 else 0):
                if j < 0:  # the apex
                    ux, uy, uz = dx, dy, dz
                else:  # what sits in a dent wider than itself rests on its rim
                    along, across = np.cos(rim), np.sin(rim)
                    ex, ey = RIM[j]
                    ux = along * dx + across * (ex * t0 + ey * s0)
                    uy = along * dy + across * (ex * t1 + ey * s1)
                    uz = along * dz + across * (ex * t2 + ey * s2)
                r = _radius(rows[i, 0], rows[i, 1], rows[i, 2], bumps, int(rows[i, 3]), int(rows[i, 4]), ux, uy, uz)[0]
                wx = positions[i, 0] + r * (Ri[0, 0] * ux + Ri[0, 1] * uy + Ri[0, 2] * uz) - positions[o, 0]
                wy = positions[i, 1] + r * (Ri[1, 0] * ux + Ri[1, 1] * uy + Ri[1, 2] * uz) - positions[o, 1]
                wz = positions[i, 2] + r * (Ri[2, 0] * ux + Ri[2, 1] * uy + Ri[2, 2] * uz) - positions[o, 2]
                length = np.sqrt(wx * wx + wy * wy + wz * wz)
                if length > bound[o] + reach or length == 0.0:
                    continue
                # radially beyond reach of the other surface, by more than the bump's own height allows for
                # touching with its flank: not a seed
                below = _implicit(rows, bumps, positions, rotations, o, wx + positions[o, 0], wy + positions[o, 1],
                                  wz + positions[o, 2])[0]
                if below > 0.0 and below * length / (1.0 + below) > reach + abs(bumps[k, 3]) * r:
                    continue
                seeds[count, 3 * i], seeds[count, 3 * i + 1], seeds[count, 3 * i + 2] = ux, uy, uz
                for c in range(3):
                    seeds[count, 3 * o + c] = (Ro[0, c] * wx + Ro[1, c] * wy + Ro[2, c] * wz) / length
                count += 1
    return seeds, count


@njit(**JIT)
def bumpy_contacts(rows, bumps, positions, rotations, hint, reach, given, out):
    """Contacts between shape 0 (A) and shape 1 (B): rows (2, >= 5) hold (a, b, c, first bump, bump count),
    bumps the shared bump rows, positions (2, 3), rotations (2, 3, 3) local to world. ``hint`` (3,), if
    not zero, is a guess of the normal from A to B. Bumps count as seeds where their apex lies within
    ``reach`` of the other shape's bounding sphere. ``given`` (k, 6) are more seeds, tried first, in place of
    the centres' line: unit directions u (A's frame) and v (B's), e.g. a pair's contacts of last substep.
    Writes up to MAX_CONTACTS rows of OUT_COLUMNS into ``out`` and returns how many."""
    scale = 0.25 * (rows[0, 0] + rows[0, 1] + rows[0, 2] + rows[1, 0] + rows[1, 1] + rows[1, 2]) / 1.5
    seeds, count = _seeds(rows, bumps, positions, rotations, hint, reach, given)
    found = 0
    u, v, res = np.empty(3), np.empty(3), np.empty(6)
    for s in range(count):
        u[:] = seeds[s, :3]
        v[:] = seeds[s, 3:]
        if not _newton(rows, bumps, positions, rotations, scale, u, v):
            continue
        _, gap, px, py, pz, nx, ny, nz, qx, qy, qz = _residual(rows, bumps, positions, rotations, scale, u, v, res)
        if gap < 0.0 and (_implicit(rows, bumps, positions, rotations, 1, px, py, pz)[0] > 1e-9
                          and _implicit(rows, bumps, positions, rotations, 0, qx, qy, qz)[0] > 1e-9):
            continue  # the pair on the far sides (a thin spike's tip inside A may have p outside it)
        same = False
        for c in range(found):
            dp = (out[c, 4] - px) ** 2 + (out[c, 5] - py) ** 2 + (out[c, 6] - pz) ** 2
            dq = (out[c, 7] - qx) ** 2 + (out[c, 8] - qy) ** 2 + (out[c, 9] - qz) ** 2
            if max(dp, dq) < (SAME_POINT * scale) ** 2:
                same = True
                break
        if same or found == MAX_CONTACTS:
            continue
        if (_under_bump(rows, bumps, 0, u[0], u[1], u[2]) or _under_bump(rows, bumps, 1, v[0], v[1], v[2])) and \
                not _gap_curves_up(rows, bumps, positions, rotations, scale, px, py, pz, qx, qy, qz, nx, ny, nz):
            continue  # (where both points lie on the plain ellipsoids, both surfaces curve away: a minimum)
        out[found, 0] = gap
        out[found, 1], out[found, 2], out[found, 3] = nx, ny, nz
        out[found, 4], out[found, 5], out[found, 6] = px, py, pz
        out[found, 7], out[found, 8], out[found, 9] = qx, qy, qz
        found += 1
    return found


def local_contacts(shape_a, pose_a, shape_b, pose_b, normal_hint=None) -> list:
    """Every contact between two Ellipsoid or BumpyEllipsoid shapes placed at pose = (position, orientation
    (w, x, y, z)), least distance (deepest) first: a list of convex_distance.Distance, one per local minimum
    of the gap found (see above). ``distance`` returns the first."""
    from .convex_distance import _pose
    positions, rotations = np.empty((2, 3)), np.empty((2, 3, 3))
    _pose("pose_a", pose_a, positions, rotations, 0)
    _pose("pose_b", pose_b, positions, rotations, 1)
    return posed_contacts(shape_a, shape_b, positions, rotations, normal_hint)


def posed_contacts(shape_a, shape_b, positions, rotations, normal_hint=None) -> list:
    """local_contacts with the poses as positions (2, 3) and rotation matrices (2, 3, 3)."""
    from .convex_distance import Distance
    rows, blocks = np.zeros((2, 5)), []
    for i, shape in enumerate((shape_a, shape_b)):
        block = shape.bump_rows() if hasattr(shape, "bump_rows") else np.zeros((0, 5))
        rows[i] = (*shape.semi_axes, sum(len(b) for b in blocks), len(block))
        blocks.append(block)
    hint = np.zeros(3) if normal_hint is None else np.asarray(normal_hint, dtype=np.float64)
    out = np.empty((MAX_CONTACTS, OUT_COLUMNS))
    bumps = np.ascontiguousarray(np.concatenate(blocks))
    given = _sampled_seeds((shape_a, shape_b), positions, rotations)
    found = bumpy_contacts(rows, bumps, positions, rotations, hint, np.inf, given, out)
    order = np.argsort(out[:found, 0], kind="stable")
    return [Distance(float(out[k, 0]), out[k, 1:4].copy(), out[k, 4:7].copy(), out[k, 7:10].copy()) for k in order]


def surface_radius(shape, directions) -> np.ndarray:
    """Distance from an Ellipsoid's or BumpyEllipsoid's origin to its surface along unit directions (N, 3)."""
    if hasattr(shape, "bump_rows"):
        return shape.radius(directions)
    return 1.0 / np.sqrt(np.sum((directions / np.asarray(shape.semi_axes)) ** 2, axis=-1))


def _sampled_seeds(shapes, positions, rotations, count=SAMPLES):
    """Seeds (k, 6) from both surfaces sampled at ``count`` directions and their bumps' apexes: the nearest pair of
    samples, and where a
    sample of one shape lies inside the other, the deepest such sample of each shape with the other's sample
    nearest to it. Newton from the seeds of bumpy_contacts alone can stall on a local minimum of its residual
    (far apart most of all) or miss a shallow overlap away from the centres' line; these start it within a
    sample spacing of the nearest or deepest place."""
    directions = [np.concatenate([sphere_directions(count), shape.bump_rows()[:, :3]]) if hasattr(shape, "bump_rows")
                  else sphere_directions(count) for shape in shapes]  # apexes too: a narrow spike falls between
    points = [positions[i] + (directions[i] * surface_radius(shape, directions[i])[:, None]) @ rotations[i].T
              for i, shape in enumerate(shapes)]
    gaps = np.linalg.norm(points[0][:, None, :] - points[1][None, :, :], axis=-1)
    seeds = [np.unravel_index(int(np.argmin(gaps)), gaps.shape)]
    for i in range(2):  # |x| / r(x / |x|) - 1 of the other shape at this one's samples
        local = (points[i] - positions[1 - i]) @ rotations[1 - i]
        rho = np.linalg.norm(local, axis=1)
        inside = rho / surface_radius(shapes[1 - i], local / rho[:, None]) - 1.0
        deepest = int(np.argmin(inside))
        if inside[deepest] < 0.0:
            nearest = int(np.argmin(gaps[deepest] if i == 0 else gaps[:, deepest]))
            seeds.append((deepest, nearest) if i == 0 else (nearest, deepest))
    return np.array([np.concatenate([directions[0][u], directions[1][v]]) for u, v in seeds])
