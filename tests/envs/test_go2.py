"""Quadruped task on the Unitree Go2 URDF: standing under the servos at zero action, the reward
against NumPy, and a tipped-over robot terminating and auto-resetting to a fresh standing state."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import jaxsim_contact as jc

ENV = jc.envs.make("go2_run")


def test_go2_stands_terminates_when_tipped_and_resets_fresh():
    assert ENV.action_size == 12 and ENV.observation_size == 35
    step = jax.jit(jax.vmap(ENV.step))
    states = jax.vmap(ENV.reset)(jax.random.split(jax.random.key(3), 2))
    # environment 1 lies on its side (base rolled 90°): upright = 0 < 0.5 terminates it
    side = jnp.asarray([np.cos(np.pi / 4), np.sin(np.pi / 4), 0.0, 0.0])
    states = eqx.tree_at(lambda s: s.sim.q, states, states.sim.q.at[1, 3:7].set(side))
    zero = jnp.zeros((2, 12))
    first = step(states, zero)
    done, truncated = np.asarray(first.done), np.asarray(first.truncated)
    assert not done[0] and done[1] and not truncated[1]
    assert np.asarray(first.metrics["upright"])[1] < 0.5 and np.asarray(first.steps)[1] == 0
    fresh = np.asarray(first.sim.q[1])
    assert 1 - 2 * (fresh[4] ** 2 + fresh[5] ** 2) > 0.999  # upright again, a new random yaw
    assert not np.allclose(fresh[7:], np.asarray(states.sim.q[1, 7:]))
    states = first
    for _ in range(5):  # 0.1 s standing on the servos
        states = step(states, zero)
    q, v = np.asarray(states.sim.q), np.asarray(states.sim.v)
    assert np.all(np.isfinite(q)) and np.all(np.asarray(states.error) & jc.ErrorFlag.NON_FINITE_STATE == 0)
    assert np.all(q[:, 2] > 0.22) and not np.any(np.asarray(states.done))
    assert np.all(np.asarray(states.sim.contact.num_active) >= 3)  # standing on its feet
    upright = 1 - 2 * (q[:, 4] ** 2 + q[:, 5] ** 2)
    np.testing.assert_allclose(np.asarray(states.reward), v[:, 0] + 0.5 * upright + 0.5, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(np.asarray(states.obs), np.concatenate([q[:, 2:], v], axis=1), atol=1e-12)
