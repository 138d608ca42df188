"""Contact manifolds: the per-pair output of the narrow phase and its reduction to ≤ 4 points.

A pair function returns a :class:`Manifold` with a static number ``K ≤ 4`` of slots. Candidate
point sets larger than 4 (box corners, hull vertices, face-clipping polygons, perturbed queries)
are reduced by :func:`reduce_to_four`, the usual area-maximising selection:

1. the deepest candidate (so the largest penetration is always resolved);
2. the candidate farthest from it;
3. the candidate that maximises the signed area of the triangle with 1–2 on one side of the line,
4. and the one that minimises it (the other side).

For a resting face this keeps the corners of the contact polygon, so the support polygon of a box
or mesh on a face is the whole face and the object rests stably (DESIGN §2 stage 3, "contact
manifold ≤ k points per pair").
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from .._math import argmax_packed, argmin_packed, coordinate_dot, cross, safe_normalize

__all__ = ["Manifold", "reduce_to_four", "tangent_frame", "make_manifold"]


class Manifold(eqx.Module):
    """Contacts of one geom pair (``K`` static slots; add leading axes to batch).

    Attributes:
      distance: ``(K,)`` signed distance along the normal (m; < 0 penetration).
      point: ``(K, 3)`` world contact point, midway between the two surfaces.
      normal: ``(K, 3)`` unit normal from geom a towards geom b.
      valid: ``(K,)`` bool, the slot holds a real contact point (inactive slots are padding; the
        contact margin is applied later).
    """

    distance: jax.Array
    point: jax.Array
    normal: jax.Array
    valid: jax.Array


def make_manifold(distance, point, normal, valid) -> Manifold:
    """Build a :class:`Manifold`, broadcasting a single ``(3,)`` normal over the slots."""
    distance = jnp.asarray(distance)
    normal = jnp.broadcast_to(normal, point.shape)
    return Manifold(distance, point, normal, jnp.asarray(valid, bool))


def tangent_frame(normal: jax.Array) -> jax.Array:
    """``(..., 3, 3)`` rows ``(t1, t2, n)`` of a right-handed frame with ``n`` last.

    ``t1`` is the component of a fixed helper axis (world x, or world y when ``n`` is close to x)
    orthogonal to ``n``: the same normal always gives the same frame, so forces warm-started in
    frame coordinates stay meaningful from one step to the next.
    """
    n = normal
    dtype = n.dtype
    use_y = jnp.abs(n[..., 0:1]) > 0.9
    helper = jnp.where(use_y, jnp.array([0.0, 1.0, 0.0], dtype), jnp.array([1.0, 0.0, 0.0], dtype))
    t1 = safe_normalize(helper - n * jnp.sum(helper * n, axis=-1, keepdims=True),
                        fallback=jnp.array([0.0, 0.0, 1.0], dtype))
    t2 = cross(n, t1)
    return jnp.stack([t1, t2, n], axis=-2)


def reduce_to_four(points: jax.Array, depth: jax.Array, mask: jax.Array, normal: jax.Array,
                   tolerance: jax.Array, first: jax.Array | None = None) -> tuple[jax.Array, jax.Array]:
    """Choose ≤ 4 spread-out candidates (see module docstring).

    Args:
      points: ``(N, 3)`` candidate points (world).
      depth: ``(N,)`` signed distances (smaller = deeper).
      mask: ``(N,)`` bool, usable candidates.
      normal: ``(3,)`` contact normal (areas are measured in the plane orthogonal to it).
      tolerance: length (m) under which two points count as the same point.
      first: optional scalar index of the deepest usable candidate (the smallest index among
        equals), when the caller has it already; saves one pass over the candidates.
    Returns:
      ``(index (4,) int32, valid (4,) bool)``; invalid slots point at candidate 0.
    """
    dtype = points.dtype
    big = jnp.asarray(jnp.finfo(dtype).max / 4, dtype)
    any_valid = jnp.any(mask)
    if first is None:
        first = argmin_packed(jnp.where(mask, depth, big))
    p1 = points[first]
    # Component by component, not as sums over a size-3 axis: XLA:CPU lowers those reductions and
    # the cross product's operand to slow programs.
    offset = [points[:, i] - p1[i] for i in range(3)]
    dist2 = coordinate_dot(offset, offset)
    second = argmax_packed(jnp.where(mask, dist2, -1.0))
    p2 = points[second]
    second_ok = any_valid & (dist2[second] > tolerance**2)
    # twice the signed triangle area: cross(p2 - p1, p - p1) . n = (p - p1) . (n x (p2 - p1))
    side = cross(normal, p2 - p1)
    area = coordinate_dot(offset, side)
    third = argmax_packed(jnp.where(mask, area, -big))
    fourth = argmin_packed(jnp.where(mask, area, big))
    length = jnp.sqrt(jnp.maximum(dist2[second], 0.0))
    # a point off the line 1-2 by more than the tolerance
    third_ok = second_ok & (area[third] > tolerance * length)
    fourth_ok = second_ok & (-area[fourth] > tolerance * length)
    index = jnp.stack([first, second, third, fourth]).astype(jnp.int32)
    valid = jnp.stack([any_valid, second_ok, third_ok, fourth_ok])
    return jnp.where(valid, index, 0), valid
