"""Collision detection: GJK (vanilla / Polyak / Nesterov), EPA, Boolean queries.

Seed 000 "GJK++". Public: ``distance``, ``intersects``, ``CollisionResult``, and ``Smoothing``
(derivative estimators of ``distance``: seed 000 "Differentiable Collision Detection").
"""

from .distance import CollisionResult, default_tolerance, distance, intersection_query, intersects
from .gjk import GJK_METHODS
from .smoothing import Smoothing

__all__ = [
    "CollisionResult",
    "distance",
    "intersects",
    "intersection_query",
    "default_tolerance",
    "GJK_METHODS",
    "Smoothing",
]
