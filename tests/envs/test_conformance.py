"""Environment conformance (issue 7, "Must show"): jit + vmap over 1024 cart-poles, auto-reset
draws distinct fresh initial states, no recompilation across steps or parameter changes, the
reward of seed 004 eq. 60 against a NumPy reference, bad input.

One environment (3-step episodes, so the auto-reset happens inside the test) and one compiled
batched step serve every test of the file.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim_contact as jc
from jaxsim_contact.envs import EnvErrorFlag

NUM_ENVS = 1024
EPISODE = 3
ENV = jc.envs.make("cartpole_swingup", episode_length=EPISODE)
TRACES = {"step": 0, "reset": 0}


def _reset(env, keys):
    TRACES["reset"] += 1  # runs once per trace, never per call
    return jax.vmap(env.reset)(keys)


def _step(env, states, actions):
    TRACES["step"] += 1
    return jax.vmap(env.step)(states, actions)


RESET = jax.jit(_reset)
STEP = jax.jit(_step)
KEYS = jax.random.split(jax.random.key(0), NUM_ENVS)
ACTIONS = jax.random.uniform(jax.random.key(1), (EPISODE + 1, NUM_ENVS, 1), jnp.float64, -1.0, 1.0)


@pytest.fixture(scope="module")
def episode():
    """Reset 1024 environments and run EPISODE + 1 steps; returns the list of states."""
    states = [RESET(ENV, KEYS)]
    for t in range(EPISODE + 1):
        states.append(STEP(ENV, states[-1], ACTIONS[t]))
    return states


def reference_reward(q, v):
    """Seed 004 eq. 60 in NumPy from the cart-pole's generalised coordinates."""
    x, theta, xdot, thetadot = q[..., 0], q[..., 1], v[..., 0], v[..., 1]
    wrapped = np.mod(theta + np.pi, 2 * np.pi) - np.pi
    return -wrapped**2 - 0.1 * thetadot**2 - 0.05 * x**2 - 0.01 * xdot**2


def test_batched_reset_and_step_shapes_values_and_reward(episode):
    first, second = episode[0], episode[1]
    assert ENV.action_size == 1 and ENV.observation_size == 5
    assert first.obs.shape == (NUM_ENVS, 5) and first.obs.dtype == jnp.float64
    assert first.sim.q.shape == (NUM_ENVS, 2) and first.key.shape == (NUM_ENVS, 2)
    assert set(first.metrics) == set(second.metrics) == {"pole_angle", "cart_position"}
    q, v = np.asarray(second.sim.q), np.asarray(second.sim.v)
    assert np.all(np.isfinite(q)) and np.all(np.isfinite(v))
    np.testing.assert_allclose(np.asarray(second.reward), reference_reward(q, v), rtol=1e-12, atol=1e-12)
    obs = np.stack([q[:, 0], v[:, 0], np.sin(q[:, 1]), np.cos(q[:, 1]), v[:, 1]], axis=1)
    np.testing.assert_allclose(np.asarray(second.obs), obs, rtol=1e-12, atol=1e-12)
    # the pole starts hanging down (θ = π ± 0.3), the cart within ±0.2 m (appendix F)
    q0 = np.asarray(first.sim.q)
    assert np.all(np.abs(q0[:, 1] - np.pi) <= 0.3) and np.all(np.abs(q0[:, 0]) <= 0.2)
    # the action moved the carts: a push of +1 accelerates the cart more than -1
    dv = np.asarray(second.sim.v[:, 0] - first.sim.v[:, 0])
    a = np.asarray(ACTIONS[0, :, 0])
    assert np.corrcoef(a, dv)[0, 1] > 0.9
    assert not np.any(np.asarray(second.done)) and np.all(np.asarray(second.steps) == 1)
    assert np.all(np.asarray(second.error) == 0)


def test_initial_states_are_distinct_across_the_batch(episode):
    q0 = np.asarray(episode[0].sim.q)
    assert np.unique(q0, axis=0).shape[0] == NUM_ENVS
    assert np.unique(np.asarray(episode[0].key), axis=0).shape[0] == NUM_ENVS


def test_auto_reset_draws_fresh_distinct_states_and_reports_the_finished_step(episode):
    before, ended, after = episode[EPISODE - 1], episode[EPISODE], episode[EPISODE + 1]
    assert np.all(np.asarray(ended.done)) and np.all(np.asarray(ended.truncated))
    assert np.all(np.asarray(ended.steps) == 0)
    # the reward and final_obs describe the step that ended the episode (recomputed from the
    # final observation: x, ẋ, sin θ, cos θ, θ̇)
    final = np.asarray(ended.final_obs)
    theta = np.arctan2(final[:, 2], final[:, 3])
    expected = -theta**2 - 0.1 * final[:, 4] ** 2 - 0.05 * final[:, 0] ** 2 - 0.01 * final[:, 1] ** 2
    np.testing.assert_allclose(np.asarray(ended.reward), expected, rtol=1e-10, atol=1e-12)
    assert not np.allclose(final, np.asarray(ended.obs))
    # the new episodes start at rest near the hanging pose, all different, none equal to the
    # first episode's start, and the simulator time restarted
    fresh = np.asarray(ended.sim.q)
    assert np.unique(fresh, axis=0).shape[0] == NUM_ENVS
    assert np.all(np.abs(fresh[:, 1] - np.pi) <= 0.3) and np.all(np.asarray(ended.sim.time) == 0)
    assert not np.any(np.all(fresh == np.asarray(episode[0].sim.q), axis=1))
    # continuing runs the new episode
    assert not np.any(np.asarray(after.done)) and np.all(np.asarray(after.steps) == 1)
    assert np.all(np.asarray(before.steps) == EPISODE - 1)


def test_no_recompilation_across_steps_and_parameter_changes(episode):
    assert TRACES["step"] == 1 and TRACES["reset"] == 1  # EPISODE + 1 steps, one trace
    states = episode[-1]
    # a dynamic parameter (noise of the initial state; the time step) changes without retracing
    wider = eqx.tree_at(lambda e: e.init_noise, ENV, ENV.init_noise * 2.0)
    wider = eqx.tree_at(lambda e: e.model, wider, wider.model.replace_options(dt=0.01))
    out = STEP(wider, states, ACTIONS[0])
    RESET(wider, KEYS)
    assert TRACES["step"] == 1 and TRACES["reset"] == 1
    assert float(out.sim.time[0]) == pytest.approx(float(states.sim.time[0]) + 0.01)


def test_non_finite_action_inside_jit_sets_the_flag_of_that_environment_only(episode):
    states = episode[1]
    clean = ACTIONS[1].at[5].set(0.0)
    poisoned = ACTIONS[1].at[5, 0].set(jnp.nan)
    out_clean = STEP(ENV, states, clean)
    out = STEP(ENV, states, poisoned)
    errors = np.asarray(out.error)
    assert errors[5] & EnvErrorFlag.NON_FINITE_ACTION and np.all(np.delete(errors, 5) == 0)
    # the non-finite entry acted as 0: every environment, including env 5, equals the clean run
    np.testing.assert_array_equal(np.asarray(out.sim.q), np.asarray(out_clean.sim.q))
    assert np.all(np.isfinite(np.asarray(out.obs))) and np.all(np.isfinite(np.asarray(out.reward)))
    # the flag is sticky within the episode
    again = STEP(ENV, out, clean)
    assert np.asarray(again.error)[5] & EnvErrorFlag.NON_FINITE_ACTION
    assert TRACES["step"] == 1


def test_a_diverged_simulator_ends_only_its_episode_and_restarts_finite(episode):
    states = episode[1]
    broken = eqx.tree_at(lambda s: s.sim.v, states, states.sim.v.at[7, 1].set(jnp.inf))
    out = STEP(ENV, broken, ACTIONS[1])
    reference = STEP(ENV, states, ACTIONS[1])
    done, errors = np.asarray(out.done), np.asarray(out.error)
    assert done[7] and not np.asarray(out.truncated)[7] and errors[7] & EnvErrorFlag.NON_FINITE_STATE
    assert not np.any(np.delete(done, 7)) and np.all(np.delete(errors, 7) == 0)
    # env 7 restarted from a fresh finite state; its reward and observations carry no NaN
    assert np.all(np.isfinite(np.asarray(out.sim.q[7]))) and float(out.sim.time[7]) == 0.0
    assert np.isfinite(float(out.reward[7])) and np.all(np.isfinite(np.asarray(out.final_obs[7])))
    keep = np.arange(NUM_ENVS) != 7
    np.testing.assert_array_equal(np.asarray(out.sim.q)[keep], np.asarray(reference.sim.q)[keep])
    assert TRACES["step"] == 1


def test_bad_actions_raise_outside_jit():
    state = ENV.reset(jax.random.key(7))
    with pytest.raises(ValueError, match=r"shape \(1,\).*got \(2,\)"):
        ENV.step(state, jnp.zeros(2))
    with pytest.raises(ValueError, match="non-finite entries at \\[0\\]"):
        ENV.step(state, np.array([np.inf]))
    with pytest.raises(ValueError, match=r"shape \(1,\)"):  # shapes are static: raises while tracing too
        jax.jit(lambda s, a: ENV.step(s, a))(state, jnp.zeros(3))
    with pytest.raises(ValueError, match="one PRNG key"):
        ENV.reset(jax.random.split(jax.random.key(0), 2))


def test_unknown_environment_lists_the_available_ones():
    with pytest.raises(ValueError) as err:
        jc.envs.make("cartpole")
    for name in ("cartpole_swingup", "hopper", "go2_run", "push_box"):
        assert name in str(err.value)
    with pytest.raises(TypeError):
        jc.envs.make("cartpole_swingup", episode_lenght=3)
    with pytest.raises(ValueError, match="episode_length must be a positive int"):
        jc.envs.make("cartpole_swingup", episode_length=0)
