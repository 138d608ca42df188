"""Contact and joint-limit Jacobians (DESIGN §2 stage 4; seed 001 §II eq. 4–7, seed 004 §II-C).

A contact between bodies ``a`` and ``b`` at world point ``p`` with frame rows ``F = (t1, t2, n)``
(``n`` from a to b) has relative velocity ``c = F (v_b(p) − v_a(p))``, so its Jacobian rows are
``J = F (J_b(p) − J_a(p))``, ``(3, nv)``. ``J_i(p)`` maps ``v`` to the velocity of the point of body
``i`` at ``p``: each dof ``d`` that moves body ``i`` (the body or an ancestor) contributes its world
motion axis ``[ω_d; v_O,d]`` evaluated at ``p``, i.e. ``v_O,d + ω_d × p``. A positive normal
velocity separates the bodies; ``Jᵀ λ`` with ``λ_N ≥ 0`` pushes b along ``+n`` and a along ``−n``.

A limited hinge/slide joint is one unilateral constraint on its nearer limit: normal row
``+e_dof`` (lower limit) or ``−e_dof`` (upper limit), zero tangent rows, friction 0.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..math import cross
from ..model import Model
from ..types import JointType

__all__ = ["contact_jacobians", "limited_joints", "limit_rows"]


def contact_jacobians(model: Model, axes, body_a, body_b, point, frame) -> jax.Array:
    """``(nc, 3, nv)`` contact Jacobians in the contact frames (rows t1, t2, n).

    Args:
      axes: ``(nv, 6)`` world motion axes ``[ω; v_O]`` (:func:`~jaxsim_contact.dynamics.motion_axes`).
      body_a, body_b: ``(nc,)`` int body indices (0, the world, moves with no dof).
      point: ``(nc, 3)`` world contact points (m); frame: ``(nc, 3, 3)`` rows ``(t1, t2, n)``.
    """
    # Row r of F applied to a dof's point velocity: F_r · (v_O + ω × p) = (p × F_r) · ω + F_r · v_O,
    # so all rows of all contacts are ONE (3 nc, 6) @ (6, nv) product with the shared motion axes,
    # masked by which body each dof moves (b's minus a's). Per-contact (nv, 3) velocity fields and
    # 3 × 3 products took 1.4-1.9x as long on XLA:CPU (40 contacts, nv 27, batch 256 / 32).
    moves = jnp.asarray(model.tree.dof_moves_body, dtype=axes.dtype)  # (nbody, nv)
    relative = moves[body_b] - moves[body_a]  # (nc, nv)
    lever = cross(point[:, None, :], frame)  # (nc, 3, 3): p × F_r
    coefficients = jnp.concatenate([lever, frame], axis=-1)  # (nc, 3, 6), like axes' [ω; v_O]
    return jnp.einsum("crk,dk->crd", coefficients, axes) * relative[:, None, :]


def limited_joints(model: Model) -> tuple[int, ...]:
    """Static indices of the hinge/slide joints with limits (ball limits are not supported)."""
    tree = model.tree
    return tuple(
        j for j in range(tree.njnt)
        if model.joint_limited[j] and tree.joint_type[j] in (JointType.HINGE, JointType.SLIDE)
    )


def limit_rows(model: Model, q: jax.Array, joints: tuple[int, ...]):
    """Distances, signs and dofs of the nearer limit of each limited joint.

    The Jacobian of limit ``i`` is ``sign_i e_{dof_i}ᵀ`` on its normal row and zero on its tangent
    rows; callers use the dof indices directly (a gather of ``v`` or of a column of ``L⁻¹``)
    instead of products with that one-hot matrix.

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
