"""Every solver on random feasible problems (jit + vmap, float64), agreement between solvers of
the same formulation, float32, and warm starting (seed 001 §III, §III-E)."""

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim_contact as jc

C = jc.contact
B = jc.testing.problems

# (num_contacts, num_dofs): None = full rank; 24 < 3*16 = rank deficient (hyperstatic)
SIZES = [(1, None), (7, None), (64, None), (16, 24)]
BATCH = 3


def _stack(problems):
    return jax.tree_util.tree_map(lambda *x: jnp.stack(x), *problems)


@functools.lru_cache(maxsize=None)
def batch(n, nv):
    rng = np.random.default_rng(100 + n + (nv or 0))
    return _stack([B.random_problem(rng, n, nv) for _ in range(BATCH)])


@functools.lru_cache(maxsize=None)
def compliant_batch(n, nv):
    p = batch(n, nv)
    # per-contact isotropic compliance 1e-3 x mean diagonal block entry (R_t1 = R_t2, as in Drake)
    diag = jnp.diagonal(p.delassus, axis1=1, axis2=2).reshape(BATCH, n, 3).mean(-1)
    return eqx_replace_compliance(p, jnp.repeat(1e-3 * diag, 3, axis=1))


def eqx_replace_compliance(p, R):
    import equinox as eqx

    return eqx.tree_at(lambda q: q.compliance, p, R)


def eqx_replace_free_velocity(p, g):
    import equinox as eqx

    return eqx.tree_at(lambda q: q.free_velocity, p, g)


_COMPILED = {}


def batched_solve(solver):
    """jit(vmap(solve)) cached per solver object (solvers hold arrays, so key by id)."""
    key = id(solver)
    if key not in _COMPILED:
        _COMPILED[key] = (solver, jax.jit(jax.vmap(lambda p, w: C.solve(p, solver, warm_start=w),
                                                   in_axes=(0, None))))
    return _COMPILED[key][1]


def run(solver, problems, warm=None):
    return batched_solve(solver)(problems, warm)


HIGH_ACCURACY = {
    "admm-ncp": C.ADMM("ncp", max_iterations=3000, tolerance=1e-6),
    "admm-ccp": C.ADMM("ccp", max_iterations=3000, tolerance=1e-6),
    "staggered": C.StaggeredProjections(max_iterations=300, tolerance=1e-6),
}


@pytest.mark.parametrize(
    "name,n,nv",
    [(name, n, nv) for name in ("admm-ccp", "admm-ncp") for n, nv in SIZES]
    + [("staggered", 1, None), ("staggered", 7, None), ("staggered", 64, None)],
)
def test_high_accuracy_solvers_reach_1e6(name, n, nv):
    solver = HIGH_ACCURACY[name]
    p = batch(n, nv)
    sol = run(solver, p)
    form = solver.formulation
    crit = jax.vmap(lambda q, f: C.criterion(q, f, form))(p, sol.force)
    assert np.all(np.asarray(sol.converged)), (name, n, np.asarray(crit), np.asarray(sol.iterations))
    assert np.all(np.asarray(crit) <= 1e-6)
    assert np.all(np.asarray(sol.iterations) < solver.max_iterations)


@pytest.mark.parametrize("n,nv", SIZES)
def test_primal_newton_reaches_1e6_with_compliance(n, nv):
    solver = C.PrimalNewton(max_iterations=200, tolerance=1e-6)
    p = compliant_batch(n, nv)
    sol = run(solver, p)
    crit = jax.vmap(lambda q, f: C.criterion(q, f, "ccp"))(p, sol.force)
    assert np.all(np.asarray(sol.converged)), (np.asarray(crit), np.asarray(sol.iterations))
    assert np.all(np.asarray(crit) <= 1e-6)
    # same compliant CCP solved by ADMM: the strictly convex problem has a unique solution
    ref = run(C.ADMM("ccp", max_iterations=3000, tolerance=1e-9), p)
    np.testing.assert_allclose(sol.force, ref.force, atol=1e-5 * (1 + np.abs(ref.force).max()))


def test_primal_newton_armijo_line_search_of_the_seed():
    """Seed 001 Alg. 4 with Armijo backtracking (line_search="armijo") also reaches 1e-6 on the
    compliant problems, and matches the exact-line-search solution."""
    p = compliant_batch(7, None)
    armijo = run(C.PrimalNewton(max_iterations=200, tolerance=1e-6, line_search="armijo"), p)
    exact = run(C.PrimalNewton(max_iterations=200, tolerance=1e-6), p)
    crit = jax.vmap(lambda q, f: C.criterion(q, f, "ccp"))(p, armijo.force)
    assert np.all(np.asarray(armijo.converged)) and np.all(np.asarray(crit) <= 1e-6)
    np.testing.assert_allclose(armijo.force, exact.force, atol=1e-5 * (1 + np.abs(exact.force).max()))
    with pytest.raises(ValueError, match="line_search"):
        C.PrimalNewton(line_search="wolfe")


@pytest.mark.parametrize("n,nv", [(1, None), (7, None), (64, None)])
@pytest.mark.parametrize("form", ["lcp", "ccp", "ncp"])
def test_pgs_reaches_1e5_on_well_conditioned(form, n, nv):
    solver = C.PGS(form, max_iterations=2000, tolerance=1e-5)
    rng = np.random.default_rng(5 + n)
    p = _stack([B.random_problem(rng, n, coupling=0.1) for _ in range(BATCH)])
    sol = run(solver, p)
    crit = jax.vmap(lambda q, f: C.criterion(q, f, form))(p, sol.force)
    assert np.all(np.asarray(sol.converged)), np.asarray(crit)
    assert np.all(np.asarray(crit) <= 1e-5)


def _ccp_objective(p, f):
    lam = f.reshape(-1)
    return 0.5 * lam @ (p.compliant_delassus @ lam) + p.free_velocity @ lam


@pytest.mark.parametrize("n,nv", [(7, None), (16, 24)])
def test_same_formulation_solvers_agree(n, nv):
    p = batch(n, nv)
    # CCP: ADMM and PGS minimise the same convex QCQP (seed 001 eq. 20) -> same objective
    a = run(HIGH_ACCURACY["admm-ccp"], p)
    obj_a = jax.vmap(_ccp_objective)(p, a.force)
    if nv is None:
        b = run(C.PGS("ccp", max_iterations=2000, tolerance=1e-7), p)
        obj_b = jax.vmap(_ccp_objective)(p, b.force)
        np.testing.assert_allclose(obj_a, obj_b, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(a.force, b.force, atol=1e-4)
    # NCP: ADMM and PGS reach the same criterion and the same contact velocity
    # (forces may differ where G is rank deficient, velocities may not for these problems)
    c = run(HIGH_ACCURACY["admm-ncp"], p)
    d = run(C.PGS("ncp", max_iterations=3000, tolerance=1e-6), p)
    assert np.all(np.asarray(c.criterion) <= 1e-6)
    ok = np.asarray(d.criterion) <= 1e-6
    assert ok.any()
    np.testing.assert_allclose(np.asarray(c.velocity)[ok], np.asarray(d.velocity)[ok], atol=1e-4)


@pytest.mark.parametrize(
    "solver", [C.PGS("ncp", tolerance=1e-4), C.ADMM("ncp", tolerance=1e-4),
               C.StaggeredProjections(tolerance=1e-4), C.Raisim(tolerance=1e-5),
               C.PrimalNewton(tolerance=1e-4)],
    ids=["pgs", "admm", "staggered", "raisim", "newton"],
)
def test_float32(solver):
    rng = np.random.default_rng(7)
    p = B.random_problem(rng, 5, dtype=np.float32, coupling=0.1)
    if isinstance(solver, C.PrimalNewton):
        p = eqx_replace_compliance(p, jnp.full(15, 1e-2, jnp.float32))
    sol = jax.jit(lambda q: C.solve(q, solver))(p)
    assert sol.force.dtype == jnp.float32
    assert bool(sol.converged), float(sol.criterion)
    assert np.all(np.isfinite(np.asarray(sol.force)))


def test_raisim_runs_and_keeps_signorini():
    solver = C.Raisim(max_iterations=500, tolerance=1e-9)
    p = batch(7, None)
    sol = run(solver, p)
    assert np.all(np.asarray(sol.converged))
    # RaiSim enforces Signorini: primal feasibility and zero normal velocity where pushing
    assert np.all(np.asarray(sol.primal) <= 1e-8)
    f, v = np.asarray(sol.force), np.asarray(sol.velocity)
    pushing = f[..., 2] > 1e-6
    assert np.all(np.abs(v[..., 2][pushing]) <= 1e-6)
    assert np.all(v[..., 2] >= -1e-6)


def test_warm_start_cuts_iterations():
    rng = np.random.default_rng(11)
    base = B.random_problem(rng, 16)
    seq = []
    for k in range(6):
        dg = 1e-3 * rng.normal(size=base.free_velocity.shape)
        seq.append(C.ContactProblem(base.delassus, base.free_velocity + dg, base.friction))
    # measured (1e-3 perturbations of g, n = 16): ADMM 414/575 = 0.72, PGS 398/690 = 0.58
    for solver, ratio in [(C.ADMM("ncp", tolerance=1e-6), 0.8), (C.PGS("ncp", tolerance=1e-6), 0.8)]:
        f = jax.jit(lambda p, w, s=solver: C.solve(p, s, warm_start=w))
        cold = [int(f(p, None).iterations) for p in seq[1:]]
        warm, prev = [], f(seq[0], None)
        for p in seq[1:]:
            prev = f(p, prev)
            assert bool(prev.converged)
            warm.append(int(prev.iterations))
        assert sum(warm) <= ratio * sum(cold), (type(solver).__name__, warm, cold)


def test_anderson_acceleration_gets_staggered_projections_to_1e6_on_dense_problems():
    """Alg. 7 as printed (``anderson_memory=0``) crawls on dense random problems with 64 contacts
    (strong normal/tangent coupling): every problem is still above 1e-5 after 300 outer
    iterations. The accelerated default meets 1e-6 on the same problems within 200."""
    p = batch(64, None)
    plain = run(C.StaggeredProjections(max_iterations=300, tolerance=1e-6, anderson_memory=0), p)
    assert np.all(np.asarray(plain.criterion) > 1e-5), np.asarray(plain.criterion)
    accelerated = run(HIGH_ACCURACY["staggered"], p)
    assert np.all(np.asarray(accelerated.converged)), np.asarray(accelerated.criterion)
    assert np.all(np.asarray(accelerated.criterion) <= 1e-6)
    assert np.all(np.asarray(accelerated.iterations) <= 200), np.asarray(accelerated.iterations)


def _hyperstatic_problems(indices, n=16, nv=24, count=128):
    """Problems ``indices`` of a fixed sample of ``count`` random hyperstatic problems (the sample
    of ``benchmarks/staggered_hyperstatic.py``'s 16 × 24 row)."""
    rng = np.random.default_rng(7000 + n + nv)
    problems = [B.random_problem(rng, n, nv) for _ in range(count)]
    return _stack([problems[i] for i in indices])


def test_staggered_reaches_1e6_on_hyperstatic_random_problems(monkeypatch):
    """With 16 contacts on 24 dofs (``G`` of rank 24 < 48, ``G_TT`` singular) the outer fixed point
    crawls: test_solvers' own problems need up to ~4000 outer iterations. On three problems of a
    larger sample Anderson acceleration alone stalls (the criterion wanders at 1e-4..1e-1 for
    20000 iterations); the stall guard switches it off and they converge within 1100. Seed 001
    §III-D: Alg. 7 has no convergence guarantee (the sample's remaining failures are listed in the
    module docstring of ``contact/_staggered.py``)."""
    from jaxsim_contact.contact import _staggered as staggered

    solver = C.StaggeredProjections(max_iterations=20000, tolerance=1e-6)
    for p in (batch(16, 24), _hyperstatic_problems([32, 64, 99])):
        sol = run(solver, p)
        assert np.all(np.asarray(sol.converged)), (np.asarray(sol.criterion), np.asarray(sol.iterations))
        crit = jax.vmap(lambda q, f: C.criterion(q, f, "ncp"))(p, sol.force)
        assert np.all(np.asarray(crit) <= 1e-6)
    assert np.all(np.asarray(sol.iterations) <= 1100), np.asarray(sol.iterations)
    # the same problems without the guard: Anderson stalls far above the tolerance
    monkeypatch.setattr(staggered, "STALL_PATIENCE", 10**9)
    unguarded = run(C.StaggeredProjections(max_iterations=2000, tolerance=1e-6), p)
    assert np.all(np.asarray(unguarded.criterion) > 1e-5), np.asarray(unguarded.criterion)
    # ADMM solves the same problems (they are feasible)
    ad = run(HIGH_ACCURACY["admm-ncp"], p)
    assert np.all(np.asarray(ad.criterion) <= 1e-6)


def _low_rank_factor(G, rank):
    """``B`` ``(3n, rank)`` with ``G = B Bᵀ`` for a PSD ``G`` of that rank (host side)."""
    evals, vecs = np.linalg.eigh(np.asarray(G))
    top = slice(G.shape[0] - rank, None)
    return vecs[:, top] * np.sqrt(np.maximum(evals[top], 0.0))


def test_admm_low_rank_factor_matches_the_full_factorisation():
    """ADMM's Cholesky variant with ``delassus_factor`` (Woodbury, ``k × k`` factorisation) on
    rank-deficient problems (16 contacts, 24 dofs) with two inactive contacts: it takes the same
    iterations as the full ``3n × 3n`` factorisation and meets the NCP criterion evaluated on the
    full ``G``; a factor inconsistent with ``G`` is rejected."""
    import equinox as eqx

    n, nv = 16, 24
    p = batch(n, nv)
    active = jnp.asarray(np.arange(n) % 7 != 3)
    factors = jnp.stack([_low_rank_factor(p.delassus[i], nv) for i in range(BATCH)])
    p = eqx.tree_at(lambda q: q.active, p, jnp.broadcast_to(active, (BATCH, n)))
    with_factor = eqx.tree_at(lambda q: q.delassus_factor, p, factors,
                              is_leaf=lambda x: x is None)
    solver = C.ADMM("ncp", max_iterations=3000, tolerance=1e-6, factorization="cholesky",
                    refactor_every=10, power_iterations=10, rho_update="balanced")
    full, low = run(solver, p), run(solver, with_factor)
    crit = jax.vmap(lambda q, f: C.criterion(q, f, "ncp"))(p, low.force)
    assert np.all(np.asarray(low.converged)) and np.all(np.asarray(crit) <= 1e-6), np.asarray(crit)
    assert np.all(np.abs(np.asarray(low.iterations) - np.asarray(full.iterations)) <= 2), (
        np.asarray(low.iterations), np.asarray(full.iterations))
    assert np.all(np.asarray(low.force)[:, ~np.asarray(active)] == 0.0)
    one = jax.tree_util.tree_map(lambda x: x[0], p)
    with pytest.raises(ValueError, match="delassus_factor"):
        C.ContactProblem(one.delassus, one.free_velocity, one.friction,
                         delassus_factor=np.asarray(factors[0]) * 1.1)


def test_primal_newton_with_a_delassus_factor_solves_the_same_problem():
    """With ``G = B Bᵀ`` (``B`` ``(3n, k)``) the primal Newton iterates over ``k`` variables (the
    joint-velocity form of seed 001 eq. 21) instead of ``3n`` from an eigendecomposition of ``G``:
    on rank-deficient compliant problems (16 contacts, 24 dofs, two inactive) it meets the CCP
    criterion on the full ``G``, gives the forces of the ``3n`` path and zero inactive forces."""
    import equinox as eqx

    n, nv = 16, 24
    p = compliant_batch(n, nv)
    active = jnp.asarray(np.arange(n) % 7 != 3)
    factors = jnp.stack([_low_rank_factor(p.delassus[i], nv) for i in range(BATCH)])
    p = eqx.tree_at(lambda q: q.active, p, jnp.broadcast_to(active, (BATCH, n)))
    with_factor = eqx.tree_at(lambda q: q.delassus_factor, p, factors, is_leaf=lambda x: x is None)
    solver = C.PrimalNewton(max_iterations=200, tolerance=1e-8)
    full, low = run(solver, p), run(solver, with_factor)
    crit = jax.vmap(lambda q, f: C.criterion(q, f, "ccp"))(p, low.force)
    assert np.all(np.asarray(low.converged)) and np.all(np.asarray(crit) <= 1e-8), np.asarray(crit)
    np.testing.assert_allclose(low.force, full.force, atol=1e-6 * (1 + np.abs(full.force).max()))
    assert np.all(np.asarray(low.force)[:, ~np.asarray(active)] == 0.0)
    assert np.any(np.abs(np.asarray(low.force)[:, np.asarray(active)]) > 1e-3)


def test_primal_newton_drops_the_tangent_rows_of_frictionless_contacts():
    """``num_frictionless = n_f`` (joint limits in a multibody step) sets the last ``n_f``
    friction coefficients to 0 and lets PrimalNewton iterate on ``3(n − n_f) + n_f`` rows: on
    rank-deficient compliant problems (16 contacts, 24 dofs, two inactive, 5 frictionless whose
    tangent rows of ``G`` are not zero), with and without a Delassus factor, the forces are those
    of the full ``3n``-row iteration on the same problem with ``μ = 0`` there, the frictionless
    tangent forces are exactly 0 and the CCP criterion on the full ``G`` holds and is the one
    Newton computed from its rows."""
    import equinox as eqx

    n, nv, nf = 16, 24, 5
    p = compliant_batch(n, nv)
    active = jnp.asarray(np.arange(n) % 7 != 3)
    factors = jnp.stack([_low_rank_factor(p.delassus[i], nv) for i in range(BATCH)])
    p = eqx.tree_at(lambda q: q.active, p, jnp.broadcast_to(active, (BATCH, n)))
    frictionless = np.arange(n) >= n - nf
    zero_tail = eqx.tree_at(lambda q: q.friction, p, jnp.where(frictionless, 0.0, p.friction))
    assert np.all(np.asarray(p.friction)[:, frictionless] > 0)  # the hint must zero them itself

    def hinted(q, factor=None):
        return C.ContactProblem(q.delassus, q.free_velocity, q.friction, q.compliance, q.active,
                                delassus_factor=factor, num_frictionless=nf)

    solver = C.PrimalNewton(max_iterations=200, tolerance=1e-8)
    for factor in (None, factors):
        reference_problem = zero_tail if factor is None else eqx.tree_at(
            lambda q: q.delassus_factor, zero_tail, factor, is_leaf=lambda x: x is None)
        problem = jax.vmap(hinted)(p) if factor is None else jax.vmap(hinted)(p, factor)
        assert problem.num_frictionless == nf
        np.testing.assert_array_equal(problem.friction, zero_tail.friction)
        reference, reduced = run(solver, reference_problem), run(solver, problem)
        crit = jax.vmap(lambda q, f: C.criterion(q, f, "ccp"))(zero_tail, reduced.force)
        assert np.all(np.asarray(reduced.converged)) and np.all(np.asarray(crit) <= 1e-8), np.asarray(crit)
        # Newton's own criterion (from its stored rows, no frictionless tangent velocities) is
        # the general one, to the round-off of σ = G λ + R λ + g (O(1) entries here)
        np.testing.assert_allclose(reduced.criterion, crit, rtol=1e-6, atol=1e-12)
        scale = 1 + np.abs(np.asarray(reference.force)).max()
        np.testing.assert_allclose(reduced.force, reference.force, atol=1e-6 * scale)
        assert np.all(np.asarray(reduced.force)[:, frictionless, :2] == 0.0)
        assert np.any(np.asarray(reduced.force)[:, frictionless & np.asarray(active), 2] > 1e-3)
        assert np.all(np.abs(np.asarray(reduced.iterations) - np.asarray(reference.iterations)) <= 1)
    one = jax.tree_util.tree_map(lambda x: x[0], p)
    for bad in (-1, n + 1):
        with pytest.raises(ValueError, match="num_frictionless"):
            C.ContactProblem(one.delassus, one.free_velocity, one.friction, num_frictionless=bad)


def test_primal_newton_unrolled_derivatives_are_finite_with_zero_residuals():
    """Unrolled mode differentiates the loop, criterion included: at the solution many per-contact
    residuals are exactly 0 (a force inside its cone, a frictionless contact at rest), where a plain
    square root has an infinite derivative. Forward and reverse derivatives of every output stay
    finite, and the force's agree with central differences."""
    n, nv = 6, 10
    one = jax.tree_util.tree_map(lambda x: x[0], compliant_batch(n, nv))
    problem = C.ContactProblem(one.delassus, one.free_velocity, one.friction, one.compliance,
                               num_frictionless=2)
    solver = C.PrimalNewton(max_iterations=30, tolerance=1e-12)

    def solve(g):
        sol = C.solve(eqx_replace_free_velocity(problem, g), solver, gradient="unrolled")
        return sol.force, sol.criterion

    g0 = problem.free_velocity
    force, crit = jax.jit(solve)(g0)
    assert float(crit) <= 1e-10
    assert np.any(np.asarray(force)[:, 2] > 0) and np.any(np.asarray(force)[:, 2] == 0)
    jf = jax.jit(jax.jacfwd(solve))(g0)
    jr = jax.jit(jax.jacrev(solve))(g0)
    for a, b in zip(jf, jr):
        assert np.all(np.isfinite(np.asarray(a))) and np.all(np.isfinite(np.asarray(b)))
    h = 1e-6
    fd = np.stack([(np.asarray(jax.jit(solve)(g0.at[i].add(h))[0])
                    - np.asarray(jax.jit(solve)(g0.at[i].add(-h))[0])) / (2 * h) for i in range(3)], -1)
    np.testing.assert_allclose(np.asarray(jf[0])[..., :3], fd, atol=1e-5 * (1 + np.abs(fd).max()))
    np.testing.assert_allclose(jf[0], jr[0], atol=1e-8)


def test_primal_newton_stops_at_its_round_off_limit_on_rigid_stacks():
    """Rigid box stacks (compliance 0, so every row at the 1e-9 relative floor): the CCP criterion
    of Newton's force stalls above a 1e-10 tolerance (round-off amplified by R⁻¹), so without the
    round-off rule every solve runs to its cap; with it (default margin) Newton stops within a few
    iterations, reports convergence, and returns the force and contact velocity of the capped run
    (the iterate cannot get more accurate)."""
    problems = _stack([B.box_stack(m).problem(1e-3, units="impulse")
                       for m in ([1.0, 1.0, 1.0, 1.0], [1.0, 10.0, 100.0, 1000.0], [1000.0, 1.0, 1.0, 1.0])])
    capped = run(C.PrimalNewton(max_iterations=100, tolerance=1e-10, round_off_margin=0.0), problems)
    rule = run(C.PrimalNewton(max_iterations=100, tolerance=1e-10), problems)
    assert not np.any(np.asarray(capped.converged)) and np.all(np.asarray(capped.iterations) == 100)
    assert np.all(np.asarray(capped.criterion) > 1e-10), np.asarray(capped.criterion)
    assert np.all(np.asarray(rule.converged)) and np.all(np.asarray(rule.iterations) <= 10), np.asarray(rule.iterations)
    scale = np.abs(np.asarray(capped.force)).max(axis=(1, 2), keepdims=True)
    assert np.all(np.abs(np.asarray(rule.force - capped.force)) <= 1e-6 * scale)
    np.testing.assert_allclose(rule.velocity, capped.velocity, atol=1e-7)
    # the stacks hold their weight: normal impulse on the ground = weight × dt (up to the floor
    # compliance, which lets a heavy stack keep ~1e-6 of its downward velocity)
    ground = np.asarray(rule.force)[:, :4, 2].sum(axis=1)
    weights = np.array([4.0, 1111.0, 1003.0]) * 9.81 * 1e-3
    np.testing.assert_allclose(ground, weights, rtol=1e-5)


@pytest.mark.parametrize("case", ["compliant", "rigid-stack"])
def test_primal_newton_line_search_finds_the_minimiser_along_the_line(case):
    """The exact line search (safeguarded 1-D Newton on ``φ'``) returns the minimiser of
    ``φ(α) = ℓ(v + α Δv)`` along Newton directions and along plain descent directions (−∇ℓ,
    where ``α`` is far from 1): ``ℓ`` decreases as much as at a 200-halving bisection on
    ``jax.grad(φ)``, to 1e-9 of the decrease, and ``α`` agrees with it to 1e-4 relative. The rigid
    stacks put every compliance at the 1e-9 floor (curvatures spanning ~1e9)."""
    if case == "compliant":
        problems = [jax.tree_util.tree_map(lambda x: x[i], compliant_batch(7, None)) for i in range(BATCH)]
    else:
        problems = [B.box_stack(m).problem(1e-3, units="impulse")
                    for m in ([1.0, 1.0, 1.0, 1.0], [1.0, 10.0, 100.0, 1000.0])]
    solver = C.PrimalNewton()

    @jax.jit
    def line(safe, state, v, dv):
        phi = lambda a: solver._objective(safe, state, v + a * dv)  # noqa: E731
        slope = jax.grad(phi)
        hi = jax.lax.while_loop(lambda h: slope(h) < 0, lambda h: 2.0 * h, 1.0)

        def halve(_, bracket):
            lo, hi = bracket
            mid = 0.5 * (lo + hi)
            return jnp.where(slope(mid) < 0, mid, lo), jnp.where(slope(mid) < 0, hi, mid)

        lo, hi = jax.lax.fori_loop(0, 200, halve, (0.0, hi))
        reference = 0.5 * (lo + hi)
        alpha = solver._line_search(safe, state, dv)  # state is at v
        return alpha, reference, phi(0.0) - phi(reference), phi(alpha) - phi(reference)

    init = jax.jit(lambda p, w: solver.init(p, w, 0.0))
    move = jax.jit(lambda p, s, v: solver._at(p, s, v))
    step = jax.jit(lambda p, s: solver.step(p, s))
    rng = np.random.default_rng(5)
    checked = 0
    for problem in problems:
        safe, _ = jax.jit(C.sanitize_problem)(problem)
        state = init(safe, jnp.zeros((problem.num_contacts, 3)))
        for _ in range(3):  # along the first Newton iterates, perturbed
            v = state.v + 0.1 * rng.normal(size=state.v.shape)
            state = move(safe, state, v)
            newton_dir = step(safe, state).v - v  # α* Δv
            for dv in (newton_dir, -state.gradient):
                alpha, reference, decrease, excess = map(float, line(safe, state, v, dv))
                assert abs(alpha - reference) <= 1e-4 * reference, (alpha, reference)
                assert decrease > 0 and excess <= 1e-9 * decrease, (decrease, excess)
                checked += 1
            state = step(safe, state)
    assert checked == 6 * len(problems)


def test_primal_newton_starts_from_a_primal_warm_start():
    """``solve(..., warm_primal=Bᵀ λ)`` (a problem with a Delassus factor ``B``): PrimalNewton
    started at the solution's ``Bᵀ λ*`` stops within one iteration with the same forces; a useless
    guess (huge, or NaN) falls back to ``v = 0`` and repeats the cold solve exactly; other solvers
    ignore it; its derivative is zero and a wrong shape raises."""
    import equinox as eqx

    n, nv = 16, 24
    p = compliant_batch(n, nv)
    factors = jnp.stack([_low_rank_factor(p.delassus[i], nv) for i in range(BATCH)])
    p = eqx.tree_at(lambda q: q.delassus_factor, p, factors, is_leaf=lambda x: x is None)
    newton = C.PrimalNewton(max_iterations=200, tolerance=1e-8)
    solve = jax.jit(jax.vmap(lambda q, w, s: C.solve(q, s, warm_primal=w), in_axes=(0, 0, None)))
    cold = solve(p, jnp.zeros((BATCH, nv)), newton)  # v = 0 is also where no warm start starts
    assert np.all(np.asarray(cold.converged)) and np.all(np.asarray(cold.iterations) >= 3)
    exact = jnp.einsum("bri,br->bi", factors, cold.force.reshape(BATCH, -1))
    warm = solve(p, exact, newton)
    assert np.all(np.asarray(warm.converged)) and np.all(np.asarray(warm.iterations) <= 1)
    np.testing.assert_allclose(warm.force, cold.force, atol=1e-7 * np.abs(cold.force).max())
    for useless in (1e8 * jnp.ones_like(exact), jnp.full_like(exact, jnp.nan)):
        fallback = solve(p, useless, newton)
        np.testing.assert_array_equal(fallback.iterations, cold.iterations)
        np.testing.assert_array_equal(fallback.force, cold.force)
    admm = C.ADMM("ccp", tolerance=1e-8, max_iterations=3000)
    with_guess, other_guess = solve(p, exact, admm), solve(p, 1e8 * jnp.ones_like(exact), admm)
    np.testing.assert_array_equal(with_guess.iterations, other_guess.iterations)
    np.testing.assert_array_equal(with_guess.force, other_guess.force)
    one = jax.tree_util.tree_map(lambda x: x[0], p)
    grad = jax.jit(jax.grad(lambda w: jnp.sum(C.solve(one, newton, warm_primal=w).force ** 2)))(exact[0])
    np.testing.assert_array_equal(grad, 0.0)
    with pytest.raises(ValueError, match="warm_primal"):
        C.solve(one, newton, warm_primal=exact[0, :-1])


def _scaled_problem(scale: float, dtype):
    """A random 8-contact problem with its free velocity scaled by ``scale`` (forces scale with
    it): at 1e2 (forces ~200) the 1e-6 tolerance is below what float32 can resolve of
    ``σ = G λ + g`` and ``λ · σ``, not below float64's."""
    p = B.random_problem(np.random.default_rng(3), 8, dtype=np.float64)
    return C.ContactProblem(jnp.asarray(p.delassus, dtype), jnp.asarray(scale * p.free_velocity, dtype),
                            jnp.asarray(p.friction, dtype))


def test_round_off_floors_closed_form():
    p = _scaled_problem(1.0, jnp.float64)
    force = jnp.asarray(np.random.default_rng(4).uniform(0.0, 2.0, (8, 3)))
    products = jnp.abs(p.delassus) @ jnp.abs(force.reshape(-1))
    floors = C._problem.round_off_floors(p, force, products)
    eps = C._problem.ROUND_OFF_ULPS * np.finfo(np.float64).eps
    lam = np.abs(np.asarray(force)).max(axis=1)
    rows = (np.asarray(products) + np.abs(np.asarray(p.free_velocity))).reshape(8, 3).max(axis=1)
    mu = np.asarray(p.friction)
    sigma = (1 + mu) * rows
    weight = np.abs(np.asarray(force)).sum(axis=1) + np.sqrt(2) * mu * np.abs(np.asarray(force)[:, 2])
    for got, want in zip(floors, [eps * lam, eps * sigma, eps * weight * rows], strict=True):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
    # inactive contacts have no floor
    inactive = C.ContactProblem(p.delassus, p.free_velocity, p.friction,
                                active=jnp.arange(8) < 3)
    assert all(np.all(np.asarray(x)[3:] == 0.0) for x in C._problem.round_off_floors(inactive, force, products))


def test_complementarity_floor_covers_the_velocity_round_off_it_assumes():
    """The complementarity floor is the largest change of ``λ · (σ + μ‖σ_T‖ e_N)`` when every row
    of ``σ`` is off by the ``ε s`` the floors assume (issue 42): sticking contacts, from no
    tangential force to the cone's edge, with a velocity error of that size on each row in the sign
    that adds up. The bound of earlier versions, ``ε (1 + μ) s |λ|∞``, was exceeded up to 1.9×
    at the cone's edge (float32 Go2 iterates hovered there and ran to the cap)."""
    rng = np.random.default_rng(11)
    n = 64
    mu = rng.choice([0.3, 1.0, 2.0], n)
    normal = rng.uniform(0.5, 3.0, n)
    edge = rng.uniform(0.0, 1.0, n) * mu * normal  # |λ_T| from 0 to the cone's edge
    angle = rng.uniform(0.0, 2 * np.pi, n)
    force = np.stack([edge * np.cos(angle), edge * np.sin(angle), normal], axis=1)
    for dtype in (np.float32, np.float64):
        G = np.eye(3 * n)
        products = np.abs(G) @ np.abs(force.reshape(-1))  # |A| |λ| = |λ|
        g = rng.uniform(-1.0, 1.0, 3 * n)
        p = C.ContactProblem(jnp.asarray(G, dtype), jnp.asarray(g, dtype), jnp.asarray(mu, dtype))
        eps = C._problem.ROUND_OFF_ULPS * np.finfo(dtype).eps
        row = (products + np.abs(g)).reshape(n, 3).max(axis=1)
        error = (eps * row)[:, None] * np.where(force >= 0, 1.0, -1.0)  # adds up in λ · s
        floors = C._problem.round_off_floors(p, jnp.asarray(force, dtype), jnp.asarray(products, dtype))
        # the term at the exact sticking solution (σ = 0) moved by that error, in float64
        s = error.copy()
        s[:, 2] += mu * np.linalg.norm(error[:, :2], axis=1)  # De Saxcé
        change = np.abs(np.sum(force * s, axis=1))
        ratio = change / np.asarray(floors.complementarity, np.float64)
        assert ratio.max() <= 1.0 + 1e-6, ratio.max()
        assert ratio.max() >= 0.99  # tight: slots with little tangential force reach it
        old_bound = eps * (1 + mu) * row * np.abs(force).max(axis=1)
        assert (change / old_bound).max() > 1.5  # what the earlier bound missed


def test_admm_stops_at_the_float32_round_off_floor():
    """Issue 42: with forces ~200 the float32 criterion cannot reach 1e-6; ADMM stops once every
    term is at its round-off floor, reports converged, and its forces agree with float64's to
    float32 accuracy. A cap that leaves the iterate above the floor still reports not converged,
    and in float64 the floor does not bind (the same iterations as the criterion alone)."""
    solver = C.ADMM("ncp", max_iterations=2000, tolerance=1e-6)
    p32, p64 = _scaled_problem(1e2, jnp.float32), _scaled_problem(1e2, jnp.float64)
    solve = eqx.filter_jit(C.solve)
    s32, s64 = solve(p32, solver), solve(p64, solver)
    assert bool(s64.converged) and float(s64.criterion) <= 1e-6
    assert bool(s32.converged), float(s32.criterion)
    assert float(s32.criterion) > 1e-6  # converged at the floor, not at the tolerance
    assert int(s32.iterations) < solver.max_iterations
    scale = float(jnp.max(jnp.abs(s64.force)))
    # measured: 1.6e-5 relative with the 4-ulp floors (1.4e-7, float32's own accuracy, when the
    # floors were 1 ulp: the criterion's slack reaches the forces through G's conditioning)
    assert float(jnp.max(jnp.abs(s32.force - s64.force))) <= 1e-4 * scale
    stopped = solve(p32, solver.replace(max_iterations=2))
    assert not bool(stopped.converged)

    class NoFloor(C.ADMM):
        def at_precision_limit(self, problem, state):
            return jnp.zeros((), bool)

    plain = NoFloor("ncp", max_iterations=2000, tolerance=1e-6)
    assert int(solve(p64, plain).iterations) == int(s64.iterations)


def test_admm_first_epoch_length():
    """``first_refactor`` sets the Cholesky variant's first epoch (default: ``refactor_every``),
    survives ``replace``, is 0 for the eigh variant (no epochs) and rejects non-positive values."""
    admm = C.ADMM(factorization="cholesky", refactor_every=10)
    assert (admm.epoch_length, admm.first_epoch_length) == (10, 10)
    short = admm.replace(first_refactor=5)
    assert (short.epoch_length, short.first_epoch_length) == (10, 5)
    assert short.replace(refactor_every=8).first_epoch_length == 5
    assert short.replace(factorization="eigh").first_epoch_length == 0
    # the step's default keeps one epoch length (a first epoch of 5 is measured, not the default:
    # docs/choosing_a_solver.md)
    assert jc.Options(dt=1e-3, gravity=(0.0, 0.0, -9.81)).solver.first_epoch_length == 10
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="first_refactor"):
            C.ADMM(factorization="cholesky", first_refactor=bad)
