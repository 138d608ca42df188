"""Joint-limit rows: one unilateral slot per limited hinge/slide joint, on its nearer limit
(DESIGN §2 stage 4; seed 001 §II treats a limit like any unilateral constraint).

The normal row is ``+e_dof`` (lower limit) or ``−e_dof`` (upper limit), the tangent rows are empty
and the slot is frictionless. The rows of ``B = J L⁻ᵀ`` and ``J [v_f, v]`` are gathers of a column
of ``L⁻¹`` and of a velocity entry, not products with a one-hot matrix. A slot is active inside a
speculative window: the limit is within the margin or reachable within the step at the joint's
current approach speed.
"""

from __future__ import annotations

from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._model import Model, Options
from .._types import JointType
from ._rows import NormalRowBlock, RowKind
from ._soft import is_mujoco, normal_soft_rows, require_soft

__all__ = ["LimitBlock", "LimitRows", "limit_rows", "limits_in_reach", "limited_joints", "limit_distances"]


def limited_joints(model: Model) -> tuple[int, ...]:
    """Static indices of the hinge/slide joints whose limits are constraints (none when
    ``Options.enable_joint_limits`` is off; ball-joint limits are
    :mod:`._ball_limit_rows`' slots)."""
    if not model.options.enable_joint_limits:
        return ()
    tree = model.tree
    return tuple(
        j for j in range(tree.njnt)
        if model.joint_limited[j] and tree.joint_type[j] in (JointType.HINGE, JointType.SLIDE)
    )


def limit_distances(model: Model, q: jax.Array, joints: tuple[int, ...]):
    """Distances, signs and dofs of the nearer limit of each joint of ``joints``.

    Returns:
      ``distance (L,)`` (rad or m, < 0 when violated), ``sign (L,)`` (+1 lower limit, −1 upper
      limit) and ``dof (L,)`` (static numpy int array: the joints' dof indices).
    """
    tree = model.tree
    dtype = q.dtype
    idx = np.asarray(joints, dtype=np.int64)
    qpos = np.asarray(tree.joint_qpos_adr, dtype=np.int64)[idx]
    dof = np.asarray(tree.joint_dof_adr, dtype=np.int64)[idx]
    value = q[qpos]
    limits = model.joint_range.astype(dtype)[idx]
    to_lower, to_upper = value - limits[:, 0], limits[:, 1] - value
    lower = to_lower <= to_upper
    distance = jnp.where(lower, to_lower, to_upper)
    sign = jnp.where(lower, 1.0, -1.0).astype(dtype)
    return distance, sign, dof


class LimitBlock(NormalRowBlock):
    """What joint and tendon limits share: one unilateral normal row per slot, no restitution,
    ``Options.limit_compliance`` and ``limit_correction_speed``."""

    kind: ClassVar[RowKind] = RowKind.UNILATERAL
    restitution: ClassVar[bool] = False

    def normal_compliance(self, options: Options, dtype) -> jax.Array:
        return options.limit_compliance.astype(dtype)

    def correction_speed(self, options: Options, dtype) -> jax.Array:
        return options.limit_correction_speed.astype(dtype)


class LimitRows(LimitBlock):
    """Joint-limit slots (:class:`~._rows.RowBlock`): ``sign`` ``(m,)`` (+1 lower, −1 upper limit)
    and the static ``dof`` index of each slot."""

    sign: jax.Array
    dof: tuple[int, ...] = eqx.field(static=True)

    def slot_trees(self, model, tree_of_body):
        trees = np.asarray([tree_of_body[model.tree.dof_body[d]] for d in self.dof], np.int32)
        return jnp.asarray(np.stack([trees, trees], axis=-1).reshape(-1, 2))

    def soft_rows(self, model, velocity_now, dt):
        return joint_limit_soft_rows(model, limited_joints(model), self.dof, self.distance,
                                     velocity_now, dt)

    def factor_and_velocity_rows(self, model, smooth, velocity):
        dof = np.asarray(self.dof, dtype=np.int64)
        both_velocities = jnp.stack([smooth.free_velocity, velocity], axis=1)
        row_sign = jnp.where(self.active, self.sign, 0.0)
        normal_rows = row_sign[:, None] * smooth.cholesky_inverse.T[dof]
        normal_velocity = row_sign[:, None] * both_velocities[dof]
        return self.with_empty_tangent_rows(normal_rows, normal_velocity)


def joint_limit_soft_rows(model: Model, joints, dofs, distance, velocity_now, dt):
    """MuJoCo's rows of the limits of ``joints`` (hinge, slide or ball; ``dofs`` each joint's
    first dof): the joint's ``solref`` / ``solimp`` / ``margin``, ``A_ii`` its first dof's
    ``invweight0`` (``mj_diagApprox``, ``mjCNSTR_LIMIT_JOINT``)."""
    soft = require_soft(model)
    dtype = distance.dtype
    joints = np.asarray(joints, dtype=np.int64)
    return normal_soft_rows(
        soft.joint_solref.astype(dtype)[joints], soft.joint_solimp.astype(dtype)[joints],
        distance, soft.joint_margin.astype(dtype)[joints],
        soft.dof_invweight0.astype(dtype)[np.asarray(dofs, np.int64)], velocity_now[:, 2], dt,
        soft.refsafe)


def _window(model: Model, q, v, dt, margin, joints):
    distance, sign, dof = limit_distances(model, q, joints)
    if is_mujoco(model):  # MuJoCo: a row while dist < the joint's margin
        soft_margin = require_soft(model).joint_margin.astype(q.dtype)[np.asarray(joints, np.int64)]
        return distance, sign, dof, distance < soft_margin
    approach = jnp.maximum(-sign * v[dof], 0.0)
    # speculative window: the limit can be reached within the step at the current speed
    return distance, sign, dof, distance <= margin + dt * approach


def limits_in_reach(model: Model, q, v, dt, margin) -> jax.Array:
    """Scalar bool: some limit slot is active."""
    joints = limited_joints(model)
    if not joints:
        return jnp.zeros((), bool)
    return jnp.any(_window(model, q, v, dt, margin, joints)[3])


def limit_rows(model: Model, q: jax.Array, v: jax.Array, dt: jax.Array, margin: jax.Array) -> LimitRows:
    """The limit slots at ``(q, v)`` (``dt`` s, ``margin`` m or rad);
    block-local keys (the assembler offsets them)."""
    joints = limited_joints(model)
    distance, sign, dof, active = _window(model, q, v, dt, margin, joints)
    count = len(joints)
    dtype = q.dtype
    return LimitRows(
        distance=distance, frame=jnp.broadcast_to(jnp.eye(3, dtype=dtype), (count, 3, 3)),
        friction=jnp.zeros((count,), dtype), key=jnp.arange(count, dtype=jnp.int32),
        active=active, point=jnp.zeros((count, 3), dtype), sign=sign, dof=tuple(int(d) for d in dof))
