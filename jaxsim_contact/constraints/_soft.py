"""MuJoCo's soft constraint model: the regulariser ``R`` and reference acceleration ``a_ref`` of
every row from its ``solref`` / ``solimp`` (``Options.constraint_model = "mujoco"``, issue 45).

MuJoCo Computation chapter, "Soft constraints" and "Solver parameters"; the C reference is
``mj_makeImpedance`` / ``getimpedance`` / ``mj_referenceConstraint`` (engine_core_constraint.c).
For a row with position ``r = pos − margin`` (a contact's distance less its margin), velocity
``v = J q̇``, approximate Delassus diagonal ``A_ii`` (``mj_diagApprox``, from the model's
``invweight0``), and clamped ``solimp = (d0, dw, width, mid, p)``:

    x    = |r| / width,      y(x) = x^p / mid^(p−1)  (x ≤ mid),  1 − (1−x)^p / (1−mid)^(p−1)
    d    = d0 + y(x) (dw − d0)              (d = (d0 + dw)/2 when d0 = dw or width ≈ 0)
    R    = max(1e-15, (1 − d)/d · A_ii)
    k, b = 1/(dw² τ² ζ²), 2/(dw τ)        (solref = (τ, ζ) > 0; τ ≥ 2 Δt unless refsafe is off)
         = −s₀/dw², −s₁/dw              (solref = (s₀, s₁) ≤ 0: direct stiffness and damping)
    a_ref = −b v − k d r                 (k = 0 on friction rows)

A step then solves ``min_{f ∈ Ω} ½ fᵀ(A + R) f + fᵀ(a₀ − a_ref)`` — the dual of MuJoCo's primal
problem, with ``A = J M⁻¹ Jᵀ`` and ``a₀ = J M⁻¹ τ`` (plain ``M``: MuJoCo solves the constraint
forces before its integrator adds implicit damping) — which has one solution since ``R > 0``.
In the assembler's velocity form (force units): compliance ``R`` and reference velocity
``c* = J v + Δt a_ref``.

Contacts (``mj_makeImpedance``'s last loop): a frictional contact's first friction row gets
``R₁ = R₀ / impratio``; elliptic cones give every friction row ``R_j μ_j² = R₁ μ₁²`` and use
``solreffriction`` (when nonzero) for their damping; pyramidal cones give all ``2(condim − 1)`` edge
rows ``R = 2 μ̄² R₀`` with ``μ̄ = μ₁ √(R₁/R₀)``, ``A_ii = t (1 + μ²)`` for the edge rows (``t``:
the two bodies' translational ``invweight0``). Each block's own rows are in its module
(``soft_rows``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .._model import ConstraintModel, Model, missing_soft_parameters

__all__ = ["MIN_VALUE", "MIN_IMPEDANCE", "MAX_IMPEDANCE", "is_mujoco", "require_soft",
           "clamp_solimp", "clamp_solref", "impedance", "stiffness_damping", "regulariser",
           "reference_acceleration", "normal_soft_rows"]

#: MuJoCo's ``mjMINVAL``, ``mjMINIMP``, ``mjMAXIMP``
MIN_VALUE = 1e-15
MIN_IMPEDANCE = 1e-4
MAX_IMPEDANCE = 0.9999
#: MuJoCo's default ``solref`` (replaces a mixed-sign one, as ``getsolparam`` does)
DEFAULT_SOLREF = (0.02, 1.0)


def is_mujoco(model: Model) -> bool:
    """Static: the model's rows follow MuJoCo's soft model (``Options.constraint_model``)."""
    return model.options.constraint_model is ConstraintModel.MUJOCO


def require_soft(model: Model):
    """The model's :class:`~jaxsim_contact._model.SoftConstraints`; ``ValueError`` when it has
    none (a model not loaded from MuJoCo cannot use the MuJoCo-compatible mode)."""
    if model.soft is None:
        raise missing_soft_parameters(model.source)
    return model.soft


def clamp_solimp(solimp: jax.Array) -> jax.Array:
    """``(..., 5)`` ``solimp`` clamped as ``getsolparam`` does: ``d0, dw, mid`` into
    ``[1e-4, 0.9999]``, ``width ≥ 0``, ``power ≥ 1``."""
    clip = lambda x: jnp.clip(x, MIN_IMPEDANCE, MAX_IMPEDANCE)  # noqa: E731
    return jnp.stack([clip(solimp[..., 0]), clip(solimp[..., 1]), jnp.maximum(solimp[..., 2], 0.0),
                      clip(solimp[..., 3]), jnp.maximum(solimp[..., 4], 1.0)], axis=-1)


def clamp_solref(solref: jax.Array, dt: jax.Array, refsafe: bool, zero_default: bool = False):
    """``(..., 2)`` ``solref`` as ``getsolparam`` uses it: a mixed-sign pair replaced by the
    default (``(0.02, 1)``, or ``(0, 0)`` for ``solreffriction``: ``zero_default``), and the
    standard form's time constant raised to ``2 dt`` when ``refsafe``."""
    mixed = (solref[..., 0] > 0) ^ (solref[..., 1] > 0)
    default = jnp.zeros(2, solref.dtype) if zero_default else jnp.asarray(DEFAULT_SOLREF, solref.dtype)
    solref = jnp.where(mixed[..., None], default, solref)
    if refsafe:
        timeconst = jnp.where(solref[..., 0] > 0, jnp.maximum(solref[..., 0], 2.0 * dt),
                              solref[..., 0])
        solref = jnp.stack([timeconst, solref[..., 1]], axis=-1)
    return solref


def _power(a, b):
    # MuJoCo's power(): exact for the common powers 1 and 2
    return jnp.where(b == 1.0, a, jnp.where(b == 2.0, a * a, jnp.power(a, b)))


def impedance(solimp: jax.Array, pos: jax.Array, margin: jax.Array) -> jax.Array:
    """Impedance ``d ∈ [1e-4, 0.9999]`` of rows at ``pos`` with ``margin`` (``getimpedance``):
    ``solimp`` ``(..., 5)`` clamped, ``pos``, ``margin`` ``(...)``."""
    d0, dw, width, mid, power = (solimp[..., i] for i in range(5))
    flat = (d0 == dw) | (width <= MIN_VALUE)
    x = jnp.abs(pos - margin) / jnp.where(flat, 1.0, width)
    inside = jnp.clip(x, 0.0, 1.0)
    low = _power(inside, power) / _power(mid, power - 1.0)
    high = 1.0 - _power(1.0 - inside, power) / _power(1.0 - mid, power - 1.0)
    y = jnp.where(power == 1.0, inside, jnp.where(inside <= mid, low, high))
    y = jnp.where(x >= 1.0, 1.0, jnp.where(x <= 0.0, 0.0, y))
    return jnp.where(flat, 0.5 * (d0 + dw), d0 + y * (dw - d0))


def stiffness_damping(solref: jax.Array, dmax: jax.Array):
    """``(k, b)`` of rows with (clamped) ``solref`` ``(..., 2)`` and ``dmax = solimp[1]``
    (``mj_makeImpedance``'s ``KBIP``): standard ``k = 1/(dw² τ² ζ²)``, ``b = 2/(dw τ)``; direct
    ``k = −s₀/dw²``, ``b = −s₁/dw``."""
    timeconst, ratio = solref[..., 0], solref[..., 1]
    stiffness = jnp.where(
        timeconst > 0,
        1.0 / jnp.maximum(MIN_VALUE, dmax * dmax * timeconst * timeconst * ratio * ratio),
        -timeconst / jnp.maximum(MIN_VALUE, dmax * dmax))
    damping = jnp.where(ratio > 0, 2.0 / jnp.maximum(MIN_VALUE, dmax * timeconst),
                        -ratio / jnp.maximum(MIN_VALUE, dmax))
    return stiffness, damping


def regulariser(imp: jax.Array, diag: jax.Array) -> jax.Array:
    """``R = max(1e-15, (1 − d)/d · A_ii)`` (units of ``A_ii``: row acceleration per force)."""
    return jnp.maximum(MIN_VALUE, (1.0 - imp) * diag / imp)


def reference_acceleration(solref, solimp, imp, pos, margin, velocity, stiff: bool = True):
    """``a_ref = −b v − k d (pos − margin)`` of rows (``stiff=False``: ``k = 0``, friction rows)."""
    stiffness, damping = stiffness_damping(solref, solimp[..., 1])
    aref = -damping * velocity
    if stiff:
        aref = aref - stiffness * imp * (pos - margin)
    return aref


def normal_soft_rows(solref, solimp, distance, margin, diag, velocity, dt, refsafe: bool,
                     stiff: bool = True):
    """``(R (m, 3), a_ref (m, 3))`` of slots with one constraint row, their normal row (limits,
    frictionloss): raw ``solref`` ``(m, 2)`` / ``solimp`` ``(m, 5)`` (clamped here), row position
    ``distance`` and ``margin`` ``(m,)``, ``A_ii`` ``diag`` ``(m,)``, row velocity ``velocity``
    ``(m,)``; the empty tangent rows get the same ``R`` and zero ``a_ref``."""
    solref = clamp_solref(solref, dt, refsafe)
    solimp = clamp_solimp(solimp)
    imp = impedance(solimp, distance, margin)
    R = regulariser(imp, diag)
    aref = reference_acceleration(solref, solimp, imp, distance, margin, velocity, stiff=stiff)
    zeros = jnp.zeros_like(aref)
    return jnp.stack([R, R, R], -1), jnp.stack([zeros, zeros, aref], -1)
