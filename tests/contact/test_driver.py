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
