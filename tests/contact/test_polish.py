"""Polishing a capped ADMM solve (``jaxsim_contact.contact._polish``): from the contact modes of the
best iterate, one linear solve (repeated while the modes change) reaches the tolerance where ADMM
stopped at its cap; solves that converged are untouched bit for bit, in a batch too; the implicit
derivative of a polished solve is the converged solve's."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim_contact as jc
from jaxsim_contact.contact._defaults import default_step_solver

B = jc.testing.problems
TOLERANCE = 1e-6


def _criterion(problem, force) -> float:
    r = jc.contact.residuals(problem, force)  # recomputed here, not the solver's own report
    return max(float(r.primal), float(r.dual), float(r.complementarity))


def _solve(problem, cap: int, polish: bool):
    solver = default_step_solver().replace(max_iterations=cap, polish=polish)
    return jax.jit(lambda p: jc.contact.solve(p, solver))(problem)


@pytest.mark.parametrize("name, problem, cap", [
    # three stacked boxes: 12 contacts, a rank-deficient (hyperstatic) Delassus matrix
    ("stack", B.box_stack([1.0, 2.0, 0.5]).problem(0.01), 5),
    # a cube sliding and spinning on the floor: four sliding corners
    ("sliding", B.cube_on_plane(velocity=(1.0, 0.3, -0.2)).problem(0.01), 10),
])
def test_a_capped_solve_is_polished_to_the_tolerance(name, problem, cap):
    plain = _solve(problem, cap, polish=False)
    polished = _solve(problem, cap, polish=True)
    assert not bool(plain.converged) and _criterion(problem, plain.force) > 1e-2
    assert bool(polished.converged) and int(polished.iterations) == cap
    assert _criterion(problem, polished.force) <= TOLERANCE
    # the same solution ADMM reaches when allowed to converge (unique normal forces here; the
    # stack's tangential split is not unique, its contact velocities are)
    converged = _solve(problem, 200, polish=False)
    assert bool(converged.converged)
    np.testing.assert_allclose(polished.velocity, converged.velocity, atol=1e-5)


def test_converged_solves_are_bitwise_unchanged_alone_and_in_a_batch():
    problem = B.box_stack([1.0, 2.0, 0.5]).problem(0.01)
    a, b = _solve(problem, 40, polish=False), _solve(problem, 40, polish=True)
    assert bool(a.converged) and np.array_equal(a.force, b.force)

    # a batch where some lanes cap and others converge: the polish runs (batch-wide branch) and
    # must leave the converged lanes exactly as they were
    velocities = [(1.0, 0.3, -0.2), (0.0, 0.0, -0.05), (0.4, -0.8, -0.1), (0.0, 0.0, 0.0)]
    problems = [B.cube_on_plane(velocity=v).problem(0.01) for v in velocities]
    batch = jax.tree_util.tree_map(lambda *x: jnp.stack(x), *problems)

    def run(polish):
        solver = default_step_solver().replace(max_iterations=10, polish=polish)
        return jax.jit(jax.vmap(lambda p: jc.contact.solve(p, solver)))(batch)

    plain, polished = run(False), run(True)
    capped = ~np.asarray(plain.converged)
    assert capped.any() and (~capped).any(), np.asarray(plain.converged)
    np.testing.assert_array_equal(np.asarray(polished.force)[~capped], np.asarray(plain.force)[~capped])
    assert np.asarray(polished.converged).all()
    for k in np.flatnonzero(capped):
        assert _criterion(problems[k], polished.force[k]) <= TOLERANCE


def test_the_derivative_of_a_polished_solve_is_the_converged_one():
    problem = B.cube_on_plane(velocity=(1.0, 0.3, -0.2)).problem(0.01)

    def force_of(g, cap, polish):
        solver = default_step_solver().replace(max_iterations=cap, polish=polish)
        return jc.contact.solve(eqx_replace(problem, free_velocity=g), solver).force

    g = problem.free_velocity
    forward = jax.jit(jax.jacfwd(lambda g: force_of(g, 10, True)))(g)
    reverse = jax.jit(jax.jacrev(lambda g: force_of(g, 10, True)))(g)
    reference = jax.jit(jax.jacfwd(lambda g: force_of(g, 200, False)))(g)
    assert np.abs(reference).max() > 0.1  # a derivative that is not trivially zero
    np.testing.assert_allclose(forward, reverse, atol=1e-9)
    np.testing.assert_allclose(forward, reference, atol=1e-5 * np.abs(reference).max())


def eqx_replace(problem, **changes):
    import equinox as eqx

    names = list(changes)
    return eqx.tree_at(lambda p: [getattr(p, n) for n in names], problem, [changes[n] for n in names])


def test_polish_option_is_validated():
    with pytest.raises(ValueError, match="polish"):
        jc.contact.ADMM(polish="yes")
    assert jc.contact.ADMM().polish and not jc.contact.ADMM(polish=False).polish


def test_a_solution_of_a_hyperstatic_set_is_a_fixed_point_of_the_polish_step():
    # a cube resting on four corners: 12 rows on 6 dofs, so sticking solutions form a family. The
    # active-set Newton step solves for the correction of its iterate, so any member of the family
    # is kept as it is, not replaced by the family's minimum-norm member
    from jaxsim_contact.contact._polish import _polish_step

    problem = B.cube_on_plane(velocity=(0.0, 0.0, 0.0)).problem(0.01)
    solver = default_step_solver().replace(max_iterations=2000, tolerance=1e-12)
    force = np.asarray(jax.jit(lambda p: jc.contact.solve(p, solver))(problem).force)
    _, singular, vt = np.linalg.svd(np.asarray(problem.compliant_delassus))
    null = vt[singular < 1e-9 * singular[0]]
    assert null.shape[0] == 6  # the statically indeterminate directions
    direction = null[0].reshape(force.shape)
    other = force + 0.1 * np.abs(force).max() * direction / np.abs(direction).max()
    assert _criterion(problem, jnp.asarray(other)) <= 1e-12  # inside the cones: also a solution
    assert np.abs(other - force).max() > 0.2  # a different member of the family
    stepped = _polish_step(problem, jnp.asarray(other), "ncp", jnp.asarray(TOLERANCE))
    np.testing.assert_allclose(np.asarray(stepped), other, atol=1e-12)
