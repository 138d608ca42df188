"""jaxsim_contact.math helpers that replace slow XLA:CPU lowerings."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsim_contact.math import argmax_first, argmin_first


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_argmax_first_and_argmin_first_equal_jnp_on_ties_and_every_axis(dtype):
    """Same indices as ``jnp.argmax`` / ``jnp.argmin`` (first extremum) on data full of ties
    (integers 0–3), with ±inf and ±max/4 entries (the masks the narrow phase and EPA use), on
    every axis, under ``jit`` and ``vmap``; int32 like them."""
    rng = np.random.default_rng(0)
    x = rng.integers(0, 4, size=(6, 7, 9)).astype(dtype)
    big = np.finfo(dtype).max / 4
    x[rng.random(x.shape) < 0.1] = big
    x[rng.random(x.shape) < 0.1] = -big
    x[rng.random(x.shape) < 0.05] = np.inf
    x[rng.random(x.shape) < 0.05] = -np.inf
    x[0, 0, :] = np.inf  # a slice that is all +inf: index 0, as argmin/argmax
    x = jnp.asarray(x)
    for axis in (0, 1, 2, -1, -2):
        for ours, theirs in ((argmax_first, jnp.argmax), (argmin_first, jnp.argmin)):
            got = jax.jit(ours, static_argnums=1)(x, axis)
            np.testing.assert_array_equal(got, theirs(x, axis=axis))
            assert got.dtype == jnp.int32
    batched = jax.vmap(lambda row: argmax_first(row))(x.reshape(-1, 9))
    np.testing.assert_array_equal(batched, jnp.argmax(x.reshape(-1, 9), axis=-1))


def test_argmax_first_stays_in_range_on_nan():
    """A slice with a NaN has no maximum: the index is still a valid index of the slice."""
    x = jnp.asarray([[1.0, np.nan, 3.0], [np.nan, np.nan, np.nan]])
    for fn in (argmax_first, argmin_first):
        got = np.asarray(fn(x))
        assert np.all((got >= 0) & (got < 3))
