"""Spin slots of a contact problem (issue 45: MuJoCo's torsional and rolling friction under its
elliptic cone): PrimalNewton solves the widened cone ``Σ_j (λ_j / μ_j)² ≤ λ_N²`` (checked against
SciPy's SLSQP on the same QP, an independent solver), a zero coefficient pins its row, the
fixed-point implicit rule agrees with central differences, with its transpose and with the
unrolled iterations, and with the mode-based rule on ordinary compliant problems; other solvers
and layouts are refused by name.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.optimize

import jaxsim_contact as jc
from jaxsim_contact.contact import ContactProblem, PrimalNewton, solve
from jaxsim_contact.contact._compliant_implicit import compliant_ccp_force
from jaxsim_contact.contact._problem import contact_residuals

NEWTON = PrimalNewton(tolerance=1e-13, max_iterations=60)
CONES, FRICTIONLESS = 3, 1
SLOTS = 2 * CONES + FRICTIONLESS
FRICTION = np.array([0.8, 0.5, 0.3] + [0.0] * (CONES + FRICTIONLESS))
#: torsion and rolling coefficients (m): both, torsion only (condim 4), none (condim 3)
SPIN = np.array([[0.05, 0.02, 0.03], [0.1, 0.0, 0.0], [0.0, 0.0, 0.0]])


def _compliance(rng):
    """Per row: the cones' tangent ``R_T`` and normal ``R_N``; spin rows ``R_T μ² / μ_j²``
    (MuJoCo's relation, which PrimalNewton poses), ``R_T`` where ``μ_j = 0``."""
    r_t = 0.01 + 0.01 * rng.uniform(size=CONES)
    r_n = 0.02 + 0.01 * rng.uniform(size=CONES)
    R = np.full((SLOTS, 3), 0.03)
    R[:CONES] = np.stack([r_t, r_t, r_n], 1)
    used = SPIN > 0
    R[CONES:2 * CONES] = np.where(used, r_t[:, None] * (FRICTION[:CONES, None] / np.where(used, SPIN, 1.0)) ** 2,
                                  r_t[:, None])
    return R.reshape(-1)


def _problem(g=None, spin=SPIN, seed=0):
    rng = np.random.default_rng(seed)
    B = 0.5 * rng.normal(size=(3 * SLOTS, 9))
    g = rng.normal(size=3 * SLOTS) if g is None else g
    return ContactProblem(B @ B.T, g, FRICTION, compliance=_compliance(rng), delassus_factor=B,
                          num_spin=CONES, spin_friction=spin, num_frictionless=FRICTIONLESS)


def _cone_norm(force, i, spin=SPIN):
    """``√(Σ (λ_j/μ_j)²)`` of cone ``i`` over its five friction rows (zero-coefficient rows
    excluded)."""
    used = spin[i] > 0
    spin_part = np.where(used, force[CONES + i] / np.where(used, spin[i], 1.0), 0.0)
    return np.sqrt(np.sum((force[i, :2] / FRICTION[i]) ** 2) + np.sum(spin_part ** 2))


def test_primal_newton_solves_the_widened_cone():
    problem = _problem()
    solution = solve(problem, NEWTON)
    force = np.asarray(solution.force)
    assert bool(solution.converged) and float(solution.criterion) <= 1e-12
    assert max(float(np.max(r)) for r in contact_residuals(problem, solution.force, "ccp")) <= 1e-12
    for i in range(CONES):
        assert _cone_norm(force, i) <= force[i, 2] * (1 + 1e-10)
    assert np.all(force[CONES:2 * CONES][SPIN == 0] == 0)  # pinned rows carry nothing
    assert np.abs(force[CONES:2 * CONES][SPIN > 0]).min() > 1e-3  # the others act

    # the same QP by SciPy's SLSQP: min ½ λᵀ(G + R)λ + gᵀλ on the widened cones
    A = np.asarray(problem.delassus) + np.diag(np.asarray(problem.compliance))
    g = np.asarray(problem.free_velocity)
    cones = [{"type": "ineq", "fun": lambda x, i=i: x[3 * i + 2] ** 2 - _cone_norm(x.reshape(-1, 3), i) ** 2}
             for i in range(CONES)]
    bounds = [(None, None)] * (3 * SLOTS)
    for i in range(CONES):
        bounds[3 * i + 2] = (0, None)
        for j in np.flatnonzero(SPIN[i] == 0):
            bounds[3 * (CONES + i) + j] = (0, 0)
    for i in range(2 * CONES, SLOTS):
        bounds[3 * i:3 * i + 3] = [(0, 0), (0, 0), (0, None)]
    reference = scipy.optimize.minimize(
        lambda x: 0.5 * x @ A @ x + g @ x, force.reshape(-1) + 0.01, jac=lambda x: A @ x + g,
        bounds=bounds, constraints=cones, method="SLSQP", options=dict(ftol=1e-15, maxiter=2000))
    # measured 6e-7 (SLSQP's own accuracy on the cone constraints)
    np.testing.assert_allclose(reference.x, force.reshape(-1), atol=1e-5)


def test_zero_spin_coefficients_give_the_problem_without_spin_slots():
    """Every ``μ_j = 0``: the cones are the 3-D ones and the forces those of the same problem
    without spin slots (rows and columns of the spin slots dropped)."""
    problem = _problem(spin=np.zeros((CONES, 3)))
    keep = np.r_[0:3 * CONES, 3 * 2 * CONES:3 * SLOTS]
    plain = ContactProblem(np.asarray(problem.delassus)[np.ix_(keep, keep)],
                           np.asarray(problem.free_velocity)[keep], np.r_[FRICTION[:CONES], 0.0],
                           compliance=np.asarray(problem.compliance)[keep],
                           delassus_factor=np.asarray(problem.delassus_factor)[keep],
                           num_frictionless=FRICTIONLESS)
    widened = np.asarray(solve(problem, NEWTON).force)
    np.testing.assert_array_equal(widened[CONES:2 * CONES], 0.0)
    np.testing.assert_allclose(np.r_[widened[:CONES], widened[2 * CONES:]],
                               np.asarray(solve(plain, NEWTON).force), atol=1e-11)


@pytest.mark.parametrize("gradient", ["implicit", "unrolled"])
def test_spin_derivatives_agree_with_central_differences(gradient):
    """``dλ/dg``: jacfwd = jacrev (the fixed-point rule's two modes are transposes) = central
    differences; the unrolled Newton iterations give the same."""
    base = _problem()

    @jax.jit
    def force_of(g):
        problem = eqx.tree_at(lambda p: p.free_velocity, base, g)
        return solve(problem, NEWTON, gradient=gradient).force.reshape(-1)

    g0 = base.free_velocity
    forward = np.asarray(jax.jacfwd(force_of)(g0))
    reverse = np.asarray(jax.jacrev(force_of)(g0))
    eps = 1e-6
    central = np.stack([(np.asarray(force_of(g0.at[i].add(eps))) - np.asarray(force_of(g0.at[i].add(-eps))))
                        / (2 * eps) for i in range(g0.shape[0])], axis=1)
    np.testing.assert_allclose(forward, reverse, atol=1e-10)
    # measured 1.3e-8 (central differences' own error; entries up to 3.8)
    np.testing.assert_allclose(forward, central, atol=1e-6)
    assert np.abs(forward[3 * CONES:3 * 2 * CONES]).max() > 1e-2  # the spin rows respond


def test_fixed_point_rule_equals_the_mode_rule_without_spin():
    """On compliant CCP problems with ordinary cones (sliding, sticking and breaking contacts)
    the fixed-point rule and the mode-based rule differentiate the same solution map."""
    rng = np.random.default_rng(3)
    n = 5
    B = rng.normal(size=(3 * n, 8))
    R = np.repeat(0.05 + 0.05 * rng.uniform(size=n), 3)
    mu = np.array([0.3, 0.9, 0.5, 0.2, 0.0])
    problem = ContactProblem(B @ B.T, rng.normal(size=3 * n), mu, compliance=R, delassus_factor=B,
                             num_frictionless=1)
    force = solve(problem, NEWTON).force
    layout = (n - 1, 0, 1, 0, 0)

    def fixed_point(g, G):
        return compliant_ccp_force(layout, G, g, problem.friction, problem.spin_friction,
                                   problem.compliance, problem.active, problem.bound, force)

    def mode(g, G):
        return jc.contact.implicit_force("ccp", (0, 0), G, g, problem.friction, problem.compliance,
                                         problem.active, force, jnp.asarray(1e-13), None, problem.bound)

    direction = (jnp.asarray(rng.normal(size=3 * n)), jnp.asarray(0.1 * rng.normal(size=(3 * n, 3 * n))))
    direction = (direction[0], direction[1] + direction[1].T)
    primals = (problem.free_velocity, problem.delassus)
    ours = jax.jvp(fixed_point, primals, direction)[1]
    theirs = jax.jvp(mode, primals, direction)[1]
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), atol=1e-9)
    assert np.abs(np.asarray(ours)).max() > 1e-2


def test_spin_slots_are_refused_where_unsupported():
    problem = _problem()
    for solver in (jc.contact.ADMM(), jc.contact.PGS()):
        with pytest.raises(NotImplementedError, match="spin rows"):
            solve(problem, solver)
    with pytest.raises(NotImplementedError, match="spin rows"):
        solve(problem, NEWTON, gradient=jc.contact.RelaxedComplementarity(relaxation=1e-3))
    with pytest.raises(ValueError, match="num_spin must be 0 or the number of cone slots"):
        ContactProblem(np.eye(9), np.zeros(9), np.zeros(3), num_spin=2)
    with pytest.raises(ValueError, match=r"spin_friction\[0, 1\] = -0.1"):
        ContactProblem(np.eye(6), np.zeros(6), np.zeros(2), num_spin=1, spin_friction=[[0.1, -0.1, 0.0]])
    with pytest.raises(ValueError, match="CCP criterion only"):
        contact_residuals(problem, jnp.zeros((SLOTS, 3)), "ncp")
