"""Adapter to Brax's environment interface, so that ``brax.training`` trainers (PPO, SAC, APG, ...)
run on jaxsim_contact environments (issue 7, "interoperability").

``to_brax(env)`` returns a ``brax.envs.base.Env``: ``reset(rng)`` / ``step(state, action)`` on
``brax.envs.base.State`` with ``pipeline_state`` = our :class:`~jaxsim_contact.envs.EnvState`
(simulator state inside). It steps with :meth:`Env.transition` (no auto-reset, no time limit of
its own: Brax's ``EpisodeWrapper`` / ``AutoResetWrapper`` from ``brax.envs.wrappers.training.wrap``
own those, as with every Brax environment), and reports ``done`` as float, 1.0 on termination
only. Example::

    from brax.training.agents.ppo import train as ppo
    make_policy, params, metrics = ppo.train(environment=to_brax(jc.envs.make("cartpole_swingup")),
                                             num_timesteps=..., episode_length=240, ...)

Brax's wrappers expect raw ``uint32`` keys (``jax.random.PRNGKey`` / ``jax.random.key_data``), as
Brax's trainers pass them. Note that Brax's ``AutoResetWrapper`` restarts a finished environment from the state of its first
reset (same initial state every episode of that environment), unlike our own
:meth:`Env.step`, which draws a fresh one.

Requires ``brax`` (tested with brax 0.14.2 on jax 0.10.2; not a dependency of jaxsim_contact).

Brax 0.14.2's trainers (``ppo``, ``sac``, ``apg``) call ``jax.device_put_replicated``, which
jax 0.10 removed; run them inside :func:`brax_trainer_compat` (``examples/brax_ppo_cartpole.py``)::

    with brax_trainer_compat():
        make_policy, params, metrics = ppo.train(environment=to_brax(env), ...)
"""

from __future__ import annotations

import contextlib

import jax
import jax.numpy as jnp
import numpy as np

from ._base import Env

try:
    from brax.envs.base import Env as _BraxEnv
    from brax.envs.base import State as BraxState
except ImportError as err:  # pragma: no cover - exercised only without brax
    raise ImportError("jaxsim_contact.envs.brax needs brax (pip install brax)") from err

__all__ = ["BraxAdapter", "to_brax", "brax_trainer_compat"]


class BraxAdapter(_BraxEnv):
    """A jaxsim_contact :class:`~jaxsim_contact.envs.Env` behind Brax's ``Env`` interface."""

    def __init__(self, env: Env):
        if not isinstance(env, Env):
            raise TypeError(f"to_brax expects a jaxsim_contact.envs.Env, got {type(env).__name__}")
        self._env = env
        self._observation_size = env.observation_size

    @property
    def env(self) -> Env:
        """The wrapped environment."""
        return self._env

    def reset(self, rng) -> BraxState:
        """Brax ``State`` of ``env.reset(rng)`` (``done = 0.0``)."""
        s = self._env.reset(rng)
        return BraxState(pipeline_state=s, obs=s.obs, reward=s.reward,
                         done=jnp.zeros((), s.reward.dtype), metrics=dict(s.metrics), info={})

    def step(self, state: BraxState, action) -> BraxState:
        """``env.transition`` of ``state.pipeline_state``; ``done`` = 1.0 on termination only."""
        s = self._env.transition(state.pipeline_state, action)
        terminated = (s.done & ~s.truncated).astype(s.reward.dtype)
        return state.replace(pipeline_state=s, obs=s.obs, reward=s.reward, done=terminated,
                             metrics={**state.metrics, **s.metrics})

    @property
    def observation_size(self) -> int:
        return self._observation_size

    @property
    def action_size(self) -> int:
        return self._env.action_size

    @property
    def backend(self) -> str:
        return "jaxsim_contact"


def to_brax(env: Env) -> BraxAdapter:
    """Wrap ``env`` for Brax (``brax.envs.base.Env``); see the module docstring."""
    return BraxAdapter(env)


def _device_put_replicated(x, devices):
    """jax < 0.10's ``device_put_replicated``: every leaf stacked on a new leading axis, one slice
    per device, laid out over ``devices`` (what ``jax.pmap`` consumes)."""
    devices = list(devices)
    mesh = jax.sharding.Mesh(np.array(devices), ("replica",))
    sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("replica"))
    return jax.tree_util.tree_map(
        lambda leaf: jax.device_put(jnp.stack([jnp.asarray(leaf)] * len(devices)), sharding), x)


@contextlib.contextmanager
def brax_trainer_compat():
    """Context in which ``jax.device_put_replicated`` exists, so that ``brax.training`` trainers of
    brax <= 0.14.2 run on jax >= 0.10 (which removed that function; brax calls it once to place its
    training state). Does nothing when jax still has it; the attribute is removed again on exit, so
    nothing outside the context sees a patched ``jax``."""
    if hasattr(jax, "device_put_replicated"):
        yield
        return
    jax.device_put_replicated = _device_put_replicated
    try:
        yield
    finally:
        del jax.device_put_replicated
