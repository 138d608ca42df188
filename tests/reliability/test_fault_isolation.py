"""Fault isolation in a batch (issue 8): one environment fed NaN, ±inf or 1e30 in q, v or ctrl.

The other environments' trajectories and gradients stay bitwise identical to a clean run, the
faulty one is flagged in the step that receives the bad value, its outputs stay finite and its
gradient contribution is exactly zero (so the batch-mean loss and its gradient equal those of the
batch with that environment masked out), and ``jc.reset_where`` brings it back.

One compiled function serves every case: ``value_and_grad`` of a weighted batch-mean loss over a
vmapped rollout (weights are an input, so masking an environment out does not recompile).
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim_contact as jc
from jaxsim_contact import ErrorFlag

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scenes import batch_inputs, pusher  # noqa: E402

BATCH, HORIZON = 256, 6
BAD_ENV = 37
CTRL_FAULT_STEP = 2  # a bad control arrives mid-rollout: the flag must appear exactly there
FAULTS = {"nan": np.nan, "+inf": np.inf, "-inf": -np.inf, "1e30": 1e30}


def env_loss(model, q0, v0, ctrls):
    """Final x position plus kinetic energy of one environment; the trajectory as auxiliary."""
    final, traj = jc.rollout(model, jc.init(model, q=q0, v=v0), ctrls)
    return final.q[0] + 0.5 * jnp.sum(final.v**2), traj


def batch_loss(model, q0, v0, ctrls, weight):
    """``Σ_i weight_i loss_i / B`` (weight 1 everywhere is the batch mean)."""
    loss, traj = jax.vmap(env_loss, in_axes=(None, 0, 0, 0))(model, q0, v0, ctrls)
    return jnp.sum(weight * loss) / loss.shape[0], (loss, traj)


run = jax.jit(jax.value_and_grad(batch_loss, argnums=(0, 1, 2, 3), has_aux=True))


@functools.cache
def clean():
    model = pusher()
    q0, v0, ctrls = batch_inputs(model, BATCH, HORIZON)
    return model, (q0, v0, ctrls), run(model, q0, v0, ctrls, jnp.ones(BATCH))


@functools.cache
def masked_reference():
    """The clean batch with the bad environment's loss weighted by 0."""
    model, (q0, v0, ctrls), _ = clean()
    return run(model, q0, v0, ctrls, jnp.ones(BATCH).at[BAD_ENV].set(0.0))


def inject(target: str, value: float):
    model, (q0, v0, ctrls), _ = clean()
    if target == "q":
        q0 = q0.at[BAD_ENV, 1].set(value)
    elif target == "v":
        v0 = v0.at[BAD_ENV, 0].set(value)
    else:
        ctrls = ctrls.at[BAD_ENV, CTRL_FAULT_STEP, 0].set(value)
    return run(model, q0, v0, ctrls, jnp.ones(BATCH))


def others(tree):
    """Every leaf without the bad environment's row (leading axis = batch)."""
    keep = np.arange(BATCH) != BAD_ENV
    return [np.asarray(x)[keep] for x in jax.tree_util.tree_leaves(tree)]


def assert_bitwise_equal(a, b):
    for x, y in zip(a, b, strict=True):
        assert x.dtype == y.dtype and x.shape == y.shape
        assert x.tobytes() == y.tobytes()


def test_clean_batch_is_healthy_and_in_contact():
    _, _, ((value, (loss, traj)), grads) = clean()
    assert np.all(np.asarray(traj.error) == 0)
    assert np.all(np.isfinite(np.asarray(loss))) and np.isfinite(float(value))
    # spheres that start inside the floor are pushed out: the contact stage is exercised
    assert int(np.sum(np.asarray(traj.contact.num_active)[:, 0])) > BATCH // 4
    assert all(np.all(np.isfinite(np.asarray(g))) for g in jax.tree_util.tree_leaves(grads))


@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.parametrize("target", ["q", "v", "ctrl"])
def test_one_faulty_environment_is_isolated(target, fault):
    _, _, ((clean_value, (clean_loss, clean_traj)), clean_grads) = clean()
    (value, (loss, traj)), grads = inject(target, FAULTS[fault])
    model_grad, q0_grad, v0_grad, ctrl_grad = grads

    # the other 255 trajectories and their per-environment gradients: bitwise unchanged
    assert_bitwise_equal(others(traj), others(clean_traj))
    assert_bitwise_equal(others(loss), others(clean_loss))
    assert_bitwise_equal(others((q0_grad, v0_grad, ctrl_grad)), others(clean_grads[1:]))

    # the faulty environment: flagged in the very step that received the bad value
    errors = np.asarray(traj.error)[BAD_ENV]
    bit = ErrorFlag.INVALID_CONTROL if target == "ctrl" else ErrorFlag.NON_FINITE_STATE
    first = CTRL_FAULT_STEP if target == "ctrl" else 0
    assert np.all(errors[:first] == 0)
    assert np.all(errors[first:] & bit)
    assert np.all(np.delete(np.asarray(traj.error), BAD_ENV, axis=0) == 0)
    # ... frozen at a finite state, with no derivative
    for leaf in jax.tree_util.tree_leaves((traj, loss, value, grads)):
        assert np.all(np.isfinite(np.asarray(leaf)))
    for g in (q0_grad, v0_grad, ctrl_grad):
        assert np.all(np.asarray(g)[BAD_ENV] == 0.0)

    # the batch-mean loss and its gradient equal the batch with the faulty environment masked
    (ref_value, _), ref_grads = masked_reference()
    frozen_loss = float(loss[BAD_ENV])
    np.testing.assert_allclose(float(value), float(ref_value) + frozen_loss / BATCH, rtol=0, atol=1e-15)
    for got, want in zip(jax.tree_util.tree_leaves(model_grad), jax.tree_util.tree_leaves(ref_grads[0]),
                         strict=True):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12, atol=1e-15)
    assert float(clean_value) != float(value)  # the clean run does differ in the faulty env


def test_frozen_environment_holds_its_last_valid_state():
    """Value limit 5 (dynamic option, no recompile): env BAD_ENV starts 5 cm above the floor at
    v_x = 4.99 m/s, pushed by 4.99 N, so its first step leaves the limit (v_x = 5.04 m/s); it is
    flagged there and holds its input state (finite, derivative-free) from then on."""
    model, (q0, v0, ctrls), _ = clean()
    limited = model.replace_options(value_limit=5.0)
    q0 = q0.at[BAD_ENV, 1].set(0.05)
    v0 = v0.at[BAD_ENV, 0].set(4.99)
    ctrls = ctrls.at[BAD_ENV].set(4.99)
    (_, (_, traj)), grads = run(limited, q0, v0, ctrls, jnp.ones(BATCH))
    errors = np.asarray(traj.error)
    assert np.all(errors[BAD_ENV] == ErrorFlag.NON_FINITE_STATE)
    assert np.all(np.delete(errors, BAD_ENV, axis=0) == 0)
    np.testing.assert_array_equal(np.asarray(traj.q)[BAD_ENV], np.broadcast_to(q0[BAD_ENV], (HORIZON, 2)))
    np.testing.assert_array_equal(np.asarray(traj.v)[BAD_ENV], np.broadcast_to(v0[BAD_ENV], (HORIZON, 2)))
    assert not np.any(np.asarray(traj.contact.active)[BAD_ENV])
    for g in grads[1:]:
        assert np.all(np.asarray(g)[BAD_ENV] == 0.0)
        assert np.all(np.isfinite(np.asarray(g)))


def test_reset_where_restores_the_faulty_environment():
    model, (q0, v0, ctrls), _ = clean()
    (_, (_, traj)), _ = inject("q", np.nan)
    final = jax.tree_util.tree_map(lambda x: x[:, -1], traj)
    mask = np.asarray(final.error) != 0
    assert mask.tolist() == [i == BAD_ENV for i in range(BATCH)]
    reset = jc.reset_where(model, final, jnp.asarray(mask), jax.random.key(0))
    fresh = jc.init(model)
    assert_bitwise_equal([np.asarray(x)[BAD_ENV] for x in jax.tree_util.tree_leaves(reset)],
                         [np.asarray(x) for x in jax.tree_util.tree_leaves(fresh)])
    assert_bitwise_equal(others(reset), others(final))
    assert np.all(np.asarray(reset.error) == 0)
    # the reset batch runs on: every environment healthy again
    (_, (_, again)), _ = run(model, reset.q, reset.v, ctrls, jnp.ones(BATCH))
    assert np.all(np.asarray(again.error) == 0)


def test_reset_where_randomises_through_init_fn_and_passes_no_nan_derivative():
    model = pusher()
    states = jax.vmap(lambda q: jc.init(model, q=q))(jnp.asarray([[0.1, 0.0], [np.nan, 0.0], [0.2, 0.0]]))

    def noisy_init(key):
        return jc.init(model, q=model.qpos0 + 0.01 * jax.random.normal(key, (model.nq,), model.dtype))

    mask = jnp.asarray([False, True, True])
    reset = jc.reset_where(model, states, mask, jax.random.key(1), init_fn=noisy_init)
    q = np.asarray(reset.q)
    assert q[0].tobytes() == np.asarray(states.q[0]).tobytes()
    assert np.all(np.isfinite(q)) and np.all(q[1] != q[2]) and np.all(np.abs(q[1:]) < 0.1)
    np.testing.assert_array_equal(q[1:], np.asarray(jax.vmap(noisy_init)(jax.random.split(jax.random.key(1), 3)).q)[1:])
    # the NaN environment's old state receives a zero (not NaN) derivative
    def reset_q_sum(q):
        return jnp.sum(jc.reset_where(model, dataclasses.replace(states, q=q), mask, jax.random.key(2)).q)

    grad = jax.grad(reset_q_sum)(states.q)
    np.testing.assert_array_equal(np.asarray(grad), [[1.0, 1.0], [0.0, 0.0], [0.0, 0.0]])
    with pytest.raises(ValueError, match="mask"):
        jc.reset_where(model, states, jnp.ones((3, 1), bool), jax.random.key(0))


def test_repeated_runs_give_bitwise_identical_values_and_gradients():
    model, (q0, v0, ctrls), first = clean()
    second = run(model, q0, v0, ctrls, jnp.ones(BATCH))
    assert_bitwise_equal([np.asarray(x) for x in jax.tree_util.tree_leaves(second)],
                         [np.asarray(x) for x in jax.tree_util.tree_leaves(first)])


def test_float32_batch_flags_only_the_faulty_environment():
    """Issue 42: in float32 with default options the healthy environments carry error 0 (the
    solver reaches its tolerance or its round-off floor) — before the floor and the dtype-scaled
    Anderson ridge, 14 of the 1536 healthy env-steps carried SOLVER_NOT_CONVERGED (one with its
    ball sinking: a float32 Gram system below round-off) and the flag no longer singled out the
    broken environment — and NaN injected in one environment flags that one alone, the others
    bitwise unchanged."""
    model = pusher().astype(jnp.float32)
    q0, v0, ctrls = (jnp.asarray(x, jnp.float32) for x in batch_inputs(model, BATCH, HORIZON))
    roll = jax.jit(jax.vmap(lambda q, v, c: jc.rollout(model, jc.init(model, q=q, v=v), c)[1]))
    clean_traj = roll(q0, v0, ctrls)
    assert clean_traj.q.dtype == jnp.float32
    assert int(np.sum(np.asarray(clean_traj.contact.num_active)[:, 0])) > BATCH // 4
    assert np.all(np.asarray(clean_traj.error) == 0)
    faulty = roll(q0.at[BAD_ENV, 1].set(np.nan), v0, ctrls)
    errors = np.asarray(faulty.error)
    assert np.all(errors[BAD_ENV] & ErrorFlag.NON_FINITE_STATE)
    assert np.all(np.delete(errors, BAD_ENV, axis=0) == 0)
    assert_bitwise_equal(others(faulty), others(clean_traj))
