"""The contact pipeline: candidate pairs, narrow phase, contact frames and Jacobians, the contact
problem and its solve inside ``jc.step`` (DESIGN §2 stages 2–4 and 6–8; seed 001 §II).

Public helpers:

* :func:`build_collision_structure` / :func:`collision_structure` — static candidate pairs;
* :func:`narrow_phase` — candidate contacts of a configuration;
* :func:`contact_stage` — the constraint forces and velocity of one step;
* :func:`add_floor`, :func:`set_collision` — scene edits on a loaded model (host side).
"""

from .constraints import (
    contact_slots,
    contact_stage,
    default_contact_budget,
    initial_contact_data,
    num_constraint_slots,
)
from .geoms import GeomData, bounding_sphere, gather_geoms, geom_world_frames, to_shape
from .manifold import Manifold, reduce_to_four, tangent_frame
from .narrowphase import PAIR_FUNCTIONS, Candidates, has_closed_form, narrow_phase, pair_function
from .pairs import CollisionStructure, PairGroup, build_collision_structure, collision_structure
from .scene import add_floor, set_collision

__all__ = [
    "CollisionStructure",
    "PairGroup",
    "build_collision_structure",
    "collision_structure",
    "GeomData",
    "geom_world_frames",
    "gather_geoms",
    "to_shape",
    "bounding_sphere",
    "Manifold",
    "reduce_to_four",
    "tangent_frame",
    "PAIR_FUNCTIONS",
    "Candidates",
    "has_closed_form",
    "pair_function",
    "narrow_phase",
    "contact_slots",
    "contact_stage",
    "default_contact_budget",
    "initial_contact_data",
    "num_constraint_slots",
    "add_floor",
    "set_collision",
]
