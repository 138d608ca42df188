"""Primal Newton for the compliant CCP (seed 001 §III-B, eqs. 21–22, Alg. 4; MuJoCo / Drake).

Seed 001 writes the primal over joint velocities ``v`` with ``M``, ``J`` and ``v_f``. A
:class:`ContactProblem` only carries ``(G, g)``, so we use the exact change of variables
``G = A Aᵀ`` with ``A = Q diag(√e)`` from the eigendecomposition of ``G``: this is the primal of a
system with ``M = I``, ``J = A``, ``v_f = 0`` and the whole of ``g`` as the reference offset
``c = A v + g``. Its dual is exactly ``min_{λ ∈ K} ½ λᵀ (G + R) λ + gᵀ λ`` (eq. 20 with
compliance), so the forces match the CCP of the contact problem (deviation: the Newton system is
``3n × 3n`` instead of ``n_v × n_v``).

With ``y(v) = −R⁻¹ (A v + g)`` and ``D = R^{1/2}``::

    ℓ(v)  = ½ ‖v‖² + ½ ‖P_{K'}(D y)‖²,          K' = K_{μ √(R_T / R_N)}  (R-metric projection)
    λ(v)  = D⁻¹ P_{K'}(D y)
    ∇ℓ    = v − Aᵀ λ(v)                         (Alg. 4 line 2)
    H     = I + Aᵀ D⁻¹ ∂P_{K'} D⁻¹ A             (line 3)

Line search (line 5): Armijo backtracking ``α ∈ {1, β, β², …}`` with ``β = 0.8``, ``c = 10⁻⁴``
(the seed's implementation, not Drake's exact line search); all trial steps are evaluated at once
and the largest admissible one is kept.

Compliance must be positive (the primal is "viable only when R is non-null"): rows with
``R < min_compliance × tr(G)/3n`` are raised to that floor. The per-contact tangential compliance is
``R_T = √(R_t1 R_t2)`` (Drake's model has ``R_t1 = R_t2``).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from .problem import ContactProblem, criterion, project_cone
from .solve import ContactSolver

__all__ = ["PrimalNewton", "NewtonState"]


class NewtonState(eqx.Module):
    """Iterate: ``v`` ``(3n,)`` primal variable; ``force`` ``(n, 3)`` = ``λ(v)``; ``sqrt_delassus``
    ``A`` ``(3n, 3n)``; ``compliance`` ``R̂`` ``(3n,)`` (floored, tangents merged)."""

    v: jax.Array
    force: jax.Array
    sqrt_delassus: jax.Array
    compliance: jax.Array


class PrimalNewton(ContactSolver):
    """Newton's method on the primal compliant CCP with Armijo backtracking (seed 001 Alg. 4).

    Args:
      max_iterations: static Newton iteration cap.
      tolerance: dynamic; stop when the CCP ``ε_abs`` (without De Saxcé) at ``λ(v)`` is ``≤``.
      min_compliance: dynamic relative floor for ``R`` (see module docstring), default 1e-9.
      armijo: dynamic sufficient-decrease constant ``c`` (1e-4); backtracking: dynamic ``β`` (0.8).
      line_search_steps: static number of trial steps (default 30).
    """

    max_iterations: int = eqx.field(static=True)
    line_search_steps: int = eqx.field(static=True)
    tolerance: jax.Array
    min_compliance: jax.Array
    armijo: jax.Array
    backtracking: jax.Array
    formulation: str = eqx.field(static=True, default="ccp")

    def __init__(self, max_iterations: int = 100, tolerance=1e-6, min_compliance=1e-9,
                 armijo=1e-4, backtracking=0.8, line_search_steps: int = 30):
        if int(max_iterations) < 1 or int(line_search_steps) < 1:
            raise ValueError("max_iterations and line_search_steps must be >= 1")
        self.max_iterations = int(max_iterations)
        self.line_search_steps = int(line_search_steps)
        self.tolerance = jnp.asarray(tolerance)
        self.min_compliance = jnp.asarray(min_compliance)
        self.armijo = jnp.asarray(armijo)
        self.backtracking = jnp.asarray(backtracking)
        self.formulation = "ccp"

    # -- primal objective ----------------------------------------------------------------------

    @staticmethod
    def _scaled(problem, state, v):
        R = state.compliance.reshape(-1, 3)
        d = jnp.sqrt(R)
        c = (state.sqrt_delassus @ v + problem.free_velocity).reshape(-1, 3)
        x = -c / d  # D y = −D⁻¹ (A v + g)
        mu_s = problem.friction * jnp.sqrt(R[:, 0] / R[:, 2])
        return x, d, mu_s

    def _objective(self, problem, state, v):
        x, _, mu_s = self._scaled(problem, state, v)
        p = project_cone(x, mu_s)
        return 0.5 * v @ v + 0.5 * jnp.sum(p * p)

    def _force(self, problem, state, v):
        x, d, mu_s = self._scaled(problem, state, v)
        return project_cone(x, mu_s) / d

    # -- protocol ------------------------------------------------------------------------------

    def init(self, problem: ContactProblem, warm_force, warm_rho):
        G = problem.delassus
        m = G.shape[0]
        dtype = G.dtype
        evals, Q = jnp.linalg.eigh(G)
        A = Q * jnp.sqrt(jnp.maximum(evals, 0.0))[None, :]
        floor = jnp.asarray(self.min_compliance, dtype) * jnp.maximum(jnp.trace(G) / m,
                                                                       jnp.finfo(dtype).tiny)
        R = jnp.maximum(problem.compliance, floor).reshape(-1, 3)
        r_t = jnp.sqrt(R[:, 0] * R[:, 1])
        R = jnp.stack([r_t, r_t, R[:, 2]], axis=1).reshape(m)
        v = A.T @ warm_force.reshape(m)
        state = NewtonState(v, warm_force, A, R)
        return eqx.tree_at(lambda s: s.force, state, self._force(problem, state, v))

    def step(self, problem, state):
        A = state.sqrt_delassus
        m = A.shape[0]
        v = state.v
        x, d, mu_s = self._scaled(problem, state, v)
        lam = project_cone(x, mu_s) / d
        grad = v - A.T @ lam.reshape(m)
        jac = jax.vmap(jax.jacfwd(project_cone))(x, mu_s)  # (n, 3, 3)
        w = jac / d[:, :, None] / d[:, None, :]
        # Aᵀ blockdiag(w) A without forming the block-diagonal matrix
        AW = jnp.einsum("ikm,ikl->mil", A.reshape(-1, 3, m), w).reshape(m, m)
        H = jnp.eye(m, dtype=A.dtype) + AW @ A
        L = jnp.linalg.cholesky(H)
        dv = -jax.scipy.linalg.cho_solve((L, True), grad)
        dv = jnp.where(jnp.all(jnp.isfinite(dv)), dv, -grad)
        slope = grad @ dv
        f0 = self._objective(problem, state, v)
        k = jnp.arange(self.line_search_steps, dtype=A.dtype)
        alphas = jnp.asarray(self.backtracking, A.dtype) ** k
        fs = jax.vmap(lambda a: self._objective(problem, state, v + a * dv))(alphas)
        ok = fs <= f0 + jnp.asarray(self.armijo, A.dtype) * alphas * slope
        first = jnp.argmax(ok)
        alpha = jnp.where(jnp.any(ok), alphas[first], alphas[-1])
        v_new = v + alpha * dv
        return eqx.tree_at(lambda s: (s.v, s.force), state,
                           (v_new, self._force(problem, state, v_new)))

    def criterion(self, problem, state):
        return criterion(problem, state.force, "ccp")
