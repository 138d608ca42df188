"""Position projection onto the equality constraints after a step (post-stabilisation, Cline &
Pai 2003; the hard-constraint counterpart of MuJoCo's soft equality rows).

The constraint stage makes the velocity satisfy ``J v⁺ = −β_eq e / Δt`` at the start of the
step, so the position error left after ``q⁺ = q ⊕ v⁺ Δt`` is the step's second-order drift
(the constraint's curvature: ``~Δt² v² / r`` per step, 6e-6 m for a four-bar crank at 4 rad/s).
One Gauss–Newton step removes it to second order: with ``e``, ``J`` at ``q⁺`` and the step's
``L⁻¹`` (``L Lᵀ = M + Δt D``, the metric of the velocity step),

    δv = −L⁻ᵀ Bᵀ (B Bᵀ + δ I)⁻¹ e,      B = J L⁻ᵀ,      q⁺ ← q⁺ ⊕ δv

the smallest correction in the mass metric. ``δ = ε^{2/3} tr(B Bᵀ)`` regularises redundant rows
(a planar loop's out-of-plane row is zero); with no active row ``δ = 1`` (and ``δv = 0``). Velocities are not changed; the correction is a
smooth function of ``q⁺``, so derivatives go through it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..constraints._equality_rows import equality_errors, slot_equality
from .._model import ConstraintModel, EqualityKind, Model
from ._integration import integrate_positions
from ._kinematics import forward_kinematics, motion_axes
from ._tendons import tendon_kinematics

__all__ = ["project_equalities", "equalities_at", "equality_velocity_bias"]


def equalities_at(model: Model, q: jax.Array):
    """``(error (m, 3), jacobian (m, 3, nv))`` of the equality slots at ``q``, with the kinematics
    of ``q`` computed here (:func:`~jaxsim_contact.constraints._equality_rows.equality_errors`)."""
    kin = forward_kinematics(model, q)
    axes = motion_axes(model, kin)
    # only tendon couplings read tendon lengths: no tendon path otherwise
    tendon = (tendon_kinematics(model, q, kin, axes)
              if EqualityKind.TENDON in model.equalities.kind else None)
    return equality_errors(model, q, kin, axes, tendon)


def equality_velocity_bias(model: Model, q: jax.Array, v: jax.Array) -> jax.Array | None:
    """``J̇ v`` ``(m, 3)`` of the connect and weld equality slots at ``(q, v)`` (zero rows for the
    other kinds), the derivative of ``J(q(t)) v`` along ``q(t) = q ⊕ v t`` — MuJoCo's
    ``mj_Jdotv``, which its soft model subtracts from those rows' reference acceleration;
    ``None`` unless the MuJoCo-compatible model has such constraints."""
    kinds = model.equalities.kind
    moving = (EqualityKind.CONNECT, EqualityKind.WELD)
    if (model.options.constraint_model is not ConstraintModel.MUJOCO
            or not any(k in moving for k in kinds)):
        return None
    zero = jnp.zeros((), q.dtype)
    _, q_rate = jax.jvp(lambda t: integrate_positions(model, q, v, t), (zero,), (jnp.ones_like(zero),))
    _, bias = jax.jvp(lambda position: equalities_at(model, position)[1] @ v, (q,), (q_rate,))
    mask = np.asarray([kinds[e] in moving for e in slot_equality(model)])
    return jnp.where(jnp.asarray(mask)[:, None], bias, 0.0)


def project_equalities(model: Model, q: jax.Array, cholesky_inverse: jax.Array):
    """``(q, unsatisfied)``: ``q`` ``(nq,)`` moved by one mass-weighted Gauss–Newton step onto the
    active equality constraints (module docstring; ``cholesky_inverse`` ``(nv, nv)``: the step's
    ``L⁻¹``), and a bool, true when the linearised residual after the step
    ``e − B Bᵀ (B Bᵀ + δ I)⁻¹ e`` exceeds ``Options.equality_tolerance`` somewhere — the
    constraints are incompatible and ``q`` is their least-squares compromise. A model without
    equality constraints gets ``q`` back and ``False``."""
    if (model.neq == 0 or not model.options.project_equalities
            or model.options.constraint_model is ConstraintModel.MUJOCO):  # MuJoCo: soft rows only
        return q, jnp.zeros((), bool)
    error, jacobian = equalities_at(model, q)
    active = model.equalities.is_active()[slot_equality(model)]
    error = jnp.where(active[:, None], error, 0.0).reshape(-1)
    jacobian = jnp.where(active[:, None, None], jacobian, 0.0).reshape(error.shape[0], model.nv)
    factor = jacobian @ cholesky_inverse.T  # B = J L⁻ᵀ
    gram = factor @ factor.T
    trace = jnp.trace(gram)
    # no active row (every equality switched off): gram = 0 and error = 0, any δ > 0 gives 0
    regulariser = jnp.where(trace > 0, jnp.finfo(q.dtype).eps ** (2.0 / 3.0) * trace, 1.0)
    multiplier = jnp.linalg.solve(gram + regulariser * jnp.eye(gram.shape[0], dtype=q.dtype), error)
    correction = -cholesky_inverse.T @ (factor.T @ multiplier)
    residual = error - gram @ multiplier
    unsatisfied = jnp.max(jnp.abs(residual)) > model.options.equality_tolerance.astype(q.dtype)
    return integrate_positions(model, q, correction, jnp.ones((), q.dtype)), unsatisfied
