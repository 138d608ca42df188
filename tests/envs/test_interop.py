"""Interoperability (issue 7): the Gymnasium vector-env wrapper and the Brax ``Env`` adapter run
the same cart-poles as the functional API, step for step, with their libraries' reset and
time-limit conventions."""

from __future__ import annotations

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim_contact as jc
from jaxsim_contact.envs.brax import to_brax
from jaxsim_contact.envs.gym import GymnasiumVectorEnv

NUM_ENVS, EPISODE, SEED = 4, 3, 11
ENV = jc.envs.make("cartpole_swingup", episode_length=EPISODE)
ACTIONS = np.asarray(jax.random.uniform(jax.random.key(5), (EPISODE + 1, NUM_ENVS, 1), jnp.float64, -1, 1))


@pytest.fixture(scope="module")
def direct():
    """The functional API's states: reset from split(key(SEED)), then EPISODE + 1 steps."""
    step = jax.jit(jax.vmap(ENV.step))
    states = [jax.vmap(ENV.reset)(jax.random.split(jax.random.key(SEED), NUM_ENVS))]
    for t in range(EPISODE + 1):
        states.append(step(states[-1], ACTIONS[t]))
    return states


def test_gymnasium_vector_env_matches_the_functional_api(direct):
    venv = GymnasiumVectorEnv(ENV, NUM_ENVS)
    assert isinstance(venv, gymnasium.vector.VectorEnv)
    assert venv.metadata["autoreset_mode"] == gymnasium.vector.AutoresetMode.SAME_STEP
    assert venv.single_action_space.shape == (1,) and venv.action_space.shape == (NUM_ENVS, 1)
    assert venv.observation_space.shape == (NUM_ENVS, 5)
    obs, info = venv.reset(seed=SEED)
    assert venv.observation_space.contains(obs)
    np.testing.assert_array_equal(obs, np.asarray(direct[0].obs))
    assert set(info) >= {"pole_angle", "cart_position", "error"}
    for t in range(EPISODE):
        obs, reward, terminated, truncated, info = venv.step(ACTIONS[t])
        np.testing.assert_array_equal(obs, np.asarray(direct[t + 1].obs))
        np.testing.assert_array_equal(reward, np.asarray(direct[t + 1].reward))
        assert not terminated.any()
        assert truncated.all() == (t == EPISODE - 1) and truncated.any() == (t == EPISODE - 1)
    # same-step auto-reset: the final observation is in info, obs is the new episode's first
    assert info["_final_obs"].all()
    np.testing.assert_array_equal(info["final_obs"], np.asarray(direct[EPISODE].final_obs))
    assert not np.allclose(obs, info["final_obs"])
    # a second reset with the same seed reproduces the first
    np.testing.assert_array_equal(venv.reset(seed=SEED)[0], np.asarray(direct[0].obs))


def test_gymnasium_vector_env_rejects_bad_actions_and_early_steps():
    venv = GymnasiumVectorEnv(ENV, NUM_ENVS)
    with pytest.raises(RuntimeError, match="before reset"):
        venv.step(np.zeros((NUM_ENVS, 1)))
    venv.reset(seed=0)
    with pytest.raises(ValueError, match=r"shape \(4, 1\)"):
        venv.step(np.zeros((NUM_ENVS,)))
    bad = np.zeros((NUM_ENVS, 1))
    bad[2, 0] = np.nan
    with pytest.raises(ValueError, match=r"environments \[2\]"):
        venv.step(bad)
    with pytest.raises(ValueError, match="positive int"):
        GymnasiumVectorEnv(ENV, 0)


def test_brax_training_wrappers_run_the_environment(direct):
    from brax.envs.base import Env as BraxEnv
    from brax.envs.wrappers import training

    adapter = to_brax(ENV)
    assert isinstance(adapter, BraxEnv)
    assert adapter.observation_size == 5 and adapter.action_size == 1
    # Brax's own time limit (4) replaces ours (3): our truncation is not a Brax termination
    wrapped = training.wrap(adapter, episode_length=EPISODE + 1)
    reset, step = jax.jit(wrapped.reset), jax.jit(wrapped.step)
    # Brax works with raw uint32 keys (its wrappers read the batch shape from rng.shape[:-1])
    state = reset(jax.random.key_data(jax.random.split(jax.random.key(SEED), NUM_ENVS)))
    np.testing.assert_array_equal(np.asarray(state.obs), np.asarray(direct[0].obs))
    for t in range(EPISODE + 1):
        state = step(state, jnp.asarray(ACTIONS[t]))
        if t < EPISODE:  # until Brax's reset the trajectories coincide with env.step's (whose
            # own auto-reset after step EPISODE is ignored by Brax: compare the pre-reset obs)
            np.testing.assert_array_equal(np.asarray(state.obs), np.asarray(direct[t + 1].final_obs))
            np.testing.assert_array_equal(np.asarray(state.reward), np.asarray(direct[t + 1].reward))
        assert np.asarray(state.done).any() == (t == EPISODE)
    # at Brax's limit: done and truncation set; Brax restarts from the first reset's state
    assert np.asarray(state.done).all() and np.asarray(state.info["truncation"]).all()
    np.testing.assert_array_equal(np.asarray(state.obs), np.asarray(direct[0].obs))
    with pytest.raises(TypeError, match="jaxsim_contact.envs.Env"):
        to_brax(object())


def test_brax_ppo_trains_on_the_adapter():
    """Brax's own PPO trainer (not a hand-written one) runs on the adapted cart-pole: two updates
    of 4 environments × 8 steps with an evaluation before and after; the parameters change and the
    evaluated return is a finite episode sum. ``brax_trainer_compat`` puts back the jax function
    brax 0.14.2 calls, and removes it again on exit."""
    from brax.training.agents.ppo import train as ppo

    from jaxsim_contact.envs.brax import brax_trainer_compat

    env = jc.envs.make("cartpole_swingup", episode_length=8)
    returns, snapshots = [], []
    had = hasattr(jax, "device_put_replicated")
    with brax_trainer_compat():
        assert hasattr(jax, "device_put_replicated")
        _, params, _ = ppo.train(
            environment=to_brax(env), num_timesteps=64, episode_length=8, num_envs=4, unroll_length=8,
            batch_size=2, num_minibatches=2, num_updates_per_batch=1, num_evals=2, num_eval_envs=2,
            deterministic_eval=True, seed=0,
            progress_fn=lambda steps, m: returns.append((steps, float(m["eval/episode_reward"]))),
            policy_params_fn=lambda steps, make_policy, p: snapshots.append((steps, p)))
    assert hasattr(jax, "device_put_replicated") == had
    assert [s for s, _ in returns] == [0, 64]
    # 8 steps of eq. 60 from a hanging pole: about -8 π² at most, never positive
    assert all(-100.0 < r < 0.0 for _, r in returns)
    assert snapshots[0][0] == 0
    before, after = snapshots[0][1][1], params[1]  # (normalizer, policy, value): the policy
    changed = jax.tree_util.tree_map(lambda a, b: bool(np.any(np.asarray(a) != np.asarray(b))), before, after)
    assert any(jax.tree_util.tree_leaves(changed))
