"""Collision detection: everything that decides "what touches" (DESIGN §2 stage 2).

Distance queries between two shapes (seed 000 "GJK++"): ``distance``, ``intersects``,
``CollisionResult``, and ``Smoothing`` (derivative estimators of ``distance``: seed 000
"Differentiable Collision Detection").

Collision of a model's geoms: the static candidate pairs (:func:`build_collision_structure`,
:func:`collision_structure`; MuJoCo's filtering rules), the registry of pair functions
(``PAIR_FUNCTIONS``: closed forms, GJK/EPA for the rest), contact manifolds, and the narrow phase
of one configuration (:func:`narrow_phase`, with bounding-volume culling).
"""

from ._distance import CollisionResult, default_tolerance, distance, intersection_query, intersects
from ._gjk import GJK_METHODS
from ._manifold import Manifold, reduce_to_four, tangent_frame
from ._narrowphase import Candidates, any_pair_near, max_candidates, narrow_phase
from ._pairs import build_collision_structure, collision_structure
from ._registry import PAIR_FUNCTIONS, has_closed_form, pair_function
from ._smoothing import Smoothing
from ._structure import CollisionStructure, PairGroup

__all__ = [
    "CollisionResult",
    "distance",
    "intersects",
    "intersection_query",
    "default_tolerance",
    "GJK_METHODS",
    "Smoothing",
    "CollisionStructure",
    "PairGroup",
    "build_collision_structure",
    "collision_structure",
    "PAIR_FUNCTIONS",
    "has_closed_form",
    "pair_function",
    "Manifold",
    "reduce_to_four",
    "tangent_frame",
    "Candidates",
    "narrow_phase",
    "any_pair_near",
    "max_candidates",
]
