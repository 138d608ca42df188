"""Compiled functions shared by the step and rollout tests: one jitted ``step`` / ``rollout`` per
process, so every test that runs the same model structure reuses its compilation."""

from __future__ import annotations

import jax

import jaxsim_contact as jc

#: one compiled rollout per (model structure, horizon), shared by every test in the session
rollout = jax.jit(jc.rollout)
step = jax.jit(jc.step)

