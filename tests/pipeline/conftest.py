"""Shared helpers of the contact-pipeline tests: jitted rollouts reused across tests."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import jax

import jaxsim_contact as jc

# the robot scenes of the dynamics tests
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "dynamics"))

#: one compiled rollout per (model structure, horizon), shared by every test in the session
rollout = jax.jit(jc.rollout)
step = jax.jit(jc.step)


@functools.cache
def scene(name: str, dtype_name: str = "float64", **kwargs):
    """A built-in scene (``jc.scenes``), loaded once per session."""
    import jax.numpy as jnp

    return jc.scenes.load(name, dtype=getattr(jnp, dtype_name), **kwargs)
