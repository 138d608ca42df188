"""Anderson acceleration (``jaxsim_contact.contact._anderson``) and ADMM's ``anderson_memory``:
the extrapolation solves linear fixed points in about ``d`` steps where the plain iteration
crawls, an empty history gives the plain step, and ADMM with it still meets the NCP / CCP
criterion with forces in the cone."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim_contact as jc
from jaxsim_contact.contact._anderson import anderson_init, anderson_reset, anderson_step

from test_solvers import batch, run

C = jc.contact
#: (contacts, dofs) of test_solvers' random problems: full rank, and rank-deficient (hyperstatic);
#: the 1- and 64-contact sizes add compile time, not coverage of the extrapolation
SIZES = [(7, None), (16, 24)]


def _linear_map(d=6, contraction=0.97):
    """``T(x) = A x + b`` with ``‖A‖ = contraction`` (a rotation-like, non-symmetric A) and its
    fixed point."""
    rng = np.random.default_rng(3)
    Q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    A = contraction * Q @ np.diag(np.linspace(1.0, 0.5, d)) @ Q.T @ np.linalg.qr(rng.normal(size=(d, d)))[0]
    A *= contraction / np.linalg.norm(A, 2)
    b = rng.normal(size=d)
    return jnp.asarray(A), jnp.asarray(b), np.linalg.solve(np.eye(d) - A, b)


def _iterate(A, b, memory, steps):
    def body(carry, _):
        x, history = carry
        f = A @ x + b
        if memory == 0:
            return (f, history), None
        return anderson_step(history, x, f), None

    history = anderson_init(max(memory, 1), b.shape[0], b.dtype)
    (x, _), _ = jax.lax.scan(body, (jnp.zeros_like(b), history), None, length=steps)
    return x


def test_linear_fixed_point_in_about_d_steps():
    A, b, fixed = _linear_map()
    plain = jax.jit(lambda: _iterate(A, b, 0, 20))()
    accelerated = jax.jit(lambda: _iterate(A, b, 6, 20))()
    assert np.linalg.norm(plain - fixed) > 1e-2 * np.linalg.norm(fixed)
    np.testing.assert_allclose(accelerated, fixed, rtol=0, atol=1e-9 * np.linalg.norm(fixed))


def test_empty_history_is_the_plain_step_and_reset_empties_it():
    A, b, _ = _linear_map()
    x = jnp.ones_like(b)
    history = anderson_init(3, b.shape[0], b.dtype)
    f = A @ x + b
    x1, history = anderson_step(history, x, f)
    np.testing.assert_array_equal(x1, f)
    x2, history = anderson_step(history, x1, A @ x1 + b)
    assert int(history.count) == 2 and not np.allclose(x2, A @ x1 + b)
    emptied = anderson_reset(history, jnp.asarray(True))
    np.testing.assert_array_equal(anderson_step(emptied, x1, A @ x1 + b)[0], A @ x1 + b)
    kept = anderson_reset(history, jnp.asarray(False))
    assert int(kept.count) == 2


@pytest.mark.parametrize("formulation", ["ncp", "ccp"])
@pytest.mark.parametrize("factorization", ["cholesky", "eigh"])
def test_admm_with_anderson_meets_the_criterion(formulation, factorization):
    """Random problems (full rank and rank-deficient): ``anderson_memory=5`` converges to the
    formulation's criterion 1e-6 with forces in the friction cone."""
    kwargs = dict(max_iterations=3000, tolerance=1e-6, factorization=factorization,
                  rho_update="balanced", refactor_every=10 if factorization == "cholesky" else 1)
    accelerated = C.ADMM(formulation, anderson_memory=5, **kwargs)
    for n, nv in SIZES:
        p = batch(n, nv)
        sol = run(accelerated, p)
        crit = jax.vmap(lambda q, f: C.criterion(q, f, formulation))(p, sol.force)
        assert np.all(np.asarray(sol.converged)) and np.all(np.asarray(crit) <= 1e-6), (n, np.asarray(crit))
        force = np.asarray(sol.force)
        mu = np.asarray(p.friction)[..., None]
        assert np.all(force[..., 2] >= 0)
        assert np.all(np.linalg.norm(force[..., :2], axis=-1) <= mu[..., 0] * force[..., 2] + 1e-12)


def test_admm_with_anderson_finds_plain_admms_ccp_solution():
    """The CCP has a unique contact velocity (and, with ``G`` of full rank, a unique force): solved
    to 1e-10 with and without Anderson acceleration, both agree to 1e-7 relative (velocities
    relative to the free velocity)."""
    kwargs = dict(max_iterations=3000, tolerance=1e-10, factorization="cholesky",
                  rho_update="balanced", refactor_every=10)
    plain, accelerated = C.ADMM("ccp", **kwargs), C.ADMM("ccp", anderson_memory=5, **kwargs)
    for n, nv in SIZES:
        p = batch(n, nv)
        got, want = run(accelerated, p), run(plain, p)
        assert np.all(np.asarray(got.converged)) and np.all(np.asarray(want.converged))
        # contact velocities are ~0 where contacts stick: measure them against the free velocity
        scale = np.max(np.abs(np.asarray(p.free_velocity)))
        np.testing.assert_allclose(got.velocity, want.velocity, rtol=0, atol=1e-7 * scale)
        if nv is None:
            scale = np.max(np.abs(np.asarray(want.force)))
            np.testing.assert_allclose(got.force, want.force, rtol=0, atol=1e-7 * scale)


def test_anderson_memory_is_validated():
    for bad in (-1, True, 2.5):
        with pytest.raises(ValueError, match="anderson_memory"):
            C.ADMM("ncp", anderson_memory=bad)
        with pytest.raises(ValueError, match="anderson_memory"):
            C.StaggeredProjections(anderson_memory=bad)
    assert C.ADMM("ncp").replace(anderson_memory=3).anderson_memory == 3
