"""One convex shape type for several geom types, so that one GJK/EPA program serves them all.

The narrow phase compiles one GJK + EPA program per pair group that has no closed form (each
slow to compile: one per group made most of the demo scene's step compile time).
The loop is the same for every group; only the support functions differ. :class:`MixedShape`
holds the parameters of any non-plane geom (MuJoCo ``size``, padded hull vertices) plus a per-lane
index ``kind`` into a static tuple of member types, and evaluates every member's support,
selecting the lane's own: under ``vmap`` the pairs of several general groups become the lanes
of a single ``distance`` call (which groups:
:func:`jaxsim_contact.collision._narrowphase.merged_general_groups`).

The member formulas are the geometry classes' own (:mod:`jaxsim_contact.geometry`), called on a
plain parameter record (``SimpleNamespace``): the shape constructors validate concrete sizes, and a
box lane's size read as a sphere's would be rejected outside ``jit`` although that branch is never
selected. Every branch is finite with finite derivatives for any lane's parameters (no division by
an unguarded norm), so the unselected branches cannot turn a derivative into NaN.

Values equal those of the member classes: swept spheres (sphere, capsule) run GJK on their cores
with the radius added afterwards, other kinds have zero inflation; ``strictly_convex_core`` is
False, so Nesterov uses the normalised directions of seed 000 Alg. 7 — as it does for every pair
that contains a polytope, capsule, cylinder or cone. Pairs of two strictly convex shapes (sphere,
ellipsoid) and height-field pairs keep their own program (:func:`mergeable`).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp

from ..geometry import Box, Capsule, Cone, ConvexMesh, Cylinder, Ellipsoid
from ..geometry._shapes import Shape
from .._math import safe_norm
from .._types import GeomType
from ._geoms import GeomData

__all__ = ["MixedShape", "mergeable", "mixed_shapes"]

_SMOOTH = (GeomType.SPHERE, GeomType.ELLIPSOID)


def mergeable(type_a: GeomType, type_b: GeomType) -> bool:
    """Whether a general (GJK/EPA) pair type can share the mixed program: no plane (closed form)
    and not two strictly convex shapes (they keep Nesterov without normalisation and the smooth
    polish of :func:`jaxsim_contact.collision.distance`)."""
    if GeomType.PLANE in (type_a, type_b) or GeomType.HFIELD in (type_a, type_b):
        return False
    return not (type_a in _SMOOTH and type_b in _SMOOTH)


def _params(kind: GeomType, shape: "MixedShape") -> SimpleNamespace:
    size = shape.size
    if kind == GeomType.MESH:
        return SimpleNamespace(vertices=shape.vertices, center_local=shape.center_local)
    if kind in (GeomType.ELLIPSOID,):
        return SimpleNamespace(radii=size)
    if kind == GeomType.BOX:
        return SimpleNamespace(half_extents=size)
    return SimpleNamespace(radius=size[0], half_length=size[1])


#: member type -> geometry class whose support formulas it uses (sphere: a point core, zero)
_CLASSES = {GeomType.CAPSULE: Capsule, GeomType.ELLIPSOID: Ellipsoid, GeomType.BOX: Box,
            GeomType.CYLINDER: Cylinder, GeomType.CONE: Cone, GeomType.MESH: ConvexMesh}


class MixedShape(Shape):
    """A convex geom of any non-plane type, selected per lane by ``kind``.

    Attributes:
      size: ``(3,)`` MuJoCo geom size (m), as in :mod:`jaxsim_contact.collision._geoms`.
      vertices: ``(V, 3)`` hull vertices in the geom frame (meshes, padded by repeating the first
        vertex; zeros for other kinds). vertex_mask: ``(V,)`` real vertices.
      center_local: ``(3,)`` interior point in the geom frame (hull centroid; 0 otherwise).
      kind: int32 scalar, index of the lane's type in ``members``.
      members: static tuple of the geom types this program handles.
    """

    size: jax.Array
    vertices: jax.Array
    vertex_mask: jax.Array
    center_local: jax.Array
    kind: jax.Array
    members: tuple[GeomType, ...] = eqx.field(static=True)
    geom_type: ClassVar[GeomType] = GeomType.MESH  # not used for dispatch: the lane's type is ``kind``
    has_inflation: ClassVar[bool] = True
    strictly_convex_core: ClassVar[bool] = False

    def _select(self, values):
        out = values[0]
        for index, value in enumerate(values[1:], start=1):
            out = jnp.where(self.kind == index, value, out)
        return out

    @property
    def inflation(self):
        swept = (GeomType.SPHERE, GeomType.CAPSULE)
        return self._select([self.size[0] if t in swept else jnp.zeros((), self.size.dtype)
                             for t in self.members])

    @property
    def center(self):
        return self.center_local

    def support_core(self, direction):
        values = []
        for t in self.members:
            if t == GeomType.SPHERE:
                values.append(jnp.zeros_like(direction))
            else:
                values.append(_CLASSES[t].support_core(_params(t, self), direction))
        return self._select(values)

    def support_core_hessian(self, direction):
        values = []
        for t in self.members:
            if t in (GeomType.ELLIPSOID, GeomType.CYLINDER, GeomType.CONE):
                values.append(_CLASSES[t].support_core_hessian(_params(t, self), direction))
            else:  # point and segment cores, polytopes: the degenerate (zero) Hessian
                values.append(jnp.zeros(direction.shape[:-1] + (3, 3), direction.dtype))
        return self._select(values)

    def bounding_radius(self):
        size = self.size
        values = []
        for t in self.members:
            if t == GeomType.MESH:
                values.append(jnp.max(jnp.where(self.vertex_mask, safe_norm(self.vertices - self.center_local), 0.0)))
            elif t == GeomType.SPHERE:
                values.append(size[0])
            elif t == GeomType.CAPSULE:
                values.append(size[0] + size[1])
            elif t == GeomType.ELLIPSOID:
                values.append(jnp.max(size))
            elif t == GeomType.BOX:
                values.append(safe_norm(size))
            else:  # cylinder, cone
                values.append(safe_norm(size[:2]))
        return self._select(values)


def mixed_shapes(geoms: GeomData, geom_type: GeomType, members: tuple[GeomType, ...],
                 num_vertices: int) -> MixedShape:
    """Batched :class:`MixedShape` ``(G,)`` of geoms of one type, hulls padded to ``num_vertices``
    (static, at least the geoms' own padded count)."""
    count = geoms.vertices.shape[-2]
    vertices, mask = geoms.vertices, geoms.vertex_mask
    if num_vertices > count:  # repeat the first vertex, as the mesh tables do
        extra = num_vertices - count
        vertices = jnp.concatenate([vertices, jnp.repeat(vertices[:, :1], extra, axis=1)], axis=1)
        mask = jnp.concatenate([mask, jnp.zeros(mask.shape[:1] + (extra,), bool)], axis=1)
    if geom_type == GeomType.MESH:
        real = jnp.maximum(jnp.sum(mask, axis=-1, keepdims=True), 1)
        center = jnp.sum(jnp.where(mask[..., None], vertices, 0.0), axis=-2) / real
    else:
        center = jnp.zeros(geoms.pos.shape, geoms.pos.dtype)
    kind = jnp.full(geoms.pos.shape[:-1], members.index(geom_type), jnp.int32)
    return MixedShape(size=geoms.size, vertices=vertices, vertex_mask=mask, center_local=center,
                      kind=kind, members=members)
