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
4. reduce the 5 candidates to 4 by :func:`~.manifold.reduce_to_four` (duplicates dropped).

The perturbations do not depend on the first query, so all five queries run as one vmapped
``distance``: one GJK/EPA program per pair type instead of two (compile time and HLO size of the
step roughly halve for scenes with mesh/box/capsule/cylinder pairs). Curved pairs get nearby
points whose depth grows with ``ε²``; they drop out against the contact margin. Pair types made of
a smooth shape (sphere/ellipsoid: strictly convex, so it touches at one point) and plane pairs
use the single query.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..collision import distance
from ..math import Transform, quat_mul, quat_rotate
from ..types import GeomType
from .geoms import GeomData, bounding_sphere, to_shape
from .manifold import Manifold, make_manifold, reduce_to_four
from .primitives import point_tolerance

__all__ = ["make_generic_pair", "PERTURBATION_ANGLE"]

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


def make_generic_pair(type_a: GeomType, type_b: GeomType, max_iterations: int = 64):
    """A pair function ``(a, b, margin) -> Manifold`` for any convex types (GJK/EPA based).

    Returns ``(function, points_per_pair)``.
    """
    # a strictly convex shape touches any convex shape at one point: one query is the manifold
    single = type_a in _SMOOTH or type_b in _SMOOTH or type_a == GeomType.PLANE

    def query(a: GeomData, b: GeomData, pose_b: Transform):
        shape_a, shape_b = to_shape(a, type_a), to_shape(b, type_b)
        return distance(shape_a, Transform(a.pos, a.quat), shape_b, pose_b,
                        max_iterations=max_iterations, epa_max_vertices=64)

    def pair(a: GeomData, b: GeomData, margin) -> Manifold:
        dtype = a.pos.dtype
        if single:
            first = query(a, b, Transform(b.pos, b.quat))
            point = 0.5 * (first.point_a + first.point_b)
            return make_manifold(first.signed_distance[None], point[None], first.normal,
                                 jnp.ones((1,), bool))
        center_a, radius_a = bounding_sphere(a, type_a)
        center_b, radius_b = bounding_sphere(b, type_b)
        # rotating about a point of the smaller geom keeps its contact region nearly in place
        pivot = jnp.where(radius_a <= radius_b, center_a, center_b)
        rot = jnp.asarray(_MOTIONS, dtype)  # (5, 4): identity, then the 4 tilts
        poses = Transform(pivot + quat_rotate(rot, b.pos - pivot), quat_mul(rot, b.quat))
        res = jax.vmap(lambda pose: query(a, b, pose))(poses)
        normal = res.normal[0]
        inverse = rot * jnp.array([1.0, -1.0, -1.0, -1.0], dtype)
        on_b = pivot + quat_rotate(inverse, res.point_b - pivot)  # back on the unperturbed b
        depth = (on_b - res.point_a) @ normal
        # midway along the normal from b's surface: the perturbed witness of a is displaced
        # sideways by the tilt (ε times the pivot distance), the mapped-back point of b is not
        cand_points = on_b - 0.5 * depth[:, None] * normal
        cand_depth = depth.at[0].set(res.signed_distance[0])
        size = jnp.maximum(radius_a, radius_b)
        tol = point_tolerance(size) + 1e-4 * size  # above EPA's noise on the witness points
        mask = cand_depth <= jnp.maximum(margin, res.signed_distance[0] + tol)
        # On a resting face the unperturbed point ties with the corners in depth; rank it a
        # tolerance shallower so the reduction starts from a corner and keeps all four.
        rank_depth = cand_depth.at[0].add(tol)
        index, valid = reduce_to_four(cand_points, rank_depth, mask, normal, tol)
        return make_manifold(cand_depth[index], cand_points[index], normal, valid)

    return pair, (1 if single else 4)
