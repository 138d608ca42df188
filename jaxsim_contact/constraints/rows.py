"""Typed constraint-row blocks: what every constraint producer hands the assembler (DESIGN §2
stage 4; MuJoCo's ``efc_*`` rows: one row space, many producers).

A block holds ``m`` *slots* of three rows each, ``(t1, t2, n)`` — the contact problem's layout
(seed 001 §II) — and says what kind of force lives on them (:class:`RowKind`):

* ``CONE``: a Coulomb cone, ``λ ∈ K_μ`` (contacts);
* ``UNILATERAL``: only the normal row is a constraint, ``λ_n ≥ 0``, tangent rows empty and
  frictionless (joint limits; later tendon limits).

Each block carries its slots' geometry — signed distance along the normal row, the row frame,
friction, a warm-start key, the geometric active mask and a world point — evaluated outside the
solve, and computes its rows of ``B = J L⁻ᵀ`` and of ``J [v_f, v]`` on demand
(:meth:`RowBlock.factor_and_velocity_rows`) inside it, so that a step with no active slot never
forms a Jacobian. The compliance of its rows and whether restitution applies are declared by the
block type. A new constraint kind is one subclass plus its producer module, and one line in
:data:`~jaxsim_contact.constraints.assembler.PRODUCERS`.
"""


import abc
import enum

import equinox as eqx
import jax

from ..model import Options

__all__ = ["RowKind", "SlotGeometry", "RowBlock"]


class RowKind(enum.Enum):
    """The force set of a block's slots (see module docstring)."""

    CONE = "cone"
    UNILATERAL = "unilateral"


class SlotGeometry(eqx.Module):
    """The geometry of ``m`` constraint slots, evaluated outside the solve.

    Attributes:
      distance: ``(m,)`` signed distance along the normal row (m or rad; ``< 0`` violated).
      frame: ``(m, 3, 3)`` world rows ``(t1, t2, n)`` of each slot.
      friction: ``(m,)`` Coulomb coefficient (0 for frictionless kinds).
      key: ``(m,)`` int32 identity of what fills the slot, stable across steps (warm start).
      active: ``(m,)`` bool, geometrically active (within the margin or the speculative window).
      point: ``(m, 3)`` world point of the slot (m; zeros where meaningless).
    """

    distance: jax.Array
    frame: jax.Array
    friction: jax.Array
    key: jax.Array
    active: jax.Array
    point: jax.Array

    @property
    def num_slots(self) -> int:
        return self.distance.shape[0]


class RowBlock(SlotGeometry):
    """``m`` constraint slots of one kind (module docstring): their :class:`SlotGeometry`, their
    row kind and compliance, and their Jacobian rows on demand."""

    kind: eqx.AbstractClassVar[RowKind]
    #: Newton restitution applies to the slots' normal rows (seed 001 §II)
    restitution: eqx.AbstractClassVar[bool]

    @abc.abstractmethod
    def normal_compliance(self, options: Options, dtype) -> jax.Array:
        """Scalar compliance ``R`` of the normal rows, in (units of the row's acceleration) / force."""

    @abc.abstractmethod
    def correction_speed(self, options: Options, dtype) -> jax.Array:
        """Scalar cap on the Baumgarte push-out speed ``β δ / Δt`` of a violated slot, in the
        units of the row's velocity."""

    @abc.abstractmethod
    def factor_and_velocity_rows(self, model, smooth, velocity: jax.Array):
        """``(B rows (3m, nv), velocity rows (3m, 2))``: the block's rows of ``B = J L⁻ᵀ`` and of
        ``J [v_f, v]``, with rows of inactive slots zero. ``smooth`` is the step's
        :class:`~jaxsim_contact.dynamics.SmoothDynamics`, ``velocity`` ``(nv,)`` the state's."""
