"""Memory of ``jax.grad`` through ``jc.rollout`` with and without ``checkpoint_every`` (issue #6).

For each horizon ``T`` and ``k ∈ {None, round(√T)}`` it compiles ``jax.jit(jax.grad(loss))`` of a
rollout of the seed-001 dragged cube (``jc.scenes.dragged_cube``, ADMM/NCP, implicit gradients)
and reads XLA's allocation plan, ``compiled.memory_analysis()``: ``temp`` (every buffer allocated
while running — the residuals reverse mode keeps, the recomputation buffers), ``argument`` (the
controls) and ``output`` (the gradient); ``peak = temp + argument + output``. With ``--rss`` each
configuration additionally runs in a fresh subprocess that executes the gradient once and reports
its maximum resident set size (``ru_maxrss``, includes the Python/XLA runtime, so only differences
between rows mean something). Compile times depend on the machine's load: record ``uptime``.

    PYTHONPATH=. taskset -c 0 python benchmarks/checkpointed_rollout.py [--horizons 100 1000] [--rss]

Writes ``benchmarks/results/checkpointed_rollout.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time

from _common import enable_float64, write_results


def measure(horizon: int, checkpoint_every, execute: bool) -> dict:
    import jax
    import jax.numpy as jnp

    enable_float64()
    import jaxsim_contact as jc

    model = jc.scenes.load("dragged_cube", dtype=jnp.float64)
    state = jc.init(model)

    def loss(ctrls):
        final, traj = jc.rollout(model, state, ctrls, checkpoint_every=checkpoint_every)
        return jnp.sum(final.q ** 2) + jnp.sum(traj.v[:, 0] ** 2)

    ctrls = jnp.full((horizon, model.nu), 2.0)
    start = time.perf_counter()
    compiled = jax.jit(jax.grad(loss)).lower(ctrls).compile()
    compile_s = time.perf_counter() - start
    stats = compiled.memory_analysis()
    row = dict(horizon=horizon, checkpoint_every=checkpoint_every, compile_s=compile_s,
               temp=stats.temp_size_in_bytes, argument=stats.argument_size_in_bytes,
               output=stats.output_size_in_bytes)
    row["peak"] = row["temp"] + row["argument"] + row["output"]
    if execute:
        import resource

        compiled(ctrls).block_until_ready()
        row["max_rss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizons", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--rss", action="store_true", help="also run each case in a subprocess")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        horizon, k = int(args.child[0]), (None if args.child[1] == "None" else int(args.child[1]))
        print(json.dumps(measure(horizon, k, execute=True)))
        return
    rows = []
    for horizon in args.horizons:
        for k in (None, round(math.sqrt(horizon))):
            if args.rss:
                out = subprocess.run([sys.executable, __file__, "--child", str(horizon), str(k)],
                                     capture_output=True, text=True, check=True, env=os.environ)
                row = json.loads(out.stdout.strip().splitlines()[-1])
            else:
                row = measure(horizon, k, execute=False)
            rows.append(row)
            print(row, flush=True)
    load = os.getloadavg()
    lines = ["# jax.grad through jc.rollout: peak memory (XLA allocation plan), dragged cube\n",
             f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}\n",
             "| T | checkpoint_every | peak (MB) | temp (MB) | × T=min | compile (s) |"
             + (" max RSS (MiB) |" if args.rss else ""),
             "|---|---|---|---|---|---|" + ("---|" if args.rss else "")]
    for r in rows:
        ref = [b for b in rows if b["horizon"] == min(args.horizons)
               and (b["checkpoint_every"] is None) == (r["checkpoint_every"] is None)][0]
        line = (f"| {r['horizon']} | {r['checkpoint_every']} | {r['peak'] / 1e6:.3f} | {r['temp'] / 1e6:.3f} "
                f"| {r['peak'] / ref['peak']:.2f} | {r['compile_s']:.0f} |")
        if args.rss:
            line += f" {r['max_rss_kib'] / 1024:.0f} |"
        lines.append(line)
    write_results("checkpointed_rollout", dict(rows=rows, load=load), "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
