"""SHAC on the cart-pole swing-up: first-order policy learning through jaxsim_contact's gradients
(seed 004 §IV-C and appendix F; SHAC is Xu et al., ICLR 2022).

Each iteration rolls out ``--envs`` environments for a short horizon ``h`` with the stochastic
policy (reparameterised Gaussian), and the actor follows the gradient of

    L = -1/(h N) Σ_envs [ Σ_t γ^t r_t + γ^h V_target(s_h) ]

taken *through the simulator* (``jax.grad`` through ``env.step``: the hard joint limit of the rail
is differentiated with the implicit rule of the contact solve). Episodes that end inside the
window are cut there (bootstrapped with the critic at a time limit). The critic regresses TD(λ)
targets computed with a Polyak-averaged target critic. Hyper-parameters default to seed 004
appendix F (16 environments, horizon 20, γ = 0.99, λ = 0.95, learning rates 3e-4, 16 critic
iterations with 4 minibatches, target critic averaging 0.99); gradients are clipped by global
norm as in SHAC's reference implementation.

Every ``--eval-every`` iterations the deterministic policy (mean action) runs full 240-step
episodes on 16 fresh environments; the mean episode return is logged against the number of
environment steps consumed by training. Output: ``benchmarks/results/shac_cartpole.json``
(plotted by ``examples/ppo_cartpole.py --plot`` next to the PPO baseline).

    python examples/shac_cartpole.py --iterations 2000 --seed 0
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

if "--all-cores" not in sys.argv and hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # comparable timings on a shared box

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import optax  # noqa: E402

jax.config.update("jax_enable_x64", True)  # a script, not the library

import jaxsim_contact as jc  # noqa: E402

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"


# ---- networks: plain MLPs as lists of (W, b) ----------------------------------------------------

def mlp_init(key, sizes, dtype):
    params = []
    for k, (n_in, n_out) in zip(jax.random.split(key, len(sizes) - 1), zip(sizes[:-1], sizes[1:])):
        w = jax.random.normal(k, (n_in, n_out), dtype) * jnp.sqrt(2.0 / n_in)
        params.append((w, jnp.zeros((n_out,), dtype)))
    return params


def mlp_apply(params, x):
    for w, b in params[:-1]:
        x = jax.nn.elu(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def actor_mean(actor, obs):
    return jnp.tanh(mlp_apply(actor["net"], obs))


def value(critic, obs):
    return mlp_apply(critic, obs)[..., 0]


# ---- SHAC --------------------------------------------------------------------------------------

def make_trainer(env, args):
    gamma, lam, horizon = args.gamma, args.lam, args.horizon
    vstep = jax.vmap(env.step)

    def rollout(actor, target_critic, states, key):
        """Differentiable short-horizon rollout; returns (actor loss, next states, data)."""

        def body(carry, key_t):
            states, acc, discount, loss = carry
            mean = actor_mean(actor, states.obs)
            std = jnp.exp(actor["log_std"])
            action = mean + std * jax.random.normal(key_t, mean.shape, mean.dtype)
            nxt = vstep(states, action)
            reward = nxt.reward * args.reward_scale
            acc = acc + discount * reward
            # an episode ending here: cut the return (bootstrap at a time limit), restart discount
            boot = jnp.where(nxt.truncated, value(target_critic, nxt.final_obs), 0.0)
            loss = loss - jnp.where(nxt.done, acc + discount * gamma * boot, 0.0)
            acc = jnp.where(nxt.done, 0.0, acc)
            discount = jnp.where(nxt.done, 1.0, discount * gamma)
            data = (jax.lax.stop_gradient(states.obs), jax.lax.stop_gradient(reward), nxt.done,
                    nxt.truncated, jax.lax.stop_gradient(nxt.final_obs))
            return (nxt, acc, discount, loss), data

        n = states.obs.shape[0]
        zeros = jnp.zeros((n,), states.obs.dtype)
        (final, acc, discount, loss), data = jax.lax.scan(
            body, (states, zeros, jnp.ones_like(zeros), zeros), jax.random.split(key, horizon))
        loss = loss - (acc + discount * gamma * value(target_critic, final.obs))  # open windows
        return jnp.sum(loss) / (horizon * n), (jax.lax.stop_gradient(final), data)

    def td_lambda(target_critic, data, last_obs):
        obs, reward, done, truncated, final_obs = data
        v_next = value(target_critic, final_obs)  # value of the state each step reached

        def back(g_next, x):
            r, d, tr, v = x
            boot = jnp.where(d, jnp.where(tr, v, 0.0), (1 - lam) * v + lam * g_next)
            g = r + gamma * boot
            return g, g

        _, targets = jax.lax.scan(back, value(target_critic, last_obs), (reward, done, truncated, v_next),
                                  reverse=True)
        return obs.reshape(-1, obs.shape[-1]), targets.reshape(-1)

    actor_opt = optax.chain(optax.clip_by_global_norm(args.grad_clip), optax.adam(args.actor_lr))
    critic_opt = optax.chain(optax.clip_by_global_norm(args.grad_clip), optax.adam(args.critic_lr))

    def iteration(carry, key):
        actor, critic, target, actor_os, critic_os, states = carry
        k_roll, k_critic = jax.random.split(key)
        (loss, (states, data)), grads = jax.value_and_grad(rollout, has_aux=True)(actor, target, states, k_roll)
        grads = jax.tree_util.tree_map(lambda g: jnp.where(jnp.isfinite(g), g, 0.0), grads)
        updates, actor_os = actor_opt.update(grads, actor_os, actor)
        actor = optax.apply_updates(actor, updates)
        obs, targets = td_lambda(target, data, states.obs)

        def critic_epoch(carry, k):
            critic, critic_os = carry
            perm = jax.random.permutation(k, obs.shape[0]).reshape(args.minibatches, -1)

            def minibatch(carry, idx):
                critic, critic_os = carry
                g = jax.grad(lambda c: jnp.mean((value(c, obs[idx]) - targets[idx]) ** 2))(critic)
                up, critic_os = critic_opt.update(g, critic_os, critic)
                return (optax.apply_updates(critic, up), critic_os), None

            return jax.lax.scan(minibatch, (critic, critic_os), perm)[0], None

        (critic, critic_os), _ = jax.lax.scan(critic_epoch, (critic, critic_os),
                                              jax.random.split(k_critic, args.critic_iterations))
        target = jax.tree_util.tree_map(lambda t, c: args.target_alpha * t + (1 - args.target_alpha) * c,
                                        target, critic)
        stats = (loss, jnp.sum(data[1]), jnp.sum(data[2]))
        return (actor, critic, target, actor_os, critic_os, states), stats

    def train_chunk(carry, keys):
        return jax.lax.scan(iteration, carry, keys)

    def evaluate(actor, key):
        states = jax.vmap(env.reset)(jax.random.split(key, 16))

        def body(s, _):
            nxt = vstep(s, actor_mean(actor, s.obs))
            return nxt, nxt.reward

        _, rewards = jax.lax.scan(body, states, None, length=env.episode_length)
        return jnp.mean(jnp.sum(rewards, axis=0))

    return actor_opt, critic_opt, jax.jit(train_chunk), jax.jit(evaluate)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--iterations", type=int, default=2000)
    p.add_argument("--envs", type=int, default=16)
    p.add_argument("--horizon", type=int, default=20)
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--lam", type=float, default=0.95)
    p.add_argument("--actor-lr", type=float, default=3e-4)
    p.add_argument("--critic-lr", type=float, default=3e-4)
    p.add_argument("--critic-iterations", type=int, default=16)
    p.add_argument("--minibatches", type=int, default=4)
    p.add_argument("--target-alpha", type=float, default=0.99)
    p.add_argument("--grad-clip", type=float, default=1.0)
    p.add_argument("--reward-scale", type=float, default=1.0,
                   help="rewards are multiplied by this in the losses (critic targets stay O(1))")
    p.add_argument("--eval-every", type=int, default=50)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-minutes", type=float, default=None, help="stop early after this wall time")
    p.add_argument("--out", type=Path, default=RESULTS / "shac_cartpole.json")
    p.add_argument("--all-cores", action="store_true")
    args = p.parse_args(argv)

    env = jc.envs.make("cartpole_swingup")
    dtype = env.model.dtype
    key = jax.random.key(args.seed)
    k_actor, k_critic, k_env, key = jax.random.split(key, 4)
    obs_size, act_size = env.observation_size, env.action_size
    actor = {"net": mlp_init(k_actor, [obs_size, 64, 64, act_size], dtype),
             "log_std": jnp.full((act_size,), -1.0, dtype)}
    critic = mlp_init(k_critic, [obs_size, 64, 64, 1], dtype)
    actor_opt, critic_opt, train_chunk, evaluate = make_trainer(env, args)
    states = jax.vmap(env.reset)(jax.random.split(k_env, args.envs))
    carry = (actor, critic, critic, actor_opt.init(actor), critic_opt.init(critic), states)

    steps_per_iteration = args.envs * args.horizon
    curve = []
    t0 = time.time()
    done_iterations = 0
    while done_iterations < args.iterations:
        key, k_eval, k_train = jax.random.split(key, 3)
        ret = float(evaluate(carry[0], k_eval))
        curve.append({"env_steps": done_iterations * steps_per_iteration, "iteration": done_iterations,
                      "eval_return": ret, "wall_s": time.time() - t0})
        print(f"iter {done_iterations:5d}  env steps {done_iterations * steps_per_iteration:8d}  "
              f"eval return {ret:9.2f}  wall {time.time() - t0:7.1f} s", flush=True)
        _write(args, curve, env)
        if args.max_minutes is not None and time.time() - t0 > 60 * args.max_minutes:
            break
        chunk = min(args.eval_every, args.iterations - done_iterations)
        carry, stats = train_chunk(carry, jax.random.split(k_train, chunk))
        done_iterations += chunk
    ret = float(evaluate(carry[0], jax.random.split(key)[0]))
    curve.append({"env_steps": done_iterations * steps_per_iteration, "iteration": done_iterations,
                  "eval_return": ret, "wall_s": time.time() - t0})
    print(f"final: env steps {done_iterations * steps_per_iteration}  eval return {ret:.2f}", flush=True)
    _write(args, curve, env)


def _write(args, curve, env):
    args.out.parent.mkdir(parents=True, exist_ok=True)
    meta = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    args.out.write_text(json.dumps({"algorithm": "SHAC", "env": "cartpole_swingup",
                                    "episode_length": env.episode_length, "args": meta,
                                    "load_average": os.getloadavg(), "curve": curve}, indent=1))


if __name__ == "__main__":
    main()
