"""Static description of a model's candidate collision pairs (hashable; DESIGN §2 stage 2).

:class:`CollisionStructure` holds one :class:`PairGroup` per ordered geom-type combination and the
convex-hull vertex indices of each mesh; :func:`~._pairs.build_collision_structure` builds it once
on the host, and the narrow phase loops over its groups (a Python loop over static groups).
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from .._types import GeomType

__all__ = ["PairGroup", "HFieldPairGroup", "CollisionStructure", "DEFAULT_GENERIC_PAIR_BUDGET"]

#: default narrow-phase budget of a group handled by GJK/EPA (pairs per step after culling)
DEFAULT_GENERIC_PAIR_BUDGET = 64


@dataclasses.dataclass(frozen=True)
class PairGroup:
    """Candidate pairs of one ordered geom-type combination (static, hashable).

    Attributes:
      type_a, type_b: geom types, ``type_a <= type_b``.
      geom_a, geom_b: ``(P,)`` geom indices of the pairs.
      narrow_budget: pairs passed to the pair function per step (``<= P``); when more pairs pass
        the bounding-sphere test the closest ``narrow_budget`` are kept and the overflow flagged.
      key_offset: index of the group's first pair in the model-wide candidate numbering.
    """

    type_a: GeomType
    type_b: GeomType
    geom_a: tuple[int, ...]
    geom_b: tuple[int, ...]
    narrow_budget: int
    key_offset: int

    @property
    def num_pairs(self) -> int:
        return len(self.geom_a)


@dataclasses.dataclass(frozen=True)
class HFieldPairGroup(PairGroup):
    """Pairs of one height field (always geom a, ``type_a = HFIELD``) and geoms of ``type_b``.

    Attributes:
      hfield: index of the height field (``Model.hfield_data``).
      window: ``(rows, cols)`` cells around geom b that its prisms are built from
        (:func:`~._hfield.window_cells`).
      radius: largest bounding radius (m) of the group's geoms b plus their margins.
    """

    hfield: int
    window: tuple[int, int]
    radius: float


@dataclasses.dataclass(frozen=True)
class CollisionStructure:
    """Everything static the contact stage needs about geometry (hashable).

    Attributes:
      groups: candidate pair groups.
      mesh_hull: per mesh, indices of its convex-hull vertices in ``Model.mesh_vertices[m]``.
      num_pairs: total number of candidate pairs (all groups).
    """

    groups: tuple[PairGroup, ...]
    mesh_hull: tuple[tuple[int, ...], ...]

    @property
    def num_pairs(self) -> int:
        return sum(g.num_pairs for g in self.groups)

    @functools.cached_property
    def pair_geoms(self) -> np.ndarray:
        """``(num_pairs, 2)`` int: geoms ``(a, b)`` of every candidate pair in the model-wide
        numbering (``key // KEY_STRIDE`` of a contact slot)."""
        table = np.zeros((self.num_pairs, 2), dtype=np.int64)
        for group in self.groups:
            rows = slice(group.key_offset, group.key_offset + group.num_pairs)
            table[rows, 0], table[rows, 1] = group.geom_a, group.geom_b
        return table
