"""Box–box contact: separating-axis test and reference-face clipping (closed form, no iterations).

1. **Separating axis test** over the 15 candidate axes of two boxes (3 face normals of each box and
   the 9 cross products of their edge directions; Gottschalk, Lin & Manocha, OBBTree, 1996). Along
   a unit axis ``u`` the boxes are separated by
   ``s(u) = |u·(c_b − c_a)| − Σ_i h_a,i |u·a_i| − Σ_j h_b,j |u·b_j|``; the axis with the largest
   ``s`` gives the contact normal and ``-s`` the penetration depth (when ``s > 0`` it is a lower
   bound of the distance, enough to decide against the contact margin). Face axes win ties with
   edge axes (an edge axis must beat the best face by a small relative tolerance): resting boxes
   keep a face normal whatever the rounding.
2. **Face contact** (the axis is a face normal of one box, the *reference* box): the face of the
   other box most anti-parallel to the normal is the *incident* face. The contact polygon is the
   intersection of the reference face (a rectangle) with the incident face projected on its plane.
   The vertices of the intersection of two convex polygons are (a) the incident vertices inside
   the rectangle, (b) the rectangle corners inside the incident quad and (c) the crossings of
   their edges (4 × 4). All 24 candidates are computed with masks (static shapes, no polygon
   bookkeeping), each with its depth ``n·(p − c_ref)`` measured on the incident face, and reduced
   to 4 by :func:`~._manifold.reduce_to_four`. This is Sutherland–Hodgman clipping written as a
   candidate set.
3. **Edge contact** (a cross-product axis): one point, the closest points of the two supporting
   edges.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .._math import cross, safe_norm
from ._geoms import GeomData
from ._manifold import Manifold, reduce_to_four
from ._primitives import point_tolerance, segment_closest_points

__all__ = ["box_box", "separating_axes"]

# cyclic order of a face's corners in its two tangent coordinates
_QUAD = np.array([[1.0, 1.0], [-1.0, 1.0], [-1.0, -1.0], [1.0, -1.0]])


def separating_axes(a: GeomData, b: GeomData):
    """The 15 SAT axes ``(15, 3)`` (unit; degenerate cross products flagged) and separations.

    Returns ``(axes, separation (15,), usable (15,))``.
    """
    ra, rb = a.rot, b.rot
    edge_axes = cross(ra.T[:, None, :], rb.T[None, :, :]).reshape(9, 3)
    length = safe_norm(edge_axes)
    # near-parallel edges give no usable axis (their face axes cover the case)
    usable_cross = length > 1e-3
    edge_axes = edge_axes / jnp.where(usable_cross, length, 1.0)[:, None]
    axes = jnp.concatenate([ra.T, rb.T, edge_axes])
    delta = b.pos - a.pos
    extent_a = jnp.abs(axes @ ra) @ a.size
    extent_b = jnp.abs(axes @ rb) @ b.size
    separation = jnp.abs(axes @ delta) - extent_a - extent_b
    usable = jnp.concatenate([jnp.ones((6,), bool), usable_cross])
    return axes, separation, usable


def _face_candidates(ref_center, ref_u, ref_v, ref_hu, ref_hv, ref_normal, inc_corners, inc_normal):
    """Candidate contact points of a reference rectangle and an incident quad (module doc, 2).

    Returns ``(points (24, 3) on the incident face, depth (24,), mask (24,))``.
    """
    dtype = ref_center.dtype
    rel = inc_corners - ref_center
    inc2 = jnp.stack([rel @ ref_u, rel @ ref_v], axis=-1)  # (4, 2) projected incident quad
    # (a) incident corners inside the reference rectangle
    inside_rect = (jnp.abs(inc2[:, 0]) <= ref_hu) & (jnp.abs(inc2[:, 1]) <= ref_hv)
    points_a = inc_corners
    # (b) rectangle corners inside the projected incident quad (consistent edge-side signs)
    quad = jnp.asarray(_QUAD, dtype)
    rect2 = quad * jnp.stack([ref_hu, ref_hv])
    edge2 = jnp.roll(inc2, -1, axis=0) - inc2  # (4, 2)
    side = edge2[None, :, 0] * (rect2[:, None, 1] - inc2[None, :, 1]) - edge2[None, :, 1] * (
        rect2[:, None, 0] - inc2[None, :, 0])  # (4 rect corners, 4 edges)
    inside_quad = jnp.all(side >= 0, axis=1) | jnp.all(side <= 0, axis=1)
    rect3 = ref_center + rect2[:, 0:1] * ref_u + rect2[:, 1:2] * ref_v
    cos = ref_normal @ inc_normal
    safe_cos = jnp.where(jnp.abs(cos) > 1e-6, cos, -1.0)
    lift = ((inc_corners[0] - rect3) @ inc_normal) / safe_cos  # along ref_normal to the incident plane
    points_b = rect3 + lift[:, None] * ref_normal
    # (c) crossings of rectangle edges with incident edges
    rect_edge = jnp.roll(rect2, -1, axis=0) - rect2
    r0, rd = rect2[:, None, :], rect_edge[:, None, :]  # (4, 1, 2)
    q0, qd = inc2[None, :, :], edge2[None, :, :]  # (1, 4, 2)
    cross2 = lambda x, y: x[..., 0] * y[..., 1] - x[..., 1] * y[..., 0]  # noqa: E731
    denom = cross2(rd, qd)  # (4, 4)
    ok = jnp.abs(denom) > 1e-12 * (safe_norm(rd) * safe_norm(qd))
    safe_denom = jnp.where(ok, denom, 1.0)
    s = cross2(q0 - r0, qd) / safe_denom  # parameter on the rectangle edge
    t = cross2(q0 - r0, rd) / safe_denom  # parameter on the incident edge
    crossing = ok & (s >= 0) & (s <= 1) & (t >= 0) & (t <= 1)
    inc_start = inc_corners[None, :, :]
    inc_dir = (jnp.roll(inc_corners, -1, axis=0) - inc_corners)[None, :, :]
    points_c = (inc_start + t[..., None] * inc_dir).reshape(16, 3)
    points = jnp.concatenate([points_a, points_b, points_c])
    mask = jnp.concatenate([inside_rect, inside_quad, crossing.reshape(16)])
    depth = (points - ref_center) @ ref_normal
    return points, depth, mask


def _box_face(g: GeomData, axis, sign):
    """Center, unit tangents (u, v), half sizes and outward normal of face ``sign·axis`` of ``g``."""
    normal = sign * g.rot[:, axis]
    iu, iv = (axis + 1) % 3, (axis + 2) % 3
    return (g.pos + g.size[axis] * normal, g.rot[:, iu], g.rot[:, iv], g.size[iu], g.size[iv], normal)


def _incident_corners(g: GeomData, direction):
    """Corners ``(4, 3)`` (cyclic) and outward normal of the face of ``g`` most aligned with
    ``direction``."""
    align = g.rot.T @ direction
    axis = jnp.argmax(jnp.abs(align))
    sign = jnp.where(align[axis] >= 0, 1.0, -1.0).astype(g.pos.dtype)
    center, u, v, hu, hv, normal = _box_face(g, axis, sign)
    quad = jnp.asarray(_QUAD, g.pos.dtype)
    corners = center + quad[:, 0:1] * hu * u + quad[:, 1:2] * hv * v
    return corners, normal


def _select(flag, x, y):
    return jax.tree_util.tree_map(lambda p, q: jnp.where(flag, p, q), x, y)


def box_box(a: GeomData, b: GeomData, margin) -> Manifold:
    """Box a against box b: ≤ 4 contacts, normals from a to b (module docstring)."""
    dtype = a.pos.dtype
    axes, separation, usable = separating_axes(a, b)
    neg = jnp.asarray(-jnp.finfo(dtype).max / 4, dtype)
    separation = jnp.where(usable, separation, neg)
    best_face = jnp.argmax(separation[:6])
    best_edge = 6 + jnp.argmax(separation[6:])
    scale = jnp.minimum(jnp.min(a.size), jnp.min(b.size))
    use_edge = separation[best_edge] > separation[best_face] + 1e-3 * scale
    axis_index = jnp.where(use_edge, best_edge, best_face)
    delta = b.pos - a.pos
    axis = axes[axis_index]
    normal = jnp.where(axis @ delta >= 0, 1.0, -1.0) * axis  # from a towards b
    depth_sat = separation[axis_index]
    tol = point_tolerance(jnp.maximum(safe_norm(a.size), safe_norm(b.size)))

    # ---- face contact: reference box is a (face axes 0-2) or b (3-5)
    ref_is_a = best_face < 3
    ref, inc = _select(ref_is_a, a, b), _select(ref_is_a, b, a)
    ref_normal = jnp.where(ref_is_a, normal, -normal)  # outward from the reference box
    ref_axis = best_face % 3
    ref_sign = jnp.where(ref.rot[:, ref_axis] @ ref_normal >= 0, 1.0, -1.0).astype(dtype)
    center, u, v, hu, hv, face_normal = _box_face(ref, ref_axis, ref_sign)
    inc_corners, inc_normal = _incident_corners(inc, -face_normal)
    points, depth, mask = _face_candidates(center, u, v, hu, hv, face_normal, inc_corners, inc_normal)
    mask = mask & (depth <= jnp.maximum(margin, depth_sat + tol))
    mid = points - 0.5 * depth[:, None] * face_normal
    index, valid = reduce_to_four(mid, depth, mask, face_normal, tol)
    face_out_normal = jnp.where(ref_is_a, face_normal, -face_normal)

    # ---- edge contact: supporting edges of each box along the normal
    edge = axis_index - 6
    ia, ib = edge // 3, edge % 3
    sa = jnp.where(a.rot.T @ normal >= 0, 1.0, -1.0).astype(dtype)
    sb = jnp.where(b.rot.T @ (-normal) >= 0, 1.0, -1.0).astype(dtype)
    off_a = jnp.where(jnp.arange(3) == ia, 0.0, sa * a.size)
    off_b = jnp.where(jnp.arange(3) == ib, 0.0, sb * b.size)
    mid_a, mid_b = a.pos + a.rot @ off_a, b.pos + b.rot @ off_b
    dir_a, dir_b = a.rot[:, ia] * a.size[ia], b.rot[:, ib] * b.size[ib]
    pa, pb = segment_closest_points(mid_a - dir_a, mid_a + dir_a, mid_b - dir_b, mid_b + dir_b)
    edge_depth = (pb - pa) @ normal
    edge_point = 0.5 * (pa + pb)

    pad = lambda x: jnp.concatenate([x[None], jnp.zeros((3,) + x.shape, x.dtype)])  # noqa: E731
    distance = jnp.where(use_edge, pad(edge_depth), depth[index])
    point = jnp.where(use_edge, pad(edge_point), mid[index])
    out_normal = jnp.where(use_edge, normal, face_out_normal)
    valid = jnp.where(use_edge, jnp.arange(4) == 0, valid)
    return Manifold(distance, point, jnp.broadcast_to(out_normal, point.shape), valid)
