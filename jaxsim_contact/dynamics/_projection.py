"""Position projection after a step (post-stabilisation, Cline & Pai 2003; the hard-constraint
counterpart of MuJoCo's soft equality and limit rows): equality constraints, and the drift of
tendon limits.

The constraint stage makes the velocity satisfy ``J v⁺ = −β_eq e / Δt`` at the start of the
step, so the position error left after ``q⁺ = q ⊕ v⁺ Δt`` is the step's second-order drift
(the constraint's curvature: ``~Δt² v² / r`` per step, 6e-6 m for a four-bar crank at 4 rad/s).
One Gauss–Newton step removes it to second order: with ``e``, ``J`` at ``q⁺`` and the step's
``L⁻¹`` (``L Lᵀ = M + Δt D``, the metric of the velocity step),

    δv = −L⁻ᵀ Bᵀ (B Bᵀ + δ I)⁻¹ e,      B = J L⁻ᵀ,      q⁺ ← q⁺ ⊕ δv

the smallest correction in the mass metric. ``δ = ε^{2/3} tr(B Bᵀ)`` regularises redundant rows
(a planar loop's out-of-plane row is zero); with no active row ``δ = 1`` (and ``δv = 0``).
The equality correction leaves velocities as they are; it is a smooth function of ``q⁺`` (and,
for limits, of which rows are past their target), so derivatives go through it.

Limits are one-sided and their solve may push a violated limit out at a capped speed
(``Options.limit_correction_speed``), so a limit row is not projected onto its bound but onto
the distance its solve aimed at, ``d + Δt c*`` (``c*`` the row's reference velocity: ``0`` for a
row that starts feasible, the capped push-out's end for a violated one); a row whose distance at
``q⁺`` is below that target enters with the difference as its error. Hinge and slide limits are
linear in ``q`` (no drift) and are not projected; nor are ball-joint limits (their angle drifts
by ``~Δt² ω²`` per step when the joint spins about an axis off the limit's: tried with the rule
below, it removed the drift to 1e-6 rad but the spinning body gained energy).
A limit row moves ``q⁺`` along its
gradient at the step's start, ``M⁻¹ j(q)ᵀ`` (SHAKE, Ryckaert et al. 1977), and the velocity
gains the same displacement over the step, ``v⁺ += δq / Δt`` — the centripetal impulse a
velocity-level row misses, whose outward part at ``q⁺`` the next step's row removes (and reports
as the limit's force): a mass whirled on a taut string keeps its length to round-off and its
speed (projecting along ``j(q⁺)`` without the velocity term costs ``Δt² v²/r²`` of the kinetic
energy per step, 6 % over 1000 steps at 2 m/s on 0.5 m). Equality rows keep ``J(q⁺)`` and leave
the velocity as it is. With both kinds the one system ``J(q⁺) M⁻¹ Dᵀ μ = −e`` (``D`` the rows'
directions) is solved.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..constraints._equality_rows import equality_errors, slot_equality
from ..constraints._assembler import gap_or_push_out
from ..constraints._tendon_limit_rows import limited_tendons, nearer_limits
from .._model import ConstraintModel, EqualityKind, Model
from ._integration import integrate_positions
from ._kinematics import forward_kinematics, motion_axes
from ._tendons import tendon_kinematics

__all__ = ["project_positions", "equalities_at", "equality_velocity_bias", "limit_drift_rows"]


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


def _projected_equalities(model: Model) -> bool:
    return model.neq > 0 and model.options.project_equalities


def _projected_limits(model: Model) -> tuple[int, ...]:
    """Static indices of the tendons whose limits are projected (none when
    ``Options.project_limits`` is off)."""
    return limited_tendons(model) if model.options.project_limits else ()


def _past_target(model: Model, distance_next, row_next, row_now, distance_now, dt):
    """A limit row's error and rows for the projection (module docstring): ``distance_next −
    (distance_now + dt c*)`` where negative, with ``row_next`` and ``row_now``; zeros elsewhere.
    ``c*`` is the row's reference velocity in the solve (the assembler's
    :func:`~jaxsim_contact.constraints._assembler.gap_or_push_out`), so the target is ``0`` for a
    row that starts feasible and the capped push-out's end for a violated one, and its derivative
    at ``distance_now = 0`` matches the solve's."""
    options = model.options
    dtype = distance_now.dtype
    reference = gap_or_push_out(distance_now, options.baumgarte.astype(dtype),
                                options.limit_correction_speed.astype(dtype), dt)
    error = distance_next - (distance_now + dt * reference)
    past = error < 0
    return (jnp.where(past, error, 0.0), jnp.where(past[:, None], row_next, 0.0),
            jnp.where(past[:, None], row_now, 0.0))


def limit_drift_rows(model: Model, q: jax.Array, q_next: jax.Array, dt: jax.Array, tendon_now,
                     tendon_next):
    """``(error (k,), jacobian_next (k, nv), jacobian_now (k, nv))`` of the projected tendon
    limits (module docstring), each on the side nearer at ``q`` (``(nq,)``, the step's start),
    with its row at ``q_next`` (``(nq,)``, the positions integrated over ``dt`` s) and at ``q``,
    zero where a row is not past its target; ``tendon_now`` / ``tendon_next`` the tendon
    kinematics at ``q`` / ``q_next``. Distances in m (rad for fixed tendons of hinges)."""
    tendons = _projected_limits(model)
    index = np.asarray(tendons, dtype=np.int64)
    length_now = tendon_now.length[index]
    sign, bound = nearer_limits(model, length_now, tendons)
    return _past_target(model, sign * (tendon_next.length[index] - bound),
                        sign[:, None] * tendon_next.jacobian[index],
                        sign[:, None] * tendon_now.jacobian[index], sign * (length_now - bound), dt)


def project_positions(model: Model, q: jax.Array, q_next: jax.Array, v_next: jax.Array,
                      dt: jax.Array, cholesky_inverse: jax.Array, tendon_now):
    """``(q_next, v_next, unsatisfied)``: ``q_next`` ``(nq,)`` moved by one mass-weighted
    Gauss–Newton step onto the active equality constraints and the limits' targets (module
    docstring; ``q`` ``(nq,)`` the step's start, ``dt`` (s) the step, ``cholesky_inverse``
    ``(nv, nv)`` the step's ``L⁻¹``, ``tendon_now`` the tendon kinematics at ``q``); ``v_next``
    ``(nv,)`` plus the limit rows' displacement over ``dt`` (unchanged without projected
    limits); and a bool, true when the linearised residual of the equality rows after the step
    ``e − B⁺ Dᵀ (B⁺ Dᵀ + δ I)⁻¹ e`` exceeds ``Options.equality_tolerance`` somewhere — the
    constraints are incompatible and ``q`` is their least-squares compromise. A model without
    equality constraints or projected limits gets ``q_next``, ``v_next`` back and ``False``."""
    tendons = _projected_limits(model)
    equalities = _projected_equalities(model)
    if (not (equalities or tendons)
            or model.options.constraint_model is ConstraintModel.MUJOCO):  # MuJoCo: soft rows only
        return q_next, v_next, jnp.zeros((), bool)
    kin = forward_kinematics(model, q_next)
    axes = motion_axes(model, kin)
    needs_tendons = bool(tendons) or (equalities and EqualityKind.TENDON in model.equalities.kind)
    tendon_next = tendon_kinematics(model, q_next, kin, axes) if needs_tendons else None
    errors, rows_next, rows_direction = [], [], []
    if equalities:
        error, jacobian = equality_errors(model, q_next, kin, axes, tendon_next)
        active = model.equalities.is_active()[slot_equality(model)]
        errors.append(jnp.where(active[:, None], error, 0.0).reshape(-1))
        rows_next.append(jnp.where(active[:, None, None], jacobian, 0.0).reshape(-1, model.nv))
        rows_direction.append(rows_next[-1])
    num_equality_rows = errors[0].shape[0] if equalities else 0
    if tendons:
        error, jacobian_next, jacobian_now = limit_drift_rows(
            model, q, q_next, dt, tendon_now, tendon_next)
        errors.append(error)
        rows_next.append(jacobian_next)
        rows_direction.append(jacobian_now)
    error, jacobian_next = jnp.concatenate(errors), jnp.concatenate(rows_next)
    factor_next = jacobian_next @ cholesky_inverse.T  # B⁺ = J(q⁺) L⁻ᵀ
    factor_direction = jnp.concatenate(rows_direction) @ cholesky_inverse.T  # D L⁻ᵀ
    system = factor_next @ factor_direction.T
    multiplier = _regularised_solve(system, error)
    correction = -cholesky_inverse.T @ (factor_direction.T @ multiplier)
    residual = (error - system @ multiplier)[:num_equality_rows]
    unsatisfied = jnp.max(jnp.abs(residual), initial=0.0) > model.options.equality_tolerance.astype(q.dtype)
    q_next = integrate_positions(model, q_next, correction, jnp.ones((), q.dtype))
    if tendons:  # the limits' displacement as a velocity (SHAKE)
        v_next = v_next - cholesky_inverse.T @ (
            factor_direction[num_equality_rows:].T @ multiplier[num_equality_rows:]) / dt
    return q_next, v_next, unsatisfied


def _regularised_solve(system: jax.Array, right: jax.Array) -> jax.Array:
    """``(system + δ I)⁻¹ right`` with ``δ = ε^{2/3} Σ |diag(system)|`` (``1`` for a zero system:
    no active row, ``right = 0``), so redundant rows get a bounded answer."""
    scale = jnp.sum(jnp.abs(jnp.diagonal(system)))
    regulariser = jnp.where(scale > 0, jnp.finfo(system.dtype).eps ** (2.0 / 3.0) * scale, 1.0)
    return jnp.linalg.solve(system + regulariser * jnp.eye(system.shape[0], dtype=system.dtype), right)
