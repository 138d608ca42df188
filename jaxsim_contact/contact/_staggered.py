"""Staggered projections for the NCP (seed 001 §III-D, Alg. 7; Kaufman et al. 2008).

Each outer iteration solves two convex sub-problems, each with the other block frozen:

* normal   (Alg. 7 lines 2–3): ``min_{λ_N ≥ 0} ½ λ_Nᵀ G_NN λ_N + (g_N + G_NT λ_T)ᵀ λ_N``;
* friction (lines 4–5): ``min_{‖λ_T⁽ⁱ⁾‖ ≤ μ_i λ_N⁽ⁱ⁾} ½ λ_Tᵀ G_TT λ_T + (g_T + G_TN λ_N)ᵀ λ_T``.

(Alg. 7 line 2 prints ``g_T`` where ``g_N`` is meant.) A fixed point satisfies Signorini for the
normal block and the maximum-dissipation principle for the friction block, i.e. the NCP (eq. 15).
Both sub-problems are solved by ADMM (the robust choice the seed mentions) with a fixed number of
inner iterations, warm-started from the previous outer iteration (primal and dual), using an
eigendecomposition of the sub-block computed once so that the spectral ρ adaptation
(seed 001 §III-E) is free.

The outer fixed point has no convergence guarantee (seed 001 Table III) and on dense coupled
problems (e.g. random problems with many contacts) it crawls, even with many inner iterations.
``anderson_memory = m > 0`` (default 5) accelerates it: type-II Anderson
acceleration (``jaxsim_contact.contact._anderson``, with its residual safeguard) of the outer map
``λ ↦ λ⁺`` over the last ``m`` iterates, the extrapolated force made feasible again (``λ_N ≥ 0``,
``‖λ_T‖ ≤ μ λ_N``) before it warm-starts the next sub-problems; on such problems it needs several
times fewer outer iterations. ``anderson_memory=0`` is Alg. 7 as printed.

On hyperstatic problems (fewer dofs than contact rows, so ``G_TT`` is singular) both crawl, and
Anderson can stall where the plain iteration still creeps on: its safeguard rejects almost every
extrapolation and the iterate wanders far above the tolerance. So acceleration is switched
off for the rest of the solve once the criterion has not dropped by 10 % for 50 outer iterations
(``STALL_PATIENCE``, ``STALL_FACTOR``): on random hyperstatic problems the guarded iteration fails
no more often than plain Alg. 7 and needs fewer outer iterations than either plain Alg. 7 or
unguarded Anderson.

The failures left are the algorithm's, the same problems with or without acceleration: Alg. 7 has
no convergence guarantee (seed 001 §III-D, "seems, in practice, to converge most of the time");
most of them converge with a much larger iteration cap, and the slow ones are slow for ADMM too.
"""

from __future__ import annotations

import numbers

import equinox as eqx
import jax
import jax.numpy as jnp

from .._math import safe_norm
from ._admm import _KAPPA_MAX, adapt_rho
from ._anderson import AndersonHistory, anderson_init, anderson_step
from ._problem import Formulation, criterion
from ._solver import ContactSolver

__all__ = ["StaggeredProjections", "StaggeredState", "eigen_admm"]


def _spectral(A):
    evals, Q = jnp.linalg.eigh(A)
    evals = jnp.maximum(evals, 0.0)
    lmax = jnp.maximum(evals[-1], jnp.finfo(A.dtype).tiny)
    lmin = jnp.clip(evals[0], lmax / _KAPPA_MAX, lmax)
    return Q, evals, lmax / lmin, jnp.sqrt(lmax * lmin)


def eigen_admm(Q, evals, q, project, z, gamma, rho, kappa, num_iterations: int,
               ratio=10.0, power=0.05):
    """Fixed-count ADMM for ``min_{x ∈ C} ½ xᵀ A x + qᵀ x`` with ``A = Q diag(evals) Qᵀ``.

    Args: ``Q`` ``(m, m)``, ``evals`` ``(m,)``, ``q`` ``(m,)``, ``project`` onto ``C``, warm
    ``z`` (feasible) and ``gamma`` ``(m,)``, ``rho``, ``kappa`` scalars. Returns ``(z, gamma, rho)``.
    """

    def body(_, carry):
        z, gamma, rho = carry
        lam = -(Q @ ((Q.T @ (q - rho * z + gamma)) / (evals + rho)))
        z_new = project(lam + gamma / rho)
        gamma = gamma + rho * (lam - z_new)
        new_rho = adapt_rho(rho, jnp.max(jnp.abs(lam - z_new)),
                            rho * jnp.max(jnp.abs(z_new - z)), kappa, ratio, power)
        return z_new, gamma, jnp.where(jnp.isfinite(new_rho) & (new_rho > 0), new_rho, rho)

    return jax.lax.fori_loop(0, num_iterations, body, (z, gamma, rho))


class StaggeredState(eqx.Module):
    """Iterate: ``force`` ``(n, 3)``; inner ADMM duals ``gamma_n`` ``(n,)``, ``gamma_t``
    ``(2n,)``; inner ``rho_n``, ``rho_t``; eigendata of ``G_NN`` and ``G_TT`` and their κ;
    ``criterion``: the NCP criterion of ``force`` (computed once per iterate: the driver's stopping
    test and the stall guard both read it); ``anderson``: the outer iteration's Anderson history
    over the ``3n`` forces; ``best_criterion``, ``stalled_for`` (int32), ``accelerate`` (bool):
    the stall guard that turns Anderson off (the four are ``None`` when ``anderson_memory = 0``)."""

    force: jax.Array
    gamma_n: jax.Array
    gamma_t: jax.Array
    rho_n: jax.Array
    rho_t: jax.Array
    q_n: jax.Array
    e_n: jax.Array
    kappa_n: jax.Array
    q_t: jax.Array
    e_t: jax.Array
    kappa_t: jax.Array
    criterion: jax.Array
    anderson: AndersonHistory | None = None
    best_criterion: jax.Array | None = None
    stalled_for: jax.Array | None = None
    accelerate: jax.Array | None = None


def _clip_to_disks(tangential, radius):
    """``(n, 2)`` tangential forces scaled into the disks ``‖λ_T‖ ≤ radius`` ``(n,)``."""
    norm = safe_norm(tangential)
    scale = radius / jnp.where(norm > 0, norm, 1.0)
    return jnp.where((norm > radius)[:, None], tangential * scale[:, None], tangential)


def _feasible(force, friction):
    """``(n, 3)`` forces made feasible: ``λ_N ≥ 0``, then ``λ_T`` clipped to ``μ λ_N``."""
    normal = jnp.maximum(force[:, 2], 0.0)
    return jnp.concatenate([_clip_to_disks(force[:, :2], friction * normal), normal[:, None]], 1)


#: Anderson acceleration is switched off (for the rest of the solve) once the NCP criterion of the
#: iterates has not dropped below ``STALL_FACTOR`` × its best for ``STALL_PATIENCE`` outer
#: iterations; see the module docstring for why
STALL_PATIENCE = 50
STALL_FACTOR = 0.9


def _stall_guard(crit, best, stalled_for, accelerate):
    """``(best, stalled_for, accelerate)`` updated with the criterion ``crit`` of the current
    iterate (scalars; ``accelerate`` only ever goes from True to False)."""
    improved = crit < STALL_FACTOR * best
    best = jnp.where(improved, crit, best)
    stalled_for = jnp.where(improved, 0, stalled_for + 1)
    return best, stalled_for, accelerate & (stalled_for < STALL_PATIENCE)


def _blocks(problem):
    n = problem.num_contacts
    A = problem.compliant_delassus
    idx_n = 3 * jnp.arange(n) + 2
    idx_t = (3 * jnp.arange(n)[:, None] + jnp.arange(2)[None, :]).reshape(-1)
    return A, idx_n, idx_t


class StaggeredProjections(ContactSolver):
    """Staggered projections NCP solver (seed 001 §III-D, Alg. 7).

    Args:
      max_iterations: static outer cap.
      tolerance: dynamic; stop when the NCP ``ε_abs`` (eq. 15) ``≤ tolerance``.
      inner_iterations: static ADMM iterations per sub-problem and outer iteration (default 10).
      anderson_memory: static; Anderson acceleration of the outer iteration over this many
        iterates (default 5; 0: Alg. 7 unaccelerated), switched off for the rest of the solve
        when the criterion stalls — see the module docstring.
    """

    max_iterations: int = eqx.field(static=True)
    inner_iterations: int = eqx.field(static=True)
    anderson_memory: int = eqx.field(static=True)
    tolerance: jax.Array
    formulation: str = eqx.field(static=True, default="ncp")

    def __init__(self, max_iterations: int = 200, tolerance=1e-6, inner_iterations: int = 10,
                 anderson_memory: int = 5):
        if int(max_iterations) < 1 or int(inner_iterations) < 1:
            raise ValueError("max_iterations and inner_iterations must be >= 1")
        if (isinstance(anderson_memory, bool) or not isinstance(anderson_memory, numbers.Integral)
                or anderson_memory < 0):
            raise ValueError(f"anderson_memory must be an int >= 0, got {anderson_memory!r}")
        self.max_iterations = int(max_iterations)
        self.inner_iterations = int(inner_iterations)
        self.anderson_memory = int(anderson_memory)
        self.tolerance = jnp.asarray(tolerance)
        self.formulation = Formulation.NCP

    def init(self, problem, warm_force, warm_rho):
        A, idx_n, idx_t = _blocks(problem)
        n = problem.num_contacts
        q_n, e_n, kappa_n, rho_n = _spectral(A[idx_n][:, idx_n])
        q_t, e_t, kappa_t, rho_t = _spectral(A[idx_t][:, idx_t])
        force = _feasible(warm_force, problem.friction)
        sigma = A @ force.reshape(3 * n) + problem.free_velocity
        history = (anderson_init(self.anderson_memory, 3 * n, force.dtype)
                   if self.anderson_memory else None)
        guard = ((jnp.full((), jnp.inf, force.dtype), jnp.zeros((), jnp.int32), jnp.ones((), bool))
                 if self.anderson_memory else (None, None, None))
        return StaggeredState(force, -sigma[idx_n], -sigma[idx_t], rho_n, rho_t,
                              q_n, e_n, kappa_n, q_t, e_t, kappa_t,
                              criterion(problem, force, "ncp"), history, *guard)

    def step(self, problem, state):
        A, idx_n, idx_t = _blocks(problem)
        n = problem.num_contacts
        g = problem.free_velocity
        mu = problem.friction
        lt = state.force[:, :2].reshape(2 * n)
        ln = state.force[:, 2]
        # normal sub-problem (Alg. 7 lines 2–3)
        q_n = g[idx_n] + A[idx_n][:, idx_t] @ lt
        ln, gamma_n, rho_n = eigen_admm(state.q_n, state.e_n, q_n, lambda x: jnp.maximum(x, 0.0),
                                        ln, state.gamma_n, state.rho_n, state.kappa_n,
                                        self.inner_iterations)
        # friction sub-problem (lines 4–5), disks of radius μ λ_N
        q_t = g[idx_t] + A[idx_t][:, idx_n] @ ln
        radius = mu * ln

        def project_disks(x):
            return _clip_to_disks(x.reshape(n, 2), radius).reshape(2 * n)

        lt = project_disks(lt)
        lt, gamma_t, rho_t = eigen_admm(state.q_t, state.e_t, q_t, project_disks, lt,
                                        state.gamma_t, state.rho_t, state.kappa_t,
                                        self.inner_iterations)
        force = jnp.concatenate([lt.reshape(n, 2), ln[:, None]], axis=1)
        history = state.anderson
        guard = (state.best_criterion, state.stalled_for, state.accelerate)
        if self.anderson_memory:
            extrapolated, history = anderson_step(history, state.force.reshape(3 * n),
                                                  force.reshape(3 * n))
            force = jnp.where(state.accelerate, _feasible(extrapolated.reshape(n, 3), mu), force)
            guard = _stall_guard(state.criterion, *guard)
        return eqx.tree_at(lambda s: (s.force, s.gamma_n, s.gamma_t, s.rho_n, s.rho_t, s.criterion,
                                      s.anderson, s.best_criterion, s.stalled_for, s.accelerate),
                           state, (force, gamma_n, gamma_t, rho_n, rho_t,
                                   criterion(problem, force, "ncp"), history, *guard),
                           is_leaf=lambda x: x is None)

    def criterion(self, problem, state):
        return state.criterion
