"""Projection of the origin onto a simplex of ≤ 4 points: GJK's distance sub-algorithm.

Seed 000 "GJK++" §II (Alg. 4, line 11 and footnote 1). The closest point of ``conv(W)`` to the
origin lies in the relative interior of exactly one face of the simplex, where its affine
barycentric coordinates are all positive. We evaluate all 15 faces (4 vertices, 6 edges,
4 triangles, the tetrahedron) branch-free, keep those whose barycentrics are strictly positive and
whose geometry is not degenerate, and take the closest. Ties go to the lower-dimensional face, so
the returned support set is the smallest one expressing the point (Alg. 4 line 11).

Barycentrics use signed areas / volumes (as in Montanari et al.'s "signed volumes" method, the
robustness fix cited as [18] in the seed) rather than Gram-matrix solves, so nearly flat
triangles and tetrahedra are detected by a scale-relative test instead of producing garbage.
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np

from .._math import cross

__all__ = ["project_origin"]

_EDGES = np.array(list(itertools.combinations(range(4), 2)), np.int32)  # (6, 2)
_TRIANGLES = np.array(list(itertools.combinations(range(4), 3)), np.int32)  # (4, 3)


def _edge_candidates(points, mask, eps):
    a = points[_EDGES[:, 0]]
    b = points[_EDGES[:, 1]]
    ab = b - a
    denom = jnp.sum(ab * ab, -1)
    scale = jnp.maximum(jnp.sum(a * a, -1), jnp.sum(b * b, -1))
    ok = denom > eps * scale
    t = -jnp.sum(a * ab, -1) / jnp.where(ok, denom, 1.0)
    ok = ok & (t > 0) & (t < 1) & mask[_EDGES[:, 0]] & mask[_EDGES[:, 1]]
    point = a + t[:, None] * ab
    bary = jnp.zeros((6, 4), points.dtype)
    bary = bary.at[jnp.arange(6), _EDGES[:, 0]].set(1 - t)
    bary = bary.at[jnp.arange(6), _EDGES[:, 1]].set(t)
    return point, bary, ok


def _triangle_candidates(points, mask, eps):
    a = points[_TRIANGLES[:, 0]]
    b = points[_TRIANGLES[:, 1]]
    c = points[_TRIANGLES[:, 2]]
    ab, ac = b - a, c - a
    normal = cross(ab, ac)
    nn = jnp.sum(normal * normal, -1)
    ok = nn > eps * jnp.sum(ab * ab, -1) * jnp.sum(ac * ac, -1)
    inv = 1.0 / jnp.where(ok, nn, 1.0)
    # Barycentrics of the origin's projection on the plane, from signed areas of edge vectors
    # relative to a (accurate for small triangles far from the origin). wa = 1 - wb - wc makes the
    # weights sum to exactly 1, so the point always lies in the simplex's affine hull and, with
    # positive weights, in the simplex: |x| can never undershoot the true distance.
    wb = jnp.sum(cross(-a, ac) * normal, -1) * inv
    wc = jnp.sum(cross(ab, -a) * normal, -1) * inv
    wa = 1.0 - wb - wc
    ok = ok & (wa > 0) & (wb > 0) & (wc > 0) & jnp.all(mask[_TRIANGLES], -1)
    # The point itself from the plane equation: same point in exact arithmetic, but its direction
    # comes from the cross product of O(L) edges (relative error ~eps) instead of a weighted sum
    # whose absolute error eps·L swamps the direction when the plane passes near the origin
    # (touching contact, |x| ~ 1e-11 m): GJK's next support direction is this point.
    point = (jnp.sum(normal * a, -1) * inv)[:, None] * normal
    bary = jnp.zeros((4, 4), points.dtype)
    rows = jnp.arange(4)
    bary = bary.at[rows, _TRIANGLES[:, 0]].set(wa)
    bary = bary.at[rows, _TRIANGLES[:, 1]].set(wb)
    bary = bary.at[rows, _TRIANGLES[:, 2]].set(wc)
    return point, bary, ok


def _signed_volume(p0, p1, p2, p3):
    return jnp.dot(cross(p1 - p0, p2 - p0), p3 - p0)


def _tetrahedron_candidate(points, mask, eps):
    p = points
    zero = jnp.zeros(3, points.dtype)
    volume = _signed_volume(p[0], p[1], p[2], p[3])
    lengths = jnp.sum((p[1:] - p[0]) ** 2, -1)
    ok = volume * volume > eps * jnp.prod(lengths)
    inv = 1.0 / jnp.where(ok, volume, 1.0)
    # Relative to p0, with w0 = 1 - (w1 + w2 + w3) (see the triangle case).
    w123 = jnp.stack(
        [
            _signed_volume(p[0], zero, p[2], p[3]),
            _signed_volume(p[0], p[1], zero, p[3]),
            _signed_volume(p[0], p[1], p[2], zero),
        ]
    ) * inv
    w = jnp.concatenate([1.0 - jnp.sum(w123, keepdims=True), w123])
    ok = ok & jnp.all(w > 0) & jnp.all(mask)
    return jnp.zeros(3, points.dtype), w, ok


def project_origin(points: jax.Array, mask: jax.Array):
    """Closest point to the origin of ``conv(points[mask])``.

    Args:
      points: ``(4, 3)`` simplex vertices (rows where ``mask`` is False are ignored).
      mask: ``(4,)`` bool, at least one True.
    Returns:
      ``(point, barycentric, support_mask, inside)``: the closest point ``(3,)``; barycentric
      weights ``(4,)`` (zero outside the support set, summing to 1); the mask ``(4,)`` of the
      smallest face expressing the point; and whether the origin lies inside the tetrahedron
      (then ``point`` is exactly zero).
    """
    dtype = points.dtype
    eps = jnp.asarray(64 * jnp.finfo(dtype).eps, dtype)
    vertex_points = points
    vertex_bary = jnp.eye(4, dtype=dtype)
    edge_points, edge_bary, edge_ok = _edge_candidates(points, mask, eps)
    tri_points, tri_bary, tri_ok = _triangle_candidates(points, mask, eps)
    tet_point, tet_bary, tet_ok = _tetrahedron_candidate(points, mask, eps)

    cand_points = jnp.concatenate([vertex_points, edge_points, tri_points, tet_point[None]], 0)
    cand_bary = jnp.concatenate([vertex_bary, edge_bary, tri_bary, tet_bary[None]], 0)
    cand_ok = jnp.concatenate([mask, edge_ok, tri_ok, tet_ok[None]], 0)
    dist2 = jnp.sum(cand_points * cand_points, -1)
    # Candidates are ordered by dimension; argmin returns the first minimum, so exact ties go to
    # the smaller face.
    dist2 = jnp.where(cand_ok, dist2, jnp.inf)
    best = jnp.argmin(dist2)
    bary = cand_bary[best]
    return cand_points[best], bary, bary > 0, best == 14
