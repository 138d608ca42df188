"""PPO from ``brax.training`` on the cart-pole swing-up, through the Brax adapter (issue 7,
"interoperability"; seed 004 §IV-C, appendix F Table IV: horizon 240, 128 parallel environments,
minibatch 3840, γ = 0.99, λ = 0.95, learning rate 3e-4, 10 epochs per batch).

Brax's trainer, not ours: ``jaxsim_contact.envs.brax.to_brax`` turns ``cartpole_swingup`` into a
``brax.envs.base.Env``; ``brax.training.agents.ppo.train`` wraps it (episode limit, auto-reset),
collects, updates and evaluates. ``brax_trainer_compat`` supplies ``jax.device_put_replicated``,
which brax 0.14.2 still calls and jax 0.10 removed. Zeroth-order: only rewards.

Brax evaluates the deterministic policy on ``--eval-envs`` fresh 240-step episodes (as
``examples/shac_cartpole.py`` and ``examples/ppo_cartpole.py`` do with 16); the mean episode return
against training environment steps goes to ``--out``; ``examples/ppo_cartpole.py --plot`` draws it
next to SHAC and the compact PPO.

    python examples/brax_ppo_cartpole.py --timesteps 3000000 --seed 0 \\
        --out benchmarks/results/brax_ppo_cartpole_seed0.json

Runs in float64 like the other cart-pole examples.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

if "--all-cores" not in sys.argv and hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ppo_cartpole import add_table_iv_arguments  # noqa: E402  (the same Table IV settings)


def train(args) -> list[dict]:
    """Run Brax PPO; returns the evaluation curve (also written to ``args.out`` after each eval)."""
    import jax

    jax.config.update("jax_enable_x64", True)  # a script, not the library

    from brax.training.agents.ppo import train as ppo

    import jaxsim_contact as jc
    from jaxsim_contact.envs.brax import brax_trainer_compat, to_brax

    env = jc.envs.make("cartpole_swingup")
    curve: list[dict] = []
    t0, c0 = time.time(), time.process_time()

    def progress(num_steps, metrics):
        ret = float(metrics["eval/episode_reward"])
        curve.append({"env_steps": int(num_steps), "eval_return": ret, "wall_s": time.time() - t0,
                      "cpu_s": time.process_time() - c0, "load_average": os.getloadavg()[0]})
        print(f"env steps {int(num_steps):9d}  eval return {ret:9.2f}  cpu {time.process_time() - c0:7.1f} s  "
              f"load {os.getloadavg()[0]:.1f}", flush=True)
        _write(args, curve, env)

    per_update = args.envs * args.unroll
    updates = max(1, args.timesteps // per_update)
    # brax.training compiles its whole training step inside ppo.train, before the first evaluation
    print("compiling brax.training's PPO step (the first evaluation line follows it; minutes on a CPU) ...",
          file=sys.stderr, flush=True)
    with brax_trainer_compat():
        ppo.train(
            environment=to_brax(env), num_timesteps=updates * per_update,
            episode_length=env.episode_length, num_envs=args.envs, unroll_length=args.unroll,
            batch_size=args.batch_size, num_minibatches=args.minibatches,
            num_updates_per_batch=args.epochs, learning_rate=args.lr, discounting=0.99, gae_lambda=0.95,
            entropy_cost=args.entropy_cost, reward_scaling=args.reward_scale, normalize_observations=True,
            num_evals=args.evals, num_eval_envs=args.eval_envs, deterministic_eval=True,
            seed=args.seed, progress_fn=progress)
    return curve


def _write(args, curve, env):
    meta = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(
        {"algorithm": "PPO (brax.training)", "env": "cartpole_swingup", "episode_length": env.episode_length,
         "args": meta, "load_average": os.getloadavg(), "curve": curve}, indent=1))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_table_iv_arguments(p)
    p.add_argument("--entropy-cost", type=float, default=1e-4)
    p.add_argument("--reward-scale", type=float, default=0.01)
    p.add_argument("--evals", type=int, default=50, help="evaluations over the run (Brax's num_evals)")
    p.add_argument("--eval-envs", type=int, default=16)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=RESULTS / "brax_ppo_cartpole.json")
    p.add_argument("--all-cores", action="store_true")
    train(p.parse_args(argv))


if __name__ == "__main__":
    main()
