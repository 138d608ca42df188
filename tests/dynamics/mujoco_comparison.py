"""Shared checks of the MuJoCo-feature tests (integrators, actuators, fluid, options): a
trajectory of MuJoCo C next to ours, and derivatives of a function against central differences."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

import jaxsim_contact as jc

def assert_trajectory_equals_mujoco(mj, model: jc.Model, q0, v0, ctrl, steps: int,
                                    act0=None, atol: float = 1e-8) -> None:
    """``steps`` steps of ``mj_step`` and of ``jc.rollout`` from ``(q0, v0, act0)`` with constant
    ``ctrl``: ``qpos``, ``qvel`` (and ``act`` when given) agree to ``atol``, no error bit."""
    data = mujoco.MjData(mj)
    data.qpos[:], data.qvel[:], data.ctrl[:] = q0, v0, ctrl
    if act0 is not None:
        data.act[:] = act0
    reference = []
    for _ in range(steps):
        mujoco.mj_step(mj, data)
        reference.append(np.concatenate([data.qpos, data.qvel] + ([data.act] if act0 is not None else [])))
    state = jc.init(model, q=jnp.asarray(q0), v=jnp.asarray(v0),
                    act=None if act0 is None else jnp.asarray(act0))
    final, trajectory = jax.jit(jc.rollout)(
        model, state, jnp.tile(jnp.asarray(ctrl), (steps, 1)))
    assert int(final.error) == 0
    parts = [trajectory.q, trajectory.v] + ([trajectory.act] if act0 is not None else [])
    ours = np.concatenate([np.asarray(x) for x in parts], axis=1)
    np.testing.assert_allclose(ours, np.asarray(reference), rtol=0, atol=atol)


def assert_derivatives_match_central_differences(function, inputs, steps, rtol: float = 1e-6) -> None:
    """``jacfwd`` and ``jacrev`` of ``function(*inputs)`` with respect to each input agree with
    each other (1e-10) and with central differences of step ``steps[i]`` (``rtol``), both relative
    to the largest entry of the finite-difference Jacobian, which must not be zero."""
    argnums = tuple(range(len(inputs)))
    forward = jax.jit(jax.jacfwd(function, argnums=argnums))(*inputs)
    reverse = jax.jit(jax.jacrev(function, argnums=argnums))(*inputs)
    evaluate = jax.jit(function)
    for argnum, eps in enumerate(steps):
        base = inputs[argnum]
        columns = []
        for k in range(base.shape[0]):
            plus, minus = list(inputs), list(inputs)
            plus[argnum], minus[argnum] = base.at[k].add(eps), base.at[k].add(-eps)
            columns.append((evaluate(*plus) - evaluate(*minus)) / (2 * eps))
        central = np.stack(columns, axis=1)
        scale = float(np.abs(central).max())
        assert scale > 0.0
        np.testing.assert_allclose(forward[argnum], reverse[argnum], rtol=0, atol=1e-10 * max(1.0, scale))
        np.testing.assert_allclose(forward[argnum], central, rtol=0, atol=rtol * max(1.0, scale))
