"""A hand-written swing-up + balance controller for ``cartpole_swingup`` (seed 004 appendix F): the
return a policy can reach on our cart-pole, for the threshold of
``benchmarks/results/shac_vs_ppo_cartpole.md``.

Energy pumping far from upright (push ∝ k_E E θ̇ cos θ, with E the pole's energy relative to
upright, plus cart centring) and a discrete LQR around upright (linearised with ``jax.jacobian``
through one simulator step) once ``|θ| <`` a switching angle. A small grid over the four gains
is scored on 16 fresh episodes; the best is re-scored on 64 other fresh episodes.

    python benchmarks/probes/cartpole_reference_controller.py

Printed on 2026-11-23 (one core, load ~3): best gains (4, 0.3, 1.0, 0.8), mean return -238.8
over 64 fresh episodes (min -264.0, max -214.3).
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg

jax.config.update("jax_enable_x64", True)

import jaxsim_contact as jc  # noqa: E402


def main() -> None:
    env = jc.envs.make("cartpole_swingup")
    model = env.model

    def one_step(z, u):
        sim = jc.step(model, jc.init(model, q=z[:2], v=z[2:]), env.control(u))
        return jnp.concatenate([sim.q, sim.v])

    zero_state, zero_action = jnp.zeros(4), jnp.zeros(1)
    A = np.asarray(jax.jacobian(one_step, 0)(zero_state, zero_action))
    B = np.asarray(jax.jacobian(one_step, 1)(zero_state, zero_action))
    Q, R = np.diag([0.05, 1.0, 0.01, 0.1]), np.array([[0.01]])  # eq. 60's weights on (x, θ, ẋ, θ̇)
    P = scipy.linalg.solve_discrete_are(A, B, Q, R)
    K = jnp.asarray(np.linalg.solve(R + B.T @ P @ B, B.T @ P @ A))
    pole_mass, com, g = 0.5, 0.5, 9.81
    inertia = pole_mass * 1.0**2 / 3  # uniform 1 m pole about its hinge

    def controller(gains, z):
        k_energy, k_x, k_v, switch = gains
        x, theta, xdot, thetadot = z
        wrapped = jnp.arctan2(jnp.sin(theta), jnp.cos(theta))
        energy = 0.5 * inertia * thetadot**2 + pole_mass * g * com * (jnp.cos(theta) - 1.0)
        swing = k_energy * energy * thetadot * jnp.cos(theta) - k_x * x - k_v * xdot
        balance = -(K @ jnp.stack([x, wrapped, xdot, thetadot]))[0]
        return jnp.clip(jnp.where(jnp.abs(wrapped) < switch, balance, swing), -1.0, 1.0)

    def episode(gains, key):
        def body(s, _):
            nxt = env.step(s, controller(gains, jnp.concatenate([s.sim.q, s.sim.v]))[None])
            return nxt, nxt.reward

        return jnp.sum(jax.lax.scan(body, env.reset(key), None, length=env.episode_length)[1])

    returns = jax.jit(jax.vmap(episode, (None, 0)))
    keys = jax.random.split(jax.random.key(1), 16)
    best = (-np.inf, None)
    for gains in itertools.product((1.0, 1.5, 2.0, 3.0, 4.0), (0.3, 0.6, 1.0), (0.3, 0.6, 1.0),
                                   (0.5, 0.6, 0.8, 1.0)):
        score = float(jnp.mean(returns(jnp.asarray(gains), keys)))
        if score > best[0]:
            best = (score, gains)
    fresh = returns(jnp.asarray(best[1]), jax.random.split(jax.random.key(7), 64))
    print(f"best gains {best[1]}: {best[0]:.1f} on the 16 tuning episodes; on 64 fresh episodes mean "
          f"{float(jnp.mean(fresh)):.1f} (min {float(jnp.min(fresh)):.1f}, max {float(jnp.max(fresh)):.1f})")


if __name__ == "__main__":
    main()
