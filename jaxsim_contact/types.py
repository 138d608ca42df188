"""Enumerations shared across the engine (shape docs live next to each pytree)."""

from __future__ import annotations

import enum

__all__ = ["GeomType"]


class GeomType(enum.IntEnum):
    """Geometry types; the integer is stable (used as a static dispatch key and in saved files)."""

    PLANE = 0
    SPHERE = 1
    CAPSULE = 2
    ELLIPSOID = 3
    CYLINDER = 4
    BOX = 5
    CONE = 6
    MESH = 7
