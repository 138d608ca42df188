"""Loading models: MJCF and URDF through the MuJoCo compiler, with host-side validation."""

from .errors import (
    InvalidFrictionError,
    InvalidInertiaError,
    InvalidMassError,
    MissingAssetError,
    ModelError,
    ModelParseError,
    UnsupportedFeatureError,
)
from .loader import compile_mjmodel, from_mjmodel, load

__all__ = [
    "load",
    "compile_mjmodel",
    "from_mjmodel",
    "ModelError",
    "ModelParseError",
    "MissingAssetError",
    "InvalidMassError",
    "InvalidInertiaError",
    "InvalidFrictionError",
    "UnsupportedFeatureError",
]
