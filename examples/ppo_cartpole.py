"""PPO baseline on the cart-pole swing-up (seed 004 §IV-C, appendix F Table IV: horizon 240, 128
parallel environments, minibatch 3840, γ = 0.99, λ = 0.95, learning rate 3e-4, 10 epochs per
batch). Zeroth-order: only rewards, no simulator gradients.

A compact PPO (optax), written when ``brax.training.agents.ppo.train`` (brax 0.14.2) could not
start on jax 0.10 (it calls the removed ``jax.device_put_replicated``). Brax's own PPO now runs
through ``jaxsim_contact.envs.brax.brax_trainer_compat`` (``examples/brax_ppo_cartpole.py``); this
script stays as the second PPO baseline of ``benchmarks/results/shac_vs_ppo_cartpole.md``.

Every ``--eval-every`` updates the deterministic policy (mean action) runs 16 fresh 240-step
episodes (as examples/shac_cartpole.py does); the mean episode return is logged against training
environment steps in
``benchmarks/results/ppo_cartpole.json``. With ``--plot`` (or after training) the PPO and SHAC
curves (``examples/shac_cartpole.py``) are drawn together into
``benchmarks/results/shac_vs_ppo_cartpole.png``.

    python examples/ppo_cartpole.py --timesteps 3000000 --seed 0
    python examples/ppo_cartpole.py --plot          # only redraw the figure

Runs in float64 like the SHAC example.
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
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"


def train(args):
    """Compact PPO (clipped surrogate, GAE, Gaussian policy with a learned state-independent
    log-std, tanh-free actions clipped by the environment), all in one jitted update."""
    import jax
    import jax.numpy as jnp
    import optax

    jax.config.update("jax_enable_x64", True)  # a script, not the library

    import jaxsim_contact as jc

    env = jc.envs.make("cartpole_swingup")
    dtype = env.model.dtype
    obs_size, act_size = env.observation_size, env.action_size
    vstep = jax.vmap(env.step)

    def mlp_init(key, sizes):
        out = []
        for k, (a, b) in zip(jax.random.split(key, len(sizes) - 1), zip(sizes[:-1], sizes[1:])):
            out.append((jax.random.normal(k, (a, b), dtype) * jnp.sqrt(1.0 / a), jnp.zeros((b,), dtype)))
        return out

    def mlp(params, x):
        for w, b in params[:-1]:
            x = jnp.tanh(x @ w + b)
        w, b = params[-1]
        return x @ w + b

    def log_prob(params, obs, action):
        mean, log_std = mlp(params["pi"], obs), params["log_std"]
        return jnp.sum(-0.5 * ((action - mean) / jnp.exp(log_std)) ** 2 - log_std - 0.5 * jnp.log(2 * jnp.pi), -1)

    def collect(params, states, key):
        def body(s, k):
            mean = mlp(params["pi"], s.obs)
            action = mean + jnp.exp(params["log_std"]) * jax.random.normal(k, mean.shape, dtype)
            nxt = vstep(s, action)
            return nxt, (s.obs, action, nxt.reward * args.reward_scale, nxt.done, nxt.truncated,
                         nxt.final_obs, log_prob(params, s.obs, action))

        return jax.lax.scan(body, states, jax.random.split(key, args.unroll))

    def gae(params, data, last_obs):
        obs, action, reward, done, truncated, final_obs, _ = data
        value = mlp(params["v"], obs)[..., 0]
        v_final = mlp(params["v"], final_obs)[..., 0]  # value of the state each step reached
        terminal = done & ~truncated

        def back(adv_next, x):
            r, d, term, v, v_reached = x
            delta = r + 0.99 * jnp.where(term, 0.0, v_reached) - v
            adv = delta + 0.99 * 0.95 * jnp.where(d, 0.0, adv_next)
            return adv, adv

        _, adv = jax.lax.scan(back, jnp.zeros_like(value[0]), (reward, done, terminal, value, v_final), reverse=True)
        return adv, adv + value

    opt = optax.chain(optax.clip_by_global_norm(0.5), optax.adam(args.lr))

    def update(carry, key):
        params, opt_state, states = carry
        k_collect, k_perm = jax.random.split(key)
        states, data = collect(params, states, k_collect)
        adv, returns = gae(params, data, states.obs)
        obs, action, old_logp = data[0], data[1], data[6]
        flat = lambda x: x.reshape((-1,) + x.shape[2:])  # noqa: E731
        batch = (flat(obs), flat(action), flat(old_logp), flat(adv), flat(returns))
        n = batch[0].shape[0]

        def loss(params, mb):
            o, a, lp_old, ad, ret = mb
            ad = (ad - ad.mean()) / (ad.std() + 1e-8)
            ratio = jnp.exp(log_prob(params, o, a) - lp_old)
            surrogate = jnp.minimum(ratio * ad, jnp.clip(ratio, 0.8, 1.2) * ad)
            value_loss = jnp.mean((mlp(params["v"], o)[..., 0] - ret) ** 2)
            entropy = jnp.sum(params["log_std"])
            return -jnp.mean(surrogate) + 0.5 * value_loss - 1e-3 * entropy

        def epoch(carry, k):
            params, opt_state = carry
            perm = jax.random.permutation(k, n).reshape(args.minibatches, -1)

            def minibatch(carry, idx):
                params, opt_state = carry
                g = jax.grad(loss)(params, tuple(x[idx] for x in batch))
                up, opt_state = opt.update(g, opt_state, params)
                return (optax.apply_updates(params, up), opt_state), None

            return jax.lax.scan(minibatch, (params, opt_state), perm)[0], None

        (params, opt_state), _ = jax.lax.scan(epoch, (params, opt_state), jax.random.split(k_perm, args.epochs))
        return (params, opt_state, jax.lax.stop_gradient(states)), None

    def evaluate(params, key):
        s = jax.vmap(env.reset)(jax.random.split(key, 16))

        def body(s, _):
            nxt = vstep(s, mlp(params["pi"], s.obs))
            return nxt, nxt.reward

        _, rewards = jax.lax.scan(body, s, None, length=env.episode_length)
        return jnp.mean(jnp.sum(rewards, axis=0))

    run_chunk = jax.jit(lambda carry, keys: jax.lax.scan(update, carry, keys)[0])
    evaluate = jax.jit(evaluate)
    key = jax.random.key(args.seed)
    k_pi, k_v, k_env, key = jax.random.split(key, 4)
    params = {"pi": mlp_init(k_pi, [obs_size, 64, 64, act_size]), "v": mlp_init(k_v, [obs_size, 64, 64, 1]),
              "log_std": jnp.full((act_size,), -0.5, dtype)}
    carry = (params, opt.init(params), jax.vmap(env.reset)(jax.random.split(k_env, args.envs)))
    per_update = args.envs * args.unroll
    updates = max(1, args.timesteps // per_update)
    curve, t0, c0, done = [], time.time(), time.process_time(), 0
    compiled_chunks = set()  # run_chunk compiles once per chunk length (the last may be shorter)
    while True:
        key, k_eval, k_train = jax.random.split(key, 3)
        with _first_call(done == 0, "the evaluation (deterministic episodes)"):
            ret = float(evaluate(carry[0], k_eval))
        curve.append({"env_steps": done * per_update, "iteration": done, "eval_return": ret, "wall_s": time.time() - t0,
                      "cpu_s": time.process_time() - c0, "load_average": os.getloadavg()[0]})
        print(f"update {done:4d}  env steps {done * per_update:9d}  eval return {ret:9.2f}  "
              f"cpu {time.process_time() - c0:7.1f} s  load {os.getloadavg()[0]:.1f}", flush=True)
        _write(args, curve, env)
        if done >= updates or (args.max_minutes is not None and time.time() - t0 > 60 * args.max_minutes):
            break
        chunk = min(args.eval_every, updates - done)
        with _first_call(chunk not in compiled_chunks, f"{chunk} PPO update{'s' if chunk > 1 else ''} (rollouts, advantages, epochs)"):
            carry = jax.block_until_ready(run_chunk(carry, jax.random.split(k_train, chunk)))
        compiled_chunks.add(chunk)
        done += chunk


def _first_call(compiles: bool, what: str):
    """``jc.compile_report(what)`` around a jitted function's first call (it compiles there), a
    no-op afterwards."""
    import jaxsim_contact as jc

    return jc.compile_report(what) if compiles else contextlib.nullcontext()


def _write(args, curve, env):
    RESULTS.mkdir(parents=True, exist_ok=True)
    meta = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(
        {"algorithm": "PPO (compact, optax)", "env": "cartpole_swingup", "episode_length": env.episode_length,
         "args": meta, "load_average": os.getloadavg(), "curve": curve}, indent=1))


def plot(threshold: float):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    runs = [(path, "SHAC") for path in sorted(RESULTS.glob("shac_cartpole*.json"))]
    # the exact-derivative control runs (benchmarks/results/shac_vs_ppo_cartpole.md), dotted
    runs += [(path, "SHAC") for path in sorted(RESULTS.glob("shac_cartpole_ablation/implicit*.json"))]
    runs += [(path, "PPO") for path in sorted(RESULTS.glob("ppo_cartpole*.json"))]
    runs += [(path, "PPO") for path in sorted(RESULTS.glob("brax_ppo_cartpole*.json"))]
    for path, label in runs:
        if not path.is_file():
            continue
        data = json.loads(path.read_text())
        a = data["args"]
        xs = [p["env_steps"] for p in data["curve"]]
        ys = [p["eval_return"] for p in data["curve"]]
        style = {"linestyle": "-"}
        if label == "SHAC":
            rule = a.get("gradient", "implicit")
            if rule == "smoothed":
                rule = f"smoothed ρ={a['relaxation']:g}"
                if a.get("actor_output_scale", 1.0) != 1.0:
                    rule += f", out-init ×{a['actor_output_scale']:g}"
                rule += f", μ-penalty {a.get('mean_penalty', 0.0):g}"
            else:
                style = {"linestyle": ":", "alpha": 0.7}
            label = f"SHAC {a['envs']}x{a['horizon']} {rule}, seed {a['seed']}"
        elif data["algorithm"].startswith("PPO (brax"):
            label = f"PPO brax.training {a['envs']}x{a['unroll']}, seed {a['seed']}"
            style = {"linestyle": "--", "color": str(0.15 + 0.25 * a["seed"]), "linewidth": 2}
        else:
            label = f"PPO compact {a['envs']}x{a['unroll']}, seed {a['seed']}"
            style = {"linestyle": "-", "color": str(0.15 + 0.25 * a["seed"]), "linewidth": 2}
        ax.plot(xs, ys, marker=".", markersize=3, **{"linewidth": 1, **style}, label=label)
    ax.axhline(threshold, color="gray", linestyle="--", label=f"threshold {threshold:g}")
    ax.set_xscale("linear")
    ax.set_ylim(-3000, 0)  # a few diverged evaluations of SHAC dip far lower (see the JSON)
    ax.set_xlabel("environment steps")
    ax.set_ylabel("episode return (240 steps, deterministic policy)")
    ax.set_title("cartpole_swingup: SHAC vs PPO (deterministic policy, 16 fresh episodes)")
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=6)
    fig.tight_layout()
    out = RESULTS / "shac_vs_ppo_cartpole.png"
    fig.savefig(out, dpi=120, bbox_inches="tight")
    print("wrote", out)


def add_table_iv_arguments(p: argparse.ArgumentParser) -> None:
    """The PPO settings of seed 004 Table IV, shared with ``brax_ppo_cartpole.py``."""
    p.add_argument("--timesteps", type=int, default=3_000_000)
    p.add_argument("--envs", type=int, default=128)
    p.add_argument("--unroll", type=int, default=240)
    p.add_argument("--batch-size", type=int, default=16, help="trajectories per minibatch (16 × 240 = 3840)")
    p.add_argument("--minibatches", type=int, default=8)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--lr", type=float, default=3e-4)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_table_iv_arguments(p)
    p.add_argument("--eval-every", type=int, default=2, help="updates between evaluations")
    p.add_argument("--reward-scale", type=float, default=0.01)
    p.add_argument("--max-minutes", type=float, default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threshold", type=float, default=-400.0)
    p.add_argument("--out", type=Path, default=RESULTS / "ppo_cartpole.json")
    p.add_argument("--plot", action="store_true", help="only draw the figure from the saved curves")
    p.add_argument("--all-cores", action="store_true")
    args = p.parse_args(argv)
    if not args.plot:
        train(args)
    plot(args.threshold)


if __name__ == "__main__":
    main()
