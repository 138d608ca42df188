"""``switch_on_max``: a switch that stays one branch under nested ``vmap``."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxsim_contact._batching import switch_on_max

BRANCHES = (lambda x: 0.0 * x, lambda x: x + 1.0, lambda x: 10.0 * x)


def _switch(index, x):
    return switch_on_max(index, BRANCHES, x)


def test_unbatched_is_lax_switch():
    x = jnp.arange(3.0)
    for index in range(3):
        np.testing.assert_array_equal(_switch(jnp.int32(index), x),
                                      jax.lax.switch(index, BRANCHES, x))


def test_every_vmap_level_takes_the_batch_maximum():
    x = jnp.ones((2, 4, 3))
    # inner level: index unbatched, operand batched; outer level: index batched
    nested = jax.vmap(jax.vmap(_switch, in_axes=(None, 0)), in_axes=(0, 0))
    np.testing.assert_array_equal(nested(jnp.array([0, 1]), x), BRANCHES[1](x))
    np.testing.assert_array_equal(nested(jnp.array([2, 0]), x), BRANCHES[2](x))
    # index batched at both levels: reduced at the inner one, per outer lane (module docstring)
    both = jax.vmap(jax.vmap(_switch))
    out = both(jnp.array([[0, 0], [0, 1]]), x[:, :2])
    np.testing.assert_array_equal(out[0], BRANCHES[0](x[0, :2]))
    np.testing.assert_array_equal(out[1], BRANCHES[1](x[1, :2]))
    # a plain lax.switch would run every branch (a select); this keeps one conditional
    hlo = jax.jit(nested).lower(jnp.array([0, 1]), x).compile().as_text()
    assert hlo.count(" conditional(") == 1
    plain = jax.vmap(jax.vmap(lambda i, y: jax.lax.switch(i, BRANCHES, y), in_axes=(None, 0)))
    assert jax.jit(plain).lower(jnp.array([0, 1]), x).compile().as_text().count(" conditional(") == 0

