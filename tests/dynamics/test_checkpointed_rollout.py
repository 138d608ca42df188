"""``jc.rollout(..., checkpoint_every=k)``: rematerialised rollouts (issue #6).

Peak memory is read from the compiled executable, deterministically: XLA's
``compiled.memory_analysis()`` of ``jax.jit(jax.grad(loss))`` for ``T`` steps, summing
``temp_size_in_bytes`` (every buffer XLA allocates while running: the scan residuals that reverse
mode stores, the recomputation buffers, workspaces), ``argument_size_in_bytes`` (the ``(T, nu)``
controls) and ``output_size_in_bytes`` (the gradient). This is the allocation plan, not a sampled
RSS, so it does not depend on the machine's load; ``benchmarks/checkpointed_rollout.py`` measures
the same quantities on the contact scene of seed 001 (and the process RSS as a cross-check).
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim_contact as jc

@functools.cache
def ball(enable_contacts: bool = True):
    """A ball on two slide joints (x pushed by a motor, z free) above the floor: one contact, 2 dofs."""
    model = jc.scenes.load("pushed_ball", dtype=jnp.float64)
    return model.replace_options(enable_contacts=enable_contacts)


def _loss(model, state, ctrls, checkpoint_every):
    final, traj = jc.rollout(model, state, ctrls, checkpoint_every=checkpoint_every)
    # both the final state and the trajectory enter the loss (the trajectory output must survive)
    return jnp.sum(final.q ** 2) + jnp.sum(traj.v[:, 0] ** 2) + 0.1 * jnp.sum(traj.q[:, 1])


def peak_gradient_bytes(model, horizon: int, checkpoint_every) -> int:
    """Bytes XLA plans for ``jax.grad`` of a ``horizon``-step rollout (module docstring)."""
    state = jc.init(model)
    grad = jax.jit(jax.grad(functools.partial(_loss, model, state, checkpoint_every=checkpoint_every)))
    stats = grad.lower(jnp.zeros((horizon, model.nu))).compile().memory_analysis()
    return stats.temp_size_in_bytes + stats.argument_size_in_bytes + stats.output_size_in_bytes


def test_gradient_memory_grows_like_sqrt_T_with_checkpointing():
    """Issue #6 Must show: peak memory of ``jax.grad`` through a 1000-step rollout with
    checkpointing ≤ 4× that of a 100-step rollout (``k = round(√T)``), while the plain scan grows
    ~10× (so the bound is not met by accident). Contacts are disabled to keep the four compiles
    cheap: the memory structure is that of the scan, whatever each step computes (the benchmark
    shows the same ratios with contacts)."""
    model = ball(enable_contacts=False)
    plain = {T: peak_gradient_bytes(model, T, None) for T in (100, 1000)}
    remat = {T: peak_gradient_bytes(model, T, round(math.sqrt(T))) for T in (100, 1000)}
    assert plain[1000] / plain[100] > 8.0, plain
    assert remat[1000] / remat[100] <= 4.0, remat
    assert remat[1000] < plain[1000] / 4, (remat, plain)


def _ball_gradients(checkpoint_every):
    model = ball()
    # starts 2 cm above the floor, falling and pushed sideways: lands within the horizon, then
    # slides on the floor (contact make and frictional contact inside the differentiated path)
    state = jc.init(model, q=jnp.asarray([0.0, 0.02]), v=jnp.asarray([0.3, -0.5]))
    ctrls = jnp.linspace(0.5, -0.5, 11)[:, None]

    def loss(x, ctrls):
        start = jc.State(q=x[:2], v=x[2:], time=state.time, error=state.error, contact=state.contact)
        final, traj = jc.rollout(model, start, ctrls, checkpoint_every=checkpoint_every)
        value = jnp.sum(final.q ** 2) + jnp.sum(traj.v[:, 0] ** 2) + 0.1 * jnp.sum(traj.q[:, 1])
        return value, (final, traj)

    x = jnp.concatenate([state.q, state.v])
    (value, states), grads = jax.jit(jax.value_and_grad(loss, argnums=(0, 1), has_aux=True))(x, ctrls)
    return value, grads, states


def test_checkpointed_gradients_equal_plain_gradients():
    """11 steps of a ball landing on the floor with ``k = 3`` (three segments and a remainder of
    2 steps): value, final state, trajectory and gradients w.r.t. the initial state and the
    controls are those of the plain scan, to 1e-12 relative."""
    value, grads, states = _ball_gradients(None)
    value_k, grads_k, states_k = _ball_gradients(3)
    assert float(jnp.max(states[1].contact.force[:, 0, 2])) > 0  # the ball did land
    np.testing.assert_allclose(value_k, value, rtol=1e-12)
    for a, b in zip(jax.tree_util.tree_leaves(states_k), jax.tree_util.tree_leaves(states)):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    for g_k, g in zip(grads_k, grads):
        assert bool(jnp.all(jnp.isfinite(g))) and float(jnp.max(jnp.abs(g))) > 0
        np.testing.assert_allclose(g_k, g, rtol=1e-12, atol=1e-12 * float(jnp.max(jnp.abs(g))))


@pytest.mark.parametrize("horizon,k", [(0, 3), (5, 10), (7, 7), (7, 3)])
def test_checkpointed_rollout_equals_plain_at_edge_horizons(horizon, k):
    """No steps, ``k`` beyond ``T``, ``k = T`` and ``k`` not dividing ``T`` (padded last segment):
    the same final state and trajectory as the plain scan (contact-free ball, cheap to compile)."""
    model = ball(enable_contacts=False)
    state = jc.init(model, q=jnp.asarray([0.0, 0.02]), v=jnp.asarray([0.3, -0.5]))
    ctrls = jnp.linspace(0.5, -0.5, horizon)[:, None]
    plain_final, plain_traj = jc.rollout(model, state, ctrls)
    final, traj = jc.rollout(model, state, ctrls, checkpoint_every=k)
    assert traj.q.shape == (horizon, model.nq)
    plain = jax.tree_util.tree_leaves((plain_final, plain_traj))
    for a, b in zip(jax.tree_util.tree_leaves((final, traj)), plain, strict=True):
        np.testing.assert_array_equal(a, b)
    assert float(final.time) == pytest.approx(horizon * float(model.options.dt))


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "10"])
def test_checkpoint_every_is_validated(bad):
    model = ball(enable_contacts=False)
    with pytest.raises(ValueError, match="checkpoint_every"):
        jc.rollout(model, jc.init(model), jnp.zeros((4, 1)), checkpoint_every=bad)
