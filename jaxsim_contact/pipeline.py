"""Deprecated: the former ``jc.pipeline`` namespace, split by job in version 0.1.0.

Collision (pairs, narrow phase, manifolds) is in :mod:`jaxsim_contact.collision`, the contact
stage and slot counts in :mod:`jaxsim_contact.constraints`, scene edits (``add_floor``,
``set_collision``) in :mod:`jaxsim_contact.io`. The old names still resolve here, with a
``DeprecationWarning`` naming the new place.
"""

from __future__ import annotations

import importlib
import warnings

#: old name -> (new module, name)
_MOVED = {
    **{name: ("jaxsim_contact.collision", name) for name in (
        "CollisionStructure", "PairGroup", "build_collision_structure", "collision_structure",
        "Manifold", "reduce_to_four", "tangent_frame", "PAIR_FUNCTIONS", "Candidates",
        "has_closed_form", "pair_function", "narrow_phase")},
    **{name: ("jaxsim_contact.collision._geoms", name) for name in (
        "GeomData", "geom_world_frames", "gather_geoms", "to_shape", "bounding_sphere")},
    **{name: ("jaxsim_contact.constraints", name) for name in (
        "contact_slots", "contact_stage", "default_contact_budget", "initial_contact_data",
        "num_constraint_slots")},
    **{name: ("jaxsim_contact.io", name) for name in ("add_floor", "set_collision")},
}

__all__: list[str] = []


def __getattr__(name: str):
    if name not in _MOVED:
        raise AttributeError(f"module 'jaxsim_contact.pipeline' has no attribute {name!r}")
    module, attribute = _MOVED[name]
    warnings.warn(f"jaxsim_contact.pipeline.{name} moved to {module}.{attribute}; the pipeline "
                  "namespace will be removed", DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module(module), attribute)
