"""Run in a subprocess by test_sharding.py (XLA_FLAGS must be set before JAX starts): roll out a
batch of cartpoles once unsharded and once sharded over 4 CPU devices, compare bitwise, print a
one-line JSON verdict."""

import json
import os
import sys

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4").strip()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

jax.config.update("jax_enable_x64", True)

import jaxsim_contact as jc  # noqa: E402

BATCH, STEPS = 8, 12


def main():
    env = jc.envs.make("cartpole_swingup", episode_length=5)  # 5-step episodes: auto-resets happen
    states = jc.envs.reset_batch(env, jax.random.key(3), BATCH)
    actions = jax.random.uniform(jax.random.key(4), (STEPS, BATCH, env.action_size), minval=-1, maxval=1)
    run = jax.jit(jc.envs.rollout)
    final, traj = run(env, states, actions)
    mesh = jc.envs.batch_mesh()
    sharded_states = jc.envs.shard_batch(states, mesh)
    sharded_actions = jc.envs.shard_batch(actions, mesh, axis=1)
    final_s, traj_s = run(env, sharded_states, sharded_actions)
    leaves = jax.tree_util.tree_leaves((final, traj))
    leaves_s = jax.tree_util.tree_leaves((final_s, traj_s))
    mismatched = [i for i, (a, b) in enumerate(zip(leaves, leaves_s))
                  if not np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True)]
    try:
        jc.envs.shard_batch(jnp.zeros((6, 2)), mesh)
        indivisible_error = ""
    except ValueError as err:
        indivisible_error = str(err)
    devices_used = sorted({d.id for d in final_s.obs.sharding.device_set})
    print(json.dumps({
        "device_count": jax.device_count(),
        "devices_used": devices_used,
        "per_device_rows": [s.data.shape[0] for s in final_s.obs.addressable_shards],
        "leaves": len(leaves),
        "mismatched": mismatched,
        "dones": int(np.asarray(traj.done).sum()),
        "indivisible_error": indivisible_error,
        "distinct_obs": int(np.unique(np.asarray(final.obs), axis=0).shape[0]),
    }))


if __name__ == "__main__":
    sys.exit(main())
