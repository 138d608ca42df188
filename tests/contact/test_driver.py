"""The solve driver (``jc.contact.solve``) with a scripted solver: it stops at the first iterate
within tolerance and, stopped by the cap, returns the iterate with the lowest criterion seen
(not the last one), under ``jit`` and ``vmap``, in the ``while_loop`` and the unrolled loop."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim_contact as jc

C = jc.contact


class _ScriptState(eqx.Module):
    force: jax.Array
    index: jax.Array


class _Scripted(C.ContactSolver):
    """Iterate ``k`` has force ``script[k] · (0, 0, 1)`` and criterion ``script[k]``."""

    script: jax.Array
    tolerance: jax.Array
    max_iterations: int = eqx.field(static=True)
    formulation: str = eqx.field(static=True, default="ncp")

    def _state(self, index):
        return _ScriptState(jnp.zeros((1, 3)).at[0, 2].set(self.script[index]), index)

    def init(self, problem, warm_force, warm_rho):
        return self._state(jnp.zeros((), jnp.int32))

    def step(self, problem, state):
        return self._state(state.index + 1)

    def criterion(self, problem, state):
        return self.script[state.index]


def _problem():
    return C.ContactProblem(jnp.eye(3), jnp.asarray([0.0, 0.0, -1.0]), jnp.asarray([0.5]))


@pytest.mark.parametrize("gradient", ["implicit", "unrolled"])
def test_cap_returns_the_best_iterate_and_convergence_the_first_within_tolerance(gradient):
    scripts = jnp.asarray([[5.0, 3.0, 4.0, 6.0, 2.5, 7.0, 8.0, 9.0, 9.5],    # cap: best is k = 4
                           [5.0, 3.0, 0.5, 0.1, 9.0, 9.0, 9.0, 9.0, 9.0],    # converges at k = 2
                           [0.2, 9.0, 9.0, 9.0, 9.0, 9.0, 9.0, 9.0, 9.0]])   # converged at start

    def run(script):
        solver = _Scripted(script, jnp.asarray(1.0), max_iterations=8)
        return C.solve(_problem(), solver, gradient=gradient)

    sol = jax.jit(jax.vmap(run))(scripts)
    np.testing.assert_array_equal(sol.criterion, [2.5, 0.5, 0.2])
    np.testing.assert_array_equal(sol.force[:, 0, 2], [2.5, 0.5, 0.2])
    np.testing.assert_array_equal(sol.converged, [False, True, True])
    np.testing.assert_array_equal(sol.iterations, [8, 2, 0])


class _EpochState(eqx.Module):
    force: jax.Array
    index: jax.Array
    refreshes: jax.Array
    last_refresh: jax.Array


class _EpochScripted(C.ContactSolver):
    """Criterion ``script[k]`` at iterate ``k``; the force records the refreshes so far:
    ``(refresh count, iterate of the last refresh, script[k])``."""

    script: jax.Array
    tolerance: jax.Array
    max_iterations: int = eqx.field(static=True)
    epoch: int = eqx.field(static=True)
    first: int = eqx.field(static=True)
    formulation: str = eqx.field(static=True, default="ncp")

    @property
    def epoch_length(self):
        return self.epoch

    @property
    def first_epoch_length(self):
        return self.first

    def _state(self, index, refreshes, last):
        force = jnp.stack([refreshes, last, self.script[index]]).astype(jnp.float32)[None]
        return _EpochState(force, index, refreshes, last)

    def init(self, problem, warm_force, warm_rho):
        zero = jnp.zeros((), jnp.int32)
        return self._state(zero, zero, zero - 1)

    def refresh(self, problem, state):
        return self._state(state.index, state.refreshes + 1, state.index)

    def step(self, problem, state):
        return self._state(state.index + 1, state.refreshes, state.last_refresh)

    def criterion(self, problem, state):
        return self.script[state.index]


@pytest.mark.parametrize("gradient", ["implicit", "unrolled"])
@pytest.mark.parametrize("first, refreshed_at", [(3, [0, 3, 10, 17]), (7, [0, 7, 14])])
def test_epochs_refresh_after_the_first_epoch_then_every_epoch(gradient, first, refreshed_at):
    """A solver with ``first_epoch_length = f`` and ``epoch_length = e`` is refreshed before
    iterations 0, f, f + e, ... (ADMM's first ρ update after ``first_refactor`` iterations), in
    the ``while_loop`` and the unrolled loop alike, per lane under ``vmap`` (a lane that converges
    stops being refreshed) and up to exactly ``max_iterations``."""
    cap = 20
    decreasing = 10.0 - jnp.arange(cap + 1) * 0.1                # never within tolerance: cap
    converging = decreasing.at[5:].set(0.5)                      # within tolerance at k = 5
    scripts = jnp.stack([decreasing, converging])

    def run(script):
        solver = _EpochScripted(script, jnp.asarray(1.0), max_iterations=cap, epoch=7, first=first)
        return C.solve(_problem(), solver, gradient=gradient)

    sol = jax.jit(jax.vmap(run))(scripts)
    np.testing.assert_array_equal(sol.iterations, [cap, 5])
    np.testing.assert_array_equal(sol.converged, [False, True])
    capped_refreshes, capped_last = sol.force[0, 0, :2]
    assert (int(capped_refreshes), int(capped_last)) == (len(refreshed_at), refreshed_at[-1])
    before_five = [k for k in refreshed_at if k < 5]
    assert (int(sol.force[1, 0, 0]), int(sol.force[1, 0, 1])) == (len(before_five), before_five[-1])


def test_a_solver_without_its_declared_attributes_cannot_be_built():
    """The protocol is an abstract base: ``max_iterations``, ``tolerance`` and ``formulation`` are
    declared (``eqx.AbstractVar``) and ``init`` / ``step`` / ``criterion`` abstract."""

    class Incomplete(C.ContactSolver):
        def init(self, problem, warm_force, warm_rho):
            return None

        def step(self, problem, state):
            return state

        def criterion(self, problem, state):
            return jnp.zeros(())

    with pytest.raises(TypeError, match="max_iterations"):
        Incomplete()

    class NoStep(C.ContactSolver):
        tolerance: jax.Array
        max_iterations: int = eqx.field(static=True, default=1)
        formulation: str = eqx.field(static=True, default="ncp")

        def init(self, problem, warm_force, warm_rho):
            return None

        def criterion(self, problem, state):
            return jnp.zeros(())

    with pytest.raises(TypeError, match="step"):
        NoStep(jnp.asarray(1e-6))
