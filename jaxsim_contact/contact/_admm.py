"""ADMM on the dual contact problem: CCP (seed 001 Alg. 3) and NCP through the De Saxcé fixed
point (seed 004 §II-B; Carpentier et al., RSS 2024 "From compliant to rigid contact simulation").

Iteration (unscaled dual ``γ``, over-relaxation ``α``, seed 001 Alg. 3 and eq. 25)::

    λ  ← −(G + R + ρ I)⁻¹ (g + s − ρ z + γ)          # s = Γ(−γ) for NCP, 0 for CCP
    λ̂  ← α λ + (1 − α) z
    z  ← P_K(λ̂ + γ / ρ)
    γ  ← γ + ρ (λ̂ − z)

At a fixed point ``−γ = σ + Γ(σ)`` with ``σ = (G + R) z + g``, so ``s = Γ(−γ)`` is exactly the De
Saxcé correction of the current velocity and the fixed point solves the NCP (seed 001 eq. 15).

Proximal parameter (seed 001 §III-E): ``ρ₀ = √(λ_max λ_min)`` with the extreme eigenvalues of
``G + R`` (spectral rule of Tasseff et al.). Whenever the ADMM primal residual ``‖λ − z‖∞``
exceeds ``ratio ×`` the dual residual ``ρ‖z − z⁻‖∞`` (or the converse), ρ is updated by one of two
rules (``rho_update``):

* ``"spectral"`` (the seed's): ``ρ ← ρ κ^{±power}``, ``power = 0.05``;
* ``"balanced"`` (residual balancing, as OSQP's adaptive ρ, Stellato et al. 2020 §5.2):
  ``ρ ← ρ √(primal / dual)``, the factor clipped to ``[1/100, 100]``. It moves ρ by the
  observed imbalance instead of a fixed fraction of ``log κ``: contact Delassus matrices are
  rank-deficient (4 points on a face, 6 dofs), so ``κ`` sits at its clamp ``1e8`` and ``κ^0.05``
  is an arbitrary step of 2.5; with the Cholesky variant (ρ changes once per epoch of 10
  iterations) a step that size needs many epochs to reach a good ρ.
"""

from __future__ import annotations

import numbers

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl

from ._anderson import AndersonHistory, anderson_init, anderson_reset, anderson_step
from .._types import Choice
from ._problem import (ContactProblem, Formulation, Residuals, contact_residuals, de_saxce,
                      round_off_floors)
from ._solver import ContactSolver

__all__ = ["ADMM", "ADMMState", "Factorization", "RhoUpdate", "spectral_bounds", "adapt_rho",
           "balance_rho", "RHO_UPDATES"]

_KAPPA_MAX = 1e8
#: the ρ update rules of :class:`ADMM` (see the module docstring)


class Factorization(Choice):
    """How ADMM solves with ``G + R + ρI``: one eigendecomposition (``EIGH``) or Cholesky
    factorisations refreshed per epoch (``CHOLESKY``, seed 001)."""

    CHOLESKY = "cholesky"
    EIGH = "eigh"


class RhoUpdate(Choice):
    """The proximal-parameter rule (module docstring): ``SPECTRAL`` (the seed's ``ρ κ^{±power}``)
    or ``BALANCED`` (residual balancing)."""

    SPECTRAL = "spectral"
    BALANCED = "balanced"


RHO_UPDATES = tuple(RhoUpdate)
#: largest factor of one residual-balancing ρ update
_BALANCE_MAX_FACTOR = 100.0


def spectral_bounds(matrix: jax.Array, num_iterations: int) -> tuple[jax.Array, jax.Array]:
    """Largest and smallest eigenvalue of a symmetric PSD ``(m, m)`` matrix by power iteration
    (seed 001 §III-E: "κ can be evaluated beforehand via a power-iteration algorithm").

    The smallest comes from power iteration on ``λ_max I − A``. Returns ``(λ_max, λ_min)`` with
    ``λ_min`` clamped to ``[λ_max / 1e8, λ_max]`` (so ``κ ≤ 1e8`` for rank-deficient ``G``).
    """
    return _spectral_bounds(lambda v: matrix @ v, matrix.shape[0], matrix.dtype, num_iterations)


def _spectral_bounds(matvec, m: int, dtype, num_iterations: int):
    """:func:`spectral_bounds` of the operator ``v ↦ matvec(v)`` on ``R^m``."""
    v0 = 1.0 + 0.1 * jnp.sin(jnp.arange(m, dtype=dtype) + 1.0)
    v0 = v0 / jnp.linalg.norm(v0)

    def power(apply):
        def body(_, v):
            w = apply(v)
            nw = jnp.linalg.norm(w)
            return jnp.where(nw > 0, w / jnp.where(nw > 0, nw, 1.0), v0)

        v = jax.lax.fori_loop(0, num_iterations, body, v0)
        return v @ apply(v)

    lmax = jnp.maximum(power(matvec), 0.0)
    lmin = lmax - power(lambda v: lmax * v - matvec(v))
    return _clamp_bounds(lmax, lmin)


def _clamp_bounds(lmax, lmin):
    """``λ_max ≥ tiny`` and ``λ_min ∈ [λ_max / 1e8, λ_max]`` (so ``κ ≤ 1e8``)."""
    lmax = jnp.maximum(lmax, jnp.finfo(lmax.dtype).tiny)
    return lmax, jnp.clip(lmin, lmax / _KAPPA_MAX, lmax)


def adapt_rho(rho, primal_res, dual_res, kappa, ratio, power):
    """Spectral ρ update (seed 001 §III-E): ``ρ κ^power`` if ``primal > ratio·dual``,
    ``ρ / κ^power`` if ``dual > ratio·primal``, else unchanged."""
    factor = kappa**power
    rho = jnp.where(primal_res > ratio * dual_res, rho * factor, rho)
    return jnp.where(dual_res > ratio * primal_res, rho / factor, rho)


def balance_rho(rho, primal_res, dual_res, ratio):
    """Residual-balancing ρ update: ``ρ √(primal / dual)`` (factor clipped to ``[1/100, 100]``)
    when one residual exceeds ``ratio ×`` the other, else ``ρ`` (OSQP's rule, Stellato et al.
    2020 §5.2, with the unscaled ∞-norm residuals of seed 001 §III-E)."""
    tiny = jnp.finfo(jnp.result_type(rho)).tiny
    factor = jnp.sqrt(primal_res / jnp.maximum(dual_res, tiny))
    factor = jnp.clip(factor, 1.0 / _BALANCE_MAX_FACTOR, _BALANCE_MAX_FACTOR)
    unbalanced = (primal_res > ratio * dual_res) | (dual_res > ratio * primal_res)
    return jnp.where(unbalanced, rho * factor, rho)


class ADMMState(eqx.Module):
    """ADMM iterate. ``force`` = ``z`` ``(n, 3)`` (always in ``K_μ``); ``lam``, ``gamma`` ``(3n,)``;
    ``rho`` scalar; ``factor`` Cholesky factor of ``G + R + ρ_f I`` (``(3n, 3n)``) or eigenvectors;
    ``eigenvalues`` ``(3n,)`` (eigh mode only, else zeros); ``factor_rho`` = ``ρ_f``; ``kappa``; ``rho_bounds`` ``(2,)`` = ``λ_max (ε^{2/3}, 10⁶)`` keeps
    ``G + R + ρI`` numerically positive definite. With Anderson acceleration (``anderson_memory
    > 0``): ``anderson`` its history over ``x = (z, γ/ρ)`` and ``next_force``, ``next_gamma`` the
    extrapolated input of the next iteration (``force`` and ``gamma`` stay the plain ADMM image,
    so ``force`` is always in ``K_μ``), ``anderson_rho`` the ρ of that history and
    ``anderson_steps`` the iterations so far; else ``None``."""

    force: jax.Array
    lam: jax.Array
    gamma: jax.Array
    rho: jax.Array
    factor: jax.Array
    eigenvalues: jax.Array
    factor_rho: jax.Array
    kappa: jax.Array
    rho_bounds: jax.Array
    anderson: AndersonHistory | None = None
    next_force: jax.Array | None = None
    next_gamma: jax.Array | None = None
    anderson_rho: jax.Array | None = None
    anderson_steps: jax.Array | None = None


class ADMM(ContactSolver):
    """ADMM contact solver (seed 001 Alg. 3 for ``"ccp"``; De Saxcé fixed point for ``"ncp"``).

    Args:
      formulation: ``"ccp"`` or ``"ncp"`` (static; else ``ValueError``).
      max_iterations: static cap.
      tolerance: dynamic; stop when the formulation's ``ε_abs`` at ``z`` is ``≤ tolerance``.
      rho: dynamic initial ρ; ``≤ 0`` (default) means spectral ``√(λ_max λ_min)``. A warm start
        from a previous solution reuses its final ρ (seed 001 §III-E).
      over_relaxation: dynamic ``α ∈ (0, 2)``, default 1.
      rho_update_ratio: dynamic primal/dual ratio that triggers an update (default 10).
      rho_power: dynamic spectral exponent (default 0.05, i.e. ``ρ ← ρ κ^{±0.05}``).
      rho_update: static ``"spectral"`` (default, the seed's ``ρ κ^{±power}``) or ``"balanced"``
        (``ρ √(primal/dual)``, see the module docstring; the default of ``jc.Options``).
      power_iterations: static number of power iterations for ``λ_max``, ``λ_min`` (default 50).
      factorization: static ``"eigh"`` (default: one eigendecomposition ``G + R = Q Λ Qᵀ``, after
        which a solve with any ρ is two mat-vecs; κ is read off the exact eigenvalues) or
        ``"cholesky"`` (seed 001: Cholesky of ``G + R + ρI``; κ from power iteration). When the
        problem carries a factor ``G = B Bᵀ`` of rank ``k < 3n`` (``delassus_factor``; the step
        passes ``B = J L⁻ᵀ``, ``k = nv``), the Cholesky variant factorises ``I + Bᵀ D⁻¹ B``
        (``k × k``, ``D = diag(R) + ρI``) and solves through the Woodbury identity, and its
        mat-vecs cost ``O(3n k)``: for a quadruped (``nv = 18``, 68 slots) that is an 18 × 18
        factorisation instead of 204 × 204.
      refactor_every: static, Cholesky only (default 1). ρ adapts at most every ``refactor_every``
        iterations: the driver runs epochs of that many iterations and refactors once at the
        start of each (:meth:`refresh`), with the ρ proposed by the last iteration of the previous
        epoch. ``1`` is the seed's per-iteration update. Refactoring "only when ρ changed" inside
        one loop does not help under ``vmap`` (the ``cond`` becomes a select that factorises every
        iteration, which costs many times a solve with a fixed factor).
      first_refactor: static, Cholesky only; ``None`` (default) means ``refactor_every``. The
        first epoch's length: the first ρ update then comes after ``first_refactor`` iterations
        and later ones every ``refactor_every`` (seed 001 §III-E adapts ρ from the first
        iterations on; the initial ρ, spectral or warm-started, is the one furthest from the
        problem's). The step's default keeps ``None``; ``5`` with ``refactor_every=10`` is measured
        in ``benchmarks/results/admm_epoch_length.md``.
      Box and bilateral slots (``ContactProblem.num_box`` / ``num_bilateral``: dry friction and
      equality constraints) take their own projection in the ``z`` update
      (:meth:`ContactProblem.project`: a clip, the identity), so the fixed point solves the
      variational inequality ``|λ| ≤ b`` and ``σ = 0`` on those rows (their ``μ = 0`` makes
      the De Saxcé term vanish there).
      anderson_memory: static, default 0 (off). ``m > 0``: type-II Anderson acceleration of the
        ADMM map ``(z, γ) ↦ (z⁺, γ⁺)`` over the last ``m`` iterations (``jaxsim_contact.contact.
        anderson``), its history cleared whenever the iteration's ρ changes (a new ρ is a new
        map), for the first ``max_iterations // 2`` iterations (plain ADMM after that).
      polish: static, default True. A solve that reaches ``max_iterations`` above the tolerance
        is polished from its best iterate (:mod:`._polish`: the contact modes of that iterate
        fixed, the resulting linear conditions solved, kept only if its criterion is lower).
    """

    formulation: str = eqx.field(static=True)
    max_iterations: int = eqx.field(static=True)
    power_iterations: int = eqx.field(static=True)
    factorization: str = eqx.field(static=True)
    refactor_every: int = eqx.field(static=True)
    first_refactor: int | None = eqx.field(static=True)
    rho_update: str = eqx.field(static=True)
    anderson_memory: int = eqx.field(static=True)
    polish: bool = eqx.field(static=True)
    tolerance: jax.Array
    rho_init: jax.Array
    over_relaxation: jax.Array
    rho_update_ratio: jax.Array
    rho_power: jax.Array

    def __init__(self, formulation: str = "ncp", max_iterations: int = 1000, tolerance=1e-6,
                 rho=0.0, over_relaxation=1.0, rho_update_ratio=10.0, rho_power=0.05,
                 power_iterations: int = 50, factorization: str = "eigh", refactor_every: int = 1,
                 rho_update: str = "spectral", anderson_memory: int = 0, polish: bool = True,
                 first_refactor: int | None = None):
        formulation = Formulation.parse(formulation, "ADMM formulation", (Formulation.CCP, Formulation.NCP))
        factorization = Factorization.parse(factorization, "ADMM factorization")
        rho_update = RhoUpdate.parse(rho_update, "ADMM rho_update")
        if int(max_iterations) < 1:
            raise ValueError(f"max_iterations must be >= 1, got {max_iterations}")
        if int(refactor_every) < 1:
            raise ValueError(f"refactor_every must be >= 1, got {refactor_every}")
        if first_refactor is not None and (
                isinstance(first_refactor, bool) or not isinstance(first_refactor, numbers.Integral)
                or first_refactor < 1):
            raise ValueError(f"first_refactor must be None or an int >= 1, got {first_refactor!r}")
        if (isinstance(anderson_memory, bool) or not isinstance(anderson_memory, numbers.Integral)
                or anderson_memory < 0):
            raise ValueError(f"anderson_memory must be an int >= 0, got {anderson_memory!r}")
        self.formulation = formulation
        self.max_iterations = int(max_iterations)
        self.power_iterations = int(power_iterations)
        self.factorization = factorization
        self.refactor_every = int(refactor_every)
        self.first_refactor = None if first_refactor is None else int(first_refactor)
        self.rho_update = rho_update
        self.anderson_memory = int(anderson_memory)
        if not isinstance(polish, bool):
            raise ValueError(f"polish must be True or False, got {polish!r}")
        self.polish = polish
        self.tolerance = jnp.asarray(tolerance)
        self.rho_init = jnp.asarray(rho)
        self.over_relaxation = jnp.asarray(over_relaxation)
        self.rho_update_ratio = jnp.asarray(rho_update_ratio)
        self.rho_power = jnp.asarray(rho_power)

    def replace(self, **changes) -> "ADMM":
        """A copy with ``changes`` (constructor arguments, e.g. ``max_iterations=500`` or
        ``rho=1.0``), validated as by the constructor; unknown names raise ``TypeError``."""
        arguments = dict(formulation=self.formulation, max_iterations=self.max_iterations,
                         tolerance=self.tolerance, rho=self.rho_init,
                         over_relaxation=self.over_relaxation,
                         rho_update_ratio=self.rho_update_ratio, rho_power=self.rho_power,
                         power_iterations=self.power_iterations, factorization=self.factorization,
                         refactor_every=self.refactor_every,
                         first_refactor=self.first_refactor, rho_update=self.rho_update,
                         anderson_memory=self.anderson_memory, polish=self.polish)
        unknown = set(changes) - set(arguments)
        if unknown:
            raise TypeError(f"ADMM.replace got unknown arguments {sorted(unknown)}; "
                            f"expected some of {sorted(arguments)}")
        return ADMM(**{**arguments, **changes})

    @property
    def polishes(self) -> bool:
        return self.polish

    # -- linear algebra ------------------------------------------------------------------------

    def _low_rank(self, problem: ContactProblem) -> bool:
        """Static: the Cholesky variant on a problem that carries ``G = B Bᵀ`` with ``k < 3n``
        works through the Woodbury identity (a ``k × k`` factorisation instead of ``3n × 3n``)."""
        B = problem.delassus_factor
        return self.factorization == "cholesky" and B is not None and B.shape[1] < B.shape[0]

    @staticmethod
    def _low_rank_diagonal(problem: ContactProblem) -> jax.Array:
        """``d`` with ``G + R = B Bᵀ + diag(d)``: ``R`` on active rows, 1 on the identity rows of
        inactive contacts (see ``sanitize_problem``); clipped at 0 against round-off."""
        B = problem.delassus_factor
        return jnp.maximum(jnp.diagonal(problem.compliant_delassus) - jnp.sum(B * B, axis=1), 0.0)

    def _matvec(self, problem: ContactProblem, x: jax.Array) -> jax.Array:
        """``(G + R) x``; ``O(3n k)`` through the factor when :meth:`_low_rank`."""
        if self._low_rank(problem):
            B = problem.delassus_factor
            return B @ (B.T @ x) + self._low_rank_diagonal(problem) * x
        return problem.compliant_delassus @ x

    def _factor(self, problem: ContactProblem, rho):
        if self._low_rank(problem):
            # Woodbury: (B Bᵀ + D)⁻¹ = D⁻¹ − D⁻¹ B (I + Bᵀ D⁻¹ B)⁻¹ Bᵀ D⁻¹, D = diag(d) + ρI.
            B = problem.delassus_factor
            k = B.shape[1]
            D = self._low_rank_diagonal(problem) + rho
            return jnp.linalg.cholesky(jnp.eye(k, dtype=B.dtype) + B.T @ (B / D[:, None]))
        A = problem.compliant_delassus
        m = A.shape[0]
        return jnp.linalg.cholesky(A + rho * jnp.eye(m, dtype=A.dtype))

    def _solve(self, problem: ContactProblem, state, rho, rhs):
        if self.factorization == "eigh":
            Q = state.factor
            return Q @ ((Q.T @ rhs) / (state.eigenvalues + rho))
        if self._low_rank(problem):
            B = problem.delassus_factor
            D = self._low_rank_diagonal(problem) + rho

            def woodbury(r):
                x = r / D
                return x - (B @ jsl.cho_solve((state.factor, True), B.T @ x)) / D

            # I + Bᵀ D⁻¹ B has condition ~ ‖G‖ / ρ (up to 1e4-1e6 with the spectral ρ₀ of a
            # rank-deficient G), so one Woodbury solve loses that factor of accuracy; one step
            # of iterative refinement (two O(3n k) mat-vecs) restores it — the step's tight-
            # tolerance tests (1e-12) need it.
            x = woodbury(rhs)
            return x + woodbury(rhs - (B @ (B.T @ x) + D * x))
        return jsl.cho_solve((state.factor, True), rhs)

    # -- protocol ------------------------------------------------------------------------------

    def init(self, problem: ContactProblem, warm_force, warm_rho):
        m = problem.free_velocity.shape[0]
        dtype = problem.free_velocity.dtype
        if self.factorization == "eigh":
            evals, Q = jnp.linalg.eigh(problem.compliant_delassus)
            evals = jnp.maximum(evals, 0.0)
            # The decomposition already holds the exact extreme eigenvalues: no power iteration
            # (2 × power_iterations mat-vecs per solve, a third of the setup cost at 44 contacts).
            lmax, lmin = _clamp_bounds(evals[-1], evals[0])
        else:
            lmax, lmin = _spectral_bounds(lambda x: self._matvec(problem, x), m, dtype,
                                          self.power_iterations)
        kappa = lmax / lmin
        rho_user = jnp.asarray(self.rho_init, dtype)
        rho = jnp.where(rho_user > 0, rho_user, jnp.sqrt(lmax * lmin))
        rho = jnp.where(warm_rho > 0, warm_rho, rho)
        bounds = lmax * jnp.asarray([jnp.finfo(dtype).eps ** (2.0 / 3.0), 1e6], dtype)
        rho = jnp.clip(rho, bounds[0], bounds[1])
        if self.factorization == "eigh":
            factor, eigenvalues = Q, evals
        else:
            # Factorised by the driver's first `refresh`, before any `step`.
            k = problem.delassus_factor.shape[1] if self._low_rank(problem) else m
            factor, eigenvalues = jnp.zeros((k, k), dtype), jnp.zeros((m,), dtype)
        z = problem.project(warm_force)
        sigma = (self._matvec(problem, z.reshape(m)) + problem.free_velocity).reshape(-1, 3)
        # Warm dual: γ = −(σ + Γ(σ)) is the fixed-point value (see module docstring).
        s = sigma + de_saxce(sigma, problem.friction) if self.formulation == "ncp" else sigma
        gamma = -s.reshape(m)
        state = ADMMState(z, z.reshape(m), gamma, rho, factor, eigenvalues, rho, kappa, bounds)
        if self.anderson_memory:
            state = eqx.tree_at(
                lambda s: (s.anderson, s.next_force, s.next_gamma, s.anderson_rho,
                           s.anderson_steps), state,
                (anderson_init(self.anderson_memory, 2 * m, dtype), z, gamma, rho,
                 jnp.zeros((), jnp.int32)),
                is_leaf=lambda x: x is None)
        return state

    @property
    def epoch_length(self) -> int:
        """Iterations between :meth:`refresh` calls (0: the eigh variant needs none)."""
        return self.refactor_every if self.factorization == "cholesky" else 0

    @property
    def first_epoch_length(self) -> int:
        """Iterations before the first ρ update (``first_refactor``, else ``refactor_every``)."""
        if self.factorization != "cholesky":
            return 0
        return self.refactor_every if self.first_refactor is None else self.first_refactor

    def refresh(self, problem: ContactProblem, state: ADMMState) -> ADMMState:
        """Cholesky variant: factorise ``G + R + ρI`` with the ρ proposed so far."""
        factor = self._factor(problem, state.rho)
        return eqx.tree_at(lambda s: (s.factor, s.factor_rho), state, (factor, state.rho))

    def step(self, problem: ContactProblem, state: ADMMState) -> ADMMState:
        m = problem.free_velocity.shape[0]
        mu = problem.friction
        # Cholesky: iterate with the factorised ρ; the adapted ρ waits for the next refresh.
        rho = state.factor_rho if self.factorization == "cholesky" else state.rho
        if self.anderson_memory:
            z, gamma = state.next_force.reshape(m), state.next_gamma
        else:
            z, gamma = state.force.reshape(m), state.gamma
        q = problem.free_velocity
        if self.formulation == "ncp":
            q = q + de_saxce(-gamma.reshape(-1, 3), mu).reshape(m)
        lam = -self._solve(problem, state, rho, q - rho * z + gamma)
        alpha = jnp.asarray(self.over_relaxation, lam.dtype)
        lam_hat = alpha * lam + (1.0 - alpha) * z
        z_new = problem.project((lam_hat + gamma / rho).reshape(-1, 3)).reshape(m)
        gamma_new = gamma + rho * (lam_hat - z_new)
        primal_res = jnp.max(jnp.abs(lam - z_new))
        dual_res = rho * jnp.max(jnp.abs(z_new - z))
        if self.rho_update == "balanced":
            new_rho = balance_rho(rho, primal_res, dual_res, self.rho_update_ratio)
        else:
            new_rho = adapt_rho(rho, primal_res, dual_res, state.kappa, self.rho_update_ratio,
                                self.rho_power)
        new_rho = jnp.clip(new_rho, state.rho_bounds[0], state.rho_bounds[1])
        new_rho = jnp.where(jnp.isfinite(new_rho), new_rho, rho)
        if self.anderson_memory:
            # A new ρ is a new map: its history no longer applies.
            history = anderson_reset(state.anderson, rho != state.anderson_rho)
            # x = (z, γ/ρ): both halves in force units, so the least squares weighs them alike
            image = jnp.concatenate([z_new, gamma_new / rho])
            x_next, history = anderson_step(history, jnp.concatenate([z, gamma / rho]), image)
            # Extrapolation is a speed-up and must not cost convergence: on the few problems
            # where it keeps being rejected, the second half of the budget runs plain ADMM (as
            # GJK drops its momentum after half its budget).
            plain = state.anderson_steps >= self.max_iterations // 2
            x_next = jnp.where(plain, image, x_next)
            state = eqx.tree_at(
                lambda s: (s.anderson, s.next_force, s.next_gamma, s.anderson_rho,
                           s.anderson_steps), state,
                (history, x_next[:m].reshape(-1, 3), x_next[m:] * rho, rho,
                 state.anderson_steps + 1))
        return eqx.tree_at(
            lambda s: (s.force, s.lam, s.gamma, s.rho),
            state,
            (z_new.reshape(-1, 3), lam, gamma_new, new_rho),
        )

    def _residuals(self, problem, state) -> Residuals:
        """Per-contact ``(ε_p, ε_d, ε_c)``, each ``(n,)``."""
        velocity = None
        if self._low_rank(problem):  # σ = (G + R) λ + g through the factor, O(3n k)
            n = problem.num_contacts
            velocity = (self._matvec(problem, state.force.reshape(3 * n))
                        + problem.free_velocity).reshape(n, 3)
        return contact_residuals(problem, state.force, self.formulation, velocity)

    def criterion(self, problem, state):
        r = self._residuals(problem, state)
        return jnp.max(jnp.maximum(jnp.maximum(r.primal, r.dual), r.complementarity), initial=0.0)

    def _abs_products(self, problem, force):
        """``|G + R| |λ|`` ``(3n,)``; through the factor the bound ``|B| (|B|ᵀ |λ|) + d |λ|``,
        ``O(3n k)``."""
        lam = jnp.abs(force.reshape(-1))
        if self._low_rank(problem):
            B = jnp.abs(problem.delassus_factor)
            return B @ (B.T @ lam) + self._low_rank_diagonal(problem) * lam
        return jnp.abs(problem.compliant_delassus) @ lam

    def at_precision_limit(self, problem, state):
        """Every term of every contact's criterion is at or below the tolerance or its dtype's
        round-off floor (``round_off_floors``): in float32 the 1e-6 tolerance is below what
        ``σ`` can resolve on most multibody problems, and without this test ADMM ran to its
        cap."""
        r = self._residuals(problem, state)
        floors = round_off_floors(problem, state.force, self._abs_products(problem, state.force))
        tol = jnp.asarray(self.tolerance, r.primal.dtype)
        return jnp.all((r.primal <= jnp.maximum(floors.primal, tol))
                       & (r.dual <= jnp.maximum(floors.dual, tol))
                       & (r.complementarity <= jnp.maximum(floors.complementarity, tol)))

    def rho(self, state):
        return state.rho
