"""Closed-form pair functions for planes, spheres, capsules and boxes (DESIGN §2 stage 3).

Each function maps one pair of (unbatched) :class:`~._geoms.GeomData` to a :class:`~._manifold.Manifold`
with normals from geom a to geom b; the narrow phase vmaps it over a pair group. Closed forms are
exact, cost a few flops and have no iteration cap, which is why they replace GJK/EPA for these
pairs; ``tests/collision/test_narrowphase.py`` cross-checks them against ``jc.collision.distance``.

Manifolds (≤ 4 points per pair):

* plane–sphere, sphere–sphere, sphere–capsule, sphere–box: 1 point;
* plane–capsule: the two segment end spheres (a capsule lying flat rests on a line);
* capsule–capsule: the closest points of the two segments, plus the end point of either segment
  farthest from it that is also within the contact margin (parallel capsules rest on a line);
* plane–box: the 4 deepest corners (a box on a face gets its 4 face corners);
* plane–cylinder: 4 rim points per cap (the deepest, the opposite one and the two at 90°),
  reduced to 4 (a cylinder on its cap rests on 4 rim points, on its side on a line);
* plane–mesh: hull vertices within the margin of the deepest one, reduced to 4 by area
  (:func:`~._manifold.reduce_to_four`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .._math import argmin_packed, coordinate_dot, cross, safe_norm, safe_normalize
from ._geoms import GeomData
from ._manifold import Manifold, make_manifold, reduce_to_four

__all__ = [
    "plane_sphere", "plane_capsule", "plane_box", "plane_cylinder", "plane_mesh",
    "sphere_sphere", "sphere_capsule", "capsule_capsule", "sphere_box",
    "segment_closest_points", "point_tolerance",
]

_Z = np.array([0.0, 0.0, 1.0])


def point_tolerance(length: jax.Array) -> jax.Array:
    """Distance (m) under which two contact points count as one: ``√eps · length``."""
    return jnp.sqrt(jnp.finfo(length.dtype).eps) * length


def _plane(a: GeomData):
    normal = a.rot[:, 2]
    return normal, a.pos


def _plane_points(a: GeomData, points: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Signed heights of ``points (N, 3)`` above plane a, their midpoints and the normal."""
    normal, origin = _plane(a)
    height = (points - origin) @ normal
    mid = points - 0.5 * height[:, None] * normal
    return height, mid, normal


def plane_sphere(a: GeomData, b: GeomData, margin) -> Manifold:
    normal, origin = _plane(a)
    radius = b.size[0]
    deepest = b.pos - radius * normal
    height = (deepest - origin) @ normal
    point = deepest - 0.5 * height * normal
    return make_manifold(height[None], point[None], normal, jnp.ones((1,), bool))


def _capsule_ends(g: GeomData) -> jax.Array:
    axis = g.rot[:, 2]
    return jnp.stack([g.pos - g.size[1] * axis, g.pos + g.size[1] * axis])


def plane_capsule(a: GeomData, b: GeomData, margin) -> Manifold:
    normal, _ = _plane(a)
    deepest = _capsule_ends(b) - b.size[0] * normal
    height, mid, normal = _plane_points(a, deepest)
    return make_manifold(height, mid, normal, jnp.ones((2,), bool))


_BOX_SIGNS = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], float)


def box_corners(g: GeomData) -> jax.Array:
    """``(8, 3)`` world corners of a box geom, in a fixed order."""
    local = jnp.asarray(_BOX_SIGNS, g.size.dtype) * g.size
    return g.pos + local @ g.rot.T


def plane_box(a: GeomData, b: GeomData, margin) -> Manifold:
    height, mid, normal = _plane_points(a, box_corners(b))
    _, index = jax.lax.top_k(-height, 4)
    index = jnp.sort(index)  # fixed corner order over steps: warm starts follow the corners
    return make_manifold(height[index], mid[index], normal, jnp.ones((4,), bool))


def plane_cylinder(a: GeomData, b: GeomData, margin) -> Manifold:
    """MuJoCo's plane–cylinder points (``mjc_PlaneCylinder``): the deepest rim point ``P1`` of the
    cap nearer the plane, the same radial point ``P2`` on the other cap, and two more points ``A``,
    ``B`` on the nearer cap at ±120° from ``P1`` — a line of two points for a cylinder on its
    side, a triangle for an upright one; ``P1`` is the deepest. Where the cap is parallel to the
    plane the radial direction is the cylinder's own x axis, as in MuJoCo."""
    normal, origin = _plane(a)
    axis = b.rot[:, 2]
    radius, half = b.size[0], b.size[1]
    axis_projection = normal @ axis
    # the axis pointing towards the plane
    axis = jnp.where(axis_projection > 0, -axis, axis)
    axis_projection = -jnp.abs(axis_projection)
    centre_height = (b.pos - origin) @ normal
    radial = axis * axis_projection - normal  # −normal without its component along the axis
    length_sq = radial @ radial
    tiny = jnp.asarray(1e-30, radial.dtype)  # MuJoCo's mjMINVAL²
    general = length_sq >= tiny
    radial = jnp.where(general, radial * (radius / jnp.sqrt(jnp.where(general, length_sq, 1.0))),
                       b.rot[:, 0] * radius)
    radial_projection = radial @ normal
    along = axis * half
    along_projection = axis_projection * half
    sideways = safe_normalize(cross(radial, along), fallback=b.rot[:, 1]) * (radius * 3.0 ** 0.5 / 2)
    near = b.pos + along
    points = jnp.stack([near + radial, b.pos - along + radial,
                        near + sideways - 0.5 * radial, near - sideways - 0.5 * radial])
    triangle = centre_height + along_projection - 0.5 * radial_projection  # A and B
    height = jnp.stack([centre_height + along_projection + radial_projection,
                        centre_height - along_projection + radial_projection, triangle, triangle])
    mid = points - 0.5 * height[:, None] * normal
    return make_manifold(height, mid, normal, jnp.ones((4,), bool))


def plane_mesh(a: GeomData, b: GeomData, margin) -> Manifold:
    # In the mesh frame: heights are one dot product per vertex, and only the 4 chosen points are
    # moved to the world (distances and areas of reduce_to_four do not depend on the frame).
    normal, origin = _plane(a)
    normal_mesh = b.rot.T @ normal
    lift = (b.pos - origin) @ normal

    def heights(v):  # (N,) for coordinate lists v of (N,) arrays
        # coordinate by coordinate: as a (N, 3) @ (3,) dot, XLA:CPU produced the heights of a
        # vmapped group in (pair, vertex, batch) order and copied them into the batch-major layout
        return coordinate_dot(v, normal_mesh) + lift

    # The choice of the (at most 4) contact vertices is discrete: it is made on values without
    # derivatives, and the chosen vertices' heights and points are recomputed from the pose. So a
    # derivative of the step flows through 4 vertices, not back through the heights of all N (the
    # transposed gathers were N-wide scatters per cotangent, which dominated jacrev of a step
    # on mesh robots).
    stopped = jax.lax.stop_gradient
    v = [stopped(b.vertices[:, i]) for i in range(3)]
    normal_fixed = stopped(normal_mesh)
    height = coordinate_dot(v, normal_fixed) + stopped(lift)
    mid_mesh = stopped(b.vertices) - 0.5 * height[:, None] * normal_fixed
    big = jnp.asarray(jnp.finfo(height.dtype).max / 4, height.dtype)
    height = jnp.where(b.vertex_mask, height, big)
    first = argmin_packed(height)
    deepest = height[first]
    # one square root per mesh, not per vertex
    offset = [v[i] - v[i][0] for i in range(3)]
    size = jnp.sqrt(jnp.max(coordinate_dot(offset, offset)))
    # vertices that touch (within the margin, or within rounding of the deepest one); the deepest
    # vertex is one of them whenever any is
    near = b.vertex_mask & (height <= jnp.maximum(margin, deepest + point_tolerance(size)))
    index, valid = reduce_to_four(mid_mesh, height, near, normal_fixed, point_tolerance(size), first)
    chosen = b.vertices[index]  # (4, 3), differentiable w.r.t. the vertices
    chosen_height = heights([chosen[:, i] for i in range(3)])
    chosen_mid = chosen - 0.5 * chosen_height[:, None] * normal_mesh
    return make_manifold(chosen_height, b.pos + chosen_mid @ b.rot.T, normal, valid)


def _sphere_pair(center_a, radius_a, center_b, radius_b):
    """Distance, midpoint and normal (a → b) of two spheres; ``+x`` at coincident centres (MuJoCo's
    ``mju_normalize3`` fallback in ``mjraw_SphereSphere``)."""
    delta = center_b - center_a
    normal = safe_normalize(delta, fallback=jnp.asarray([1.0, 0.0, 0.0], delta.dtype))
    dist = safe_norm(delta) - radius_a - radius_b
    point = center_a + (radius_a + 0.5 * dist) * normal
    return dist, point, normal


def sphere_sphere(a: GeomData, b: GeomData, margin) -> Manifold:
    dist, point, normal = _sphere_pair(a.pos, a.size[0], b.pos, b.size[0])
    return make_manifold(dist[None], point[None], normal, jnp.ones((1,), bool))


def _closest_on_segment(p0, p1, x):
    d = p1 - p0
    denom = d @ d
    t = jnp.clip(jnp.where(denom > 0, (x - p0) @ d / jnp.where(denom > 0, denom, 1.0), 0.0), 0.0, 1.0)
    return p0 + t * d


def sphere_capsule(a: GeomData, b: GeomData, margin) -> Manifold:
    ends = _capsule_ends(b)
    core = _closest_on_segment(ends[0], ends[1], a.pos)
    dist, point, normal = _sphere_pair(a.pos, a.size[0], core, b.size[0])
    return make_manifold(dist[None], point[None], normal, jnp.ones((1,), bool))


def segment_closest_points(p0, p1, q0, q1):
    """Closest points of segments ``[p0, p1]`` and ``[q0, q1]`` (clamped; parallel segments
    resolved by clamping the first parameter, then re-projecting)."""
    d1, d2, r = p1 - p0, q1 - q0, p0 - q0
    a, e, f = d1 @ d1, d2 @ d2, d2 @ r
    c, b = d1 @ r, d1 @ d2
    denom = a * e - b * b
    safe = lambda x: jnp.where(x > 0, x, 1.0)  # noqa: E731
    s = jnp.where(denom > 1e-12 * a * e, jnp.clip((b * f - c * e) / safe(denom), 0.0, 1.0), 0.0)
    t = jnp.where(e > 0, (b * s + f) / safe(e), 0.0)
    # t outside [0, 1]: clamp and recompute s
    t_clamped = jnp.clip(t, 0.0, 1.0)
    s = jnp.where(t == t_clamped, s, jnp.where(a > 0, jnp.clip((t_clamped * b - c) / safe(a), 0.0, 1.0), 0.0))
    return p0 + s * d1, q0 + t_clamped * d2


def capsule_capsule(a: GeomData, b: GeomData, margin) -> Manifold:
    ea, eb = _capsule_ends(a), _capsule_ends(b)
    ra, rb = a.size[0], b.size[0]
    ca, cb = segment_closest_points(ea[0], ea[1], eb[0], eb[1])
    d0, p0, n0 = _sphere_pair(ca, ra, cb, rb)
    # end points of each segment against the other segment: the far end of a line contact
    cores_a = jnp.concatenate([ea, jax.vmap(lambda x: _closest_on_segment(ea[0], ea[1], x))(eb)])
    cores_b = jnp.concatenate([jax.vmap(lambda x: _closest_on_segment(eb[0], eb[1], x))(ea), eb])
    d, p, n = jax.vmap(lambda x, y: _sphere_pair(x, ra, y, rb))(cores_a, cores_b)
    tol = point_tolerance(a.size[0] + a.size[1] + b.size[0] + b.size[1])
    spread = safe_norm(p - p0)
    usable = (d <= jnp.maximum(margin, d0 + tol)) & (spread > tol)
    k = jnp.argmax(jnp.where(usable, spread, -1.0))
    return Manifold(
        jnp.stack([d0, d[k]]), jnp.stack([p0, p[k]]), jnp.stack([n0, n[k]]),
        jnp.stack([jnp.ones((), bool), usable[k]]),
    )


def sphere_box(a: GeomData, b: GeomData, margin) -> Manifold:
    """Sphere a against box b: the closest box point to the centre; inside the box, the nearest
    face (its outward normal)."""
    half = b.size
    local = b.rot.T @ (a.pos - b.pos)
    clamped = jnp.clip(local, -half, half)
    outside = jnp.any(local != clamped)
    gap = half - jnp.abs(local)  # distance to each face pair, inside the box
    axis = jnp.argmin(gap)
    face_normal_local = jnp.where(jnp.arange(3) == axis, jnp.where(local[axis] >= 0, 1.0, -1.0), 0.0)
    surface_local = jnp.where(outside, clamped, local + gap[axis] * face_normal_local)
    delta_local = local - surface_local
    out_normal_local = jnp.where(outside, safe_normalize(delta_local, fallback=face_normal_local),
                                 face_normal_local.astype(local.dtype))
    depth_center = jnp.where(outside, safe_norm(delta_local), -gap[axis])
    dist = depth_center - a.size[0]
    box_to_sphere = b.rot @ out_normal_local
    surface = b.pos + b.rot @ surface_local
    point = surface + 0.5 * dist * box_to_sphere
    return make_manifold(dist[None], point[None], -box_to_sphere, jnp.ones((1,), bool))
