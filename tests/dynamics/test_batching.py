"""``jc.chunked_vmap``: same results as ``jax.vmap`` for any batch size, including pytrees with
zero-size leaves (MJX's ``Data`` and our states without constraints of a kind carry ``(B, 0)``
arrays), and clear errors for bad arguments."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim_contact as jc


def _fn(tree):
    x, empty = tree["x"], tree["empty"]
    return {"y": jnp.sin(x) * jnp.sum(x), "empty": empty * 2.0, "count": jnp.sum(x > 0)}


@pytest.mark.parametrize("batch", [1, 5, 8])
def test_chunked_equals_vmap_with_zero_size_leaves(batch):
    rng = np.random.default_rng(batch)
    tree = {"x": jnp.asarray(rng.normal(size=(batch, 3))), "empty": jnp.zeros((batch, 0, 2))}
    want = jax.vmap(_fn)(tree)
    got = jax.jit(jc.chunked_vmap(_fn, chunk_size=4))(tree)
    assert got["empty"].shape == (batch, 0, 2)
    np.testing.assert_allclose(got["y"], want["y"], rtol=1e-15, atol=0)
    np.testing.assert_array_equal(got["count"], want["count"])


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="chunk_size"):
        jc.chunked_vmap(_fn, chunk_size=0)
    with pytest.raises(ValueError, match="same leading batch axis"):
        jc.chunked_vmap(lambda a, b: a + b)(jnp.zeros(3), jnp.zeros(4))
