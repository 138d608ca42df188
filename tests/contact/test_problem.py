"""ContactProblem validation, cone projections, residuals, masks and non-finite handling."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim_contact as jc

C = jc.contact


def _simple(n=2):
    rng = np.random.default_rng(1)
    return jc.testing.problems.random_problem(rng, n)


def test_bad_input_raises_naming_value():
    p = _simple(2)
    G, g, mu = np.asarray(p.delassus), np.asarray(p.free_velocity), np.asarray(p.friction)
    bad = G.copy()
    bad[0, 1] += 1.0
    with pytest.raises(ValueError, match="symmetric"):
        C.ContactProblem(bad, g, mu)
    bad = G.copy()
    bad[2, 3] = np.nan
    with pytest.raises(ValueError, match=r"delassus\[2, 3\]"):
        C.ContactProblem(bad, g, mu)
    with pytest.raises(ValueError, match="free_velocity"):
        C.ContactProblem(G, np.r_[g[:-1], np.inf], mu)
    with pytest.raises(ValueError, match=r"friction\[1\] = -0.5"):
        C.ContactProblem(G, g, np.array([0.3, -0.5]))
    with pytest.raises(ValueError, match="compliance"):
        C.ContactProblem(G, g, mu, compliance=np.array([0.1, -1.0]))
    with pytest.raises(ValueError, match="free_velocity must have shape"):
        C.ContactProblem(G, g[:3], mu)
    with pytest.raises(ValueError, match="friction must have shape"):
        C.ContactProblem(G, g, mu[:1])
    with pytest.raises(ValueError, match="multiple of 3"):
        C.ContactProblem(np.eye(4), np.zeros(4), np.zeros(1))
    with pytest.raises(ValueError, match="active"):
        C.ContactProblem(G, g, mu, active=np.array([True]))


def test_bad_solver_options_raise():
    with pytest.raises(ValueError, match="formulation"):
        C.PGS("bogus")
    with pytest.raises(ValueError, match="formulation"):
        C.ADMM("lcp")
    with pytest.raises(ValueError, match="factorization"):
        C.ADMM("ncp", factorization="qr")
    with pytest.raises(ValueError):
        C.StaggeredProjections(max_iterations=0)
    # ADMM.replace keeps every other setting and validates the change like the constructor
    admm = C.ADMM("ncp", max_iterations=7, tolerance=1e-9, rho=2.0, over_relaxation=1.5,
                  rho_update_ratio=4.0, rho_power=0.1, power_iterations=3,
                  factorization="cholesky", refactor_every=5, rho_update="balanced")
    longer = admm.replace(max_iterations=9)
    assert longer.max_iterations == 9
    unchanged = jax.tree_util.tree_leaves(admm)
    assert all(np.array_equal(a, b) for a, b in zip(unchanged, jax.tree_util.tree_leaves(longer)))
    assert jax.tree_util.tree_structure(longer) != jax.tree_util.tree_structure(admm)  # static cap
    assert jax.tree_util.tree_structure(longer.replace(max_iterations=7)) == \
        jax.tree_util.tree_structure(admm)
    with pytest.raises(ValueError, match="factorization"):
        admm.replace(factorization="qr")
    with pytest.raises(TypeError, match="tolerence"):
        admm.replace(tolerence=1e-3)


def test_compliance_shapes():
    p = _simple(2)
    q = C.ContactProblem(p.delassus, p.free_velocity, p.friction, compliance=np.array([1.0, 2.0]))
    np.testing.assert_allclose(q.compliance, [1, 1, 1, 2, 2, 2])
    q = C.ContactProblem(p.delassus, p.free_velocity, p.friction, compliance=0.5)
    np.testing.assert_allclose(q.compliance, np.full(6, 0.5))


def test_cone_projection_properties():
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.normal(size=(500, 3)) * 3)
    mu = jnp.asarray(rng.uniform(0.0, 2.0, size=500))
    p = C.project_cone(x, mu)
    # feasibility, idempotence, Moreau decomposition x = P_K(x) - P_K*(-x)
    assert np.all(np.linalg.norm(p[:, :2], axis=1) <= mu * p[:, 2] + 1e-12)
    np.testing.assert_allclose(C.project_cone(p, mu), p, atol=1e-12)
    np.testing.assert_allclose(p - C.project_dual_cone(-x, mu), x, atol=1e-12)
    np.testing.assert_allclose(jnp.sum(p * (p - x), axis=1), 0.0, atol=1e-9)
    # no NaN in value or gradient at the apex and for mu = 0
    grad = jax.grad(lambda y: jnp.sum(C.project_cone(y, jnp.zeros(2))))(jnp.zeros((2, 3)))
    assert np.all(np.isfinite(grad))


def test_cone_projection_jacobian_equals_forward_mode_autodiff():
    """The closed-form Jacobian PrimalNewton's Hessian uses equals ``jax.jacfwd`` of the
    projection on all three branches (inside, polar, surface), across scales, for μ = 0 and at
    the apex and the axis, where ``x_T = 0``."""
    from jaxsim_contact.contact._problem import project_cone_jacobian

    rng = np.random.default_rng(3)
    x = rng.normal(size=(3000, 3)) * rng.choice([1e-3, 1.0, 1e3], size=(3000, 1))
    x[:6] = [[0, 0, 1], [0, 0, -1], [0, 0, 0], [0.3, 0.4, 0.5], [3, 4, 1], [0, 0, 2]]
    mu = rng.choice([0.0, 0.3, 1.0, 2.0], size=3000)
    x, mu = jnp.asarray(x), jnp.asarray(mu)
    branches = (C.project_cone(x, mu) == x).all(axis=1), (C.project_cone(x, mu) == 0).all(axis=1)
    assert 0 < int(jnp.sum(branches[0])) < 3000 and 0 < int(jnp.sum(branches[1])) < 3000
    jac = project_cone_jacobian(x, mu)
    assert np.all(np.isfinite(jac))
    np.testing.assert_allclose(jac, jax.vmap(jax.jacfwd(C.project_cone))(x, mu), rtol=0, atol=1e-14)


def test_frictionless_rows_cannot_pull():
    """μ = 0 with a zero tangential part (every joint-limit row): ``‖x_T‖ ≤ μ x_N`` reads
    ``0 ≤ −0`` for a negative normal component, which the projection used to keep — a pulling
    limit, accepted as feasible by the residuals, so ADMM converged to it (the humanoid's limits
    pulled with −3.9 N·m and its step Jacobian was 68 % off finite differences)."""
    edge = jnp.asarray([[0.0, 0.0, -3.0], [0.0, 0.0, 2.0], [0.0, 0.0, 0.0], [0.5, 0.0, -1.0]])
    np.testing.assert_array_equal(C.project_cone(edge, jnp.zeros(4)),
                                  [[0, 0, 0], [0, 0, 2], [0, 0, 0], [0, 0, 0]])
    # a limit row moving away from its bound (g_N > 0): the only solution is λ = 0
    limit = C.ContactProblem(np.eye(3), np.array([0.0, 0.0, 1.0]), np.array([0.0]))
    assert float(C.residuals(limit, jnp.array([[0.0, 0.0, -1.0]]))[0]) > 0.5
    sol = C.solve(limit, C.ADMM("ncp", tolerance=1e-10))
    assert bool(sol.converged)
    np.testing.assert_allclose(sol.force, 0.0, atol=1e-9)


def test_residuals_zero_at_known_solutions():
    # one contact, G = I: sticking (g opposes inside cone) and sliding cases in closed form
    G = np.eye(3)
    stick = C.ContactProblem(G, np.array([0.1, 0.0, -1.0]), np.array([0.5]))
    r = C.residuals(stick, jnp.array([[-0.1, 0.0, 1.0]]))
    assert max(map(float, r)) < 1e-14
    slide = C.ContactProblem(G, np.array([2.0, 0.0, -1.0]), np.array([0.5]))
    r = C.residuals(slide, jnp.array([[-0.5, 0.0, 1.0]]))  # c = (1.5, 0, 0): sliding, c_N = 0
    assert max(map(float, r)) < 1e-14
    # the same force violates the CCP criterion (CCP wants c_N = mu |c_T|)
    assert float(C.criterion(slide, jnp.array([[-0.5, 0.0, 1.0]]), "ccp")) > 0.1


def test_inactive_contacts_are_zero_and_decoupled():
    rng = np.random.default_rng(3)
    p = jc.testing.problems.random_problem(rng, 4)
    active = np.array([True, False, True, False])
    pm = C.ContactProblem(p.delassus, p.free_velocity, p.friction, active=active)
    idx = np.array([0, 1, 2, 6, 7, 8])
    pr = C.ContactProblem(np.asarray(p.delassus)[np.ix_(idx, idx)], np.asarray(p.free_velocity)[idx],
                          np.asarray(p.friction)[[0, 2]])
    solver = C.ADMM("ncp", tolerance=1e-10)
    sm = C.solve(pm, solver)
    sr = C.solve(pr, solver)
    assert bool(sm.converged) and bool(sr.converged)
    np.testing.assert_array_equal(np.asarray(sm.force)[~active], 0.0)
    np.testing.assert_allclose(np.asarray(sm.force)[active], sr.force, atol=1e-7)


@pytest.mark.parametrize("solver", [C.ADMM("ncp", max_iterations=20), C.PGS("lcp", max_iterations=20),
                                    C.PrimalNewton(max_iterations=5), C.Raisim(max_iterations=5),
                                    C.StaggeredProjections(max_iterations=5)])
def test_traced_nonfinite_problem_gives_zero_force(solver):
    p = _simple(2)
    f = jax.jit(lambda G: C.solve(C.ContactProblem(G, p.free_velocity, p.friction), solver))
    G = np.asarray(p.delassus).copy()
    G[0, 0] = np.nan
    sol = f(G)
    assert not bool(sol.converged)
    assert np.all(np.asarray(sol.force) == 0.0)
    assert np.all(np.isfinite(np.asarray(sol.velocity)))
    assert bool(f(np.asarray(p.delassus)).iterations > 0)


def test_delassus_matvec_and_finiteness_use_the_factor():
    """With a factor ``G = B Bᵀ`` the product ``G x`` is ``B (Bᵀ x)`` (exact, and on a sanitised
    problem exact on the active rows, inactive rows 0); finiteness is read from ``B``; the contact
    velocity and the residuals are those of ``G``."""
    rng = np.random.default_rng(11)
    n, k = 5, 7
    B = rng.normal(size=(3 * n, k))
    G = B @ B.T
    g = rng.normal(size=3 * n)
    active = np.array([True, False, True, True, False])
    with_factor = C.ContactProblem(G, g, np.full(n, 0.5), compliance=1e-2, active=active,
                                   delassus_factor=B)
    plain = C.ContactProblem(G, g, np.full(n, 0.5), compliance=1e-2, active=active)
    x = rng.normal(size=3 * n)
    np.testing.assert_allclose(with_factor.delassus_matvec(x), G @ x, rtol=1e-12, atol=1e-12)
    force = rng.normal(size=(n, 3))
    np.testing.assert_allclose(C.contact_velocity(with_factor, force),
                               C.contact_velocity(plain, force), rtol=1e-12, atol=1e-12)
    for a, b in zip(C.contact_residuals(with_factor, force), C.contact_residuals(plain, force)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    safe, finite = C.sanitize_problem(with_factor)
    rows = np.repeat(active, 3)
    G_safe = np.asarray(safe.delassus)
    np.testing.assert_allclose(np.asarray(safe.delassus_matvec(x))[rows], (G_safe @ x)[rows],
                               rtol=1e-12, atol=1e-12)
    assert np.all(np.asarray(safe.delassus_matvec(x))[~rows] == 0.0) and bool(finite)
    # traced (no host check): a non-finite factor entry makes the problem non-finite
    bad = B.copy()
    bad[4, 2] = np.inf
    flag = jax.jit(lambda b: C.ContactProblem(G, g, np.full(n, 0.5), delassus_factor=b).is_finite())
    assert bool(flag(B)) and not bool(flag(bad))


@pytest.mark.parametrize("solver", [C.PrimalNewton(max_iterations=5),
                                    C.ADMM("ncp", max_iterations=20, factorization="cholesky")])
def test_traced_nonfinite_factor_gives_zero_force(solver):
    """A NaN in the Delassus factor (G itself finite: the factor is all a Newton step reads) gives
    ``converged=False``, zero force and a finite contact velocity."""
    rng = np.random.default_rng(12)
    n, k = 3, 4
    B = rng.normal(size=(3 * n, k))
    g = rng.normal(size=3 * n)
    G = B @ B.T
    f = jax.jit(lambda b: C.solve(C.ContactProblem(G, g, np.full(n, 0.5), compliance=1e-2,
                                                   delassus_factor=b), solver))
    bad = B.copy()
    bad[2, 1] = np.nan
    sol = f(bad)
    assert not bool(sol.converged)
    assert np.all(np.asarray(sol.force) == 0.0)
    assert np.all(np.isfinite(np.asarray(sol.velocity)))
    assert bool(f(B).iterations > 0) and np.any(np.asarray(f(B).force) != 0.0)
