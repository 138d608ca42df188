"""Gradients through env.step (what SHAC uses, seed 004 §IV-C): the derivative of a 6-step return
w.r.t. the actions agrees with central finite differences in float64, for a free swing and for a
cart held on the hard rail limit (the limit's force enters through the implicit rule)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsim_contact as jc

STEPS = 6
ENV = jc.envs.make("cartpole_swingup")
# a tight solver so that finite differences see the same contact mode as the derivative
ENV = eqx.tree_at(lambda e: e.model, ENV, ENV.model.replace_options(
    solver=jc.contact.ADMM("ncp", max_iterations=500, tolerance=1e-12, factorization="cholesky")))


def episode_return(env, start, actions):
    def body(s, a):
        s = env.step(s, a)
        return s, s.reward

    _, rewards = jax.lax.scan(body, start, actions)
    return jnp.sum(rewards)


RETURN = jax.jit(episode_return)
GRAD = jax.jit(jax.grad(episode_return, argnums=2))


def start_state(x, xdot):
    s = ENV.reset(jax.random.key(0))
    return eqx.tree_at(lambda s: (s.sim.q, s.sim.v), s,
                       (jnp.asarray([x, 2.5]), jnp.asarray([xdot, 0.3])))


@pytest.mark.parametrize("x, xdot, push", [(0.0, 0.0, 0.3), (1.97, 2.0, 0.8)], ids=["free", "rail_limit"])
def test_return_gradient_matches_central_differences(x, xdot, push):
    start = start_state(x, xdot)
    actions = jnp.full((STEPS, 1), push) + 0.05 * jnp.sin(jnp.arange(STEPS))[:, None]
    grad = np.asarray(GRAD(ENV, start, actions))
    eps = 1e-6
    fd = np.zeros_like(grad)
    for t in range(STEPS):
        bump = jnp.zeros_like(actions).at[t, 0].set(eps)
        fd[t, 0] = (float(RETURN(ENV, start, actions + bump)) - float(RETURN(ENV, start, actions - bump))) / (2 * eps)
    assert np.all(np.isfinite(grad))
    if x < 1.9:
        assert np.linalg.norm(grad) > 1e-3
        np.testing.assert_allclose(grad, fd, rtol=1e-4, atol=1e-6 * np.abs(fd).max())
    else:
        # pushed into the rail, the cart stays on the limit for the whole rollout: the limit force
        # absorbs any change of the push, so the return does not depend on the actions; the
        # implicit rule of the active (sticking) limit gives that zero, like finite differences
        traj_q = jax.lax.scan(lambda s, a: (ENV.step(s, a),) * 2, start, actions)[1].sim.q
        assert float(jnp.min(traj_q[:, 0])) > 1.99
        assert np.abs(fd).max() < 1e-7 and np.abs(grad).max() < 1e-7
