"""Hopper (seed 004 appendix F, eqs. 61–63): the reward and termination against a NumPy
reference on hand-built states covering both branches of R_height, then a short batched physics
run (hard foot contact, finite, observation layout)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import jaxsim_contact as jc

ENV = jc.envs.make("hopper")


def reference_reward(q, v, action):
    """Eqs. 61–63 in NumPy: h = q[1] (rootz from its start), θ = q[2] (rooty), v_x = v[0]."""
    delta = np.clip(q[:, 1] + 0.3, -1.0, 0.3)
    r_height = np.where(delta < 0, -200.0 * delta**2, delta)
    r_posture = 1.0 - (q[:, 2] / (30.0 * np.pi / 180.0)) ** 2
    return v[:, 0] + r_height + r_posture - 0.1 * np.sum(action**2, axis=1)


def test_reward_and_termination_match_the_paper_on_both_height_branches():
    rng = np.random.default_rng(0)
    n = 64
    q = np.tile(np.asarray(ENV.model.qpos0), (n, 1))
    q[:, 1] = np.linspace(-1.5, 0.5, n)  # h: below -1.3 (clip), in the penalty branch, above 0
    q[:, 2] = rng.uniform(-0.8, 0.8, n)
    q[:, 3:] = rng.uniform(-0.5, 0.0, (n, 3))
    v = rng.normal(size=(n, ENV.model.nv))
    action = rng.uniform(-1, 1, (n, 3))
    base = ENV.reset(jax.random.key(0)).sim
    sims = jax.vmap(lambda q, v: eqx.tree_at(lambda s: (s.q, s.v), base, (q, v)))(jnp.asarray(q), jnp.asarray(v))
    reward, metrics = jax.vmap(ENV.reward, in_axes=(0, 0, 0, None))(sims, sims, jnp.asarray(action), jnp.zeros(0))
    np.testing.assert_allclose(np.asarray(reward), reference_reward(q, v, action), rtol=1e-12, atol=1e-12)
    assert np.sum(q[:, 1] + 0.3 < 0) > 10 and np.sum(q[:, 1] + 0.3 >= 0) > 10  # both branches seen
    np.testing.assert_array_equal(np.asarray(metrics["height"]), q[:, 1])
    terminated = np.asarray(jax.vmap(ENV.terminated, in_axes=(0, None))(sims, jnp.zeros(0)))
    np.testing.assert_array_equal(terminated, q[:, 1] < -0.45)
    assert ENV.action_size == 3 and ENV.observation_size == 11 and ENV.episode_length == 1000


def test_batched_hopper_steps_with_hard_contact():
    step = jax.jit(jax.vmap(ENV.step))
    states = jax.vmap(ENV.reset)(jax.random.split(jax.random.key(1), 2))
    q0 = np.asarray(states.sim.q)
    assert np.all(np.abs(q0 - np.asarray(ENV.model.qpos0)) <= 5e-3) and not np.array_equal(q0[0], q0[1])
    actions = jnp.asarray([[0.0, 0.0, 0.0], [0.5, -0.5, 0.2]])
    for _ in range(25):  # 0.2 s: the hopper drops onto its foot
        states = step(states, actions)
    q, v = np.asarray(states.sim.q), np.asarray(states.sim.v)
    assert np.all(np.isfinite(q)) and np.all(np.isfinite(v))
    assert np.all(np.asarray(states.error) & jc.ErrorFlag.NON_FINITE_STATE == 0)
    assert np.all(np.asarray(states.sim.contact.num_active) >= 1)  # the foot touches the floor
    assert float(np.max(np.asarray(states.sim.contact.penetration))) < 5e-3
    obs = np.concatenate([q[:, 1:2], q[:, 2:], v], axis=1)
    np.testing.assert_allclose(np.asarray(states.obs), obs, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(states.reward), reference_reward(q, v, np.clip(np.asarray(actions), -1, 1)),
                               rtol=1e-10, atol=1e-10)
    assert not np.array_equal(q[0], q[1])
