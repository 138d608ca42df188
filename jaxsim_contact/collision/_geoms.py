"""World placement and shape parameters of the geoms of a pair group (traced).

Sizes follow MuJoCo's ``geom_size`` conventions (metres):

=========  ==========================================
sphere     ``size[0]`` radius
capsule    ``size[0]`` radius, ``size[1]`` half-length of the segment (local z)
ellipsoid  ``size[0:3]`` semi-axes
cylinder   ``size[0]`` radius, ``size[1]`` half-length (local z)
box        ``size[0:3]`` half extents
plane      half-space ``z ≤ 0`` of the geom frame (sizes only affect rendering)
mesh       convex hull of the mesh vertices (geom frame = MuJoCo's mesh frame)
=========  ==========================================

Everything numeric is read from dynamic model leaves; the geom indices are static.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..geometry import Box, Capsule, ConvexMesh, Cylinder, Ellipsoid, Plane, Sphere
from .._math import quat_mul, quat_rotate, quat_to_matrix, safe_norm
from .._model import Model
from .._types import GeomType
from ._structure import CollisionStructure

__all__ = ["GeomData", "geom_world_frames", "gather_geoms", "to_shape", "hull_shape", "bounding_sphere",
           "mesh_local_boxes"]


class GeomData(eqx.Module):
    """One geom in the world (add leading axes to batch).

    Attributes:
      pos: ``(3,)`` geom frame origin (m). quat: ``(4,)`` orientation (w first). rot: ``(3, 3)``.
      size: ``(3,)`` MuJoCo size parameters (m).
      vertices: ``(V, 3)`` hull vertices in the geom frame (meshes; ``(1, 3)`` zeros otherwise),
        padded by repeating the first vertex.
      vertex_mask: ``(V,)`` bool, real (not padding) vertices.
    """

    pos: jax.Array
    quat: jax.Array
    rot: jax.Array
    size: jax.Array
    vertices: jax.Array
    vertex_mask: jax.Array


def geom_world_frames(model: Model, body_pos: jax.Array, body_quat: jax.Array) -> tuple[jax.Array, jax.Array]:
    """World pose of every geom, ``(pos (ngeom, 3) m, quat (ngeom, 4))``, from the world-frame body
    poses ``body_pos (nbody, 3)``, ``body_quat (nbody, 4)``."""
    dtype = body_pos.dtype
    body = np.asarray(model.geom_body, dtype=np.int64)
    if body.size == 0:
        return jnp.zeros((0, 3), dtype), jnp.zeros((0, 4), dtype)
    bpos, bquat = body_pos[body], body_quat[body]
    pos = bpos + quat_rotate(bquat, model.geom_pos.astype(dtype))
    quat = quat_mul(bquat, model.geom_quat.astype(dtype))
    return pos, quat


def _mesh_vertex_table(model: Model, structure: CollisionStructure, geoms: tuple[int, ...], dtype):
    """``(G, V, 3)`` padded hull vertices and ``(G, V)`` mask for mesh geoms (static gather)."""
    meshes = [model.geom_mesh[g] for g in geoms]
    hulls = [structure.mesh_hull[m] for m in meshes]
    width = max(len(h) for h in hulls)
    rows, masks = [], []
    for m, hull in zip(meshes, hulls):
        index = np.asarray(list(hull) + [hull[0]] * (width - len(hull)), dtype=np.int64)
        rows.append(model.mesh_vertices[m].astype(dtype)[index])
        masks.append(np.arange(width) < len(hull))
    return jnp.stack(rows), jnp.asarray(np.stack(masks))


def mesh_local_boxes(model: Model, structure: CollisionStructure, geoms: tuple[int, ...], dtype):
    """``(centre (G, 3), half extents (G, 3))`` of the bounding box of each mesh geom's hull
    vertices in its own frame (m). Computed on the host when the vertices are concrete (a model
    closed over by ``jit``: XLA would otherwise constant-fold a min/max over every pair's vertex
    table, ~10 s per reduction on Talos' 996 mesh pairs), else once per distinct mesh."""
    meshes = [int(model.geom_mesh[g]) for g in geoms]
    boxes = {}
    for m in sorted(set(meshes)):
        hull = np.asarray(structure.mesh_hull[m], dtype=np.int64)
        try:
            vertices = np.asarray(model.mesh_vertices[m], dtype=np.float64)[hull]
        except jax.errors.TracerArrayConversionError:
            traced = model.mesh_vertices[m].astype(dtype)[hull]
            low, high = jnp.min(traced, axis=0), jnp.max(traced, axis=0)
        else:
            low, high = vertices.min(axis=0), vertices.max(axis=0)
        boxes[m] = (0.5 * (low + high), 0.5 * (high - low))
    if all(isinstance(boxes[m][0], np.ndarray) for m in boxes):
        return tuple(jnp.asarray(np.stack([boxes[m][k] for m in meshes]), dtype) for k in (0, 1))
    return tuple(jnp.stack([jnp.asarray(boxes[m][k], dtype) for m in meshes]) for k in (0, 1))


def gather_geoms(model: Model, structure: CollisionStructure, frames, geoms: tuple[int, ...],
                 geom_type: GeomType) -> GeomData:
    """Batched :class:`GeomData` ``(G, ...)`` for the static geom indices ``geoms``."""
    pos, quat = frames
    dtype = pos.dtype
    index = np.asarray(geoms, dtype=np.int64)
    gpos, gquat = pos[index], quat[index]
    if geom_type == GeomType.MESH:
        vertices, mask = _mesh_vertex_table(model, structure, geoms, dtype)
    else:
        vertices = jnp.zeros((len(geoms), 1, 3), dtype)
        mask = jnp.zeros((len(geoms), 1), bool)
    return GeomData(gpos, gquat, quat_to_matrix(gquat), model.geom_size.astype(dtype)[index],
                    vertices, mask)


def to_shape(geom: GeomData, geom_type: GeomType):
    """The :mod:`jaxsim_contact.geometry` shape of one (unbatched) geom, in its local frame."""
    size = geom.size
    if geom_type == GeomType.SPHERE:
        return Sphere(size[0])
    if geom_type == GeomType.CAPSULE:
        return Capsule(size[0], size[1])
    if geom_type == GeomType.ELLIPSOID:
        return Ellipsoid(size)
    if geom_type == GeomType.CYLINDER:
        return Cylinder(size[0], size[1])
    if geom_type == GeomType.BOX:
        return Box(size)
    if geom_type == GeomType.PLANE:
        return Plane()
    if geom_type == GeomType.MESH:
        return hull_shape(geom.vertices, geom.vertex_mask)
    raise NotImplementedError(f"no collision shape for geom type {geom_type!r}")


def hull_shape(vertices: jax.Array, vertex_mask: jax.Array) -> ConvexMesh:
    """The convex hull of ``vertices`` ``(V, 3)`` (those of ``vertex_mask`` ``(V,)``; traced
    values) as a :class:`~jaxsim_contact.geometry.ConvexMesh` for GJK/EPA: only its support
    function is used, so adjacency and faces are left empty."""
    count = jnp.maximum(jnp.sum(vertex_mask), 1)
    center = jnp.sum(jnp.where(vertex_mask[:, None], vertices, 0.0), axis=0) / count
    return ConvexMesh(
        vertices=vertices,
        vertex_mask=vertex_mask,
        neighbors=jnp.zeros((vertices.shape[0], 1), jnp.int32),
        faces=jnp.zeros((1, 3), jnp.int32),
        face_mask=jnp.zeros((1,), bool),
        center_local=center,
    )


def bounding_sphere(geom: GeomData, geom_type: GeomType) -> tuple[jax.Array, jax.Array]:
    """World centre ``(..., 3)`` and radius ``(...)`` of a sphere containing the geom (batched);
    planes get an infinite radius (they are culled by a signed-distance test instead)."""
    size = geom.size
    dtype = size.dtype
    if geom_type == GeomType.MESH:
        mask = geom.vertex_mask[..., None]
        count = jnp.maximum(jnp.sum(geom.vertex_mask, axis=-1), 1)[..., None]
        center_local = jnp.sum(jnp.where(mask, geom.vertices, 0.0), axis=-2) / count
        radius = jnp.max(jnp.where(geom.vertex_mask, safe_norm(geom.vertices - center_local[..., None, :]), 0.0), axis=-1)
        center = geom.pos + jnp.einsum("...ij,...j->...i", geom.rot, center_local)
        return center, radius
    if geom_type == GeomType.SPHERE:
        radius = size[..., 0]
    elif geom_type == GeomType.CAPSULE:
        radius = size[..., 0] + size[..., 1]
    elif geom_type == GeomType.ELLIPSOID:
        radius = jnp.max(size, axis=-1)
    elif geom_type == GeomType.CYLINDER:
        radius = jnp.sqrt(size[..., 0] ** 2 + size[..., 1] ** 2)
    elif geom_type == GeomType.BOX:
        radius = safe_norm(size)
    elif geom_type == GeomType.PLANE:
        radius = jnp.full(size.shape[:-1], jnp.inf, dtype)
    else:
        raise NotImplementedError(f"no bounding sphere for geom type {geom_type!r}")
    return geom.pos, radius
