"""Ray casting against geoms (MuJoCo ``engine_ray.c``: ``mju_rayGeom``, ``mj_rayMesh``,
``mj_rayHfield``, ``mj_ray``; API Reference "Ray casting").

A ray is ``origin + t · direction`` for ``t ≥ 0``: ``origin`` ``(3,)`` in m, ``direction`` ``(3,)``
of any nonzero length, and every distance returned is that ``t`` (in units of the direction's
length: metres for a unit direction), as MuJoCo's. Every function returns a *mask* with the
distance: ``(distance, hit)``, ``hit`` a bool array; ``distance`` is 0 where ``hit`` is False
(MuJoCo's ``-1`` for "no hit" is for the sensor layer to write).

MuJoCo 4.0.0's semantics, reproduced (checked against the C library in tests/collision/test_ray.py):

* an origin inside a sphere, capsule, ellipsoid, cylinder or box hits its surface on the way out
  (the exit distance; never 0 unless on the surface);
* a plane is hit only from its front (``+z``) side, by a ray going down, and only inside its
  rendered rectangle ``|x| ≤ size[0]``, ``|y| ≤ size[1]`` (a size ``≤ 0`` is unbounded), unlike
  its collision half-space;
* a mesh is cast against its triangles (MuJoCo ``mesh_face``), from either side, not its convex
  hull; a ray starting inside a closed mesh hits the face it leaves through;
* a height field is the union of its base box (``-size[3] ≤ z ≤ 0``), the triangles of its
  elevation surface and the four sides of its top box (``0 ≤ z ≤ size[2]``) below the border
  elevation profile;
* MuJoCo's tolerances are kept: a quadratic with leading coefficient below ``mjMINVAL = 1e-15``
  has no root, a box or cylinder face needs ``|direction · axis| > mjMINVAL``, a plane
  ``direction · normal < -mjMINVAL``. Its bounding-sphere culls of capsules, cylinders and boxes
  are kept too; its mesh bounding-box and BVH culls are conservative and left out (they cannot
  change a hit).

Differentiable: each distance is a smooth function of the ray, the geom pose and its size (or
mesh vertices, elevations) wherever the hit face does not change; selections are ``where`` masks
whose unselected branches see only safe divisors, so no NaN reaches a gradient.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .._math import argmin_first, quat_to_matrix
from .._model import Model
from .._types import GeomType
from ._geoms import geom_world_frames

__all__ = ["MJ_MINVAL", "ray_geom", "ray_primitive", "ray_triangles", "ray_mesh", "ray_hfield",
           "mesh_triangles", "static_bodies", "ray_scene"]

#: MuJoCo's ``mjMINVAL``: the smallest magnitude its ray functions treat as nonzero
MJ_MINVAL = 1e-15

PRIMITIVE_TYPES = (GeomType.PLANE, GeomType.SPHERE, GeomType.CAPSULE, GeomType.ELLIPSOID,
                   GeomType.CYLINDER, GeomType.BOX)


# --------------------------------------------------------------------------- helpers


def _dot(a, b):
    return a[..., 0] * b[..., 0] + a[..., 1] * b[..., 1] + a[..., 2] * b[..., 2]


def _divide(numerator, denominator, valid):
    """``numerator / denominator`` where ``valid``; the divisor is 1 elsewhere, so neither the value
    nor its derivative there is inf or NaN (the result is masked out by the caller)."""
    return numerator / jnp.where(valid, denominator, 1.0)


def _to_local(origin, direction, pos, rot):
    """The ray in a geom's frame (MuJoCo ``ray_map``)."""
    return (origin - pos) @ rot, direction @ rot


def _quadratic_roots(a, b, c):
    """Real roots ``x0 ≤ x1`` of ``a x² + 2 b x + c = 0`` and whether they exist (MuJoCo
    ``ray_quad``: none when the discriminant is negative or ``a < mjMINVAL``)."""
    discriminant = b * b - a * c
    real = (discriminant >= 0) & (a >= MJ_MINVAL)
    positive = real & (discriminant > 0)
    # double where: sqrt never sees 0 or a negative number, so its derivative stays finite
    root = jnp.where(positive, jnp.sqrt(jnp.where(positive, discriminant, 1.0)), 0.0)
    return _divide(-b - root, a, real), _divide(-b + root, a, real), real


def _first_nonnegative(x0, x1, real):
    """MuJoCo ``ray_quad``'s answer: the smaller non-negative root, if any."""
    return jnp.where(x0 >= 0, x0, x1), real & (x1 >= 0)


def _nearest(candidates):
    """The smallest distance among ``[(distance, hit), ...]`` that hit; ties keep the earlier
    candidate (MuJoCo's strict ``<`` updates)."""
    best, found = candidates[0]
    for distance, hit in candidates[1:]:
        take = hit & (~found | (distance < best))
        best = jnp.where(take, distance, best)
        found = found | hit
    return jnp.where(found, best, 0.0), found


def _ray_sphere(origin, direction, center, radius_squared):
    difference = origin - center
    a = _dot(direction, direction)
    b = _dot(direction, difference)
    c = _dot(difference, difference) - radius_squared
    return _first_nonnegative(*_quadratic_roots(a, b, c))


def _round_side(local_origin, local_direction, radius, half_length):
    """The side of a cylinder of axis z (MuJoCo's capsule / cylinder "round side"): the first
    non-negative root of the infinite cylinder, kept when it lies between the flat ends."""
    lp, lv = local_origin, local_direction
    a = lv[0] * lv[0] + lv[1] * lv[1]
    b = lv[0] * lp[0] + lv[1] * lp[1]
    c = lp[0] * lp[0] + lp[1] * lp[1] - radius * radius
    distance, hit = _first_nonnegative(*_quadratic_roots(a, b, c))
    return distance, hit & (jnp.abs(lp[2] + distance * lv[2]) <= half_length)


# --------------------------------------------------------------------------- primitives


def _plane(lp, lv, size):
    facing = lv[2] < -MJ_MINVAL
    distance = _divide(-lp[2], lv[2], facing)
    x, y = lp[0] + distance * lv[0], lp[1] + distance * lv[1]
    inside = (((size[0] <= 0) | (jnp.abs(x) <= size[0]))
              & ((size[1] <= 0) | (jnp.abs(y) <= size[1])))
    hit = facing & (distance >= 0) & inside
    return jnp.where(hit, distance, 0.0), hit


def _capsule(origin, direction, pos, rot, size):
    radius, half_length = size[0], size[1]
    near = _ray_sphere(origin, direction, pos, (radius + half_length) ** 2)[1]
    lp, lv = _to_local(origin, direction, pos, rot)
    candidates = [_round_side(lp, lv, radius, half_length)]
    a = _dot(lv, lv)
    for side in (1.0, -1.0):  # top cap, then bottom cap: the half sphere beyond the segment end
        difference = lp - side * half_length * jnp.asarray([0.0, 0.0, 1.0], lp.dtype)
        x0, x1, real = _quadratic_roots(a, _dot(lv, difference), _dot(difference, difference) - radius ** 2)
        for root in (x0, x1):
            beyond = side * (lp[2] + root * lv[2]) >= half_length
            candidates.append((root, real & (root >= 0) & beyond))
    distance, hit = _nearest(candidates)
    return distance, hit & near


def _ellipsoid(lp, lv, size):
    inverse = 1.0 / (size * size)
    a = _dot(inverse * lv, lv)
    b = _dot(inverse * lv, lp)
    c = _dot(inverse * lp, lp) - 1.0
    return _first_nonnegative(*_quadratic_roots(a, b, c))


def _cylinder(origin, direction, pos, rot, size):
    radius, half_length = size[0], size[1]
    near = _ray_sphere(origin, direction, pos, radius ** 2 + half_length ** 2)[1]
    lp, lv = _to_local(origin, direction, pos, rot)
    crosses = jnp.abs(lv[2]) > MJ_MINVAL
    candidates = []
    for side in (-1.0, 1.0):  # flat ends
        distance = _divide(side * half_length - lp[2], lv[2], crosses)
        x, y = lp[0] + distance * lv[0], lp[1] + distance * lv[1]
        candidates.append((distance, crosses & (distance >= 0) & (x * x + y * y <= radius * radius)))
    candidates.append(_round_side(lp, lv, radius, half_length))
    distance, hit = _nearest(candidates)
    return distance, hit & near


def _box_faces(origin, direction, pos, rot, size):
    """Distances ``(6,)`` to the box's faces ``-x, +x, -y, +y, -z, +z`` (MuJoCo ``ray_box``'s
    ``all``) and which of them the ray hits, within the face rectangle, at ``t ≥ 0``."""
    near = _ray_sphere(origin, direction, pos, _dot(size, size))[1]
    lp, lv = _to_local(origin, direction, pos, rot)
    distances, hits = [], []
    for axis in range(3):
        others = [i for i in range(3) if i != axis]
        crosses = jnp.abs(lv[axis]) > MJ_MINVAL
        for side in (-1.0, 1.0):
            distance = _divide(side * size[axis] - lp[axis], lv[axis], crosses)
            inside = ((jnp.abs(lp[others[0]] + distance * lv[others[0]]) <= size[others[0]])
                      & (jnp.abs(lp[others[1]] + distance * lv[others[1]]) <= size[others[1]]))
            distances.append(distance)
            hits.append(near & crosses & (distance >= 0) & inside)
    return jnp.stack(distances), jnp.stack(hits)


def _box(origin, direction, pos, rot, size):
    distances, hits = _box_faces(origin, direction, pos, rot, size)
    return _nearest([(distances[i], hits[i]) for i in range(6)])


def ray_primitive(origin: jax.Array, direction: jax.Array, pos: jax.Array, rot: jax.Array,
                  size: jax.Array, geom_type: GeomType) -> tuple[jax.Array, jax.Array]:
    """Distance along a ray to a primitive geom: MuJoCo ``mju_rayGeom`` (plane, sphere, capsule,
    ellipsoid, cylinder, box).

    Args:
      origin: ``(3,)`` ray origin (m). direction: ``(3,)`` ray direction (any length).
      pos: ``(3,)`` geom position (m). rot: ``(3, 3)`` geom orientation (columns: its axes).
      size: ``(3,)`` MuJoCo ``geom_size`` (m; :mod:`~._geoms`).
      geom_type: static :class:`~jaxsim_contact._types.GeomType`.
    Returns:
      ``(distance, hit)``: scalar ``t`` with the hit point ``origin + t · direction`` (in units of
      ``|direction|``; 0 where no hit) and a bool scalar. An origin inside the geom hits its
      surface on the way out; semantics of the module docstring.
    """
    if geom_type == GeomType.SPHERE:
        return _ray_sphere(origin, direction, pos, size[0] * size[0])
    if geom_type == GeomType.CAPSULE:
        return _capsule(origin, direction, pos, rot, size)
    if geom_type == GeomType.CYLINDER:
        return _cylinder(origin, direction, pos, rot, size)
    if geom_type == GeomType.BOX:
        return _box(origin, direction, pos, rot, size)
    if geom_type in (GeomType.PLANE, GeomType.ELLIPSOID):
        lp, lv = _to_local(origin, direction, pos, rot)
        return (_plane if geom_type == GeomType.PLANE else _ellipsoid)(lp, lv, size)
    raise NotImplementedError(f"no primitive ray cast for geom type {geom_type!r}")


# --------------------------------------------------------------------------- triangles


def ray_triangles(local_origin: jax.Array, local_direction: jax.Array,
                  triangles: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Distances along a ray to each of ``triangles``, either side (MuJoCo ``ray_triangle``), all in
    one frame.

    Args:
      local_origin, local_direction: ``(3,)`` ray in the triangles' frame.
      triangles: ``(F, 3, 3)`` vertices (m), ``[face, corner, coordinate]``.
    Returns:
      ``(distances (F,), hits (F,), nearest index)``: per triangle the distance (0 where missed)
      and whether the ray passes through it at ``t ≥ 0``; the index of the nearest hit (the first
      of equal ones; 0 when none).
    """
    lp, lv, triangles = local_origin, local_direction, jnp.asarray(triangles)
    # corners relative to the origin, one coordinate at a time (XLA:CPU is slow on size-3 axes)
    w = [[triangles[:, k, i] - lp[i] for i in range(3)] for k in range(3)]

    def triple(a, b):  # lv · (a × b)
        return (lv[0] * (a[1] * b[2] - a[2] * b[1]) + lv[1] * (a[2] * b[0] - a[0] * b[2])
                + lv[2] * (a[0] * b[1] - a[1] * b[0]))

    # the ray passes through the triangle iff it sees the three edges turn the same way
    s0, s1, s2 = triple(w[1], w[2]), triple(w[2], w[0]), triple(w[0], w[1])
    through = ((s0 >= 0) & (s1 >= 0) & (s2 >= 0)) | ((s0 <= 0) & (s1 <= 0) & (s2 <= 0))
    # plane of the triangle: normal (v0 - v2) × (v1 - v2), as MuJoCo; t = (v2 - o)·n / (d·n)
    e1 = [w[0][i] - w[2][i] for i in range(3)]
    e2 = [w[1][i] - w[2][i] for i in range(3)]
    normal = [e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2],
              e1[0] * e2[1] - e1[1] * e2[0]]
    denominator = lv[0] * normal[0] + lv[1] * normal[1] + lv[2] * normal[2]
    crosses = jnp.abs(denominator) >= MJ_MINVAL
    numerator = w[2][0] * normal[0] + w[2][1] * normal[1] + w[2][2] * normal[2]
    distance = _divide(numerator, denominator, crosses)
    hits = through & crosses & (distance >= 0)
    distances = jnp.where(hits, distance, 0.0)
    nearest = argmin_first(jnp.where(hits, distance, jnp.inf))
    return distances, hits, nearest


def ray_mesh(origin: jax.Array, direction: jax.Array, pos: jax.Array, rot: jax.Array,
             triangles: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Distance along a ray to a mesh geom's triangles (MuJoCo ``mj_rayMesh``).

    Args:
      origin: ``(3,)`` (m); direction: ``(3,)``; pos ``(3,)``, rot ``(3, 3)``: the geom's pose.
      triangles: ``(F, 3, 3)`` mesh triangles in the geom frame (:func:`mesh_triangles`).
    Returns:
      ``(distance, hit)`` scalars as :func:`ray_primitive`.
    """
    lp, lv = _to_local(origin, direction, pos, rot)
    distances, hits, nearest = ray_triangles(lp, lv, triangles)
    return distances[nearest], hits[nearest]


def ray_hfield(origin: jax.Array, direction: jax.Array, pos: jax.Array, rot: jax.Array,
               hfield_size: jax.Array, elevation: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Distance along a ray to a height-field geom (MuJoCo ``mj_rayHfield``).

    The solid is the base box ``-size[3] ≤ z ≤ 0``, the elevation surface (two triangles per cell,
    split along the diagonal from ``(c, r)`` to ``(c + 1, r + 1)``; grid convention of
    :mod:`~._hfield`) and the sides of the top box ``0 ≤ z ≤ size[2]`` below the linear profile of
    the border elevations. Every triangle is tested (MuJoCo tests those of the cells the ray's
    segment in the top box crosses; the triangles it skips cannot be hit): the cost grows with the
    grid, ``2 (nrow - 1)(ncol - 1)`` triangle tests per ray.

    Args:
      origin: ``(3,)`` (m); direction: ``(3,)``; pos ``(3,)``, rot ``(3, 3)``: the geom's pose.
      hfield_size: ``(4,)`` MuJoCo ``hfield_size`` (x, y half-sizes, elevation scale, base depth; m).
      elevation: ``(nrow, ncol)`` normalised elevations in [0, 1] (MuJoCo ``hfield_data``).
    Returns:
      ``(distance, hit)`` scalars as :func:`ray_primitive`.
    """
    size, elevation = jnp.asarray(hfield_size), jnp.asarray(elevation)
    nrow, ncol = elevation.shape
    axis = rot[:, 2]
    base_size = jnp.stack([size[0], size[1], 0.5 * size[3]])
    top_size = jnp.stack([size[0], size[1], 0.5 * size[2]])
    base_faces, base_hits = _box_faces(origin, direction, pos - 0.5 * size[3] * axis, rot, base_size)
    top_faces, top_hits = _box_faces(origin, direction, pos + 0.5 * size[2] * axis, rot, top_size)
    base = _nearest([(base_faces[i], base_hits[i]) for i in range(6)])
    in_top = jnp.any(top_hits)  # the surface and the sides lie in the top box

    lp, lv = _to_local(origin, direction, pos, rot)
    dx, dy = 2.0 * size[0] / (ncol - 1), 2.0 * size[1] / (nrow - 1)
    x = jnp.arange(ncol, dtype=lp.dtype) * dx - size[0]
    y = jnp.arange(nrow, dtype=lp.dtype) * dy - size[1]
    gx, gy = jnp.meshgrid(x, y)  # [r, c]
    grid = jnp.stack([gx, gy, elevation * size[2]], axis=-1)

    def corner(dr, dc):
        return grid[dr:nrow - 1 + dr, dc:ncol - 1 + dc].reshape(-1, 3)

    v00, v01, v11, v10 = corner(0, 0), corner(0, 1), corner(1, 1), corner(1, 0)
    triangles = jnp.concatenate([jnp.stack([v00, v01, v11], axis=1),
                                 jnp.stack([v00, v11, v10], axis=1)])
    distances, hits, nearest = ray_triangles(lp, lv, triangles)
    candidates = [base, (distances[nearest], in_top & hits[nearest])]

    for face in range(4):  # sides -x, +x, -y, +y of the top box
        distance, hit = top_faces[face], top_hits[face]
        height = _divide(lp[2] + distance * lv[2], size[2], size[2] != 0)
        if face < 2:  # along y, the first or last column
            along = (lp[1] + distance * lv[1] + size[1]) / dy
            border, count = elevation[:, ncol - 1 if face == 1 else 0], nrow
        else:  # along x, the first or last row
            along = (lp[0] + distance * lv[0] + size[0]) / dx
            border, count = elevation[nrow - 1 if face == 3 else 0, :], ncol
        cell = jnp.clip(jnp.floor(jax.lax.stop_gradient(along)), 0, count - 2)
        index = cell.astype(jnp.int32)
        profile = border[index] * (cell + 1 - along) + border[index + 1] * (along - cell)
        candidates.append((distance, hit & (height < profile)))
    return _nearest(candidates)


def ray_geom(origin: jax.Array, direction: jax.Array, pos: jax.Array, rot: jax.Array,
             size: jax.Array, geom_type: GeomType, *, triangles: jax.Array | None = None,
             hfield_size: jax.Array | None = None,
             elevation: jax.Array | None = None) -> tuple[jax.Array, jax.Array]:
    """Distance along the ray ``origin + t · direction`` (``t ≥ 0``) to one geom: MuJoCo
    ``mju_rayGeom`` for primitives, ``mj_rayMesh`` / ``mj_rayHfield`` for meshes / height fields.

    Args:
      origin: ``(3,)`` ray origin (m). direction: ``(3,)`` (any nonzero length).
      pos: ``(3,)`` geom position (m); rot: ``(3, 3)`` geom orientation (columns: its axes).
      size: ``(3,)`` MuJoCo ``geom_size`` (m); unused for meshes and height fields.
      geom_type: static :class:`~jaxsim_contact._types.GeomType`.
      triangles: meshes: ``(F, 3, 3)`` triangles in the geom frame (:func:`mesh_triangles`).
      hfield_size, elevation: height fields: ``(4,)`` MuJoCo ``hfield_size`` and ``(nrow, ncol)``
        normalised elevations.
    Returns:
      ``(distance, hit)``: the scalar ``t`` of the nearest surface point ``origin + t · direction``
      (units of ``|direction|``, metres for a unit direction; 0 where ``hit`` is False) and a bool
      scalar. Semantics of the module docstring (an origin inside a solid primitive: the exit).
    Batch with ``jax.vmap``.
    """
    if geom_type == GeomType.MESH:
        if triangles is None:
            raise ValueError("ray_geom: a mesh needs triangles=")
        return ray_mesh(origin, direction, pos, rot, triangles)
    if geom_type == GeomType.HFIELD:
        if hfield_size is None or elevation is None:
            raise ValueError("ray_geom: a height field needs hfield_size= and elevation=")
        return ray_hfield(origin, direction, pos, rot, hfield_size, elevation)
    return ray_primitive(origin, direction, pos, rot, size, geom_type)


# --------------------------------------------------------------------------- scene


def mesh_triangles(model: Model, mesh: int, dtype=None) -> jax.Array:
    """Triangles ``(F, 3, 3)`` (m, mesh frame = the geom frame of its geoms) of mesh ``mesh``
    (static index): ``Model.mesh_vertices`` gathered by ``Model.mesh_faces`` (MuJoCo
    ``mesh_face``)."""
    if mesh >= len(model.mesh_faces):
        raise ValueError(f"{model.source}: mesh {mesh} has no faces in the model (load it with "
                         "jaxsim_contact.load to cast rays at meshes)")
    faces = np.asarray(model.mesh_faces[mesh], dtype=np.int64).reshape(-1, 3)
    vertices = model.mesh_vertices[mesh]
    return (vertices if dtype is None else vertices.astype(dtype))[faces]


def static_bodies(model: Model) -> tuple[bool, ...]:
    """Per body, whether it is welded to the world (no joint on it or an ancestor; MuJoCo
    ``body_weldid == 0``)."""
    tree = model.tree
    welded = [True] * model.nbody
    for body in range(1, model.nbody):  # parents come before children
        welded[body] = welded[tree.body_parent[body]] and tree.body_joint_num[body] == 0
    return tuple(welded)


def ray_scene(model: Model, body_pos: jax.Array, body_quat: jax.Array, origin: jax.Array,
              direction: jax.Array, exclude_body=-1,
              include_static: bool = True) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Nearest geom along a ray: MuJoCo ``mj_ray(m, d, pnt, vec, geomgroup=NULL, flg_static,
    bodyexclude, geomid)``.

    Geoms skipped, as MuJoCo: those of ``exclude_body``, fully transparent ones
    (``Model.transparent_geoms``: rgba alpha 0, or their material's) and, without
    ``include_static``, those on bodies welded to the world (:func:`static_bodies`). MuJoCo's
    geom-group filter is not offered (the model does not store groups).

    Args:
      model: the model; body_pos ``(nbody, 3)`` (m), body_quat ``(nbody, 4)``: world body poses
        (``forward_kinematics``).
      origin: ``(3,)`` ray origin (m); direction: ``(3,)`` (any nonzero length).
      exclude_body: body whose geoms are ignored (int, static or traced; ``-1``: none).
      include_static: static; cast against geoms welded to the world.
    Returns:
      ``(distance, geom, hit)``: the scalar ``t`` of the nearest hit ``origin + t · direction``
      (units of ``|direction|``; 0 where none), the geom's index (int32; ``-1`` where none, as
      MuJoCo's ``geomid``; the lowest index among equal distances) and a bool scalar.
    """
    dtype = jnp.result_type(origin, direction, body_pos)
    welded = static_bodies(model)
    transparent = set(model.transparent_geoms)
    geoms = [g for g in range(model.ngeom) if g not in transparent
             and (include_static or not welded[model.geom_body[g]])]
    if not geoms:
        return jnp.zeros((), dtype), jnp.asarray(-1, jnp.int32), jnp.asarray(False)
    pos, quat = geom_world_frames(model, body_pos.astype(dtype), body_quat.astype(dtype))
    rot = quat_to_matrix(quat)
    size = model.geom_size.astype(dtype)
    origin, direction = origin.astype(dtype), direction.astype(dtype)

    order, distances, hits = [], [], []
    for geom_type in sorted({model.geom_type[g] for g in geoms}):
        of_type = [g for g in geoms if model.geom_type[g] == geom_type]
        if geom_type in PRIMITIVE_TYPES:
            index = np.asarray(of_type, dtype=np.int64)
            distance, hit = jax.vmap(ray_primitive, in_axes=(None, None, 0, 0, 0, None))(
                origin, direction, pos[index], rot[index], size[index], geom_type)
            order += of_type
            distances.append(distance)
            hits.append(hit)
            continue
        for g in of_type:  # triangle counts and grids differ: one cast per geom
            if geom_type == GeomType.MESH:
                distance, hit = ray_mesh(origin, direction, pos[g], rot[g],
                                         mesh_triangles(model, model.geom_mesh[g], dtype))
            elif geom_type == GeomType.HFIELD:
                h = model.geom_hfield[g]
                distance, hit = ray_hfield(origin, direction, pos[g], rot[g],
                                           model.hfield_size.astype(dtype)[h],
                                           model.hfield_data[h].astype(dtype))
            else:
                raise NotImplementedError(f"{model.source}: no ray cast for geom type {geom_type!r}")
            order.append(g)
            distances.append(distance[None])
            hits.append(hit[None])
    permutation = np.argsort(order)
    geom_index = np.asarray(order, dtype=np.int32)[permutation]
    distances = jnp.concatenate(distances)[permutation]
    hits = jnp.concatenate(hits)[permutation]
    body = np.asarray([model.geom_body[g] for g in geom_index], dtype=np.int32)
    hits = hits & (body != jnp.asarray(exclude_body, jnp.int32))
    nearest = argmin_first(jnp.where(hits, distances, jnp.inf))
    hit = hits[nearest]
    return (jnp.where(hit, distances[nearest], 0.0), jnp.where(hit, jnp.asarray(geom_index)[nearest], -1),
            hit)
