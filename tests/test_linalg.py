"""Block-by-block Cholesky over the kinematic trees (jaxsim_contact._linalg)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim_contact as jc
from jaxsim_contact._linalg import grouped_cholesky


def _spd_on_blocks(rng, n, blocks):
    matrix = np.zeros((n, n))
    for dofs in blocks:
        a = rng.normal(size=(len(dofs), len(dofs)))
        matrix[np.ix_(dofs, dofs)] = a @ a.T + len(dofs) * np.eye(len(dofs))
    return matrix


@pytest.mark.parametrize("dtype", [jnp.float64, jnp.float32])
def test_grouped_cholesky_is_the_dense_factor_for_interleaved_blocks(dtype):
    """Blocks of sizes 1, 2 and 3 whose dofs interleave (no block is contiguous): ``L`` and
    ``L⁻¹`` equal numpy's dense factor and its inverse, and ``L`` is lower triangular."""
    rng = np.random.default_rng(0)
    blocks = [(0, 4, 7), (1, 5), (2, 3, 8), (6,)]
    groups = ((blocks[3],), (blocks[1],), (blocks[0], blocks[2]))
    matrix = _spd_on_blocks(rng, 9, blocks)
    chol, inverse = jax.jit(lambda m: grouped_cholesky(m, groups))(jnp.asarray(matrix, dtype))
    reference = np.linalg.cholesky(matrix)
    tol = 1e-12 if dtype == jnp.float64 else 1e-4
    np.testing.assert_allclose(chol, reference, atol=tol * np.abs(reference).max())
    np.testing.assert_allclose(inverse, np.linalg.inv(reference), atol=tol * 10)
    assert np.all(np.triu(np.asarray(chol), 1) == 0)


def test_grouped_cholesky_with_one_block_is_the_dense_path():
    rng = np.random.default_rng(1)
    matrix = _spd_on_blocks(rng, 5, [tuple(range(5))])
    chol, inverse = grouped_cholesky(jnp.asarray(matrix), ((tuple(range(5)),),))
    np.testing.assert_allclose(chol, np.linalg.cholesky(matrix), atol=1e-12)
    np.testing.assert_allclose(inverse @ chol, np.eye(5), atol=1e-12)


def test_dof_tree_groups_split_a_scene_into_its_kinematic_trees():
    """A 3-box tower is three free bodies (three 6-dof trees, one group); the smooth dynamics
    factor built from them equals the dense factor of ``M + Δt D``."""
    model = jc.scenes.load("tower", count=3)
    assert model.tree.dof_tree_groups == (tuple(tuple(range(6 * t, 6 * t + 6)) for t in range(3)),)
    state = jc.init(model)
    smooth = jc.dynamics.smooth_dynamics(model, state, None)
    damped = smooth.mass_matrix + model.options.dt * jnp.diag(model.dof_damping)
    np.testing.assert_allclose(smooth.cholesky, np.linalg.cholesky(np.asarray(damped)), atol=1e-12)
    np.testing.assert_allclose(smooth.cholesky_inverse @ smooth.cholesky, np.eye(model.nv),
                               atol=1e-12)


@pytest.mark.parametrize("groups", [((tuple(range(5)),),),                      # one block: dense path
                                    (((0, 2), (1, 4)), ((3,),))],                # blocks
                         ids=["dense", "blocks"])
def test_grouped_cholesky_derivatives_match_finite_differences(groups):
    """The factor's matrix-product derivative rule, forward and reverse mode, against central
    differences (``check_grads``) and against JAX's own Cholesky derivative of the dense factor."""
    from jax.test_util import check_grads

    rng = np.random.default_rng(2)
    blocks = [dofs for group in groups for dofs in group]
    matrix = jnp.asarray(_spd_on_blocks(rng, 5, blocks))
    pattern = np.zeros((5, 5), bool)
    for dofs in blocks:
        pattern[np.ix_(dofs, dofs)] = True
    pattern = jnp.asarray(pattern)

    def factors(m):  # a symmetric perturbation within the blocks keeps the matrix block-SPD
        m = jnp.where(pattern, 0.5 * (m + m.T), 0.0)
        return grouped_cholesky(m, groups)

    check_grads(factors, (matrix,), order=1, modes=("fwd", "rev"), atol=1e-6, rtol=1e-6)
    tangent = jnp.asarray(rng.normal(size=(5, 5)))
    _, (dchol, dinverse) = jax.jvp(factors, (matrix,), (tangent,))

    def reference(m):
        chol = jnp.linalg.cholesky(jnp.where(pattern, 0.5 * (m + m.T), 0.0))
        return chol, jnp.linalg.inv(chol)

    _, (ref_chol, ref_inverse) = jax.jvp(reference, (matrix,), (tangent,))
    np.testing.assert_allclose(dchol, ref_chol, atol=1e-12)
    np.testing.assert_allclose(dinverse, ref_inverse, atol=1e-12)
