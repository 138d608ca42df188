"""jaxsim_contact: JAX-native differentiable rigid-body physics with hard frictional contact.

Public names follow the contract in DESIGN §5. Importing the package never changes global JAX
configuration (enable float64 yourself with ``jax.config.update("jax_enable_x64", True)``).
"""

from . import collision, contact, geometry
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
from .math import Transform
from .types import GeomType

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "collision",
    "contact",
    "geometry",
    "GeomType",
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
