"""Manipulation task: a fingertip driven straight at the cube pushes it over the floor through hard
sphere–box and box–floor contact; goals are drawn per environment; the reward against NumPy."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import jaxsim_contact as jc

ENV = jc.envs.make("push_box")
NUM_ENVS = 3


def reference(q, goal):
    """Reward of the module docstring in NumPy, from q = (tip x, y, cube pos, cube quat)."""
    w, x, y, z = q[:, 5], q[:, 6], q[:, 7], q[:, 8]
    yaw = np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
    yaw_error = np.abs(np.angle(np.exp(1j * (yaw - goal[:, 2]))))
    dist = np.linalg.norm(q[:, 2:4] - goal[:, :2], axis=1)
    reach = np.linalg.norm(q[:, 0:2] - q[:, 2:4], axis=1)
    return -dist - 0.1 * yaw_error - 0.1 * reach, dist


def test_fingertip_pushes_the_cube_and_the_reward_matches():
    step = jax.jit(jax.vmap(ENV.step))
    states = jax.vmap(ENV.reset)(jax.random.split(jax.random.key(2), NUM_ENVS))
    goals = np.asarray(states.task)
    assert goals.shape == (NUM_ENVS, 3) and np.unique(goals, axis=0).shape[0] == NUM_ENVS
    assert np.all(np.abs(goals) <= np.asarray(ENV.goal_range))
    start = np.asarray(states.sim.q)
    for _ in range(40):  # full force from the fingertip towards the cube centre
        q = np.asarray(states.sim.q)
        direction = q[:, 2:4] - q[:, 0:2]
        actions = direction / np.linalg.norm(direction, axis=1, keepdims=True)
        states = step(states, jnp.asarray(actions))
    q = np.asarray(states.sim.q)
    assert np.all(np.isfinite(q)) and np.all(np.asarray(states.error) & jc.ErrorFlag.NON_FINITE_STATE == 0)
    moved = np.linalg.norm(q[:, 2:4] - start[:, 2:4], axis=1)
    assert np.all(moved > 0.05), moved  # 0.8 s of pushing moves every cube by centimetres
    # pushed away from where the fingertip started (the contact force points from tip to cube)
    away = np.einsum("ij,ij->i", q[:, 2:4] - start[:, 2:4], start[:, 2:4] - start[:, 0:2])
    assert np.all(away > 0)
    np.testing.assert_allclose(q[:, 4], 0.05, atol=3e-3)  # the cube slides on the floor
    reward, dist = reference(q, goals)
    np.testing.assert_allclose(np.asarray(states.reward), reward, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(np.asarray(states.metrics["distance"]), dist, rtol=1e-10, atol=1e-10)
    obs = np.asarray(states.obs)
    assert obs.shape == (NUM_ENVS, ENV.observation_size) == (NUM_ENVS, 22)
    np.testing.assert_allclose(obs[:, -2:], goals[:, :2] - q[:, 2:4], atol=1e-12)
