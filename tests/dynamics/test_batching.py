"""``jc.chunked_vmap``: same results as ``jax.vmap`` for any batch size, including pytrees with
zero-size leaves (MJX's ``Data`` and our states without constraints of a kind carry ``(B, 0)``
arrays), and clear errors for bad arguments."""

from __future__ import annotations

from pathlib import Path

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


def test_unjitted_vmap_of_a_step_runs_and_flags_the_bad_environment():
    """``jax.vmap(jc.step)`` called op by op (no ``jit``), as in a notebook. The error bits were
    combined as ``int32 | weak int64`` arrays, whose op-by-op program segfaulted XLA:CPU's
    compiler (jaxlib 0.10.2); they are int32 throughout, and equal to the jitted step's."""
    model = jc.load(Path(__file__).resolve().parents[1] / "models" / "pendulum.xml")
    state = jax.tree_util.tree_map(lambda x: jnp.stack([x, x]), jc.init(model))
    state = jc.State(q=state.q, v=state.v.at[1, 0].set(jnp.nan), time=state.time,
                     error=state.error, contact=state.contact)
    step = jax.vmap(jc.step, in_axes=(None, 0))
    out = step(model, state)
    assert out.error.dtype == jnp.int32
    np.testing.assert_array_equal(np.asarray(out.error), [0, jc.ErrorFlag.NON_FINITE_STATE])
    jitted = jax.jit(step)(model, state)
    for leaf, want in zip(jax.tree_util.tree_leaves(out), jax.tree_util.tree_leaves(jitted)):
        np.testing.assert_allclose(np.asarray(leaf), np.asarray(want), rtol=1e-12, atol=1e-12)
