"""Collision detection: GJK (vanilla / Polyak / Nesterov), EPA, Boolean queries.

Seed 000 "GJK++". Public: ``distance``, ``intersects``, ``CollisionResult``.
"""

from .distance import CollisionResult, default_tolerance, distance, intersection_query, intersects
from .gjk import GJK_METHODS

__all__ = [
    "CollisionResult",
    "distance",
    "intersects",
    "intersection_query",
    "default_tolerance",
    "GJK_METHODS",
]
