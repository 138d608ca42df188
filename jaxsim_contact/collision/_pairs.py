"""Static candidate collision pairs, built once on the host (DESIGN §2 stage 2, first half).

A pair of geoms ``(a, b)`` is a candidate when all of these hold (MuJoCo's filtering rules, so a
model behaves as in MuJoCo C):

* bitmasks: ``contype[a] & conaffinity[b]`` or ``contype[b] & conaffinity[a]`` is non-zero;
* the geoms are on different *weld groups* (a body without joints is welded to its parent; two
  geoms that cannot move relative to each other never collide — this also drops world-world
  pairs);
* no parent/child pair: the weld group of one is not the parent weld group of the other, unless
  that parent is the world (geoms of a body still collide with the floor);
* the body pair is not excluded explicitly (MJCF ``<exclude>``), nor the geom pair (set by
  :func:`~jaxsim_contact.io.set_collision`);
* not two planes (unbounded both), and no height field with a plane or another height field
  (MuJoCo C has no function for those pairs).

Candidates are grouped by their (ordered) geom types: one :class:`PairGroup` per
``(type_a, type_b)`` with ``type_a ≤ type_b`` (so a plane is always ``a``), except that a height
field is always ``a`` and its pairs form one :class:`HFieldPairGroup` per height field and type. Each group is run by
one vmapped pair function in the step, so the Python loop in traced code is over static groups
only. Groups carry a *narrow-phase budget*: the number of pairs that go through the exact pair
function per step after bounding-sphere culling (all pairs for closed forms; capped for the
costly GJK/EPA groups, with the overflow flagged).

Convex-mesh geoms are reduced to the vertices of their convex hull here (indices into the stored
vertex array; the vertex *values* stay dynamic model leaves).
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from .._types import GeomType
from ._hfield import bounding_radius, window_cells
from ._registry import has_closed_form
from ._structure import DEFAULT_GENERIC_PAIR_BUDGET, CollisionStructure, HFieldPairGroup, PairGroup

__all__ = ["build_collision_structure", "collision_structure"]

def _weld_roots(body_parent: tuple[int, ...], body_joint_num: tuple[int, ...]) -> list[int]:
    """Weld group of every body: the nearest ancestor-or-self with a joint (0 = world)."""
    weld = [0] * len(body_parent)
    for b in range(1, len(body_parent)):
        weld[b] = b if body_joint_num[b] > 0 else weld[body_parent[b]]
    return weld


def _never_collide(type_a: GeomType, type_b: GeomType) -> bool:
    """Planes and height fields are static terrain: MuJoCo C collides neither with the other."""
    terrain = (GeomType.PLANE, GeomType.HFIELD)
    return type_a in terrain and type_b in terrain


def _hull_indices(vertices: np.ndarray) -> tuple[int, ...]:
    """Indices of the convex-hull vertices (all vertices if the hull cannot be computed)."""
    vertices = np.asarray(vertices, dtype=np.float64)
    if len(vertices) < 5:
        return tuple(range(len(vertices)))
    try:
        from scipy.spatial import ConvexHull

        return tuple(int(i) for i in sorted(ConvexHull(vertices).vertices))
    except Exception:  # degenerate (flat) meshes: keep every vertex, support stays exact
        return tuple(range(len(vertices)))


def build_collision_structure(
    *,
    geom_type,
    geom_body,
    geom_contype,
    geom_conaffinity,
    body_parent,
    body_joint_num,
    exclude_body_pairs=(),
    contact_geom_pairs=(),
    exclude_geom_pairs=(),
    mesh_vertices=(),
    generic_pair_budget: int = DEFAULT_GENERIC_PAIR_BUDGET,
    geom_hfield=(),
    hfield_size=(),
    hfield_shape=(),
    geom_size=(),
    geom_mesh=(),
    geom_margin=(),
) -> CollisionStructure:
    """Candidate pairs and mesh hulls from the static geom description (host side).

    Args:
      geom_type, geom_body, geom_contype, geom_conaffinity: per-geom tuples (MuJoCo order).
      body_parent, body_joint_num: per-body tuples of the kinematic tree.
      exclude_body_pairs: explicit ``(body1, body2)`` exclusions.
      contact_geom_pairs: explicit ``(geom1, geom2)`` pairs (MuJoCo ``<pair>``): candidates
        regardless of contype/conaffinity, kinematic-tree filters and exclusions; a pair the
        filters already produce is kept once.
      exclude_geom_pairs: explicit ``(geom1, geom2)`` exclusions (do not override
        ``contact_geom_pairs``).
      mesh_vertices: per mesh, ``(V, 3)`` vertices (concrete values) for the hull; an empty tuple
        or traced values keep every vertex.
      generic_pair_budget: narrow-phase budget of groups without a closed form (GJK/EPA).
      geom_hfield: per geom, its height-field index or -1 (needed when a geom is a height field),
        with ``hfield_size`` ``(nhfield, 4)`` and ``hfield_shape`` ``(nrow, ncol)`` per height
        field, and per geom ``geom_size``, ``geom_mesh``, ``geom_margin`` (concrete values: a
        height-field pair's window of cells is static, sized by the other geom's bounding radius).
    """
    weld = _weld_roots(tuple(body_parent), tuple(body_joint_num))
    excluded = {tuple(sorted(p)) for p in exclude_body_pairs}
    excluded_geoms = {tuple(sorted((int(a), int(b)))) for a, b in exclude_geom_pairs}
    by_types: dict[tuple[GeomType, GeomType], list[tuple[int, int]]] = {}
    candidates: set[tuple[int, int]] = set()
    ngeom = len(geom_type)
    for a in range(ngeom):
        for b in range(a + 1, ngeom):
            if not (geom_contype[a] & geom_conaffinity[b] or geom_contype[b] & geom_conaffinity[a]):
                continue
            ta, tb = GeomType(geom_type[a]), GeomType(geom_type[b])
            if _never_collide(ta, tb):
                continue
            wa, wb = weld[geom_body[a]], weld[geom_body[b]]
            if wa == wb:
                continue
            if (wa != 0 and weld[body_parent[wa]] == wb and wb != 0) or (
                wb != 0 and weld[body_parent[wb]] == wa and wa != 0
            ):
                continue
            if tuple(sorted((geom_body[a], geom_body[b]))) in excluded or (a, b) in excluded_geoms:
                continue
            candidates.add((a, b))
    for a, b in contact_geom_pairs:
        a, b = int(a), int(b)
        if not (0 <= a < ngeom and 0 <= b < ngeom) or a == b:
            raise ValueError(f"contact pair ({a}, {b}) must name two different geoms of {ngeom}")
        if _never_collide(GeomType(geom_type[a]), GeomType(geom_type[b])):
            raise ValueError(f"contact pair ({a}, {b}) joins two planes / height fields, which never collide")
        candidates.add((min(a, b), max(a, b)))
    for a, b in sorted(candidates):
        ta, tb = GeomType(geom_type[a]), GeomType(geom_type[b])
        if (tb < ta and ta != GeomType.HFIELD) or tb == GeomType.HFIELD:
            a_, b_, ta, tb = b, a, tb, ta
        else:
            a_, b_ = a, b
        field = int(geom_hfield[a_]) if ta == GeomType.HFIELD else -1
        by_types.setdefault((ta, tb, field), []).append((a_, b_))

    hulls = []
    for verts in mesh_vertices:
        try:
            concrete = np.asarray(verts)
        except Exception:  # traced vertices: no host-side hull
            concrete = None
        hulls.append(_hull_indices(concrete) if concrete is not None else tuple(range(verts.shape[0])))

    groups, offset = [], 0
    for (ta, tb, field), pairs in sorted(by_types.items()):
        geom_a, geom_b = tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)
        if ta == GeomType.HFIELD:
            def hull(g):
                mesh = geom_mesh[g]
                return np.asarray(mesh_vertices[mesh])[list(hulls[mesh])] if tb == GeomType.MESH else None

            radius = max(bounding_radius(tb, geom_size[g], hull(g)) + float(geom_margin[g]) + float(geom_margin[h])
                         for h, g in pairs)
            window = window_cells(tuple(hfield_shape[field]), hfield_size[field], radius)
            groups.append(HFieldPairGroup(ta, tb, geom_a, geom_b, len(pairs), offset, field, window, radius))
        else:
            budget = len(pairs) if has_closed_form(ta, tb) else min(len(pairs), generic_pair_budget)
            groups.append(PairGroup(ta, tb, geom_a, geom_b, budget, offset))
        offset += len(pairs)

    return CollisionStructure(groups=tuple(groups), mesh_hull=tuple(hulls))


@functools.lru_cache(maxsize=64)
def _structure_from_static(geom_type, geom_body, contype, conaffinity, parent, joint_num, exclude,
                           mesh_sizes, explicit=(), exclude_geoms=()):
    return build_collision_structure(
        geom_type=geom_type, geom_body=geom_body, geom_contype=contype,
        geom_conaffinity=conaffinity, body_parent=parent, body_joint_num=joint_num,
        exclude_body_pairs=exclude, contact_geom_pairs=explicit, exclude_geom_pairs=exclude_geoms,
    )


def collision_structure(model) -> CollisionStructure:
    """The model's :class:`CollisionStructure`: the one built at load time, else one derived
    from the static fields (cached; meshes then keep all their vertices)."""
    if model.collision is not None:
        return model.collision
    if GeomType.HFIELD in model.geom_type:
        raise ValueError("a model with height fields needs its collision structure built on the host "
                         "(jaxsim_contact.io._scene.rebuild_collision): a height-field pair's window is static")
    tree = model.tree
    structure = _structure_from_static(
        tuple(model.geom_type), tuple(model.geom_body), tuple(model.geom_contype),
        tuple(model.geom_conaffinity), tuple(tree.body_parent), tuple(tree.body_joint_num),
        tuple(model.exclude_body_pairs), tuple(int(v.shape[0]) for v in model.mesh_vertices),
        tuple(model.contact_geom_pairs), tuple(getattr(model, "exclude_geom_pairs", ())),
    )
    # all-vertex "hulls" for the fallback (vertex values may be traced here)
    return dataclasses.replace(
        structure, mesh_hull=tuple(tuple(range(int(v.shape[0]))) for v in model.mesh_vertices)
    )
