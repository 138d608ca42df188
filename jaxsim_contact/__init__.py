"""jaxsim_contact: JAX-native differentiable rigid-body physics with hard frictional contact.

Public names follow the contract in DESIGN §5. Importing the package never changes global JAX
configuration (enable float64 yourself with ``jax.config.update("jax_enable_x64", True)``).
"""

from . import collision, constraints, contact, dynamics, geometry, io, scenes, testing, viz
from . import envs
from . import pipeline  # deprecated alias of the former namespace (DeprecationWarning on use)
from .dynamics import (
    bias_forces,
    body_poses,
    chunked_vmap,
    init,
    mass_matrix,
    reset_where,
    rollout,
    sensors,
    step,
)
from .io._checkpoint import CheckpointError, restore, save
from .io._export import export_rollout, export_step, load_exported
from .geometry import (
    Box,
    Capsule,
    Cone,
    ConvexMesh,
    Cylinder,
    Ellipsoid,
    Plane,
    Shape,
    Sphere,
    support,
)
from ._math import Transform
from .io import load
from ._model import ConstraintModel, ContactData, ErrorFlag, FrictionCone, Model, Options, State
from ._types import GeomType, JointType
from ._version import __version__
from ._compiling import CompileReport, compile_report, enable_compilation_cache


__all__ = [
    "__version__",
    "compile_report",
    "enable_compilation_cache",
    "CompileReport",
    "collision",
    "contact",
    "geometry",
    "dynamics",
    "envs",
    "io",
    "constraints",
    "testing",
    "scenes",
    "viz",
    "ConstraintModel",
    "ContactData",
    "ErrorFlag",
    "FrictionCone",
    "GeomType",
    "JointType",
    "Model",
    "Options",
    "State",
    "load",
    "init",
    "step",
    "rollout",
    "reset_where",
    "sensors",
    "chunked_vmap",
    "save",
    "restore",
    "CheckpointError",
    "export_step",
    "export_rollout",
    "load_exported",
    "body_poses",
    "mass_matrix",
    "bias_forces",
    "Transform",
    "Shape",
    "Sphere",
    "Ellipsoid",
    "Box",
    "Capsule",
    "Cylinder",
    "Cone",
    "Plane",
    "ConvexMesh",
    "support",
]
