"""Sharded rollouts (issue 7, "Must show"): a batch of cart-poles spread over 4 CPU devices gives
bitwise the unsharded result. XLA_FLAGS must be set before JAX starts, so the comparison runs in a
subprocess (tests/envs/_sharded_rollout.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

import jaxsim_contact as jc

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def test_sharded_rollout_equals_unsharded_bitwise_on_4_devices():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4").strip()
    out = subprocess.run([sys.executable, str(HERE / "_sharded_rollout.py")], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    verdict = json.loads(out.stdout.strip().splitlines()[-1])
    assert verdict["device_count"] == 4
    assert verdict["devices_used"] == [0, 1, 2, 3] and verdict["per_device_rows"] == [2, 2, 2, 2]
    assert verdict["mismatched"] == [] and verdict["leaves"] > 20
    assert verdict["dones"] > 0  # episodes of 5 steps in 12: auto-resets happened inside the rollout
    assert verdict["distinct_obs"] == 8
    assert "not a multiple of the 4 devices" in verdict["indivisible_error"]


def test_shard_batch_and_reset_batch_reject_bad_input():
    mesh = jc.envs.batch_mesh()
    with pytest.raises(ValueError, match="no batch axis 1"):
        jc.envs.shard_batch(jnp.zeros((4,)), mesh, axis=1)
    with pytest.raises(ValueError, match="positive int"):
        jc.envs.reset_batch(jc.envs.make("cartpole_swingup"), jax.random.key(0), 0)
