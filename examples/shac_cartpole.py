"""SHAC on the cart-pole swing-up: first-order policy learning through jaxsim_contact's gradients
(seed 004 §IV-C and appendix F; SHAC is Xu et al., ICLR 2022).

Each iteration rolls out ``--envs`` environments for a short horizon ``h`` with the stochastic
policy ``a = tanh(μ(o) + σ ε)`` (reparameterised Gaussian squashed by tanh, as SHAC's reference
implementation does; squashing the mean and clipping the noisy action instead zeroes the gradient
of every clipped sample), and the actor follows the gradient of

    L = -1/(h N) Σ_envs [ Σ_t γ^t r_t + γ^h V_target(s_h) ]

taken *through the simulator* (``jax.grad`` through ``env.step``; the hard joint limit of the rail
is differentiated by the contact solve's derivative rule, see below). Episodes that end inside the
window are cut there (bootstrapped with the critic at a time limit). The critic regresses TD(λ)
targets computed with a Polyak-averaged target critic.

Networks and optimiser follow SHAC's reference implementation (Xu et al. 2022, its cart-pole
configuration): observations normalised by a running mean / variance (updated with every
observation of the rollouts; each iteration uses the statistics frozen at its start), ELU MLPs
64-64 with LayerNorm after each hidden activation (actor and critic), log-std initialised at -1,
Adam with betas (0.7, 0.95), learning rates decayed linearly to 1e-5 over ``--iterations``,
gradients clipped by global norm 1. Defaults are SHAC's cart-pole values (horizon 32, actor lr
1e-2, critic lr 1e-3, target-critic averaging 0.2, 16 critic iterations with 4 minibatches,
γ = 0.99, λ = 0.95) except the batch: 8 environments for 2000 iterations (512 000 environment
steps) instead of SHAC's 64 for 500. Fewer environments per iteration means more actor updates
per environment step; on the threshold of ``benchmarks/results/shac_vs_ppo_cartpole.md`` (-400)
the median first crossing fell from 0.68 M steps (64 environments, 6 seeds) to 0.25 M (16) and
0.18 M (8; 12 of 12 seeds, half of them not used to choose the setting) — "Update 4" there.
``--envs 64 --iterations 500`` restores SHAC's batch. Seed 004 appendix F instead lists 16
environments, horizon 20, learning rates 3e-4 and averaging 0.99: pass ``--envs 16 --horizon 20
--actor-lr 3e-4 --critic-lr 3e-4 --target-alpha 0.99``.

The rail limit: a cart pushed onto a rail end does not move, so the exact (implicit) derivative
of everything after it with respect to the push is zero, and a policy that drives the cart onto
the rail gets no gradient to leave it (benchmarks/results/shac_vs_ppo_cartpole.md: runs with the
exact rule stall near -1000 with the cart on the rail 60-90 % of the time). By default the rail
is therefore differentiated with the relaxed-complementarity rule (``--gradient smoothed
--relaxation 1``; the simulation itself is unchanged, only its derivative), and the actor's output
layer starts scaled by 0.01 (``--actor-output-scale``) so the first policies do not drive the
cart onto the rail before anything is learned. ``--relaxation 10 --relaxation-end 1`` decays ρ
geometrically over the first half of the run (``--relaxation-decay``), towards the seed's
"adaptive scheduling of a compliance term".

The rail trap is also a tanh trap: a trapped policy's deterministic action is saturated
(``|tanh μ| > 0.99``, where ``tanh' < 0.02``) on ~85 % of its evaluation steps, so even the relaxed
rail derivative reaches the actor through a vanishing factor. ``--mean-penalty c`` (default 1e-2)
adds ``c |μ|²`` per step to the actor loss (a regulariser of the pre-squash mean, as in SAC's
original implementation; the environment's reward is unchanged): with it all 6 seeds reach -400,
without it 3 of 6 (``benchmarks/results/shac_vs_ppo_cartpole.md``, "Update 3").

Every ``--eval-every`` iterations the deterministic policy (``tanh μ``) runs full 240-step
episodes on 16 fresh environments; the mean episode return is logged against the number of
environment steps consumed by training (and the process CPU time). Output:
``benchmarks/results/shac_cartpole.json`` (plotted by ``examples/ppo_cartpole.py --plot`` next to
the PPO baseline).

    python examples/shac_cartpole.py --seed 0            # 2000 iterations, 0.51 M env steps, ~2 CPU-min
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from pathlib import Path

if "--all-cores" not in sys.argv and hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # comparable timings on a shared box

import equinox as eqx  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import optax  # noqa: E402

jax.config.update("jax_enable_x64", True)  # a script, not the library

import jaxsim_contact as jc  # noqa: E402

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"


# ---- networks: MLPs as lists of dicts ---------------------------------------------------------

def mlp_init(key, sizes, dtype):
    """PyTorch ``nn.Linear``'s default initialisation (uniform in ±1/√fan_in), the one SHAC's
    networks start from; hidden layers carry LayerNorm gain and bias."""
    params = []
    keys = jax.random.split(key, len(sizes) - 1)
    for layer, (k, n_in, n_out) in enumerate(zip(keys, sizes[:-1], sizes[1:])):
        kw, kb = jax.random.split(k)
        bound = 1.0 / jnp.sqrt(n_in)
        p = {"w": jax.random.uniform(kw, (n_in, n_out), dtype, -bound, bound),
             "b": jax.random.uniform(kb, (n_out,), dtype, -bound, bound)}
        if layer < len(sizes) - 2:
            p["ln_gain"], p["ln_bias"] = jnp.ones((n_out,), dtype), jnp.zeros((n_out,), dtype)
        params.append(p)
    return params


def mlp_apply(params, x):
    for p in params[:-1]:
        x = jax.nn.elu(x @ p["w"] + p["b"])
        mean = jnp.mean(x, -1, keepdims=True)
        var = jnp.var(x, -1, keepdims=True)
        x = (x - mean) * jax.lax.rsqrt(var + 1e-5) * p["ln_gain"] + p["ln_bias"]
    return x @ params[-1]["w"] + params[-1]["b"]


def actor_mu(actor, obs):
    """Pre-squash mean of the Gaussian policy; the action is ``tanh(μ + σ ε)``."""
    return mlp_apply(actor["net"], obs)


def value(critic, obs):
    return mlp_apply(critic, obs)[..., 0]


# ---- observation normaliser (running mean / variance, parallel-variance update) -------------------

def normalizer_init(size, dtype):
    return {"mean": jnp.zeros((size,), dtype), "var": jnp.ones((size,), dtype), "count": jnp.asarray(1e-4, dtype)}


def normalizer_update(norm, batch):
    """Merge the moments of ``batch`` ``(n, size)`` into the running statistics."""
    n = batch.shape[0]
    b_mean, b_var = jnp.mean(batch, 0), jnp.var(batch, 0)
    delta = b_mean - norm["mean"]
    total = norm["count"] + n
    m2 = norm["var"] * norm["count"] + b_var * n + delta**2 * norm["count"] * n / total
    return {"mean": norm["mean"] + delta * n / total, "var": m2 / total, "count": total}


def normalize(norm, obs):
    return (obs - norm["mean"]) / jnp.sqrt(norm["var"] + 1e-5)


# ---- SHAC --------------------------------------------------------------------------------------

def relaxation_at(args, iteration):
    """ρ of the smoothed rail derivative at ``iteration`` under ``--relaxation-end``: a geometric
    decay from ``--relaxation`` to it over the first ``--relaxation-decay`` fraction of the run
    (then constant)."""
    progress = jnp.minimum(iteration / max(1.0, args.relaxation_decay * args.iterations), 1.0)
    return args.relaxation * (args.relaxation_end / args.relaxation) ** progress


def make_trainer(env, args):
    gamma, lam, horizon = args.gamma, args.lam, args.horizon

    def env_at(iteration):
        """The environment whose rail derivative uses this iteration's ρ (a dynamic field:
        the schedule never recompiles)."""
        if args.gradient != "smoothed" or args.relaxation_end is None:
            return env
        return eqx.tree_at(lambda e: e.model.options.gradient_smoothing.relaxation, env,
                           relaxation_at(args, iteration).astype(env.model.dtype))

    def rollout(actor, target_critic, norm, states, key, iteration):
        """Differentiable short-horizon rollout; returns (actor loss, (next states, data)).

        ``norm`` is the observation normaliser frozen for this iteration; ``data`` holds the
        normalised observations, scaled rewards, done / truncated flags and the normalised
        observations each step reached (before any auto-reset), all without gradient."""
        vstep = jax.vmap(env_at(iteration).step)

        def body(carry, key_t):
            states, acc, discount, loss = carry
            obs = normalize(norm, states.obs)
            mu = actor_mu(actor, obs)
            # --mean-penalty: keeps the pre-squash mean out of tanh's flat tails (a regulariser
            # of the actor loss only; the environment's reward is unchanged)
            if args.mean_penalty:
                loss = loss + args.mean_penalty * jnp.sum(mu * mu, axis=-1)
            std = jnp.exp(actor["log_std"])
            action = jnp.tanh(mu + std * jax.random.normal(key_t, mu.shape, mu.dtype))
            nxt = vstep(states, action)
            reward = nxt.reward * args.reward_scale
            acc = acc + discount * reward
            reached = normalize(norm, nxt.final_obs)
            # an episode ending here: cut the return (bootstrap at a time limit), restart discount
            boot = jnp.where(nxt.truncated, value(target_critic, reached), 0.0)
            loss = loss - jnp.where(nxt.done, acc + discount * gamma * boot, 0.0)
            acc = jnp.where(nxt.done, 0.0, acc)
            discount = jnp.where(nxt.done, 1.0, discount * gamma)
            data = (jax.lax.stop_gradient(obs), jax.lax.stop_gradient(reward), nxt.done,
                    nxt.truncated, jax.lax.stop_gradient(reached), jax.lax.stop_gradient(nxt.final_obs))
            return (nxt, acc, discount, loss), data

        n = states.obs.shape[0]
        zeros = jnp.zeros((n,), states.obs.dtype)
        (final, acc, discount, loss), data = jax.lax.scan(
            body, (states, zeros, jnp.ones_like(zeros), zeros), jax.random.split(key, horizon))
        # windows still open at the horizon end: bootstrap with the target critic
        loss = loss - (acc + discount * gamma * value(target_critic, normalize(norm, final.obs)))
        return jnp.sum(loss) / (horizon * n), (jax.lax.stop_gradient(final), data)

    def td_lambda(target_critic, data, last_obs):
        """TD(λ) targets ``(h N,)`` for the normalised observations ``(h N, obs)``."""
        obs, reward, done, truncated, reached, _ = data
        v_next = value(target_critic, reached)  # value of the state each step reached

        def back(g_next, x):
            r, d, tr, v = x
            boot = jnp.where(d, jnp.where(tr, v, 0.0), (1 - lam) * v + lam * g_next)
            g = r + gamma * boot
            return g, g

        _, targets = jax.lax.scan(back, value(target_critic, last_obs), (reward, done, truncated, v_next),
                                  reverse=True)
        return obs.reshape(-1, obs.shape[-1]), targets.reshape(-1)

    def adam(lr, updates_per_iteration):
        # SHAC: Adam betas (0.7, 0.95), learning rate decayed linearly to 1e-5 over the run
        schedule = optax.linear_schedule(lr, 1e-5, max(1, args.iterations * updates_per_iteration))
        return optax.chain(optax.clip_by_global_norm(args.grad_clip), optax.adam(schedule, b1=0.7, b2=0.95))

    actor_opt = adam(args.actor_lr, 1)
    critic_opt = adam(args.critic_lr, args.critic_iterations * args.minibatches)

    def iteration(carry, key_and_index):
        key, index = key_and_index
        actor, critic, target, actor_os, critic_os, norm, states = carry
        k_roll, k_critic = jax.random.split(key)
        (loss, (states, data)), grads = jax.value_and_grad(rollout, has_aux=True)(
            actor, target, norm, states, k_roll, index)
        grads = jax.tree_util.tree_map(lambda g: jnp.where(jnp.isfinite(g), g, 0.0), grads)
        updates, actor_os = actor_opt.update(grads, actor_os, actor)
        actor = optax.apply_updates(actor, updates)
        obs, targets = td_lambda(target, data, normalize(norm, states.obs))
        raw_obs = jnp.concatenate([data[5].reshape(-1, data[5].shape[-1]), states.obs])
        # statistics for the next iteration: every observation reached in this window
        norm = normalizer_update(norm, raw_obs)

        def critic_epoch(carry, k):
            critic, critic_os = carry
            perm = jax.random.permutation(k, obs.shape[0]).reshape(args.minibatches, -1)

            def minibatch(carry, idx):
                critic, critic_os = carry
                g = jax.grad(lambda c: jnp.mean((value(c, obs[idx]) - targets[idx]) ** 2))(critic)
                g = jax.tree_util.tree_map(lambda x: jnp.where(jnp.isfinite(x), x, 0.0), g)
                up, critic_os = critic_opt.update(g, critic_os, critic)
                return (optax.apply_updates(critic, up), critic_os), None

            return jax.lax.scan(minibatch, (critic, critic_os), perm)[0], None

        (critic, critic_os), _ = jax.lax.scan(critic_epoch, (critic, critic_os),
                                              jax.random.split(k_critic, args.critic_iterations))
        target = jax.tree_util.tree_map(lambda t, c: args.target_alpha * t + (1 - args.target_alpha) * c,
                                        target, critic)
        stats = (loss, jnp.sum(data[1]), jnp.sum(data[2]))
        return (actor, critic, target, actor_os, critic_os, norm, states), stats

    def train_chunk(carry, keys):
        return jax.lax.scan(iteration, carry, keys)

    def evaluate(actor, norm, key):
        """Mean return of the deterministic policy ``tanh μ`` over 16 fresh full episodes, the
        fraction of those steps that end with the cart on a rail end (|x| > 1.99 m), and the
        fraction whose action is saturated (|tanh μ| > 0.99, where tanh' < 0.02)."""
        states = jax.vmap(env.reset)(jax.random.split(key, 16))
        vstep = jax.vmap(env.step)

        def body(s, _):
            action = jnp.tanh(actor_mu(actor, normalize(norm, s.obs)))
            nxt = vstep(s, action)
            return nxt, (nxt.reward, jnp.abs(nxt.sim.q[:, 0]) > 1.99, jnp.abs(action) > 0.99)

        _, (rewards, on_rail, saturated) = jax.lax.scan(body, states, None, length=env.episode_length)
        return jnp.mean(jnp.sum(rewards, axis=0)), jnp.mean(on_rail), jnp.mean(saturated)

    return actor_opt, critic_opt, jax.jit(train_chunk), jax.jit(evaluate)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--iterations", type=int, default=2000)
    p.add_argument("--envs", type=int, default=8)
    p.add_argument("--horizon", type=int, default=32)
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--lam", type=float, default=0.95)
    p.add_argument("--actor-lr", type=float, default=1e-2)
    p.add_argument("--critic-lr", type=float, default=1e-3)
    p.add_argument("--critic-iterations", type=int, default=16)
    p.add_argument("--minibatches", type=int, default=4)
    p.add_argument("--target-alpha", type=float, default=0.2)
    p.add_argument("--grad-clip", type=float, default=1.0)
    p.add_argument("--reward-scale", type=float, default=1.0,
                   help="rewards are multiplied by this in the losses (critic targets stay O(1))")
    p.add_argument("--eval-every", type=int, default=80)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-cpu-minutes", type=float, default=None, help="stop early after this CPU time")
    p.add_argument("--gradient", choices=("implicit", "smoothed"), default="smoothed",
                   help="derivative rule of the rail limit: the exact implicit one, or that of the "
                        "relaxed complementarity problem (non-zero through a cart pushed onto the rail)")
    p.add_argument("--relaxation", type=float, default=1.0, help="ρ of --gradient smoothed")
    p.add_argument("--relaxation-end", type=float, default=None,
                   help="decay ρ geometrically from --relaxation to this value (default: constant ρ)")
    p.add_argument("--relaxation-decay", type=float, default=0.5,
                   help="fraction of --iterations over which ρ decays to --relaxation-end")
    p.add_argument("--actor-output-scale", type=float, default=0.01,
                   help="scale of the actor's initial output layer (1: PyTorch's default init as SHAC; "
                        "0.01: the first policy barely pushes, so the cart does not start on the rail)")
    p.add_argument("--mean-penalty", type=float, default=1e-2,
                   help="c of an actor-loss term c·|μ|² on the pre-squash mean (not a reward change; "
                        "0: none, the runs before session 13)")
    p.add_argument("--float32", action="store_true",
                   help="simulate and train in float32 (the environment's model, states and networks; "
                        "default float64)")
    p.add_argument("--no-rail-limit", action="store_true",
                   help="diagnostic: remove the ±2 m rail limit (not the seed 004 task)")
    p.add_argument("--out", type=Path, default=RESULTS / "shac_cartpole.json")
    p.add_argument("--all-cores", action="store_true")
    args = p.parse_args(argv)
    if args.relaxation_end is not None and (args.gradient != "smoothed" or args.relaxation_end <= 0
                                            or not 0 < args.relaxation_decay <= 1):
        p.error("--relaxation-end needs --gradient smoothed, a value > 0 and 0 < --relaxation-decay <= 1")
    train(args)


def make_env(args):
    """``cartpole_swingup`` with the gradient rule of the rail limit chosen by ``--gradient``
    (``--no-rail-limit``: a diagnostic variant without the limit, not seed 004's task)."""
    env = jc.envs.make("cartpole_swingup", dtype=jnp.float32 if args.float32 else jnp.float64)
    model = env.model
    if args.gradient == "smoothed":
        model = model.replace_options(gradient=jc.contact.RelaxedComplementarity(relaxation=args.relaxation))
    if args.no_rail_limit:
        model = model.replace_options(enable_joint_limits=False)
    return eqx.tree_at(lambda e: e.model, env, model)


def train(args):
    """Run SHAC with the parsed ``args``; returns ``(env, carry, curve)`` (carry: actor, critic,
    target critic, optimiser states, observation normaliser, environment states)."""
    env = make_env(args)
    dtype = env.model.dtype
    key = jax.random.key(args.seed)
    k_actor, k_critic, k_env, key = jax.random.split(key, 4)
    obs_size, act_size = env.observation_size, env.action_size
    net = mlp_init(k_actor, [obs_size, 64, 64, act_size], dtype)
    # --actor-output-scale < 1 starts from a near-zero push (the cart stays off the rail at first)
    net[-1] = {k: v * args.actor_output_scale for k, v in net[-1].items()}
    actor = {"net": net, "log_std": jnp.full((act_size,), -1.0, dtype)}
    critic = mlp_init(k_critic, [obs_size, 64, 64, 1], dtype)
    actor_opt, critic_opt, train_chunk, evaluate = make_trainer(env, args)
    states = jax.vmap(env.reset)(jax.random.split(k_env, args.envs))
    norm = normalizer_init(obs_size, dtype)
    carry = (actor, critic, critic, actor_opt.init(actor), critic_opt.init(critic), norm, states)

    steps_per_iteration = args.envs * args.horizon
    curve = []
    t0, c0 = time.time(), time.process_time()
    done_iterations = 0
    # keys per iteration / evaluation (fold_in): the run does not depend on --eval-every
    k_train, k_eval = jax.random.split(key)
    compiled_chunks = set()  # train_chunk compiles once per chunk length (the last may be shorter)
    while True:
        with _first_call(done_iterations == 0, "the evaluation (deterministic episodes)"):
            ret, on_rail, saturated = map(float, evaluate(carry[0], carry[5],
                                                          jax.random.fold_in(k_eval, done_iterations)))
        curve.append({"env_steps": done_iterations * steps_per_iteration, "iteration": done_iterations,
                      "eval_return": ret, "on_rail": on_rail, "saturated": saturated, "wall_s": time.time() - t0, "cpu_s": time.process_time() - c0,
                      "load_average": os.getloadavg()[0]})
        print(f"iter {done_iterations:5d}  env steps {done_iterations * steps_per_iteration:8d}  "
              f"eval return {ret:9.2f}  on rail {on_rail:4.2f}  saturated {saturated:4.2f}  cpu {time.process_time() - c0:7.1f} s  "
              f"load {os.getloadavg()[0]:.1f}", flush=True)
        _write(args, curve, env)
        if done_iterations >= args.iterations:
            break
        if args.max_cpu_minutes is not None and time.process_time() - c0 > 60 * args.max_cpu_minutes:
            break
        chunk = min(args.eval_every, args.iterations - done_iterations)
        indices = jnp.arange(done_iterations, done_iterations + chunk)
        keys = jax.vmap(lambda i: jax.random.fold_in(k_train, i))(indices)
        with _first_call(chunk not in compiled_chunks, f"{chunk} SHAC iteration{'s' if chunk > 1 else ''} (rollouts, gradients, updates)"):
            carry, stats = jax.block_until_ready(train_chunk(carry, (keys, indices)))
        compiled_chunks.add(chunk)
        done_iterations += chunk
    return env, carry, curve


def _first_call(compiles: bool, what: str):
    """``jc.compile_report(what)`` around a jitted function's first call (it compiles there), a
    no-op afterwards."""
    return jc.compile_report(what) if compiles else contextlib.nullcontext()


def _write(args, curve, env):
    args.out.parent.mkdir(parents=True, exist_ok=True)
    meta = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    args.out.write_text(json.dumps({"algorithm": "SHAC", "env": "cartpole_swingup",
                                    "episode_length": env.episode_length, "args": meta,
                                    "load_average": os.getloadavg(), "curve": curve}, indent=1))


if __name__ == "__main__":
    main()
