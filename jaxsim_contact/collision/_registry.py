"""The registry of pair functions: which ordered geom-type pairs have a closed form
(:mod:`._primitives`, :mod:`._box_box`) and the GJK/EPA fallback for the rest (:mod:`._generic`).

Adding a pair type = one function ``(GeomData a, GeomData b, margin) -> Manifold`` registered in
``PAIR_FUNCTIONS`` with its point count; unregistered convex pairs fall back to GJK/EPA, so a
closed form is an optimisation that the generic tests cross-check (DESIGN §3).
"""

from __future__ import annotations

from .._types import GeomType
from . import _primitives as prim
from ._box_box import box_box
from ._generic import make_generic_pair
from ._hfield import HFIELD_POINTS

__all__ = ["PAIR_FUNCTIONS", "has_closed_form", "pair_function", "points_per_pair"]

T = GeomType
#: (type_a, type_b) with type_a <= type_b  ->  (pair function, points per pair)
PAIR_FUNCTIONS = {
    (T.PLANE, T.SPHERE): (prim.plane_sphere, 1),
    (T.PLANE, T.CAPSULE): (prim.plane_capsule, 2),
    (T.PLANE, T.BOX): (prim.plane_box, 4),
    (T.PLANE, T.CYLINDER): (prim.plane_cylinder, 4),
    (T.PLANE, T.MESH): (prim.plane_mesh, 4),
    (T.SPHERE, T.SPHERE): (prim.sphere_sphere, 1),
    (T.SPHERE, T.CAPSULE): (prim.sphere_capsule, 1),
    (T.SPHERE, T.BOX): (prim.sphere_box, 1),
    (T.CAPSULE, T.CAPSULE): (prim.capsule_capsule, 2),
    (T.BOX, T.BOX): (box_box, 4),
}
def has_closed_form(type_a: GeomType, type_b: GeomType) -> bool:
    """Whether the ordered pair has a registered closed form (else GJK/EPA)."""
    return (GeomType(type_a), GeomType(type_b)) in PAIR_FUNCTIONS


def pair_function(type_a: GeomType, type_b: GeomType):
    """``(function, points_per_pair)`` for the ordered pair ``type_a <= type_b``. Height-field
    pairs have no function of their own: theirs is built per group with the field's elevations
    (:func:`~._hfield.make_hfield_sphere_pair`, :func:`~._hfield.general_hfield_manifolds`)."""
    key = (GeomType(type_a), GeomType(type_b))
    if key[0] == T.HFIELD:
        raise ValueError("a height-field pair is built with its field's elevations: "
                         "collision._hfield.make_hfield_sphere_pair / general_hfield_manifolds")
    if key in PAIR_FUNCTIONS:
        return PAIR_FUNCTIONS[key]
    return make_generic_pair(*key)


def points_per_pair(type_a: GeomType, type_b: GeomType) -> int:
    """Contact slots of a pair of the ordered types (the narrow phase's static count)."""
    if GeomType(type_a) == T.HFIELD:
        return HFIELD_POINTS
    return pair_function(type_a, type_b)[1]
