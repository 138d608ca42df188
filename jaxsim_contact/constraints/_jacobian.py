"""Contact Jacobians (DESIGN §2 stage 4; seed 001 §II eq. 4–7, seed 004 §II-C).

A contact between bodies ``a`` and ``b`` at world point ``p`` with frame rows ``F = (t1, t2, n)``
(``n`` from a to b) has relative velocity ``c = F (v_b(p) − v_a(p))``, so its Jacobian rows are
``J = F (J_b(p) − J_a(p))``, ``(3, nv)``. ``J_i(p)`` maps ``v`` to the velocity of the point of body
``i`` at ``p``: each dof ``d`` that moves body ``i`` (the body or an ancestor) contributes its world
motion axis ``[ω_d; v_O,d]`` evaluated at ``p``, i.e. ``v_O,d + ω_d × p``. A positive normal
velocity separates the bodies; ``Jᵀ λ`` with ``λ_N ≥ 0`` pushes b along ``+n`` and a along ``−n``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .._math import cross, quat_mul, quat_rotate
from .._model import Model

__all__ = ["contact_jacobians", "point_jacobian", "rotation_jacobian", "site_frames"]


def contact_jacobians(model: Model, axes, body_a, body_b, point, frame) -> jax.Array:
    """``(nc, 3, nv)`` contact Jacobians in the contact frames (rows t1, t2, n).

    Args:
      axes: ``(nv, 6)`` world motion axes ``[ω; v_O]`` (:func:`~jaxsim_contact.dynamics.motion_axes`).
      body_a, body_b: ``(nc,)`` int body indices (0, the world, moves with no dof).
      point: ``(nc, 3)`` world contact points (m); frame: ``(nc, 3, 3)`` rows ``(t1, t2, n)``.
    """
    # Row r of F applied to a dof's point velocity: F_r · (v_O + ω × p) = (p × F_r) · ω + F_r · v_O,
    # so all rows of all contacts are ONE (3 nc, 6) @ (6, nv) product with the shared motion axes,
    # masked by which body each dof moves (b's minus a's): cheaper on XLA:CPU than per-contact
    # (nv, 3) velocity fields and 3 × 3 products.
    moves = jnp.asarray(model.tree.dof_moves_body, dtype=axes.dtype)  # (nbody, nv)
    relative = moves[body_b] - moves[body_a]  # (nc, nv)
    lever = cross(point[:, None, :], frame)  # (nc, 3, 3): p × F_r
    coefficients = jnp.concatenate([lever, frame], axis=-1)  # (nc, 3, 6), like axes' [ω; v_O]
    return jnp.einsum("crk,dk->crd", coefficients, axes) * relative[:, None, :]


def point_jacobian(model: Model, axes, body: np.ndarray, point) -> jax.Array:
    """``(k, 3, nv)``: ``J_body(point)``, the world velocity of points ``(k, 3)`` fixed to
    ``body`` (static ``(k,)``; MuJoCo ``mj_jac``'s translational part)."""
    moves = jnp.asarray(model.tree.dof_moves_body, dtype=axes.dtype)[body]  # (k, nv)
    # v_d(p) = v_O,d + ω_d × p
    omega, linear = axes[:, :3], axes[:, 3:]
    point_velocity = linear[None] + cross(omega[None], point[:, None, :])  # (k, nv, 3)
    return jnp.swapaxes(point_velocity, 1, 2) * moves[:, None, :]


def rotation_jacobian(model: Model, axes, body: np.ndarray) -> jax.Array:
    """``(k, 3, nv)`` world angular-velocity Jacobian of ``body`` (static ``(k,)``)."""
    moves = jnp.asarray(model.tree.dof_moves_body, dtype=axes.dtype)[body]
    return axes[:, :3].T[None] * moves[:, None, :]


def site_frames(model: Model, kin, sites: np.ndarray):
    """World position ``(k, 3)`` (MuJoCo ``site_xpos``), orientation ``(k, 4)`` (body quaternion
    ⊗ site quaternion, not renormalised) and body ``(k,)`` of the static ``sites``; ``kin``: the
    forward kinematics (``body_pos``, ``body_quat``)."""
    dtype = kin.body_pos.dtype
    body = np.asarray(model.site_body, dtype=np.int64)[sites]
    body_quat = kin.body_quat[body]
    pos = kin.body_pos[body] + quat_rotate(body_quat, model.site_pos.astype(dtype)[sites])
    return pos, quat_mul(body_quat, model.site_quat.astype(dtype)[sites]), body
