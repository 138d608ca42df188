"""Expanding Polytope Algorithm (EPA) with a fixed polytope budget.

Seed 000 "GJK++" §I (EPA [13]): when GJK finds the origin inside the Minkowski difference
``D = A - B``, the penetration depth is the distance from the origin to the boundary of D. EPA
grows a polytope inside D that contains the origin: it repeatedly takes the face closest to the
origin, adds the support point of D along that face's normal, removes the faces that see the new
point and closes the hole with a fan of faces along the horizon.

Static-shape representation: ``max_vertices`` vertex slots and ``2 * max_vertices`` face slots,
an ``active`` mask on faces, and per-face adjacency across each edge, so the horizon is found and
re-stitched with gathers and scatters only (no search over all edge pairs). When the budget runs
out or the polytope becomes numerically inconsistent the loop stops with ``converged = False``
and returns the best face found so far — never NaN.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp

from .._math import argmin_first, cross, first_true_indices, safe_norm, safe_normalize

__all__ = ["EPAResult", "run_epa"]

#: Vertex slots of a first, small polytope (``run_epa``'s ``first_vertices``): most box and
#: polyhedral hull pairs converge within it; smooth shapes (ellipsoids) often continue.
FIRST_TIER_VERTICES = 32
_MAX_HORIZON = 48

SupportFn = Callable[[jax.Array], tuple[jax.Array, jax.Array, jax.Array]]


class EPAResult(NamedTuple):
    """Penetration along the closest face of the final polytope.

    ``depth`` ≥ 0 (m; slightly negative only when the origin is within rounding of the surface),
    ``normal`` (3,) unit outward normal of D there (= contact normal from A towards B),
    ``point_a`` / ``point_b`` (3,) witness points with ``point_a - point_b = depth * normal``.
    ``degenerate``: D has no 3-D extent (the cores of swept spheres: point - point, point -
    segment, parallel segments); ``depth`` is then 0, ``normal`` is perpendicular to D's span
    (any unit vector for a point) and the witnesses must come from GJK's simplex.
    """

    depth: jax.Array
    normal: jax.Array
    point_a: jax.Array
    point_b: jax.Array
    iterations: jax.Array
    converged: jax.Array
    degenerate: jax.Array


class _Polytope(NamedTuple):
    vertices: jax.Array  # (V, 3) points of D
    # (V, 2, 3) the support points of A and B behind each vertex (one array: one scatter)
    witnesses: jax.Array
    num_vertices: jax.Array  # int32
    faces: jax.Array  # (F, 3) int32, counter-clockwise seen from outside
    adjacency: jax.Array  # (F, 3) int32: face across edge e = (faces[f, e], faces[f, e+1])
    active: jax.Array  # (F,) bool
    normals: jax.Array  # (F, 3) outward unit normals
    distances: jax.Array  # (F,) signed distance of the face plane from the origin
    selectable: jax.Array  # (F,) bool: non-degenerate
    iterations: jax.Array
    done: jax.Array
    converged: jax.Array
    exhausted: jax.Array  # stopped unconverged for lack of vertex or face slots


def _face_geometry(vertices, faces, tiny_area):
    a, b, c = vertices[faces[:, 0]], vertices[faces[:, 1]], vertices[faces[:, 2]]
    scaled_normal = cross(b - a, c - a)
    area2 = safe_norm(scaled_normal)
    normal = safe_normalize(scaled_normal)
    distance = jnp.sum(normal * a, -1)
    return normal, distance, area2 > tiny_area


def _raw_barycentric(a, b, c, p):
    """Unclamped barycentric coordinates of ``p`` in the plane of abc (0 for a degenerate one)."""
    normal = cross(b - a, c - a)
    nn = jnp.dot(normal, normal)
    inv = jnp.where(nn > 0, 1.0 / jnp.where(nn > 0, nn, 1.0), 0.0)
    wa = jnp.dot(cross(b - p, c - p), normal) * inv
    wb = jnp.dot(cross(c - p, a - p), normal) * inv
    return jnp.stack([wa, wb, 1.0 - wa - wb])


def _triangle_barycentric(a, b, c, p):
    """Barycentric coordinates of ``p`` (in the plane of abc), clamped into the triangle."""
    w = _raw_barycentric(a, b, c, p)
    # Clamp into the triangle (rounding) and renormalise.
    w = jnp.clip(w, 0.0, 1.0)
    total = jnp.sum(w)
    return jnp.where(total > 0, w / jnp.where(total > 0, total, 1.0), jnp.full(3, 1.0 / 3, w.dtype))


def _initial_polytope(support_fn, gjk_points, gjk_a, gjk_b, gjk_mask, max_vertices, tiny_area):
    """A tetrahedron of points of D whose closure contains the origin.

    A rank-4 GJK simplex is used as is. Lower ranks (GJK stopped with the origin on a vertex,
    edge or triangle of its simplex) are completed: a point → a segment through it, a segment → a
    triangle with a support point perpendicular to it, and a triangle → a tetrahedron with the
    support point farther from its plane. The origin then lies in the closed triangle, hence in
    the closed tetrahedron, and a tetrahedron is always convex (a bipyramid need not be).
    """
    dtype = gjk_points.dtype
    rank = jnp.sum(gjk_mask)
    order = jnp.argsort(~gjk_mask)  # active slots first (stable)
    p = gjk_points[order]
    pa = gjk_a[order]
    pb = gjk_b[order]
    e = jnp.eye(3, dtype=dtype)

    # rank 1: a second point opposite to the first (which is ~ the origin)
    s1, s1a, s1b = support_fn(-safe_normalize(p[0], fallback=e[0]))
    p1 = jnp.where(rank >= 2, p[1], s1)
    p1a = jnp.where(rank >= 2, pa[1], s1a)
    p1b = jnp.where(rank >= 2, pb[1], s1b)
    # rank ≤ 2: a third point, the support perpendicular to the segment on its wider side
    axis = p1 - p[0]
    perp = safe_normalize(cross(axis, e[jnp.argmin(jnp.abs(axis))]), fallback=e[1])
    plus, plus_a, plus_b = support_fn(perp)
    minus, minus_a, minus_b = support_fn(-perp)
    use_plus = jnp.dot(perp, plus - p[0]) >= -jnp.dot(perp, minus - p[0])
    p2 = jnp.where(rank >= 3, p[2], jnp.where(use_plus, plus, minus))
    p2a = jnp.where(rank >= 3, pa[2], jnp.where(use_plus, plus_a, minus_a))
    p2b = jnp.where(rank >= 3, pb[2], jnp.where(use_plus, plus_b, minus_b))
    # rank ≤ 3: the apex farther from the triangle's plane
    normal = safe_normalize(cross(p1 - p[0], p2 - p[0]), fallback=e[2])
    top, top_a, top_b = support_fn(normal)
    bottom, bottom_a, bottom_b = support_fn(-normal)
    use_top = jnp.dot(normal, top - p[0]) >= -jnp.dot(normal, bottom - p[0])
    p3 = jnp.where(rank >= 4, p[3], jnp.where(use_top, top, bottom))
    p3a = jnp.where(rank >= 4, pa[3], jnp.where(use_top, top_a, bottom_a))
    p3b = jnp.where(rank >= 4, pb[3], jnp.where(use_top, top_b, bottom_b))

    v = jnp.stack([p[0], p1, p2, p3])
    va = jnp.stack([pa[0], p1a, p2a, p3a])
    vb = jnp.stack([pb[0], p1b, p2b, p3b])
    # Outward orientation: with a positive signed volume, these faces are counter-clockwise.
    positive = jnp.dot(cross(v[1] - v[0], v[2] - v[0]), v[3] - v[0]) > 0
    faces4 = jnp.where(
        positive,
        jnp.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]], jnp.int32),
        jnp.array([[0, 1, 2], [0, 3, 1], [0, 2, 3], [1, 3, 2]], jnp.int32),
    )
    # Adjacency by matching reversed edges among the four faces.
    edges_to = jnp.roll(faces4, -1, axis=1)
    match = (faces4[:, :, None, None] == edges_to[None, None, :, :]) & (
        edges_to[:, :, None, None] == faces4[None, None, :, :]
    )
    adjacency4 = jnp.argmax(jnp.any(match, axis=3), axis=2).astype(jnp.int32)

    # The tetrahedron, then the free and inactive slots of the budget (unused faces get their
    # geometry when filled).
    normals4, distances4, selectable4 = _face_geometry(v, faces4, tiny_area)
    tetrahedron = _Polytope(
        v, jnp.stack([va, vb], 1), jnp.asarray(4, jnp.int32), faces4, adjacency4,
        jnp.ones(4, bool), normals4, distances4, selectable4,
        iterations=jnp.zeros((), jnp.int32), done=jnp.zeros((), bool), converged=jnp.zeros((), bool),
        exhausted=jnp.zeros((), bool),
    )
    return _pad(tetrahedron, max_vertices)


def _grow_region(seed: jax.Array, allowed: jax.Array, adjacency: jax.Array) -> jax.Array:
    """Faces of ``allowed`` connected to ``seed`` across edges: ``(F,)`` bool (flood fill)."""

    def step(carry):
        region, _ = carry
        grown = region | (allowed & jnp.any(region[adjacency], axis=1))
        return grown, jnp.any(grown != region)

    # Each pass adds one ring of faces; the region is usually a handful of faces across.
    region, _ = jax.lax.while_loop(lambda c: c[1], step, (seed, jnp.ones((), bool)))
    return region


def _closest_face(poly: _Polytope):
    candidates = poly.active & poly.selectable
    return argmin_first(jnp.where(candidates, poly.distances, jnp.inf))


def _expand(poly: _Polytope, support_fn: SupportFn, tol, tiny_area) -> _Polytope:
    """EPA iterations until convergence, a stop, or the polytope's slots are used up."""
    num_faces = poly.faces.shape[0]
    max_v = poly.vertices.shape[0]
    # Static bound on the horizon length: the fan of new faces (and their geometry) is computed
    # on this many rows instead of all face slots. A longer horizon stops EPA (not converged).
    max_horizon = min(num_faces, _MAX_HORIZON)

    def body(poly: _Polytope) -> _Polytope:
        best = _closest_face(poly)
        normal = poly.normals[best]
        s, s_a, s_b = support_fn(normal)
        gap = jnp.dot(normal, s) - poly.distances[best]
        converged = gap <= tol
        out_of_budget = poly.num_vertices >= max_v

        new_index = poly.num_vertices
        # Faces that see the new point are removed: the connected region of seeing faces around
        # the closest face (which always sees it). On an exactly convex polytope every seeing
        # face is in that region; in floating point a far face can pass the test by rounding,
        # and removing it would tear a second hole the fan cannot close.
        # (the plane offsets are stored: no gather of the faces' vertices)
        sees = poly.active & (jnp.sum(poly.normals * s, -1) > poly.distances)
        visible = _grow_region(jnp.zeros_like(sees).at[best].set(True), sees, poly.adjacency)
        neighbor_visible = visible[poly.adjacency]  # (F, 3)
        horizon = visible[:, None] & ~neighbor_visible  # (F, 3) edges to re-stitch
        num_horizon = jnp.sum(horizon)
        free = ~poly.active | visible
        enough_slots = (jnp.sum(free) >= num_horizon) & (num_horizon <= max_horizon)

        # k-th horizon edge gets the k-th free face slot.
        edge_ids = first_true_indices(horizon.reshape(-1), max_horizon)
        valid = jnp.arange(max_horizon) < num_horizon
        slots = first_true_indices(free, max_horizon)
        old_face = (edge_ids // 3).astype(jnp.int32)
        old_edge = edge_ids % 3
        start = poly.faces[old_face, old_edge]
        end = poly.faces[old_face, (old_edge + 1) % 3]
        outer = poly.adjacency[old_face, old_edge]

        drop = jnp.where(valid, 0, max_v)  # out-of-range index: scatter dropped
        slot_by_start = jnp.zeros(max_v, jnp.int32).at[start + drop].set(slots, mode="drop")
        slot_by_end = jnp.zeros(max_v, jnp.int32).at[end + drop].set(slots, mode="drop")
        # The horizon must be one simple loop: each vertex starts and ends exactly one edge.
        starts = jnp.zeros(max_v, jnp.int32).at[start + drop].add(1, mode="drop")
        ends = jnp.zeros(max_v, jnp.int32).at[end + drop].add(1, mode="drop")
        consistent = jnp.all(starts == ends) & jnp.all(starts <= 1) & (num_horizon >= 3)
        stop = converged | out_of_budget | ~enough_slots | ~consistent
        # Out of room, not out of luck: a larger budget continues from this polytope (``run_epa``).
        exhausted = ~converged & (out_of_budget | ~enough_slots)

        # A stopping iteration leaves the polytope as it is: its scatters get out-of-range indices
        # (dropped) instead of selecting between an old and a grown polytope afterwards, so the
        # loop state is updated in place (no copies of it, fewer kernels to compile and launch).
        write = valid & ~stop
        new_faces = jnp.stack([start, end, jnp.full_like(start, new_index)], -1)
        new_adjacency = jnp.stack([outer, slot_by_start[end], slot_by_end[start]], -1)
        slot_or_drop = jnp.where(write, slots, num_faces)
        faces = poly.faces.at[slot_or_drop].set(new_faces, mode="drop")
        adjacency = poly.adjacency.at[slot_or_drop].set(new_adjacency, mode="drop")
        # The face beyond each horizon edge now borders the new face instead of the removed one.
        outer_edge = jnp.argmax(poly.adjacency[outer] == old_face[:, None], axis=1)
        outer_or_drop = jnp.where(write, outer, num_faces)
        adjacency = adjacency.at[outer_or_drop, outer_edge].set(slots, mode="drop")
        added = jnp.zeros(num_faces, bool).at[slot_or_drop].set(True, mode="drop")
        active = jnp.where(stop, poly.active, (poly.active & ~visible) | added)

        vertex_or_drop = jnp.where(stop, max_v, new_index)
        vertices = poly.vertices.at[vertex_or_drop].set(s, mode="drop")
        witnesses = poly.witnesses.at[vertex_or_drop].set(jnp.stack([s_a, s_b]), mode="drop")
        # Only the fan is new: vertices never move, so every other face keeps its geometry.
        fan_normals, fan_distances, fan_selectable = _face_geometry(vertices, new_faces, tiny_area)
        normals = poly.normals.at[slot_or_drop].set(fan_normals, mode="drop")
        distances = poly.distances.at[slot_or_drop].set(fan_distances, mode="drop")
        selectable = poly.selectable.at[slot_or_drop].set(fan_selectable, mode="drop")
        return _Polytope(
            vertices, witnesses, poly.num_vertices + jnp.where(stop, 0, 1), faces,
            adjacency, active, normals, distances, selectable,
            # An exhausted iteration is redone with more room; it does not count.
            iterations=poly.iterations + jnp.where(exhausted, 0, 1), done=stop,
            converged=converged, exhausted=exhausted,
        )

    def cond(poly: _Polytope):
        return ~poly.done & (poly.iterations < max_v)

    return jax.lax.while_loop(cond, body, poly)


def _pad(poly: _Polytope, max_vertices: int) -> _Polytope:
    """The same polytope in ``max_vertices`` vertex slots (``2 * max_vertices`` face slots).

    Slot indices are unchanged and the new slots are free and inactive, so growing a padded
    polytope is exactly what one run with the larger budget would have done (same faces, same
    slots).
    """
    def grow(x, rows):
        return jnp.zeros((rows,) + x.shape[1:], x.dtype).at[: x.shape[0]].set(x)

    num_faces = 2 * max_vertices
    return poly._replace(
        vertices=grow(poly.vertices, max_vertices),
        witnesses=grow(poly.witnesses, max_vertices),
        faces=grow(poly.faces, num_faces),
        adjacency=grow(poly.adjacency, num_faces),
        active=grow(poly.active, num_faces),
        normals=grow(poly.normals, num_faces),
        distances=grow(poly.distances, num_faces),
        selectable=grow(poly.selectable, num_faces),
    )


def run_epa(
    support_fn: SupportFn,
    gjk_points: jax.Array,
    gjk_support_a: jax.Array,
    gjk_support_b: jax.Array,
    gjk_mask: jax.Array,
    length_scale: jax.Array,
    *,
    max_vertices: int,
    tolerance: jax.Array,
    skip: jax.Array | bool = False,
    first_vertices: int | None = None,
) -> EPAResult:
    """Penetration depth, normal and witness points of intersecting shapes.

    With ``first_vertices``, the polytope first grows in that many vertex slots and a query
    that runs out of them continues from where it stopped in ``max_vertices`` slots. Polyhedral
    pairs converge in the small polytope, whose per-iteration work (every face slot is visited)
    is a fraction of the full one's; under ``vmap`` the second loop runs only while some lane
    still needs it. The result is the same as one run with ``max_vertices`` (same faces in the
    same slots); the price is a second compiled loop.

    Args:
      support_fn: ``u ↦ (s, s_a, s_b)``, support of ``D = A - B`` in direction ``u`` (max).
      gjk_points, gjk_support_a, gjk_support_b: ``(4, 3)`` final GJK simplex (world frame).
      gjk_mask: ``(4,)`` its active vertices (origin inside their convex hull, up to rounding).
      length_scale: characteristic length L (m).
      max_vertices: static polytope budget (faces: ``2 * max_vertices``).
      tolerance: relative; stop when the support along the closest face normal is within
        ``tolerance * L`` of the face (the depth is then accurate to that).
      skip: traced flag; when True the loop does not run (the result is then meaningless).
      first_vertices: static budget of the first, smaller polytope (``None`` or
        ``>= max_vertices``: one polytope only); ``distance`` passes ``FIRST_TIER_VERTICES``
        under ``vmap``.
    """
    for name, value in (("max_vertices", max_vertices), ("first_vertices", first_vertices)):
        if value is not None and (not isinstance(value, int) or value < 4):
            # the initial tetrahedron needs 4 vertex slots
            raise ValueError(f"run_epa: {name} must be an int >= 4, got {value!r}")
    dtype = gjk_points.dtype
    tol = jnp.asarray(tolerance, dtype) * length_scale
    tiny_area = jnp.asarray(16 * jnp.finfo(dtype).eps, dtype) * length_scale**2
    first = max_vertices if first_vertices is None else min(first_vertices, max_vertices)
    poly = _initial_polytope(
        support_fn, gjk_points, gjk_support_a, gjk_support_b, gjk_mask, first, tiny_area
    )
    poly = _expand(poly._replace(done=jnp.asarray(skip)), support_fn, tol, tiny_area)
    if first < max_vertices:
        # only the lanes that ran out of room continue
        poly = _pad(poly, max_vertices)._replace(
            done=~poly.exhausted, exhausted=jnp.zeros((), bool)
        )
        poly = _expand(poly, support_fn, tol, tiny_area)

    # Coplanar faces (flat patches of D) tie on distance; the witness must come from the one
    # whose triangle contains the origin's projection, which exists on a convex polytope.
    a_all = poly.vertices[poly.faces[:, 0]]
    b_all = poly.vertices[poly.faces[:, 1]]
    c_all = poly.vertices[poly.faces[:, 2]]
    projection = poly.distances[:, None] * poly.normals
    raw = jax.vmap(_raw_barycentric)(a_all, b_all, c_all, projection)
    contains = jnp.all(raw >= -1e-9, axis=-1)
    candidates = poly.active & poly.selectable
    best_any = _closest_face(poly)
    slack = tol + jnp.abs(poly.distances[best_any]) * 1e-9
    near = poly.distances <= poly.distances[best_any] + slack
    preferred = candidates & contains & near
    best = jnp.where(
        jnp.any(preferred), argmin_first(jnp.where(preferred, poly.distances, jnp.inf)), best_any
    )
    # No face with an area: D is a point or a segment. Its depth is 0 and any direction
    # perpendicular to its span is a valid normal.
    degenerate = ~jnp.any(candidates)
    span = poly.vertices[1] - poly.vertices[0]
    e = jnp.eye(3, dtype=dtype)
    perpendicular = safe_normalize(cross(span, e[jnp.argmin(jnp.abs(span))]), fallback=e[2])
    normal = jnp.where(degenerate, perpendicular, poly.normals[best])
    depth = jnp.where(degenerate, 0.0, poly.distances[best])
    ids = poly.faces[best]
    a, b, c = poly.vertices[ids[0]], poly.vertices[ids[1]], poly.vertices[ids[2]]
    w = _triangle_barycentric(a, b, c, depth * normal)
    point_a = w @ poly.witnesses[ids, 0]
    point_b = w @ poly.witnesses[ids, 1]
    converged = poly.converged | degenerate
    return EPAResult(depth, normal, point_a, point_b, poly.iterations, converged, degenerate)
