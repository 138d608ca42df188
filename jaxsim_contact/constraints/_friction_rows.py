"""Dry-friction rows: one box slot per dof and per tendon with ``frictionloss`` (MuJoCo
Computation chapter "Constraint model", friction loss; DESIGN §2 stage 4).

A joint (or tendon) with frictionloss ``f`` resists motion with a force ``|λ| ≤ f`` that opposes
the velocity: it holds the joint still while the other forces on it stay within ``f`` and slips
with ``|λ| = f`` beyond (Coulomb friction with a fixed normal force). The slot's normal row is the
dof's unit row ``e_d`` or the tendon's moment arms ``J_t``, its reference velocity is 0, its
tangent rows are empty; ``|λ_N| ≤ f`` is the box of :class:`~jaxsim_contact.contact.ContactProblem`
(``num_box``). The slots are always active, as in MuJoCo. Which dofs and tendons have a slot is
fixed when the model is built (``Model.frictionloss_dofs``, ``Tendons.frictionloss_tendons``:
those with ``frictionloss > 0``); the values themselves are dynamic and differentiable.
"""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from .._model import Model, Options
from ._rows import NormalRowBlock, RowKind
from ._soft import normal_soft_rows, require_soft

__all__ = ["FrictionRows", "friction_slots", "friction_rows"]


def friction_slots(model: Model) -> int:
    """Static number of dry-friction slots (dofs, then tendons, with frictionloss)."""
    return len(model.frictionloss_dofs) + len(model.tendons.frictionloss_tendons)


class FrictionRows(NormalRowBlock):
    """Dry-friction slots (:class:`~._rows.RowBlock`): ``rows`` ``(m, nv)`` the normal row of each
    slot and ``bound`` ``(m,)`` its frictionloss (N or N·m)."""

    rows: jax.Array
    bound: jax.Array

    kind: ClassVar[RowKind] = RowKind.BOX
    restitution: ClassVar[bool] = False

    def normal_compliance(self, options: Options, dtype) -> jax.Array:
        return options.frictionloss_compliance.astype(dtype)

    def correction_speed(self, options: Options, dtype) -> jax.Array:
        return jnp.ones((), dtype)  # never used: the slots have no position error (distance 0)

    def force_bound(self, dtype) -> jax.Array:
        return self.bound.astype(dtype)

    def factor_and_velocity_rows(self, model, smooth, velocity):
        return self.normal_rows(self.rows, smooth, velocity)

    def soft_rows(self, model, velocity_now, dt):
        """MuJoCo's frictionloss rows: the dof's (tendon's) ``solreffriction`` /
        ``solimpfriction`` at position 0 (impedance ``d0``), no stiffness, ``A_ii`` its
        ``invweight0``; the box ``|f| ≤ frictionloss`` is MuJoCo's Huber cost's dual."""
        soft = require_soft(model)
        dtype = self.distance.dtype
        dofs = np.asarray(model.frictionloss_dofs, dtype=np.int64)
        tendons = np.asarray(model.tendons.frictionloss_tendons, dtype=np.int64)
        cat = lambda dof_values, tendon_values: jnp.concatenate(  # noqa: E731
            [dof_values.astype(dtype)[dofs], tendon_values.astype(dtype)[tendons]])
        return normal_soft_rows(
            cat(soft.dof_solref, soft.tendon_solref_friction),
            cat(soft.dof_solimp, soft.tendon_solimp_friction), self.distance, self.distance,
            cat(soft.dof_invweight0, soft.tendon_invweight0), velocity_now[:, 2], dt,
            soft.refsafe, stiff=False)


def friction_rows(model: Model, smooth) -> FrictionRows:
    """The dry-friction slots of a step (``smooth``: its
    :class:`~jaxsim_contact.dynamics.SmoothDynamics`, for the tendons' moment arms);
    block-local keys (the assembler offsets them)."""
    dtype = smooth.free_velocity.dtype
    dofs = np.asarray(model.frictionloss_dofs, dtype=np.int64)
    tendons = np.asarray(model.tendons.frictionloss_tendons, dtype=np.int64)
    rows = jnp.concatenate([jnp.asarray(np.eye(model.nv)[dofs], dtype),
                            smooth.tendon.jacobian[tendons]])
    bound = jnp.concatenate([model.dof_frictionloss.astype(dtype)[dofs],
                             model.tendons.frictionloss.astype(dtype)[tendons]])
    count = rows.shape[0]
    return FrictionRows(
        distance=jnp.zeros((count,), dtype),
        frame=jnp.broadcast_to(jnp.eye(3, dtype=dtype), (count, 3, 3)),
        friction=jnp.zeros((count,), dtype), key=jnp.arange(count, dtype=jnp.int32),
        active=jnp.ones((count,), bool), point=jnp.zeros((count, 3), dtype), rows=rows,
        bound=bound)
