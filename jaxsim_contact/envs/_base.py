"""Functional RL environments on top of :func:`jaxsim_contact.step` (DESIGN §5 "RL", issue 7).

Brax-style and pure: ``state = env.reset(key)``, ``state = env.step(state, action)``. Both are
plain functions of arrays (no Python side effects, no hidden state), so ``jax.jit``, ``jax.vmap``
(over keys / states / actions, and over ``env`` leaves for domain randomisation), ``jax.grad``
(first-order policy learning, seed 004 §IV-C) and ``jax.sharding`` all apply. Following DESIGN
§4 the library never jits: wrap ``jax.jit`` yourself, and the first call of the jitted function in
:func:`jaxsim_contact.compile_report` to be told what compiles, for how long, and whether JAX's
persistent compilation cache served it.

An :class:`EnvState` carries the simulator state (``state.sim``, a :class:`jaxsim_contact.State`),
the observation, the reward and ``done`` flag of the last step, metrics, the task parameters drawn
at reset (e.g. a goal pose), the step counter, an error bitmask and its own PRNG key. ``step``
auto-resets: when an episode ends, the returned state already holds a fresh initial state drawn
with the environment's own key (every environment of a batch draws different randomness), while
``reward``, ``done``, ``metrics``, ``error`` and ``final_obs`` still describe the step that ended
the episode. :meth:`Env.transition` is the same step without the auto-reset.

Actions live in ``[-1, 1]^action_size`` (clipped); each task maps them to actuator controls.
"""

from __future__ import annotations

import abc

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..dynamics import step as sim_step
from .._model import ErrorFlag, Model, State

__all__ = ["Env", "EnvState", "EnvErrorFlag"]


class EnvErrorFlag(ErrorFlag):
    """Bits of :attr:`EnvState.error`: the simulator's :class:`jaxsim_contact.ErrorFlag` bits plus
    the environment's own.

    ``NON_FINITE_ACTION``: an action with a NaN/inf entry reached a traced ``step`` (outside jit it
    raises instead); the step used zeros for the non-finite entries, so the environment stays
    finite and the rest of the batch is unaffected.
    """

    NON_FINITE_ACTION = 8


class EnvState(eqx.Module):
    """State of one environment (add a leading axis to batch; every leaf is a ``jax.Array``).

    Attributes:
      sim: the simulator :class:`jaxsim_contact.State` (``q``, ``v``, contact forces, ...).
      obs: ``(observation_size,)`` observation of ``sim`` (after an auto-reset: of the fresh state).
      reward: scalar reward of the last step (0 after :meth:`Env.reset`).
      done: bool, the last step ended the episode (terminated or time limit).
      truncated: bool, the episode ended by the time limit only (bootstrap the value there).
      metrics: ``dict[str, scalar]`` per-step diagnostics of the last step (task-specific keys,
        the same keys after ``reset`` and ``step``).
      task: ``(task_size,)`` task parameters drawn at reset (e.g. the goal pose; may be empty).
      key: ``(2,)`` uint32 raw PRNG key of this environment (advanced at every step).
      steps: int32 steps taken in the current episode.
      error: int32 bitmask of :class:`EnvErrorFlag` for the episode up to the last step (the
        simulator's sticky bits plus ``NON_FINITE_ACTION``); 0 when healthy. After an auto-reset
        it still reports the finished episode; the next step starts from 0.
      final_obs: observation reached by the last step before any auto-reset (equals ``obs``
        unless ``done``); needed to bootstrap values at truncation.
    """

    sim: State
    obs: jax.Array
    reward: jax.Array
    done: jax.Array
    truncated: jax.Array
    metrics: dict
    task: jax.Array
    key: jax.Array
    steps: jax.Array
    error: jax.Array
    final_obs: jax.Array


def _raw_key(key) -> jax.Array:
    """A ``(2,)`` uint32 raw key from a raw or typed PRNG key (typed keys are unwrapped so the
    state holds plain arrays that compare bitwise and cross device/host boundaries)."""
    key = jnp.asarray(key) if not isinstance(key, jax.Array) else key
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        key = jax.random.key_data(key)
    if key.shape != (2,) or key.dtype != jnp.uint32:
        raise ValueError(
            "reset(key) expects one PRNG key (jax.random.key(seed) or jax.random.PRNGKey(seed)); "
            f"got an array of shape {key.shape} and dtype {key.dtype} (vmap reset over a batch of keys)")
    return key


def _is_traced(x) -> bool:
    return isinstance(x, jax.core.Tracer)


class Env(eqx.Module):
    """Base class of the tasks: a :class:`jaxsim_contact.Model` plus reward / observation rules.

    Subclasses implement :meth:`initial_sim`, :meth:`observe`, :meth:`reward`, :meth:`terminated`
    and may override :meth:`control`. Everything physical lives in ``model`` (dynamic leaves:
    ``eqx.tree_at`` on them never recompiles, ``vmap`` over them is domain randomisation); the
    static fields fix loop lengths.

    Attributes:
      model: the scene.
      episode_length: static, steps per episode before ``truncated`` (time limit).
      frame_skip: static, simulator steps per environment step (the action is held constant).
    """

    model: Model
    episode_length: int = eqx.field(static=True)
    frame_skip: int = eqx.field(static=True)

    # Identity hash/equality (as Brax's environments): ``jax.jit(env.step)`` then works and bakes
    # this environment's arrays into the compiled program. To change parameters without
    # recompiling (or to vmap/grad over them), pass the environment as an argument instead:
    # ``jax.jit(lambda env, s, a: env.step(s, a))``.
    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other

    def __check_init__(self):
        for name in ("episode_length", "frame_skip"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{type(self).__name__}.{name} must be a positive int, got {value!r}")

    # ---- task hooks -------------------------------------------------------------------------
    @abc.abstractmethod
    def initial_sim(self, key: jax.Array) -> tuple[State, jax.Array]:
        """Draw an initial simulator state and the task parameters ``(task_size,)`` from ``key``."""

    @abc.abstractmethod
    def observe(self, sim: State, task: jax.Array) -> jax.Array:
        """Observation ``(observation_size,)`` of ``sim``."""

    @abc.abstractmethod
    def reward(self, before: State, after: State, action: jax.Array, task: jax.Array
               ) -> tuple[jax.Array, dict]:
        """Scalar reward of the step ``before → after`` under ``action`` and its metrics dict."""

    @abc.abstractmethod
    def terminated(self, sim: State, task: jax.Array) -> jax.Array:
        """Bool: the episode ends at ``sim`` (a failure state), independent of the time limit."""

    def control(self, action: jax.Array) -> jax.Array:
        """Actuator controls ``(model.nu,)`` of an action in ``[-1, 1]^action_size``: the default
        maps ``[-1, 1]`` affinely onto each actuator's control range."""
        low = self.model.actuator_ctrl_range[:, 0].astype(action.dtype)
        high = self.model.actuator_ctrl_range[:, 1].astype(action.dtype)
        return low + 0.5 * (action + 1.0) * (high - low)

    # ---- sizes ------------------------------------------------------------------------------
    @property
    def action_size(self) -> int:
        """Dimension of the action (by default one per actuator)."""
        return self.model.nu

    @property
    def observation_size(self) -> int:
        """Dimension of the observation (from the abstract shape of :meth:`reset`; no compute)."""
        shape = jax.eval_shape(self.reset, jax.ShapeDtypeStruct((2,), jnp.uint32)).obs.shape
        return int(shape[-1])

    @property
    def dt(self) -> jax.Array:
        """Environment time step (s): ``frame_skip`` simulator steps."""
        return self.model.options.dt * self.frame_skip

    # ---- API --------------------------------------------------------------------------------
    def reset(self, key: jax.Array) -> EnvState:
        """A fresh episode drawn from ``key`` (a raw or typed PRNG key; vmap over a batch of keys).

        Returns:
          :class:`EnvState` with ``reward = 0``, ``done = False``, ``steps = 0``, ``error = 0``.
        """
        key = _raw_key(key)
        key, init_key = jax.random.split(key)
        sim, task = self.initial_sim(init_key)
        obs = self.observe(sim, task)
        dtype = obs.dtype
        # metrics keys/shapes must match step's: evaluate the reward rule on a zero-length step
        _, metrics = self.reward(sim, sim, jnp.zeros((self.action_size,), dtype), task)
        metrics = {k: jnp.zeros_like(jnp.asarray(v)) for k, v in metrics.items()}
        false = jnp.zeros((), bool)
        return EnvState(sim=sim, obs=obs, reward=jnp.zeros((), dtype), done=false, truncated=false,
                        metrics=metrics, task=task, key=key, steps=jnp.zeros((), jnp.int32),
                        error=jnp.zeros((), jnp.int32), final_obs=obs)

    def check_action(self, action) -> tuple[jax.Array, jax.Array]:
        """Validate an action: ``(action with non-finite entries zeroed, error bits)``.

        Raises:
          ValueError: wrong shape (shapes are static, so this also raises while tracing), or
            non-finite entries when the action is concrete (outside ``jit``/``vmap``). Inside
            traced code a non-finite action sets ``EnvErrorFlag.NON_FINITE_ACTION`` instead.
        """
        if not _is_traced(action):
            action = np.asarray(action)
            if not (np.issubdtype(action.dtype, np.floating) or np.issubdtype(action.dtype, np.integer)):
                raise TypeError(f"{type(self).__name__}.step: action must be a real array, got dtype {action.dtype}")
        shape = tuple(np.shape(action))
        if shape != (self.action_size,):
            raise ValueError(
                f"{type(self).__name__}.step: action must have shape ({self.action_size},) per "
                f"environment (vmap over the batch axis), got {shape}")
        if not _is_traced(action) and not np.all(np.isfinite(action)):
            bad = np.flatnonzero(~np.isfinite(action)).tolist()
            raise ValueError(f"{type(self).__name__}.step: action has non-finite entries at {bad}: {action.tolist()}")
        action = jnp.asarray(action, self.model.dtype)
        finite = jnp.isfinite(action)
        bits = jnp.where(jnp.all(finite), 0, EnvErrorFlag.NON_FINITE_ACTION).astype(jnp.int32)
        return jnp.where(finite, action, 0.0), bits

    def transition(self, state: EnvState, action: jax.Array) -> EnvState:
        """One environment step without auto-reset (a finished episode stays finished; use it
        when you reset yourself, e.g. under Brax's training wrappers).

        Args:
          state: current :class:`EnvState`.
          action: ``(action_size,)`` in ``[-1, 1]`` (clipped).
        Returns:
          the next :class:`EnvState`; ``done = terminated | time limit | non-finite simulator``.
        """
        action, action_bits = self.check_action(action)
        action = jnp.clip(action, -1.0, 1.0)
        ctrl = self.control(action)
        model = self.model

        def one(sim, _):
            return sim_step(model, sim, ctrl), None

        sim, _ = jax.lax.scan(one, state.sim, None, length=self.frame_skip)
        sim = eqx.tree_at(lambda s: s.error, sim, sim.error | action_bits)
        steps = state.steps + 1
        reward, metrics = self.reward(state.sim, sim, action, state.task)
        obs = self.observe(sim, state.task)
        # a diverged simulator ends its episode (the auto-reset replaces it); its observation and
        # reward are zeroed so that no NaN reaches a learner's batch
        broken = (sim.error & ErrorFlag.NON_FINITE_STATE) != 0
        obs = jnp.where(jnp.isfinite(obs), obs, 0.0)
        reward = jnp.where(jnp.isfinite(reward), reward, 0.0)
        terminated = self.terminated(sim, state.task) | broken
        truncated = (steps >= self.episode_length) & ~terminated
        return EnvState(sim=sim, obs=obs, reward=reward.astype(obs.dtype), done=terminated | truncated,
                        truncated=truncated, metrics=metrics, task=state.task, key=state.key,
                        steps=steps, error=sim.error, final_obs=obs)

    def step(self, state: EnvState, action: jax.Array) -> EnvState:
        """One environment step with auto-reset (see the module docstring).

        Args:
          state: current :class:`EnvState` (one environment; vmap for a batch).
          action: ``(action_size,)`` in ``[-1, 1]`` (clipped).
        Returns:
          the next :class:`EnvState`. If the step ended the episode (``done``), ``sim``, ``obs``,
          ``task`` and ``steps`` are those of a fresh episode drawn with this environment's key.
        """
        nxt = self.transition(state, action)
        key, reset_key = jax.random.split(nxt.key)
        fresh = self.reset(reset_key)
        done = nxt.done

        def pick(new, old):
            return jax.tree_util.tree_map(lambda a, b: jnp.where(done, a, b), new, old)

        return EnvState(sim=pick(fresh.sim, nxt.sim), obs=pick(fresh.obs, nxt.obs), reward=nxt.reward,
                        done=done, truncated=nxt.truncated, metrics=nxt.metrics,
                        task=pick(fresh.task, nxt.task), key=key,
                        steps=jnp.where(done, 0, nxt.steps).astype(jnp.int32), error=nxt.error,
                        final_obs=nxt.obs)
