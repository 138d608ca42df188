"""ADMM linear algebra under vmap: eigendecomposition vs Cholesky-with-refactor (seed 001 §III-E).

Under ``vmap`` the "refactor when ρ changed" ``lax.cond`` becomes a select, so the Cholesky path
refactors every iteration. Both factorizations follow the same ρ schedule, so iteration counts
must agree; only the time per problem differs. Writes ``benchmarks/results/admm_factorization.*``.

    python benchmarks/probes/admm_factorization.py [--batch 32] [--sizes 4 16 64]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

import jaxsim_contact as jc  # noqa: E402
from jaxsim_contact.testing import problems as builders  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--sizes", type=int, nargs="+", default=[4, 16, 64])
    parser.add_argument("--tolerance", type=float, default=1e-6)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rows = []
    for n in args.sizes:
        rng = np.random.default_rng(0)
        problems = [builders.random_problem(rng, n) for _ in range(args.batch)]
        batch = jax.tree.map(lambda *x: jnp.stack(x), *problems)
        for factorization in ("eigh", "cholesky"):
            solver = jc.contact.ADMM("ncp", tolerance=args.tolerance, max_iterations=500,
                                     factorization=factorization)
            fn = jax.jit(jax.vmap(lambda p, s=solver: jc.contact.solve(p, s)))
            start = time.perf_counter()
            out = jax.block_until_ready(fn(batch))
            compile_s = time.perf_counter() - start
            times = []
            for _ in range(args.repeats):
                start = time.perf_counter()
                jax.block_until_ready(fn(batch))
                times.append(time.perf_counter() - start)
            rows.append(dict(
                contacts=n, factorization=factorization, compile_s=compile_s,
                us_per_problem=1e6 * float(np.median(times)) / args.batch,
                mean_iterations=float(out.iterations.mean()),
                converged=float(out.converged.mean()),
            ))
            print(rows[-1], flush=True)
    out_dir = Path(__file__).parent.parent / "results"  # benchmarks/results
    out_dir.mkdir(exist_ok=True)
    meta = dict(batch=args.batch, tolerance=args.tolerance, jax=jax.__version__,
                load_average=os.getloadavg(), date=time.strftime("%Y-%m-%d %H:%M"))
    (out_dir / "admm_factorization.json").write_text(json.dumps(dict(meta=meta, rows=rows), indent=1))
    lines = [
        "# ADMM-NCP under vmap: eigh vs Cholesky refactor",
        "",
        f"`python benchmarks/probes/admm_factorization.py` — {meta['date']}, batch {args.batch}, float64, "
        f"tolerance {args.tolerance}, random problems (`builders.random_problem`), jax {jax.__version__}, "
        f"load average {tuple(round(x, 2) for x in meta['load_average'])} (2 shared cores).",
        "",
        "| contacts | factorization | µs / problem (batched) | mean iterations | converged | compile (s) |",
        "|---|---|---|---|---|---|",
    ]
    lines += [f"| {r['contacts']} | {r['factorization']} | {r['us_per_problem']:.1f} | "
              f"{r['mean_iterations']:.1f} | {r['converged']:.2f} | {r['compile_s']:.1f} |" for r in rows]
    (out_dir / "admm_factorization.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
