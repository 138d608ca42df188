"""Exceptions raised by :func:`jaxsim_contact.load` (host side, before anything is traced).

Every message names the model file, the offending element (kind and name, or index when unnamed)
and the offending value, so that a user can find the line to fix.
"""

from __future__ import annotations

__all__ = [
    "ModelError",
    "ModelParseError",
    "MissingAssetError",
    "InvalidMassError",
    "InvalidInertiaError",
    "InvalidFrictionError",
    "InvalidGeometryError",
    "DegenerateMeshError",
    "UnsupportedFeatureError",
    "InvalidActuatorError",
    "InvalidFluidError",
    "SelfOverlapWarning",
    "IgnoredOptionWarning",
    "IgnoredSensorWarning",
]


class ModelError(ValueError):
    """Base class: the model file describes something physically or syntactically invalid."""


class ModelParseError(ModelError):
    """The file is not well-formed XML, or the MuJoCo compiler rejected its syntax."""


class MissingAssetError(ModelError, FileNotFoundError):
    """A mesh (or other asset) file referenced by the model does not exist."""


class InvalidMassError(ModelError):
    """A body has a negative mass, or a non-positive mass although a joint moves it."""


class InvalidInertiaError(ModelError):
    """A body's rotational inertia is not positive definite (or violates the triangle inequality)."""


class InvalidFrictionError(ModelError):
    """A geom has a negative (or non-finite) friction coefficient."""


class InvalidGeometryError(ModelError):
    """A primitive geom has a size that is zero, negative or not finite."""


class DegenerateMeshError(ModelError):
    """A mesh asset encloses no volume that a fallback could repair: empty, unreadable, non-finite
    vertices, all vertices coincident or collinear, a zero or non-finite scale, or a volume below
    MuJoCo's ``mjMINVAL`` (1e-15 m³). Planar meshes are repaired instead (see
    :mod:`jaxsim_contact.io._meshes`)."""


class InvalidActuatorError(ModelError):
    """An actuator parameter is outside its valid range (a non-positive activation time
    constant, a non-finite gain or bias)."""


class InvalidFluidError(ModelError):
    """The fluid medium (``<option density viscosity wind>``) is negative or not finite, or a
    geom's ellipsoid-model coefficients (``fluidcoef``, MuJoCo's ``geom_fluid``) are not finite."""


class UnsupportedFeatureError(NotImplementedError):
    """The model uses an element or attribute value this engine does not simulate yet."""


class IgnoredSensorWarning(UserWarning):
    """The model declares sensors; the engine loads the model but does not compute sensor
    readings yet (issue 44): the message names the file and the sensors' types."""


class IgnoredOptionWarning(UserWarning):
    """The model sets ``<option>`` values the engine has no counterpart for (MuJoCo's own solver
    and collision settings); the message names each one (:mod:`jaxsim_contact.io._options`)."""


class PairParameterWarning(UserWarning):
    """A ``<contact><pair>`` sets a friction, margin or gap the hard model does not use (it takes
    the geoms' friction and the global margin); ``constraint_model="mujoco"`` uses them and
    ``jc.load`` gives no such warning in that mode."""


class ClampedParameterWarning(UserWarning):
    """Under ``constraint_model="mujoco"``: a ``solref`` / ``solimp`` outside MuJoCo's valid range,
    used as MuJoCo uses it (``getsolparam``: mixed-sign ``solref`` replaced by the default, a time
    constant below ``2 timestep`` raised to it, ``solimp`` clamped); the message names each
    element, its value and the value used (:mod:`jaxsim_contact.io._soft_parameters`)."""


def describe(kind: str, name: str, index: int) -> str:
    """``"body 'torso'"`` or ``"body #3"`` when the element is unnamed."""
    return f"{kind} '{name}'" if name else f"{kind} #{index}"


class SelfOverlapWarning(UserWarning):
    """Two bodies of one mechanism overlap at the model's reference pose ``qpos0`` (see
    :func:`jaxsim_contact.io._overlaps.exclude_self_overlaps`)."""
