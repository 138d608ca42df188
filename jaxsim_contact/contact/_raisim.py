"""RaiSim's per-contact bisection solver (seed 001 §III-C, Alg. 5; Hwangbo et al. 2018).

Per contact, with ``g̃ = σ − G_ii λ_i`` the velocity the contact would have without its own force
(Alg. 5 line 3) and ``λ_v0 = −G_ii⁻¹ g̃`` (line 4):

* take-off  (``g̃_N > 0``): ``λ = 0``;
* stiction  (``λ_v0 ∈ K_μ``): ``λ = λ_v0``;
* sliding: minimise ``½ λᵀ G_ii λ + g̃ᵀ λ`` over the ellipse ``K_μ ∩ {(G_ii λ + g̃)_N = 0}``
  (eq. 23). The ellipse is parametrised by the polar angle ``θ`` of ``λ_T``:
  ``λ_N(θ) = −g̃_N / (G_NN + μ G_NT·u(θ))``, ``λ_T = μ λ_N u(θ)``, and the 1-D problem is solved
  by bisection on ``df/dθ``.

Deviation from the seed (documented): RaiSim's bracket initialisation is not specified in seed 001,
so the bracket is found by sampling ``θ`` on a fixed grid (``angle_samples``, static) and keeping
the best sample's neighbours; then ``bisection_steps`` (static) bisections on the derivative.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from ._pgs import gauss_seidel_sweep
from ._problem import Formulation
from ._solver import ContactSolver

__all__ = ["Raisim", "RaisimState"]


class RaisimState(eqx.Module):
    """Iterate: ``force`` ``(n, 3)``; ``change`` = ``‖λᵏ − λᵏ⁻¹‖∞`` (fixed-point criterion)."""

    force: jax.Array
    change: jax.Array


def _ellipse_point(theta, block, g_tilde, mu):
    u = jnp.stack([jnp.cos(theta), jnp.sin(theta)])
    denom = block[2, 2] + mu * (block[2, :2] @ u)
    valid = denom > 1e-12 * jnp.maximum(block[2, 2], 1e-300)
    ln = -g_tilde[2] / jnp.where(valid, denom, 1.0)
    lam = jnp.concatenate([mu * ln * u, ln[None]])
    return lam, valid & (ln >= 0)


def _ellipse_objective(theta, block, g_tilde, mu):
    lam, valid = _ellipse_point(theta, block, g_tilde, mu)
    f = 0.5 * lam @ (block @ lam) + g_tilde @ lam
    return jnp.where(valid, f, jnp.finfo(lam.dtype).max)


def _bisection(block, g_tilde, mu, lam_v0, samples: int, steps: int):
    """Solve eq. 23 for one sliding contact; returns ``λ`` ``(3,)`` on the ellipse."""
    dtype = g_tilde.dtype
    thetas = jnp.linspace(0.0, 2 * jnp.pi, samples, endpoint=False, dtype=dtype)
    # Also try the direction of the unconstrained solution's tangential part (RaiSim's guess).
    theta0 = jnp.arctan2(lam_v0[1], lam_v0[0])
    thetas = jnp.concatenate([thetas, theta0[None]])
    fs = jax.vmap(lambda t: _ellipse_objective(t, block, g_tilde, mu))(thetas)
    best = thetas[jnp.argmin(fs)]
    width = 2 * jnp.pi / samples
    dfun = jax.grad(lambda t: _ellipse_objective(t, block, g_tilde, mu))

    def body(_, bracket):
        lo, hi = bracket
        mid = 0.5 * (lo + hi)
        d = dfun(mid)
        return jnp.where(d > 0, lo, mid), jnp.where(d > 0, mid, hi)

    lo, hi = jax.lax.fori_loop(0, steps, body, (best - width, best + width))
    theta = 0.5 * (lo + hi)
    f_theta = _ellipse_objective(theta, block, g_tilde, mu)
    theta = jnp.where(f_theta <= jnp.min(fs), theta, best)
    lam, valid = _ellipse_point(theta, block, g_tilde, mu)
    return jnp.where(valid, lam, jnp.zeros_like(lam))


class Raisim(ContactSolver):
    """RaiSim contact model solved by per-contact bisection (seed 001 §III-C, Alg. 5).

    Args:
      max_iterations: static sweep cap.
      tolerance: dynamic; stop when ``‖λᵏ − λᵏ⁻¹‖∞ ≤ tolerance`` (the fixed-point criterion of
        seed 001 §III-C: RaiSim's model violates the MDP when sliding, so its solutions do not
        zero the NCP criterion). The NCP residuals (eq. 15) are reported in the solution, as the
        seed does for monitoring.
      angle_samples, bisection_steps: static; see module docstring.
    """

    max_iterations: int = eqx.field(static=True)
    angle_samples: int = eqx.field(static=True)
    bisection_steps: int = eqx.field(static=True)
    tolerance: jax.Array
    formulation: str = eqx.field(static=True, default="raisim")

    def __init__(self, max_iterations: int = 1000, tolerance=1e-6, angle_samples: int = 16,
                 bisection_steps: int = 40):
        if int(max_iterations) < 1:
            raise ValueError(f"max_iterations must be >= 1, got {max_iterations}")
        if int(angle_samples) < 4 or int(bisection_steps) < 1:
            raise ValueError("angle_samples must be >= 4 and bisection_steps >= 1")
        self.max_iterations = int(max_iterations)
        self.angle_samples = int(angle_samples)
        self.bisection_steps = int(bisection_steps)
        self.tolerance = jnp.asarray(tolerance)
        self.formulation = Formulation.RAISIM

    @property
    def residual_formulation(self) -> str:
        return "ncp"

    def init(self, problem, warm_force, warm_rho):
        return RaisimState(warm_force, jnp.asarray(jnp.inf, warm_force.dtype))

    def _update(self, block, sigma, lam_i, mu):
        g_tilde = sigma - block @ lam_i
        lam_v0 = -jnp.linalg.solve(block, g_tilde)
        lam_v0 = jnp.where(jnp.isfinite(lam_v0), lam_v0, 0.0)
        in_cone = jnp.linalg.norm(lam_v0[:2]) <= mu * lam_v0[2]
        sliding = _bisection(block, g_tilde, mu, lam_v0, self.angle_samples, self.bisection_steps)
        out = jnp.where(in_cone, lam_v0, sliding)
        return jnp.where(g_tilde[2] > 0, jnp.zeros_like(out), out)

    def step(self, problem, state):
        new = gauss_seidel_sweep(problem, state.force, self._update)
        return RaisimState(new, jnp.max(jnp.abs(new - state.force)))

    def criterion(self, problem, state):
        return state.change
