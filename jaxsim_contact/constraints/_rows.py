"""Typed constraint-row blocks: what every constraint producer hands the assembler (DESIGN §2
stage 4; MuJoCo's ``efc_*`` rows: one row space, many producers).

A block holds ``m`` *slots* of three rows each, ``(t1, t2, n)`` — the contact problem's layout
(seed 001 §II) — and says what kind of force lives on them (:class:`RowKind`):

* ``CONE``: a Coulomb cone, ``λ ∈ K_μ`` (contacts);
* ``SPIN``: torsional and rolling friction rows that widen the cone of the contact slot with
  the same index (MuJoCo's elliptic ``condim`` 4 / 6; ``ContactProblem.num_spin``);
* ``UNILATERAL``: only the normal row is a constraint, ``λ_n ≥ 0``, tangent rows empty and
  frictionless (joint and tendon limits);
* ``BOX``: only the normal row carries force, ``|λ_n| ≤ b`` (dry friction: MuJoCo's
  ``frictionloss``), tangent rows empty;
* ``BILATERAL``: the three rows carry forces of any sign and hold ``J v⁺ = c*`` (equality
  constraints; a constraint with fewer rows leaves the others empty).

Kinds come in that order in the row space (``ContactProblem``'s slot layout).

Each block carries its slots' geometry — signed distance along the normal row, the row frame,
friction, a warm-start key, the geometric active mask and a world point — evaluated outside the
solve, and computes its rows of ``B = J L⁻ᵀ`` and of ``J [v_f, v]`` on demand
(:meth:`RowBlock.factor_and_velocity_rows`) inside it, so that a step with no active slot never
forms a Jacobian. The compliance of its rows and whether restitution applies are declared by the
block type. A new constraint kind is one subclass plus its producer module, and one line in
:data:`~jaxsim_contact.constraints._assembler.PRODUCERS`.
"""


import abc
import enum
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._model import Options

__all__ = ["RowKind", "KIND_ORDER", "SlotGeometry", "RowBlock", "NormalRowBlock"]


class RowKind(enum.Enum):
    """The force set of a block's slots (see module docstring)."""

    CONE = "cone"
    SPIN = "spin"
    UNILATERAL = "unilateral"
    BOX = "box"
    BILATERAL = "bilateral"


#: the order of the kinds in the row space
KIND_ORDER = (RowKind.CONE, RowKind.SPIN, RowKind.UNILATERAL, RowKind.BOX, RowKind.BILATERAL)


class SlotGeometry(eqx.Module):
    """The geometry of ``m`` constraint slots, evaluated outside the solve.

    Attributes:
      distance: ``(m,)`` signed distance along the normal row (m or rad; ``< 0`` violated).
      frame: ``(m, 3, 3)`` world rows ``(t1, t2, n)`` of each slot.
      friction: ``(m,)`` Coulomb coefficient (0 for frictionless kinds).
      key: ``(m,)`` int32 identity of what fills the slot, stable across steps (warm start):
        contacts number their candidates model-wide (``KEY_STRIDE`` × pair + point); the other
        blocks number their slots from 0 and :func:`~._assembler.constraint_rows` shifts them past
        the contacts' and the earlier blocks' keys.
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

    #: the slots are contacts (the penetration statistic and contact sensors read them)
    is_contact: ClassVar[bool] = False

    @abc.abstractmethod
    def normal_compliance(self, options: Options, dtype) -> jax.Array:
        """Scalar compliance ``R`` of the normal rows, in (units of the row's acceleration) / force."""

    @abc.abstractmethod
    def correction_speed(self, options: Options, dtype) -> jax.Array:
        """Scalar cap on the Baumgarte push-out speed ``β δ / Δt`` of a violated slot, in the
        units of the row's velocity."""

    def shares_body_pair(self, touching: jax.Array) -> jax.Array:
        """``(m,)`` bool: ``touching`` slots (``(m,)`` bool: active and able to carry a force this
        step) whose two bodies also meet at another touching slot of the block — a statically
        indeterminate contact set (a face resting on 4 corners) whose force distribution the rigid
        model leaves free. None in a block that is not a contact block."""
        return jnp.zeros_like(touching)

    def slot_trees(self, model, tree_of_body: np.ndarray) -> jax.Array:
        """``(m, 2)`` int32: the kinematic trees (``tree_of_body``: per body, −1 for the world and
        bodies welded to it) each slot's rows act on, for the row count of indeterminate sets
        (``_assembler``); −1 where the block does not say (not counted)."""
        del model, tree_of_body
        return jnp.full((self.num_slots, 2), -1, jnp.int32)

    def force_bound(self, dtype) -> jax.Array:
        """``(m,)`` bound ``b`` of the normal force of ``BOX`` slots (N or N·m); 0 for the other
        kinds (unused)."""
        return jnp.zeros((self.num_slots,), dtype)

    def reference_velocity(self, options: Options, dt: jax.Array):
        """``None`` (the normal row's gap / push-out / restitution rule of the assembler) or an
        ``(m, 3)`` reference velocity ``c*`` of all three rows (bilateral kinds: a Baumgarte
        correction of the rows' position error)."""
        del options, dt
        return None

    def soft_rows(self, model, velocity_now: jax.Array, dt: jax.Array):
        """``(R (m, 3), a_ref (m, 3))``: the regulariser and reference acceleration of the
        block's rows under MuJoCo's soft model (:mod:`._soft`), with ``velocity_now`` ``(m, 3)``
        the rows' velocity ``J v`` at the start of the step. Blocks without a MuJoCo
        counterpart implemented raise ``NotImplementedError`` naming themselves."""
        del velocity_now, dt
        raise NotImplementedError(
            f"{model.source}: {type(self).__name__} rows are not supported by "
            "Options.constraint_model='mujoco' yet; use the hard model")

    def reported_force(self, force: jax.Array) -> jax.Array:
        """``(m, 3)`` the slots' forces as ``ContactData`` reports them (in the slot frames),
        from the solved ``force`` ``(m, 3)``; the same unless a block's rows are not its
        frame's (pyramid edges)."""
        return force

    @abc.abstractmethod
    def factor_and_velocity_rows(self, model, smooth, velocity: jax.Array):
        """``(B rows (3m, nv), velocity rows (3m, 2))``: the block's rows of ``B = J L⁻ᵀ`` and of
        ``J [v_f, v]``, with rows of inactive slots zero. ``smooth`` is the step's
        :class:`~jaxsim_contact.dynamics.SmoothDynamics`, ``velocity`` ``(nv,)`` the state's."""


class NormalRowBlock(RowBlock):
    """A :class:`RowBlock` whose slots carry one constraint row, the normal row, and empty tangent
    rows (joint and tendon limits, dry friction)."""

    def tangent_compliance(self, options: Options, normal_diag: jax.Array) -> jax.Array:
        """``(m,)``: the normal row's own Delassus entry on the empty tangent rows — no force
        can live there (μ = 0, or a box slot's pinned tangent rows), and a unit-scale diagonal
        keeps ``G + R`` non-singular (ADMM's ``(G + R + ρI)⁻¹`` bounded)."""
        return jnp.maximum(normal_diag, jnp.finfo(normal_diag.dtype).tiny)

    @staticmethod
    def normal_rows(rows: jax.Array, smooth, velocity: jax.Array):
        """:meth:`factor_and_velocity_rows` of slots whose normal rows are ``rows`` ``(m, nv)``
        (zero rows for inactive slots): ``(B rows (3m, nv), velocity rows (3m, 2))``."""
        both_velocities = jnp.stack([smooth.free_velocity, velocity], axis=1)  # (nv, 2)
        normal_factor = rows @ smooth.cholesky_inverse.T  # J L⁻ᵀ
        normal_velocity = rows @ both_velocities
        return NormalRowBlock.with_empty_tangent_rows(normal_factor, normal_velocity)

    @staticmethod
    def with_empty_tangent_rows(normal_factor: jax.Array, normal_velocity: jax.Array):
        """Interleave zero tangent rows with the slots' normal ``B`` ``(m, nv)`` and velocity
        ``(m, 2)`` rows: ``((3m, nv), (3m, 2))`` in the ``(t1, t2, n)`` order."""
        m = normal_factor.shape[0]
        zeros_factor, zeros_velocity = jnp.zeros_like(normal_factor), jnp.zeros_like(normal_velocity)
        factor = jnp.stack([zeros_factor, zeros_factor, normal_factor], 1).reshape(3 * m, -1)
        velocity = jnp.stack([zeros_velocity, zeros_velocity, normal_velocity], 1)
        return factor, velocity.reshape(3 * m, 2)
