"""Shapes: value classes, exact mass properties, support mappings for compiled code."""
from .mass import MassProperties
from .values import (Box, BumpyEllipsoid, Capsule, ConvexHull, Cylinder, Ellipsoid, Shape, ShapeArrays,
                     Superellipsoid, encode_shapes)

__all__ = ["Box", "BumpyEllipsoid", "Capsule", "ConvexHull", "Cylinder", "Ellipsoid", "MassProperties", "Shape",
           "ShapeArrays", "Superellipsoid", "encode_shapes"]
