"""Gymnasium vector-environment wrapper for users outside JAX (issue 7, "interoperability").

``GymnasiumVectorEnv(env, num_envs)`` is a ``gymnasium.vector.VectorEnv``: NumPy actions in,
NumPy observations / rewards / flags out, one jitted, vmapped step for the whole batch. It
auto-resets in the same step (``metadata["autoreset_mode"] = AutoresetMode.SAME_STEP``, as
Gymnasium's own vector envs with that mode): a finished environment returns the first observation
of its next episode, and ``info["final_obs"]`` (with mask ``info["_final_obs"]``) holds the
observation that ended the episode. ``info`` also carries the task's metrics and the error bitmask
(``info["error"]``, :class:`~jaxsim_contact.envs.EnvErrorFlag`).

Requires ``gymnasium >= 1.0`` (not a dependency of jaxsim_contact; ``pip install gymnasium``).
"""

from __future__ import annotations

import jax
import numpy as np

from ._base import Env
from ._sharding import reset_batch

try:
    import gymnasium
    from gymnasium.vector import AutoresetMode, VectorEnv
except ImportError as err:  # pragma: no cover - exercised only without gymnasium
    raise ImportError(
        "jaxsim_contact.envs.gym needs gymnasium>=1.0 (pip install gymnasium)") from err

__all__ = ["GymnasiumVectorEnv"]


def _batched_reset(env, key, num_envs):
    return reset_batch(env, key, num_envs)


def _batched_step(env, states, actions):
    return jax.vmap(env.step)(states, actions)


# module-level jitted functions: every wrapper of the same environment shares one compilation
_RESET = jax.jit(_batched_reset, static_argnums=2)
_STEP = jax.jit(_batched_step)


class GymnasiumVectorEnv(VectorEnv):
    """A batch of ``num_envs`` copies of a :class:`~jaxsim_contact.envs.Env` as a Gymnasium
    ``VectorEnv``.

    Spaces: ``single_action_space = Box(-1, 1, (action_size,))``,
    ``single_observation_space = Box(-inf, inf, (observation_size,))``, batched versions in
    ``action_space`` / ``observation_space``; dtype of the model (float64 with JAX x64 enabled).

    Args:
      env: the environment (e.g. ``jc.envs.make("cartpole_swingup")``).
      num_envs: batch size.
      seed: seed of the first :meth:`reset` when none is given there.
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(self, env: Env, num_envs: int, seed: int = 0):
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"GymnasiumVectorEnv: num_envs must be a positive int, got {num_envs!r}")
        self.env = env
        self.num_envs = int(num_envs)
        dtype = np.dtype(env.model.dtype)
        self.single_action_space = gymnasium.spaces.Box(-1.0, 1.0, (env.action_size,), dtype)
        self.single_observation_space = gymnasium.spaces.Box(-np.inf, np.inf, (env.observation_size,), dtype)
        self.action_space = gymnasium.vector.utils.batch_space(self.single_action_space, self.num_envs)
        self.observation_space = gymnasium.vector.utils.batch_space(self.single_observation_space, self.num_envs)
        self._seed = int(seed)
        self._states = None

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Reset every environment (``seed``: fresh, reproducible randomness; default: the
        constructor's seed on the first call, then the next integer).

        Returns:
          ``(obs (num_envs, observation_size), info)``.
        """
        if seed is None:
            seed, self._seed = self._seed, self._seed + 1
        self._states = _RESET(self.env, jax.random.key(int(seed)), self.num_envs)
        return np.asarray(self._states.obs), self._info(self._states, with_final=False)

    def step(self, actions):
        """Advance every environment one step.

        Args:
          actions: ``(num_envs, action_size)`` in ``[-1, 1]`` (clipped).
        Returns:
          ``(obs, reward, terminated, truncated, info)`` as NumPy arrays with leading axis
          ``num_envs``.
        Raises:
          RuntimeError: before :meth:`reset`. ValueError: wrong shape or non-finite actions.
        """
        if self._states is None:
            raise RuntimeError("GymnasiumVectorEnv.step called before reset()")
        actions = np.asarray(actions)
        expected = (self.num_envs, self.env.action_size)
        if actions.shape != expected:
            raise ValueError(f"GymnasiumVectorEnv.step: actions must have shape {expected}, got {actions.shape}")
        if not np.all(np.isfinite(actions)):
            rows = sorted(set(np.argwhere(~np.isfinite(actions))[:, 0].tolist()))
            raise ValueError(f"GymnasiumVectorEnv.step: non-finite actions in environments {rows}")
        self._states = _STEP(self.env, self._states, actions.astype(self.single_action_space.dtype))
        s = self._states
        done = np.asarray(s.done)
        truncated = np.asarray(s.truncated)
        return (np.asarray(s.obs), np.asarray(s.reward), done & ~truncated, truncated,
                self._info(s, with_final=True))

    def _info(self, states, with_final: bool) -> dict:
        info = {name: np.asarray(value) for name, value in states.metrics.items()}
        info["error"] = np.asarray(states.error)
        if with_final:
            info["final_obs"] = np.asarray(states.final_obs)
            info["_final_obs"] = np.asarray(states.done)
        return info
