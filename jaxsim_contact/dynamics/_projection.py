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

from ..constraints._equality_rows import equality_errors, slot_equality
from .._model import ConstraintModel, EqualityKind, Model
from ._integration import integrate_positions
from ._kinematics import forward_kinematics, motion_axes
from ._tendons import tendon_kinematics

__all__ = ["project_equalities"]


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
    kin = forward_kinematics(model, q)
    axes = motion_axes(model, kin)
    # only tendon couplings read tendon lengths: no tendon path at q⁺ otherwise
    tendon = (tendon_kinematics(model, q, kin, axes)
              if EqualityKind.TENDON in model.equalities.kind else None)
    error, jacobian = equality_errors(model, q, kin, axes, tendon)
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
