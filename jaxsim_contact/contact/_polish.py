"""Active-set polishing of a solve that stopped at its iteration cap.

First-order solvers (ADMM, PGS) can crawl for hundreds of iterations on a degenerate contact
problem — a hyperstatic contact set, a rank-deficient Delassus matrix — while their iterate
already tells which contacts break, stick or slide. Polishing takes that guess and solves the
problem it implies, as OSQP polishes a QP solution from its active set (Stellato et al. 2020,
"OSQP", §5.2): with the contact modes of the implicit derivative (seed 004 §III-B;
:func:`~jaxsim_contact.contact._implicit.mode_equations`) frozen at the iterate, the optimality
conditions are affine in ``λ``::

    breaking  a λ_i = 0
    sticking  σ_i = 0                       (σ = A λ + g)
    sliding   cone surface along the slip direction u, the u⊥ balance of λ_T and σ_T, σ_N = 0
    box       σ_N = 0 inside the bound, λ_N = ±bound at it;   bilateral  σ_i = 0

i.e. ``C_λ λ + C_σ (A λ + g) + c = 0`` (``c``: the box bounds), one linear system ``M λ = −(C_σ g + c)``
with the implicit rule's matrix ``M = C_λ + C_σ A``, solved on the non-breaking contacts (breaking
ones stay 0) for the minimum-norm least-squares *correction* of the iterate: on a hyperstatic set
``M`` is singular and the conditions leave the force distribution free, so the iterate's own
distribution is kept (a solution is a fixed point of the step) rather than replaced by the
minimum-norm one. The result is projected onto the feasible set and kept only if its criterion
(seed 001 eq. 15) is lower than the solver's best; the modes are re-read from it and the step
repeated — up to :data:`POLISH_ITERATIONS` times, until the tolerance, or until an iterate after
the first fails to lower the criterion of the one before (a Newton iteration on the NCP's active
set: exact in one step when the guessed modes are right; one that stops improving has the wrong
modes, and under ``vmap`` every lane pays the longest polish).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ._implicit import BREAKING, _block_solve, _ImplicitSystem, implicit_formulation, mode_equations
from ._problem import ContactProblem, criterion, slot_masks

__all__ = ["POLISH_ITERATIONS", "polish"]

#: most active-set Newton steps tried after a capped solve (each re-reads the modes from the last;
#: they stop at the tolerance). A wrong first guess of the modes — a contact at the cone's edge
#: read as sticking — can throw the next iterate far off before the modes settle: on the demo's
#: two capped steps the criterion reached 5e-7 after 1 step and 1e-11 after 5 (2.4e-3 and 6e-6 at
#: the ADMM cap).
POLISH_ITERATIONS = 8


def _polish_step(problem: ContactProblem, force: jax.Array, formulation: str,
                 tolerance: jax.Array) -> jax.Array:
    """One active-set Newton step from ``force`` ``(n, 3)``: the projected solution of the affine
    optimality conditions of the modes at ``force``."""
    n = problem.num_contacts
    A = problem.compliant_delassus
    g = problem.free_velocity
    layout = (problem.num_box, problem.num_bilateral)
    bound = jnp.zeros_like(problem.friction) if problem.bound is None else problem.bound
    c_lam, c_sig, c_mu, modes = mode_equations(
        implicit_formulation(formulation), A, g, problem.friction, problem.active, force, tolerance,
        layout, bound)
    rhs = jnp.einsum("irk,ik->ir", c_sig, g.reshape(n, 3))
    if problem.num_box:
        # a box slot at its bound: a (λ_N − s b) = 0, whose constant term c_mu · b the matrix lacks
        box, _ = slot_masks(n, *layout)
        rhs = rhs + jnp.where(jnp.asarray(box)[:, None], c_mu * bound[:, None], 0.0)
    system = _ImplicitSystem(c_lam, c_sig, problem.compliance.reshape(3 * n),
                             None if problem.delassus_factor is not None else problem.delassus,
                             problem.delassus_factor)
    free = modes != BREAKING  # breaking contacts stay at λ = 0
    # one pseudo-inverse of the whole system (pinned rows zeroed), not the implicit rule's tiers
    # of smaller blocks: the polish runs on rare capped steps, and each tier is one more SVD to
    # compile in every step
    # the correction from the iterate (not the minimum-norm solution): on a hyperstatic set the
    # conditions leave the force distribution free, and the iterate's distribution is kept
    start = jnp.where(free[:, None], force, 0.0).reshape(3 * n)
    residual = -rhs.reshape(3 * n) - system.matvec(start)
    new = (start + _block_solve(system, free, residual, contacts=n, transpose=False)).reshape(n, 3)
    new = problem.project(new)
    return jnp.where(problem.active[:, None], new, 0.0)


def polish(problem: ContactProblem, force: jax.Array, crit: jax.Array, formulation: str,
           residual_formulation: str, tolerance) -> tuple[jax.Array, jax.Array]:
    """Polish a capped solve of ``problem`` (a sanitised problem: inactive contacts decoupled).

    Args:
      problem: the :class:`ContactProblem` that was solved, ``n`` contacts.
      force: ``(n, 3)`` the solver's best iterate; crit: its criterion (scalar).
      formulation: the solver's formulation (``"ncp"``, ``"ccp"``, ``"lcp"``), which fixes the
        mode equations; residual_formulation: the one its criterion is measured in.
      tolerance: the solver's tolerance (sets the noise levels of the mode classification).
    Returns:
      ``(force, criterion)``: the best of ``force`` and the polished iterates (at most
      :data:`POLISH_ITERATIONS`, stopping at the tolerance), by
      :func:`~jaxsim_contact.contact._problem.criterion`.
    """
    tolerance = jnp.asarray(tolerance, force.dtype)

    def step(carry):
        k, current, current_crit, best, best_crit, _ = carry
        new = _polish_step(problem, current, formulation, tolerance)
        new_crit = criterion(problem, new, residual_formulation)
        new_crit = jnp.where(jnp.isfinite(new_crit), new_crit, jnp.inf)
        better = new_crit < best_crit
        best = jnp.where(better, new, best)
        # after the first step (which may land far off while the modes settle) the iterates must
        # keep improving: a Newton sequence that stops decreasing has the wrong modes
        stalled = (k > 0) & ~(new_crit < current_crit)
        return k + 1, new, new_crit, best, jnp.where(better, new_crit, best_crit), stalled

    def going(carry):
        k, _, _, _, best_crit, stalled = carry
        return (k < POLISH_ITERATIONS) & (best_crit > tolerance) & ~stalled

    # never differentiated: the driver attaches the implicit rule to the polished force
    start = (jnp.zeros((), jnp.int32), force, crit, force, crit, jnp.zeros((), bool))
    _, _, _, best, best_crit, _ = jax.lax.while_loop(going, step, start)
    return best, best_crit
