"""Enumerations shared across the engine (shape docs live next to each pytree)."""

from __future__ import annotations

import enum

__all__ = ["GeomType", "JointType", "Choice"]


class GeomType(enum.IntEnum):
    """Geometry types; the integer is stable (used as a static dispatch key and in saved files)."""

    PLANE = 0
    SPHERE = 1
    CAPSULE = 2
    ELLIPSOID = 3
    CYLINDER = 4
    BOX = 5
    CONE = 6
    MESH = 7
    #: MuJoCo height field: elevation grid, collided cell by cell as two triangular prisms
    HFIELD = 8


class JointType(enum.IntEnum):
    """Joint types; the integers equal MuJoCo's ``mjtJoint`` so compiled models map one to one.

    A body welded to its parent (URDF ``fixed``, an MJCF body without a joint) has no joint at all.

    ========  =====  =====  =============================================================
    type      nq     nv     coordinates (MuJoCo layout)
    ========  =====  =====  =============================================================
    FREE      7      6      q: position (3, world) + quaternion (4, w first);
                            v: linear velocity of the body origin (3, world frame) +
                            angular velocity (3, body frame)
    BALL      4      3      q: quaternion relative to the parent frame; v: angular velocity
                            (3, body frame)
    SLIDE     1      1      q: displacement along the axis (m) measured from ``qpos0``
    HINGE     1      1      q: angle about the axis (rad) measured from ``qpos0``
    ========  =====  =====  =============================================================
    """

    FREE = 0
    BALL = 1
    SLIDE = 2
    HINGE = 3

    @property
    def nq(self) -> int:
        """Number of position coordinates."""
        return (7, 4, 1, 1)[self]

    @property
    def nv(self) -> int:
        """Number of velocity coordinates (degrees of freedom)."""
        return (6, 3, 1, 1)[self]


class Choice(enum.StrEnum):
    """Base of the engine's option enums (solver formulation, factorisation, integrator, ...).

    Members are strings (``Formulation.NCP == "ncp"``), so an option may be given as its enum member
    or its string; constructors call :meth:`parse`, which returns the member and rejects anything
    else with a ``ValueError`` naming the option and the accepted values.
    """

    @classmethod
    def parse(cls, value, option: str, allowed=None):
        """The member of ``value`` (a member or its string) among ``allowed`` (default: all).

        Raises:
          ValueError: ``"{option} must be one of [...], got {value!r}"``.
        """
        members = tuple(cls) if allowed is None else tuple(cls(a) for a in allowed)
        try:
            member = cls(value)
        except ValueError:
            member = None
        if member is None or member not in members:
            raise ValueError(f"{option} must be one of {[m.value for m in members]}, got {value!r}")
        return member

