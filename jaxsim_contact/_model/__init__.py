"""Model, Options and State pytrees of a multibody scene (DESIGN §4–5).

Layout follows MuJoCo's compiled ``mjModel`` so that a model loaded from MJCF/URDF can be compared
with MuJoCo C entry by entry:

* bodies in MuJoCo's body order; body 0 is the world; ``parent < child`` always;
* joints in MuJoCo's joint order, several joints per body allowed (applied in order);
* ``q`` / ``v`` follow MuJoCo's ``qpos`` / ``qvel`` layout (see :class:`~jaxsim_contact._types.JointType`).

Everything that fixes a shape, a loop trip count or a Python dispatch (counts, parent indices,
joint types, address tables, the grouping of bodies by tree depth, geom types and collision
bitmasks) lives in the hashable, static :class:`KinematicTree` and in static fields. Every physical
parameter (masses, inertias, offsets, axes, damping, armature, gravity, dt, geom sizes, friction,
actuator gains) is a dynamic ``jax.Array`` leaf: changing it never recompiles, and ``jax.grad``
or ``jax.vmap`` over it works (domain randomisation).
"""

from .elements import (
    ActuatorDynamics,
    ActuatorStates,
    Equalities,
    EqualityKind,
    Sensors,
    TendonPathElement,
    Tendons,
    WrapKind,
)
from .model import Model
from .options import Integrator, Options, numeric_option_names
from .soft import ConstraintModel, ContactOverride, FrictionCone, SoftConstraints, missing_soft_parameters
from .state import ContactData, ErrorFlag, State, error_bit
from .tree import KinematicTree

__all__ = ["KinematicTree", "Options", "Integrator", "ActuatorDynamics", "ActuatorStates", "Sensors",
           "Model", "State", "ContactData", "ErrorFlag", "Tendons", "TendonPathElement", "WrapKind",
           "Equalities", "EqualityKind", "error_bit", "numeric_option_names", "FrictionCone",
           "ConstraintModel", "ContactOverride", "SoftConstraints", "missing_soft_parameters"]
