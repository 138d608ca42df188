"""Box (dry friction) and bilateral (equality) slots of a contact problem (issue 48): ADMM and PGS
solve them (to the same solution), PrimalNewton their compliant CCP (ADMM-CCP's solution), the criteria are zero at the solution, and the implicit derivative agrees with central
differences (forward mode) and with its transpose (reverse mode). Other solvers refuse them by
name.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim_contact as jc
from jaxsim_contact.contact import ContactProblem, solve

SOLVER = jc.contact.ADMM(tolerance=1e-13, max_iterations=20_000)


def _problem(g, bound, seed=1):
    """Five slots: two cones, one frictionless, one box, one bilateral; G positive definite."""
    rng = np.random.default_rng(seed)
    factor = rng.normal(size=(15, 4))
    G = factor @ factor.T + 0.1 * np.eye(15)
    return ContactProblem(G, g, jnp.asarray([0.5, 0.8, 0.0, 0.0, 0.0]), num_frictionless=1,
                          num_box=1, num_bilateral=1, bound=bound)


def _free_velocity(seed=2):
    return jnp.asarray(np.random.default_rng(seed).normal(size=15))


SOLVERS = {"admm": SOLVER, "pgs": jc.contact.PGS(tolerance=1e-12, max_iterations=20_000)}


@pytest.mark.parametrize("solver", sorted(SOLVERS))
@pytest.mark.parametrize("box_bound", [0.3, 50.0])  # the box at its bound; inside it
def test_admm_and_pgs_solve_box_and_bilateral_slots(box_bound, solver):
    g = _free_velocity()
    bound = jnp.asarray([0.0, 0.0, 0.0, box_bound, 0.0])
    problem = _problem(g, bound)
    solution = solve(problem, SOLVERS[solver])
    force = np.asarray(solution.force)
    sigma = (np.asarray(problem.delassus) @ force.reshape(-1) + np.asarray(g)).reshape(5, 3)
    assert bool(solution.converged) and float(solution.criterion) <= 1e-12
    np.testing.assert_allclose(sigma[4], 0.0, atol=1e-11)  # bilateral: σ = 0, any force sign
    np.testing.assert_allclose(force[3, :2], 0.0, atol=1e-12)  # box: no tangent force
    if box_bound < 1:
        assert abs(force[3, 2]) == pytest.approx(box_bound, abs=1e-12)  # at its bound, ...
        assert force[3, 2] * sigma[3, 2] < 0  # ... opposing the motion
    else:
        assert abs(force[3, 2]) < box_bound and abs(sigma[3, 2]) < 1e-11  # holds: no motion
    reference = np.asarray(solve(problem, SOLVER).force)
    np.testing.assert_allclose(force, reference, atol=1e-9)  # the same solution either way


def test_implicit_derivative_of_box_and_bilateral_slots():
    """dλ/d(g, bound) at a box at its bound: jvp = central differences, and jvp/vjp adjoint."""
    g = _free_velocity()
    bound = jnp.asarray([0.0, 0.0, 0.0, 0.3, 0.0])

    def force(g, bound):
        return solve(_problem(g, bound), SOLVER).force

    rng = np.random.default_rng(3)
    dg = jnp.asarray(rng.normal(size=15))
    dbound = jnp.asarray([0.0, 0.0, 0.0, 1.0, 0.0])
    _, tangent = jax.jvp(force, (g, bound), (dg, dbound))
    h = 1e-6
    central = (force(g + h * dg, bound + h * dbound) - force(g - h * dg, bound - h * dbound)) / (2 * h)
    np.testing.assert_allclose(tangent, central, atol=1e-7)
    assert float(tangent[3, 2]) == pytest.approx(float(jnp.sign(force(g, bound)[3, 2])), abs=1e-9)
    cotangent = jnp.asarray(rng.normal(size=(5, 3)))
    _, pullback = jax.vjp(force, g, bound)
    cg, cbound = pullback(cotangent)
    assert float(jnp.sum(cotangent * tangent)) == pytest.approx(float(cg @ dg + cbound @ dbound), rel=1e-9)


@pytest.mark.parametrize("line_search", ["exact", "armijo"])
def test_primal_newton_solves_compliant_box_and_bilateral_slots(line_search):
    """PrimalNewton solves the compliant CCP; with box and bilateral rows (and cones, a limit) it
    gives ADMM-CCP's forces, with a dense Delassus matrix and with its factor."""
    rng = np.random.default_rng(1)
    factor = rng.normal(size=(15, 4))
    G = factor @ factor.T + 0.1 * np.eye(15)
    for bound in (0.3, 50.0):
        kwargs = dict(num_frictionless=1, num_box=1, num_bilateral=1, compliance=1e-2,
                      bound=jnp.asarray([0.0, 0.0, 0.0, bound, 0.0]))
        mu = jnp.asarray([0.5, 0.8, 0.0, 0.0, 0.0])
        dense = ContactProblem(G, _free_velocity(), mu, **kwargs)
        factored = ContactProblem(G, _free_velocity(), mu, delassus_factor=np.linalg.cholesky(G), **kwargs)
        reference = solve(dense, jc.contact.ADMM("ccp", tolerance=1e-13, max_iterations=20_000)).force
        newton = jc.contact.PrimalNewton(tolerance=1e-10, line_search=line_search)
        for problem in (dense, factored):
            solution = solve(problem, newton)
            assert bool(solution.converged)
            np.testing.assert_allclose(solution.force, reference, atol=1e-10)


def test_other_solvers_refuse_box_and_bilateral_slots():
    problem = _problem(_free_velocity(), jnp.asarray([0.0, 0.0, 0.0, 0.3, 0.0]))
    with pytest.raises(NotImplementedError, match="StaggeredProjections does not solve box"):
        solve(problem, jc.contact.StaggeredProjections())
    with pytest.raises(NotImplementedError, match="RelaxedComplementarity gradient rule"):
        solve(problem, SOLVER, gradient=jc.contact.RelaxedComplementarity(relaxation=1e-3))


def test_slot_counts_are_validated():
    G, g, mu = np.eye(6), np.zeros(6), np.zeros(2)
    with pytest.raises(ValueError, match="at most 2"):
        ContactProblem(G, g, mu, num_box=2, num_bilateral=1)
    with pytest.raises(ValueError, match="bound must be finite and >= 0"):
        ContactProblem(G, g, mu, num_box=1, bound=[0.0, -1.0])
