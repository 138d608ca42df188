"""Batched rollouts spread over devices with ``jax.sharding`` (issue 7).

Environments of a batch are independent, so the batch axis is split over a one-dimensional device
mesh (``Mesh`` + ``NamedSharding(mesh, PartitionSpec("batch"))``) and XLA's SPMD partitioner runs
each device's share of the ``vmap`` locally, with no communication inside a step. On one host::

    env = jc.envs.make("cartpole_swingup")
    mesh = jc.envs.batch_mesh()                      # all local devices (jax.local_devices())
    states = jc.envs.shard_batch(jc.envs.reset_batch(env, key, 1024), mesh)
    actions = jc.envs.shard_batch(actions, mesh, axis=1)   # (T, 1024, action_size)
    final, traj = jax.jit(jc.envs.rollout)(env, states, actions)   # outputs stay sharded

The batch size must be a multiple of the number of devices. On CPU,
``XLA_FLAGS=--xla_force_host_platform_device_count=4`` (set before JAX starts) gives 4 devices to
try it; results are bitwise those of the unsharded rollout (tests/envs/test_sharding.py).

Several hosts (multi-host / multi-process) go through ``jax.distributed``: call
``jax.distributed.initialize()`` first in every process, then build the mesh over the global
devices with ``batch_mesh(jax.devices())``; each process passes *its own* slice of the batch to
:func:`shard_batch`, which assembles the global array with
``jax.make_array_from_process_local_data`` (global batch = processes × local batch). The jitted
rollout is then called identically in every process. (The multi-process path follows JAX's
documented recipe; it is not exercised by the test suite, which runs one process.)
"""

from __future__ import annotations

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from ._base import Env, EnvState

__all__ = ["batch_mesh", "shard_batch", "reset_batch", "rollout"]

BATCH_AXIS = "batch"


def batch_mesh(devices=None) -> Mesh:
    """A one-dimensional mesh named ``"batch"`` over ``devices`` (default: all local devices;
    pass ``jax.devices()`` after ``jax.distributed.initialize()`` to span every host)."""
    devices = jax.local_devices() if devices is None else list(devices)
    if not devices:
        raise ValueError("batch_mesh needs at least one device")
    return Mesh(np.asarray(devices), (BATCH_AXIS,))


def shard_batch(tree, mesh: Mesh | None = None, axis: int = 0):
    """Place every array leaf of ``tree`` with its axis ``axis`` split over ``mesh``'s devices.

    Args:
      tree: pytree of arrays sharing the batch size ``B`` on ``axis`` (e.g. a batched
        :class:`EnvState`, or actions ``(T, B, action_size)`` with ``axis=1``).
      mesh: from :func:`batch_mesh` (default: all local devices).
      axis: the batch axis of every leaf.
    Returns:
      the same tree as sharded ``jax.Array`` s. In a multi-process run, ``tree`` is this process's
      local slice and the result is the global array (batch = processes × local batch).
    Raises:
      ValueError: a leaf without that axis, or a batch size not divisible by the device count.
    """
    mesh = batch_mesh() if mesh is None else mesh
    count = mesh.devices.size
    spec = PartitionSpec(*([None] * axis + [BATCH_AXIS]))
    sharding = NamedSharding(mesh, spec)
    multi_process = jax.process_count() > 1
    local_count = count // jax.process_count() if multi_process else count

    def place(leaf):
        shape = np.shape(leaf)
        if len(shape) <= axis:
            raise ValueError(f"shard_batch: a leaf of shape {shape} has no batch axis {axis}")
        if shape[axis] % local_count:
            raise ValueError(
                f"shard_batch: batch size {shape[axis]} is not a multiple of the {local_count} "
                "devices (pad the batch or choose another size)")
        if multi_process:
            return jax.make_array_from_process_local_data(sharding, np.asarray(leaf))
        return jax.device_put(leaf, sharding)

    return jax.tree_util.tree_map(place, tree)


def reset_batch(env: Env, key: jax.Array, num_envs: int) -> EnvState:
    """``num_envs`` independent episodes: ``vmap(env.reset)`` over ``jax.random.split(key)``.

    Returns:
      an :class:`EnvState` whose leaves have a leading axis ``num_envs``.
    """
    if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
        raise ValueError(f"reset_batch: num_envs must be a positive int, got {num_envs!r}")
    return jax.vmap(env.reset)(jax.random.split(key, num_envs))


def rollout(env: Env, states: EnvState, actions: jax.Array) -> tuple[EnvState, EnvState]:
    """``lax.scan`` over time of ``vmap(env.step)`` (with auto-reset).

    Args:
      env: the environment (a pytree: pass it as an argument of ``jax.jit``).
      states: batched :class:`EnvState` (leading axis ``B``).
      actions: ``(T, B, action_size)``.
    Returns:
      ``(final_states, trajectory)``, ``trajectory`` stacking the state after each step
      (leading axes ``(T, B)``). Sharded inputs give sharded outputs under ``jax.jit``.
    """
    batched_step = jax.vmap(env.step)

    def body(states, action):
        nxt = batched_step(states, action)
        return nxt, nxt

    return jax.lax.scan(body, states, actions)
