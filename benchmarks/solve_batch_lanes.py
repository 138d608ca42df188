"""Time per problem of ``jc.contact.solve_batch`` against its lane count, per solver and contact
count, next to the automatic choice (``lanes=None``) — the evidence behind
``jaxsim_contact.contact._work_queue.default_lanes``.

Random problems (``builders.random_problem``, full rank), float64, NCP tolerance 1e-6, cap 1000;
each configuration is compiled once (first call, not timed) and timed as the best of
``--repeats`` blocked calls; the ratio column is each time over the row's best.

    python benchmarks/solve_batch_lanes.py --contacts 16 --batch 128         # ~1 min
    taskset -c 0 python benchmarks/solve_batch_lanes.py                     # ~8 min, one core

Writes benchmarks/results/solve_batch_lanes.{json,md} (``--out NAME`` to rename).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time

from _common import enable_float64, write_results

enable_float64()  # a script, not the library: float64 for accuracy

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import jaxsim_contact as jc  # noqa: E402
from jaxsim_contact.contact._work_queue import default_lanes  # noqa: E402

C = jc.contact


def solvers():
    step = jc.Options(dt=1e-3, gravity=(0.0, 0.0, -9.81)).solver
    return {
        "jc.step's ADMM": step.replace(max_iterations=1000, tolerance=1e-6),
        "ADMM(ncp) (eigh)": C.ADMM("ncp", max_iterations=1000, tolerance=1e-6),
    }


def time_per_problem(problems, solver, lanes, repeats):
    batched = jax.jit(lambda p: C.solve_batch(p, solver, lanes=lanes))
    jax.block_until_ready(batched(problems).force)  # compile
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(batched(problems).force)
        times.append(time.perf_counter() - start)
    return min(times) / problems.delassus.shape[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--contacts", type=int, nargs="+", default=[4, 16, 32, 64])
    parser.add_argument("--lanes", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32])
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", default="solve_batch_lanes")
    args = parser.parse_args()
    started = time.strftime("%Y-%m-%d %H:%M")
    rows = []
    for n in args.contacts:
        rng = np.random.default_rng(0)
        problems = [jc.testing.problems.random_problem(rng, n) for _ in range(args.batch)]
        batch = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *problems)
        auto = default_lanes(n, jnp.float64)
        for name, solver in solvers().items():
            times = {lanes: time_per_problem(batch, solver, lanes, args.repeats)
                     for lanes in sorted(set(args.lanes) | {auto})}
            row = dict(contacts=n, solver=name, auto=auto,
                       microseconds={str(k): v * 1e6 for k, v in times.items()})
            rows.append(row)
            print(row, flush=True)
    command = "python benchmarks/solve_batch_lanes.py " + shlex.join(sys.argv[1:])
    lines = ["# solve_batch: time per problem against the lane count", "",
             f"`{command}` — started {started}, finished {time.strftime('%Y-%m-%d %H:%M')}; jax "
             f"{jax.__version__}, float64, batch {args.batch} random problems, tolerance 1e-6, cap "
             f"1000, best of {args.repeats} blocked calls. Cells: µs per problem (ratio to the row's "
             "best); **bold** = the automatic choice `lanes=None`.", "",
             "| contacts | solver | " + " | ".join(f"{k} lanes" for k in sorted(
                 {int(k) for r in rows for k in r["microseconds"]})) + " | auto / best |",
             "|---|---|" + "---|" * (len({k for r in rows for k in r["microseconds"]}) + 1)]
    every = sorted({int(k) for r in rows for k in r["microseconds"]})
    for r in rows:
        best = min(r["microseconds"].values())
        cells = []
        for k in every:
            t = r["microseconds"].get(str(k))
            cell = "–" if t is None else f"{t:.1f} ({t / best:.2f})"
            cells.append(f"**{cell}**" if k == r["auto"] else cell)
        lines.append(f"| {r['contacts']} | {r['solver']} | " + " | ".join(cells)
                     + f" | {r['microseconds'][str(r['auto'])] / best:.2f} |")
    write_results(args.out, dict(command=command, rows=rows), "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
