"""Projected Gauss-Seidel for the LCP, CCP and NCP contact models (seed 001 Alg. 1, 2 and 6).

One iteration is a sweep over the contacts (``lax.fori_loop``, sequential: that is what makes it
Gauss-Seidel); each contact update uses only its own diagonal block of ``G + R`` and the current
forces of all the others.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from .._math import safe_norm
from ._problem import FORMULATIONS, ContactProblem, Formulation, criterion, project_cone
from ._solver import ContactSolver

__all__ = ["PGS", "PGSState", "gauss_seidel_sweep"]


def _safe_inverse(d: jax.Array) -> jax.Array:
    return jnp.where(d > 0, 1.0 / jnp.where(d > 0, d, 1.0), 0.0)


def gauss_seidel_sweep(problem: ContactProblem, force: jax.Array, contact_update) -> jax.Array:
    """One Gauss-Seidel sweep ``i = 1..n`` (seed 001 Alg. 1/2/5/6, lines 2–7).

    Args:
      problem: sanitised problem (uses ``G + R`` and ``g``).
      force: ``(n, 3)`` current forces.
      contact_update: ``(block (3,3), sigma (3,), lam_i (3,), mu) -> lam_i_new (3,)`` where
        ``sigma = ((G + R) λ + g)⁽ⁱ⁾`` at the current forces; the cone slots' update (box and
        bilateral slots of the problem take :func:`_with_box_and_bilateral_slots`' rows).
    Returns: ``(n, 3)`` forces after the sweep.
    """
    n = problem.num_contacts
    G = problem.compliant_delassus
    g = problem.free_velocity
    mu = problem.friction
    if problem.has_box_or_bilateral:
        update = _with_box_and_bilateral_slots(problem, contact_update)
    else:
        update = lambda block, sigma, lam_i, mu, i: contact_update(block, sigma, lam_i, mu)  # noqa: E731

    def body(i, lam):
        rows = jax.lax.dynamic_slice(G, (3 * i, 0), (3, 3 * n))
        block = jax.lax.dynamic_slice(G, (3 * i, 3 * i), (3, 3))
        lam_i = jax.lax.dynamic_slice(lam, (3 * i,), (3,))
        sigma = rows @ lam + jax.lax.dynamic_slice(g, (3 * i,), (3,))
        new_i = update(block, sigma, lam_i, mu[i], i)
        return jax.lax.dynamic_update_slice(lam, new_i, (3 * i,))

    lam = jax.lax.fori_loop(0, n, body, force.reshape(3 * n))
    return lam.reshape(n, 3)


def _with_box_and_bilateral_slots(problem: ContactProblem, contact_update):
    """``contact_update`` for cone slots; row-by-row Gauss-Seidel for the others: a bilateral
    slot's rows ``λ_r ← λ_r − σ_r / A_rr`` (free sign), a box slot's normal row the same clipped
    to ``[−b, b]`` and its tangent rows 0. Each row update sees the previous rows' new forces."""
    box, bilateral = (jnp.asarray(m) for m in problem.slot_masks())
    bound = problem.bound

    def update(block, sigma, lam_i, mu, i):
        inverse = _safe_inverse(jnp.diagonal(block))
        rows = lam_i
        for r in range(3):  # Gauss-Seidel inside the slot: row r sees rows < r updated
            shifted = sigma[r] + block[r] @ (rows - lam_i)
            rows = rows.at[r].set(lam_i[r] - inverse[r] * shifted)
        boxed = jnp.zeros_like(lam_i).at[2].set(jnp.clip(
            lam_i[2] - inverse[2] * sigma[2], -bound[i], bound[i]))
        return jnp.where(bilateral[i], rows,
                         jnp.where(box[i], boxed, contact_update(block, sigma, lam_i, mu)))

    return update


class PGSState(eqx.Module):
    """PGS iterate: ``force`` ``(n, 3)``."""

    force: jax.Array


class PGS(ContactSolver):
    """Projected Gauss-Seidel (seed 001 §III-A Alg. 1 "lcp", §III-B Alg. 2 "ccp", §III-D Alg. 6 "ncp").

    Args:
      formulation: ``"lcp"`` (4-facet pyramid, per-axis box friction, Alg. 1), ``"ccp"`` (step
        ``3/tr(G_ii)`` on the whole contact then projection on ``K_μ``, Alg. 2) or ``"ncp"``
        (normal step, then tangential step and *horizontal* projection on the disk of radius
        ``μ λ_N``, Alg. 6). Static; anything else raises ``ValueError``.
      max_iterations: static sweep cap.
      tolerance: dynamic; stop when the formulation's ``ε_abs`` (seed 001 eq. 15 / its CCP and
        LCP variants) is ``≤ tolerance``.
      relaxation: dynamic over-relaxation ``ω ∈ (0, 2)`` (seed 001 eq. 25 written as
        ``λ ← ω λ_new + (1 − ω) λ_old``, followed by the same projection); default 1.
    """

    formulation: str = eqx.field(static=True)
    max_iterations: int = eqx.field(static=True)
    tolerance: jax.Array
    relaxation: jax.Array

    def __init__(self, formulation: str = "ncp", max_iterations: int = 1000, tolerance=1e-6,
                 relaxation=1.0):
        formulation = Formulation.parse(formulation, "PGS formulation", FORMULATIONS)
        if int(max_iterations) < 1:
            raise ValueError(f"max_iterations must be >= 1, got {max_iterations}")
        self.formulation = formulation
        self.max_iterations = int(max_iterations)
        self.tolerance = jnp.asarray(tolerance)
        self.relaxation = jnp.asarray(relaxation)

    def init(self, problem, warm_force, warm_rho):
        return PGSState(warm_force)

    def _update(self, block, sigma, lam_i, mu):
        omega = jnp.asarray(self.relaxation, lam_i.dtype)
        if self.formulation == "ccp":
            step = 3.0 * _safe_inverse(jnp.trace(block))
            new = project_cone(lam_i - step * sigma, mu)
            return project_cone(omega * new + (1.0 - omega) * lam_i, mu)
        # Alg. 1 / Alg. 6: normal update, then tangential update with the refreshed velocity.
        ln = jnp.maximum(lam_i[2] - _safe_inverse(block[2, 2]) * sigma[2], 0.0)
        ln = jnp.maximum(omega * ln + (1.0 - omega) * lam_i[2], 0.0)
        sigma_t = sigma[:2] + block[:2, 2] * (ln - lam_i[2])
        inv_t = _safe_inverse(jnp.minimum(block[0, 0], block[1, 1]))
        lt = lam_i[:2] - inv_t * sigma_t
        lt = omega * lt + (1.0 - omega) * lam_i[:2]
        radius = mu * ln
        if self.formulation == "lcp":
            lt = jnp.clip(lt, -radius, radius)
        else:
            t = safe_norm(lt)
            lt = jnp.where(t > radius, lt * (radius / jnp.where(t > 0, t, 1.0)), lt)
        return jnp.concatenate([lt, ln[None]])

    def step(self, problem, state):
        return PGSState(gauss_seidel_sweep(problem, state.force, self._update))

    def criterion(self, problem, state):
        return criterion(problem, state.force, self.formulation)
