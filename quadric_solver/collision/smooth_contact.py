"""Contact of two smooth, strictly convex shapes (superellipsoids, ellipsoids) by optimisation on the normal.

The contact is the pair of surface points whose normals are opposite and whose difference lies along
them: in terms of the support functions, a stationary point on the unit sphere of the gap
g(n) = -h_A(n) - h_B(-n) (convex_distance.py). Where both shapes are smooth and strictly convex,
each has one support point per direction and g is differentiable, so Newton on the sphere
(normal_refinement.py) reaches that point to rounding error from a nearby normal, in a few support
evaluations, where GJK and EPA would build polytopes of a curved surface (about ten times slower
on a pair of rounded boxes, and EPA only to a tolerance).

Which stationary point is the answer:
- Apart, g > 0 only on a convex cone of directions, where g's superlevel sets are convex on the
  sphere: it has one maximum there, the distance. So wherever Newton ends with g > 0 and a
  vanishing gradient, that is the exact distance, from any start.
- Overlapping, every stationary point of g < 0 is a local minimum of the penetration depth, and
  there may be several. Started from the normal the pair had last substep (``touching``), Newton
  keeps the contact on the same minimum, as SGJK does: no normal flips while a pair slides. Without
  such a start the global one is needed, and the GJK/EPA search (or the scene's penetration method)
  decides, as it does wherever Newton ends off a smooth optimum.
"""
from numba import njit

from ..math3d import JIT
from ..shapes.support import bounding_radius
from .convex_distance import contact_distance
from .normal_refinement import refine_normal

# of the pair's size: Newton's answer is taken where the gap's gradient on the sphere is below this. The gap's
# error is then about gradient^2 / curvature (1e-16 of the size) and the normal's about gradient / size.
STATIONARY = 1e-9
# of the pair's size: or where Newton's closed-form model predicts that the gap can rise by no more than this (the
# Newton decrement), a thousandth of the search's tolerance (CURVED_TOLERANCE). Rounded boxes resting face to face
# converge only linearly; the search, whose normals are off by up to a milliradian, would not do better there
CLOSE = 1e-10
# Newton steps before the search takes over: from last substep's normal most pairs of a pile need 2 to 4, but rounded
# boxes resting face to face converge only linearly. Of a superellipsoid pile's touching pairs 87% settle within 8, 94%
# within 12; each step (one support evaluation with its curvature) costs far less than the search
ITERATIONS = 12


@njit(**JIT)
def smooth_contact_distance(kinds, params, hull_vertices, positions, rotations, nx, ny, nz, method, touching,
                            scratch=None):
    """(gap, nx, ny, nz) of a pair of smooth kinds, from the normal guess n: Newton first, else contact_distance's
    search, polished by Newton.

    ``touching``: n is the pair's normal of last substep, so an overlap may keep the local minimum of
    depth nearest to it (module docstring); otherwise only a separation is taken from Newton. scratch: as for
    contact_distance.
    """
    scale = (bounding_radius(kinds[0], params[0], hull_vertices)
             + bounding_radius(kinds[1], params[1], hull_vertices))
    gap, rx, ry, rz, gradient, rise = refine_normal(kinds, params, hull_vertices, positions, rotations, nx, ny, nz,
                                                    scale, STATIONARY, ITERATIONS, CLOSE)
    if (gradient <= STATIONARY * scale or rise <= CLOSE * scale) and (touching or gap > 0.0):
        return gap, rx, ry, rz
    # the search finds the right basin (the global one for EPA) to its tolerance; Newton polishes the normal there
    gap, nx, ny, nz = contact_distance(kinds, params, hull_vertices, positions, rotations, nx, ny, nz, method, scratch)
    refined, rx, ry, rz, _, _ = refine_normal(kinds, params, hull_vertices, positions, rotations, nx, ny, nz, scale,
                                              STATIONARY, ITERATIONS, CLOSE)
    if refined > gap:
        return refined, rx, ry, rz
    return gap, nx, ny, nz
