"""Convex meshes: convex hull on the host (trimesh), support by max over vertices or hill-climbing.

Seed 000 "GJK++" §II ("Computing support vector on meshes"): the support of a polytope is a vertex;
it is found either by a dense ``argmax`` over all vertices or by hill-climbing over the vertex
adjacency graph from a warm-start vertex. ``benchmarks/gjk.py`` times both; the dense max is the
default because on CPU and GPU a fused matrix-vector product over ≤ a few thousand vertices is
cheaper than the sequential, data-dependent gathers of hill-climbing.
"""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from .._math import argmax_packed, coordinate_dot
from .._types import GeomType
from ._shapes import Shape

__all__ = ["ConvexMesh", "hill_climbing_support_index"]


class ConvexMesh(Shape):
    """Convex polytope given by its hull vertices (padded to a static count).

    Attributes:
      vertices: ``(V, 3)`` hull vertices in the mesh's local frame (m). Rows past the real
        vertex count repeat vertex 0, so they never change a support point.
      vertex_mask: ``(V,)`` bool, True for real vertices (used by the softmax estimators of #3).
      neighbors: ``(V, K)`` int32 adjacency lists of the hull graph, padded with the vertex's own
        index (a self-loop never improves a hill-climbing step).
      faces: ``(F, 3)`` int32 outward-oriented hull triangles; padded rows are ``(0, 0, 0)`` and
        masked out by ``face_mask``.
      face_mask: ``(F,)`` bool.
      center: ``(3,)`` hull centroid, an interior point (GJK's default warm start).

    Build with ``ConvexMesh.from_points`` or ``ConvexMesh.from_trimesh`` (host side).
    """

    vertices: jax.Array
    vertex_mask: jax.Array
    neighbors: jax.Array
    faces: jax.Array
    face_mask: jax.Array
    center_local: jax.Array
    geom_type: ClassVar[GeomType] = GeomType.MESH

    @property
    def center(self):
        return self.center_local

    @property
    def num_vertices(self) -> int:
        """Static (padded) vertex count."""
        return self.vertices.shape[-2]

    def support_core(self, direction):
        # coordinate by coordinate and one packed reduction: XLA:CPU is slow at products over a
        # size-3 axis and at a second index pass (docs/sharp_bits.md)
        v = self.vertices
        height = coordinate_dot([v[..., i] for i in range(3)], direction)
        return v[argmax_packed(height)]

    def bounding_radius(self):
        return jnp.max(jnp.linalg.norm(self.vertices - self.center_local, axis=-1), axis=-1)

    # -- construction (host side) -------------------------------------------------------------

    @classmethod
    def from_points(
        cls,
        points,
        *,
        max_vertices: int | None = None,
        max_neighbors: int | None = None,
        max_faces: int | None = None,
        dtype=None,
        name: str = "ConvexMesh",
    ) -> "ConvexMesh":
        """Convex hull of ``points`` ``(N, 3)`` (m), computed on the host with trimesh / qhull.

        Args:
          points: ``(N, 3)`` array-like, N ≥ 4 affinely independent finite points.
          max_vertices, max_neighbors, max_faces: static padded sizes (default: exact counts).
            Give them to batch meshes of different sizes under one compiled function.
          dtype: float dtype of the vertex array (default: JAX's default float).
          name: used in error messages (e.g. the asset file).
        Raises:
          ValueError: fewer than 4 points, non-finite coordinates, points without volume (planar,
            collinear, coincident), or a hull that exceeds a requested ``max_*`` size.
        """
        import trimesh

        pts = np.asarray(points, dtype=np.float64)
        if pts.ndim != 2 or pts.shape[-1] != 3:
            raise ValueError(f"{name}: points must have shape (N, 3), got {pts.shape}")
        if pts.shape[0] < 4:
            raise ValueError(f"{name}: a convex hull needs at least 4 points, got {pts.shape[0]}")
        if not np.all(np.isfinite(pts)):
            bad = np.argwhere(~np.isfinite(pts))[0]
            raise ValueError(
                f"{name}: point {bad[0]} has a non-finite coordinate {pts[bad[0]].tolist()}"
            )
        centred = pts - pts.mean(axis=0)
        scale = np.max(np.abs(centred))
        singular = np.linalg.svd(centred, compute_uv=False)
        if scale == 0 or singular[-1] <= 1e-9 * singular[0]:
            raise ValueError(
                f"{name}: points are not affinely independent (planar, collinear or coincident); "
                f"singular values {singular.tolist()}"
            )
        try:
            hull = trimesh.convex.convex_hull(pts)
        except Exception as err:  # qhull raises its own error types
            raise ValueError(f"{name}: convex hull failed: {err}") from err
        return cls._from_hull(hull, max_vertices, max_neighbors, max_faces, dtype, name)

    @classmethod
    def from_trimesh(cls, mesh, **kwargs) -> "ConvexMesh":
        """Convex hull of a ``trimesh.Trimesh`` (its vertices; faces are recomputed).

        Keyword arguments as for ``from_points``. Raises ``ValueError`` for an empty mesh.
        """
        name = kwargs.pop("name", "ConvexMesh")
        vertices = np.asarray(getattr(mesh, "vertices", np.zeros((0, 3))))
        if vertices.size == 0:
            raise ValueError(f"{name}: the mesh is empty (no vertices)")
        return cls.from_points(vertices, name=name, **kwargs)

    @classmethod
    def _from_hull(cls, hull, max_vertices, max_neighbors, max_faces, dtype, name):
        vertices = np.asarray(hull.vertices, dtype=np.float64)
        faces = np.asarray(hull.faces, dtype=np.int32)
        neighbor_lists = hull.vertex_neighbors
        nv, nf = len(vertices), len(faces)
        degree = max(len(n) for n in neighbor_lists)
        max_vertices = nv if max_vertices is None else max_vertices
        max_neighbors = degree if max_neighbors is None else max_neighbors
        max_faces = nf if max_faces is None else max_faces
        for what, have, cap in (
            ("vertices", nv, max_vertices),
            ("neighbors per vertex", degree, max_neighbors),
            ("faces", nf, max_faces),
        ):
            if have > cap:
                raise ValueError(f"{name}: hull has {have} {what}, more than the budget {cap}")

        padded_vertices = np.repeat(vertices[:1], max_vertices, axis=0)
        padded_vertices[:nv] = vertices
        vertex_mask = np.zeros(max_vertices, bool)
        vertex_mask[:nv] = True
        neighbors = np.tile(np.arange(max_vertices, dtype=np.int32)[:, None], (1, max_neighbors))
        for i, nbrs in enumerate(neighbor_lists):
            neighbors[i, : len(nbrs)] = nbrs
        padded_faces = np.zeros((max_faces, 3), np.int32)
        padded_faces[:nf] = faces
        face_mask = np.zeros(max_faces, bool)
        face_mask[:nf] = True

        dtype = dtype or jnp.result_type(float)
        mesh = object.__new__(cls)
        # Bypass __init__ (equinox's default init needs every field) with validated host arrays.
        for field, value in (
            ("vertices", jnp.asarray(padded_vertices, dtype)),
            ("vertex_mask", jnp.asarray(vertex_mask)),
            ("neighbors", jnp.asarray(neighbors)),
            ("faces", jnp.asarray(padded_faces)),
            ("face_mask", jnp.asarray(face_mask)),
            ("center_local", jnp.asarray(np.asarray(hull.centroid), dtype)),
        ):
            object.__setattr__(mesh, field, value)
        return mesh


def hill_climbing_support_index(
    mesh: ConvexMesh, direction: jax.Array, start: jax.Array, max_steps: int = 64
) -> jax.Array:
    """Index of a support vertex of ``mesh`` in ``direction`` by hill-climbing from ``start``.

    Seed 000 "GJK++" §II (hill-climbing [17]). Moves to the best neighbour while it strictly
    improves ``<direction, v>``; on a convex polytope a vertex with no improving neighbour is a
    global maximiser. At most ``max_steps`` moves (static); stops early when every lane is done.

    Args:
      mesh: the mesh.
      direction: ``(3,)`` in the mesh's local frame.
      start: int32 scalar warm-start vertex (e.g. the previous support).
    Returns:
      int32 scalar vertex index (no gradient flows through the search; gather the vertex after).
    """
    vertices = jax.lax.stop_gradient(mesh.vertices)
    direction = jax.lax.stop_gradient(direction)

    def cond(carry):
        _, _, improved, step = carry
        return improved & (step < max_steps)

    def body(carry):
        index, score, _, step = carry
        # Only the K neighbours are scored: that is the point of hill-climbing.
        candidates = mesh.neighbors[index]
        candidate_scores = vertices[candidates] @ direction
        best = jnp.argmax(candidate_scores)
        improved = candidate_scores[best] > score
        index = jnp.where(improved, candidates[best], index)
        score = jnp.where(improved, candidate_scores[best], score)
        return index, score, improved, step + 1

    start = jnp.asarray(start, jnp.int32)
    init = (start, vertices[start] @ direction, jnp.array(True), 0)
    index, _, _, _ = jax.lax.while_loop(cond, body, init)
    return index
