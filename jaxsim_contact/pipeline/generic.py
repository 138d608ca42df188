"""General convex pairs: GJK/EPA (``jc.collision.distance``) plus perturbed multi-queries.

One GJK/EPA query gives one contact point. Two flat faces in contact need several: we use the
*perturbed-query* manifold (as in Bullet's "perturbation" contact generation for convex pairs):

1. query the pair as it is: normal ``n``, witness points ``p_a``, ``p_b``, distance ``d``;
2. rotate geom b by a small angle ``ε`` about 4 axes in the tangent plane of ``n`` through the
   contact point (axes at 45°, 135°, 225°, 315° in the ``(t1, t2)`` frame), query again: a face
   resting on a face now touches at one corner of the contact polygon;
3. map each perturbed witness point of b back by the inverse rotation (it lies on b's surface),
   keep the witness of a, and measure its depth along the unperturbed normal, ``n·(p_b − p_a)``;
4. reduce the 5 candidates to 4 by :func:`~.manifold.reduce_to_four` (duplicates dropped).

Curved pairs get nearby points whose depth grows with ``ε²``; they drop out against the contact
margin. The cost is 5 queries per pair (vmapped); pair types made of smooth shapes only
(sphere/ellipsoid) use the single query.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..collision import distance
from ..math import Transform, quat_from_axis_angle, quat_mul, quat_rotate
from ..types import GeomType
from .geoms import GeomData, bounding_sphere, to_shape
from .manifold import Manifold, make_manifold, reduce_to_four, tangent_frame
from .primitives import point_tolerance

__all__ = ["make_generic_pair", "PERTURBATION_ANGLE"]

#: rotation (rad) of the perturbed queries; a face of size L is sampled at its corners as long as
#: the contact polygon is wider than about ε·L.
PERTURBATION_ANGLE = 0.02

_SMOOTH = (GeomType.SPHERE, GeomType.ELLIPSOID)


def make_generic_pair(type_a: GeomType, type_b: GeomType, max_iterations: int = 64):
    """A pair function ``(a, b, margin) -> Manifold`` for any convex types (GJK/EPA based).

    Returns ``(function, points_per_pair)``.
    """
    single = type_a in _SMOOTH and type_b in _SMOOTH or type_a == GeomType.PLANE

    def query(a: GeomData, b: GeomData, pose_b: Transform):
        shape_a, shape_b = to_shape(a, type_a), to_shape(b, type_b)
        return distance(shape_a, Transform(a.pos, a.quat), shape_b, pose_b,
                        max_iterations=max_iterations, epa_max_vertices=64)

    def pair(a: GeomData, b: GeomData, margin) -> Manifold:
        pose_b = Transform(b.pos, b.quat)
        first = query(a, b, pose_b)
        normal = first.normal
        point = 0.5 * (first.point_a + first.point_b)
        if single:
            return make_manifold(first.signed_distance[None], point[None], normal,
                                 jnp.ones((1,), bool))
        dtype = a.pos.dtype
        frame = tangent_frame(normal)
        angles = jnp.asarray(np.pi / 4 + np.pi / 2 * np.arange(4), dtype)
        axes = jnp.cos(angles)[:, None] * frame[0] + jnp.sin(angles)[:, None] * frame[1]

        def perturbed(axis):
            rot = quat_from_axis_angle(axis, jnp.asarray(PERTURBATION_ANGLE, dtype))
            inv = rot * jnp.array([1.0, -1.0, -1.0, -1.0], dtype)
            pose = Transform(point + quat_rotate(rot, b.pos - point), quat_mul(rot, b.quat))
            res = query(a, b, pose)
            on_b = point + quat_rotate(inv, res.point_b - point)  # back on the unperturbed b
            return res.point_a, on_b

        pa, pb = jax.vmap(perturbed)(axes)
        depth = (pb - pa) @ normal
        cand_points = jnp.concatenate([point[None], 0.5 * (pa + pb)])
        cand_depth = jnp.concatenate([first.signed_distance[None], depth])
        _, radius_a = bounding_sphere(a, type_a) if type_a != GeomType.PLANE else (None, 0.0)
        _, radius_b = bounding_sphere(b, type_b)
        size = jnp.maximum(radius_a, radius_b)
        tol = point_tolerance(size) + 1e-4 * size  # above EPA's noise on the witness points
        mask = cand_depth <= jnp.maximum(margin, first.signed_distance + tol)
        index, valid = reduce_to_four(cand_points, cand_depth, mask, normal, tol)
        return make_manifold(cand_depth[index], cand_points[index], normal, valid)

    return pair, (1 if single else 4)
