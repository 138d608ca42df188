"""Tendon-limit rows: one unilateral slot per limited tendon, on its nearer length limit (MuJoCo
Computation chapter "Constraint model", tendon limits; DESIGN §2 stage 4).

The normal row is ``+J_t`` (lower limit: the tendon may not get shorter) or ``−J_t`` (upper
limit), ``J_t`` the tendon's moment arms (:mod:`jaxsim_contact.dynamics._tendons`); the tangent
rows are empty and the slot is frictionless, like a joint limit
(:mod:`._limit_rows`, whose compliance and push-out cap it shares). A slot is active inside the
same speculative window: within the margin, or reachable within the step at the tendon's current
speed.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .._model import Model
from ._limit_rows import LimitBlock
from ._soft import is_mujoco, normal_soft_rows, require_soft

__all__ = ["TendonLimitRows", "limited_tendons", "tendon_limit_rows", "tendon_limits_in_reach",
           "nearer_limits"]


def limited_tendons(model: Model) -> tuple[int, ...]:
    """Static indices of the tendons whose length limits are constraints (none when
    ``Options.enable_joint_limits`` is off, as MuJoCo's ``limit`` disable flag)."""
    if not model.options.enable_joint_limits:
        return ()
    return tuple(t for t in range(model.ntendon) if model.tendons.limited[t])


class TendonLimitRows(LimitBlock):
    """Tendon-limit slots (:class:`~._rows.RowBlock`): ``rows`` ``(m, nv)`` the signed moment arms
    ``±J_t`` of each slot's tendon (``+`` lower, ``−`` upper limit)."""

    rows: jax.Array

    def factor_and_velocity_rows(self, model, smooth, velocity):
        return self.normal_rows(jnp.where(self.active[:, None], self.rows, 0.0), smooth, velocity)

    def soft_rows(self, model, velocity_now, dt):
        """MuJoCo's tendon-limit rows: the tendon's ``solref_lim`` / ``solimp_lim`` /
        ``margin``, ``A_ii`` its ``invweight0``."""
        soft = require_soft(model)
        dtype = self.distance.dtype
        index = np.asarray(limited_tendons(model), dtype=np.int64)
        return normal_soft_rows(
            soft.tendon_solref_limit.astype(dtype)[index], soft.tendon_solimp_limit.astype(dtype)[index],
            self.distance, soft.tendon_margin.astype(dtype)[index],
            soft.tendon_invweight0.astype(dtype)[index], velocity_now[:, 2], dt, soft.refsafe)


def nearer_limits(model: Model, length: jax.Array, tendons) -> tuple[jax.Array, jax.Array]:
    """``(sign, bound)`` ``(L,)`` of the nearer length limit of each tendon of ``tendons`` at its
    ``length`` (m): ``+1`` and the lower bound, or ``−1`` and the upper one; the slot's distance
    is ``sign (length − bound)``, its row ``sign J_t``."""
    limits = model.tendons.range.astype(length.dtype)[np.asarray(tendons, dtype=np.int64)]
    lower = length - limits[:, 0] <= limits[:, 1] - length
    return (jnp.where(lower, 1.0, -1.0).astype(length.dtype),
            jnp.where(lower, limits[:, 0], limits[:, 1]))


def _window(model: Model, smooth, v, dt, margin, tendons):
    index = np.asarray(tendons, dtype=np.int64)
    length = smooth.tendon.length[index]
    sign, bound = nearer_limits(model, length, tendons)
    distance = sign * (length - bound)
    rows = sign[:, None] * smooth.tendon.jacobian[index]
    if is_mujoco(model):  # MuJoCo: a row while dist < the tendon's margin
        return distance, rows, distance < require_soft(model).tendon_margin.astype(length.dtype)[index]
    approach = jnp.maximum(-(rows @ v), 0.0)
    # speculative window: the limit can be reached within the step at the current speed
    return distance, rows, distance <= margin + dt * approach


def tendon_limits_in_reach(model: Model, smooth, v, dt, margin) -> jax.Array:
    """Scalar bool: some tendon-limit slot is active."""
    tendons = limited_tendons(model)
    if not tendons:
        return jnp.zeros((), bool)
    return jnp.any(_window(model, smooth, v, dt, margin, tendons)[2])


def tendon_limit_rows(model: Model, smooth, v: jax.Array, dt: jax.Array,
                      margin: jax.Array) -> TendonLimitRows:
    """The tendon-limit slots at the step's state (``smooth``: its
    :class:`~jaxsim_contact.dynamics.SmoothDynamics`, ``v`` ``(nv,)``, ``dt`` s, ``margin`` m);
    block-local keys (the assembler offsets them)."""
    tendons = limited_tendons(model)
    distance, rows, active = _window(model, smooth, v, dt, margin, tendons)
    count = len(tendons)
    dtype = v.dtype
    return TendonLimitRows(
        distance=distance, frame=jnp.broadcast_to(jnp.eye(3, dtype=dtype), (count, 3, 3)),
        friction=jnp.zeros((count,), dtype), key=jnp.arange(count, dtype=jnp.int32),
        active=active, point=jnp.zeros((count, 3), dtype), rows=rows)
