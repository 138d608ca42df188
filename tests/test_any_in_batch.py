"""``any_in_batch``: a predicate made batch-wide, so that a ``lax.cond`` on it stays one branch."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxsim_contact._batching import any_in_batch


def test_unbatched_is_the_identity():
    assert bool(any_in_batch(jnp.array(True)))
    assert not bool(any_in_batch(jnp.array(False)))


def test_every_vmap_level_reduces_its_axis():
    flags = jnp.array([False, True, False])
    np.testing.assert_array_equal(jax.vmap(any_in_batch)(flags), [True, True, True])
    np.testing.assert_array_equal(jax.vmap(any_in_batch)(jnp.zeros(3, bool)), [False] * 3)
    nested = jax.vmap(jax.vmap(any_in_batch))
    one = jnp.zeros((2, 3), bool).at[1, 2].set(True)
    np.testing.assert_array_equal(nested(one), np.ones((2, 3), bool))
    np.testing.assert_array_equal(nested(jnp.zeros((2, 3), bool)), np.zeros((2, 3), bool))


def test_a_cond_on_it_stays_a_conditional_under_vmap_and_differentiates():
    def f(x, flag):
        return jax.lax.cond(any_in_batch(flag), lambda y: jnp.sin(y) * y, lambda y: 2.0 * y, x)

    xs, flags = jnp.array([0.3, 0.7]), jnp.array([False, True])
    hlo = jax.jit(jax.vmap(jax.grad(f))).lower(xs, flags).compile().as_text()
    assert " conditional(" in hlo
    plain = lambda x, flag: jax.lax.cond(flag, lambda y: jnp.sin(y) * y, lambda y: 2.0 * y, x)  # noqa: E731
    assert " conditional(" not in jax.jit(jax.vmap(jax.grad(plain))).lower(xs, flags).compile().as_text()
    # one lane needs the first branch: both lanes take it
    np.testing.assert_allclose(jax.vmap(jax.grad(f))(xs, flags), jnp.cos(xs) * xs + jnp.sin(xs))
    np.testing.assert_allclose(jax.vmap(jax.grad(f))(xs, jnp.zeros(2, bool)), [2.0, 2.0])
    # forward and reverse mode, and second order, through the cond
    np.testing.assert_allclose(jax.vmap(jax.jacfwd(f))(xs, flags), jax.vmap(jax.jacrev(f))(xs, flags))
    np.testing.assert_allclose(jax.vmap(jax.hessian(f))(xs, flags),
                               2.0 * jnp.cos(xs) - xs * jnp.sin(xs))
