"""The solve driver's loop (seed 001 §III): iterate a solver until its criterion reaches the
tolerance, it reports its precision limit, or ``max_iterations``.

:class:`Loop` splits one problem's iteration into ``start`` / ``advance`` / ``finish`` so that two
drivers compose it: :func:`iterate` (one problem: ``lax.while_loop``, or ``lax.scan`` for unrolled
derivatives) and :func:`~jaxsim_contact.contact._work_queue.solve_batch` (a few lanes refilled from a
queue of problems). Finished lanes are frozen by a ``done`` mask in the carry (DESIGN §4 "Loops").
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ._problem import ContactProblem
from ._solver import ContactSolution, ContactSolver

__all__ = ["Loop", "iterate", "freeze", "initial_state"]


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


def initial_state(problem, loop_safe, loop_solver, loop_warm, loop_primal):
    """``(state0, crit0)`` of the iteration on one problem from its warm start."""
    warm_force, warm_rho = _warm(problem, loop_warm)
    warm_force = jnp.where(jnp.repeat(problem.active, 3).reshape(-1, 3), warm_force, 0.0)
    state0 = loop_solver.init_with_primal(loop_safe, warm_force, warm_rho,
                                          _warm_primal(problem, loop_primal))
    return state0, loop_solver.criterion(loop_safe, state0)


class Loop:
    """The iteration of :func:`iterate` on one problem, in three pieces that a driver composes:
    ``start(state0, crit0) -> carry``, ``advance(carry) -> carry`` (one epoch: ``refresh`` then
    ``first_epoch_length`` steps if no iteration has been taken yet, else ``epoch_length``; one
    step for a solver without epochs) and
    ``finish(carry) -> (force, rho, iterations, done, criterion)``. :func:`iterate` repeats
    ``advance`` on one problem; :func:`~jaxsim_contact.contact._work_queue.solve_batch` on a few lanes
    that it refills with new problems as they finish. A lane that converged or reached
    ``max_iterations`` is frozen by ``advance`` (its carry stops changing)."""

    def __init__(self, solver: ContactSolver, safe: ContactProblem, unrolled: bool):
        self.solver, self.safe, self.unrolled = solver, safe, unrolled

    @property
    def steps_per_advance(self) -> int:
        return max(self.solver.epoch_length, 1)

    @property
    def max_advances(self) -> int:
        """Advances that reach ``max_iterations`` (the first epoch may be shorter)."""
        solver = self.solver
        if solver.epoch_length == 0:
            return solver.max_iterations
        first = max(solver.first_epoch_length, 1)
        rest = max(solver.max_iterations - first, 0)
        return 1 + -(-rest // self.steps_per_advance)

    @property
    def longest_advance(self) -> int:
        return max(self.steps_per_advance, self.solver.first_epoch_length)

    def _result(self, state):
        return self.solver.force(self.safe, state), self.solver.rho(state)

    # The best iterate so far: ``_track`` makes its initial value, ``_keep_best`` updates it and
    # ``_best_result`` turns the final one into the (force, rho) the caller reads.
    def _track(self, state):
        if self.solver.epoch_length > 0:
            # With epochs (ADMM) only (force, rho) are tracked: selecting every state leaf (a
            # factorisation, Anderson's history) each iteration made XLA carry and copy all of
            # them.
            return self._result(state)
        # Without epochs the whole state, except leaves that step passes through unchanged (the
        # same traced value: a factor or scaling stored in the state, then the same in every
        # iterate); for PrimalNewton that is cheaper than re-deriving the result of (force, rho).
        return state

    def _keep_best(self, better, best, new, state):
        if self.solver.epoch_length > 0:
            return freeze(~better, best, self._result(new))
        return jax.tree_util.tree_map(lambda b, n, s: b if n is s else jnp.where(better, n, b),
                                      best, new, state)

    def _best_result(self, best):
        return best if self.solver.epoch_length > 0 else self._result(best)

    def start(self, state0, crit0):
        tol = jnp.asarray(self.solver.tolerance, crit0.dtype)
        crit0 = jnp.where(jnp.isfinite(crit0), crit0, jnp.inf)
        return (state0, jnp.zeros((), jnp.int32), crit0 <= tol, crit0, self._track(state0), crit0)

    def _step(self, carry, live=None):
        # ``live``: False for the padding steps of an unrolled epoch shorter than the scan
        solver, safe = self.solver, self.safe
        state, it, done, crit, best, best_crit = carry
        frozen = done | (it >= solver.max_iterations)
        if live is not None:
            frozen = frozen | ~live
        new = solver.step(safe, state)
        new_crit = solver.criterion(safe, new)
        new_crit = jnp.where(jnp.isfinite(new_crit), new_crit, jnp.inf)
        better = ~frozen & (new_crit < best_crit)
        best = self._keep_best(better, best, new, state)
        state = freeze(frozen, state, new)
        crit = jnp.where(frozen, crit, new_crit)
        it = jnp.where(frozen, it, it + 1)
        tol = jnp.asarray(solver.tolerance, crit.dtype)
        done = done | (crit <= tol) | (~frozen & solver.at_precision_limit(safe, new))
        best_crit = jnp.where(better, new_crit, best_crit)
        return state, it, done, crit, best, best_crit

    def advance(self, carry):
        solver = self.solver
        epoch, first = solver.epoch_length, solver.first_epoch_length
        if epoch == 0:
            return self._step(carry)
        state, it, done, crit, best, best_crit = carry
        state = freeze(done, state, solver.refresh(self.safe, state))
        carry = (state, it, done, crit, best, best_crit)
        if first == epoch:
            if self.unrolled:
                return jax.lax.scan(lambda c, _: (self._step(c), None), carry, None,
                                    length=epoch)[0]
            return jax.lax.fori_loop(0, epoch, lambda _, c: self._step(c), carry)
        # The epoch's length is data (the first one differs), not a second traced copy of the
        # epoch: under vmap every lane still refreshes once per advance.
        length = jnp.where(it == 0, first, epoch)
        if self.unrolled:
            # A scan needs a static length: the longest epoch, with the steps beyond this
            # epoch's length frozen.
            def body(c, k):
                return self._step(c, k < length), None
            return jax.lax.scan(body, carry, jnp.arange(self.longest_advance))[0]
        return jax.lax.fori_loop(0, length, lambda _, c: self._step(c), carry)

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


def freeze(keep, old, new):
    # Frozen lanes keep their state (explicit mask; also what vmap's select does).
    return jax.tree_util.tree_map(lambda a, b: a if a is b else jnp.where(keep, a, b), old, new)


def iterate(solver, safe, state0, crit0, unrolled: bool):
    """Run ``solver.step`` until the criterion is ``≤ tolerance``, the solver reports its
    precision limit, or ``max_iterations``.

    ``unrolled=False``: ``lax.while_loop`` (not differentiable in reverse mode; the implicit rule
    provides derivatives). ``unrolled=True``: ``lax.scan`` over exactly ``max_iterations`` steps,
    converged iterates frozen by the ``done`` mask, so autodiff goes through every step taken.
    A solver with ``epoch_length = k > 0`` runs in epochs: ``refresh`` once, then ``k`` steps
    (an inner loop; the first epoch has ``first_epoch_length`` steps), so per-epoch work such as a
    refactorisation is paid once per epoch even under ``vmap``, where a per-step ``cond`` would
    execute both branches.
    Returns ``(force, rho, iterations, done, criterion)``: ``solver.force`` and ``solver.rho`` of
    the last iterate when converged, else of the iterate with the lowest criterion seen (and that
    criterion).
    """
    loop = Loop(solver, safe, unrolled)
    carry = loop.start(state0, crit0)
    if unrolled:
        carry, _ = jax.lax.scan(lambda c, _: (loop.advance(c), None), carry, None,
                                length=loop.max_advances)
    else:
        carry = jax.lax.while_loop(lambda c: ~loop.finished(c), loop.advance, carry)
    return loop.finish(carry)
