"""The driver :func:`solve` of a frictional contact problem (seed 001 §III, seed 004 §III-B).

:func:`solve` sanitises the problem (inactive contacts decoupled and pinned to ``λ = 0``,
non-finite problems replaced by a harmless one), runs the solver's loop (:mod:`._loop`:
``lax.while_loop`` bounded by ``max_iterations`` with a ``done`` flag in the carry, so finished
lanes freeze under ``vmap``) and packs a :class:`~jaxsim_contact.contact.ContactSolution` whose
force carries the derivative rule that ``gradient`` selects (:mod:`._gradients`): by default the
implicit rule of :mod:`._implicit` (the loop itself is not differentiated); ``"unrolled"`` runs
``lax.scan`` over ``max_iterations`` steps and lets autodiff go through them.

The pieces live one job per module: the protocol (:mod:`._solver`), the default choices
(:mod:`._defaults`), the loop (:mod:`._loop`), the derivative dispatch (:mod:`._gradients`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ._admm import ADMM
from ._newton import PrimalNewton
from ._pgs import PGS
from ._defaults import unrolled_solver
from ._gradients import checked_solver, solution
from ._loop import initial_state, iterate
from ._polish import polish
from ._problem import ContactProblem, sanitize_problem
from ._solver import ContactSolution, ContactSolver
from .._batching import any_in_batch
from .._precision import full_precision_matmuls

__all__ = ["solve"]


@full_precision_matmuls
def solve(problem: ContactProblem, solver: ContactSolver | None = None, warm_start=None,
          gradient="implicit", warm_primal=None) -> ContactSolution:
    """Solve a frictional contact problem (seed 001 §III); differentiable (seed 004 §III-B).

    Args:
      problem: :class:`ContactProblem` with ``n`` contacts.
      solver: a solver module (default ``ADMM(formulation="ncp")``).
      warm_start: ``None``, an ``(n, 3)`` force array, or a previous :class:`ContactSolution`
        (ADMM additionally reuses its ``rho``; seed 001 §III-E "warm-starting").
      warm_primal: ``None`` or a ``(k,)`` guess of the primal variable ``Bᵀ λ`` when the problem
        carries a Delassus factor ``B`` ``(3n, k)`` (a multibody step: ``B = J L⁻ᵀ``, so
        ``Bᵀ λ = L⁻¹ τ`` for the generalized constraint force ``τ = Jᵀ λ`` — MuJoCo's
        acceleration warm start in these variables). ``PrimalNewton`` starts from it instead of
        ``Bᵀ warm_start`` (or from 0 when that has the lower objective); other solvers and
        problems without a factor ignore it.
        Non-finite entries count as 0; derivatives w.r.t. it are zero like ``warm_start``'s.
      gradient: how derivatives of the returned force (and velocity) w.r.t. the problem's
        dynamic fields ``G, g, μ, R`` are computed (static; anything else raises ``ValueError``):

        * ``"implicit"`` (default): the solver runs in ``lax.while_loop`` on ``stop_gradient``
          inputs and the force carries the mode-aware implicit rule of
          :mod:`jaxsim_contact.contact._implicit` (NCP: breaking / sticking / sliding, seed 004
          eqs. 8–11; KKT counterparts for CCP and LCP), a ``custom_jvp`` whose tangent is a
          linear solve — forward and reverse mode. Derivatives w.r.t. ``warm_start`` are zero.
          Not available for ``Raisim`` (its model is not an NCP/CCP/LCP): differentiating raises
          ``NotImplementedError``.
        * ``"unrolled"``: autodiff through the solver's iterations — ``lax.scan`` over exactly
          ``max_iterations`` steps of ``solver.step`` (converged iterates frozen), so the primal
          costs ``max_iterations`` steps and reverse mode stores every one of them. ADMM with
          ``factorization="eigh"`` runs as its Cholesky variant (same fixed point, slightly
          different iterates; the eigendecomposition's derivative is NaN at repeated
          eigenvalues). Solvers that use an
          eigendecomposition internally (``StaggeredProjections``, ``PrimalNewton``) can give NaN
          unrolled derivatives on problems with repeated eigenvalues; use ``"implicit"`` there.
          Unrolled derivatives are those of the iterations actually taken: a warm start at the
          solution takes none, and the derivative w.r.t. the problem is then zero.
        * a :class:`~jaxsim_contact.contact._relaxed.RelaxedComplementarity` (``"smoothed"``,
          seed 002 §V-D): the force is the same exact solution as with ``"implicit"``; its
          derivative is that of the relaxed-complementarity solution ``λ_ρ`` (``λ ∘ σ̄ = ρ e``),
          smooth through contact make/break and stick/slip, also w.r.t. ``ρ``. NCP and CCP
          formulations only (``ValueError`` otherwise).
        * a :class:`~jaxsim_contact.contact._randomized.RandomizedSmoothing` (``"smoothed"``,
          seed 000 §III-A): the force is again the exact solution; its derivative is the average
          of the exact implicit derivatives at ``num_samples`` problems whose free velocity ``g``
          is perturbed by ``noise_scale · z_j`` (``z_j`` drawn from the rule's ``key``), each
          re-solved (warm-started from the exact solution) only when a derivative is taken.
          NCP, CCP and LCP formulations (``ValueError`` for Raisim).
    Returns:
      :class:`ContactSolution`. jit- and vmap-compatible; never NaN: non-finite problems give
      zero force, zero derivatives and ``converged=False``.
    Raises:
      NotImplementedError: the problem has spin slots and the solver is not
        :class:`~jaxsim_contact.contact.PrimalNewton` (or the gradient is a smoothed rule); the
        problem has box or bilateral slots (``num_box``,
        ``num_bilateral``) and the solver is not :class:`~jaxsim_contact.contact.ADMM`,
        :class:`~jaxsim_contact.contact.PGS` or :class:`~jaxsim_contact.contact.PrimalNewton`, or
        the gradient is a smoothed rule.
    """
    solver = checked_solver(solver, gradient)
    if problem.has_box_or_bilateral:
        _check_box_and_bilateral_support(solver, gradient)
    if problem.num_spin:
        _check_spin_support(solver, gradient)
    unrolled = gradient == "unrolled"
    safe, finite = sanitize_problem(problem)
    if unrolled:
        solver = unrolled_solver(solver)
        loop_safe, loop_solver, loop_warm, loop_primal = safe, solver, warm_start, warm_primal
    else:
        # The loop is never differentiated: derivatives come from the implicit rule below.
        loop_safe, loop_solver, loop_warm, loop_primal = jax.lax.stop_gradient(
            (safe, solver, warm_start, warm_primal))
    state0, crit0 = initial_state(problem, loop_safe, loop_solver, loop_warm, loop_primal)
    loop_result = iterate(loop_solver, loop_safe, state0, crit0, unrolled)
    if not unrolled and loop_solver.polishes:
        loop_result = _polished(loop_solver, loop_safe, *loop_result)
    return solution(problem, safe, finite, solver, loop_solver, gradient, *loop_result)


def _polished(solver: ContactSolver, safe: ContactProblem, force, rho, iterations, done, crit):
    """The loop's result, polished (:mod:`._polish`) when it stopped at the cap above the
    tolerance. A batch-wide branch: under ``vmap`` it runs when any problem of the batch capped,
    and a problem that converged keeps its force bit for bit."""

    def run(force, crit):
        polished, polished_crit = polish(safe, force, crit, solver.formulation,
                                         solver.residual_formulation, solver.tolerance)
        keep = done | ~(polished_crit < crit)
        return jnp.where(keep, force, polished), jnp.where(keep, crit, polished_crit)

    force, crit = jax.lax.cond(any_in_batch(~done), run, lambda f, c: (f, c), force, crit)
    done = done | (crit <= jnp.asarray(solver.tolerance, crit.dtype))
    return force, rho, iterations, done, crit


def _check_spin_support(solver: ContactSolver, gradient) -> None:
    """Spin slots (elliptic torsional / rolling friction) widen their cones to six rows: only
    :class:`~jaxsim_contact.contact.PrimalNewton` solves them, differentiated by the fixed-point
    implicit rule (:mod:`._compliant_implicit`) or unrolled; anything else raises by name."""
    if not isinstance(solver, PrimalNewton):
        raise NotImplementedError(
            f"{type(solver).__name__} does not solve spin rows (torsional / rolling friction under "
            "the elliptic cone, condim 4 or 6) yet; use jc.contact.PrimalNewton (the "
            "MuJoCo-compatible model's solver)")
    if not isinstance(gradient, str):
        raise NotImplementedError(
            f"the {type(gradient).__name__} gradient rule does not cover spin rows (torsional / "
            "rolling friction under the elliptic cone); use gradient='implicit' or 'unrolled'")


def _check_box_and_bilateral_support(solver: ContactSolver, gradient) -> None:
    """Box (dry friction) and bilateral (equality) slots are solved by ADMM, PGS and PrimalNewton, differentiated
    by the implicit or the unrolled rule; anything else raises by name instead of solving another
    problem."""
    if not isinstance(solver, (ADMM, PGS, PrimalNewton)):
        raise NotImplementedError(
            f"{type(solver).__name__} does not solve box (frictionloss) or bilateral (equality "
            "constraint) rows yet; this model has some: use jc.contact.ADMM (the default step "
            "solver), jc.contact.PGS or jc.contact.PrimalNewton, e.g. model.replace_options(solver=jc.contact.ADMM())")
    if not isinstance(gradient, str):
        raise NotImplementedError(
            f"the {type(gradient).__name__} gradient rule does not cover box (frictionloss) or "
            "bilateral (equality constraint) rows yet; use gradient='implicit' or 'unrolled'")
