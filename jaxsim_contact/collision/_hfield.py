"""Height fields: MuJoCo ``hfield`` geoms against convex geoms, one triangular prism per half cell.

A height field (MuJoCo XML reference "hfield"; Computation chapter "Collision detection") is a
grid of ``nrow × ncol`` elevations in its geom frame: vertex ``(r, c)`` sits at
``x = -s₀ + 2 s₀ c / (ncol - 1)``, ``y = -s₁ + 2 s₁ r / (nrow - 1)``, ``z = data[r, c] · s₂``
(``data`` normalised to [0, 1], ``s = hfield_size``), and the solid extends down to ``z = -s₃``.
Each cell splits along its diagonal from ``(c, r)`` to ``(c + 1, r + 1)`` into two triangles; the
solid under a triangle is a convex prism (its three top vertices and their projections on the
base), as in MuJoCo C's ``mjc_ConvexHField`` and MJX. Touching the height field means touching
one of its prisms, so the distance of a convex geom to the field is the smallest distance to a
prism, and a contact on a prism's top face has the triangle's normal.

Per pair the narrow phase takes a *window* of cells around the convex geom (a static count of
rows and columns, from the geom's bounding radius and the cell size: every cell the geom's
bounding box can overlap, :func:`window_cells`), builds its ``2 · rows · cols`` prisms from the
elevations (a ``lax.dynamic_slice`` of the grid: the elevations stay dynamic model leaves and
differentiable), computes the geom's signed distance to each prism — a closed form for spheres
(:func:`point_prism_distance`), one GJK/EPA query per prism for the other types
(:func:`~._generic.generic_query`; the prisms of all such pairs are the lanes of one vmapped call,
:func:`general_hfield_manifolds`, so a model compiles one query program for them) — and
keeps up to 4 contacts: the prisms whose signed distance is within a tolerance of touching, or the
closest prism when none is, reduced to four spread points by :func:`~._manifold.reduce_to_four`
(MuJoCo keeps up to 50 contacts per pair, one per penetrating prism). Each contact keeps its own
prism's normal, so a ball in a valley is pushed by both slopes.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from .._math import Transform
from .._types import GeomType
from ._geoms import GeomData, bounding_sphere, hull_shape
from ._generic import generic_query
from ._manifold import Manifold, reduce_to_four
from ._mixed import mixed_shapes
from ._primitives import point_tolerance

__all__ = ["HFIELD_POINTS", "window_cells", "bounding_radius", "prism_vertices",
           "closest_point_on_triangle", "point_prism_distance", "pair_prisms", "select_contacts",
           "make_hfield_sphere_pair", "general_hfield_manifolds", "field_box_bound"]

#: contact points per height-field pair (the narrow phase's slot count)
HFIELD_POINTS = 4


def bounding_radius(geom_type: GeomType, size, hull_vertices=None) -> float:
    """Host side: radius (m) of the geom's bounding sphere (:func:`~._geoms.bounding_sphere`, about
    which a pair's window is centred) from its MuJoCo ``size`` and, for a mesh, its hull vertices
    ``(V, 3)``."""
    vertices = np.zeros((1, 3)) if hull_vertices is None else np.asarray(hull_vertices, np.float64)
    geom = GeomData(np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0]), np.eye(3), np.asarray(size, np.float64),
                    vertices, np.ones(vertices.shape[0], bool))
    return float(bounding_sphere(geom, geom_type)[1])


def window_cells(shape: tuple[int, int], size, radius: float) -> tuple[int, int]:
    """Static ``(rows, cols)`` of cells in a pair's window: every cell that the square of half-side
    ``radius`` (m) around a point can overlap, capped by the grid (``shape = (nrow, ncol)``,
    ``size`` the height field's ``(4,)`` size)."""
    nrow, ncol = shape
    if nrow < 2 or ncol < 2:
        raise ValueError(f"a height field needs at least 2 rows and 2 columns, got {nrow} × {ncol}")
    cell_x = 2.0 * float(size[0]) / (ncol - 1)
    cell_y = 2.0 * float(size[1]) / (nrow - 1)
    rows = min(nrow - 1, math.ceil(2.0 * radius / cell_y) + 1)
    cols = min(ncol - 1, math.ceil(2.0 * radius / cell_x) + 1)
    return rows, cols


def prism_vertices(elevation: jax.Array, size: jax.Array, center_local: jax.Array,
                   window: tuple[int, int], radius) -> jax.Array:
    """Vertices ``(2 · rows · cols, 6, 3)`` (geom frame, m) of the prisms of the window of cells
    around ``center_local`` ``(3,)``: the cells that the square of half-side ``radius`` about it
    overlaps, the window shifted inside the grid at its borders.

    Args:
      elevation: ``(nrow, ncol)`` normalised elevations; size: ``(4,)`` hfield size.
      window: static ``(rows, cols)`` (:func:`window_cells`).
    Each prism lists its three top vertices, then the same three on the base ``z = -size[3]``.
    """
    nrow, ncol = elevation.shape
    rows, cols = window
    dtype = elevation.dtype
    cell_x = 2.0 * size[0] / (ncol - 1)
    cell_y = 2.0 * size[1] / (nrow - 1)
    # first cell the geom's box can overlap, the window kept inside the grid (integer: a step,
    # no derivative)
    col0 = jnp.floor((center_local[0] - radius + size[0]) / cell_x)
    row0 = jnp.floor((center_local[1] - radius + size[1]) / cell_y)
    col0 = jnp.clip(jax.lax.stop_gradient(col0), 0, ncol - 1 - cols).astype(jnp.int32)
    row0 = jnp.clip(jax.lax.stop_gradient(row0), 0, nrow - 1 - rows).astype(jnp.int32)
    heights = jax.lax.dynamic_slice(elevation, (row0, col0), (rows + 1, cols + 1)) * size[2]
    x = (col0 + jnp.arange(cols + 1, dtype=jnp.int32)).astype(dtype) * cell_x - size[0]
    y = (row0 + jnp.arange(rows + 1, dtype=jnp.int32)).astype(dtype) * cell_y - size[1]
    gx, gy = jnp.meshgrid(x, y)  # (rows + 1, cols + 1), [r, c]
    top = jnp.stack([gx, gy, heights], axis=-1)

    def corner(dr, dc):
        return top[dr:rows + dr, dc:cols + dc].reshape(rows * cols, 3)

    low_left, low_right, up_left, up_right = corner(0, 0), corner(0, 1), corner(1, 0), corner(1, 1)
    # MuJoCo's split: the diagonal from (c, r) to (c + 1, r + 1); both triangles counter-clockwise
    # seen from above (their outward side normals in :func:`point_prism_distance`)
    tops = jnp.concatenate([jnp.stack([up_left, low_left, up_right], axis=1),
                            jnp.stack([low_left, low_right, up_right], axis=1)])  # (P, 3, 3)
    base = tops.at[..., 2].set(-size[3])
    return jnp.concatenate([tops, base], axis=1)


def _safe_divide(num, den):
    return num / jnp.where(den == 0, 1.0, den)


def closest_point_on_triangle(p: jax.Array, a: jax.Array, b: jax.Array, c: jax.Array) -> jax.Array:
    """Point ``(3,)`` of the triangle ``a, b, c`` closest to ``p`` (Ericson, Real-Time Collision
    Detection §5.1.5: the Voronoi region of a vertex, an edge or the face)."""
    ab, ac, ap = b - a, c - a, p - a
    d1, d2 = ab @ ap, ac @ ap
    bp = p - b
    d3, d4 = ab @ bp, ac @ bp
    cp = p - c
    d5, d6 = ab @ cp, ac @ cp
    vc, vb, va = d1 * d4 - d3 * d2, d5 * d2 - d1 * d6, d3 * d6 - d5 * d4
    total = va + vb + vc
    face = a + _safe_divide(vb, total) * ab + _safe_divide(vc, total) * ac
    on_bc = b + _safe_divide(d4 - d3, (d4 - d3) + (d5 - d6)) * (c - b)
    on_ac = a + _safe_divide(d2, d2 - d6) * ac
    on_ab = a + _safe_divide(d1, d1 - d3) * ab
    # the first region that holds, in Ericson's order (selects from the last one back)
    point = face
    point = jnp.where((va <= 0) & (d4 - d3 >= 0) & (d5 - d6 >= 0), on_bc, point)
    point = jnp.where((vb <= 0) & (d2 >= 0) & (d6 <= 0), on_ac, point)
    point = jnp.where((d6 >= 0) & (d5 <= d6), c, point)
    point = jnp.where((vc <= 0) & (d1 >= 0) & (d3 <= 0), on_ab, point)
    point = jnp.where((d3 >= 0) & (d4 <= d3), b, point)
    return jnp.where((d1 <= 0) & (d2 <= 0), a, point)


def point_prism_distance(p: jax.Array, prism: jax.Array):
    """Signed distance of the point ``p`` ``(3,)`` to a height-field prism ``(6, 3)`` (top
    triangle counter-clockwise from above, then its base): ``(distance, normal (3,))``; outside
    the prism, the Euclidean distance with the unit direction from the prism's closest point to
    ``p`` (closed form: the closest point of its eight boundary triangles); inside, minus the
    depth below the top face, with the top face's normal.

    Inside, MuJoCo C's prism penetration (and EPA's) takes the *nearest* face, which near a cell
    edge is a wall between two prisms: a wall inside the terrain, along which the two prisms push
    a buried point towards each other — an infeasible pair of hard contacts (a robot started
    with its feet in the ground sank through it). The top face is the terrain's surface, so a
    buried point is pushed out of the ground. (Walls still act from outside: a point beside a
    higher cell is pushed off it.)"""
    top, base = prism[:3], prism[3:]
    normal_top = jnp.cross(top[1] - top[0], top[2] - top[0])
    normal_top = normal_top / jnp.sqrt(normal_top @ normal_top)
    edges = jnp.roll(top[:, :2], -1, axis=0) - top[:, :2]  # footprint edges i -> i+1
    side = jnp.stack([edges[:, 1], -edges[:, 0]], axis=-1)
    side = side / jnp.sqrt(jnp.sum(side * side, axis=-1, keepdims=True))
    # inside: distance to each face plane (top, base, three walls), all >= 0
    to_walls = jnp.sum((top[:, :2] - p[:2]) * side, axis=-1)
    to_faces = jnp.concatenate([jnp.stack([normal_top @ (top[0] - p), p[2] - base[0, 2]]), to_walls])
    inside = jnp.all(to_faces >= 0)
    zeros = jnp.zeros_like(side[:, :1])
    face_normals = jnp.concatenate([normal_top[None], jnp.array([[0.0, 0.0, -1.0]], p.dtype),
                                    jnp.concatenate([side, zeros], axis=-1)])
    nearest_face = jnp.argmin(to_faces)
    # outside: closest point over the boundary triangles (top, base, two per wall)
    nxt = jnp.array([1, 2, 0])
    triangles = jnp.concatenate([
        jnp.stack([top, base[::-1]]),
        jnp.stack([top, top[nxt], base[nxt]], axis=1),
        jnp.stack([top, base[nxt], base], axis=1)])  # (8, 3, 3)
    closest = jax.vmap(lambda t: closest_point_on_triangle(p, t[0], t[1], t[2]))(triangles)
    offsets = p - closest
    lengths = jnp.sqrt(jnp.maximum(jnp.sum(offsets * offsets, axis=-1), 0.0))
    best = jnp.argmin(lengths)
    length = lengths[best]
    direction = _safe_divide(offsets[best], length)
    depth = to_faces[0]  # below the top face
    distance = jnp.where(inside, -depth, length)
    normal = jnp.where(inside, normal_top, jnp.where(length == 0, face_normals[nearest_face], direction))
    return distance, normal


def _sphere_query(prism, pos_a, rot_a, b: GeomData):
    """``(signed distance, point_a, point_b, normal)`` of a sphere ``b`` and a prism (field frame
    ``pos_a``, ``rot_a``), in the world frame."""
    center = rot_a.T @ (b.pos - pos_a)
    core, normal_local = point_prism_distance(center, prism)
    normal = rot_a @ normal_local
    point_a = b.pos - core * normal
    return core - b.size[0], point_a, b.pos - b.size[0] * normal, normal


def pair_prisms(a: GeomData, b: GeomData, type_b: GeomType, elevation: jax.Array, size: jax.Array,
                window: tuple[int, int], radius: float) -> jax.Array:
    """Prism vertices ``(2 · rows · cols, 6, 3)`` (field frame) of the window of the height field
    ``a`` around geom ``b`` (:func:`prism_vertices` about the centre of b's bounding sphere)."""
    center = bounding_sphere(b, type_b)[0]
    return prism_vertices(elevation, size, a.rot.T @ (center - a.pos), window, radius)


def select_contacts(distance, point_a, point_b, normal, radius: float, keep=None) -> Manifold:
    """The pair's :data:`HFIELD_POINTS`-slot manifold from its per-prism queries (``(P,)``
    signed distances, ``(P, 3)`` witness points and normals from the field to the geom, world):
    the prisms touching (within a tolerance: a resting geom's contacts hover around 0) or the
    closest one, reduced to four spread points; each keeps its own prism's normal. (A separated
    prism within the margin is a constraint no other prism imposes, but the four slots go to the
    supporting ones.) ``keep`` ``(P,)``: the prisms that may contribute (default all; at least
    one must be kept)."""
    dtype = distance.dtype
    points = 0.5 * (point_a + point_b)
    scale = jnp.asarray(radius, dtype)
    tol = point_tolerance(scale) + 1e-4 * scale
    keep = jnp.ones(distance.shape, bool) if keep is None else keep
    ranked = jnp.where(keep, distance, jnp.finfo(dtype).max)
    closest = jnp.min(ranked)
    usable = keep & (distance <= jnp.maximum(closest, 0.0) + tol)
    first = jnp.argmin(ranked)
    index, valid = reduce_to_four(points, distance, usable, normal[first], tol, first=first)
    return Manifold(distance[index], points[index], normal[index], valid)


def make_hfield_sphere_pair(window: tuple[int, int], radius: float):
    """Pair function ``(a, b, margin, elevation, size) -> Manifold`` of a height field ``a``
    (``elevation`` ``(nrow, ncol)``, ``size`` ``(4,)``) and a sphere ``b``, closed form per
    prism (:func:`point_prism_distance`); ``window`` (static cells) and ``radius`` (m, the
    largest bounding radius of the group's spheres) from :func:`window_cells`."""

    def pair(a: GeomData, b: GeomData, margin, elevation, size) -> Manifold:
        vertices = pair_prisms(a, b, GeomType.SPHERE, elevation, size, window, radius)
        queries = jax.vmap(lambda v: _sphere_query(v, a.pos, a.rot, b))(vertices)
        # a centre under the surface is inside exactly one prism: that prism alone pushes it out
        # (up its top face); the neighbours' walls, inside the ground, would push sideways
        buried = queries[0] + b.size[0] < 0
        keep = jnp.where(jnp.any(buried), buried, True)
        return select_contacts(*queries, radius, keep=keep)

    return pair


def general_hfield_manifolds(groups, culled, fields) -> list:
    """Manifolds ``(pairs, 4)`` of height-field groups whose other geom is not a sphere, from ONE
    vmapped GJK/EPA call: every prism of every pair is a lane (the prism a 6-vertex
    :class:`~jaxsim_contact.geometry.ConvexMesh`, the geom a :class:`~._mixed.MixedShape` over the
    groups' types), so all such groups compile one query program.

    Args:
      groups: the :class:`~._structure.HFieldPairGroup` s; culled: their culled pairs (``geoms_a``,
        ``geoms_b`` batched :class:`~._geoms.GeomData`); fields: per group ``(elevation, size)``.
    """
    members = tuple(sorted({g.type_b for g in groups}))
    width = max(c.geoms_b.vertices.shape[-2] for c in culled)
    lanes, counts = [], []
    for group, c, (elevation, size) in zip(groups, culled, fields):
        vertices = jax.vmap(lambda a, b, g=group, e=elevation, s=size: pair_prisms(
            a, b, g.type_b, e, s, g.window, g.radius))(c.geoms_a, c.geoms_b)  # (pairs, Q, 6, 3)
        pairs, queries = vertices.shape[:2]
        per_query = lambda x: jnp.repeat(x, queries, axis=0)  # noqa: E731  (pairs, ...) -> (pairs Q, ...)
        flat = vertices.reshape((pairs * queries, 6, 3))
        prisms = jax.vmap(lambda v: hull_shape(v, jnp.ones((6,), bool)))(flat)
        shape_b = jax.tree_util.tree_map(per_query, mixed_shapes(c.geoms_b, group.type_b, members, width))
        lanes.append((prisms, Transform(per_query(c.geoms_a.pos), per_query(c.geoms_a.quat)),
                      shape_b, Transform(per_query(c.geoms_b.pos), per_query(c.geoms_b.quat))))
        counts.append((pairs, queries))
    stacked = jax.tree_util.tree_map(lambda *xs: jnp.concatenate(xs), *lanes)
    results = jax.vmap(generic_query)(*stacked)
    manifolds, offset = [], 0
    for group, (pairs, queries) in zip(groups, counts):
        res = jax.tree_util.tree_map(
            lambda x: x[offset:offset + pairs * queries].reshape((pairs, queries) + x.shape[1:]), results)
        offset += pairs * queries
        manifolds.append(jax.vmap(lambda d, pa, pb, n, r=group.radius: select_contacts(d, pa, pb, n, r))(
            res.signed_distance, res.point_a, res.point_b, res.normal))
    return manifolds


def field_box_bound(a: GeomData, elevation: jax.Array, size: jax.Array, center_b: jax.Array,
                    radius_b: jax.Array):
    """Culling bound of pairs ``(P,)`` of a height field ``a`` and balls ``(center_b (P, 3),
    radius_b (P,))``: ``(gap, normal, point)`` from the box that holds the field,
    ``[-s₀, s₀] × [-s₁, s₁] × [-s₃, s₂ max(data)]`` in its frame (gap ≤ the distance of anything
    inside the ball to the field)."""
    dtype = center_b.dtype
    local = jnp.einsum("...ji,...j->...i", a.rot, center_b - a.pos)
    top = size[2] * jnp.max(elevation)
    low = jnp.stack([-size[0], -size[1], -size[3]])
    high = jnp.stack([size[0], size[1], top])
    nearest = jnp.clip(local, low, high)
    offset = local - nearest
    length = jnp.sqrt(jnp.sum(offset * offset, axis=-1))
    up = jnp.array([0.0, 0.0, 1.0], dtype)
    direction = jnp.where(length[..., None] > 0, offset / jnp.where(length > 0, length, 1.0)[..., None], up)
    gap = length - radius_b
    normal = jnp.einsum("...ij,...j->...i", a.rot, direction)
    point = a.pos + jnp.einsum("...ij,...j->...i", a.rot, nearest) + 0.5 * jnp.maximum(gap, 0.0)[..., None] * normal
    return gap, normal, point
