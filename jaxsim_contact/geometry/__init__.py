"""Shapes and support functions."""

from ._mesh import ConvexMesh, hill_climbing_support_index
from ._shapes import Box, Capsule, Cone, Cylinder, Ellipsoid, Plane, Shape, Sphere, support

__all__ = [
    "Shape",
    "Sphere",
    "Ellipsoid",
    "Box",
    "Capsule",
    "Cylinder",
    "Cone",
    "Plane",
    "ConvexMesh",
    "support",
    "hill_climbing_support_index",
]
