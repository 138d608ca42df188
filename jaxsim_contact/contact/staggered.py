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
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from ..math import safe_norm
from .admm import _KAPPA_MAX, adapt_rho
from .problem import criterion
from .solve import ContactSolver

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
    ``(2n,)``; inner ``rho_n``, ``rho_t``; eigendata of ``G_NN`` and ``G_TT`` and their κ."""

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
    """

    max_iterations: int = eqx.field(static=True)
    inner_iterations: int = eqx.field(static=True)
    tolerance: jax.Array
    formulation: str = eqx.field(static=True, default="ncp")

    def __init__(self, max_iterations: int = 200, tolerance=1e-6, inner_iterations: int = 10):
        if int(max_iterations) < 1 or int(inner_iterations) < 1:
            raise ValueError("max_iterations and inner_iterations must be >= 1")
        self.max_iterations = int(max_iterations)
        self.inner_iterations = int(inner_iterations)
        self.tolerance = jnp.asarray(tolerance)
        self.formulation = "ncp"

    def init(self, problem, warm_force, warm_rho):
        A, idx_n, idx_t = _blocks(problem)
        n = problem.num_contacts
        q_n, e_n, kappa_n, rho_n = _spectral(A[idx_n][:, idx_n])
        q_t, e_t, kappa_t, rho_t = _spectral(A[idx_t][:, idx_t])
        ln = jnp.maximum(warm_force[:, 2], 0.0)
        lt = warm_force[:, :2]
        t = safe_norm(lt)
        radius = problem.friction * ln
        lt = jnp.where((t > radius)[:, None], lt * (radius / jnp.where(t > 0, t, 1.0))[:, None], lt)
        force = jnp.concatenate([lt, ln[:, None]], axis=1)
        sigma = A @ force.reshape(3 * n) + problem.free_velocity
        return StaggeredState(force, -sigma[idx_n], -sigma[idx_t], rho_n, rho_t,
                              q_n, e_n, kappa_n, q_t, e_t, kappa_t)

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
            x = x.reshape(n, 2)
            t = safe_norm(x)
            x = jnp.where((t > radius)[:, None], x * (radius / jnp.where(t > 0, t, 1.0))[:, None], x)
            return x.reshape(2 * n)

        lt = project_disks(lt)
        lt, gamma_t, rho_t = eigen_admm(state.q_t, state.e_t, q_t, project_disks, lt,
                                        state.gamma_t, state.rho_t, state.kappa_t,
                                        self.inner_iterations)
        force = jnp.concatenate([lt.reshape(n, 2), ln[:, None]], axis=1)
        return eqx.tree_at(lambda s: (s.force, s.gamma_n, s.gamma_t, s.rho_n, s.rho_t), state,
                           (force, gamma_n, gamma_t, rho_n, rho_t))

    def criterion(self, problem, state):
        return criterion(problem, state.force, "ncp")
