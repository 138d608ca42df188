"""Broad-phase culling and the narrow phase: a registry of pair functions vmapped per group.

DESIGN §2 stages 2–3. For every static :class:`~._pairs.PairGroup`:

1. **culling** — bounding spheres (for a capsule also its segment; a signed distance for planes)
   give a cheap lower bound ``gap`` of each pair's distance; pairs with ``gap ≤ margin`` are
   *near*. Groups whose narrow budget is smaller than their pair count run the exact test on the ``budget`` pairs of smallest gap
   (``lax.top_k``) and flag an overflow when more pairs are near (static budget + mask, no
   sentinel). A pair that is not near cannot touch within the margin: its candidates are
   inactive and report the *bound* — ``distance = gap`` (≤ the true distance), the normal along
   which it was measured and the midpoint of the bounding volumes' closest points — so every
   vmapped pair-function call sits in a ``lax.cond`` on "some pair of this call is near": an
   unbatched step (MPC, a single-environment Jacobian) skips the exact test of far groups as
   MuJoCo's broad phase does; under ``vmap`` its predicate is "some pair near in some
   environment" (:func:`~jaxsim_contact._batching.any_in_batch`), so a batch skips a group that is
   far in every environment, and the cond never becomes a select (whose stop_gradient operands
   have no transpose inside the contact stage's derivative rule);
2. **pair function** — the registered closed form for the group's types (:mod:`._primitives`,
   :mod:`._box_box`) or the GJK/EPA fallback (:mod:`._generic`), vmapped over the group's pairs,
   each returning a manifold of ``K ≤ 4`` points. Mesh hulls are padded to a common vertex count
   inside one vmap; so that a 100-vertex foot is not padded to the 560 vertices of a trunk, the
   pairs of an uncapped closed-form mesh group (plane-mesh) are vmapped in sub-batches of similar
   hull size (:func:`width_buckets`) and put back in pair order. The general (GJK/EPA) groups
   with a mesh side share one vmapped ``distance`` call, and so do those of analytic shapes
   (:func:`merged_general_groups`): their pairs' queries are lanes over
   :class:`~._mixed.MixedShape` (:func:`_merged_generic_manifolds`), since each group would be one
   more GJK + EPA program, slow to compile;
3. candidates of all groups are concatenated with their bodies, friction (MuJoCo's rule: the
   larger of the two geoms' sliding coefficients) and a stable integer key
   ``4·(model-wide pair index) + slot`` used to warm-start the solver across steps.

Height fields (:mod:`._hfield`) are always geom a and have one group per (field, other type): the
culling bound is the box holding the field; sphere groups run their closed form like any pair
group, the other types' prisms share one GJK/EPA call (:func:`_general_hfield_groups`).

Adding a pair type = one function ``(GeomData a, GeomData b, margin) -> Manifold`` registered in
``PAIR_FUNCTIONS`` with its point count (:mod:`._registry`).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._batching import any_in_batch
from .._math import Transform, safe_norm, safe_normalize
from .._model import Model
from .._types import GeomType
from ._box_box import separating_axes
from ._generic import generic_query, manifold_from_queries, query_poses
from ._geoms import GeomData, bounding_sphere, gather_geoms, geom_world_frames, mesh_local_boxes
from ._hfield import HFIELD_POINTS, field_box_bound, general_hfield_manifolds, make_hfield_sphere_pair
from ._manifold import Manifold
from ._mixed import mergeable, mixed_shapes
from ._registry import has_closed_form, pair_function, points_per_pair
from ._structure import CollisionStructure, HFieldPairGroup, PairGroup

__all__ = ["Candidates", "narrow_phase", "far_candidates", "any_pair_near", "max_candidates", "KEY_STRIDE"]

#: key = KEY_STRIDE * pair index + slot (slots per pair never exceed 4)
KEY_STRIDE = 4


def max_candidates(structure: CollisionStructure) -> int:
    """Static number of candidate contact points produced per step."""
    return sum(g.narrow_budget * points_per_pair(g.type_a, g.type_b) for g in structure.groups)


class Candidates(eqx.Module):
    """Candidate contacts of one step (``N`` = :func:`max_candidates`).

    Attributes:
      distance ``(N,)`` m; point ``(N, 3)``; normal ``(N, 3)`` from geom a to geom b;
      active ``(N,)`` bool (a real point within the contact margin of a near pair);
      friction ``(N,)``; body_a, body_b ``(N,)`` int32; key ``(N,)`` int32 stable identity;
      overflow: scalar bool, some group had more near pairs than its narrow budget.
    """

    distance: jax.Array
    point: jax.Array
    normal: jax.Array
    active: jax.Array
    friction: jax.Array
    body_a: jax.Array
    body_b: jax.Array
    key: jax.Array
    overflow: jax.Array


def width_buckets(model: Model, structure: CollisionStructure, group: PairGroup) -> list[np.ndarray]:
    """Positions of the group's pairs split by padded hull size (static, host side).

    A pair's width is ``(vertices of a, vertices of b)`` (1 for non-mesh geoms), each rounded up
    to the next ``2^k`` or ``1.5 · 2^k`` (at most 50 % padding, and few distinct widths: each
    bucket is one more vmapped program to compile); pairs of equal width form one bucket. Returns
    the buckets' pair positions (ascending within a bucket; together a permutation of the pairs).
    """
    def width(geom: int, geom_type: GeomType) -> int:
        if geom_type != GeomType.MESH:
            return 1
        count = len(structure.mesh_hull[model.geom_mesh[geom]])
        power = 1 << max(count - 1, 1).bit_length()  # smallest 2^k >= count (>= 2)
        return 3 * power // 4 if 3 * power // 4 >= count else power

    keys = [(width(a, group.type_a), width(b, group.type_b)) for a, b in zip(group.geom_a, group.geom_b)]
    return [np.flatnonzero([k == key for k in keys]) for key in sorted(set(keys))]


def _when_near(near: jax.Array, exact, like):
    """``exact()`` (batched :class:`Manifold` s, a pytree shaped like ``like``) if any of ``near``
    ``(P,)`` holds (under ``vmap``: in any environment of the batch), else zeros shaped like
    ``like`` (a pytree of ``jax.ShapeDtypeStruct``): the far pairs' manifolds are replaced by
    their bound in :func:`_candidates` either way. (Zeros, not the bound itself: the bound does
    not become an operand of the cond, whose differentiated operands all get zero-filled
    cotangents in reverse mode, which a step's ``jacrev`` would materialise and carry back.)"""
    # batch-wide predicate: under vmap a per-environment one would make this cond a select whose
    # operands pass through stop_gradient, which cannot be transposed inside the contact stage's
    # derivative rule (constraints._stage._gated_stage_jvp: grad of a vmapped step)
    return jax.lax.cond(any_in_batch(jnp.any(near)), exact,
                        lambda: jax.tree_util.tree_map(lambda x: jnp.zeros(x.shape, x.dtype), like))


def _pair_manifolds(fn, model: Model, structure: CollisionStructure, frames, group: PairGroup,
                    culled: "_Culled"):
    """``vmap(fn)`` over the group's pairs, skipped (a ``lax.cond``) when none of them is near;
    closed-form mesh groups without a cap in hull-size sub-batches, each skipped on its own
    (small hulls are not padded to the largest: a cheaper narrow phase for robots with hulls of
    very different sizes, at the price of one more program to compile per bucket)."""
    has_mesh = GeomType.MESH in (group.type_a, group.type_b)
    closed = has_closed_form(group.type_a, group.type_b)
    buckets = width_buckets(model, structure, group) if has_mesh and closed else []
    # shapes only: the far branch's zeros (the bound's values are taken in _candidates)
    points = points_per_pair(group.type_a, group.type_b)
    like = jax.eval_shape(lambda: culled.bound(points))
    if group.narrow_budget < group.num_pairs or len(buckets) < 2:
        return _when_near(culled.near, lambda: jax.vmap(fn)(culled.geoms_a, culled.geoms_b, culled.pair_margin),
                          like)
    parts = []
    for positions in buckets:
        ga = gather_geoms(model, structure, frames, tuple(group.geom_a[i] for i in positions), group.type_a)
        gb = gather_geoms(model, structure, frames, tuple(group.geom_b[i] for i in positions), group.type_b)
        parts.append(_when_near(culled.near[positions],
                                lambda ga=ga, gb=gb: jax.vmap(fn)(ga, gb, culled.pair_margin[positions]),
                                jax.tree_util.tree_map(lambda x: jax.ShapeDtypeStruct(
                                    (len(positions),) + x.shape[1:], x.dtype), like)))
    order = np.argsort(np.concatenate(buckets))  # back to pair order (static permutation)
    return jax.tree_util.tree_map(lambda *leaves: jnp.concatenate(leaves)[order], *parts)


class _Culled(eqx.Module):
    """A group's pairs after culling: the ``budget`` (or all) pairs that reach the pair function,
    with the bound that stands for the manifold of a pair that is not near: ``gap`` ``(P,)`` m,
    ``bound_normal`` ``(P, 3)`` from a to b, ``bound_point`` ``(P, 3)`` world."""

    geoms_a: GeomData
    geoms_b: GeomData
    near: jax.Array
    pair_margin: jax.Array
    pair_index: jax.Array
    overflow: jax.Array
    gap: jax.Array
    bound_normal: jax.Array
    bound_point: jax.Array

    def bound(self, points: int) -> Manifold:
        """The bound as a manifold of ``points`` slots per pair, all of them padding."""
        count = self.gap.shape[0]
        spread = lambda x: jnp.broadcast_to(x[:, None], (count, points) + x.shape[1:])  # noqa: E731
        return Manifold(spread(self.gap), spread(self.bound_point), spread(self.bound_normal),
                        jnp.zeros((count, points), bool))


def _point_bound(center_a, radius_a, center_b, radius_b):
    """``(gap (P,), normal (P, 3), point (P, 3))`` of two balls: their distance (a lower bound of
    the distance of anything inside them), the unit normal from a to b and the midpoint of their
    closest points."""
    between = center_b - center_a
    # coincident centres are near (gap = -r_a - r_b ≤ margin): the fallback is never reported
    normal = safe_normalize(between, fallback=jnp.array([0.0, 0.0, 1.0], between.dtype))
    gap = safe_norm(between) - radius_a - radius_b
    return gap, normal, center_b - (radius_b + 0.5 * gap)[..., None] * normal


def _tighter(bound, other):
    """Per pair, the larger of two lower bounds (with its normal and point)."""
    use = other[0] > bound[0]
    return (jnp.where(use, other[0], bound[0]), jnp.where(use[:, None], other[1], bound[1]),
            jnp.where(use[:, None], other[2], bound[2]))


def _closest_on_segment(capsule: GeomData, point: jax.Array) -> jax.Array:
    """``(P, 3)`` closest point to ``point`` on each capsule's segment (local z, half-length
    ``size[1]``)."""
    axis = capsule.rot[..., 2]
    half = capsule.size[..., 1]
    along = jnp.clip(jnp.sum((point - capsule.pos) * axis, axis=-1), -half, half)
    return capsule.pos + along[..., None] * axis


def pair_bound(geoms_a: GeomData, type_a: GeomType, geoms_b: GeomData, type_b: GeomType, field=None):
    """Culling bound of pairs ``(P,)`` of geoms: ``(gap (P,) m, normal (P, 3), point (P, 3))`` with
    ``gap`` ≤ the pairs' signed distance whenever it is positive, ``normal`` the unit direction
    from a to b along which it was measured and ``point`` the midpoint of the bounding volumes'
    closest points. Bounding spheres; for a capsule also its segment; for a plane (always geom a)
    the signed distance of b's bounding sphere; for a height field (geom a, ``field`` its
    ``(elevation, size)``) the distance of that sphere to the box holding the field."""
    ta, tb = type_a, type_b
    center_b, radius_b = bounding_sphere(geoms_b, tb)
    if ta == GeomType.HFIELD:
        return field_box_bound(geoms_a, *field, center_b, radius_b)
    if ta == GeomType.PLANE:
        normal = geoms_a.rot[..., 2]
        gap = jnp.sum((center_b - geoms_a.pos) * normal, axis=-1) - radius_b
        # midpoint of the sphere's lowest point and its projection on the plane
        bound_point = center_b - (radius_b + 0.5 * gap)[..., None] * normal
    else:
        center_a, radius_a = bounding_sphere(geoms_a, ta)
        gap, normal, bound_point = _point_bound(center_a, radius_a, center_b, radius_b)
        # a capsule's bounding sphere is loose along its axis: bound from its segment instead
        # (every point of the other geom is within its bounding radius of its centre, so the
        # distance from that centre to the segment, minus both radii, bounds the pair's distance)
        if tb == GeomType.CAPSULE:
            on_b = _closest_on_segment(geoms_b, center_a)
            gap, normal, bound_point = _tighter((gap, normal, bound_point),
                                                _point_bound(center_a, radius_a, on_b, geoms_b.size[..., 0]))
        if ta == GeomType.CAPSULE:
            on_a = _closest_on_segment(geoms_a, center_b)
            gap, normal, bound_point = _tighter((gap, normal, bound_point),
                                                _point_bound(on_a, geoms_a.size[..., 0], center_b, radius_b))
    return gap, normal, bound_point


#: geom types whose oriented bounding box (:func:`_oriented_box`) tightens the culling bound
_BOXED = (GeomType.MESH, GeomType.BOX)


def _oriented_box(model: Model, structure: CollisionStructure, geoms: tuple[int, ...],
                  data: GeomData, geom_type: GeomType) -> GeomData:
    """Batched box :class:`GeomData` (``pos`` the world centre, ``size`` the half extents, the
    geom's own axes) containing each of the static ``geoms`` (their ``data``): a box itself, or a
    mesh's hull vertices' bounding box in the mesh frame (MuJoCo's mesh frame is the hull's
    principal frame, where that box is close)."""
    if geom_type == GeomType.BOX:
        return data
    centre, half = mesh_local_boxes(model, structure, geoms, data.pos.dtype)
    world = data.pos + jnp.einsum("...ij,...j->...i", data.rot, centre)
    return GeomData(world, data.quat, data.rot, half, data.vertices, data.vertex_mask)


def _box_bound(box_a: GeomData, box_b: GeomData):
    """``(gap (P,), normal (P, 3), point (P, 3))`` of two batches of oriented boxes: the largest
    separation over the 15 separating axes (a lower bound of their distance along a unit axis;
    Gottschalk, Lin & Manocha 1996), the axis oriented from a to b, and a point on the mid-plane
    of the separating slab (on the line between the centres)."""
    def one(a, b):
        axes, separation, usable = separating_axes(a, b)
        separation = jnp.where(usable, separation, -jnp.inf)
        best = jnp.argmax(separation)
        axis = axes[best]
        between = b.pos - a.pos
        normal = jnp.where(axis @ between < 0, -axis, axis)
        extent_a = jnp.abs(normal @ a.rot) @ a.size
        along = normal @ between
        # the centre line meets the slab's mid-plane at fraction t of the way from a to b
        t = (extent_a + 0.5 * separation[best]) / jnp.where(along > 0, along, 1.0)
        return separation[best], normal, a.pos + jnp.clip(t, 0.0, 1.0) * between

    return jax.vmap(one)(box_a, box_b)


def _cull(model: Model, structure: CollisionStructure, frames, group: PairGroup, margin: jax.Array) -> _Culled:
    ta, tb = group.type_a, group.type_b
    geoms_a = gather_geoms(model, structure, frames, group.geom_a, ta)
    geoms_b = gather_geoms(model, structure, frames, group.geom_b, tb)
    dtype = geoms_a.pos.dtype
    ia, ib = np.asarray(group.geom_a), np.asarray(group.geom_b)
    pair_margin = margin + jnp.maximum(model.geom_margin.astype(dtype)[ia], model.geom_margin.astype(dtype)[ib])

    gap, normal, bound_point = pair_bound(geoms_a, ta, geoms_b, tb, _field(model, group, dtype))
    if group.narrow_budget < group.num_pairs and ta in _BOXED and tb in _BOXED:
        # where only the closest pairs reach GJK/EPA, bounding spheres of links that meet at a
        # joint overlap by the dozen (Talos standing: 119 of its 996 mesh pairs, against a budget
        # of 64): their oriented boxes keep only the pairs that may touch
        gap, normal, bound_point = _tighter((gap, normal, bound_point),
                                            _box_bound(_oriented_box(model, structure, group.geom_a, geoms_a, ta),
                                                       _oriented_box(model, structure, group.geom_b, geoms_b, tb)))
    near = gap <= pair_margin

    pair_index = jnp.arange(group.num_pairs)
    overflow = jnp.zeros((), bool)
    if group.narrow_budget < group.num_pairs:
        _, pair_index = jax.lax.top_k(-gap, group.narrow_budget)
        overflow = jnp.sum(near) > group.narrow_budget
        take = lambda x: x[pair_index]  # noqa: E731
        geoms_a = jax.tree_util.tree_map(take, geoms_a)
        geoms_b = jax.tree_util.tree_map(take, geoms_b)
        near, pair_margin = near[pair_index], pair_margin[pair_index]
        gap, normal, bound_point = gap[pair_index], normal[pair_index], bound_point[pair_index]
    return _Culled(geoms_a, geoms_b, near, pair_margin, pair_index, overflow, gap, normal, bound_point)


def _field(model: Model, group: PairGroup, dtype):
    """``(elevation (nrow, ncol), size (4,))`` of a height-field group's field, else None."""
    if not isinstance(group, HFieldPairGroup):
        return None
    return model.hfield_data[group.hfield].astype(dtype), model.hfield_size[group.hfield].astype(dtype)


def _group_manifolds(model: Model, structure: CollisionStructure, frames, group: PairGroup,
                     culled: _Culled):
    """Manifolds ``(budget, K)`` of one group on its own: its registered pair function vmapped
    (a height-field group's with its field's elevations bound)."""
    if isinstance(group, HFieldPairGroup):  # spheres (the other types: _general_hfield_groups)
        elevation, size = _field(model, group, culled.geoms_a.pos.dtype)
        on_field = make_hfield_sphere_pair(group.window, group.radius)
        fn = lambda a, b, margin: on_field(a, b, margin, elevation, size)  # noqa: E731
    else:
        fn = pair_function(group.type_a, group.type_b)[0]
    return _pair_manifolds(fn, model, structure, frames, group, culled)


def _candidates(model: Model, group: PairGroup, culled: _Culled, manifold) -> dict:
    """The group's candidate arrays from its manifolds ``(budget, K)``."""
    points = points_per_pair(group.type_a, group.type_b)
    dtype = culled.geoms_a.pos.dtype
    ia, ib = np.asarray(group.geom_a), np.asarray(group.geom_b)
    pair_index = culled.pair_index
    # a far pair reports its bound whether or not its call ran (same values batched or not)
    manifold = jax.tree_util.tree_map(
        lambda exact, bound: jnp.where(culled.near.reshape((-1,) + (1,) * (exact.ndim - 1)), exact, bound),
        manifold, culled.bound(points))
    active = manifold.valid & culled.near[:, None] & (manifold.distance <= culled.pair_margin[:, None])
    friction = jnp.maximum(model.geom_friction.astype(dtype)[ia, 0], model.geom_friction.astype(dtype)[ib, 0])
    body_a = jnp.asarray(np.asarray(model.geom_body, dtype=np.int32)[ia])
    body_b = jnp.asarray(np.asarray(model.geom_body, dtype=np.int32)[ib])
    global_pair = group.key_offset + pair_index
    key = KEY_STRIDE * global_pair[:, None] + jnp.arange(points)[None, :]
    expand = lambda x: jnp.broadcast_to(x[pair_index][:, None], (x[pair_index].shape[0], points))  # noqa: E731
    flat = lambda x: x.reshape((-1,) + x.shape[2:])  # noqa: E731
    return dict(
        distance=flat(manifold.distance), point=flat(manifold.point), normal=flat(manifold.normal),
        active=flat(active), friction=flat(expand(friction)), body_a=flat(expand(body_a)),
        body_b=flat(expand(body_b)), key=flat(key).astype(jnp.int32),
    )


def _general_hfield_groups(structure: CollisionStructure) -> list[int]:
    """Height-field groups whose other geom is not a sphere: their prisms share one GJK/EPA
    program (:func:`~._hfield.general_hfield_manifolds`)."""
    return [i for i, g in enumerate(structure.groups)
            if isinstance(g, HFieldPairGroup) and g.type_b != GeomType.SPHERE]


def merged_general_groups(structure: CollisionStructure) -> list[list[int]]:
    """Sets of general (GJK/EPA) groups that share one query program: the groups with a mesh side,
    and the groups of analytic shapes, each merged when it has at least 2 members.

    A merged lane evaluates the support of every member kind (a select under ``vmap``) and its loop
    runs to the slowest lane, so merging trades run time for compile time; keeping the expensive
    mesh supports (a max over the hull's vertices) out of the analytic lanes keeps most of the
    run time. This split lies between one program per group and one for all groups, in compile
    time and in throughput alike.
    """
    classes: dict[bool, list[int]] = {}
    for i, g in enumerate(structure.groups):
        if not has_closed_form(g.type_a, g.type_b) and mergeable(g.type_a, g.type_b):
            classes.setdefault(GeomType.MESH in (g.type_a, g.type_b), []).append(i)
    return [members for members in classes.values() if len(members) >= 2]


def _merged_generic_manifolds(groups: list[PairGroup], culled: list[_Culled]) -> list:
    """Manifolds of several general (GJK/EPA) groups from ONE vmapped ``distance`` call.

    Every pair contributes its 1 or 5 queries (:func:`~._generic.query_poses`) as lanes; geoms
    become :class:`~._mixed.MixedShape` over the union of the groups' types, hulls padded to the
    largest. One GJK + EPA program instead of one per group (compile time), at the price of
    evaluating every member type's support in every lane (cheap next to a hull's).
    """
    members = tuple(sorted({t for g in groups for t in (g.type_a, g.type_b)}))
    width = max(max(c.geoms_a.vertices.shape[-2], c.geoms_b.vertices.shape[-2]) for c in culled)
    lanes, counts = [], []
    for group, c in zip(groups, culled):
        ta, tb = group.type_a, group.type_b
        poses_b = jax.vmap(lambda a, b: query_poses(a, b, ta, tb))(c.geoms_a, c.geoms_b)  # (P, Q)
        pairs, queries = poses_b.pos.shape[:2]
        per_query = lambda x: jnp.repeat(x, queries, axis=0)  # noqa: E731  (P, ...) -> (P Q, ...)
        shape_a = jax.tree_util.tree_map(per_query, mixed_shapes(c.geoms_a, ta, members, width))
        shape_b = jax.tree_util.tree_map(per_query, mixed_shapes(c.geoms_b, tb, members, width))
        pose_a = Transform(per_query(c.geoms_a.pos), per_query(c.geoms_a.quat))
        pose_b = jax.tree_util.tree_map(lambda x: x.reshape((pairs * queries,) + x.shape[2:]), poses_b)
        lanes.append((shape_a, pose_a, shape_b, pose_b))
        counts.append((pairs, queries))
    stacked = jax.tree_util.tree_map(lambda *xs: jnp.concatenate(xs), *lanes)
    results = jax.vmap(generic_query)(*stacked)
    manifolds, offset = [], 0
    for group, c, (pairs, queries) in zip(groups, culled, counts):
        res = jax.tree_util.tree_map(
            lambda x: x[offset:offset + pairs * queries].reshape((pairs, queries) + x.shape[1:]), results)
        offset += pairs * queries
        finish = lambda a, b, r, m, g=group: manifold_from_queries(a, b, g.type_a, g.type_b, r, m)  # noqa: E731
        manifolds.append(jax.vmap(finish)(c.geoms_a, c.geoms_b, res, c.pair_margin))
    return manifolds


def narrow_phase(model: Model, structure: CollisionStructure, body_pos: jax.Array,
                 body_quat: jax.Array, margin: jax.Array) -> Candidates:
    """All candidate contacts of the configuration whose body poses are ``body_pos`` / ``body_quat``.

    Args:
      model: the scene; structure: its static pair groups;
      body_pos, body_quat: ``(nbody, 3)`` / ``(nbody, 4)`` world-frame body poses at ``q`` (forward
        kinematics, MuJoCo's ``xpos`` / ``xquat``);
      margin: scalar contact margin (m), added to the geoms' own margins.
    Returns:
      :class:`Candidates` of :func:`max_candidates` entries; pairs that are not near report their
      bound and are inactive (module docstring).
    """
    margin = margin.astype(body_pos.dtype)
    frames = geom_world_frames(model, body_pos, body_quat)
    culled = [_cull(model, structure, frames, g, margin) for g in structure.groups]
    manifolds = {}
    for merged in merged_general_groups(structure):
        groups = [structure.groups[i] for i in merged]
        with jax.named_scope("narrow_general_merged"):
            found = _when_near(
                jnp.concatenate([culled[i].near for i in merged]),
                lambda: _merged_generic_manifolds(groups, [culled[i] for i in merged]),
                [jax.eval_shape(lambda c=culled[i], k=points_per_pair(g.type_a, g.type_b): c.bound(k))
                 for i, g in zip(merged, groups)])
        manifolds.update(zip(merged, found))
    fields = _general_hfield_groups(structure)
    if fields:
        groups = [structure.groups[i] for i in fields]
        with jax.named_scope("narrow_hfield_general"):
            found = _when_near(
                jnp.concatenate([culled[i].near for i in fields]),
                lambda: general_hfield_manifolds(groups, [culled[i] for i in fields],
                                                 [_field(model, g, body_pos.dtype) for g in groups]),
                [jax.eval_shape(lambda c=culled[i]: c.bound(HFIELD_POINTS)) for i in fields])
        manifolds.update(zip(fields, found))
    for i, group in enumerate(structure.groups):
        if i not in manifolds:
            with jax.named_scope(f"narrow_{group.type_a.name.lower()}_{group.type_b.name.lower()}"):
                manifolds[i] = _group_manifolds(model, structure, frames, group, culled[i])
    return _all_candidates(model, structure, culled, manifolds, body_pos.dtype)


def far_candidates(model: Model, structure: CollisionStructure, body_pos: jax.Array,
                   body_quat: jax.Array, margin: jax.Array) -> Candidates:
    """:func:`narrow_phase` for a configuration in which no pair is near (:func:`any_pair_near`
    is false): every pair reports its culling bound and no pair function is traced — the same
    values as :func:`narrow_phase` in that case (the contact stage's derivative uses it when
    nothing is in reach)."""
    margin = margin.astype(body_pos.dtype)
    frames = geom_world_frames(model, body_pos, body_quat)
    culled = [_cull(model, structure, frames, g, margin) for g in structure.groups]
    manifolds = {i: c.bound(points_per_pair(g.type_a, g.type_b))
                 for i, (g, c) in enumerate(zip(structure.groups, culled))}
    return _all_candidates(model, structure, culled, manifolds, body_pos.dtype)


def _all_candidates(model: Model, structure: CollisionStructure, culled, manifolds, dtype) -> Candidates:
    """The groups' candidates concatenated in group order, with the overflow of any group."""
    parts, overflow = [], jnp.zeros((), bool)
    for i, group in enumerate(structure.groups):  # static loop over pair-type groups
        parts.append(_candidates(model, group, culled[i], manifolds[i]))
        overflow = overflow | culled[i].overflow
    if not parts:
        z = jnp.zeros((0,), dtype)
        return Candidates(z, jnp.zeros((0, 3), dtype), jnp.zeros((0, 3), dtype), jnp.zeros((0,), bool),
                          z, jnp.zeros((0,), jnp.int32), jnp.zeros((0,), jnp.int32),
                          jnp.zeros((0,), jnp.int32), overflow)
    cat = {k: jnp.concatenate([p[k] for p in parts]) for k in parts[0]}
    return Candidates(overflow=overflow, **cat)


def any_pair_near(model: Model, structure: CollisionStructure, body_pos: jax.Array,
                  body_quat: jax.Array, margin: jax.Array) -> jax.Array:
    """Scalar bool: some pair passes the culling test of :func:`narrow_phase` (its bound is within
    the pair's margin). When false, no candidate can be active and :func:`narrow_phase` equals
    :func:`far_candidates`."""
    if not structure.groups:
        return jnp.zeros((), bool)
    frames = geom_world_frames(model, body_pos, body_quat)
    margin = margin.astype(body_pos.dtype)
    return jnp.any(jnp.concatenate([_cull(model, structure, frames, g, margin).near
                                    for g in structure.groups]))
