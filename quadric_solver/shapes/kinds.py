"""The shape families' ids and the layout of their parameter rows, apart from the compiled support mappings
(support.py) so that shapes can be made and checked without loading numba (the add-on builds scenes on
Blender's main thread)."""
ELLIPSOID, SUPERELLIPSOID, BOX, CYLINDER, CAPSULE, HULL, BUMPY = 0, 1, 2, 3, 4, 5, 6
KIND_NAMES = ("ellipsoid", "superellipsoid", "box", "cylinder", "capsule", "convex hull", "bumpy ellipsoid")
# row layout: ellipsoid (a, b, c), superellipsoid (a, b, c, e1, e2), box (hx, hy, hz),
# cylinder and capsule (radius, half_height), hull (first vertex row, vertex count),
# bumpy ellipsoid (a, b, c, first bump row, bump count)
PARAMS = 5
