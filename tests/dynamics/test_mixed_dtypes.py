"""Mixed dtypes (issue 42, "Bad input"): a state of another dtype than the model's raises a
``TypeError`` while tracing (it used to make a float32 model's step float64); controls are cast
to the model's dtype once (float64 actions from NumPy to a float32 model)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim_contact as jc


@pytest.fixture(scope="module")
def models():
    return (jc.scenes.load("pushed_ball", dtype=jnp.float32),
            jc.scenes.load("pushed_ball", dtype=jnp.float64))


def test_a_state_of_another_dtype_raises_naming_both(models):
    model32, model64 = models
    for model, other in ((model32, model64), (model64, model32)):
        state = jc.init(other)
        with pytest.raises(TypeError, match=f"state.q is {jnp.dtype(other.dtype)} but the model is "
                                            f"{jnp.dtype(model.dtype)}"):
            jax.jit(jc.step)(model, state)
        converted = jc.init(model, q=state.q, v=state.v)  # the conversion the message names
        assert jc.step(model, converted).q.dtype == model.dtype


def test_float64_controls_are_cast_to_a_float32_model(models):
    model32, _ = models
    state = jc.init(model32)
    ctrl32 = jnp.full((model32.nu,), 0.25, jnp.float32)  # exact in both dtypes
    ctrl64 = np.full((model32.nu,), 0.25, np.float64)
    stepped = jax.jit(jc.step)
    a, b = stepped(model32, state, ctrl32), stepped(model32, state, ctrl64)
    assert b.q.dtype == jnp.float32 and b.v.dtype == jnp.float32
    np.testing.assert_array_equal(np.asarray(a.q), np.asarray(b.q))
    np.testing.assert_array_equal(np.asarray(a.v), np.asarray(b.v))
