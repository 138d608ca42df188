"""``jc.contact.solve_batch``: a batch solved on a few lanes fed from a work queue gives what
``jax.vmap(jc.contact.solve)`` gives — forces, iteration counts, convergence flags, derivatives
in forward and reverse mode — for solvers with and without epochs, with lanes fewer than and
not dividing the batch, inactive contacts, a non-finite problem and warm starts."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim_contact as jc

C = jc.contact
SOLVERS = {
    # eigh variant: no epochs, one step per advance
    "admm-eigh": C.ADMM("ncp", tolerance=1e-8, max_iterations=400),
    # jc.step's ADMM: epochs of 10 iterations (Cholesky refresh), Anderson history in the state
    "admm-step": jc.Options(dt=1e-3, gravity=(0.0, 0.0, -9.81)).solver.replace(
        tolerance=1e-8, max_iterations=400),
    "pgs": C.PGS("ncp", tolerance=1e-6, max_iterations=300),
}


def _problems(count=11, n=3):
    """Random problems with spread-out iteration counts; one has an inactive contact and one a
    NaN in its Delassus matrix (a lane must retire it with zero force, ``converged=False``)."""
    rng = np.random.default_rng(4)
    problems = [jc.testing.problems.random_problem(rng, n) for _ in range(count)]
    problems[2] = C.ContactProblem(problems[2].delassus, problems[2].free_velocity,
                                   problems[2].friction, active=jnp.asarray([True, False, True]))
    stacked = jax.tree_util.tree_map(lambda *x: jnp.stack(x), *problems)
    # (the constructor rejects a concrete NaN: it enters as traced data would)
    return eqx.tree_at(lambda p: p.delassus, stacked, stacked.delassus.at[5, 0, 0].set(jnp.nan))


@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_queue_gives_the_vmapped_solution(name):
    solver = SOLVERS[name]
    problems = _problems()
    reference = jax.jit(jax.vmap(lambda p: C.solve(p, solver)))(problems)
    # 4 lanes for 11 problems: lanes are refilled several times and the last trip is partial
    queued = jax.jit(lambda p: C.solve_batch(p, solver, lanes=4, refill_every=3))(problems)
    iterations = np.asarray(reference.iterations)
    # lanes retire their problems at different refills (every 3 iterations)
    assert len(np.unique(iterations // 3)) >= 3
    np.testing.assert_array_equal(queued.iterations, reference.iterations)
    np.testing.assert_array_equal(queued.converged, reference.converged)
    # same iterations; values the same to round-off of each problem's force and velocity scale (a
    # sticking contact's velocity and the residuals are ~1e-10 differences of O(1) quantities: their
    # last digits are round-off of those). Bit for bit is not a contract: XLA fuses the two programs
    # differently (under the suite's legacy CPU emitters they differ at 1e-14).
    magnitude = np.maximum(np.abs(np.asarray(reference.force)), np.abs(np.asarray(reference.velocity)))
    scale = np.max(magnitude, axis=(1, 2), initial=0.0, where=np.isfinite(magnitude))
    for field in ("force", "velocity", "criterion", "rho", "primal", "dual", "complementarity"):
        for k, (got, want) in enumerate(zip(np.asarray(getattr(queued, field)),
                                            np.asarray(getattr(reference, field)))):
            # jc.step's ADMM rescales ρ by √(primal / dual) of two ~1e-10 residuals: ρ carries
            # their relative round-off (1e-5 in the sticking velocity above), not the forces'
            rtol = 1e-5 if field == "rho" else 1e-12
            np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-12 * scale[k],
                                       err_msg=f"{field} of problem {k}")
    assert not bool(queued.converged[5]) and float(jnp.max(jnp.abs(queued.force[5]))) == 0.0
    assert float(jnp.max(jnp.abs(queued.force[2, 1]))) == 0.0
    if name.startswith("admm"):
        assert bool(jnp.all(queued.converged.at[5].set(True)))


def test_more_lanes_than_problems_and_warm_starts():
    solver = SOLVERS["admm-eigh"]
    problems = jax.tree_util.tree_map(lambda x: x[:3], _problems())
    cold = C.solve_batch(problems, solver)  # lanes=None: default_lanes → 32 > 3 problems
    np.testing.assert_allclose(cold.force, jax.vmap(lambda p: C.solve(p, solver))(problems).force,
                               rtol=1e-12, atol=1e-14)
    # warm-started at the solution (a batched ContactSolution, with its ρ): no iteration needed
    warm = C.solve_batch(problems, solver, warm_start=cold, lanes=2)
    assert int(jnp.max(warm.iterations)) <= 1
    np.testing.assert_allclose(warm.force, cold.force, atol=1e-7)
    warm_forces = C.solve_batch(problems, solver, warm_start=cold.force, lanes=2)
    assert int(jnp.sum(warm_forces.iterations)) < int(jnp.sum(cold.iterations))


def test_queue_derivatives_match_the_vmapped_solve_in_both_modes():
    solver = SOLVERS["admm-eigh"]
    problems = _problems(count=6)

    def loss(fn, g):
        p = eqx.tree_at(lambda p: p.free_velocity, problems, g)
        return jnp.sum(fn(p).force[..., 2] * jnp.arange(1.0, 4.0))

    def queued(p):
        return C.solve_batch(p, solver, lanes=4, refill_every=5)

    def vmapped(p):
        return jax.vmap(lambda q: C.solve(q, solver))(p)

    g = problems.free_velocity
    direction = jnp.asarray(np.random.default_rng(1).normal(size=g.shape))
    reverse_q = jax.jit(jax.grad(lambda g: loss(queued, g)))(g)
    reverse_v = jax.jit(jax.grad(lambda g: loss(vmapped, g)))(g)
    forward_q = jax.jit(lambda g: jax.jvp(lambda g: loss(queued, g), (g,), (direction,))[1])(g)
    forward_v = jax.jit(lambda g: jax.jvp(lambda g: loss(vmapped, g), (g,), (direction,))[1])(g)
    assert float(jnp.max(jnp.abs(reverse_v))) > 0.1  # the forces depend on g
    np.testing.assert_allclose(reverse_q, reverse_v, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(forward_q, forward_v, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(forward_q, jnp.vdot(reverse_q, direction), rtol=1e-9)


def test_bad_arguments_raise():
    problems = _problems()
    with pytest.raises(ValueError, match="lanes"):
        C.solve_batch(problems, lanes=0)
    with pytest.raises(ValueError, match="refill_every"):
        C.solve_batch(problems, refill_every=2.5)
    with pytest.raises(ValueError, match="unrolled"):
        C.solve_batch(problems, gradient="unrolled")
    with pytest.raises(ValueError, match="leading batch axis"):
        C.solve_batch(jax.tree_util.tree_map(lambda x: x[0], problems))


def test_default_lanes_follow_the_problem_size():
    """``lanes=None``: the lanes' Delassus matrices kept within ``LANE_BUDGET_BYTES`` (32 lanes for
    small problems, 2 for 64 contacts in float64, twice that in float32), never fewer than 2."""
    from jaxsim_contact.contact._work_queue import default_lanes

    assert [default_lanes(n, jnp.float64) for n in (1, 4, 16, 32, 64, 256)] == [32, 32, 32, 8, 2, 2]
    assert default_lanes(64, jnp.float32) == 4
