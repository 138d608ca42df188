"""Configuration integration on the manifold (MuJoCo's ``mj_integratePos``).

``q ⊕ v·dt`` per joint:

* hinge / slide: ``q + v dt``;
* ball: ``quat ⊗ exp(ω dt)`` with ``ω`` the body-frame angular velocity (right multiplication);
* free: position ``+ v_lin dt`` (world-frame linear velocity), quaternion as for ball.

The rotation increment ``exp(ω dt) = (cos(θ/2), sin(θ/2) ω/|ω|)`` with ``θ = |ω| dt`` is written as
``(cos(θ/2), dt/2 · sinc(θ/2) · ω)`` so that value and derivatives are finite at ``ω = 0``.
Quaternions are re-normalised after each step, as MuJoCo does.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .._math import quat_mul, quat_normalize, safe_norm
from .._model import Model
from .._types import JointType

__all__ = ["quat_exp_increment", "integrate_positions"]


def quat_exp_increment(omega: jax.Array, dt: jax.Array) -> jax.Array:
    """Unit quaternion ``(..., 4)`` of the rotation by ``omega · dt`` (``omega (..., 3)``)."""
    half_angle = 0.5 * dt * safe_norm(omega)
    # sin(x)/x through jnp.sinc (sin(πy)/(πy)), which has exact derivatives at 0.
    scale = 0.5 * dt * jnp.sinc(half_angle / jnp.pi)
    return jnp.concatenate([jnp.cos(half_angle)[..., None], scale[..., None] * omega], axis=-1)


def _indices(model: Model, joint_type: JointType) -> tuple[np.ndarray, np.ndarray]:
    tree = model.tree
    joints = [j for j, t in enumerate(tree.joint_type) if t == joint_type]
    qpos = np.asarray([tree.joint_qpos_adr[j] for j in joints], dtype=np.int64)
    dofs = np.asarray([tree.joint_dof_adr[j] for j in joints], dtype=np.int64)
    return qpos, dofs


def integrate_positions(model: Model, q: jax.Array, v: jax.Array, dt: jax.Array) -> jax.Array:
    """``q ⊕ v dt`` on the configuration manifold: ``(nq,)``.

    Args:
      q: ``(nq,)`` positions (MuJoCo qpos layout).
      v: ``(nv,)`` velocities (MuJoCo qvel layout).
      dt: scalar step (s).
    """
    dt = jnp.asarray(dt, q.dtype)
    out = q
    for scalar_type in (JointType.HINGE, JointType.SLIDE):
        qpos, dofs = _indices(model, scalar_type)
        if qpos.size:
            out = out.at[qpos].add(dt * v[dofs])
    qpos, dofs = _indices(model, JointType.BALL)
    if qpos.size:
        quat_idx = qpos[:, None] + np.arange(4)
        omega = v[dofs[:, None] + np.arange(3)]
        out = out.at[quat_idx].set(_rotate(q[quat_idx], omega, dt))
    qpos, dofs = _indices(model, JointType.FREE)
    if qpos.size:
        pos_idx = qpos[:, None] + np.arange(3)
        quat_idx = qpos[:, None] + 3 + np.arange(4)
        out = out.at[pos_idx].add(dt * v[dofs[:, None] + np.arange(3)])
        omega = v[dofs[:, None] + 3 + np.arange(3)]
        out = out.at[quat_idx].set(_rotate(q[quat_idx], omega, dt))
    return out


def _rotate(quat: jax.Array, omega: jax.Array, dt: jax.Array) -> jax.Array:
    """Body-frame rotation increment: ``normalize(normalize(quat) ⊗ exp(ω dt))``."""
    return quat_normalize(quat_mul(quat_normalize(quat), quat_exp_increment(omega, dt)))
