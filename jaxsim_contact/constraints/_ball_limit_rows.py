"""Ball-joint limit rows: one unilateral slot per limited ball joint, a cone on its rotation angle
(MuJoCo ``mj_instantiateLimit``, ``mjJNT_BALL`` branch; Computation chapter "Constraint model",
joint limits; DESIGN §2 stage 4).

With the joint's normalised quaternion ``q`` written as a rotation by angle ``θ ∈ [0, π]`` about
the unit axis ``a`` (MuJoCo ``mju_quat2Vel``, the rotation vector ``θ a``), the slot's distance is
``max(range) − θ`` (rad, ``< 0`` violated: MuJoCo takes the larger range bound; its compiler
requires ``range[0] = 0`` for ball joints) and its normal row is ``−a`` on the joint's three dofs
— exactly ``∂(max(range) − θ)/∂ω``, since ``θ̇ = a · ω`` for the body-frame angular velocity ``ω``
(``a`` is fixed by its own rotation). Where MuJoCo adds this row softly when ``distance <
margin``, here it is a hard unilateral slot like a hinge limit (:mod:`._limit_rows`, whose
compliance, push-out cap and speculative window it shares: active when the limit is within the
margin or reachable within the step at the current ``θ̇``; under ``constraint_model="mujoco"``
MuJoCo's soft row, while ``distance < margin``).

The row's ``B = J L⁻ᵀ`` entries are a weighted gather of three columns of ``L⁻¹`` (no dense
``(m, nv)`` Jacobian). At ``θ = 0`` the axis is undefined; a limit with ``max(range) > 0`` is far
from active there, and the axis falls back to ``e_x`` (MuJoCo ``mju_normalize3``'s fallback) with
finite derivatives (:func:`~jaxsim_contact._math.safe_normalize`).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._math import safe_norm, safe_normalize
from .._model import Model
from .._types import JointType
from ._limit_rows import LimitBlock, joint_limit_soft_rows
from ._soft import is_mujoco, require_soft

__all__ = ["BallLimitRows", "limited_ball_joints", "ball_limit_rows", "ball_limits_in_reach",
           "ball_angles"]


def limited_ball_joints(model: Model) -> tuple[int, ...]:
    """Static indices of the ball joints whose limits are constraints (none when
    ``Options.enable_joint_limits`` is off, as MuJoCo's ``limit`` disable flag)."""
    if not model.options.enable_joint_limits:
        return ()
    tree = model.tree
    return tuple(j for j in range(tree.njnt)
                 if model.joint_limited[j] and tree.joint_type[j] == JointType.BALL)


def ball_angles(quaternion: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(angle (...,), axis (..., 3))`` of ``(..., 4)`` ball-joint quaternions (w first, any
    norm): the rotation angle ``θ ∈ [0, π]`` (rad) and unit axis of the normalised quaternion
    (MuJoCo ``mju_quat2Vel`` followed by ``mju_normalize3``); the axis is ``e_x`` where
    ``θ = 0``. Finite value and derivatives everywhere."""
    # q and −q are one rotation: the representative with w ≥ 0 has its angle in [0, π], where
    # MuJoCo's quat2Vel maps angles above π to the opposite axis
    hemisphere = jnp.where(quaternion[..., :1] < 0, -1.0, 1.0).astype(quaternion.dtype)
    w, xyz = jnp.abs(quaternion[..., 0]), hemisphere * quaternion[..., 1:]
    # atan2 needs no normalisation: both arguments scale with |q|
    angle = 2.0 * jnp.arctan2(safe_norm(xyz), w)
    axis = safe_normalize(xyz, fallback=jnp.asarray([1.0, 0.0, 0.0], quaternion.dtype))
    return angle, axis


def _first_dofs(model: Model, joints: tuple[int, ...]) -> np.ndarray:
    return np.asarray(model.tree.joint_dof_adr, dtype=np.int64)[np.asarray(joints, dtype=np.int64)]


class BallLimitRows(LimitBlock):
    """Ball-limit slots (:class:`~._rows.RowBlock`): ``axis`` ``(m, 3)`` the unit rotation axis of
    each slot's joint (the normal row is ``−axis`` on its dofs) and the static first ``dof`` of
    each joint's three."""

    axis: jax.Array
    dof: tuple[int, ...] = eqx.field(static=True)

    def soft_rows(self, model, velocity_now, dt):
        """MuJoCo's ball-limit row (``mj_instantiateLimit``)."""
        return joint_limit_soft_rows(model, limited_ball_joints(model), self.dof, self.distance,
                                     velocity_now, dt)

    def factor_and_velocity_rows(self, model, smooth, velocity):
        dofs = np.asarray(self.dof, dtype=np.int64)[:, None] + np.arange(3)  # (m, 3)
        row = jnp.where(self.active[:, None], -self.axis, 0.0)  # the Jacobian on the joint's dofs
        both_velocities = jnp.stack([smooth.free_velocity, velocity], axis=1)  # (nv, 2)
        normal_factor = jnp.einsum("mk,mkn->mn", row, smooth.cholesky_inverse.T[dofs])  # J L⁻ᵀ
        normal_velocity = jnp.einsum("mk,mkc->mc", row, both_velocities[dofs])
        return self.with_empty_tangent_rows(normal_factor, normal_velocity)


def _window(model: Model, q, v, dt, margin, joints):
    """``(distance (L,), axis (L, 3), active (L,))`` of the limits of ``joints``."""
    tree = model.tree
    index = np.asarray(joints, dtype=np.int64)
    qpos = np.asarray(tree.joint_qpos_adr, dtype=np.int64)[index][:, None] + np.arange(4)
    angle, axis = ball_angles(q[qpos])
    distance = jnp.max(model.joint_range.astype(q.dtype)[index], axis=-1) - angle
    if is_mujoco(model):  # MuJoCo: a row while dist < the joint's margin
        return distance, axis, distance < require_soft(model).joint_margin.astype(q.dtype)[index]
    dofs = _first_dofs(model, joints)[:, None] + np.arange(3)
    approach = jnp.maximum(jnp.sum(axis * v[dofs], axis=-1), 0.0)  # θ̇ where the angle grows
    # speculative window: the limit can be reached within the step at the current speed
    return distance, axis, distance <= margin + dt * approach


def ball_limits_in_reach(model: Model, q, v, dt, margin) -> jax.Array:
    """Scalar bool: some ball-limit slot is active."""
    joints = limited_ball_joints(model)
    if not joints:
        return jnp.zeros((), bool)
    return jnp.any(_window(model, q, v, dt, margin, joints)[2])


def ball_limit_rows(model: Model, q: jax.Array, v: jax.Array, dt: jax.Array,
                    margin: jax.Array) -> BallLimitRows:
    """The ball-limit slots at ``(q (nq,), v (nv,))`` (``dt`` s, ``margin`` rad);
    block-local keys (the assembler offsets them)."""
    joints = limited_ball_joints(model)
    distance, axis, active = _window(model, q, v, dt, margin, joints)
    count = len(joints)
    dtype = q.dtype
    return BallLimitRows(
        distance=distance, frame=jnp.broadcast_to(jnp.eye(3, dtype=dtype), (count, 3, 3)),
        friction=jnp.zeros((count,), dtype), key=jnp.arange(count, dtype=jnp.int32),
        active=active, point=jnp.zeros((count, 3), dtype), axis=axis,
        dof=tuple(int(d) for d in _first_dofs(model, joints)))
