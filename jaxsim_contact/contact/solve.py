"""Shared solver protocol and the driver :func:`solve` (seed 001 §III).

Every solver is an ``eqx.Module`` with static iteration caps / formulation choice and dynamic
numeric parameters, implementing four pure functions:

* ``init(problem, warm_force, warm_rho) -> state`` — a pytree holding at least ``force (n, 3)``
  (``init_with_primal`` adds a guess of the primal variable; solvers without one ignore it);
* ``step(problem, state) -> state`` — one iteration (``gradient="unrolled"`` scans over it);
* ``force(problem, state) -> (n, 3)`` — the current force estimate;
* ``criterion(problem, state) -> scalar`` — the termination criterion (seed 001 eq. 15 variant).

Optionally ``at_precision_limit(problem, state) -> bool``: the iterate is as accurate as the
solver's arithmetic allows (default ``False``); the driver then stops and reports convergence
even if the criterion is above the tolerance (``PrimalNewton``: its gradient is at its round-off
floor, see :mod:`.newton`).

:func:`solve` sanitises the problem (inactive contacts decoupled and pinned to ``λ = 0``,
non-finite problems replaced by a harmless one), runs ``lax.while_loop`` bounded by
``max_iterations`` with a ``done`` flag in the carry (finished lanes freeze under ``vmap``), and
packs a :class:`ContactSolution`. Derivatives (seed 004 §III-B): by default the returned force
carries the implicit rule of :mod:`.implicit` (the loop itself is not differentiated);
``gradient="unrolled"`` instead runs ``lax.scan`` over ``max_iterations`` steps and lets autodiff
go through them.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from .implicit import GRADIENTS, implicit_force
from .problem import ContactProblem, Residuals, contact_residuals
from .randomized import RandomizedSmoothing, randomized_force
from .relaxed import RelaxedComplementarity, smoothed_force

__all__ = ["ContactSolver", "ContactSolution", "solve", "sanitize_problem", "GRADIENTS"]


class ContactSolver(eqx.Module):
    """Abstract solver protocol (see module docstring). Subclasses define ``max_iterations``
    (static int), ``tolerance`` (dynamic scalar) and ``formulation`` (static str)."""

    def init(self, problem: ContactProblem, warm_force: jax.Array, warm_rho: jax.Array):
        raise NotImplementedError

    def init_with_primal(self, problem: ContactProblem, warm_force: jax.Array,
                         warm_rho: jax.Array, warm_primal: jax.Array | None):
        """:meth:`init` given also a guess ``warm_primal`` ``(k,)`` of the primal variable
        ``Bᵀ λ`` (``B`` ``(3n, k)`` the problem's ``delassus_factor``); solvers without a primal
        variable ignore it (default)."""
        return self.init(problem, warm_force, warm_rho)

    def step(self, problem: ContactProblem, state):
        raise NotImplementedError

    def force(self, problem: ContactProblem, state) -> jax.Array:
        return state.force

    def criterion(self, problem: ContactProblem, state) -> jax.Array:
        raise NotImplementedError

    @property
    def epoch_length(self) -> int:
        """``k > 0``: the driver calls :meth:`refresh` once every ``k`` iterations (at the start of
        each epoch), e.g. to refactor a matrix; ``0`` (default): never."""
        return 0

    def refresh(self, problem: ContactProblem, state):
        """Per-epoch work hoisted out of ``step`` (see :attr:`epoch_length`)."""
        return state

    def at_precision_limit(self, problem: ContactProblem, state) -> jax.Array:
        """True when the iterate is as accurate as round-off allows (see module docstring)."""
        return jnp.zeros((), bool)

    def rho(self, state) -> jax.Array:
        """Final proximal parameter (ADMM-type solvers); 0 otherwise."""
        return jnp.zeros((), state.force.dtype)

    @property
    def residual_formulation(self) -> str:
        """Formulation whose criteria are reported in :class:`ContactSolution` residuals."""
        return self.formulation


class ContactSolution(eqx.Module):
    """Result of :func:`solve`.

    Fields:
      force: ``(n, 3)`` contact forces (impulses if the problem is in impulses), frame (t1, t2, n);
        zero for inactive contacts and for non-finite problems.
      velocity: ``(n, 3)`` contact velocity ``G λ + g`` (without compliance).
      iterations: int32 scalar, iterations performed.
      converged: bool scalar, criterion ≤ tolerance, or the solver's iterate at its round-off
        limit (``PrimalNewton``, see :mod:`.newton`); False for non-finite problems.
      criterion: the solver's termination criterion at the returned force.
      primal, dual, complementarity: maxima of the per-contact criteria of the solver's
        formulation (seed 001 eq. 15; CCP / LCP variants), see ``residual_formulation``.
      rho: final ADMM proximal parameter (reusable as warm start), 0 for other solvers.
    """

    force: jax.Array
    velocity: jax.Array
    iterations: jax.Array
    converged: jax.Array
    criterion: jax.Array
    primal: jax.Array
    dual: jax.Array
    complementarity: jax.Array
    rho: jax.Array

    @property
    def residuals(self) -> Residuals:
        return Residuals(self.primal, self.dual, self.complementarity)


def sanitize_problem(problem: ContactProblem) -> tuple[ContactProblem, jax.Array]:
    """Return ``(safe_problem, finite)``.

    Inactive contacts get identity Delassus blocks, zero coupling, zero free velocity and zero
    compliance, so every formulation yields ``λ = 0`` for them. A non-finite problem is replaced by
    ``G = I, g = 0`` (solution ``λ = 0``); ``finite`` is the scalar flag.
    """
    finite = problem.is_finite()
    n = problem.num_contacts
    dtype = problem.delassus.dtype
    rows = jnp.repeat(problem.active, 3)
    eye = jnp.eye(3 * n, dtype=dtype)
    G = jnp.where(rows[:, None] & rows[None, :], problem.delassus, 0.0)
    G = jnp.where(rows[:, None] | rows[None, :], G, eye)
    g = jnp.where(rows, problem.free_velocity, 0.0)
    R = jnp.where(rows, problem.compliance, 0.0)
    mu = jnp.where(problem.active, problem.friction, 0.0)
    G = jnp.where(finite, G, eye)
    g = jnp.where(finite, g, 0.0)
    R = jnp.where(finite, R, 0.0)
    mu = jnp.where(finite, mu, 0.0)
    # a non-finite problem has no active contact (its safe G is the identity, B is zero)
    active = problem.active & finite
    safe = eqx.tree_at(
        lambda p: (p.delassus, p.free_velocity, p.compliance, p.friction, p.active), problem,
        (G, g, R, mu, active)
    )
    if problem.delassus_factor is not None:
        # G_safe = B_s B_sᵀ + diag(1 − rows): inactive rows of B vanish, and the identity blocks
        # of inactive contacts are diagonal (solvers using B recover them from diag(G_safe)).
        B = jnp.where(rows[:, None] & finite, problem.delassus_factor, 0.0)
        safe = eqx.tree_at(lambda p: p.delassus_factor, safe, B)
    return safe, finite


def _warm(problem: ContactProblem, warm_start):
    n = problem.num_contacts
    dtype = problem.delassus.dtype
    if warm_start is None:
        return jnp.zeros((n, 3), dtype), jnp.zeros((), dtype)
    if isinstance(warm_start, ContactSolution):
        force, rho = warm_start.force, warm_start.rho
    else:
        force, rho = warm_start, jnp.zeros((), dtype)
    force = jnp.asarray(force, dtype).reshape(n, 3)
    force = jnp.where(jnp.isfinite(force), force, 0.0)
    rho = jnp.asarray(rho, dtype)
    rho = jnp.where(jnp.isfinite(rho) & (rho > 0), rho, 0.0)
    return force, rho


def _warm_primal(problem: ContactProblem, warm_primal):
    if warm_primal is None or problem.delassus_factor is None:
        return None
    k = problem.delassus_factor.shape[1]
    warm_primal = jnp.asarray(warm_primal, problem.delassus.dtype)
    if warm_primal.shape != (k,):
        raise ValueError(f"warm_primal must have shape ({k},) (the columns of the problem's "
                         f"delassus_factor), got {warm_primal.shape}")
    return jnp.where(jnp.isfinite(warm_primal), warm_primal, 0.0)


def _unrolled_solver(solver: ContactSolver) -> ContactSolver:
    """The solver used for unrolled gradients: ADMM with ``factorization="eigh"`` becomes the
    Cholesky variant (the same fixed point; κ from power iteration and ρ adapted per epoch, so the
    iterates differ slightly), because the derivative
    of an eigendecomposition is NaN at repeated eigenvalues (symmetric contact layouts, identity
    blocks of inactive contacts) while the Cholesky factor's is not."""
    from .admm import ADMM

    if isinstance(solver, ADMM) and solver.factorization == "eigh":
        return solver.replace(factorization="cholesky")
    return solver


class _Loop:
    """The iteration of :func:`_iterate` on one problem, in three pieces that a driver composes:
    ``start(state0, crit0) -> carry``, ``advance(carry) -> carry`` (one epoch: ``refresh`` then
    ``epoch_length`` steps, or one step for a solver without epochs) and
    ``finish(carry) -> (force, rho, iterations, done, criterion)``. :func:`_iterate` repeats
    ``advance`` on one problem; :func:`~jaxsim_contact.contact.work_queue.solve_batch` on a few lanes
    that it refills with new problems as they finish. A lane that converged or reached
    ``max_iterations`` is frozen by ``advance`` (its carry stops changing)."""

    def __init__(self, solver: ContactSolver, safe: ContactProblem, unrolled: bool):
        self.solver, self.safe, self.unrolled = solver, safe, unrolled

    @property
    def steps_per_advance(self) -> int:
        return max(self.solver.epoch_length, 1)

    @property
    def max_advances(self) -> int:
        return -(-self.solver.max_iterations // self.steps_per_advance)

    def _result(self, state):
        return self.solver.force(self.safe, state), self.solver.rho(state)

    # The best iterate so far: ``_track`` makes its initial value, ``_keep_best`` updates it and
    # ``_best_result`` turns the final one into the (force, rho) the caller reads.
    def _track(self, state):
        if self.solver.epoch_length > 0:
            # With epochs (ADMM) only (force, rho) are tracked: selecting every state leaf (a
            # factorisation, Anderson's history) each iteration made XLA carry and copy all of
            # them (44 select kernels per ADMM iteration in a tower step; tower and humanoid steps
            # 6-9 % faster without).
            return self._result(state)
        # Without epochs the whole state, except leaves that step passes through unchanged (the
        # same traced value: a factor or scaling stored in the state, then the same in every
        # iterate); tracking (force, rho) alone measured 3-10 % slower for PrimalNewton
        # (humanoid, batch 1).
        return state

    def _keep_best(self, better, best, new, state):
        if self.solver.epoch_length > 0:
            return _freeze(~better, best, self._result(new))
        return jax.tree_util.tree_map(lambda b, n, s: b if n is s else jnp.where(better, n, b),
                                      best, new, state)

    def _best_result(self, best):
        return best if self.solver.epoch_length > 0 else self._result(best)

    def start(self, state0, crit0):
        tol = jnp.asarray(self.solver.tolerance, crit0.dtype)
        crit0 = jnp.where(jnp.isfinite(crit0), crit0, jnp.inf)
        return (state0, jnp.zeros((), jnp.int32), crit0 <= tol, crit0, self._track(state0), crit0)

    def _step(self, carry):
        solver, safe = self.solver, self.safe
        state, it, done, crit, best, best_crit = carry
        frozen = done | (it >= solver.max_iterations)
        new = solver.step(safe, state)
        new_crit = solver.criterion(safe, new)
        new_crit = jnp.where(jnp.isfinite(new_crit), new_crit, jnp.inf)
        better = ~frozen & (new_crit < best_crit)
        best = self._keep_best(better, best, new, state)
        state = _freeze(frozen, state, new)
        crit = jnp.where(frozen, crit, new_crit)
        it = jnp.where(frozen, it, it + 1)
        tol = jnp.asarray(solver.tolerance, crit.dtype)
        done = done | (crit <= tol) | (~frozen & solver.at_precision_limit(safe, new))
        best_crit = jnp.where(better, new_crit, best_crit)
        return state, it, done, crit, best, best_crit

    def advance(self, carry):
        epoch = self.solver.epoch_length
        if epoch == 0:
            return self._step(carry)
        state, it, done, crit, best, best_crit = carry
        state = _freeze(done, state, self.solver.refresh(self.safe, state))
        carry = (state, it, done, crit, best, best_crit)
        if self.unrolled:
            return jax.lax.scan(lambda c, _: (self._step(c), None), carry, None, length=epoch)[0]
        return jax.lax.fori_loop(0, epoch, lambda _, c: self._step(c), carry)

    def finished(self, carry):
        _, it, done, *_ = carry
        return done | (it >= self.solver.max_iterations)

    def finish(self, carry):
        # Stopped by the cap: the iterate with the lowest criterion seen, not the last one (a
        # non-monotone method — ADMM on the NCP, and more so with Anderson extrapolation — can
        # end far above its best). Converged: the last iterate is the first at the tolerance,
        # hence best.
        _, it, done, _, best, best_crit = carry
        force, rho = self._best_result(best)
        return force, rho, it, done, best_crit


def _freeze(keep, old, new):
    # Frozen lanes keep their state (explicit mask; also what vmap's select does).
    return jax.tree_util.tree_map(lambda a, b: a if a is b else jnp.where(keep, a, b), old, new)


def _iterate(solver, safe, state0, crit0, unrolled: bool):
    """Run ``solver.step`` until the criterion is ``≤ tolerance``, the solver reports its
    precision limit, or ``max_iterations``.

    ``unrolled=False``: ``lax.while_loop`` (not differentiable in reverse mode; the implicit rule
    provides derivatives). ``unrolled=True``: ``lax.scan`` over exactly ``max_iterations`` steps,
    converged iterates frozen by the ``done`` mask, so autodiff goes through every step taken.
    A solver with ``epoch_length = k > 0`` runs in epochs: ``refresh`` once, then ``k`` steps
    (an inner fixed-length loop), so per-epoch work such as a refactorisation is paid once per
    ``k`` iterations even under ``vmap``, where a per-step ``cond`` would execute both branches.
    Returns ``(force, rho, iterations, done, criterion)``: ``solver.force`` and ``solver.rho`` of
    the last iterate when converged, else of the iterate with the lowest criterion seen (and that
    criterion).
    """
    loop = _Loop(solver, safe, unrolled)
    carry = loop.start(state0, crit0)
    if unrolled:
        carry, _ = jax.lax.scan(lambda c, _: (loop.advance(c), None), carry, None,
                                length=loop.max_advances)
    else:
        carry = jax.lax.while_loop(lambda c: ~loop.finished(c), loop.advance, carry)
    return loop.finish(carry)


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
          :mod:`jaxsim_contact.contact.implicit` (NCP: breaking / sticking / sliding, seed 004
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
        * a :class:`~jaxsim_contact.contact.relaxed.RelaxedComplementarity` (``"smoothed"``,
          seed 002 §V-D): the force is the same exact solution as with ``"implicit"``; its
          derivative is that of the relaxed-complementarity solution ``λ_ρ`` (``λ ∘ σ̄ = ρ e``),
          smooth through contact make/break and stick/slip, also w.r.t. ``ρ``. NCP and CCP
          formulations only (``ValueError`` otherwise).
        * a :class:`~jaxsim_contact.contact.randomized.RandomizedSmoothing` (``"smoothed"``,
          seed 000 §III-A): the force is again the exact solution; its derivative is the average
          of the exact implicit derivatives at ``num_samples`` problems whose free velocity ``g``
          is perturbed by ``noise_scale · z_j`` (``z_j`` drawn from the rule's ``key``), each
          re-solved (warm-started from the exact solution) only when a derivative is taken.
          NCP, CCP and LCP formulations (``ValueError`` for Raisim).
    Returns:
      :class:`ContactSolution`. jit- and vmap-compatible; never NaN: non-finite problems give
      zero force, zero derivatives and ``converged=False``.
    """
    solver = _checked(solver, gradient)
    unrolled = gradient == "unrolled"
    safe, finite = sanitize_problem(problem)
    if unrolled:
        solver = _unrolled_solver(solver)
        loop_safe, loop_solver, loop_warm, loop_primal = safe, solver, warm_start, warm_primal
    else:
        # The loop is never differentiated: derivatives come from the implicit rule below.
        loop_safe, loop_solver, loop_warm, loop_primal = jax.lax.stop_gradient(
            (safe, solver, warm_start, warm_primal))
    state0, crit0 = _initial_state(problem, loop_safe, loop_solver, loop_warm, loop_primal)
    loop_result = _iterate(loop_solver, loop_safe, state0, crit0, unrolled)
    return _solution(problem, safe, finite, solver, loop_solver, gradient, *loop_result)


def _checked(solver, gradient) -> ContactSolver:
    """The solver to use (the default when ``None``) after validating ``gradient`` (static)."""
    relaxed = isinstance(gradient, RelaxedComplementarity)
    randomized = isinstance(gradient, RandomizedSmoothing)
    if not (relaxed or randomized) and (not isinstance(gradient, str) or gradient not in GRADIENTS):
        raise ValueError(
            f"gradient must be one of {GRADIENTS}, a jc.contact.RelaxedComplementarity(relaxation=ρ) "
            "or a jc.contact.RandomizedSmoothing(key, noise_scale) (the 'smoothed' rules), got "
            f"{gradient!r}")
    if solver is None:
        from .admm import ADMM

        solver = ADMM(formulation="ncp")
    if relaxed or randomized:
        gradient.check_formulation(solver.formulation)
    return solver


def _initial_state(problem, loop_safe, loop_solver, loop_warm, loop_primal):
    """``(state0, crit0)`` of the iteration on one problem from its warm start."""
    warm_force, warm_rho = _warm(problem, loop_warm)
    warm_force = jnp.where(jnp.repeat(problem.active, 3).reshape(-1, 3), warm_force, 0.0)
    state0 = loop_solver.init_with_primal(loop_safe, warm_force, warm_rho,
                                          _warm_primal(problem, loop_primal))
    return state0, loop_solver.criterion(loop_safe, state0)


def _solution(problem, safe, finite, solver, loop_solver, gradient, force, final_rho, iters, done,
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
    elif not unrolled:
        # Attach the implicit derivative; sanitising outside the rule masks the tangents of
        # inactive contacts and of non-finite problems by `where` (no NaN can leak).
        force = implicit_force(
            solver.formulation, safe.delassus, safe.free_velocity, safe.friction,
            safe.compliance, safe.active, force,
            jax.lax.stop_gradient(jnp.asarray(solver.tolerance, force.dtype)), safe.delassus_factor)
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
