"""General convex pairs: GJK/EPA (``jc.collision.distance``) plus perturbed multi-queries.

One GJK/EPA query gives one contact point. Two flat faces in contact need several: we use the
*perturbed-query* manifold (as in Bullet's "perturbation" contact generation for convex pairs):

1. query the pair as it is: normal ``n``, witness points ``p_a``, ``p_b``, distance ``d``;
2. in the same batched call, query it with geom b rotated by a small angle ``ε`` about 4 fixed
   axes (the tetrahedral directions ``(±1, ±1, ±1)`` with an even number of minus signs) through
   a pivot (the centre of the smaller geom's bounding sphere): a face resting on a face now
   touches at one corner of the contact polygon. For any normal, the axes' tangential parts point
   in at least three directions spread around the tangent plane (they sum to zero), so the tilts
   lower distinct corners — the four corners of an axis-aligned box face;
3. map each perturbed witness point of b back by the inverse motion (it lies on b's surface),
   keep the witness of a, and measure its depth along the unperturbed normal, ``n·(p_b − p_a)``;
4. reduce the 5 candidates to 4 by :func:`~._manifold.reduce_to_four` (duplicates dropped).

The perturbations do not depend on the first query, so all five queries run as one vmapped
``distance``: one GJK/EPA program per pair type instead of two (less compile time and a smaller
HLO for scenes with mesh/box/capsule/cylinder pairs). Curved pairs get nearby
points whose depth grows with ``ε²``; they drop out against the contact margin. Pair types made of
a smooth shape (sphere/ellipsoid: strictly convex, so it touches at one point) and plane pairs
use the single query.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .._math import Transform, quat_mul, quat_rotate
from .._types import GeomType
from ._distance import distance
from ._geoms import GeomData, bounding_sphere, to_shape
from ._manifold import Manifold, make_manifold, reduce_to_four
from ._primitives import point_tolerance

__all__ = ["make_generic_pair", "PERTURBATION_ANGLE", "is_single_query", "query_poses",
           "manifold_from_queries", "generic_query"]

#: rotation (rad) of the perturbed queries; a face of size L is sampled at its corners as long as
#: the contact polygon is wider than about ε·L.
PERTURBATION_ANGLE = 0.02

_SMOOTH = (GeomType.SPHERE, GeomType.ELLIPSOID)


def _perturbation_quaternions() -> np.ndarray:
    """``(5, 4)`` unit quaternions (w, x, y, z): identity, then ``ε`` about each tetrahedral axis."""
    axes = np.array([[1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1]], float) / np.sqrt(3.0)
    half = 0.5 * PERTURBATION_ANGLE
    tilts = np.concatenate([np.full((4, 1), np.cos(half)), np.sin(half) * axes], axis=1)
    return np.concatenate([[[1.0, 0.0, 0.0, 0.0]], tilts])


_MOTIONS = _perturbation_quaternions()
#: GJK iteration cap and EPA polytope budget of the narrow phase's queries
GENERIC_MAX_ITERATIONS, GENERIC_EPA_VERTICES = 64, 64


def is_single_query(type_a: GeomType, type_b: GeomType) -> bool:
    """A strictly convex shape touches any convex shape at one point, and a plane pair is a
    closed form: one query is the whole manifold. Other pairs use the 5 perturbed queries."""
    return type_a in _SMOOTH or type_b in _SMOOTH or type_a == GeomType.PLANE


def _pivot_and_motions(a: GeomData, b: GeomData, type_a: GeomType, type_b: GeomType):
    center_a, radius_a = bounding_sphere(a, type_a)
    center_b, radius_b = bounding_sphere(b, type_b)
    # rotating about a point of the smaller geom keeps its contact region nearly in place
    pivot = jnp.where(radius_a <= radius_b, center_a, center_b)
    return pivot, jnp.asarray(_MOTIONS, a.pos.dtype), jnp.maximum(radius_a, radius_b)


def query_poses(a: GeomData, b: GeomData, type_a: GeomType, type_b: GeomType) -> Transform:
    """Poses of geom b for the pair's queries, ``(Q,)`` with ``Q = 1`` (single query) or 5 (the
    unperturbed pose, then the 4 tilts about the pivot); geom a stays where it is."""
    if is_single_query(type_a, type_b):
        return Transform(b.pos[None], b.quat[None])
    pivot, rot, _ = _pivot_and_motions(a, b, type_a, type_b)
    return Transform(pivot + quat_rotate(rot, b.pos - pivot), quat_mul(rot, b.quat))


def manifold_from_queries(a: GeomData, b: GeomData, type_a: GeomType, type_b: GeomType, res,
                          margin) -> Manifold:
    """The pair's manifold from its ``Q`` query results ``res`` (leading axis ``Q``, in the order
    of :func:`query_poses`)."""
    if is_single_query(type_a, type_b):
        point = 0.5 * (res.point_a[0] + res.point_b[0])
        return make_manifold(res.signed_distance[:1], point[None], res.normal[0], jnp.ones((1,), bool))
    dtype = a.pos.dtype
    pivot, rot, size = _pivot_and_motions(a, b, type_a, type_b)
    normal = res.normal[0]
    inverse = rot * jnp.array([1.0, -1.0, -1.0, -1.0], dtype)
    on_b = pivot + quat_rotate(inverse, res.point_b - pivot)  # back on the unperturbed b
    depth = (on_b - res.point_a) @ normal
    # midway along the normal from b's surface: the perturbed witness of a is displaced
    # sideways by the tilt (ε times the pivot distance), the mapped-back point of b is not
    cand_points = on_b - 0.5 * depth[:, None] * normal
    cand_depth = depth.at[0].set(res.signed_distance[0])
    tol = point_tolerance(size) + 1e-4 * size  # above EPA's noise on the witness points
    mask = cand_depth <= jnp.maximum(margin, res.signed_distance[0] + tol)
    # On a resting face the unperturbed point ties with the corners in depth; rank it a
    # tolerance shallower so the reduction starts from a corner and keeps all four.
    rank_depth = cand_depth.at[0].add(tol)
    index, valid = reduce_to_four(cand_points, rank_depth, mask, normal, tol)
    return make_manifold(cand_depth[index], cand_points[index], normal, valid)


def generic_query(shape_a, pose_a: Transform, shape_b, pose_b: Transform):
    """The narrow phase's GJK/EPA query (tighter iteration and polytope budgets than the
    public default: contact points need ~1e-6 relative depth, not the last bits)."""
    return distance(shape_a, pose_a, shape_b, pose_b, max_iterations=GENERIC_MAX_ITERATIONS,
                    epa_max_vertices=GENERIC_EPA_VERTICES)


def make_generic_pair(type_a: GeomType, type_b: GeomType):
    """A pair function ``(a, b, margin) -> Manifold`` for any convex types (GJK/EPA based).

    Returns ``(function, points_per_pair)``.
    """

    def pair(a: GeomData, b: GeomData, margin) -> Manifold:
        shape_a, shape_b = to_shape(a, type_a), to_shape(b, type_b)
        poses = query_poses(a, b, type_a, type_b)
        res = jax.vmap(lambda pose: generic_query(shape_a, Transform(a.pos, a.quat), shape_b, pose))(poses)
        return manifold_from_queries(a, b, type_a, type_b, res, margin)

    return pair, (1 if is_single_query(type_a, type_b) else 4)
