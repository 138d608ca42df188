"""The derivative dispatch of :func:`~jaxsim_contact.contact.solve` (seed 004 §III-B, seed 002
§V-D, seed 000 §III-A): which rule the returned force carries — the implicit rule, an unrolled
loop, the relaxed-complementarity rule or randomized smoothing — and the packing of the solution.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ._compliant_implicit import compliant_ccp_force
from ._defaults import default_problem_solver
from ._implicit import GRADIENTS, implicit_force
from ._problem import Residuals, contact_residuals
from ._randomized import RandomizedSmoothing, randomized_force
from ._relaxed import RelaxedComplementarity, smoothed_force
from ._solver import ContactSolution, ContactSolver

__all__ = ["checked_solver", "solution"]


def checked_solver(solver, gradient) -> ContactSolver:
    """The solver to use (the default when ``None``) after validating ``gradient`` (static)."""
    relaxed = isinstance(gradient, RelaxedComplementarity)
    randomized = isinstance(gradient, RandomizedSmoothing)
    if not (relaxed or randomized) and (not isinstance(gradient, str) or gradient not in GRADIENTS):
        raise ValueError(
            f"gradient must be one of {[g.value for g in GRADIENTS]}, a jc.contact.RelaxedComplementarity(relaxation=ρ) "
            "or a jc.contact.RandomizedSmoothing(key, noise_scale) (the 'smoothed' rules), got "
            f"{gradient!r}")
    if solver is None:
        solver = default_problem_solver()
    if relaxed or randomized:
        gradient.check_formulation(solver.formulation)
    return solver


def solution(problem, safe, finite, solver, loop_solver, gradient, force, final_rho, iters, done,
              crit) -> ContactSolution:
    """The :class:`ContactSolution` of one problem from the loop's result: masks, the derivative
    rule selected by ``gradient``, residuals and velocity."""
    relaxed = isinstance(gradient, RelaxedComplementarity)
    randomized = isinstance(gradient, RandomizedSmoothing)
    unrolled = gradient == "unrolled"
    ok = finite & jnp.all(jnp.isfinite(force))
    mask = jnp.repeat(problem.active, 3).reshape(-1, 3) & ok
    force = jnp.where(mask, force, 0.0)
    if relaxed:
        force = smoothed_force(
            solver.formulation, safe.delassus, safe.free_velocity, safe.friction,
            safe.compliance, safe.active, force, gradient.relaxation, gradient.newton_iterations)
        force = jnp.where(mask, force, 0.0)
    elif randomized:
        # perturbations only where the problem is finite and the contact active; the re-solves
        # inside the rule run on stop_gradient data like the exact loop above
        perturbations = jax.lax.stop_gradient(
            jnp.where(finite, gradient.perturbations(safe.active, force.dtype), 0.0))
        force = randomized_force(safe, loop_solver, force,
                                 jax.lax.stop_gradient(final_rho), perturbations)
        force = jnp.where(mask, force, 0.0)
    elif not unrolled and safe.num_spin:
        # widened cones (spin slots): the fixed-point rule, which needs no mode classification
        layout = (safe.num_cones, safe.num_spin, safe.num_frictionless, safe.num_box,
                  safe.num_bilateral)
        force = compliant_ccp_force(layout, safe.delassus, safe.free_velocity, safe.friction,
                                    safe.spin_friction, safe.compliance, safe.active, safe.bound,
                                    force)
        force = jnp.where(mask, force, 0.0)
    elif not unrolled:
        # Attach the implicit derivative; sanitising outside the rule masks the tangents of
        # inactive contacts and of non-finite problems by `where` (no NaN can leak).
        force = implicit_force(
            solver.formulation, (safe.num_box, safe.num_bilateral), safe.delassus,
            safe.free_velocity, safe.friction, safe.compliance, safe.active, force,
            jax.lax.stop_gradient(jnp.asarray(solver.tolerance, force.dtype)), safe.delassus_factor,
            safe.bound)
        force = jnp.where(mask, force, 0.0)
    res = contact_residuals(safe, force, solver.residual_formulation)
    res = Residuals(*(jnp.max(x, initial=0.0) for x in res))
    n = problem.num_contacts
    # G (or its factor) is masked before use, not the product: a NaN entry times the zero force
    # would leak into the value and, through reverse mode, into the gradients
    lam = force.reshape(3 * n)
    if problem.delassus_factor is None:
        G_lam = jnp.where(finite, problem.delassus, 0.0) @ lam
    else:
        B = jnp.where(finite, problem.delassus_factor, 0.0)
        G_lam = B @ (B.T @ lam)
    g = jnp.where(finite, problem.free_velocity, 0.0)
    velocity = (G_lam + g).reshape(n, 3)
    return ContactSolution(
        force=force,
        velocity=velocity,
        iterations=iters,
        converged=done & ok,
        criterion=jnp.where(ok, crit, jnp.inf),
        primal=res.primal,
        dual=res.dual,
        complementarity=res.complementarity,
        rho=jnp.where(ok, final_rho, 0.0),
    )
